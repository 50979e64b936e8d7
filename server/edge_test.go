package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/huitian/huitian/proto/huitian/v1"
)

// postJSON sends a Connect unary call with a JSON body and returns the
// HTTP status and the decoded Connect error (code, message, detail fields).
func postJSON(t *testing.T, url, procedure string, body []byte) (int, connectJSONError) {
	t.Helper()
	return postAs(t, url, procedure, "application/json", body)
}

func postAs(t *testing.T, url, procedure, contentType string, body []byte) (int, connectJSONError) {
	t.Helper()
	resp, err := http.Post(url+"/huitian.v1.PlannerService/"+procedure, contentType, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var e connectJSONError
	if resp.StatusCode != http.StatusOK {
		if err := json.Unmarshal(raw, &e); err != nil {
			t.Fatalf("%s: status %d, body %q is not a Connect error", procedure, resp.StatusCode, raw)
		}
	}
	return resp.StatusCode, e
}

type connectJSONError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// TestTimesAndIDsCheckedAtTheEdge: every timestamp, duration and id is
// range-checked at the edge and answered InvalidArgument naming its field.
// Before the fix, "now":"9999-12-31T23:59:59Z" over JSON answered HTTP 500
// (the plan could not be encoded, neither logged nor counted), a `now` in
// year 36812 over binary was accepted, negative nanos and mixed-sign
// durations were accepted, and a 32 KiB job id in ReportEvents answered
// Unavailable (the store's key limit), which clients retry forever.
func TestTimesAndIDsCheckedAtTheEdge(t *testing.T) {
	ts := start(t, nil)
	ctx := context.Background()

	t.Run("json now at the end of year 9999", func(t *testing.T) {
		raw, err := protojson.Marshal(planRequest("c1", 2))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		m["now"] = "9999-12-31T23:59:59Z"
		body, _ := json.Marshal(m)
		status, e := postJSON(t, ts.URL, "Plan", body)
		if status != http.StatusBadRequest || e.Code != "invalid_argument" || !strings.Contains(e.Message, "now:") {
			t.Errorf("got HTTP %d %+v, want 400 invalid_argument naming now", status, e)
		}
	})

	type planCase struct {
		name  string
		edit  func(r *pb.PlanRequest)
		field string
	}
	for _, c := range []planCase{
		{"binary now in year 36812", func(r *pb.PlanRequest) { r.Now = &timestamppb.Timestamp{Seconds: 1099511627776} }, "now"},
		{"now before 1970", func(r *pb.PlanRequest) { r.Now = timestamppb.New(time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC)) }, "now"},
		{"negative nanos", func(r *pb.PlanRequest) { r.Queued[0].SubmitTime.Nanos = -5 }, "queued[0].submit_time"},
		{"nanos of 2e9", func(r *pb.PlanRequest) { r.Running[0].StartTime.Nanos = 2e9 }, "running[0].start_time"},
		{"mixed-sign duration", func(r *pb.PlanRequest) { r.Queued[1].TimeLimit = &durationpb.Duration{Seconds: 3600, Nanos: -5} }, "queued[1].time_limit"},
		{"a thousand-year limit", func(r *pb.PlanRequest) { r.Queued[1].TimeLimit = &durationpb.Duration{Seconds: 1000 * 365 * 24 * 3600} }, "queued[1].time_limit"},
		{"mixed-sign budget", func(r *pb.PlanRequest) {
			r.Options = &pb.PlanOptions{TimeBudget: &durationpb.Duration{Seconds: 1, Nanos: -1}}
		}, "options.time_budget"},
		{"a NUL in the cluster id", func(r *pb.PlanRequest) { r.Cluster.Id = "a\x00b" }, "cluster.id"},
		{"a 1 KiB job id", func(r *pb.PlanRequest) { r.Queued[2].Id = strings.Repeat("j", 1024) }, "queued[2].id"},
		{"a space in a node name", func(r *pb.PlanRequest) { r.Cluster.Nodes[1].Name = "node 1" }, "cluster.nodes[1].name"},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := planRequest("c1", 2)
			c.edit(req)
			_, err := ts.client().Plan(ctx, connect.NewRequest(req))
			if connect.CodeOf(err) != connect.CodeInvalidArgument || !slices.Contains(fieldViolations(t, err), c.field) {
				t.Errorf("got %v, want InvalidArgument naming %s", err, c.field)
			}
		})
	}

	t.Run("32 KiB job id in ReportEvents", func(t *testing.T) {
		ev := started(strings.Repeat("x", 32<<10), 0, false)
		ev.Spec.Id = ev.JobId
		_, err := ts.client().ReportEvents(ctx, connect.NewRequest(&pb.ReportEventsRequest{ClusterId: "c1", Events: []*pb.JobEvent{ev}}))
		if connect.CodeOf(err) != connect.CodeInvalidArgument || !slices.Contains(fieldViolations(t, err), "events[0].job_id") {
			t.Errorf("got %v, want InvalidArgument naming events[0].job_id", err)
		}
	})

	t.Run("binary event time in year 36812 is not stored", func(t *testing.T) {
		ev := started("j1", 0, false)
		ev.Time = &timestamppb.Timestamp{Seconds: 1099511627776}
		_, err := ts.client().ReportEvents(ctx, connect.NewRequest(&pb.ReportEventsRequest{ClusterId: "c2", Events: []*pb.JobEvent{ev}}))
		if connect.CodeOf(err) != connect.CodeInvalidArgument || !slices.Contains(fieldViolations(t, err), "events[0].time") {
			t.Errorf("got %v, want InvalidArgument naming events[0].time", err)
		}
		if _, err := ts.client().GetStatus(ctx, connect.NewRequest(&pb.GetStatusRequest{ClusterId: "c2"})); connect.CodeOf(err) != connect.CodeNotFound {
			t.Errorf("GetStatus after a refused event: %v, want NotFound", err)
		}
	})

	t.Run("insight ids", func(t *testing.T) {
		_, err := ts.client().GetJobInsight(ctx, connect.NewRequest(&pb.GetJobInsightRequest{ClusterId: "c1", JobId: "a\tb"}))
		if connect.CodeOf(err) != connect.CodeInvalidArgument || !slices.Contains(fieldViolations(t, err), "job_id") {
			t.Errorf("got %v, want InvalidArgument naming job_id", err)
		}
	})
}

