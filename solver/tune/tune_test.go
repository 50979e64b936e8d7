package tune

import (
	"testing"
	"time"

	"pgregory.net/rapid"
)

func TestRulesMoveTheRightWay(t *testing.T) {
	c := Defaults()
	s := NewState(c)
	at := time.Unix(0, 0)
	s.MainWait(c, 10*time.Minute)
	for range c.Every {
		s.Backfill(c, false, at) // every backfill job preempted
	}
	if s.Params.MaxBackfillRuntime >= c.RuntimeMax {
		t.Errorf("completion rate 0: max runtime %v did not shrink", s.Params.MaxBackfillRuntime)
	}
	if s.Params.ProtectFraction >= 0.15 {
		t.Errorf("main wait above target: protection %v did not move toward 0.10", s.Params.ProtectFraction)
	}
	if len(s.Log) == 0 {
		t.Error("adjustments not logged")
	}
}

// TestParamsStayInBounds under any sequence of outcomes.
func TestParamsStayInBounds(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := Defaults()
		s := NewState(c)
		for range rapid.IntRange(0, 2000).Draw(t, "n") {
			switch rapid.IntRange(0, 2).Draw(t, "kind") {
			case 0:
				s.Backfill(c, rapid.Bool().Draw(t, "ok"), time.Unix(0, 0))
			case 1:
				s.MainWait(c, time.Duration(rapid.IntRange(-3600, 3600).Draw(t, "w"))*time.Second)
			case 2:
				s.Estimator(c, rapid.Bool().Draw(t, "x"))
			}
			p := s.Params
			if p.MaxBackfillRuntime < c.RuntimeMin || p.MaxBackfillRuntime > c.RuntimeMax ||
				p.ProtectFraction < c.ProtectMin-1e-12 || p.ProtectFraction > c.ProtectMax+1e-12 ||
				p.Epsilon < c.EpsilonMin-1e-12 || p.Epsilon > c.EpsilonMax+1e-12 {
				t.Fatalf("params out of bounds: %+v", p)
			}
		}
	})
}

// TestFallIsAnsweredWithinTheWindow: with the window full of completions,
// a run of preemptions that takes the rate below target tightens the
// maximum runtime and ε at once, before Every more outcomes arrive. (Before,
// the controller waited for Every outcomes whatever they were.)
func TestFallIsAnsweredWithinTheWindow(t *testing.T) {
	c := Defaults()
	s := NewState(c)
	at := time.Unix(0, 0)
	for range 190 {
		s.Backfill(c, true, at)
	}
	before := s.Params
	n := 0
	for s.Measures().CompletionRate >= c.CompletionTarget {
		s.Backfill(c, false, at)
		n++
	}
	if n >= c.Every {
		t.Fatalf("took %d preemptions to fall below target", n)
	}
	if s.Params.Epsilon >= before.Epsilon || s.Params.MaxBackfillRuntime >= before.MaxBackfillRuntime {
		t.Fatalf("after the fall (%d preemptions since the last adjustment) params %+v, before %+v", n, s.Params, before)
	}
}
