package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"buf.build/go/protovalidate"
	"connectrpc.com/connect"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/huitian/huitian/client"
	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/model/modeltest"
	pb "github.com/huitian/huitian/proto/huitian/v1"
	"github.com/huitian/huitian/solver"
)

func TestPlanOverEveryProtocol(t *testing.T) {
	ts := start(t, nil)
	ctx := context.Background()
	var first *pb.PlanResponse
	for _, p := range []struct {
		name string
		p    client.Protocol
	}{{"connect", client.Connect}, {"grpc", client.GRPC}, {"grpc-web", client.GRPCWeb}} {
		t.Run(p.name, func(t *testing.T) {
			resp, err := ts.client(client.WithProtocol(p.p)).Plan(ctx, connect.NewRequest(planRequest("c1", 4)))
			if err != nil {
				t.Fatalf("Plan: %v", err)
			}
			if got := resp.Msg.GetStats().GetSolver(); got != "easy" {
				t.Errorf("solver = %q, want easy (the server's default policy)", got)
			}
			if len(resp.Msg.GetStarts()) == 0 || len(resp.Msg.GetReservations()) == 0 {
				t.Errorf("want a backfill start and a reservation, got %v", resp.Msg)
			}
			if id := resp.Header().Get(RequestIDHeader); id == "" {
				t.Errorf("no %s header", RequestIDHeader)
			}
			resp.Msg.Stats.SolveTime = nil
			if first == nil {
				first = resp.Msg
			} else if diff := cmp.Diff(first, resp.Msg, protocmp.Transform()); diff != "" {
				t.Errorf("decision differs between protocols (-first +got):\n%s", diff)
			}
		})
	}
}

func TestPlanDefaultPolicyFlag(t *testing.T) {
	ts := start(t, func(c *Config) { c.DefaultPolicy = model.PolicyConservative })
	resp, err := ts.client().Plan(context.Background(), connect.NewRequest(planRequest("c1", 2)))
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Msg.GetStats().GetSolver(); got != "conservative" {
		t.Errorf("solver = %q, want conservative", got)
	}
}

func TestPlanUnbuiltPolicyIsUnimplementedNotSubstituted(t *testing.T) {
	ts := start(t, nil)
	req := planRequest("c1", 2)
	req.Options = &pb.PlanOptions{Policy: pb.Policy_POLICY_HUITIAN}
	_, want := solver.New(model.PolicyHuitian, 0)
	if want == nil {
		t.Skip("POLICY_HUITIAN is built now; nothing is unimplemented")
	}
	_, err := ts.client().Plan(context.Background(), connect.NewRequest(req))
	if connect.CodeOf(err) != connect.CodeUnimplemented {
		t.Fatalf("got %v, want Unimplemented", err)
	}
	if !strings.Contains(err.Error(), want.Error()) {
		t.Errorf("error %q does not carry the solver's message %q", err, want)
	}
}

func TestPlanInvalidNamesEveryField(t *testing.T) {
	ts := start(t, nil)
	tests := []struct {
		name   string
		mutate func(r *pb.PlanRequest)
		want   []string
	}{
		{"contract rules", func(r *pb.PlanRequest) {
			r.Queued[0].Cards = 0
			r.Queued[1].MaxPreemptionProbability = 2
		}, []string{"queued[0].cards", "queued[1].max_preemption_probability"}},
		{"model cross-field rules", func(r *pb.PlanRequest) {
			r.Running[0].Cards[1] = r.Running[0].Cards[0]
			r.Queued[2].Id = r.Queued[1].Id
		}, nil},
		{"no cluster id", func(r *pb.PlanRequest) { r.Cluster.Id = "" }, []string{"cluster.id"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := planRequest("c1", 4)
			tt.mutate(r)
			_, err := ts.client(client.WithProtocol(client.GRPC)).Plan(context.Background(), connect.NewRequest(r))
			if connect.CodeOf(err) != connect.CodeInvalidArgument {
				t.Fatalf("got %v, want InvalidArgument", err)
			}
			got := fieldViolations(t, err)
			if len(got) == 0 {
				t.Fatalf("no field violations in %v", err)
			}
			for _, w := range tt.want {
				if !slices.Contains(got, w) {
					t.Errorf("violations %v lack %q", got, w)
				}
			}
			for _, f := range got {
				if !strings.Contains(err.Error(), f) {
					t.Errorf("message %q does not name %q", err, f)
				}
			}
		})
	}
}

