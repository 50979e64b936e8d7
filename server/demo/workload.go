package demo

import (
	"fmt"
	"time"

	pb "github.com/huitian/huitian/proto/huitian/v1"
)

// template is one kind of job in the workload.
type template struct {
	class    string
	user     string
	cards    int32
	perNode  int32
	topology pb.Topology
	comm     pb.Comm
	limit    time.Duration
	runtime  time.Duration // what it really runs
	ckpt     bool
	backfill pb.BackfillPreference
}

// arrival is a job of the workload and when it arrives, from the demo's
// start.
type arrival struct {
	at time.Duration
	template
}

const (
	any_     = pb.Topology_TOPOLOGY_ANY
	sameNode = pb.Topology_TOPOLOGY_SAME_NODE
	sameSw   = pb.Topology_TOPOLOGY_SAME_SWITCH
	commNone = pb.Comm_COMM_NONE
	commLow  = pb.Comm_COMM_LOW
	commHigh = pb.Comm_COMM_HIGH
	allow    = pb.BackfillPreference_BACKFILL_PREFERENCE_ALLOW
	optOut   = pb.BackfillPreference_BACKFILL_PREFERENCE_OPT_OUT
	min_     = time.Minute
	hour     = time.Hour
)

// opening is the workload's first hours.
var opening = []arrival{
	// 10:00: long training jobs, fine-tunes that run to their limit, and
	// bob's short evaluations, whose history teaches the planner that bob's
	// jobs end in a fraction of their limit.
	{0, template{"training", "alice", 4, 0, sameNode, commHigh, 6 * hour, 6 * hour, true, optOut}},
	{0, template{"training", "frank", 4, 0, sameNode, commHigh, 90 * min_, 90 * min_, false, optOut}},
	{0, template{"training", "frank", 4, 0, sameNode, commHigh, 90 * min_, 90 * min_, false, optOut}},
	{0, template{"training", "grace", 3, 0, sameNode, commHigh, 6 * hour, 6 * hour, true, optOut}},
	{0, template{"training", "grace", 3, 0, sameNode, commHigh, 6 * hour, 6 * hour, true, optOut}},
	{0, template{"training", "frank", 3, 0, sameNode, commHigh, 90 * min_, 90 * min_, false, optOut}},
	{0, template{"training", "frank", 3, 0, sameNode, commHigh, 90 * min_, 90 * min_, false, optOut}},
	{0, template{"evaluation", "bob", 1, 0, any_, commNone, hour, 3 * min_, false, allow}},
	{0, template{"evaluation", "bob", 1, 0, any_, commNone, hour, 3 * min_, false, allow}},
	{0, template{"evaluation", "bob", 1, 0, any_, commNone, hour, 3 * min_, false, allow}},
	{0, template{"evaluation", "bob", 1, 0, any_, commNone, hour, 4 * min_, false, allow}},
	{0, template{"evaluation", "bob", 1, 0, any_, commNone, hour, 4 * min_, false, allow}},
	{0, template{"evaluation", "bob", 1, 0, any_, commNone, hour, 4 * min_, false, allow}},
	{0, template{"evaluation", "bob", 1, 0, any_, commNone, hour, 5 * min_, false, allow}},
	{0, template{"evaluation", "bob", 1, 0, any_, commNone, hour, 5 * min_, false, allow}},
	// 10:05: the big job, 4 cards on each node.
	{5 * min_, template{"training", "erin", 16, 4, sameSw, commHigh, 4 * hour, 3 * hour, true, optOut}},
	{5 * min_, template{"preprocessing", "carol", 1, 0, any_, commNone, 20 * min_, 10 * min_, false, allow}},
	{5 * min_, template{"preprocessing", "carol", 1, 0, any_, commNone, 20 * min_, 10 * min_, false, allow}},
	{5 * min_, template{"preprocessing", "carol", 1, 0, any_, commNone, 20 * min_, 10 * min_, false, allow}},
	{5 * min_, template{"preprocessing", "carol", 1, 0, any_, commNone, 20 * min_, 10 * min_, false, allow}},
	{5 * min_, template{"preprocessing", "carol", 1, 0, any_, commNone, 20 * min_, 10 * min_, false, allow}},
	{5 * min_, template{"preprocessing", "carol", 1, 0, any_, commNone, 20 * min_, 10 * min_, false, allow}},
	{5 * min_, template{"preprocessing", "carol", 1, 0, any_, commNone, 20 * min_, 10 * min_, false, allow}},
	{5 * min_, template{"preprocessing", "carol", 1, 0, any_, commNone, 20 * min_, 10 * min_, false, allow}},
	// 10:10: a training job that waits for a whole node, never backfilled.
	{10 * min_, template{"training", "alice", 8, 8, sameNode, commHigh, 3 * hour, 2 * hour, true, optOut}},
	// bob's jobs, predicted short by his history, run long.
	{20 * min_, template{"training", "bob", 5, 0, sameNode, commHigh, 100 * min_, 85 * min_, false, allow}},
	{25 * min_, template{"search", "bob", 3, 0, any_, commNone, 2 * hour, 100 * min_, true, allow}},
}

