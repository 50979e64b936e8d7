package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/model/modeltest"
	"github.com/huitian/huitian/solver"
)

// allPolicies are every policy a planner is built for.
var allPolicies = []model.Policy{
	model.PolicyFCFS, model.PolicyEASY, model.PolicyConservative, model.PolicyEASYSJBF,
	model.PolicyHybridDepth, model.PolicyHuitianGreedy, model.PolicyHuitian,
}

// cycleLog is what a planner saw and did over a sequence, for rebuilding
// one from scratch.
type cycleLog struct {
	s   *model.Snapshot
	d   *model.Decision
	evs []model.Event
}

// drawRun draws a policy, a sequence of consecutive cycles (cluster
// size, a queue of up to maxQueued jobs, seed and step between cycles)
// and how many cycles to plan.
func drawRun(t *rapid.T, maxQueued int) (model.Policy, *Sequence, int) {
	p := rapid.SampledFrom(allPolicies).Draw(t, "policy")
	cards := rapid.SampledFrom([]int{16, 64, 256}).Draw(t, "cards")
	queued := rapid.IntRange(1, maxQueued).Draw(t, "queued")
	seed := rapid.Uint64().Draw(t, "seed")
	step := time.Duration(rapid.IntRange(1, 600).Draw(t, "stepSeconds")) * time.Second
	cycles := rapid.IntRange(5, 40).Draw(t, "cycles")
	return p, NewSequence(cards, queued, seed, step), cycles
}