func TestPlanLimits(t *testing.T) {
	ts := start(t, func(c *Config) {
		c.MaxCards = 16
		c.MaxJobs = 3
		c.MaxTimeBudget = 2 * time.Second
		c.MaxRequestBytes = 64 << 10
	})
	ctx := context.Background()
	tests := []struct {
		name  string
		req   *pb.PlanRequest
		code  connect.Code
		field string
	}{
		{"too many cards", planRequest("c1", 3), connect.CodeInvalidArgument, "cluster.nodes"},
		{"too many jobs", planRequest("c1", 2), connect.CodeInvalidArgument, "queued"},
		{"time budget above the cap", func() *pb.PlanRequest {
			r := planRequest("c1", 1)
			r.Options = &pb.PlanOptions{TimeBudget: durationpb.New(time.Minute)}
			return r
		}(), connect.CodeInvalidArgument, "options.time_budget"},
		{"request above the size cap", func() *pb.PlanRequest {
			r := planRequest("c1", 1)
			r.Queued[0].User = strings.Repeat("x", 70<<10)
			return r
		}(), connect.CodeResourceExhausted, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ts.client().Plan(ctx, connect.NewRequest(tt.req))
			if connect.CodeOf(err) != tt.code {
				t.Fatalf("got %v, want %s", err, tt.code)
			}
			if tt.field != "" && !slices.Contains(fieldViolations(t, err), tt.field) {
				t.Errorf("violations %v lack %q", fieldViolations(t, err), tt.field)
			}
		})
	}
	if _, err := ts.client().Plan(ctx, connect.NewRequest(planRequest("c1", 1))); err != nil {
		t.Errorf("a request within the limits: %v", err)
	}
}

// panicky panics on a job named "boom".
type panicky struct{ solver.Planner }

func (p panicky) Plan(ctx context.Context, s *model.Snapshot) (*model.Decision, error) {
	for _, j := range s.Queued {
		if j.ID == "boom" {
			panic("injected panic")
		}
	}
	return p.Planner.Plan(ctx, s)
}

func TestPanickingCycleAnswersInternalAndLivesOn(t *testing.T) {
	ts := start(t, nil, WithPlannerFactory(func(p model.Policy, depth int) (solver.Planner, error) {
		pl, err := solver.New(p, depth)
		return panicky{pl}, err
	}))
	ctx := context.Background()
	bad := planRequest("c1", 2)
	bad.Queued = append(bad.Queued, job("boom", 1, time.Hour, time.Minute))
	req := connect.NewRequest(bad)
	req.Header().Set(RequestIDHeader, "req-42")
	_, err := ts.client().Plan(ctx, req)
	if connect.CodeOf(err) != connect.CodeInternal {
		t.Fatalf("got %v, want Internal", err)
	}
	if !strings.Contains(err.Error(), "req-42") {
		t.Errorf("error %q does not name the request id", err)
	}
	var cerr *connect.Error
	if errors.As(err, &cerr) && cerr.Meta().Get(RequestIDHeader) != "req-42" {
		t.Errorf("error metadata %s = %q, want req-42", RequestIDHeader, cerr.Meta().Get(RequestIDHeader))
	}
	if _, err := ts.client().Plan(ctx, connect.NewRequest(planRequest("c1", 2))); err != nil {
		t.Fatalf("the next Plan after a panic: %v", err)
	}
}

