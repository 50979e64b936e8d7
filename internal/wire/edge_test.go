package wire

import (
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/huitian/huitian/model"
	pb "github.com/huitian/huitian/proto/huitian/v1"
)

// TestEdgeNamesEachField: the edge's paths are built only for a problem;
// each nesting level still names its field exactly, and a valid request
// names none.
func TestEdgeNamesEachField(t *testing.T) {
	req := bigRequest()
	if p := Edge(req); len(p) > 0 {
		t.Fatalf("a valid request has problems: %v", p)
	}
	long := strings.Repeat("x", MaxLabelBytes+1)
	req.Cluster.Domains[3].Parent = "bad id"
	req.Cluster.Nodes[12].Domains[0] = "tab\tid"
	req.Cluster.Nodes[130].Cards[5].PciBusId = long
	req.Running[7].Cards[2].Node = "no space"
	req.Running[8].Spec.TimeLimit = &durationpb.Duration{Seconds: 1, Nanos: -1}
	req.Running[9].ProtectedUntil = timestamppb.New(MaxTime)
	req.Queued[1500].JobClass = long
	req.Options = &pb.PlanOptions{OverrunGrace: durationpb.New(MaxDuration + 1)}
	var got []string
	for _, p := range Edge(req) {
		got = append(got, p.Field)
	}
	want := []string{
		"cluster.domains[3].parent",
		"cluster.nodes[12].domains[0]",
		"cluster.nodes[130].cards[5].pci_bus_id",
		"running[7].cards[2].node",
		"running[8].spec.time_limit",
		"running[9].protected_until",
		"queued[1500].job_class",
		"options.overrun_grace",
	}
	if !slices.Equal(got, want) {
		t.Errorf("fields:\n got %q\nwant %q", got, want)
	}
	events := &pb.ReportEventsRequest{ClusterId: "c", Events: []*pb.JobEvent{{}, {JobId: "a b", Spec: &pb.JobSpec{User: long}}}}
	got = got[:0]
	for _, p := range Edge(events) {
		got = append(got, p.Field)
	}
	if want := []string{"events[1].job_id", "events[1].spec.user"}; !slices.Equal(got, want) {
		t.Errorf("events: got %q, want %q", got, want)
	}
}

// TestResponseReplanBy: a decision's ReplanBy reaches the answer, unset
// when the decision asks nothing, and an unencodable one is caught.
func TestResponseReplanBy(t *testing.T) {
	at := time.Date(2026, 12, 2, 10, 30, 0, 0, time.UTC)
	if r := Response(&model.Decision{ReplanBy: at}); !r.GetReplanBy().AsTime().Equal(at) {
		t.Errorf("replan_by %v, want %v", r.GetReplanBy(), at)
	}
	if r := Response(&model.Decision{}); r.ReplanBy != nil {
		t.Errorf("replan_by %v for a decision that asks nothing, want unset", r.ReplanBy)
	}
	far := Response(&model.Decision{ReplanBy: time.Date(10001, 1, 1, 0, 0, 0, 0, time.UTC)})
	if err := CheckResponse(far); err == nil || !strings.Contains(err.Error(), "replan_by") {
		t.Errorf("CheckResponse of a year-10001 replan_by: %v, want an error naming replan_by", err)
	}
}
