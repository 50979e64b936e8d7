package wire

import (
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

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
