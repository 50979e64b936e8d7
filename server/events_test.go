package server

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/huitian/huitian/model"
	pb "github.com/huitian/huitian/proto/huitian/v1"
	"github.com/huitian/huitian/solver"
)

// fakeLearner is an EASY planner that records what it is told.
type fakeLearner struct {
	solver.Planner
	mu       sync.Mutex
	observed []string // event keys, in delivery order
	decided  []time.Time
}

func (f *fakeLearner) Observe(e model.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.observed = append(f.observed, e.Key())
}

func (f *fakeLearner) Decided(s *model.Snapshot, _ *model.Decision) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.decided = append(f.decided, s.Now)
}

// learners is a planner factory that makes fakeLearners and keeps them.
type learners struct {
	mu   sync.Mutex
	made []*fakeLearner
}

func (l *learners) factory(p model.Policy, depth int) (solver.Planner, error) {
	pl, err := solver.New(p, depth)
	if err != nil {
		return nil, err
	}
	f := &fakeLearner{Planner: pl}
	l.mu.Lock()
	l.made = append(l.made, f)
	l.mu.Unlock()
	return f, nil
}

func (l *learners) last() *fakeLearner {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.made[len(l.made)-1]
}

func started(id string, at time.Duration, backfill bool) *pb.JobEvent {
	e := &pb.JobEvent{JobId: id, Kind: pb.JobEventKind_JOB_EVENT_KIND_STARTED, Time: timestamppb.New(t0.Add(at)),
		Spec: job(id, 2, time.Hour, time.Hour)}
	if backfill {
		e.Allocation = pb.AllocationKind_ALLOCATION_KIND_BACKFILL
	}
	return e
}

func finished(id string, startAt, at time.Duration) *pb.JobEvent {
	return &pb.JobEvent{JobId: id, Kind: pb.JobEventKind_JOB_EVENT_KIND_FINISHED, Time: timestamppb.New(t0.Add(at)),
		StartTime: timestamppb.New(t0.Add(startAt)), Spec: job(id, 2, time.Hour, time.Hour), Exit: pb.ExitState_EXIT_STATE_COMPLETED}
}

func report(t *testing.T, ts *testServer, cluster string, evs ...*pb.JobEvent) *pb.ReportEventsResponse {
	t.Helper()
	resp, err := ts.client().ReportEvents(context.Background(), connect.NewRequest(&pb.ReportEventsRequest{ClusterId: cluster, Events: evs}))
	if err != nil {
		t.Fatalf("ReportEvents: %v", err)
	}
	return resp.Msg
}

func TestEventsReachLearnersOnceInStoredOrder(t *testing.T) {
	var ls learners
	ts := start(t, nil, WithPlannerFactory(ls.factory))
	ctx := context.Background()
	if _, err := ts.client().Plan(ctx, connect.NewRequest(planRequest("c1", 2))); err != nil {
		t.Fatal(err)
	}
	fl := ls.last()
	// Out of order (the finish before the start) and with duplicates, both
	// inside one request and across requests.
	got := report(t, ts, "c1", finished("a", 0, time.Hour), started("a", 0, false), finished("a", 0, time.Hour))
	if got.Accepted != 2 || got.Duplicates != 1 {
		t.Errorf("first batch: accepted %d duplicates %d, want 2 and 1", got.Accepted, got.Duplicates)
	}
	got = report(t, ts, "c1", started("a", 0, false), started("b", time.Minute, true))
	if got.Accepted != 1 || got.Duplicates != 1 {
		t.Errorf("second batch: accepted %d duplicates %d, want 1 and 1", got.Accepted, got.Duplicates)
	}
	key := func(e *pb.JobEvent) string {
		ev := model.Event{JobID: e.JobId, Kind: model.EventKind(e.Kind), Time: e.Time.AsTime()}
		return ev.Key()
	}
	want := []string{key(finished("a", 0, time.Hour)), key(started("a", 0, false)), key(started("b", time.Minute, true))}
	fl.mu.Lock()
	observed := slices.Clone(fl.observed)
	decided := len(fl.decided)
	fl.mu.Unlock()
	if diff := cmp.Diff(want, observed); diff != "" {
		t.Errorf("observed (-want +got):\n%s", diff)
	}
	if decided != 1 {
		t.Errorf("Decided called %d times, want 1", decided)
	}

	// Another cluster's events do not reach this cluster's planners.
	report(t, ts, "c2", started("z", 0, false))
	fl.mu.Lock()
	n := len(fl.observed)
	fl.mu.Unlock()
	if n != 3 {
		t.Errorf("c1's learner saw %d events after c2's report, want 3", n)
	}

	// A restart replays the log into a fresh Learner, in stored order.
	if err := ts.stop(); err != nil {
		t.Fatal(err)
	}
	var ls2 learners
	ts2 := startAt(t, ts.cfg, WithPlannerFactory(ls2.factory))
	if _, err := ts2.client().Plan(ctx, connect.NewRequest(planRequest("c1", 2))); err != nil {
		t.Fatal(err)
	}
	fl2 := ls2.last()
	fl2.mu.Lock()
	defer fl2.mu.Unlock()
	if diff := cmp.Diff(want, fl2.observed); diff != "" {
		t.Errorf("replayed (-want +got):\n%s", diff)
	}
	// The replayed Decided call, then this Plan's.
	if len(fl2.decided) != 2 {
		t.Errorf("Decided called %d times after restart and one Plan, want 2 (replayed + new)", len(fl2.decided))
	}
}