// background is submitted after the opening, one job every backgroundEvery,
// round and round.
var background = []template{
	{"evaluation", "bob", 1, 0, any_, commNone, hour, 15 * min_, false, allow},
	{"preprocessing", "carol", 2, 0, sameNode, commLow, 90 * min_, 35 * min_, false, allow},
	{"search", "dave", 4, 4, sameNode, commLow, 2 * hour, 50 * min_, true, pb.BackfillPreference_BACKFILL_PREFERENCE_LOW_RISK_ONLY},
	{"training", "erin", 8, 8, pb.Topology_TOPOLOGY_SAME_NVLINK_ISLAND, commHigh, 3 * hour, 100 * min_, true, allow},
	{"evaluation", "bob", 1, 0, any_, commNone, 30 * min_, 40 * min_, false, allow},
	{"training", "alice", 16, 8, sameSw, commHigh, 4 * hour, 150 * min_, true, optOut},
	{"search", "dave", 2, 0, any_, commNone, hour, 20 * min_, false, allow},
}

const backgroundEvery = 20 * time.Minute

// arrivalOf returns the n-th job of the workload (from 0): the opening,
// then the background from the last opening arrival on.
func arrivalOf(n int) (arrival, bool) {
	if n < len(opening) {
		return opening[n], true
	}
	k := n - len(opening)
	last := opening[len(opening)-1].at
	return arrival{at: last + time.Duration(k+1)*backgroundEvery, template: background[k%len(background)]}, true
}

// JobID is the id of the n-th job submitted (from 1).
func JobID(n int) string { return fmt.Sprintf("demo-%04d", n) }

// FirstJobID is the id of the demo's first job (a long training job).
const FirstJobID = "demo-0001"

// Start is the demo clock's start: `huitian serve --demo` begins here.
var Start = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

// Cluster returns the demo cluster: four nodes of eight H100 cards, each
// node one NVLink island, all under one leaf switch (the cluster of the
// embedded example snapshot). The workload is written for it.
func Cluster() *pb.Cluster {
	c := &pb.Cluster{Id: "demo", Domains: []*pb.Domain{{Id: "leaf-1", Kind: pb.DomainKind_DOMAIN_KIND_SWITCH}}}
	for _, n := range []string{"a", "b", "c", "d"} {
		node := &pb.Node{Name: "gpu-" + n, Domains: []string{"leaf-1"}}
		for i := range int32(8) {
			node.Cards = append(node.Cards, &pb.Card{Index: i, Uuid: fmt.Sprintf("GPU-%s%d", n, i), Model: "H100", MemoryBytes: 80 << 30,
				NumaNode: i / 4, NvlinkIsland: "nvl0"})
		}
		c.Nodes = append(c.Nodes, node)
	}
	return c
}
