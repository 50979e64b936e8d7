package estimate

import (
	"math"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// remainingBefore is Remaining as it was written before it computed one
// grid point at a time (with a job the history cannot explain ending
// uniformly within its limit): the reference.
func remainingBefore(total Dist, limit, elapsed, progress float64) Dist {
	left := limit - elapsed
	if left <= 0 {
		return Point(0)
	}
	cond, ok := total.Beyond(elapsed)
	if !ok {
		for i := range cond.Q {
			cond.Q[i] = left * float64(i) / (Grid - 1)
		}
	}
	cond = cond.Cap(left)
	if progress > 0 && progress <= 1 {
		byProgress := min(elapsed*(1-progress)/progress, left)
		cond = Mix(Point(byProgress), cond, progress)
	}
	return cond
}

func drawDist(t *rapid.T) Dist {
	qs := rapid.SliceOfN(rapid.Float64Range(0, 1e5), Grid, Grid).Draw(t, "q")
	slices.Sort(qs)
	var d Dist
	copy(d.Q[:], qs)
	if rapid.Bool().Draw(t, "atom") {
		// Flat stretches: atoms, as small histories give.
		for i := range d.Q {
			d.Q[i] = math.Round(d.Q[i]/2e4) * 2e4
		}
	}
	return d
}

// TestRemainingQuantile: RemainingQuantile is the quantile of the capped
// Remaining, bit for bit, and Remaining is what it was, over random
// distributions, limits, elapsed times, progress, caps and quantiles.
func TestRemainingQuantile(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		total := drawDist(t)
		limit := rapid.Float64Range(1, 2e5).Draw(t, "limit")
		elapsed := rapid.Float64Range(0, 2e5).Draw(t, "elapsed")
		progress := rapid.SampledFrom([]float64{0, 0.1, 0.5, 0.99, 1, 1.5}).Draw(t, "progress")
		c := rapid.SampledFrom([]float64{math.Inf(1), 0, 60, 3600, 5e4}).Draw(t, "cap")
		p := rapid.SampledFrom([]float64{0, 0.5, 0.8, 0.95, 0.999, 1, rapid.Float64Range(0, 1).Draw(t, "p")}).Draw(t, "which")
		whole := Remaining(total, limit, elapsed, progress)
		if before := remainingBefore(total, limit, elapsed, progress); whole != before {
			t.Fatalf("Remaining %v, before %v", whole.Q, before.Q)
		}
		capped := whole.Cap(c)
		want := capped.Quantile(p)
		if got := RemainingQuantile(&total, limit, elapsed, progress, c, p); math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("RemainingQuantile(p=%v, cap=%v) = %v, want %v", p, c, got, want)
		}
	})
}

// TestRemainingUnexplained: a job that has outlived every sample of its
// history ends at any time within what is left of its limit, each as
// likely (not at its limit for certain, which made the start of a job
// waiting for its cards look certain too).
func TestRemainingUnexplained(t *testing.T) {
	total := FromSorted([]float64{300, 600, 900}, 1)
	r := Remaining(total, 7200, 3600, 0)
	for _, p := range []float64{0, 0.25, 0.5, 0.8, 1} {
		if got, want := r.Quantile(p), p*3600; math.Abs(got-want) > 1e-9 {
			t.Errorf("quantile %v = %v, want %v", p, got, want)
		}
	}
	if got := RemainingQuantile(&total, 7200, 3600, 0, 1800, 0.8); got != 1800 {
		t.Errorf("capped at 1800: quantile 0.8 = %v, want 1800", got)
	}
	// Explained, it is the history beyond the elapsed time.
	if e := Remaining(total, 7200, 500, 0); e.Quantile(1) != 400 {
		got := e.Quantile(1)
		t.Errorf("explained: quantile 1 = %v, want 400", got)
	}
}
