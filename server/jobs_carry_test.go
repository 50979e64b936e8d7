package server

import (
	"context"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/huitian/huitian/model"
	pb "github.com/huitian/huitian/proto/huitian/v1"
	"github.com/huitian/huitian/solver"
)

// riskyPlanner is EASY that reports a preemption probability of 4% for
// every backfill start: what the huitian planner says of a risky one.
type riskyPlanner struct{ solver.Planner }

func (r riskyPlanner) Plan(ctx context.Context, s *model.Snapshot) (*model.Decision, error) {
	d, err := r.Planner.Plan(ctx, s)
	if err != nil {
		return nil, err
	}
	for i := range d.Starts {
		if d.Starts[i].Kind == model.Backfill {
			d.Starts[i].PreemptProb = 0.04
			d.Starts[i].Fragment = model.FragmentTemporal
		}
	}
	return d, nil
}

// TestRunningBackfillKeepsItsStartsTerms: a backfill job the plan started
// with a 4% preemption probability still shows 4% (and its fragment) in
// the next plan, where it runs and no planner recomputes it; its row names
// the reservation that ends its retention. Before, the next plan showed 0.
func TestRunningBackfillKeepsItsStartsTerms(t *testing.T) {
	ts := start(t, nil, WithPlannerFactory(func(p model.Policy, depth int) (solver.Planner, error) {
		pl, err := solver.New(p, depth)
		return riskyPlanner{pl}, err
	}))
	ctx := context.Background()
	req := planRequest("c1", 4)
	resp, err := ts.client().Plan(ctx, connect.NewRequest(req))
	if err != nil {
		t.Fatal(err)
	}
	var bf *pb.Start
	for _, s := range resp.Msg.GetStarts() {
		if s.GetKind() == pb.AllocationKind_ALLOCATION_KIND_BACKFILL {
			bf = s
		}
	}
	if bf == nil {
		t.Fatalf("fixture: no backfill start in %v", resp.Msg)
	}
	if got := insightOf(t, ts, "c1", bf.GetJobId()); got.GetPreemptionProbability() != 0.04 || got.GetClaimedBy() != "big" {
		t.Errorf("%s as started: %v, want probability 0.04, its cards claimed by big's reservation", bf.GetJobId(), got)
	}

	// The next cycle, ten minutes on: the job runs as backfill.
	now := t0.Add(10 * time.Minute)
	req.Now = timestamppb.New(now)
	var spec *pb.JobSpec
	for i, j := range req.Queued {
		if j.GetId() == bf.GetJobId() {
			spec = j
			req.Queued = append(req.Queued[:i], req.Queued[i+1:]...)
			break
		}
	}
	req.Running = append(req.Running, &pb.RunningJob{Spec: spec, Cards: bf.GetCards(), StartTime: timestamppb.New(t0),
		Kind: pb.AllocationKind_ALLOCATION_KIND_BACKFILL, ProtectedUntil: bf.GetProtectedUntil()})
	resp2, err := ts.client().Plan(ctx, connect.NewRequest(req))
	if err != nil {
		t.Fatal(err)
	}
	var bigStart time.Time
	for _, r := range resp2.Msg.GetReservations() {
		if r.GetJobId() == "big" {
			bigStart = r.GetStartTime().AsTime()
		}
	}
	got := insightOf(t, ts, "c1", bf.GetJobId())
	if got.GetState() != pb.JobState_JOB_STATE_RUNNING || got.GetPreemptionProbability() != 0.04 || got.GetFragment() != pb.FragmentClass_FRAGMENT_CLASS_TEMPORAL ||
		!got.GetStartTime().AsTime().Equal(t0) {
		t.Errorf("%s running: %v, want RUNNING since %s, probability 0.04 and fragment temporal as started", bf.GetJobId(), got, t0)
	}
	if bigStart.IsZero() || got.GetClaimedBy() != "big" || got.GetExpectedRetention().AsDuration() != bigStart.Sub(now) {
		t.Errorf("%s running: claimed by %q, retention %v; want big's reservation (from %s) to end it after %s",
			bf.GetJobId(), got.GetClaimedBy(), got.GetExpectedRetention().AsDuration(), bigStart, bigStart.Sub(now))
	}
	// A regular job keeps no probability.
	if got := insightOf(t, ts, "c1", "run-000"); got.GetPreemptionProbability() != 0 {
		t.Errorf("run-000: probability %v, want 0", got.GetPreemptionProbability())
	}
}
