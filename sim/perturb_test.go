package sim

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/huitian/huitian/sim/trace"
)

// TestPerturbMovesSomeSubmitsLater: a replica holds the same jobs, each
// submitted when it was or 1 to Most seconds later (PerturbMost by
// default), sorted by submit with ties in their old order; the same seed
// gives the same replica, seed 0 the jobs themselves, and the input is
// left as it was.
func TestPerturbMovesSomeSubmitsLater(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 400).Draw(t, "jobs")
		jobs := make([]trace.Job, n)
		at := int64(0)
		for i := range jobs {
			at += rapid.Int64Range(0, 300).Draw(t, "gap")
			jobs[i] = trace.Job{ID: fmt.Sprint(i), Submit: at, Runtime: 1}
		}
		orig := slices.Clone(jobs)
		seed := rapid.Uint64Range(1, 1<<40).Draw(t, "seed")
		p := DefaultPerturbation()
		if rapid.Bool().Draw(t, "other") {
			p = Perturbation{Share: rapid.Float64Range(0.001, 1).Draw(t, "share"), Most: rapid.Int64Range(1, 7200).Draw(t, "most")}
		}
		if err := p.Validate(); err != nil {
			t.Fatal(err)
		}
		got := Perturb(jobs, seed, p)
		if !slices.Equal(jobs, orig) {
			t.Fatal("Perturb modified its input")
		}
		if again := Perturb(jobs, seed, p); !slices.Equal(got, again) {
			t.Fatal("the same seed gave two replicas")
		}
		if same := Perturb(jobs, 0, p); !slices.Equal(same, jobs) {
			t.Fatal("seed 0 is not the jobs themselves")
		}
		if len(got) != n {
			t.Fatalf("%d jobs, want %d", len(got), n)
		}
		seen := make([]bool, n)
		moved := 0
		for k, j := range got {
			var i int
			fmt.Sscan(j.ID, &i)
			if seen[i] {
				t.Fatalf("job %s twice", j.ID)
			}
			seen[i] = true
			d := j.Submit - orig[i].Submit
			if d < 0 || d > p.Most {
				t.Fatalf("job %s moved %d s, want 0 or 1…%d", j.ID, d, p.Most)
			}
			if d > 0 {
				moved++
			}
			if k > 0 {
				p := got[k-1]
				var pi int
				fmt.Sscan(p.ID, &pi)
				if p.Submit > j.Submit || p.Submit == j.Submit && pi > i && p.Submit-orig[pi].Submit == 0 && d == 0 {
					t.Fatalf("jobs %s and %s out of order (%d, %d)", p.ID, j.ID, p.Submit, j.Submit)
				}
			}
		}
		// About PerturbShare of them move: far more would not be a replica.
		if p == DefaultPerturbation() && n >= 200 && moved > n/10 {
			t.Fatalf("%d of %d jobs moved, want about %.0f%%", moved, n, 100*PerturbShare)
		}
	})
}

// TestPerturbMovesAboutItsShare: over 100,000 jobs the share moved is
// PerturbShare within a tenth of it.
func TestPerturbMovesAboutItsShare(t *testing.T) {
	jobs := make([]trace.Job, 100_000)
	for i := range jobs {
		jobs[i] = trace.Job{ID: fmt.Sprint(i), Submit: int64(i) * 1000, Runtime: 1}
	}
	moved := 0
	for _, j := range Perturb(jobs, 7, DefaultPerturbation()) {
		var i int64
		fmt.Sscan(j.ID, &i)
		if j.Submit != i*1000 {
			moved++
		}
	}
	if share := float64(moved) / float64(len(jobs)); share < 0.9*PerturbShare || share > 1.1*PerturbShare {
		t.Fatalf("moved %.4f of the jobs, want %.2f", share, PerturbShare)
	}
}

// TestPerturbationValidate names what is wrong.
func TestPerturbationValidate(t *testing.T) {
	for _, tc := range []struct {
		p    Perturbation
		want string // "" valid
	}{
		{DefaultPerturbation(), ""},
		{Perturbation{1, 1}, ""},
		{Perturbation{0, 60}, "share"},
		{Perturbation{1.5, 60}, "share"},
		{Perturbation{math.NaN(), 60}, "share"},
		{Perturbation{0.1, 0}, "delay"},
	} {
		err := tc.p.Validate()
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.p, err, tc.want)
		}
	}
}