// mustPlanner is NewPlanner, failing the test on an error.
func mustPlanner(t *rapid.T, p model.Policy, hist []model.Event) solver.Planner {
	pl, err := NewPlanner(p, hist)
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

// fromScratch returns a planner of the policy that has learned what the
// long-lived one had by the cycle after log: the same history, decisions
// and events, and nothing else carried between cycles (no profile, no
// remembered card numbers, no cached estimate).
func fromScratch(t *rapid.T, p model.Policy, hist []model.Event, log []cycleLog) solver.Planner {
	pl := mustPlanner(t, p, hist)
	if l, ok := pl.(solver.Learner); ok {
		for _, c := range log {
			l.Decided(c.s, c.d)
			for _, e := range c.evs {
				l.Observe(e)
			}
		}
	}
	return pl
}

// TestIncrementalEqualsFromScratch: over long random sequences of
// consecutive cycles (arrivals, completions, starts and preemptions
// between them), a planner that carries its state from cycle to cycle
// decides exactly what a planner built from scratch for that cycle
// decides, for every policy.
func TestIncrementalEqualsFromScratch(t *testing.T) {
	hist := History(200, 3)
	rapid.Check(t, func(t *rapid.T) {
		p, q, cycles := drawRun(t, 80)
		live := mustPlanner(t, p, hist)
		// Reuse: each snapshot is built in the arrays of the one two
		// cycles back, so a planner that kept any of a snapshot but
		// values would decide from a later cycle's jobs. The log keeps
		// copies.
		q = q.Reuse()
		var log []cycleLog
		for n := range cycles {
			s := q.Snapshot()
			if err := validate(s); err != nil {
				t.Fatalf("cycle %d: the sequence made an invalid snapshot: %v", n, err)
			}
			d, err := live.Plan(context.Background(), s)
			if err != nil {
				t.Fatalf("cycle %d: %v", n, err)
			}
			want, err := fromScratch(t, p, hist, log).Plan(context.Background(), s)
			if err != nil {
				t.Fatalf("cycle %d from scratch: %v", n, err)
			}
			if diff := cmp.Diff(want, d, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("%s, cycle %d: the long-lived planner differs from one built from scratch (-scratch +live):\n%s", p, n, diff)
			}
			if l, ok := live.(solver.Learner); ok {
				l.Decided(s, d)
			}
			evs := q.Advance(d)
			if l, ok := live.(solver.Learner); ok {
				for _, e := range evs {
					l.Observe(e)
				}
			}
			kept := *s
			kept.Running, kept.Queued = slices.Clone(s.Running), slices.Clone(s.Queued)
			log = append(log, cycleLog{&kept, d, evs})
		}
	})
}

// validate validates a copy of s: validating lays the cluster out anew,
// and a planner keeps its profile for one layout, so validating s itself
// would make every cycle a first one.
func validate(s *model.Snapshot) error {
	v, c := *s, *s.Cluster
	v.Cluster = &c
	return v.Validate()
}

// TestSequenceMoves: a sequence's cycles start, finish and submit jobs,
// keep the queue about as deep as asked, and stay valid.
func TestSequenceMoves(t *testing.T) {
	pl, err := NewPlanner(model.PolicyEASY, nil)
	if err != nil {
		t.Fatal(err)
	}
	q := NewSequence(1024, 300, 1, 30*time.Second)
	kinds := map[model.EventKind]int{}
	for n := range 30 {
		s := q.Snapshot()
		if err := s.Validate(); err != nil {
			t.Fatalf("cycle %d: %v", n, err)
		}
		if len(s.Queued) < 300 || len(s.Queued) > 300+3*n+3 {
			t.Fatalf("cycle %d: %d queued, want about 300", n, len(s.Queued))
		}
		d, err := pl.Plan(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range q.Advance(d) {
			kinds[e.Kind]++
		}
	}
	if kinds[model.EventStarted] == 0 || kinds[model.EventFinished] == 0 {
		t.Fatalf("events over 30 cycles: %v, want starts and finishes", kinds)
	}
	if got := fmt.Sprint(q.Snapshot().Now.Sub(Now)); got != "15m0s" {
		t.Fatalf("30 cycles of 30 s end at now+%s, want 15m0s", got)
	}
}

// TestBriefIsPlanWithoutPending: over random sequences of cycles, a
// planner asked for brief plans (Options.Brief, as the simulator asks)
// decides what a planner asked for whole plans decides, for every policy,
// but for the pending and idle-card lists, which it leaves empty.
func TestBriefIsPlanWithoutPending(t *testing.T) {
	hist := History(200, 3)
	rapid.Check(t, func(t *rapid.T) {
		p, q, cycles := drawRun(t, 120)
		whole, brief := mustPlanner(t, p, hist), mustPlanner(t, p, hist)
		pending := 0
		for n := range cycles {
			s := q.Snapshot()
			d, err := whole.Plan(context.Background(), s)
			if err != nil {
				t.Fatalf("cycle %d: %v", n, err)
			}
			bs := *s
			bs.Options.Brief = true
			b, err := brief.Plan(context.Background(), &bs)
			if err != nil {
				t.Fatalf("cycle %d, brief: %v", n, err)
			}
			if len(b.Pending) != 0 || len(b.Idle) != 0 {
				t.Fatalf("%s, cycle %d: a brief plan lists %d waiting jobs, %d idle cards", p, n, len(b.Pending), len(b.Idle))
			}
			if len(b.Fragments) != 0 {
				t.Fatalf("%s, cycle %d: a brief plan gives a fragment inventory %v", p, n, b.Fragments)
			}
			pending += len(d.Pending)
			want := *d
			want.Pending, want.Idle, want.Fragments = nil, nil, nil
			// A start beyond EASY has no fragment in a brief plan: the
			// idle capacity is not classified.
			if len(b.Starts) == len(want.Starts) {
				want.Starts = slices.Clone(want.Starts)
				for i := range want.Starts {
					if b.Starts[i].Fragment == model.FragmentUnspecified && want.Starts[i].Kind == model.Backfill && (p == model.PolicyHuitian || p == model.PolicyHuitianGreedy) {
						want.Starts[i].Fragment = model.FragmentUnspecified
					}
				}
			}
			if diff := cmp.Diff(&want, b, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("%s, cycle %d: the brief plan differs from the whole one without its pending list (-whole +brief):\n%s", p, n, diff)
			}
			if l, ok := whole.(solver.Learner); ok {
				l.Decided(s, d)
				brief.(solver.Learner).Decided(&bs, b)
			}
			for _, e := range q.Advance(d) {
				if l, ok := whole.(solver.Learner); ok {
					l.Observe(e)
					brief.(solver.Learner).Observe(e)
				}
			}
		}
		if pending == 0 {
			t.Skip("no job waited: nothing to leave out")
		}
	})
}

// TestLateCountsPastTheSlack: a plan is late when it answers more than
// LateSlack past its budget, by the caller's clock (one that moves a fixed
// step between its readings, an hour ahead so that no deadline passes).
func TestLateCountsPastTheSlack(t *testing.T) {
	budget := 50 * time.Millisecond
	for _, c := range []struct {
		step time.Duration
		want int
	}{{budget + LateSlack - time.Millisecond, 0}, {budget + LateSlack, 0}, {budget + LateSlack + time.Millisecond, 6}} {
		at := time.Now().Add(time.Hour)
		clock := func() time.Time { at = at.Add(c.step); return at }
		pl, err := NewPlanner(model.PolicyEASY, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := MeasureSequence(context.Background(), pl, NewSequence(64, 20, 1, 30*time.Second), 1, 6, budget, clock)
		if err != nil {
			t.Fatal(err)
		}
		if res.Late != c.want || res.BudgetCuts != 0 {
			t.Errorf("every plan %v: %d late, %d cut; want %d late, none cut", c.step, res.Late, res.BudgetCuts, c.want)
		}
	}
}

// TestCancelledPlanLeavesNoTrace: a plan the caller gives up on, at any
// check of its context, returns context.Canceled (or, when it had
// finished, its decision), and the planner then decides every later
// cycle exactly as one that was never asked that plan, for every
// policy. The large case has more running jobs than a phase reads
// between two checks (solver's cancelEvery).
func TestCancelledPlanLeavesNoTrace(t *testing.T) {
	hist := History(200, 3)
	// fataler is what check needs of a *testing.T or a *rapid.T.
	type fataler interface {
		Fatal(...any)
		Fatalf(string, ...any)
	}
	check := func(t fataler, p model.Policy, q *Sequence, cycles int, left func(n int) int) {
		live, err := NewPlanner(p, hist)
		if err != nil {
			t.Fatal(err)
		}
		clean, err := NewPlanner(p, hist)
		if err != nil {
			t.Fatal(err)
		}
		for n := range cycles {
			s := q.Snapshot()
			k := left(n)
			ctx := &modeltest.Countdown{Context: context.Background(), Left: k, Fail: context.Canceled}
			if _, err := live.Plan(ctx, s); err != nil && !errors.Is(err, context.Canceled) {
				t.Fatalf("%s, cycle %d, cancelled after %d checks: %v", p, n, k, err)
			}
			d, err := live.Plan(context.Background(), s)
			if err != nil {
				t.Fatalf("%s, cycle %d: %v", p, n, err)
			}
			want, err := clean.Plan(context.Background(), s)
			if err != nil {
				t.Fatalf("%s, cycle %d, never cancelled: %v", p, n, err)
			}
			if diff := cmp.Diff(want, d, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("%s, cycle %d: after a plan cancelled at check %d the planner decides otherwise (-never cancelled +after):\n%s", p, n, k, diff)
			}
			evs := q.Advance(d)
			for _, pl := range []solver.Planner{live, clean} {
				if l, ok := pl.(solver.Learner); ok {
					l.Decided(s, d)
					for _, e := range evs {
						l.Observe(e)
					}
				}
			}
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		p, q, cycles := drawRun(t, 80)
		check(t, p, q, cycles, func(n int) int {
			return rapid.IntRange(0, 400).Draw(t, fmt.Sprintf("left%d", n))
		})
	})
	// Cancelled at each of a large cluster's first checks in turn: some
	// in the middle of reading the running jobs.
	for _, p := range allPolicies {
		check(t, p, NewSequence(16384, 300, 7, 30*time.Second), 5, func(n int) int { return n })
	}
}
