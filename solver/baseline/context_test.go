package baseline

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/model/modeltest"
)

// bigQueue is a 4×8-card cluster, half busy, with a queue of n jobs.
func bigQueue(t *testing.T, n int) *model.Snapshot {
	t.Helper()
	c := modeltest.Uniform(4, 8, 0)
	now := modeltest.Epoch.Add(10 * time.Hour)
	s := &model.Snapshot{Now: now, Cluster: c}
	for i := range 2 {
		j := modeltest.Job(fmt.Sprintf("r%d", i)).Cards(8).Limit(time.Hour).Build()
		s.Running = append(s.Running, modeltest.Running(j, now.Add(-time.Minute), modeltest.Refs(c.Nodes[i].Name, 0, 8)...))
	}
	for i := range n {
		s.Queued = append(s.Queued, modeltest.Job(fmt.Sprintf("q%03d", i)).Cards(1+i%16).Limit(time.Duration(1+i%5)*time.Hour).Build())
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestPlanStopsWhenTheContextIsDone: a plan whose budget has run out
// decides the first job in queue order, as the full plan does (its start,
// or its reservation when it is the head), then stops, every other job
// pending and counted, the stats saying the plan fell back; a cancelled
// plan returns the context's error. Before the fix of issue 12 item 3,
// Plan ignored its context and walked the whole queue (conservative on
// one node of 65,536 cards ran for minutes after its caller left); until
// issue 15 item 2 an expired budget gave no decision at all; until
// 2026-12-03 it completed the main pass and the head's reservation
// whatever they cost (5,000 starts after a wave of completions at 65,536
// cards: 116 ms on a 50 ms budget).
func TestPlanStopsWhenTheContextIsDone(t *testing.T) {
	fits := bigQueue(t, 200)
	// The same queue behind a first job that waits: the head.
	blocked := bigQueue(t, 200)
	blocked.Queued = append([]model.Job{modeltest.Job("a-head").Cards(24).Limit(time.Hour).Build()}, blocked.Queued...)
	for _, p := range []model.Policy{model.PolicyEASY, model.PolicyConservative, model.PolicyHybridDepth, model.PolicyEASYSJBF, model.PolicyFCFS} {
		params, ok := ForPolicy(p, 3)
		if !ok {
			t.Fatalf("no params for %s", p)
		}
		for _, s := range []*model.Snapshot{fits, blocked} {
			t.Run(p.String()+"/"+s.Queued[0].ID, func(t *testing.T) { planStopsWhenDone(t, params, s) })
		}
	}
}

func planStopsWhenDone(t *testing.T, params Params, s *model.Snapshot) {
	first := s.Queued[QueueOrder(s.Queued)[0]].ID
	full, err := New(params).Plan(context.Background(), s)
	if err != nil || full.Stats.Fallback || full.Stats.BudgetCut != 0 {
		t.Fatalf("without a deadline: %v, fallback %v, cut %d", err, full.Stats.Fallback, full.Stats.BudgetCut)
	}
	expired, cancel := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel()
	d, err := New(params).Plan(expired, s)
	if err != nil {
		t.Fatalf("budget out: %v, want the decision so far", err)
	}
	// The full plan's decision on the first job alone.
	var start []model.Start
	for _, st := range full.Starts {
		if st.JobID == first {
			start = append(start, st)
		}
	}
	var head []model.Reservation
	for _, r := range full.Reservations {
		if r.JobID == first {
			head = append(head, r)
		}
	}
	if diff := cmp.Diff(start, d.Starts, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("budget out: starts are not the first job's (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(head, d.Reservations, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("budget out: reservations are not the first job's (-want +got):\n%s", diff)
	}
	if len(start)+len(head) == 0 && params.Name != "fcfs" {
		t.Errorf("the full plan neither starts nor reserves %s: not a test of the first decision", first)
	}
	if len(full.Starts)+len(full.Reservations) < 2 && params.Name != "fcfs" { // FCFS decides nothing behind a head
		t.Errorf("the full plan decides one job: not a test of the cut")
	}
	cut := 0
	for _, pd := range d.Pending {
		if strings.Contains(pd.Message, "time budget") {
			cut++
		}
	}
	if !d.Stats.Fallback || d.Stats.BudgetCut != len(s.Queued)-1 || d.Stats.BudgetCut != cut ||
		len(d.Starts)+len(d.Pending) != len(s.Queued) {
		t.Errorf("budget out: fallback %v, cut %d (%d pending say so), %d starts + %d pending of %d queued",
			d.Stats.Fallback, d.Stats.BudgetCut, cut, len(d.Starts), len(d.Pending), len(s.Queued))
	}
	cancelled, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if _, err := New(params).Plan(cancelled, s); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v, want context.Canceled", err)
	}
}

// TestWhatIfStopsBeforeItsFirstJob: a what-if (Prepared.WhatIf) whose
// budget has run out considers no job, not even the head's sweep that a
// plan completes to decide something: every job is pending, cut and
// counted. With time left it plans as a plan does.
func TestWhatIfStopsBeforeItsFirstJob(t *testing.T) {
	s := bigQueue(t, 50)
	s.Queued = append([]model.Job{modeltest.Job("a-head").Cards(24).Limit(time.Hour).Build()}, s.Queued...)
	params, _ := ForPolicy(model.PolicyEASY, 1)
	pl := New(params)
	prep := Prepared{Order: QueueOrder(s.Queued), WhatIf: true}
	full, err := pl.PlanPrepared(context.Background(), s, prep)
	if err != nil || full.Stats.Fallback || len(full.Reservations) == 0 {
		t.Fatalf("with time: %v, fallback %v, %d reservations; want the head reserved", err, full.Stats.Fallback, len(full.Reservations))
	}
	plain, err := New(params).Plan(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(plain, full, cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("a what-if with time plans otherwise than a plan (-plan +what-if):\n%s", diff)
	}
	expired, cancel := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel()
	d, err := pl.PlanPrepared(expired, s, prep)
	if err != nil {
		t.Fatalf("budget out: %v, want a decision", err)
	}
	if len(d.Starts)+len(d.Reservations) != 0 || !d.Stats.Fallback || d.Stats.BudgetCut != len(s.Queued) || len(d.Pending) != len(s.Queued) {
		t.Fatalf("budget out: %d starts, %d reservations, fallback %v, %d cut, %d pending of %d queued; want none decided, all cut",
			len(d.Starts), len(d.Reservations), d.Stats.Fallback, d.Stats.BudgetCut, len(d.Pending), len(s.Queued))
	}
	prep.WhatIf = false
	if d, err := pl.PlanPrepared(expired, s, prep); err != nil || len(d.Reservations) != 1 {
		t.Fatalf("not a what-if, budget out: %v, %d reservations; want the head's", err, len(d.Reservations))
	}
}

// TestBudgetCutsBackfillAsLateAsItPasses: a budget that passes after n
// more checks once the walk began gives the full plan's decision on the
// jobs considered so far: the cut only drops later jobs, never changes
// an earlier one.
func TestBudgetCutsBackfillAsLateAsItPasses(t *testing.T) {
	s := bigQueue(t, 200)
	for _, p := range []model.Policy{model.PolicyEASY, model.PolicyConservative} {
		params, _ := ForPolicy(p, 0)
		full, err := New(params).Plan(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		prev := -1
		for _, n := range []int{0, 5, 20, 60, 199, 1000} {
			d, err := New(params).Plan(&modeltest.Countdown{Context: context.Background(), Left: n}, s)
			if err != nil {
				t.Fatalf("%s, %d checks: %v", p, n, err)
			}
			if len(d.Starts) > len(full.Starts) || len(d.Reservations) > len(full.Reservations) {
				t.Fatalf("%s, %d checks: more than the full plan", p, n)
			}
			if diff := cmp.Diff(full.Starts[:len(d.Starts)], d.Starts, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s, %d checks: starts differ from the full plan's first (-full +cut):\n%s", p, n, diff)
			}
			if diff := cmp.Diff(full.Reservations[:len(d.Reservations)], d.Reservations, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s, %d checks: reservations differ from the full plan's first (-full +cut):\n%s", p, n, diff)
			}
			if d.Stats.BudgetCut > prev && prev >= 0 {
				t.Errorf("%s, %d checks: cut %d jobs, more than with fewer checks (%d)", p, n, d.Stats.BudgetCut, prev)
			}
			prev = d.Stats.BudgetCut
			if n >= 1000 && (d.Stats.BudgetCut != 0 || d.Stats.Fallback) {
				t.Errorf("%s: enough checks for every job, yet cut %d", p, d.Stats.BudgetCut)
			}
		}
	}
}

// TestPlanStopsWhenCancelledMidWalk: a context cancelled from inside the
// walk (here by the backfill-order hook, called once the head waits) stops
// the plan with the context's error.
func TestPlanStopsWhenCancelledMidWalk(t *testing.T) {
	s := bigQueue(t, 200)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := 0
	params := Params{Name: "easy-hook", Depth: 1, Backfill: true, BackfillKey: func(int) float64 {
		calls++
		cancel()
		return 0
	}}
	if _, err := New(params).Plan(ctx, s); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled mid-walk: %v, want context.Canceled", err)
	}
	if calls == 0 {
		t.Fatal("the hook never ran: not a test of a cancel mid-walk")
	}
}

// TestBudgetStopsInsideASweep: a reservation's sweep asks the context as
// it goes (profile.TestEarliestStartOrStops: before its streams, then
// every stopEvery events), so a budget that passes while a job is
// considered (here 2,048 cards released at 2,048 distinct times) cuts that
// job rather than finishing its sweep; the head's own sweep is always
// completed. What was decided before the cut is the full plan's.
func TestBudgetStopsInsideASweep(t *testing.T) {
	c := modeltest.Uniform(2048, 1, 0)
	now := modeltest.Epoch.Add(10 * time.Hour)
	s := &model.Snapshot{Now: now, Cluster: c}
	for i := range c.Nodes {
		j := modeltest.Job(fmt.Sprintf("r%04d", i)).Cards(1).Limit(time.Duration(i+1) * time.Minute).Build()
		s.Running = append(s.Running, modeltest.Running(j, now, modeltest.Refs(c.Nodes[i].Name, 0, 1)...))
	}
	for i := range 6 {
		s.Queued = append(s.Queued, modeltest.Job(fmt.Sprintf("q%d", i)).Cards(1500+100*i).Limit(time.Hour).Build())
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	params, _ := ForPolicy(model.PolicyConservative, 0)
	// Card by card: on counts (profile.Pool) a sweep is a walk over the
	// releases' steps, and asks nothing.
	New := func(p Params) *Planner { return &Planner{P: p, PerCard: true} }
	full, err := New(params).Plan(context.Background(), s)
	if err != nil || len(full.Reservations) != len(s.Queued) {
		t.Fatalf("full plan: %v, %d reservations, want %d", err, len(full.Reservations), len(s.Queued))
	}
	// Left counts the context's answers: one per job considered, and one
	// per stopEvery events of a sweep past the head.
	sweepCut := false
	for left := 0; left <= 24; left++ {
		d, err := New(params).Plan(&modeltest.Countdown{Context: context.Background(), Left: left}, s)
		if err != nil {
			t.Fatalf("%d answers: %v", left, err)
		}
		if len(d.Reservations) == 0 {
			t.Fatalf("%d answers: no reservation, want at least the head's", left)
		}
		if diff := cmp.Diff(full.Reservations[:len(d.Reservations)], d.Reservations); diff != "" {
			t.Fatalf("%d answers: reservations differ from the full plan's first (-full +cut):\n%s", left, diff)
		}
		if len(d.Reservations)+d.Stats.BudgetCut != len(s.Queued) || len(d.Pending) != len(s.Queued) {
			t.Fatalf("%d answers: %d reserved + %d cut, %d pending, want %d", left, len(d.Reservations), d.Stats.BudgetCut, len(d.Pending), len(s.Queued))
		}
		// Were only jobs to ask (one as the plan begins, one per job),
		// k+2 answers would let job k be considered to the end: a cut of
		// job k with as many shows that sweeps asked too.
		if k := len(d.Reservations); k < len(s.Queued) && left >= k+2 {
			sweepCut = true
		}
	}
	if !sweepCut {
		t.Fatal("no budget passed inside a sweep: not a test of the sweep's stop")
	}
}

// lateTimer is a context whose deadline has passed but whose timer has
// not fired yet: Err is still nil, as on a busy scheduler.
type lateTimer struct{ context.Context }

func (lateTimer) Deadline() (time.Time, bool) { return time.Unix(1, 0), true }

// TestBudgetPassedBeforeItsTimerFires: a deadline in the past binds at
// once, whether or not the context's timer has fired: the first job is
// decided, and every later one is cut.
func TestBudgetPassedBeforeItsTimerFires(t *testing.T) {
	ctx := lateTimer{context.Background()}
	if err := Done(ctx); err != context.DeadlineExceeded {
		t.Fatalf("Done of a passed deadline = %v, want DeadlineExceeded", err)
	}
	if err := Done(context.Background()); err != nil {
		t.Fatalf("Done of no deadline = %v", err)
	}
	s := bigQueue(t, 200)
	for _, p := range []model.Policy{model.PolicyEASY, model.PolicyConservative} {
		params, _ := ForPolicy(p, 0)
		d, err := New(params).Plan(ctx, s)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if !d.Stats.Fallback || d.Stats.BudgetCut != len(s.Queued)-1 || len(d.Starts) != 1 {
			t.Errorf("%s: fallback %v, %d cut, %d starts: want the walk cut right after the first job (it fits)",
				p, d.Stats.Fallback, d.Stats.BudgetCut, len(d.Starts))
		}
	}
}
