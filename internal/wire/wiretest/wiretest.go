// Package wiretest builds valid Plan requests of a given size for tests
// and benchmarks of the service's request path.
package wiretest

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/huitian/huitian/proto/huitian/v1"
)

// BigRequest is a valid request at now: nodes nodes of 8 H100 cards under
// leaf switches of 32 nodes, every other node held by an 8-card running
// job, and queued jobs of 1 to 64 cards.
func BigRequest(now time.Time, nodes, queued int) *pb.PlanRequest {
	c := &pb.Cluster{Id: "big"}
	for s := range (nodes + 31) / 32 {
		c.Domains = append(c.Domains, &pb.Domain{Id: fmt.Sprintf("leaf-%02d", s), Kind: pb.DomainKind_DOMAIN_KIND_SWITCH})
	}
	req := &pb.PlanRequest{Now: timestamppb.New(now), Cluster: c}
	for i := range nodes {
		n := &pb.Node{Name: fmt.Sprintf("n%04d", i), Domains: []string{fmt.Sprintf("leaf-%02d", i/32)}}
		for k := range 8 {
			n.Cards = append(n.Cards, &pb.Card{Index: int32(k), Model: "H100", NumaNode: int32(k / 4), NvlinkIsland: "nvl0"})
		}
		c.Nodes = append(c.Nodes, n)
		if i%2 == 0 {
			r := &pb.RunningJob{Spec: &pb.JobSpec{Id: fmt.Sprintf("run-%04d", i), Cards: 8, TimeLimit: durationpb.New(time.Duration(1+i%7) * time.Hour),
				SubmitTime: timestamppb.New(now.Add(-3 * time.Hour))}, StartTime: timestamppb.New(now.Add(-time.Duration(i%60) * time.Minute))}
			for k := range 8 {
				r.Cards = append(r.Cards, &pb.CardRef{Node: n.Name, Index: int32(k)})
			}
			req.Running = append(req.Running, r)
		}
	}
	sizes := []int32{1, 2, 4, 8, 16, 64}
	for j := range queued {
		req.Queued = append(req.Queued, &pb.JobSpec{Id: fmt.Sprintf("q-%04d", j), User: fmt.Sprintf("u%d", j%7), Cards: sizes[j%len(sizes)],
			TimeLimit: durationpb.New(time.Duration(10+j%90) * time.Minute), SubmitTime: timestamppb.New(now.Add(-time.Duration(j) * time.Second))})
	}
	return req
}
