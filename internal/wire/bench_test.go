package wire

import (
	"testing"
	"time"

	"github.com/huitian/huitian/internal/wire/wiretest"
	pb "github.com/huitian/huitian/proto/huitian/v1"
)

// bigRequest is a valid request of 1,024 nodes of 8 cards under 32 leaf
// switches, half of them held by 8-card jobs, and 2,000 queued jobs.
func bigRequest() *pb.PlanRequest {
	return wiretest.BigRequest(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC), 1024, 2000)
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
