package tune

import (
	"fmt"
	"math"
	"time"
)

// Config holds the controller's targets, steps and bounds.
type Config struct {
	CompletionTarget float64       // backfill completion rate target (default 0.95)
	MainWaitTarget   time.Duration // main-job wait delta target (default 60 s)
	ExceedTarget     float64       // estimator error above which ε shrinks (default 0.2)
	LostTarget       float64       // lost card-seconds over busy ones above which preemption for the head is held (default 0.01)

	RuntimeMin, RuntimeMax time.Duration // bounds of the maximum backfill runtime (10 min, 7 days)
	RuntimeShrink          float64       // multiplicative decrease (0.8)
	RuntimeGrow            time.Duration // additive increase (30 min)

	ProtectMin, ProtectMax, ProtectStep float64 // protection fraction bounds and step (0.10, 0.20, 0.01)

	EpsilonMin, EpsilonMax float64 // ε bounds (0.005, 0.05)
	EpsilonShrink          float64 // multiplicative decrease of ε (0.8)

	Window int // outcomes kept per measure (default 200)
	Every  int // adjust after this many new outcomes (default 20)
}

// Defaults returns the documented defaults.
func Defaults() Config {
	return Config{
		CompletionTarget: 0.95, MainWaitTarget: time.Minute, ExceedTarget: 0.2, LostTarget: 0.01,
		RuntimeMin: 10 * time.Minute, RuntimeMax: 7 * 24 * time.Hour, RuntimeShrink: 0.8, RuntimeGrow: 30 * time.Minute,
		ProtectMin: 0.10, ProtectMax: 0.20, ProtectStep: 0.01,
		EpsilonMin: 0.005, EpsilonMax: 0.05, EpsilonShrink: 0.8,
		Window: 200, Every: 20,
	}
}

// Params are what the planner reads from the controller each cycle.
type Params struct {
	MaxBackfillRuntime time.Duration
	ProtectFraction    float64
	Epsilon            float64
	// HoldPreemption: the work lost to preemption is above LostTarget of
	// the busy card-seconds, so the planner makes no backfill job yield
	// for the head's sake beyond what their windows owe (an overrun window
	// is still requeued: that is the guarantee), until it is back below.
	HoldPreemption bool
}

// Measures are the three backfill measures over the window; a measure with
// no data is NaN.
type Measures struct {
	CompletionRate  float64 // share of backfill jobs that ended without preemption
	Utilization     float64 // backfill card-seconds / otherwise idle card-seconds
	MainWaitDelta   float64 // seconds: mean(actual start − first reserved start) of main jobs
	EstimatorExceed float64 // share of recent jobs that outlived their p90
	LostShare       float64 // card-seconds lost to preemption over busy card-seconds, recent cycles
	BackfillJobs    int
	MainJobs        int
}

// Change is one logged adjustment.
type Change struct {
	At     time.Time
	Param  string
	From   float64
	To     float64
	Reason string
}

// State is the controller's state: plain data, copied in and out.
type State struct {
	Params Params

	Outcomes []bool    // recent backfill outcomes: true = ended without preemption
	Waits    []float64 // recent main-job wait deltas, seconds
	Exceeds  []bool    // recent estimator scores: true = outlived p90
	// Capacity accounting: card-seconds used by backfill, and card-seconds
	// that would otherwise have been idle, over recent cycles.
	BackfillCardSec, IdleCardSec float64
	// Work accounting: card-seconds lost to the preemptions the planner
	// decided (work redone, checkpoints written and read) and card-seconds
	// busy, over recent cycles.
	LostCardSec, BusyCardSec float64
	SinceAdjust              int
	Log                      []Change // the most recent adjustments, oldest first
}

// NewState returns the controller at its defaults: the maximum backfill
// runtime at its maximum, protection in the middle of its range, ε at its
// maximum.
func NewState(c Config) State {
	return State{Params: Params{
		MaxBackfillRuntime: c.RuntimeMax,
		ProtectFraction:    (c.ProtectMin + c.ProtectMax) / 2,
		Epsilon:            c.EpsilonMax,
	}}
}

func push[T any](s []T, v T, n int) []T {
	s = append(s, v)
	if len(s) > n {
		s = s[len(s)-n:]
	}
	return s
}

// Backfill records a finished or preempted backfill job. The controller
// adjusts every Every outcomes, and at once on a preemption while the
// window's completion rate is below target or the lost share above it: a
// fall is answered within the window, not after it has filled with more
// failures. The measures are read only on a preemption.
func (s *State) Backfill(c Config, completed bool, at time.Time) {
	s.Outcomes = push(s.Outcomes, completed, c.Window)
	s.SinceAdjust++
	due := s.SinceAdjust >= c.Every
	if !due && !completed {
		m := s.Measures()
		due = m.CompletionRate < c.CompletionTarget || m.LostShare > c.LostTarget
	}
	if due {
		s.adjust(c, at)
	}
}

// MainWait records how much later than first reserved a main job started.
func (s *State) MainWait(c Config, delta time.Duration) {
	s.Waits = push(s.Waits, delta.Seconds(), c.Window)
}

// Estimator records whether a finished job outlived its predicted p90.
func (s *State) Estimator(c Config, exceeded bool) {
	s.Exceeds = push(s.Exceeds, exceeded, c.Window)
}

