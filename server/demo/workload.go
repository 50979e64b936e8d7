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
	anywhere = pb.Topology_TOPOLOGY_ANY
	sameNode = pb.Topology_TOPOLOGY_SAME_NODE
	sameSw   = pb.Topology_TOPOLOGY_SAME_SWITCH
	commNone = pb.Comm_COMM_NONE
	commLow  = pb.Comm_COMM_LOW
	commHigh = pb.Comm_COMM_HIGH
	allow    = pb.BackfillPreference_BACKFILL_PREFERENCE_ALLOW
	optOut   = pb.BackfillPreference_BACKFILL_PREFERENCE_OPT_OUT
	minute   = time.Minute
	hour     = time.Hour
)

// opening is the workload's first half hour: ordinary jobs whose shapes
// and runtimes make the real planner show, within the demo's first minute
// of real time, what backfill under huitian does. Nothing is forced; on the
// demo cluster (best fit places them so) it goes:
//
//   - 10:00 gpu-a and gpu-b hold a long training job beside a fine-tune
//     that runs to its 90-min limit (one card of gpu-b free), gpu-c the
//     same with two cards free, gpu-d a fine-tune with five free. Bob's
//     eight evaluations fill the free cards and end within a twelfth of
//     their limit: that history is what the planner predicts bob's jobs by.
//   - 10:05 erin's 16-card job (4 cards a node) cannot start: EASY reserves
//     it from 11:30, on the fine-tunes' cards and one free card of each of
//     the last two nodes (temporal fragments). Carol's short jobs are
//     EASY's own backfill, two on temporal fragments.
//   - 10:20 bob's 5-card training job (cannot checkpoint) fits the fourth
//     node only with the claimed card: admitted beyond EASY on his history,
//     mostly on intra-node leftovers, with a window up to the expected
//     start. 10:25 his 3-card search (checkpointable) gets the single free
//     cards left on gpu-b and gpu-c and a claimed one: cross-node fragments.
//   - Both run far longer than predicted. At 11:20 the planner tells them
//     to yield by 11:30 (SUSPEND, and REQUEUE: past its window), and erin's
//     job starts at 11:30, at its reservation.
var opening = []arrival{
	// 10:00: long training jobs, fine-tunes that run to their limit, and
	// bob's short evaluations.
	{0, template{"training", "alice", 4, 0, sameNode, commHigh, 6 * hour, 6 * hour, true, optOut}},
	{0, template{"training", "frank", 4, 0, sameNode, commHigh, 90 * minute, 90 * minute, false, optOut}},
	{0, template{"training", "frank", 4, 0, sameNode, commHigh, 90 * minute, 90 * minute, false, optOut}},
	{0, template{"training", "grace", 3, 0, sameNode, commHigh, 6 * hour, 6 * hour, true, optOut}},
	{0, template{"training", "grace", 3, 0, sameNode, commHigh, 6 * hour, 6 * hour, true, optOut}},
	{0, template{"training", "frank", 3, 0, sameNode, commHigh, 90 * minute, 90 * minute, false, optOut}},
	{0, template{"training", "frank", 3, 0, sameNode, commHigh, 90 * minute, 90 * minute, false, optOut}},
	{0, template{"evaluation", "bob", 1, 0, anywhere, commNone, hour, 3 * minute, false, allow}},
	{0, template{"evaluation", "bob", 1, 0, anywhere, commNone, hour, 3 * minute, false, allow}},
	{0, template{"evaluation", "bob", 1, 0, anywhere, commNone, hour, 3 * minute, false, allow}},
	{0, template{"evaluation", "bob", 1, 0, anywhere, commNone, hour, 4 * minute, false, allow}},
	{0, template{"evaluation", "bob", 1, 0, anywhere, commNone, hour, 4 * minute, false, allow}},
	{0, template{"evaluation", "bob", 1, 0, anywhere, commNone, hour, 4 * minute, false, allow}},
	{0, template{"evaluation", "bob", 1, 0, anywhere, commNone, hour, 5 * minute, false, allow}},
	{0, template{"evaluation", "bob", 1, 0, anywhere, commNone, hour, 5 * minute, false, allow}},
	// 10:05: the big job, 4 cards on each node.
	{5 * minute, template{"training", "erin", 16, 4, sameSw, commHigh, 4 * hour, 3 * hour, true, optOut}},
	{5 * minute, template{"preprocessing", "carol", 1, 0, anywhere, commNone, 20 * minute, 10 * minute, false, allow}},
	{5 * minute, template{"preprocessing", "carol", 1, 0, anywhere, commNone, 20 * minute, 10 * minute, false, allow}},
	{5 * minute, template{"preprocessing", "carol", 1, 0, anywhere, commNone, 20 * minute, 10 * minute, false, allow}},
	{5 * minute, template{"preprocessing", "carol", 1, 0, anywhere, commNone, 20 * minute, 10 * minute, false, allow}},
	{5 * minute, template{"preprocessing", "carol", 1, 0, anywhere, commNone, 20 * minute, 10 * minute, false, allow}},
	{5 * minute, template{"preprocessing", "carol", 1, 0, anywhere, commNone, 20 * minute, 10 * minute, false, allow}},
	{5 * minute, template{"preprocessing", "carol", 1, 0, anywhere, commNone, 20 * minute, 10 * minute, false, allow}},
	{5 * minute, template{"preprocessing", "carol", 1, 0, anywhere, commNone, 20 * minute, 10 * minute, false, allow}},
	// 10:10: a training job that waits for a whole node, never backfilled.
	{10 * minute, template{"training", "alice", 8, 8, sameNode, commHigh, 3 * hour, 2 * hour, true, optOut}},
	// bob's jobs, predicted short by his history, run long.
	{20 * minute, template{"training", "bob", 5, 0, sameNode, commHigh, 100 * minute, 85 * minute, false, allow}},
	{25 * minute, template{"search", "bob", 3, 0, anywhere, commNone, 2 * hour, 100 * minute, true, allow}},
}

// background is submitted after the opening, one job every backgroundEvery,
// round and round: about 0.8 of the cluster's cards, so that the queue stays
// short of saturation (where the planner is EASY, lending nothing beyond).
var background = []template{
	{"evaluation", "bob", 1, 0, anywhere, commNone, hour, 15 * minute, false, allow},
	{"preprocessing", "carol", 2, 0, sameNode, commLow, 90 * minute, 35 * minute, false, allow},
	{"search", "dave", 4, 4, sameNode, commLow, 2 * hour, 50 * minute, true, pb.BackfillPreference_BACKFILL_PREFERENCE_LOW_RISK_ONLY},
	{"training", "erin", 8, 8, pb.Topology_TOPOLOGY_SAME_NVLINK_ISLAND, commHigh, 3 * hour, 100 * minute, true, allow},
	{"evaluation", "bob", 1, 0, anywhere, commNone, 30 * minute, 40 * minute, false, allow},
	{"training", "alice", 16, 8, sameSw, commHigh, 4 * hour, 150 * minute, true, optOut},
	{"search", "dave", 2, 0, anywhere, commNone, hour, 20 * minute, false, allow},
}

const backgroundEvery = 20 * time.Minute

// arrivalOf returns the n-th job of the workload (from 0): the opening,
// then the background from the last opening arrival on.
func arrivalOf(n int) arrival {
	if n < len(opening) {
		return opening[n]
	}
	k := n - len(opening)
	last := opening[len(opening)-1].at
	return arrival{at: last + time.Duration(k+1)*backgroundEvery, template: background[k%len(background)]}
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
