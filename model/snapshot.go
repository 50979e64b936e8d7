package model

import "time"

// AllocKind says whether a job runs on regular or on backfill resources.
type AllocKind uint8

const (
	// Regular: the job started when no earlier job was waiting.
	Regular AllocKind = iota
	// Backfill: the job jumped the queue onto idle capacity.
	Backfill
)

func (k AllocKind) String() string {
	if k == Backfill {
		return "backfill"
	}
	return "regular"
}

// Running is a job holding cards: its specification and its allocation.
type Running struct {
	Job Job
	// Cards are the cards the job holds. In a simulator's snapshot whose
	// planner takes the running jobs' cards by number (sim.CardsPlanner),
	// a job started by number (Start.CardNumbers) names none: the
	// simulator hands its numbers to the planner beside the snapshot.
	Cards          []CardRef
	Start          time.Time
	Kind           AllocKind
	Progress       float64   // 0..1 when the resource manager reports it, else 0
	ProtectedUntil time.Time // zero when not protected
}

// CardCount is how many cards the job holds: its Cards, or, where it
// names none (a simulator's job started by number), the count its spec
// asks for, which the simulator checked its start against.
func (r *Running) CardCount() int {
	if r.Cards != nil {
		return len(r.Cards)
	}
	return r.Job.Cards
}

// Policy selects the planning algorithm.
type Policy uint8

const (
	// PolicyDefault lets the planner's owner choose.
	PolicyDefault Policy = iota
	PolicyFCFS
	PolicyEASY
	PolicyConservative
	PolicyEASYSJBF
	PolicyHybridDepth
	PolicyHuitian
	PolicyHuitianGreedy
)

var policyNames = [...]string{"default", "fcfs", "easy", "conservative", "easy-sjbf", "hybrid", "huitian", "huitian-greedy"}

func (p Policy) String() string {
	if int(p) < len(policyNames) {
		return policyNames[p]
	}
	return "policy(?)"
}

// ParsePolicy parses a policy name as String writes it.
func ParsePolicy(s string) (Policy, bool) {
	for i, n := range policyNames {
		if n == s {
			return Policy(i), true
		}
	}
	return 0, false
}

// Options tune one planning cycle.
type Options struct {
	Policy           Policy
	ReservationDepth int           // for PolicyHybridDepth; 0 means the policy's own depth
	TimeBudget       time.Duration // 0 means the planner's default
	// OverrunGrace is how long a running job already past its time limit is
	// still assumed to run (the resource manager has not killed it yet).
	// 0 means DefaultOverrunGrace.
	OverrunGrace time.Duration
	// Brief asks for a decision without what only people read: Pending
	// and Idle stay empty, and no time goes to waiting jobs' reasons and
	// estimated starts or to classifying idle capacity, so that the
	// huitian planners also leave the fragment inventory (Fragments)
	// empty and give a start beyond EASY no Fragment. Everything else
	// (starts, reservations, preemptions, stats) is what the same
	// snapshot without Brief gets. The simulator sets it, as it reads no
	// reason; it is not on the wire, where a resource manager shows its
	// users why their jobs wait.
	Brief bool
}

// DefaultOverrunGrace is the assumed remaining time of a job past its limit:
// one scheduling cycle, after which the resource manager kills it.
const DefaultOverrunGrace = time.Minute

// Snapshot is everything one planning cycle knows: the time, the cluster,
// the running jobs and the queue.
type Snapshot struct {
	Now     time.Time
	Cluster *Cluster
	Running []Running
	Queued  []Job
	Options Options
}
