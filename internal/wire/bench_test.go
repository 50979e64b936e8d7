package wire

import (
	"fmt"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/huitian/huitian/proto/huitian/v1"
)

// bigRequest is a valid request of 1,024 nodes of 8 cards under 32 leaf
// switches, half of them held by 8-card jobs, and 2,000 queued jobs.
func bigRequest() *pb.PlanRequest {
	const nodes = 1024
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	c := &pb.Cluster{Id: "big"}
	for s := range nodes / 32 {
		c.Domains = append(c.Domains, &pb.Domain{Id: fmt.Sprintf("leaf-%02d", s), Kind: pb.DomainKind_DOMAIN_KIND_SWITCH})
	}
	req := &pb.PlanRequest{Now: timestamppb.New(t0), Cluster: c}
	for i := range nodes {
		n := &pb.Node{Name: fmt.Sprintf("n%04d", i), Domains: []string{fmt.Sprintf("leaf-%02d", i/32)}}
		for k := range 8 {
			n.Cards = append(n.Cards, &pb.Card{Index: int32(k), Model: "H100", NumaNode: int32(k / 4), NvlinkIsland: "nvl0"})
		}
		c.Nodes = append(c.Nodes, n)
		if i%2 == 0 {
			r := &pb.RunningJob{Spec: &pb.JobSpec{Id: fmt.Sprintf("run-%04d", i), Cards: 8, TimeLimit: durationpb.New(time.Duration(1+i%7) * time.Hour),
				SubmitTime: timestamppb.New(t0.Add(-3 * time.Hour))}, StartTime: timestamppb.New(t0.Add(-time.Duration(i%60) * time.Minute))}
			for k := range 8 {
				r.Cards = append(r.Cards, &pb.CardRef{Node: n.Name, Index: int32(k)})
			}
			req.Running = append(req.Running, r)
		}
	}
	sizes := []int32{1, 2, 4, 8, 16, 64}
	for j := range 2000 {
		req.Queued = append(req.Queued, &pb.JobSpec{Id: fmt.Sprintf("q-%04d", j), User: fmt.Sprintf("u%d", j%7), Cards: sizes[j%len(sizes)],
			TimeLimit: durationpb.New(time.Duration(10+j%90) * time.Minute), SubmitTime: timestamppb.New(t0.Add(-time.Duration(j) * time.Second))})
	}
	return req
}

// BenchmarkSnapshot is what the service does to every Plan request before
// planning: the contract (protovalidate), the edge's rules, the conversion
// and the model's checks, which seal the cluster.
func BenchmarkSnapshot(b *testing.B) {
	req := bigRequest()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Snapshot(req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEdge is the edge's rules alone on the same request.
func BenchmarkEdge(b *testing.B) {
	req := bigRequest()
	b.ReportAllocs()
	for b.Loop() {
		if p := Edge(req); len(p) > 0 {
			b.Fatal(p)
		}
	}
}
