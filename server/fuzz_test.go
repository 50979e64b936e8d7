package server

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	pb "github.com/huitian/huitian/proto/huitian/v1"
)

// FuzzPlanAndReportEvents sends arbitrary bodies, as JSON and as binary
// protobuf, to Plan and ReportEvents through the service's real handler
// (on a real store) and requires an answer that is not a server error:
// bad input is the client's fault, never a 5xx, a panic or a crash.
// `make fuzz` runs it.
func FuzzPlanAndReportEvents(f *testing.F) {
	plan := planRequest("fuzz", 2)
	events := &pb.ReportEventsRequest{ClusterId: "fuzz", Events: []*pb.JobEvent{started("j1", 0, true), finished("j1", 0, 0)}}
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
	s, err := New(cfg, WithLogger(discardLogger()))
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