// TestUnknownJSONNamesAreInvalid: a JSON request with an enum value or a
// field the contract does not have is InvalidArgument naming the field and
// the value. Before the fix, "topology":"TOPOLOGY_SAMENODE" was dropped
// (the 4-card job was placed across two nodes) and "policy":"POLICY_HUITAIN"
// planned with the default policy, both answering 200.
func TestUnknownJSONNamesAreInvalid(t *testing.T) {
	ts := start(t, nil)
	base, err := protojson.Marshal(planRequest("c1", 2))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, want string
		edit       func(m map[string]any)
	}{
		{"enum value typo", "TOPOLOGY_SAMENODE", func(m map[string]any) {
			m["queued"].([]any)[1].(map[string]any)["topology"] = "TOPOLOGY_SAMENODE"
		}},
		{"policy typo", "POLICY_HUITAIN", func(m map[string]any) { m["options"] = map[string]any{"policy": "POLICY_HUITAIN"} }},
		{"field name typo", "toplogy", func(m map[string]any) {
			m["queued"].([]any)[1].(map[string]any)["toplogy"] = "TOPOLOGY_SAME_NODE"
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var m map[string]any
			if err := json.Unmarshal(base, &m); err != nil {
				t.Fatal(err)
			}
			c.edit(m)
			body, _ := json.Marshal(m)
			for _, ct := range []string{"application/json", "application/json; charset=utf-8"} {
				status, e := postAs(t, ts.URL, "Plan", ct, body)
				if status != http.StatusBadRequest || e.Code != "invalid_argument" || !strings.Contains(e.Message, c.want) {
					t.Errorf("%s: got HTTP %d %+v, want 400 invalid_argument naming %q", ct, status, e, c.want)
				}
			}
		})
	}
	// Binary clients keep forward compatibility: an unknown field is kept
	// aside, not an error.
	req := planRequest("c1", 2)
	raw, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	raw = append(raw, 0xf8, 0xff, 0x03, 0x01) // field 65535, varint 1
	hr, err := http.Post(ts.URL+"/huitian.v1.PlannerService/Plan", "application/proto", bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	hr.Body.Close()
	if hr.StatusCode != http.StatusOK {
		t.Errorf("binary request with an unknown field: HTTP %d, want 200", hr.StatusCode)
	}
}
