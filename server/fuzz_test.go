package server

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/huitian/huitian/proto/huitian/v1"
)

// FuzzPlanAndReportEvents sends arbitrary bodies, as JSON and as binary
// protobuf, to Plan and ReportEvents through the service's real handler
// (on a real store) and requires an answer that is not a server error:
// bad input is the client's fault, never a 5xx, a panic or a crash.
// `make fuzz` runs it.
//
// It used to stall after a few executions: `go test -fuzz` minimizes
// every input that finds new coverage before it fuzzes on, trying O(n²)
// deletions of an n-byte input for up to -fuzzminimizetime (60 s by
// default) and reporting no progress meanwhile; with a durable commit
// (1 ms batch delay plus fsync, 3-4 ms) for every input the service
// accepted, minimizing the 644-byte seed took the whole minute. So the
// store here neither fsyncs nor waits to batch (durability is the crash
// tests' business, not this target's; an accepted input now costs about
// 0.1-0.4 ms), the seeds are small (124 and 558 bytes), and `make fuzz`
// bounds minimization (FUZZMINIMIZETIME, 5 s); by hand, pass
// -fuzzminimizetime=5s too.
func FuzzPlanAndReportEvents(f *testing.F) {
	plan := fuzzPlanRequest()
	events := &pb.ReportEventsRequest{ClusterId: "f", Events: []*pb.JobEvent{
		{JobId: "j", Kind: pb.JobEventKind_JOB_EVENT_KIND_STARTED, Time: timestamppb.New(t0), Allocation: pb.AllocationKind_ALLOCATION_KIND_BACKFILL},
		{JobId: "j", Kind: pb.JobEventKind_JOB_EVENT_KIND_FINISHED, Time: timestamppb.New(t0.Add(time.Hour)), StartTime: timestamppb.New(t0), Exit: pb.ExitState_EXIT_STATE_COMPLETED},
	}}
	for _, m := range []proto.Message{plan, events} {
		b, _ := proto.Marshal(m)
		j, _ := protojson.Marshal(m)
		isPlan := m == proto.Message(plan)
		f.Add(b, false, isPlan)
		f.Add(j, true, isPlan)
	}
	f.Add([]byte(`{"now":"9999-12-31T23:59:59Z"}`), true, true)
	f.Add([]byte(`{"clusterId":"a\u0000b","events":[{"jobId":"x","kind":"JOB_EVENT_KIND_STARTED"}]}`), true, false)

	cfg := Defaults()
	cfg.DataDir = f.TempDir()
	s, err := New(cfg, WithLogger(discardLogger()), withStore(fastStore))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	h := s.Handler()
	f.Fuzz(func(t *testing.T, body []byte, asJSON, toPlan bool) {
		path, ct := "/huitian.v1.PlannerService/ReportEvents", "application/proto"
		if toPlan {
			path = "/huitian.v1.PlannerService/Plan"
		}
		if asJSON {
			ct = "application/json"
		}
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		req.Header.Set("Content-Type", ct)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %s: HTTP %d: %s", ct, path, rec.Code, rec.Body.String())
		}
	})
}

// fastStore makes the bbolt store commit without fsync and without
// waiting MaxBatchDelay for other writers: the same code paths, none of
// the durability cost.
func fastStore(st store) store {
	b := st.(*boltStore)
	b.db.NoSync = true
	b.db.MaxBatchSize = 1
	return b
}

// fuzzPlanRequest is the smallest snapshot that makes EASY reserve and
// backfill: one 4-card node under a switch, 2 cards running, a 4-card head that has to
// wait and a 1-card job that fits before it.
func fuzzPlanRequest() *pb.PlanRequest {
	return &pb.PlanRequest{
		Now: timestamppb.New(t0),
		Cluster: &pb.Cluster{
			Id:      "f",
			Nodes:   []*pb.Node{{Name: "n", Cards: []*pb.Card{{Index: 0}, {Index: 1}, {Index: 2}, {Index: 3}}, Domains: []string{"s"}}},
			Domains: []*pb.Domain{{Id: "s", Kind: pb.DomainKind_DOMAIN_KIND_SWITCH}},
		},
		Running: []*pb.RunningJob{{
			Spec:      &pb.JobSpec{Id: "r", Cards: 2, TimeLimit: durationpb.New(time.Hour), SubmitTime: timestamppb.New(t0.Add(-time.Hour))},
			Cards:     []*pb.CardRef{{Node: "n", Index: 0}, {Node: "n", Index: 1}},
			StartTime: timestamppb.New(t0.Add(-time.Minute)),
		}},
		Queued: []*pb.JobSpec{
			{Id: "b", Cards: 4, TimeLimit: durationpb.New(time.Hour), SubmitTime: timestamppb.New(t0.Add(-time.Hour))},
			{Id: "s", Cards: 1, TimeLimit: durationpb.New(10 * time.Minute), SubmitTime: timestamppb.New(t0)},
		},
	}
}
