package estimate

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/huitian/huitian/model"
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

// oldEstimate is Estimate as it was before Ratios and tokens: the
// planner's output must not change by a bit.
func oldEstimate(w *Window, j *model.Job) (Dist, Basis) {
	limit := j.TimeLimit.Seconds()
	sorted, lvl, ok := w.lookup(j.User, j.Class, j.Cards)
	if !ok {
		return Point(limit), Basis{Level: "limit"}
	}
	b := Basis{Level: levelNames[lvl], Samples: len(sorted)}
	if e := w.errs["uc\x00"+j.User+"\x00"+j.Class]; e != nil {
		rate, n := e.rate()
		b.Exceed = rate
		if n >= w.cfg.ErrWindow/2 && rate > w.cfg.MaxExceed {
			b.Unreliable = true
			b.Level = "limit"
			return Point(limit), b
		}
	}
	return FromSorted(sorted, limit).Cap(limit), b
}

// TestTokenCurrent checks the estimate cache's contract: while a token is
// current, EstimateRatios answers exactly what it answered when it gave
// the token — for every user, class and card count estimated so far,
// after every Add, over random histories on a small universe (so that
// rings fill, wrap, reach MinSamples and change level, and error rings
// appear and tip over MaxExceed). And Estimate, the cached ratios scaled
// to a limit, is bit for bit what it was before ratios and tokens.
func TestTokenCurrent(t *testing.T) {
	kept := 0
	rapid.Check(t, func(t *rapid.T) {
		w := NewWindow(Config{
			Window:     rapid.IntRange(1, 6).Draw(t, "window"),
			MinSamples: rapid.IntRange(1, 5).Draw(t, "min"),
			ErrWindow:  rapid.IntRange(1, 6).Draw(t, "errWindow"),
			MaxExceed:  rapid.Float64Range(0.05, 0.9).Draw(t, "maxExceed"),
		})
		users, classes := []string{"a", "b"}, []string{"x", "y"}
		limits := []int{60, 3600, 7777}
		type cached struct {
			r   Ratios
			b   Basis
			tok Token
		}
		type key struct {
			u, c  string
			cards int
		}
		cache := map[key]cached{}
		check := func(k key) {
			r, b, tok := w.EstimateRatios(k.u, k.c, k.cards)
			if !w.Current(tok) {
				t.Fatalf("a fresh token of %+v is not current", k)
			}
			for _, lim := range limits {
				j := modeltest.Job("j").User(k.u).Class(k.c).Cards(k.cards).Limit(time.Duration(lim) * time.Second).Build()
				d, eb := w.Estimate(&j)
				od, ob := oldEstimate(w, &j)
				if d != od || eb != ob || r.Of(float64(lim)) != d || b != eb {
					t.Fatalf("%+v, limit %d: Estimate %v %+v, ratios %v %+v, before tokens %v %+v", k, lim, d.Q, eb, r.Of(float64(lim)).Q, b, od.Q, ob)
				}
			}
			if c, ok := cache[k]; ok && w.Current(c.tok) {
				kept++
				if c.r != r || c.b != b {
					t.Fatalf("token of %+v still current, but the estimate changed: cached %+v %+v, now %+v %+v", k, c.r, c.b, r, b)
				}
				return
			}
			cache[k] = cached{r, b, tok}
		}
		for range rapid.IntRange(0, 120).Draw(t, "steps") {
			k := key{
				u:     rapid.SampledFrom(users).Draw(t, "u"),
				c:     rapid.SampledFrom(classes).Draw(t, "c"),
				cards: rapid.IntRange(1, 2).Draw(t, "cards"),
			}
			if rapid.Bool().Draw(t, "add") {
				lim := float64(rapid.SampledFrom(limits).Draw(t, "lim"))
				w.Add(Record{User: k.u, Class: k.c, Cards: k.cards, Limit: lim,
					Runtime: lim * rapid.SampledFrom([]float64{0, 0.1, 0.37, 0.5, 0.9, 1, 1.2}).Draw(t, "ratio")})
				for ck := range cache {
					check(ck)
				}
			} else {
				check(k)
			}
		}
		r, err := RestoreWindow(w.cfg, w.State())
		if err != nil {
			t.Fatal(err)
		}
		for k, c := range cache {
			if r.Current(c.tok) {
				t.Fatalf("a token of the window %+v is current on its restored copy", k)
			}
		}
		if r.Current(Token{}) {
			t.Fatal("the zero token is current")
		}
	})
	if kept == 0 {
		t.Error("no token was ever still current: the test checks nothing")
	}
}

