package demo

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"connectrpc.com/connect"

	pb "github.com/huitian/huitian/proto/huitian/v1"
	"github.com/huitian/huitian/proto/huitian/v1/huitianv1connect"
	"github.com/huitian/huitian/rm/rmtest"
)

// recorder is the service as the demo reaches it, keeping every plan
// asked and answered and every event reported.
type recorder struct {
	huitianv1connect.PlannerServiceClient
	mu     sync.Mutex
	plans  []plan
	events []*pb.JobEvent
}

type plan struct {
	req  *pb.PlanRequest
	resp *pb.PlanResponse
}

func (r *recorder) Plan(ctx context.Context, req *connect.Request[pb.PlanRequest]) (*connect.Response[pb.PlanResponse], error) {
	resp, err := r.PlannerServiceClient.Plan(ctx, req)
	if err == nil {
		r.mu.Lock()
		r.plans = append(r.plans, plan{req.Msg, resp.Msg})
		r.mu.Unlock()
	}
	return resp, err
}

func (r *recorder) ReportEvents(ctx context.Context, req *connect.Request[pb.ReportEventsRequest]) (*connect.Response[pb.ReportEventsResponse], error) {
	resp, err := r.PlannerServiceClient.ReportEvents(ctx, req)
	if err == nil {
		r.mu.Lock()
		r.events = append(r.events, req.Msg.GetEvents()...)
		r.mu.Unlock()
	}
	return resp, err
}

