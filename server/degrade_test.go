package server

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/huitian/huitian/model"
	pb "github.com/huitian/huitian/proto/huitian/v1"
	"github.com/huitian/huitian/solver"
)

// fullDisk is the real store, refusing writes as a full disk does while
// full is set.
type fullDisk struct {
	store
	full atomic.Bool
}

func (f *fullDisk) Append(cluster string, evs []storedEvent) ([]bool, error) {
	if f.full.Load() {
		return nil, fmt.Errorf("store: append events for %q: write huitian.db: %w", cluster, syscall.ENOSPC)
	}
	return f.store.Append(cluster, evs)
}

func (f *fullDisk) PutPlan(cluster string, rec, decided []byte) error {
	if f.full.Load() {
		return fmt.Errorf("store: put plan for %q: write huitian.db: %w", cluster, syscall.ENOSPC)
	}
	return f.store.PutPlan(cluster, rec, decided)
}

func withStore(wrap func(store) store) Option { return func(s *Server) { s.wrapStore = wrap } }

// metricValue returns the value of one series of /metrics ("" if absent).
func metricValue(t *testing.T, ts *testServer, series string) string {
	t.Helper()
	body, err := httpGet(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(body) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), series+" "); ok {
			return v
		}
	}
	return ""
}

// TestFullDiskKeepsPlanning: with the disk full, ReportEvents refuses
// (Unavailable: nothing acknowledged that is not stored) while Plan still
// answers, marked degraded; both failures are logged, counted and shown
// as huitian_store_degraded. A Learner is not told a plan the log does
// not hold, so a replay rebuilds exactly it. Before the fix, Plan answered
// Internal (HTTP 500) when the plan record could not be stored.
func TestFullDiskKeepsPlanning(t *testing.T) {
	var disk *fullDisk
	var ls learners
	var logs strings.Builder
	ts := start(t, nil, WithLogger(newTestLogger(&logs)), WithPlannerFactory(ls.factory),
		withStore(func(s store) store { disk = &fullDisk{store: s}; return disk }))
	ctx := context.Background()
	if _, err := ts.client().Plan(ctx, connect.NewRequest(planRequest("c1", 2))); err != nil {
		t.Fatal(err)
	}
	disk.full.Store(true)
	_, err := ts.client().ReportEvents(ctx, connect.NewRequest(&pb.ReportEventsRequest{ClusterId: "c1", Events: []*pb.JobEvent{started("short", 0, true)}}))
	if connect.CodeOf(err) != connect.CodeUnavailable {
		t.Errorf("ReportEvents on a full disk: %v, want Unavailable", err)
	}
	req := planRequest("c1", 2)
	req.Now = timestampAt(time.Minute)
	resp, err := ts.client().Plan(ctx, connect.NewRequest(req))
	if err != nil {
		t.Fatalf("Plan on a full disk: %v, want a plan", err)
	}
	if resp.Header().Get(DegradedHeader) == "" {
		t.Errorf("Plan on a full disk: no %s header", DegradedHeader)
	}
	if got := ls.last().decidedCount(); got != 1 {
		t.Errorf("the Learner was told %d decisions, want 1 (the recorded one)", got)
	}
	for series, want := range map[string]string{
		`huitian_store_write_errors_total{op="put_plan"}`:      "1",
		`huitian_store_write_errors_total{op="append_events"}`: "1",
		`huitian_store_degraded`:                               "1",
	} {
		if got := metricValue(t, ts, series); got != want {
			t.Errorf("%s = %q, want %s", series, got, want)
		}
	}
	if !strings.Contains(logs.String(), "level=ERROR msg=\"plan answered but not recorded") {
		t.Errorf("no ERROR log for the unrecorded plan:\n%.2000s", logs.String())
	}
	disk.full.Store(false)
	req.Now = timestampAt(2 * time.Minute)
	if resp, err := ts.client().Plan(ctx, connect.NewRequest(req)); err != nil || resp.Header().Get(DegradedHeader) != "" {
		t.Errorf("Plan after the disk has room: %v, degraded %q", err, resp.Header().Get(DegradedHeader))
	}
	if got := metricValue(t, ts, "huitian_store_degraded"); got != "0" {
		t.Errorf("huitian_store_degraded after a good write = %q, want 0", got)
	}
}

func (f *fakeLearner) decidedCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.decided)
}

// farFuture is a Learner whose every decision reserves the head job in
// the year 10000, which no answer can carry.
type farFuture struct{ *fakeLearner }

func (f farFuture) Plan(ctx context.Context, s *model.Snapshot) (*model.Decision, error) {
	d, err := f.fakeLearner.Plan(ctx, s)
	if err != nil {
		return nil, err
	}
	d.Reservations = append(d.Reservations, model.Reservation{JobID: s.Queued[0].ID,
		Cards: []model.CardRef{{Node: s.Cluster.Nodes[0].Name}}, Start: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), Confidence: 1})
	return d, nil
}

// TestFailedPlanChangesNothing: a Plan that fails after the planner ran
// (its answer cannot be encoded) tells the Learner nothing and stores
// nothing; the error is Internal, logged and counted. Before the fix,
// learner.Decided ran before the answer was built, so a failed Plan still
// changed the learner (and the 500 came from the encoder: neither logged
// nor counted).
func TestFailedPlanChangesNothing(t *testing.T) {
	var ls learners
	var logs strings.Builder
	ts := start(t, nil, WithLogger(newTestLogger(&logs)), WithPlannerFactory(func(p model.Policy, depth int) (solver.Planner, error) {
		pl, err := ls.factory(p, depth)
		if err != nil {
			return nil, err
		}
		return farFuture{pl.(*fakeLearner)}, nil
	}))
	_, err := ts.client().Plan(context.Background(), connect.NewRequest(planRequest("c1", 2)))
	if connect.CodeOf(err) != connect.CodeInternal {
		t.Fatalf("Plan with an unencodable decision: %v, want Internal", err)
	}
	if got := ls.last().decidedCount(); got != 0 {
		t.Errorf("the Learner was told %d decisions of a failed Plan, want 0", got)
	}
	if _, err := ts.client().GetStatus(context.Background(), connect.NewRequest(&pb.GetStatusRequest{ClusterId: "c1"})); connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("GetStatus after a failed first Plan: %v, want NotFound (nothing recorded)", err)
	}
	if got := metricValue(t, ts, `huitian_rpc_errors_total{code="internal",procedure="/huitian.v1.PlannerService/Plan"}`); got != "1" {
		t.Errorf("internal errors counted: %q, want 1", got)
	}
	if !strings.Contains(logs.String(), "level=ERROR msg=\"rpc failed\"") {
		t.Errorf("no ERROR log for the failed Plan:\n%.2000s", logs.String())
	}
}
