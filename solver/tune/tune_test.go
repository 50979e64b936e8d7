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