// TestPlanFlatClusterReservesACount: on a flat cluster (one card a node,
// one model, no switch) a baseline policy plans on counts: the head's
// reservation names how many cards, not which, and the answer keeps the
// contract.
func TestPlanFlatClusterReservesACount(t *testing.T) {
	ts := start(t, nil)
	c := &pb.Cluster{Id: "flat"}
	for i := range 16 {
		c.Nodes = append(c.Nodes, &pb.Node{Name: fmt.Sprintf("p%03d", i), Cards: cards(1)})
	}
	var running []*pb.RunningJob
	for i := range 12 {
		running = append(running, &pb.RunningJob{
			Spec:      job(fmt.Sprintf("run-%02d", i), 1, 2*time.Hour, 3*time.Hour),
			Cards:     []*pb.CardRef{{Node: fmt.Sprintf("p%03d", i)}},
			StartTime: timestamppb.New(t0.Add(-time.Duration(i) * time.Minute)),
			Kind:      pb.AllocationKind_ALLOCATION_KIND_REGULAR,
		})
	}
	req := &pb.PlanRequest{Now: timestamppb.New(t0), Cluster: c, Running: running,
		Queued: []*pb.JobSpec{job("big", 10, 4*time.Hour, 2*time.Hour), job("short", 2, 30*time.Minute, time.Hour)}}
	resp, err := ts.client().Plan(context.Background(), connect.NewRequest(req))
	if err != nil {
		t.Fatal(err)
	}
	if err := protovalidate.Validate(resp.Msg); err != nil {
		t.Fatalf("the plan breaks the contract: %v", err)
	}
	rs := resp.Msg.GetReservations()
	if len(rs) != 1 || rs[0].GetJobId() != "big" || rs[0].GetCount() != 10 || len(rs[0].GetCards()) != 0 {
		t.Fatalf("reservations %v, want big's of a count of 10 and no cards", rs)
	}
	if st := resp.Msg.GetStarts(); len(st) != 1 || st[0].GetJobId() != "short" || len(st[0].GetCards()) != 2 {
		t.Fatalf("starts %v, want short on 2 cards", st)
	}
}

// TestCountedReservationClaimsItsCards: a reservation that names its
// count alone, with the numbers of the cards it waits for (huitian on a
// flat cluster), still tells a running backfill job on one of them who
// claims its cards and when; one on another card keeps them unbounded.
func TestCountedReservationClaimsItsCards(t *testing.T) {
	c := modeltest.Uniform(4, 1, 0)
	if err := c.Seal(); err != nil {
		t.Fatal(err)
	}
	now := modeltest.Epoch.Add(time.Hour)
	on := modeltest.Running(modeltest.Job("on").Limit(2*time.Hour).Build(), now, modeltest.Ref("n001", 0))
	off := modeltest.Running(modeltest.Job("off").Limit(2*time.Hour).Build(), now, modeltest.Ref("n003", 0))
	on.Kind, off.Kind = model.Backfill, model.Backfill
	big := modeltest.Job("big").Cards(3).Limit(time.Hour).Build()
	snap := &model.Snapshot{Now: now, Cluster: c, Running: []model.Running{on, off}, Queued: []model.Job{big}}
	d := &model.Decision{Reservations: []model.Reservation{{JobID: "big", Count: 3, CardNumbers: []int{0, 1, 2}, Start: now.Add(30 * time.Minute), Confidence: 1}}}
	lp := buildLastPlan(snap, d, nil, nil, nil)
	if got := lp.jobs["on"]; got.GetClaimedBy() != "big" || got.GetExpectedRetention().AsDuration() != 30*time.Minute {
		t.Errorf("on: claimed by %q after %v, want big after 30m", got.GetClaimedBy(), got.GetExpectedRetention().AsDuration())
	}
	if got := lp.jobs["off"]; got.GetClaimedBy() != "" || !got.GetRetentionUnbounded() {
		t.Errorf("off: claimed by %q (unbounded %v), want no claim", got.GetClaimedBy(), got.GetRetentionUnbounded())
	}
	if got := lp.jobs["big"]; len(got.GetCards()) != 0 {
		t.Errorf("big's insight names cards %v, want its count alone", got.GetCards())
	}
}
