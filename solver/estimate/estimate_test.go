package estimate

import (
	"math"
	"testing"
	"time"

	"github.com/huitian/huitian/model/modeltest"
	"pgregory.net/rapid"
)

func TestDistBasics(t *testing.T) {
	d := FromSorted([]float64{0.1, 0.2, 0.3, 0.4, 0.5}, 100)
	if got := d.Quantile(0); got != 10 {
		t.Errorf("Quantile(0) = %v, want 10", got)
	}
	if got := d.Quantile(1); got != 50 {
		t.Errorf("Quantile(1) = %v, want 50", got)
	}
	if got := d.Quantile(0.5); math.Abs(got-30) > 1e-9 {
		t.Errorf("median = %v, want 30", got)
	}
	if got := d.CDF(30); math.Abs(got-0.5) > 1e-9 {
		t.Errorf("CDF(30) = %v, want 0.5", got)
	}
	if got := d.Mean(); math.Abs(got-30) > 1e-9 {
		t.Errorf("mean = %v, want 30", got)
	}
	p := Point(40)
	if got := ProbExceeds(&p, &d); math.Abs(got-0.75) > 0.03 {
		t.Errorf("P(40 > U[10,50]) = %v, want ≈ 0.75", got)
	}
	if got := ProbExceeds(&d, &p); math.Abs(got-0.25) > 1e-9 {
		t.Errorf("P(U[10,50] > 40) = %v, want 0.25", got)
	}
}

func TestMaxOf(t *testing.T) {
	a := FromSorted([]float64{0, 1}, 100) // uniform on [0,100]
	m := MaxOf([]Dist{a, a})
	// max of two uniforms: CDF x², median √0.5·100.
	if got := m.Quantile(0.5); math.Abs(got-70.71) > 2.5 {
		t.Errorf("median of max = %v, want ≈ 70.7", got)
	}
	if got := m.CDF(50); math.Abs(got-0.25) > 0.03 {
		t.Errorf("CDF of max at 50 = %v, want ≈ 0.25", got)
	}
}

func TestBeyond(t *testing.T) {
	d := FromSorted([]float64{0, 1}, 100)
	r, ok := d.Beyond(60)
	if !ok {
		t.Fatal("Beyond(60) not ok")
	}
	if got := r.Quantile(1); math.Abs(got-40) > 1e-9 {
		t.Errorf("max remaining = %v, want 40", got)
	}
	if got := r.Quantile(0.5); math.Abs(got-20) > 1e-6 {
		t.Errorf("median remaining = %v, want 20", got)
	}
	if _, ok := d.Beyond(100); ok {
		t.Error("Beyond(max) should be unknown")
	}
}

func TestFallbackLevels(t *testing.T) {
	w := NewWindow(Config{MinSamples: 3})
	j := modeltest.Job("x").User("ann").Class("eval").Limit(time.Hour).Build()
	if _, b := w.Estimate(&j); b.Level != "limit" {
		t.Fatalf("empty history: level %q, want limit", b.Level)
	}
	for range 3 {
		w.Add(Record{User: "bob", Class: "train", Cards: 1, Limit: 100, Runtime: 50})
	}
	if d, b := w.Estimate(&j); b.Level != "all" || math.Abs(d.Quantile(0.5)-1800) > 1e-6 {
		t.Fatalf("got level %q median %v, want all, 1800", b.Level, d.Quantile(0.5))
	}
	for range 3 {
		w.Add(Record{User: "ann", Class: "other", Cards: 4, Limit: 100, Runtime: 10})
	}
	if d, b := w.Estimate(&j); b.Level != "user" || math.Abs(d.Quantile(0.5)-360) > 1e-6 {
		t.Fatalf("got level %q median %v, want user, 360", b.Level, d.Quantile(0.5))
	}
	for range 3 {
		w.Add(Record{User: "ann", Class: "eval", Cards: 1, Limit: 100, Runtime: 20})
	}
	if _, b := w.Estimate(&j); b.Level != "user+class+cards" {
		t.Fatalf("got level %q, want user+class+cards", b.Level)
	}
}

// TestUnreliableUsesLimit: a user whose jobs keep outliving the predicted
// p90 gets the limit.
func TestUnreliableUsesLimit(t *testing.T) {
	w := NewWindow(Config{MinSamples: 4, ErrWindow: 8})
	for range 24 {
		w.Add(Record{User: "u", Class: "c", Cards: 1, Limit: 100, Runtime: 10})
	}
	// The user's jobs turn long: the first few outlive the p90 learned
	// from the short ones before the window catches up.
	for range 8 {
		w.Add(Record{User: "u", Class: "c", Cards: 1, Limit: 100, Runtime: 60})
	}
	j := modeltest.Job("x").User("u").Class("c").Limit(100 * time.Second).Build()
	d, b := w.Estimate(&j)
	if !b.Unreliable || d.Quantile(0) != 100 || b.Exceed < 0.3 {
		t.Fatalf("basis %+v, q0 %v: want unreliable and the limit", b, d.Quantile(0))
	}
}

// TestEstimatesNeverExceedLimit over random histories and jobs.
func TestEstimatesNeverExceedLimit(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := NewWindow(Config{MinSamples: rapid.IntRange(1, 5).Draw(t, "min")})
		users := []string{"a", "b"}
		for range rapid.IntRange(0, 60).Draw(t, "n") {
			lim := float64(rapid.IntRange(1, 10000).Draw(t, "lim"))
			w.Add(Record{User: rapid.SampledFrom(users).Draw(t, "u"), Class: "c", Cards: 1, Limit: lim,
				Runtime: lim * rapid.Float64Range(0, 1.5).Draw(t, "r")})
		}
		lim := time.Duration(rapid.IntRange(1, 10000).Draw(t, "jl")) * time.Second
		j := modeltest.Job("j").User(rapid.SampledFrom(users).Draw(t, "ju")).Class("c").Limit(lim).Build()
		d, _ := w.Estimate(&j)
		for i := 1; i < Grid; i++ {
			if d.Q[i] < d.Q[i-1] {
				t.Fatalf("quantiles not monotone: %v", d.Q)
			}
		}
		if d.Q[Grid-1] > lim.Seconds()+1e-9 {
			t.Fatalf("estimate %v above limit %v", d.Q[Grid-1], lim.Seconds())
		}
		el := rapid.Float64Range(0, 2*lim.Seconds()).Draw(t, "elapsed")
		r := Remaining(d, lim.Seconds(), el, rapid.Float64Range(0, 1).Draw(t, "p"))
		if r.Q[Grid-1] > math.Max(lim.Seconds()-el, 0)+1e-9 || r.Q[0] < 0 {
			t.Fatalf("remaining %v outside [0, %v]", r.Q, lim.Seconds()-el)
		}
	})
}
