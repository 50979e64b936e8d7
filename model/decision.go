package model

import "time"

// FragmentClass names the kind of idle capacity a start uses.
type FragmentClass uint8

const (
	FragmentUnspecified FragmentClass = iota
	// FragmentFree is plain free capacity, no reservation in the way.
	FragmentFree
	// FragmentIntraNode is free cards on a node that a job partly uses.
	FragmentIntraNode
	// FragmentCrossNode is single free cards spread over nodes.
	FragmentCrossNode
	// FragmentTemporal is cards free until a reservation claims them.
	FragmentTemporal
)

var fragmentNames = [...]string{"unspecified", "free", "intra-node", "cross-node", "temporal"}

func (f FragmentClass) String() string {
	if int(f) < len(fragmentNames) {
		return fragmentNames[f]
	}
	return "fragment(?)"
}

// PendingReason is why a queued job did not start this cycle.
type PendingReason uint8

const (
	PendingUnspecified PendingReason = iota
	// PendingResources: not enough free cards now.
	PendingResources
	// PendingReserved: the job holds a reservation.
	PendingReserved
	// PendingPriority: it would fit now, but would delay an earlier job's reservation.
	PendingPriority
	// PendingTopology: enough free cards, but not in the required topology.
	PendingTopology
	// PendingNeverFits: the cluster can never hold the job as asked.
	PendingNeverFits
	// PendingOptOut: it could only start as backfill, and it opted out.
	PendingOptOut
	// PendingRisk: a low-risk-only job whose preemption risk is above its limit.
	PendingRisk
	// PendingRuntimeCap: longer than the maximum backfill runtime.
	PendingRuntimeCap
	// PendingPolicy: the policy does not backfill and an earlier job waits.
	PendingPolicy
)

var pendingNames = [...]string{"unspecified", "resources", "reserved", "priority", "topology", "never-fits", "opt-out", "risk", "runtime-cap", "policy"}

func (r PendingReason) String() string {
	if int(r) < len(pendingNames) {
		return pendingNames[r]
	}
	return "pending(?)"
}

// PreemptAction is what a preempted backfill job must do.
type PreemptAction uint8

const (
	PreemptUnspecified PreemptAction = iota
	// PreemptSuspend: checkpoint, release the cards, requeue in place.
	PreemptSuspend
	// PreemptRequeue: stop and requeue; progress is lost.
	PreemptRequeue
)

func (a PreemptAction) String() string {
	switch a {
	case PreemptSuspend:
		return "suspend"
	case PreemptRequeue:
		return "requeue"
	}
	return "unspecified"
}

// Start tells the resource manager to start a job on exact cards now.
type Start struct {
	JobID string
	Cards []CardRef
	Kind  AllocKind
	// ExpectedRetention is how long the job is expected to keep its cards
	// before a reservation claims them; Unbounded when none claims them.
	ExpectedRetention time.Duration
	Unbounded         bool
	PreemptProb       float64
	ProtectedUntil    time.Time // zero when the start is not protected
	// WindowEnd, for a backfill job admitted on its predicted runtime into
	// cards a reservation claims, is when its window ends: past it, it
	// yields (requeued if it cannot checkpoint) as soon as its cards would
	// start the reserved job. Zero for every other start.
	WindowEnd time.Time
	Fragment  FragmentClass
	Reason    string
	// CardNumbers are the cards by their number in the snapshot cluster's
	// layout (Layout.Ref), sorted, read only. A planner that was given the
	// running jobs' cards by number (PlanCards: the simulator) names its
	// starts' cards by number alone, Cards nil: a flat 93,312-card replay
	// spent half of what it allocated on references no one read. A plan
	// for a resource manager names Cards, and may set these too. Not on
	// the wire.
	CardNumbers []int
}

// CardCount is how many cards the start takes: its Cards, or its
// CardNumbers where it names them by number alone.
func (s *Start) CardCount() int {
	if s.Cards != nil {
		return len(s.Cards)
	}
	return len(s.CardNumbers)
}

// Reservation holds cards for a job from a time: exact cards, or on a
// cluster whose cards are interchangeable (one card a node, one model, no
// switch: profile.IsPool) a count of them, any free by Start, with Cards
// empty.
type Reservation struct {
	JobID      string
	Cards      []CardRef
	Count      int // the cards held: len(Cards), or the count alone
	Start      time.Time
	Confidence float64 // probability that the cards are free by Start
	// CardNumbers, for a reservation that names its count alone, are the
	// cards the planner reasoned with when it waited for particular ones
	// (huitian on a pool: the jobs holding them are the ones the
	// reservation waits for), by their number in the snapshot cluster's
	// layout (Layout.Refs), sorted, read only; nil otherwise. For a reader
	// of the plan that holds the snapshot — which running jobs the
	// reservation waits for — without a reference per card. Not on the
	// wire.
	CardNumbers []int
}

// Preemption tells the resource manager to make a backfill job yield.
type Preemption struct {
	JobID    string
	Action   PreemptAction
	Notice   time.Duration
	Reason   string
	ForJobID string
}

// Pending says why a queued job waits.
type Pending struct {
	JobID          string
	Reason         PendingReason
	Message        string
	EstimatedStart time.Time // zero when unknown
}

// Stats describe how the decision was computed.
type Stats struct {
	Solver     string
	LPBound    float64
	Objective  float64
	Gap        float64
	SolveTime  time.Duration // filled by the caller, who owns the clock
	Fallback   bool
	Candidates int
	LPRows     int
	LPCols     int
	// IdleCards are the cards free after the main pass plus those held by
	// running backfill jobs: what would otherwise be idle this cycle.
	IdleCards int
	// BackfillCards are the cards held by backfill jobs after this cycle.
	BackfillCards int
	// BudgetCut counts the queued jobs the time budget left unconsidered
	// (pending, not placed): 0 when the plan is complete. Fallback is then
	// set too.
	BudgetCut int
}

// Decision is one planning cycle's answer. It is plain data: the caller acts on it.
type Decision struct {
	Starts       []Start
	Reservations []Reservation
	Preemptions  []Preemption
	Pending      []Pending
	Stats        Stats
	// ReplanBy is when the planner must plan again even if nothing else
	// happens by then: a backfill job's window or protection ends, a
	// reservation comes within a job's notice, or the reserved head passes
	// the requeue threshold, and a cycle then may preempt for it. Zero
	// when only a change (an arrival, a completion) calls for a new plan.
	// A resource manager that plans on a timer meets it within its
	// interval; an event-driven one (the what-if simulator) plans then.
	ReplanBy time.Time
	// Fragments is the idle-capacity inventory of the cycle, before backfill
	// (empty for planners that do not classify).
	Fragments []FragmentSummary
	// Idle labels the cards that Fragments counts as idle now with their
	// class, in layout order (empty for planners that do not classify). It
	// is for people's views (the web page's card grid); it is not part of
	// the wire answer, and not recorded.
	Idle []IdleCard `json:"-"`
}

// IdleCard is a card idle when the planner classified idle capacity, and
// its class.
type IdleCard struct {
	Card  CardRef
	Class FragmentClass
}