// Capacity records one cycle interval's card-seconds: used by backfill and
// otherwise idle. The totals decay so that they cover recent cycles.
func (s *State) Capacity(backfill, idle float64) {
	const keep = 0.999
	s.BackfillCardSec = s.BackfillCardSec*keep + backfill
	s.IdleCardSec = s.IdleCardSec*keep + idle
}

// Work records one cycle interval's busy card-seconds and the
// card-seconds the preemptions decided in it will lose. The totals decay
// as Capacity's do.
func (s *State) Work(busy, lost float64) {
	const keep = 0.999
	s.BusyCardSec = s.BusyCardSec*keep + busy
	s.LostCardSec = s.LostCardSec*keep + lost
}

// Measures returns the current measures.
func (s *State) Measures() Measures {
	m := Measures{CompletionRate: math.NaN(), Utilization: math.NaN(), MainWaitDelta: math.NaN(), EstimatorExceed: math.NaN(), LostShare: math.NaN(),
		BackfillJobs: len(s.Outcomes), MainJobs: len(s.Waits)}
	if n := len(s.Outcomes); n > 0 {
		k := 0
		for _, o := range s.Outcomes {
			if o {
				k++
			}
		}
		m.CompletionRate = float64(k) / float64(n)
	}
	if s.BusyCardSec > 0 {
		m.LostShare = s.LostCardSec / s.BusyCardSec
	}
	if s.IdleCardSec > 0 {
		m.Utilization = min(s.BackfillCardSec/s.IdleCardSec, 1)
	}
	if n := len(s.Waits); n > 0 {
		t := 0.0
		for _, w := range s.Waits {
			t += w
		}
		m.MainWaitDelta = t / float64(n)
	}
	if n := len(s.Exceeds); n > 0 {
		k := 0
		for _, e := range s.Exceeds {
			if e {
				k++
			}
		}
		m.EstimatorExceed = float64(k) / float64(n)
	}
	return m
}

func (s *State) log(c Change) {
	s.Log = push(s.Log, c, 50)
}

// adjust applies the rules once, each bounded and logged.
func (s *State) adjust(c Config, at time.Time) {
	s.SinceAdjust = 0
	m := s.Measures()
	p := &s.Params
	// 1. Completion rate below target: shrink the maximum backfill runtime
	// multiplicatively, and ε with it (admit only what is more surely done
	// in time); above: grow the runtime additively.
	low := !math.IsNaN(m.CompletionRate) && m.CompletionRate < c.CompletionTarget
	if !math.IsNaN(m.CompletionRate) {
		old := p.MaxBackfillRuntime
		if low {
			p.MaxBackfillRuntime = max(time.Duration(float64(old)*c.RuntimeShrink), c.RuntimeMin)
		} else {
			p.MaxBackfillRuntime = min(old+c.RuntimeGrow, c.RuntimeMax)
		}
		if p.MaxBackfillRuntime != old {
			s.log(Change{at, "max_backfill_runtime", old.Seconds(), p.MaxBackfillRuntime.Seconds(),
				fmt.Sprintf("completion rate %.3f vs target %.3f", m.CompletionRate, c.CompletionTarget)})
		}
		if old := p.Epsilon; low && old > c.EpsilonMin {
			p.Epsilon = max(old*c.EpsilonShrink, c.EpsilonMin)
			s.log(Change{at, "epsilon", old, p.Epsilon,
				fmt.Sprintf("completion rate %.3f vs target %.3f", m.CompletionRate, c.CompletionTarget)})
		}
	}
	// 2. Main jobs waiting longer than planned: shorter protection; else back up.
	if !math.IsNaN(m.MainWaitDelta) {
		old := p.ProtectFraction
		if m.MainWaitDelta > c.MainWaitTarget.Seconds() {
			p.ProtectFraction = max(old-c.ProtectStep, c.ProtectMin)
		} else {
			p.ProtectFraction = min(old+c.ProtectStep, c.ProtectMax)
		}
		if p.ProtectFraction != old {
			s.log(Change{at, "protect_fraction", old, p.ProtectFraction,
				fmt.Sprintf("main-wait delta %.0fs vs target %.0fs", m.MainWaitDelta, c.MainWaitTarget.Seconds())})
		}
	}
	// 3. Work lost to preemption above target: hold preemption for the
	// head until it is back below.
	if !math.IsNaN(m.LostShare) {
		if hold := m.LostShare > c.LostTarget; hold != p.HoldPreemption {
			p.HoldPreemption = hold
			s.log(Change{at, "hold_preemption", b2f(!hold), b2f(hold),
				fmt.Sprintf("lost share %.4f vs target %.4f", m.LostShare, c.LostTarget)})
		}
	}
	// 4. Estimates often wrong: accept less risk; else relax back (not
	// while completion is below target).
	if !math.IsNaN(m.EstimatorExceed) && !low {
		old := p.Epsilon
		if m.EstimatorExceed > c.ExceedTarget {
			p.Epsilon = max(old*c.EpsilonShrink, c.EpsilonMin)
		} else {
			p.Epsilon = min(old/c.EpsilonShrink, c.EpsilonMax)
		}
		if p.Epsilon != old {
			s.log(Change{at, "epsilon", old, p.Epsilon,
				fmt.Sprintf("estimator exceed rate %.3f vs target %.3f", m.EstimatorExceed, c.ExceedTarget)})
		}
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
