package demo

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"connectrpc.com/connect"

	pb "github.com/huitian/huitian/proto/huitian/v1"
	"github.com/huitian/huitian/proto/huitian/v1/huitianv1connect"
)

// recorder answers Plan by starting the first queued job on card 0 of the
// first node, and records what it is told.
type recorder struct {
	huitianv1connect.PlannerServiceClient
	mu     sync.Mutex
	plans  []time.Time
	events []*pb.JobEvent
}

func (r *recorder) Plan(_ context.Context, req *connect.Request[pb.PlanRequest]) (*connect.Response[pb.PlanResponse], error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.plans = append(r.plans, req.Msg.GetNow().AsTime())
	resp := &pb.PlanResponse{}
	if q := req.Msg.GetQueued(); len(q) > 0 && len(req.Msg.GetRunning()) == 0 {
		resp.Starts = []*pb.Start{{JobId: q[0].GetId(), Cards: []*pb.CardRef{{Node: "n0"}}, Kind: pb.AllocationKind_ALLOCATION_KIND_REGULAR}}
	}
	return connect.NewResponse(resp), nil
}

func (r *recorder) ReportEvents(_ context.Context, req *connect.Request[pb.ReportEventsRequest]) (*connect.Response[pb.ReportEventsResponse], error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, req.Msg.GetEvents()...)
	return connect.NewResponse(&pb.ReportEventsResponse{Accepted: int32(len(req.Msg.GetEvents()))}), nil
}

func TestRunTicksOnSimulatedTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		start := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
		cluster := &pb.Cluster{Id: "demo", Nodes: []*pb.Node{{Name: "n0", Cards: []*pb.Card{{Index: 0}}}}}
		rm := New(rec, cluster, start, Options{Tick: time.Second, Step: 5 * time.Minute})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- rm.Run(ctx) }()
		time.Sleep(40*time.Second + time.Millisecond) // fake time inside the bubble
		synctest.Wait()
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run: %v", err)
		}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		if len(rec.plans) != 41 {
			t.Fatalf("%d plans in 40 ticks, want 41 (one at start, one per tick)", len(rec.plans))
		}
		for i, at := range rec.plans {
			if want := start.Add(time.Duration(i) * 5 * time.Minute); !at.Equal(want) {
				t.Errorf("plan %d at %s, want %s", i, at, want)
			}
		}
		kinds := map[pb.JobEventKind]int{}
		for _, e := range rec.events {
			kinds[e.GetKind()]++
		}
		if kinds[pb.JobEventKind_JOB_EVENT_KIND_STARTED] == 0 || kinds[pb.JobEventKind_JOB_EVENT_KIND_FINISHED] == 0 ||
			kinds[pb.JobEventKind_JOB_EVENT_KIND_PROGRESS] == 0 {
			t.Errorf("events by kind %v: want started, finished and progress", kinds)
		}
	})
}
