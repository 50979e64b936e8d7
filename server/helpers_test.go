package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/huitian/huitian/client"
	pb "github.com/huitian/huitian/proto/huitian/v1"
	"github.com/huitian/huitian/proto/huitian/v1/huitianv1connect"
)

var t0 = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

// testServer is a Server serving on a loopback port.
type testServer struct {
	*Server
	URL  string
	stop func() error // drains and closes; returns Serve's error
}

// start serves a new Server on 127.0.0.1:0 until the test ends.
func start(t testing.TB, mutate func(*Config), opts ...Option) *testServer {
	t.Helper()
	cfg := Defaults()
	cfg.DataDir = t.TempDir()
	if mutate != nil {
		mutate(&cfg)
	}
	return startAt(t, cfg, opts...)
}

func startAt(t testing.TB, cfg Config, opts ...Option) *testServer {
	t.Helper()
	opts = append([]Option{WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))}, opts...)
	s, err := New(cfg, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return serveExisting(t, s)
}

// serveExisting serves s on 127.0.0.1:0 until the test ends.
func serveExisting(t testing.TB, s *Server) *testServer {
	t.Helper()
	if s.log == slog.Default() {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln, ServeOptions{}) }()
	stopped := false
	var serveErr error
	ts := &testServer{Server: s, URL: "http://" + ln.Addr().String()}
	ts.stop = func() error {
		if !stopped {
			stopped = true
			cancel()
			serveErr = <-done
		}
		return serveErr
	}
	t.Cleanup(func() {
		if err := ts.stop(); err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ts
}

func (ts *testServer) client(opts ...client.Option) huitianv1connect.PlannerServiceClient {
	return client.New(ts.URL, opts...)
}

// cards makes n cards for a node.
func cards(n int) []*pb.Card {
	out := make([]*pb.Card, n)
	for i := range out {
		out[i] = &pb.Card{Index: int32(i), Model: "H100", NumaNode: -1}
	}
	return out
}

// job is a queued job of n cards with a time limit.
func job(id string, n int, limit time.Duration, submitted time.Duration) *pb.JobSpec {
	return &pb.JobSpec{
		Id: id, User: "alice", JobClass: "training", Cards: int32(n), TimeLimit: durationpb.New(limit),
		SubmitTime: timestamppb.New(t0.Add(-submitted)),
	}
}

// planRequest is a cluster of nodes×8 cards with one running 8-card job
// and a queue in which the head does not fit, so EASY reserves and
// backfills.
func planRequest(cluster string, nodes int) *pb.PlanRequest {
	c := &pb.Cluster{Id: cluster, Domains: []*pb.Domain{{Id: "leaf", Kind: pb.DomainKind_DOMAIN_KIND_SWITCH}}}
	for i := range nodes {
		c.Nodes = append(c.Nodes, &pb.Node{Name: fmt.Sprintf("n%03d", i), Cards: cards(8), Domains: []string{"leaf"}})
	}
	var running []*pb.RunningJob
	for i := range nodes / 2 {
		r := &pb.RunningJob{
			Spec:      job(fmt.Sprintf("run-%03d", i), 8, 2*time.Hour, 3*time.Hour),
			StartTime: timestamppb.New(t0.Add(-time.Hour)),
			Kind:      pb.AllocationKind_ALLOCATION_KIND_REGULAR,
		}
		for k := range 8 {
			r.Cards = append(r.Cards, &pb.CardRef{Node: fmt.Sprintf("n%03d", i), Index: int32(k)})
		}
		running = append(running, r)
	}
	queued := []*pb.JobSpec{
		job("big", nodes*8, 4*time.Hour, 2*time.Hour),
		job("short", 2, 30*time.Minute, time.Hour),
		job("long", 4, 8*time.Hour, 50*time.Minute),
	}
	return &pb.PlanRequest{Now: timestamppb.New(t0), Cluster: c, Running: running, Queued: queued}
}

// fieldViolations returns the BadRequest field paths of an error.
func fieldViolations(t *testing.T, err error) []string {
	t.Helper()
	var cerr *connect.Error
	if !errors.As(err, &cerr) {
		t.Fatalf("error %v is not a *connect.Error", err)
	}
	var out []string
	for _, d := range cerr.Details() {
		v, derr := d.Value()
		if derr != nil {
			t.Fatalf("detail: %v", derr)
		}
		if br, ok := v.(*errdetails.BadRequest); ok {
			for _, fv := range br.GetFieldViolations() {
				out = append(out, fv.GetField())
			}
		}
	}
	return out
}

func timestampAt(d time.Duration) *timestamppb.Timestamp { return timestamppb.New(t0.Add(d)) }

func httpGet(url string) (string, error) {
	resp, err := client.NewHTTPClient(false, nil).Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// lockedBuilder is a strings.Builder safe for a logger's concurrent writes.
type lockedBuilder struct {
	mu sync.Mutex
	b  *strings.Builder
}

func (l *lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// newTestLogger logs everything, debug included, into b. Read b only after
// the server has stopped or between calls.
func newTestLogger(b *strings.Builder) *slog.Logger {
	return slog.New(slog.NewTextHandler(&lockedBuilder{b: b}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func httpPost(url, body string) (string, error) {
	resp, err := client.NewHTTPClient(false, nil).Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
