package trace

import (
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/huitian/huitian/model"
)

func TestSynthDeterministic(t *testing.T) {
	o := SynthOptions{Jobs: 2000, Seed: 7, Load: 0.8, Cards: 256}
	a, err := Synth(o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Synth(o)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(a, b); diff != "" {
		t.Fatalf("same seed, different traces (-a +b):\n%s", diff)
	}
	seq, err := SynthSeq(o)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // a sequence yields the same jobs each time
		var got []Job
		for j := range seq {
			got = append(got, j)
		}
		if diff := cmp.Diff(a.Jobs, got); diff != "" {
			t.Fatalf("SynthSeq differs from Synth (-Synth +SynthSeq):\n%s", diff)
		}
	}
	o.Seed = 8
	c, err := Synth(o)
	if err != nil {
		t.Fatal(err)
	}
	if cmp.Equal(a.Jobs, c.Jobs) {
		t.Error("seeds 7 and 8 give the same jobs")
	}
}

func TestSynthLoad(t *testing.T) {
	for _, o := range []SynthOptions{
		{Jobs: 100_000, Seed: 1, Load: 0.9, Cards: 1024},
		{Jobs: 100_000, Seed: 2, Load: 0.5, Cards: 64},
		{Jobs: 100_000, Seed: 3, Load: 1.3, Cards: 4096},
	} {
		tr, err := Synth(o)
		if err != nil {
			t.Fatal(err)
		}
		if got := tr.OfferedLoad(o.Cards); math.Abs(got/o.Load-1) > 0.05 {
			t.Errorf("%s: offered load %.4f, want %.2f ± 5%%", o, got, o.Load)
		}
	}
}

