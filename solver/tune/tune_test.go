package tune

import (
	"math"
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

// TestHoldPreemptionOnLostWork: 1,200 lost card-seconds over 100,000 busy
// (1.2%) hold preemption at the next preemption; once busy work without
// loss brings the share below 1%, the next adjustment lifts the hold. Both
// changes are logged.
func TestHoldPreemptionOnLostWork(t *testing.T) {
	c := Defaults()
	s := NewState(c)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.Work(100000, 1200)
	if got := s.Measures().LostShare; math.Abs(got-0.012) > 1e-12 {
		t.Fatalf("lost share %v, want 0.012", got)
	}
	s.Backfill(c, false, at)
	if !s.Params.HoldPreemption {
		t.Fatal("a preemption at 1.2% lost: not held")
	}
	// 0.999 × 100,000 + 100,000 busy, 0.999 × 1,200 lost: 0.6%.
	s.Work(100000, 0)
	for range c.Every {
		s.Backfill(c, true, at)
	}
	if s.Params.HoldPreemption {
		t.Fatalf("lost share %v: still held", s.Measures().LostShare)
	}
	var holds []float64
	for _, ch := range s.Log {
		if ch.Param == "hold_preemption" {
			holds = append(holds, ch.To)
		}
	}
	if len(holds) != 2 || holds[0] != 1 || holds[1] != 0 {
		t.Errorf("hold changes logged %v, want [1 0]", holds)
	}
}
