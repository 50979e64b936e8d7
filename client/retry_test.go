package client_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/huitian/huitian/client"
	pb "github.com/huitian/huitian/proto/huitian/v1"
	"github.com/huitian/huitian/rm/rmtest"
)

var t0 = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

func startedEvent(id string) *pb.JobEvent {
	return &pb.JobEvent{JobId: id, Kind: pb.JobEventKind_JOB_EVENT_KIND_STARTED, Time: timestamppb.New(t0),
		Spec:       &pb.JobSpec{Id: id, Cards: 1, TimeLimit: durationpb.New(time.Hour), SubmitTime: timestamppb.New(t0)},
		Allocation: pb.AllocationKind_ALLOCATION_KIND_REGULAR}
}

// counter counts the calls a client makes.
type counter struct{ n atomic.Int32 }

func (c *counter) interceptor() connect.UnaryInterceptorFunc {
	return func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			c.n.Add(1)
			return next(ctx, req)
		}
	}
}

func TestReportEventsRetriesUntilTheServiceAnswers(t *testing.T) {
	// The service comes up only after the client has failed a few times.
	addr := rmtest.FreeAddr(t)
	dataDir := t.TempDir()
	up, ready := make(chan struct{}), make(chan error)
	go func() {
		<-up
		_, err := rmtest.StartAt(t, addr, dataDir)
		ready <- err
	}()
	synctest.Test(t, func(t *testing.T) {
		var calls counter
		c := rmtest.NewClient("http://"+addr, client.WithClientOptions(connect.WithInterceptors(calls.interceptor())))
		type result struct {
			resp *pb.ReportEventsResponse
			err  error
		}
		res := make(chan result, 1)
		go func() {
			resp, err := client.ReportEvents(t.Context(), c, &pb.ReportEventsRequest{ClusterId: "c1",
				Events: []*pb.JobEvent{startedEvent("a"), startedEvent("b")}}, client.DefaultBackoff)
			res <- result{resp, err}
		}()
		time.Sleep(10 * time.Second)
		synctest.Wait()
		failed := calls.n.Load()
		if failed < 3 {
			t.Fatalf("%d calls in 10 s of backoff against a closed port, want at least 3", failed)
		}
		close(up)
		if err := <-ready; err != nil {
			t.Fatalf("start the service: %v", err)
		}
		r := <-res
		if r.err != nil {
			t.Fatalf("ReportEvents: %v", r.err)
		}
		if r.resp.GetAccepted() != 2 {
			t.Errorf("accepted %d events, want 2", r.resp.GetAccepted())
		}
		if calls.n.Load() <= failed {
			t.Errorf("%d calls in all, %d before the service was up", calls.n.Load(), failed)
		}
	})
}

func TestReportEventsDoesNotRetryARefusedRequest(t *testing.T) {
	srv := rmtest.Start(t)
	synctest.Test(t, func(t *testing.T) {
		var calls counter
		c := srv.Client(client.WithClientOptions(connect.WithInterceptors(calls.interceptor())))
		bad := startedEvent("a")
		bad.JobId = ""
		_, err := client.ReportEvents(t.Context(), c, &pb.ReportEventsRequest{ClusterId: "c1", Events: []*pb.JobEvent{bad}}, client.DefaultBackoff)
		if connect.CodeOf(err) != connect.CodeInvalidArgument {
			t.Fatalf("ReportEvents of an event without job_id: %v, want InvalidArgument", err)
		}
		if n := calls.n.Load(); n != 1 {
			t.Errorf("%d calls, want 1: a refused request is not retried", n)
		}
	})
}

func TestReportEventsStopsWhenTheContextEnds(t *testing.T) {
	addr := rmtest.FreeAddr(t)
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		_, err := client.ReportEvents(ctx, rmtest.NewClient("http://"+addr), &pb.ReportEventsRequest{ClusterId: "c1",
			Events: []*pb.JobEvent{startedEvent("a")}}, client.DefaultBackoff)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("ReportEvents against a closed port with a 1-minute deadline: %v, want DeadlineExceeded", err)
		}
		if connect.CodeOf(errors.Unwrap(err)) == connect.CodeUnknown && !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("the error does not carry the last RPC error: %v", err)
		}
	})
}

func TestReportEventsGivesUpAfterItsAttempts(t *testing.T) {
	addr := rmtest.FreeAddr(t)
	synctest.Test(t, func(t *testing.T) {
		var calls counter
		c := rmtest.NewClient("http://"+addr, client.WithClientOptions(connect.WithInterceptors(calls.interceptor())))
		_, err := client.ReportEvents(t.Context(), c, &pb.ReportEventsRequest{ClusterId: "c1",
			Events: []*pb.JobEvent{startedEvent("a")}}, client.Backoff{Attempts: 3})
		if !errors.Is(err, client.ErrGaveUp) {
			t.Fatalf("ReportEvents with 3 attempts against a closed port: %v, want ErrGaveUp", err)
		}
		if connect.CodeOf(err) != connect.CodeUnavailable {
			t.Errorf("code %v, want the last try's Unavailable", connect.CodeOf(err))
		}
		if n := calls.n.Load(); n != 3 {
			t.Errorf("%d calls, want 3", n)
		}
	})
}
