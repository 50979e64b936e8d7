package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/huitian/huitian/model"
	pb "github.com/huitian/huitian/proto/huitian/v1"
	"github.com/huitian/huitian/solver"
)

// tinyRisk is EASY with every backfill start's preemption probability a
// sum's rounding error.
type tinyRisk struct{ solver.Planner }

func (p tinyRisk) Plan(ctx context.Context, s *model.Snapshot) (*model.Decision, error) {
	d, err := p.Planner.Plan(ctx, s)
	if err != nil {
		return nil, err
	}
	for i := range d.Starts {
		d.Starts[i].PreemptProb = 3.55e-17
	}
	return d, nil
}

// TestWhatUsersReadIsComplete: a running backfill job says how long it
// keeps its cards (until the claiming reservation, or explicitly
// unbounded); a protection that has ended is not shown; probabilities are
// rounded; JSON answers carry card 0's index and a zero probability.
// Before the fix, running backfill jobs never had expected_retention,
// protected_until in the past was shown, a probability read 3.55e-17, and
// JSON left out `"index": 0` and `"preemptionProbability": 0`.
func TestWhatUsersReadIsComplete(t *testing.T) {
	ts := start(t, nil, WithPlannerFactory(func(p model.Policy, depth int) (solver.Planner, error) {
		pl, err := solver.New(p, depth)
		return tinyRisk{pl}, err
	}))
	ctx := context.Background()
	req := planRequest("c1", 4)
	// Two running backfill jobs on node n003 (free in planRequest): one
	// on cards the head job "big" (all 32 cards) will claim, one with an
	// ended protection; the claim covers every card, so both are bounded.
	// A third, on a cluster whose head fits nowhere, stays unbounded.
	bf := func(id string, card int32, protectedUntil time.Duration) *pb.RunningJob {
		return &pb.RunningJob{Spec: job(id, 1, 8*time.Hour, 2*time.Hour), StartTime: timestampAt(-time.Hour),
			Kind: pb.AllocationKind_ALLOCATION_KIND_BACKFILL, Cards: []*pb.CardRef{{Node: "n003", Index: card}},
			ProtectedUntil: timestampAt(protectedUntil)}
	}
	req.Running = append(req.Running, bf("bf-claimed", 0, 10*time.Minute), bf("bf-unprotected", 1, -10*time.Minute))
	resp, err := ts.client().Plan(ctx, connect.NewRequest(req))
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range resp.Msg.GetStarts() {
		if p := st.GetPreemptionProbability(); p != 0 {
			t.Errorf("start %s: preemption probability %v, want it rounded to 0", st.GetJobId(), p)
		}
	}
	claimed := insightOf(t, ts, "c1", "bf-claimed")
	if claimed.GetExpectedRetention() == nil || claimed.GetRetentionUnbounded() {
		t.Errorf("bf-claimed: retention %v, unbounded %v; want until big's reservation", claimed.GetExpectedRetention(), claimed.GetRetentionUnbounded())
	}
	if claimed.GetProtectedUntil() == nil {
		t.Errorf("bf-claimed: protection until %v in the future is missing", timestampAt(10*time.Minute).AsTime())
	}
	if un := insightOf(t, ts, "c1", "bf-unprotected"); un.GetProtectedUntil() != nil {
		t.Errorf("bf-unprotected: protected_until %v, before the plan's now; want absent", un.GetProtectedUntil().AsTime())
	}

	// No reservation: the head job fits nowhere it could ever reserve.
	req2 := planRequest("c2", 2)
	req2.Queued = []*pb.JobSpec{job("short", 1, 10*time.Minute, time.Hour)}
	req2.Running = append(req2.Running, &pb.RunningJob{Spec: job("bf-free", 1, 8*time.Hour, 2*time.Hour), StartTime: timestampAt(-time.Hour),
		Kind: pb.AllocationKind_ALLOCATION_KIND_BACKFILL, Cards: []*pb.CardRef{{Node: "n001", Index: 0}}})
	if _, err := ts.client().Plan(ctx, connect.NewRequest(req2)); err != nil {
		t.Fatal(err)
	}
	if free := insightOf(t, ts, "c2", "bf-free"); !free.GetRetentionUnbounded() || free.GetExpectedRetention() != nil {
		t.Errorf("bf-free: unbounded %v, retention %v; want explicitly unbounded", free.GetRetentionUnbounded(), free.GetExpectedRetention())
	}

	raw, err := httpPost(ts.URL+"/huitian.v1.PlannerService/GetJobInsight", `{"clusterId":"c1","jobId":"bf-claimed"}`)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"index":0`, `"preemptionProbability":0`, `"retentionUnbounded":false`} {
		if !strings.Contains(strings.ReplaceAll(raw, " ", ""), want) {
			t.Errorf("JSON insight lacks %s: %s", want, raw)
		}
	}
}