// TestTokenNewErrorRing: a job's user+class gets its first score from a
// job of another card count, which leaves the ring the estimate read
// untouched but makes the estimator unreliable for it (rapid found it).
func TestTokenNewErrorRing(t *testing.T) {
	w := NewWindow(Config{MinSamples: 2, ErrWindow: 2, MaxExceed: 0.3})
	w.Add(Record{User: "a", Class: "y", Cards: 2, Limit: 60, Runtime: 0})
	w.Add(Record{User: "a", Class: "y", Cards: 2, Limit: 60, Runtime: 0})
	_, b, tok := w.EstimateRatios("a", "y", 2)
	if b.Level != "user+class+cards" || b.Unreliable {
		t.Fatalf("basis %+v, want user+class+cards, reliable", b)
	}
	w.Add(Record{User: "a", Class: "y", Cards: 1, Limit: 60, Runtime: 6})
	if _, b2, _ := w.EstimateRatios("a", "y", 2); !b2.Unreliable {
		t.Fatalf("basis %+v after a miss, want unreliable", b2)
	}
	if w.Current(tok) {
		t.Error("the token is still current after the user+class's first score")
	}
}

// TestBasisOwn: only the user's own levels, trusted, are the user's own
// history.
func TestBasisOwn(t *testing.T) {
	for _, tc := range []struct {
		b    Basis
		want bool
	}{
		{Basis{Level: "user+class+cards"}, true},
		{Basis{Level: "user+class"}, true},
		{Basis{Level: "user"}, true},
		{Basis{Level: "user", Unreliable: true}, false},
		{Basis{Level: "class"}, false},
		{Basis{Level: "all"}, false},
		{Basis{Level: "limit"}, false},
	} {
		if got := tc.b.Own(); got != tc.want {
			t.Errorf("%+v.Own() = %v, want %v", tc.b, got, tc.want)
		}
	}
}

// TestMedianIsOfsMedian: Ratios.Median is Of(limit).Quantile(0.5) bit for
// bit, over random histories (runtimes past their limits included; Add
// keeps their ratio at 1) and limits, and for estimates that fall back to
// the limit.
func TestMedianIsOfsMedian(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := NewWindow(Config{MinSamples: rapid.IntRange(1, 5).Draw(t, "min")})
		users := []string{"a", "b", "c"}
		for range rapid.IntRange(0, 60).Draw(t, "n") {
			lim := float64(rapid.IntRange(1, 100000).Draw(t, "lim"))
			w.Add(Record{User: rapid.SampledFrom(users).Draw(t, "u"), Class: "c", Cards: 1, Limit: lim,
				Runtime: lim * rapid.Float64Range(0, 3).Draw(t, "r")})
		}
		r, _, _ := w.EstimateRatios(rapid.SampledFrom(users).Draw(t, "ju"), "c", 1)
		lim := rapid.Float64Range(0, 1e7).Draw(t, "limit")
		d := r.Of(lim)
		if got, want := r.Median(lim), d.Quantile(0.5); math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("Median(%v) = %v, Of(%v).Quantile(0.5) = %v", lim, got, lim, want)
		}
	})
}

