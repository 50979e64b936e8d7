package trace

import (
	"fmt"
	"math"

	"github.com/huitian/huitian/model"
)

// limitBuckets are the round requests users make, in seconds: 1, 2, 5, 10, 15, 20, 30,
// 45 minutes; 1, 1.5, 2, 3, 4, 5, 6, 8, 10, 12, 16, 18, 24, 36, 48, 72, 96, 120 hours
// and 7 days. Tsafrir, Etsion and Feitelson ("Modeling user runtime estimates",
// JSSPP 2005) found that some 20 such values cover about 90% of requests. Above the
// last bucket a request is a whole number of days.
var limitBuckets = [...]int64{
	60, 120, 300, 600, 900, 1200, 1800, 2700,
	3600, 5400, 7200, 10800, 14400, 18000, 21600, 28800, 36000, 43200,
	57600, 64800, 86400, 129600, 172800, 259200, 345600, 432000, 604800,
}

// LimitBuckets returns the round requests (seconds) that EstimateBucket rounds up to.
func LimitBuckets() []int64 { return limitBuckets[:] }

// bucketUp is the smallest bucket ≥ s, or s rounded up to whole days past the last.
func bucketUp(s int64) int64 {
	for _, b := range limitBuckets {
		if b >= s {
			return b
		}
	}
	const day = 86400
	return (s + day - 1) / day * day
}

// LimitFor is the Limit that opts give a job with this runtime and no user estimate:
// the smallest bucket ≥ LimitFactor × runtime (EstimateBucket, the default), the runtime
// itself (EstimateExact), or 0 (EstimateNone).
func LimitFor(runtime int64, opts Options) int64 {
	switch opts.Estimate {
	case EstimateExact:
		return runtime
	case EstimateNone:
		return 0
	}
	f := opts.LimitFactor
	if f <= 0 {
		f = DefaultLimitFactor
	}
	return bucketUp(int64(math.Ceil(float64(runtime) * f)))
}

// estimateNote says, for Notes, how n limits were set.
func estimateNote(n int, what string, opts Options) string {
	switch opts.Estimate {
	case EstimateExact:
		return fmt.Sprintf("%d jobs have no %s: Limit = Runtime (perfect estimates)", n, what)
	case EstimateNone:
		return fmt.Sprintf("%d jobs have no %s: Limit left 0", n, what)
	}
	f := opts.LimitFactor
	if f <= 0 {
		f = DefaultLimitFactor
	}
	return fmt.Sprintf("%d jobs have no %s: Limit = Runtime × %g rounded up to a round request (1, 2, 5, 10 … min, 1, 1.5, 2 … h, whole days)", n, what, f)
}

// shape infers a job's placement from its cards and, where the trace says, its nodes
// (nodes ≤ 0: unknown). One card needs nothing. A multi-card job on one node, or of at
// most perNode cards with no node count, must share a node (the gang placement GPU
// schedulers prefer; Jeon et al., ATC'19, on Philly). A multi-node job gets its cards
// spread evenly where the count divides; the trace says nothing of switches, so its
// topology stays any. Multi-card jobs in these traces are training gangs: comm high.
func shape(cards, nodes, perNode int) (cardsPerNode int, topo model.Topology, comm model.Comm) {
	switch {
	case cards <= 1:
		return 0, model.TopologyAny, model.CommNone
	case nodes == 1 || (nodes <= 0 && cards <= perNode):
		return cards, model.TopologySameNode, model.CommHigh
	case nodes > 1:
		if cards%nodes == 0 {
			return cards / nodes, model.TopologyAny, model.CommHigh
		}
		return 0, model.TopologyAny, model.CommHigh
	default: // node count unknown, more cards than a node has
		if cards%perNode == 0 {
			return perNode, model.TopologyAny, model.CommHigh
		}
		return 0, model.TopologyAny, model.CommHigh
	}
}
