// Package service_test holds the planning service's benchmarks: Plan RPCs
// per second on an 8,192-card snapshot, and the server's memory after one
// million events. Run with `make bench-service`.
package service_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime"
	"runtime/debug"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/huitian/huitian/client"
	"github.com/huitian/huitian/internal/wire/wiretest"
	pb "github.com/huitian/huitian/proto/huitian/v1"
	"github.com/huitian/huitian/server"
)

var t0 = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

func serve(b *testing.B) (string, *server.Server) {
	b.Helper()
	return serveIn(b, b.TempDir())
}

// serveIn serves with its store in dir until the benchmark ends.
func serveIn(b *testing.B, dir string) (string, *server.Server) {
	b.Helper()
	cfg := server.Defaults()
	cfg.DataDir = dir
	s, err := server.New(cfg, server.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln, server.ServeOptions{}) }()
	b.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	})
	return "http://" + ln.Addr().String(), s
}

// bigRequest is a 1,024-node × 8-card (8,192 cards) cluster, half of it
// busy with 8-card jobs, and a queue of 256 jobs of 1 to 64 cards.
func bigRequest() *pb.PlanRequest { return wiretest.BigRequest(t0, 1024, 256) }

// BenchmarkPlanRPC reports Plan RPCs per second (plans/s) for an 8,192-card
// snapshot under EASY, over Connect's binary protocol on h2c, from 4
// concurrent clients. It checks a real decision before timing.
func BenchmarkPlanRPC(b *testing.B) {
	url, _ := serve(b)
	req := bigRequest()
	req.Options = &pb.PlanOptions{Policy: pb.Policy_POLICY_EASY}
	c := client.New(url)
	ctx := context.Background()
	resp, err := c.Plan(ctx, connect.NewRequest(req))
	if err != nil {
		b.Fatal(err)
	}
	if len(resp.Msg.GetStarts()) == 0 {
		b.Fatal("the benchmark snapshot starts nothing")
	}
	const workers = 4
	const perWorker = 8
	b.ResetTimer()
	start := time.Now()
	var calls int
	for b.Loop() {
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for range perWorker {
					if _, err := c.Plan(ctx, connect.NewRequest(req)); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		calls += workers * perWorker
	}
	b.ReportMetric(float64(calls)/time.Since(start).Seconds(), "plans/s")
}

// BenchmarkMemoryAfterEvents stores one million events (10,000 per
// request, 4 clusters) and reports the server's live heap and the store's
// size; the process's heap includes the benchmark's own requests, so the
// figure is an upper bound.
func BenchmarkMemoryAfterEvents(b *testing.B) {
	const total, perReq = 1_000_000, 10_000
	for b.Loop() {
		url, _ := serve(b)
		c := client.New(url)
		ctx := context.Background()
		start := time.Now()
		for sent := 0; sent < total; sent += perReq {
			evs := make([]*pb.JobEvent, perReq)
			for i := range evs {
				n := sent + i
				id := fmt.Sprintf("job-%07d", n/2)
				e := &pb.JobEvent{JobId: id, Kind: pb.JobEventKind_JOB_EVENT_KIND_STARTED, Time: timestamppb.New(t0.Add(time.Duration(n) * time.Second))}
				if n%2 == 1 {
					e.Kind, e.Exit, e.StartTime = pb.JobEventKind_JOB_EVENT_KIND_FINISHED, pb.ExitState_EXIT_STATE_COMPLETED, timestamppb.New(t0)
				}
				e.Spec = &pb.JobSpec{Id: id, User: "u", JobClass: "training", Cards: 1, TimeLimit: durationpb.New(time.Hour), SubmitTime: timestamppb.New(t0)}
				evs[i] = e
			}
			resp, err := c.ReportEvents(ctx, connect.NewRequest(&pb.ReportEventsRequest{ClusterId: fmt.Sprintf("c%d", sent/perReq%4), Events: evs}))
			if err != nil {
				b.Fatal(err)
			}
			if resp.Msg.Accepted != perReq {
				b.Fatalf("accepted %d of %d", resp.Msg.Accepted, perReq)
			}
		}
		elapsed := time.Since(start)
		runtime.GC()
		debug.FreeOSMemory()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
		b.ReportMetric(float64(ms.Sys)/(1<<20), "sys-MiB")
		b.ReportMetric(float64(total)/elapsed.Seconds(), "events/s")
	}
}
