package model

import (
	"strings"
	"time"
)

// Topology is the placement constraint a job puts on its cards.
type Topology uint8

const (
	// TopologyAny places cards anywhere (per-node counts still honour CardsPerNode).
	TopologyAny Topology = iota
	// TopologySameNode places every card on one node.
	TopologySameNode
	// TopologySameIsland places every card in one NVLink island of one node.
	TopologySameIsland
	// TopologySameSwitch places every card under one leaf switch domain.
	TopologySameSwitch
)

var topologyNames = [...]string{"any", "same-node", "same-nvlink-island", "same-switch"}

func (t Topology) String() string {
	if int(t) < len(topologyNames) {
		return topologyNames[t]
	}
	return "topology(?)"
}

// Comm is how much a job's cards talk to each other.
type Comm uint8

const (
	CommNone Comm = iota
	CommLow
	CommHigh
)

var commNames = [...]string{"none", "low", "high"}

func (c Comm) String() string {
	if int(c) < len(commNames) {
		return commNames[c]
	}
	return "comm(?)"
}

// BackfillPref is what a job accepts of backfill.
type BackfillPref uint8

const (
	// BackfillAllow lets the job run on backfill capacity.
	BackfillAllow BackfillPref = iota
	// BackfillOptOut never starts the job while an earlier job waits.
	BackfillOptOut
	// BackfillLowRiskOnly backfills only where the preemption probability is at
	// most the job's MaxPreemptProb.
	BackfillLowRiskOnly
)

var backfillNames = [...]string{"allow", "opt-out", "low-risk-only"}

func (b BackfillPref) String() string {
	if int(b) < len(backfillNames) {
		return backfillNames[b]
	}
	return "backfill(?)"
}

// Job is a job's specification as submitted: what it asks for, not where it runs.
type Job struct {
	ID             string
	User           string
	Class          string // training, evaluation, preprocessing, search, …
	Cards          int
	CardsPerNode   int // 0: no per-node requirement
	Topology       Topology
	Comm           Comm
	TimeLimit      time.Duration // the user's estimate; the job is killed there
	Checkpointable bool
	CheckpointCost time.Duration
	Backfill       BackfillPref
	MaxPreemptProb float64 // for BackfillLowRiskOnly
	Priority       int
	Submit         time.Time
	RequeueCount   int
	CardModel      string // "" accepts any model; "A|B" accepts either
}

// ModelAccepts reports whether a job asking for card model want (""
// accepts any; several models may be given separated by '|') can use a
// card of model have.
func ModelAccepts(want, have string) bool {
	if want == "" || want == have {
		return true
	}
	for want != "" {
		i := strings.IndexByte(want, '|')
		if i < 0 {
			return want == have
		}
		if want[:i] == have {
			return true
		}
		want = want[i+1:]
	}
	return false
}
