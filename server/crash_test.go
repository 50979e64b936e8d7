package server

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/huitian/huitian/client"
	"github.com/huitian/huitian/model"
	pb "github.com/huitian/huitian/proto/huitian/v1"
	"github.com/huitian/huitian/solver"
)

// TestKill9LosesNoAcknowledgedEvent streams events into a real `huitian
// serve`, kills it with SIGKILL at a random point (usually with a request
// in flight), restarts it on the same data, and checks that every
// acknowledged event is stored: sent again, each is a duplicate.
func TestKill9LosesNoAcknowledgedEvent(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 7))
	killAfter := 3 + rng.IntN(25) // acknowledged batches before the kill
	t.Logf("seed %d: kill -9 after %d acknowledged batches", seed, killAfter)

	data := t.TempDir()
	srv := serveChild(t, "--data", data)
	c := client.New(srv.URL)
	const batch, maxBatches = 40, 400
	acks := make(chan []*pb.JobEvent, maxBatches)
	go func() {
		defer close(acks)
		for b := range maxBatches {
			evs := make([]*pb.JobEvent, batch)
			for i := range evs {
				id := fmt.Sprintf("job-%04d-%02d", b, i)
				evs[i] = &pb.JobEvent{JobId: id, Kind: pb.JobEventKind_JOB_EVENT_KIND_STARTED,
					Time: timestamppb.New(t0.Add(time.Duration(b) * time.Second)), Spec: job(id, 1, time.Hour, 0)}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, err := c.ReportEvents(ctx, connect.NewRequest(&pb.ReportEventsRequest{ClusterId: "crash", Events: evs}))
			cancel()
			if err != nil {
				return // the server is gone
			}
			acks <- evs
		}
	}()
	var acked []*pb.JobEvent
	for evs := range acks {
		acked = append(acked, evs...)
		if len(acked) == killAfter*batch {
			if err := srv.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
		}
	}
	err := <-srv.done
	var ee *exec.ExitError
	if ok := asExit(err, &ee); !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the server was not killed by SIGKILL: %v (acknowledged %d events)", err, len(acked))
	}
	t.Logf("acknowledged %d events before the kill", len(acked))

	again := serveChild(t, "--data", data)
	c2 := client.New(again.URL)
	ctx := context.Background()
	for i := 0; i < len(acked); i += 500 {
		part := acked[i:min(i+500, len(acked))]
		resp, err := c2.ReportEvents(ctx, connect.NewRequest(&pb.ReportEventsRequest{ClusterId: "crash", Events: part}))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Msg.Accepted != 0 {
			t.Errorf("events %d..%d: %d of %d acknowledged events were lost", i, i+len(part), resp.Msg.Accepted, len(part))
		}
	}
	st, err := c2.GetStatus(ctx, connect.NewRequest(&pb.GetStatusRequest{ClusterId: "crash"}))
	if err != nil {
		t.Fatal(err)
	}
	if st.Msg.Events < int64(len(acked)) {
		t.Errorf("stored %d events, acknowledged %d", st.Msg.Events, len(acked))
	}
}

func asExit(err error, target **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	if ok {
		*target = e
	}
	return ok
}

// TestSIGTERMExitsZero stops a real `huitian serve` with SIGTERM.
func TestSIGTERMExitsZero(t *testing.T) {
	srv := serveChild(t, "--data", t.TempDir(), "--log-format", "json")
	if _, err := client.New(srv.URL).Plan(context.Background(), connect.NewRequest(planRequest("term", 2))); err != nil {
		t.Fatal(err)
	}
	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-srv.done:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, srv.log())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("still running 30s after SIGTERM\n%s", srv.log())
	}
	if !strings.Contains(srv.log(), `"msg":"stopped; store flushed"`) {
		t.Errorf("no JSON log line saying the store was flushed:\n%s", srv.log())
	}
}

// blocking is a planner that waits, in Plan, until released.
type blocking struct {
	solver.Planner
	entered chan struct{}
	release chan struct{}
}

func (b *blocking) Plan(ctx context.Context, s *model.Snapshot) (*model.Decision, error) {
	b.entered <- struct{}{}
	<-b.release
	return b.Planner.Plan(ctx, s)
}

// TestStopDrainsInFlightCalls stops the server while a Plan is in flight:
// the call completes, then Serve returns nil with the store closed.
func TestStopDrainsInFlightCalls(t *testing.T) {
	b := &blocking{entered: make(chan struct{}), release: make(chan struct{})}
	draining := make(chan struct{})
	ts := start(t, nil, WithPlannerFactory(func(p model.Policy, depth int) (solver.Planner, error) {
		pl, err := solver.New(p, depth)
		b.Planner = pl
		return b, err
	}), func(s *Server) { s.onDrain = func() { close(draining) } })
	type result struct {
		resp *connect.Response[pb.PlanResponse]
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := ts.client().Plan(context.Background(), connect.NewRequest(planRequest("drain", 2)))
		done <- result{resp, err}
	}()
	<-b.entered
	stopped := make(chan error, 1)
	go func() { stopped <- ts.stop() }()
	// The drain has begun (health says NOT_SERVING) while the call runs.
	<-draining
	if st, err := ts.health.Check(context.Background(), &grpchealth.CheckRequest{Service: "huitian.v1.PlannerService"}); err != nil || st.Status != grpchealth.StatusNotServing {
		t.Errorf("health during the drain: %v %v, want NOT_SERVING", st, err)
	}
	close(b.release)
	r := <-done
	if r.err != nil {
		t.Fatalf("in-flight Plan during the drain: %v", r.err)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if !ts.closed.Load() {
		t.Error("the store is not closed after the drain")
	}
}