// oldMaxOf is MaxOf as it was before its CDFs were walked along the
// points: each CDF searched at each point (the points and the inversion
// are MaxOf's own, unchanged).
func oldMaxOf(ds []Dist) Dist {
	switch len(ds) {
	case 0:
		return Point(0)
	case 1:
		return ds[0]
	}
	var buf [maxPoints]float64
	xs := maxPointsOf(ds, &buf)
	cdf := make([]float64, len(xs))
	for k, x := range xs {
		p := 1.0
		for i := range ds {
			p *= ds[i].CDF(x)
		}
		cdf[k] = p
	}
	return fromCDF(xs, cdf)
}

// TestMaxOfAsSearched: MaxOf is bit for bit what it was when each CDF was
// searched at each point, over random distributions (atoms, shared grid
// values and points, few inputs and past the 256-point grid).
func TestMaxOfAsSearched(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 40).Draw(t, "n")
		ds := make([]Dist, n)
		for i := range ds {
			vals := rapid.SliceOfN(rapid.SampledFrom([]float64{0, 1, 5, 30, 60, 61, 600, 3600, 7200, 1e5}), 1, 12).Draw(t, "vals")
			slices.Sort(vals)
			ds[i] = FromSorted(vals, rapid.SampledFrom([]float64{1, 0.5, 3}).Draw(t, "scale"))
		}
		got, want := MaxOf(ds), oldMaxOf(ds)
		for i := range got.Q {
			if math.Float64bits(got.Q[i]) != math.Float64bits(want.Q[i]) {
				t.Fatalf("MaxOf of %d: Q[%d] = %v, searched %v", n, i, got.Q[i], want.Q[i])
			}
		}
	})
}

// TestLimitSpread, by hand: ratios 0.1, 0.2, 0.4 and 0.8 have quartiles
// 0.175 and 0.5 (type 7), a spread of ln(0.5/0.175); fewer jobs than
// MinSamples tell nothing; a quarter of jobs that ran no time make it
// +Inf.
func TestLimitSpread(t *testing.T) {
	w := NewWindow(Config{MinSamples: 4})
	for _, rt := range []float64{10, 20, 40} {
		w.Add(Record{User: "u", Class: "c", Cards: 1, Limit: 100, Runtime: rt})
	}
	if _, ok := w.LimitSpread(); ok {
		t.Fatal("3 jobs, MinSamples 4: a spread")
	}
	w.Add(Record{User: "v", Class: "d", Cards: 2, Limit: 100, Runtime: 80})
	if got, ok := w.LimitSpread(); !ok || math.Abs(got-math.Log(0.5/0.175)) > 1e-9 {
		t.Fatalf("spread %v %v, want %v", got, ok, math.Log(0.5/0.175))
	}
	for range 4 {
		w.Add(Record{User: "u", Class: "c", Cards: 1, Limit: 100, Runtime: 0})
	}
	if got, ok := w.LimitSpread(); !ok || !math.IsInf(got, 1) {
		t.Fatalf("half the jobs ran 0 s: spread %v %v, want +Inf", got, ok)
	}
}

// TestMaxCards: the most cards a finished job held, 0 with none, and the
// same on a restored copy (read back from the user+class+cards keys).
func TestMaxCards(t *testing.T) {
	w := NewWindow(Config{})
	if got := w.MaxCards(); got != 0 {
		t.Fatalf("empty: %d, want 0", got)
	}
	for _, c := range []int{1, 8, 4} {
		w.Add(Record{User: "u", Class: "c", Cards: c, Limit: 100, Runtime: 50})
	}
	w.Add(Record{User: "u", Class: "c", Cards: 16, Limit: 0, Runtime: 50}) // no limit: not learnt from
	if got := w.MaxCards(); got != 8 {
		t.Fatalf("jobs of 1, 8 and 4 cards: %d, want 8", got)
	}
	r, err := RestoreWindow(w.cfg, w.State())
	if err != nil {
		t.Fatal(err)
	}
	if got := r.MaxCards(); got != 8 {
		t.Fatalf("restored: %d, want 8", got)
	}
}