// TestSynthShape checks the distributions against the summaries they stand for.
func TestSynthShape(t *testing.T) {
	const n = 100_000
	tr, err := Synth(SynthOptions{Jobs: n, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	checkTrace(t, tr, true)
	var (
		oneCard, overrun, ckpt int
		ratio                  float64
		runtimes               []int64
		classes                = map[string]int{}
		prefs                  = map[model.BackfillPref]int{}
		users                  = map[string]int{}
	)
	for _, j := range tr.Jobs {
		s := j.Spec
		if s.Cards == 1 {
			oneCard++
		}
		ratio += float64(j.Runtime) / float64(j.Limit)
		if j.Runtime > j.Limit {
			t.Fatalf("%s: runtime %d past limit %d", j.ID, j.Runtime, j.Limit)
		}
		if j.Runtime == j.Limit {
			overrun++
		}
		runtimes = append(runtimes, j.Runtime)
		classes[s.Class]++
		prefs[s.Backfill]++
		users[s.User]++
		switch {
		case s.Cards == 1 && (s.Topology != model.TopologyAny || s.Comm != model.CommNone):
			t.Fatalf("%s: one card with topology %v comm %v", j.ID, s.Topology, s.Comm)
		case s.Cards > 1 && s.Cards <= 8 && (s.Topology != model.TopologySameNode || s.CardsPerNode != s.Cards):
			t.Fatalf("%s: %d cards with topology %v, %d per node", j.ID, s.Cards, s.Topology, s.CardsPerNode)
		case s.Cards > 8 && (s.Topology != model.TopologySameSwitch || s.CardsPerNode != 8 || s.Class != "training"):
			t.Fatalf("%s: %d cards with topology %v, %d per node, class %s", j.ID, s.Cards, s.Topology, s.CardsPerNode, s.Class)
		case s.Cards > 1 && s.Class == "training" && s.Comm != model.CommHigh:
			t.Fatalf("%s: multi-card training with comm %v", j.ID, s.Comm)
		case s.Checkpointable && (s.CheckpointCost < 30*time.Second || s.CheckpointCost > 300*time.Second):
			t.Fatalf("%s: checkpoint cost %v", j.ID, s.CheckpointCost)
		case !s.Checkpointable && s.CheckpointCost != 0:
			t.Fatalf("%s: checkpoint cost without checkpointing", j.ID)
		case s.Backfill == model.BackfillLowRiskOnly && (s.MaxPreemptProb < 0.05 || s.MaxPreemptProb > 0.2):
			t.Fatalf("%s: max preemption probability %v", j.ID, s.MaxPreemptProb)
		case s.Backfill != model.BackfillLowRiskOnly && s.MaxPreemptProb != 0:
			t.Fatalf("%s: max preemption probability without low-risk", j.ID)
		}
		if s.Checkpointable {
			ckpt++
		}
	}
	slices.Sort(runtimes)
	share := func(k int) float64 { return float64(k) / n }
	median := runtimes[n/2]
	t.Logf("1-card %.3f, mean runtime/limit %.3f, limit hit %.3f, checkpointable %.3f, median runtime %d s, classes %v, prefs %v, users %d",
		share(oneCard), ratio/n, share(overrun), share(ckpt), median, classes, prefs, len(users))
	within := func(what string, got, lo, hi float64) {
		if got < lo || got > hi {
			t.Errorf("%s = %.3f, want in [%.2f, %.2f]", what, got, lo, hi)
		}
	}
	within("1-card share", share(oneCard), 0.65, 0.75)
	within("mean runtime/limit", ratio/n, 0.42, 0.58)
	within("limit-hit share", share(overrun), 0.015, 0.04)
	within("checkpointable share", share(ckpt), 0.15, 0.5)
	within("median runtime (Helios 206 s)", float64(median), 170, 250)
	for _, c := range []string{"training", "evaluation", "preprocessing", "search"} {
		if classes[c] == 0 {
			t.Errorf("no %s jobs", c)
		}
	}
	within("opt-out share", share(prefs[model.BackfillOptOut]), 0.05, 0.09)
	within("low-risk share", share(prefs[model.BackfillLowRiskOnly]), 0.06, 0.10)
	top := 0
	for _, c := range users {
		top = max(top, c)
	}
	within("top user share", share(top), 0.1, 0.5)
}

func TestSynthSmallCluster(t *testing.T) {
	tr, err := Synth(SynthOptions{Jobs: 5000, Seed: 1, Cards: 12, Users: 1})
	if err != nil {
		t.Fatal(err)
	}
	checkTrace(t, tr, true)
	for _, j := range tr.Jobs {
		if j.Spec.Cards > 8 {
			t.Fatalf("%s: %d cards on a 12-card cluster, want at most 8", j.ID, j.Spec.Cards)
		}
		if j.Spec.User != "u1" {
			t.Fatalf("%s: user %q with one user", j.ID, j.Spec.User)
		}
	}
}

func TestSynthInvalid(t *testing.T) {
	for _, o := range []SynthOptions{{}, {Jobs: -1}, {Jobs: 1, Load: -1}, {Jobs: 1, Load: math.NaN()}, {Jobs: 1, Cards: -4}, {Jobs: 1, Users: -1}} {
		if _, err := Synth(o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
}

func TestParseSynthSpec(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want SynthOptions
		err  bool
	}{
		{"the full form", "synth:jobs=1000000,seed=1,load=0.9", SynthOptions{Jobs: 1000000, Seed: 1, Load: 0.9, Cards: 1024, Users: 256}, false},
		{"every key, spaces, no prefix", " jobs = 10 , seed=2,load=1.5,cards=64,users=3", SynthOptions{Jobs: 10, Seed: 2, Load: 1.5, Cards: 64, Users: 3}, false},
		{"defaults", "synth:jobs=5", SynthOptions{Jobs: 5, Load: 0.9, Cards: 1024, Users: 256}, false},
		{"jobs is required", "synth:seed=1", SynthOptions{}, true},
		{"empty", "synth:", SynthOptions{}, true},
		{"unknown key", "synth:jobs=1,speed=2", SynthOptions{}, true},
		{"repeated key", "synth:jobs=1,jobs=2", SynthOptions{}, true},
		{"bad number", "synth:jobs=many", SynthOptions{}, true},
		{"zero load", "synth:jobs=1,load=0", SynthOptions{}, true},
		{"NaN load", "synth:jobs=1,load=NaN", SynthOptions{}, true},
		{"too many jobs", "synth:jobs=1000000000", SynthOptions{}, true},
		{"no value", "synth:jobs", SynthOptions{}, true},
		{"trailing comma", "synth:jobs=1,", SynthOptions{}, true},
	}
	for _, tt := range tests {
		got, err := ParseSynthSpec(tt.in)
		if (err != nil) != tt.err {
			t.Errorf("%s: ParseSynthSpec(%q) error %v, want error %v", tt.name, tt.in, err, tt.err)
			continue
		}
		if err != nil {
			if !errors.Is(err, ErrSynthSpec) {
				t.Errorf("%s: error %v does not wrap ErrSynthSpec", tt.name, err)
			}
			continue
		}
		if got != tt.want {
			t.Errorf("%s: got %+v, want %+v", tt.name, got, tt.want)
		}
		if back, err := ParseSynthSpec(got.String()); err != nil || back != got {
			t.Errorf("%s: String %q reads back as %+v, %v", tt.name, got.String(), back, err)
		}
	}
}

func TestOpenSynth(t *testing.T) {
	tr, err := Open("synth:jobs=100,seed=3", "synth", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Jobs) != 100 || tr.MaxCards != 1024 {
		t.Errorf("%d jobs, MaxCards %d", len(tr.Jobs), tr.MaxCards)
	}
	if _, err := Open("x", "parquet", Options{}); !errors.Is(err, ErrUnknownFormat) {
		t.Errorf("unknown format: err = %v", err)
	}
}

func BenchmarkSynth1M(b *testing.B) {
	for b.Loop() {
		tr, err := Synth(SynthOptions{Jobs: 1_000_000, Seed: 1})
		if err != nil || len(tr.Jobs) != 1_000_000 {
			b.Fatal(err)
		}
	}
}

func BenchmarkSynthSeq1M(b *testing.B) {
	for b.Loop() {
		seq, err := SynthSeq(SynthOptions{Jobs: 1_000_000, Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for range seq {
			n++
		}
		if n != 1_000_000 {
			b.Fatal(n)
		}
	}
}