func TestReportEventsRejectsBadEventsWithFieldPaths(t *testing.T) {
	ts := start(t, func(c *Config) { c.MaxEvents = 3 })
	ctx := context.Background()
	bad := []*pb.JobEvent{
		{JobId: "a", Kind: pb.JobEventKind_JOB_EVENT_KIND_STARTED, Time: timestamppb.New(t0)},                                   // no spec
		{JobId: "b", Kind: pb.JobEventKind_JOB_EVENT_KIND_FINISHED, Time: timestamppb.New(t0), Spec: job("b", 1, time.Hour, 0)}, // no exit
		{JobId: "c", Kind: pb.JobEventKind_JOB_EVENT_KIND_PROGRESS, Progress: 1.5},                                              // no time, progress > 1
	}
	_, err := ts.client().ReportEvents(ctx, connect.NewRequest(&pb.ReportEventsRequest{ClusterId: "c1", Events: bad}))
	if connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Fatalf("got %v, want InvalidArgument", err)
	}
	got := fieldViolations(t, err)
	slices.Sort(got)
	want := []string{"events[0].spec", "events[1].exit", "events[2].progress", "events[2].time"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("violations (-want +got):\n%s", diff)
	}
	// Nothing of a rejected request is stored.
	if n, _ := ts.store.EventCount("c1"); n != 0 {
		t.Errorf("stored %d events of a rejected request", n)
	}
	many := []*pb.JobEvent{started("a", 0, false), started("b", 0, false), started("c", 0, false), started("d", 0, false)}
	_, err = ts.client().ReportEvents(ctx, connect.NewRequest(&pb.ReportEventsRequest{ClusterId: "c1", Events: many}))
	if connect.CodeOf(err) != connect.CodeInvalidArgument || !slices.Contains(fieldViolations(t, err), "events") {
		t.Errorf("4 events over a cap of 3: got %v, want InvalidArgument on events", err)
	}
}

// TestRestartGivesTheSameDecision runs the huitian-greedy planner, whose
// estimates come from the runtime history that finished events build, and
// its tuner from events and decisions: the same Plan after a restart must
// give the same decision.
func TestRestartGivesTheSameDecision(t *testing.T) {
	if _, err := solver.New(model.PolicyHuitianGreedy, 0); err != nil {
		t.Skipf("no planner with memory is built yet: %v", err)
	}
	ts := start(t, nil)
	ctx := context.Background()
	greedy := func(now time.Duration) *pb.PlanRequest {
		r := planRequest("c1", 4)
		r.Now = timestamppb.New(t0.Add(now))
		r.Options = &pb.PlanOptions{Policy: pb.Policy_POLICY_HUITIAN_GREEDY, TimeBudget: durationpb.New(5 * time.Second)}
		return r
	}
	// Plan, then teach it: 20 short jobs of the user and class that the
	// queue's jobs have, each far under its limit.
	if _, err := ts.client().Plan(ctx, connect.NewRequest(greedy(-30*time.Minute))); err != nil {
		t.Fatal(err)
	}
	var evs []*pb.JobEvent
	for i := range 20 {
		id := "hist-" + string(rune('a'+i))
		at := -90*time.Minute + time.Duration(i)*time.Minute
		evs = append(evs, started(id, at, i%2 == 0), finished(id, at, at+10*time.Minute))
	}
	report(t, ts, "c1", evs...)
	before, err := ts.client().Plan(ctx, connect.NewRequest(greedy(0)))
	if err != nil {
		t.Fatal(err)
	}
	insight, err := ts.client().GetJobInsight(ctx, connect.NewRequest(&pb.GetJobInsightRequest{ClusterId: "c1", JobId: "short"}))
	if err != nil {
		t.Fatal(err)
	}
	if insight.Msg.GetInsight().GetEstimate().GetHistorySize() == 0 {
		t.Errorf("the estimate rests on no history: %v", insight.Msg.GetInsight().GetEstimate())
	}
	if err := ts.stop(); err != nil {
		t.Fatal(err)
	}
	ts2 := startAt(t, ts.cfg)
	after, err := ts2.client().Plan(ctx, connect.NewRequest(greedy(0)))
	if err != nil {
		t.Fatal(err)
	}
	before.Msg.Stats.SolveTime, after.Msg.Stats.SolveTime = nil, nil
	if diff := cmp.Diff(before.Msg, after.Msg, protocmp.Transform()); diff != "" {
		t.Errorf("decision after restart differs (-before +after):\n%s", diff)
	}
	// And the memory mattered: a service without the history plans
	// differently or explains differently.
	fresh := start(t, nil)
	if _, err := fresh.client().Plan(ctx, connect.NewRequest(greedy(-30*time.Minute))); err != nil {
		t.Fatal(err)
	}
	if _, err := fresh.client().Plan(ctx, connect.NewRequest(greedy(0))); err != nil {
		t.Fatal(err)
	}
	fi, err := fresh.client().GetJobInsight(ctx, connect.NewRequest(&pb.GetJobInsightRequest{ClusterId: "c1", JobId: "short"}))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Msg.GetInsight().GetEstimate().GetHistorySize() != 0 {
		t.Errorf("a service without events has history %d", fi.Msg.GetInsight().GetEstimate().GetHistorySize())
	}
}