// TestFirstMinuteShowsWhatMatters runs the demo as `huitian serve --demo`
// does (its cluster, its workload, policy huitian, a cycle a second) for
// the first minute, in fake time against a real service, and checks, from
// the plans and the events reported, that the minute shows what backfill
// under huitian is about:
//   - a backfill job suspended with a notice, holding its cards until the
//     notice runs out;
//   - a backfill job that cannot checkpoint requeued, back in the queue with
//     its requeue count (the service's priority compensation);
//   - a reserved big job starting at its reservation, no later than first
//     promised;
//   - backfill starts on all three idle classes: intra-node leftovers,
//     cross-node fragments and temporal fragments.
//
// It fails when a change to the workload or the planner stops producing
// any of them; each is told in words on Out as it happens.
func TestFirstMinuteShowsWhatMatters(t *testing.T) {
	srv := rmtest.Start(t)
	rec := &recorder{PlannerServiceClient: srv.Client()}
	var out bytes.Buffer
	synctest.Test(t, func(t *testing.T) {
		d := New(rec, Cluster(), Start, Options{Tick: time.Second, Policy: pb.Policy_POLICY_HUITIAN,
			Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Out: &out})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- d.Run(ctx) }()
		time.Sleep(time.Minute + time.Millisecond) // fake time inside the bubble
		synctest.Wait()
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run: %v", err)
		}
	})
	if len(rec.plans) != 61 {
		t.Fatalf("%d plans in the first minute, want 61 (one at start, one per tick)", len(rec.plans))
	}
	for _, p := range rec.plans {
		if got := p.resp.GetStats().GetSolver(); got != "huitian" {
			t.Fatalf("plan at %s by %q, want huitian", p.req.GetNow().AsTime().Format("15:04"), got)
		}
	}
	evs := eventsOf(rec.events)

	t.Run("a SUSPEND with its notice", func(t *testing.T) {
		for _, p := range rec.plans {
			for _, pr := range p.resp.GetPreemptions() {
				if pr.GetAction() != pb.PreemptionAction_PREEMPTION_ACTION_SUSPEND || pr.GetNotice().AsDuration() <= 0 {
					continue
				}
				deadline := p.req.GetNow().AsTime().Add(pr.GetNotice().AsDuration())
				if e := evs.of(pr.GetJobId(), pb.JobEventKind_JOB_EVENT_KIND_PREEMPTED); e != nil &&
					e.GetAction() == pb.PreemptionAction_PREEMPTION_ACTION_SUSPEND && e.GetTime().AsTime().Equal(deadline) {
					return
				}
			}
		}
		t.Error("no backfill job was suspended with a notice and yielded when it ran out")
	})

	t.Run("a REQUEUE with compensation", func(t *testing.T) {
		for _, e := range rec.events {
			if e.GetKind() != pb.JobEventKind_JOB_EVENT_KIND_PREEMPTED || e.GetAction() != pb.PreemptionAction_PREEMPTION_ACTION_REQUEUE {
				continue
			}
			if e.GetSpec().GetRequeueCount() < 1 {
				t.Errorf("%s requeued with requeue count %d, want ≥ 1", e.GetJobId(), e.GetSpec().GetRequeueCount())
			}
			for _, p := range rec.plans {
				if !p.req.GetNow().AsTime().After(e.GetTime().AsTime()) {
					continue
				}
				i := slices.IndexFunc(p.req.GetQueued(), func(j *pb.JobSpec) bool { return j.GetId() == e.GetJobId() })
				if i >= 0 && p.req.GetQueued()[i].GetRequeueCount() >= 1 {
					return
				}
			}
			t.Errorf("%s requeued but never planned again with its requeue count", e.GetJobId())
			return
		}
		t.Error("no backfill job was requeued")
	})

	t.Run("a reserved big job starting on time", func(t *testing.T) {
		type seen struct{ first, last time.Time }
		resv := map[string]seen{}
		for _, p := range rec.plans {
			now := p.req.GetNow().AsTime()
			for _, st := range p.resp.GetStarts() {
				r, ok := resv[st.GetJobId()]
				if ok && len(st.GetCards()) >= 8 && evs.of(st.GetJobId(), pb.JobEventKind_JOB_EVENT_KIND_STARTED) != nil &&
					now.Equal(r.last) && !now.After(r.first) {
					return
				}
			}
			for _, r := range p.resp.GetReservations() {
				s, ok := resv[r.GetJobId()]
				if !ok {
					s.first = r.GetStartTime().AsTime()
				}
				s.last = r.GetStartTime().AsTime()
				resv[r.GetJobId()] = s
			}
		}
		t.Error("no job of 8 cards or more started at its reservation")
	})

	t.Run("all three idle classes used", func(t *testing.T) {
		used := map[pb.FragmentClass]string{}
		for _, p := range rec.plans {
			for _, st := range p.resp.GetStarts() {
				if st.GetKind() == pb.AllocationKind_ALLOCATION_KIND_BACKFILL && evs.of(st.GetJobId(), pb.JobEventKind_JOB_EVENT_KIND_STARTED) != nil {
					used[st.GetFragment()] = st.GetJobId()
				}
			}
		}
		for _, c := range []pb.FragmentClass{pb.FragmentClass_FRAGMENT_CLASS_INTRA_NODE, pb.FragmentClass_FRAGMENT_CLASS_CROSS_NODE,
			pb.FragmentClass_FRAGMENT_CLASS_TEMPORAL} {
			if used[c] == "" {
				t.Errorf("no backfill start on %s", c)
			}
		}
	})

	t.Run("told in words", func(t *testing.T) {
		for _, want := range []string{" SUSPEND backfill job ", " min notice to checkpoint", " REQUEUE backfill job ", "priority +1",
			" START reserved job ", "— on time", "on intra-node leftovers", "on cross-node fragments", "on a temporal fragment"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("the demo's lines say nothing of %q:\n%s", want, out.String())
			}
		}
	})
	if t.Failed() {
		t.Logf("the first minute, as told:\n%s", out.String())
	}
}

// events indexes reported events by job and kind (the first of each).
type events map[string]map[pb.JobEventKind]*pb.JobEvent

func eventsOf(all []*pb.JobEvent) events {
	ix := events{}
	for _, e := range all {
		if ix[e.GetJobId()] == nil {
			ix[e.GetJobId()] = map[pb.JobEventKind]*pb.JobEvent{}
		}
		if ix[e.GetJobId()][e.GetKind()] == nil {
			ix[e.GetJobId()][e.GetKind()] = e
		}
	}
	return ix
}

func (ix events) of(id string, k pb.JobEventKind) *pb.JobEvent { return ix[id][k] }
