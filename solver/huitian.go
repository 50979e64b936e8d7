package solver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/solver/baseline"
	"github.com/huitian/huitian/solver/estimate"
	"github.com/huitian/huitian/solver/fragment"
	"github.com/huitian/huitian/solver/lp"
	"github.com/huitian/huitian/solver/preempt"
	"github.com/huitian/huitian/solver/profile"
	"github.com/huitian/huitian/solver/tune"
)

// Config configures the huitian planner.
type Config struct {
	Estimate estimate.Config
	Tune     tune.Config
	Preempt  preempt.Config
	// Quantile is how long running jobs are assumed to hold their cards in
	// the predicted profile (the windows backfill judges by), and where a
	// reserved job's expected start is read from its start distribution
	// (default 0.8).
	Quantile float64
	// Depth is the reservation depth when the snapshot does not set one
	// (default 1, as EASY).
	Depth int
	// PendingEstimates bounds how many waiting jobs get an estimated start
	// each cycle (default 16; each distinct job shape costs one sweep of the
	// profile).
	PendingEstimates int
	// Horizon bounds the card-seconds counted in the fragment inventory
	// (default 24 h).
	Horizon time.Duration
	// MaxCandidates bounds the backfill candidates the LP considers each
	// cycle, in queue order (default 256; Slurm's bf_max_job_test is 500);
	// the rest go to the greedy pass. MaxOptions bounds the placement
	// options per candidate (default 8).
	MaxCandidates, MaxOptions int
	// SuspendMaxProb bounds the preemption probability of a checkpointable
	// job placed beyond the safe bound ε (default 0.5): its checkpoint is
	// insurance against a late finish, not a planned suspension.
	SuspendMaxProb float64
	// ShortestFirst orders the backfill that goes beyond EASY by predicted
	// median runtime, shortest first, as EASY++ does; false (the default)
	// keeps queue order (huitian's: requeued jobs, with their compensation,
	// ahead). Lent shortest first, the cards EASY leaves idle went to
	// jobs that had just arrived, ahead of those that had waited longer
	// and that EASY would backfill onto them next: over two sets of 27
	// replicas of KTH-SP2 at 80 processors the 1-card jobs waited 4–7%
	// more than in queue order and the bounded slowdown was 0.3–2.8%
	// higher, while the largest class waited about 1% less, within what
	// chance moves it (solver/README.md). At KTH-SP2's own size the two
	// orders plan alike.
	ShortestFirst bool
	// ExpansionOrder lets EASY's own backfill take the largest expansion
	// factor first ((wait + predicted runtime) / predicted runtime, LXF)
	// instead of queue order while the queue is not saturated (default
	// false: the guarantee is then EASY exactly). It lowers the average
	// bounded slowdown (KTH-SP2 at its own size 75.05 against 91.72
	// without it, EASY 92.69) but it is a different EASY, not backfill
	// into what EASY leaves idle, and over the robustness suite it was
	// what made the largest class wait longer than under EASY: on the
	// SWF traces 7 of 15 rows passed with it and 14 without, on the
	// synthetic GPU workloads 21 of 24 either way (solver/README.md).
	// Saturated is when the queued work, by the time limits, would keep
	// every usable card busy for longer than SaturatedBacklog (default
	// 8 h): then backfill keeps EASY's queue order whatever this says,
	// and nothing is lent beyond EASY's own backfill (any reordering then
	// starved the big jobs: KTH-SP2 at 80 processors and Lublin-256, their
	// largest class 14–34% above EASY). At 24 h, lending in queue order
	// into the windows of a queue 8–12 h deep made KTH-SP2's own runs miss
	// the do-no-harm targets (at 80 processors p95 wait ×1.050; the suite's
	// row at load 0.9, largest class ×1.078) and gained nothing measurable
	// there (over broad replicas every ratio within chance of the
	// control's); at 8 h both are EASY's runs within 0.2%, and the
	// synthetic GPU workloads keep nearly all their gain (solver/README.md).
	ExpansionOrder   bool
	SaturatedBacklog time.Duration
	// LargeDepth more reservations in EASY's guarantee go to the first
	// large gangs waiting behind the head, in queue order (default 1; see
	// largeGang): EASY reserves for the head alone, and cards that backfill
	// frees here and there never add up to the whole nodes a large gang
	// needs, so it starves. With its own reservation it is backfilled
	// around as the head is (the suite's synthetic GPU workloads: the
	// largest class waited ×0.917 of EASY's on average over 24 runs,
	// against ×0.963 without). 0 is EASY's guarantee alone.
	LargeDepth int
	// AlignEnds places every job that fits in one node, in the guarantee
	// and beyond it, on the node whose busy time it extends least, then by
	// best fit (profile.Profile.SetAlignEnds; default true), while the
	// time limits order runtimes: while the history's LimitSpread is at
	// most AlignSpread (default ln 3: the middle half of the jobs' runtime
	// to limit ratios within a factor of 3), and once the history holds a
	// job of a whole node's cards, for which it empties nodes (alignNow).
	// EASY's best fit alone scattered long jobs over nodes that would
	// otherwise empty, and one such chance placement held a 64-card gang
	// 18 hours past EASY's start
	// (synth seed 15 at load 0.7: its class waited ×2.14 of EASY's on the
	// same jobs, ×0.63 aligned; held-out seeds 9–16 at three loads, 5 of
	// 24 runs failing the suite's targets, none aligned). Aligned on limits
	// that order nothing it does harm: the same workloads with every limit
	// 3 days failed 8 of 12 runs aligned, 2 with best fit.
	AlignEnds   bool
	AlignSpread float64
	// OneNodeGangs lends a job that communicates (model.CommHigh) the
	// cards of one node only, beyond EASY's backfill, as the design sorts
	// idle capacity: one node's leftovers for small jobs that talk, cards
	// scattered over nodes for single-card and low-communication work; a
	// gang that needs several nodes then starts by EASY's own backfill
	// alone, on its limit. Off by default: spread gangs lent on their
	// predicted runtimes are where KTH-SP2 at 80 processors waits longer
	// than under EASY (27 replicas: the largest class ×1.023 ± 0.006 of
	// EASY's mean, ×1.000 with this on; p95 ×1.036 ± 0.012 and ×1.000),
	// but also where NASA-iPSC at load 0.7 gains (bounded slowdown ×0.947
	// of EASY's, ×0.999 with this on) and the synthetic GPU workload of
	// seed 12 at load 0.7 keeps its bounded slowdown below EASY's (4.37
	// against EASY's 4.19 with this on). Over replicas that move a fifth
	// of the jobs by up to an hour, rather than 2% by two minutes, the
	// harm at 80 processors and NASA-iPSC's gain both fall within chance
	// (solver/README.md).
	OneNodeGangs bool
	// GuaranteeShare is the share of the time budget left after the
	// cycle is set up that the guarantee may use (default 0.6, also when
	// 0; 1, or more, lets it use it all). The phases after it — the predicted profile, holding
	// the guarantee's starts and reservations, labelling fragments — run
	// whatever is left and are not cut; backfill beyond EASY and the
	// waiting jobs' estimates are. Let the guarantee run to the deadline
	// and a cut plan answered 20–50 ms past a 50 ms budget at 65,536
	// cards and 20,000 queued (bench/README.md).
	GuaranteeShare float64
}

// defaultGuaranteeShare is Config.GuaranteeShare's default.
const defaultGuaranteeShare = 0.6

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{
		Tune: tune.Defaults(), Preempt: preempt.Defaults(),
		Quantile: 0.8, Depth: 1, PendingEstimates: 16, Horizon: 24 * time.Hour,
		SuspendMaxProb: 0.5, SaturatedBacklog: 8 * time.Hour, LargeDepth: 1,
		AlignEnds: true, AlignSpread: math.Log(3), GuaranteeShare: defaultGuaranteeShare,
	}
}

// Huitian is the huitian planner. Every cycle starts from EASY's own
// decision, made on the users' time limits: the jobs EASY starts, start;
// the jobs EASY reserves for, are reserved on the same cards. That is the
// guarantee: backfill never takes from the big jobs what EASY would have
// given them. On top of it the mechanisms lend what EASY leaves idle:
// runtime distributions learned from history admit short jobs into the
// windows before a reservation (at a bounded risk of delaying it, and
// requeued at once if they overrun it), checkpointable jobs may run longer
// and are suspended with notice, and backfill candidates are placed by a
// Placer; NewHuitianGreedy places them greedily by best fit.
//
// A Huitian is a Learner: its memory changes only through Observe and
// Decided, so Plan is a function of the snapshot and that memory. It is
// not safe for concurrent use.
type Huitian struct {
	name string
	cfg  Config
	mem  memory
	lp   lp.Solver // nil: greedy placement
	core *baseline.Planner

	// est caches estimates across cycles, each entry for as long as its
	// token is current (the history would answer the same): a cache of a
	// pure function of the memory, so Plan stays a function of its inputs.
	// estPlan counts plans; an entry notes the last plan that read it, and
	// when the cache has grown past twice its size after the last sweep
	// (estKept), a plan first drops the stale entries and those the last
	// plan did not read. estVer numbers the entries' computations.
	est     map[estKey]*estEntry
	estPlan uint64
	estVer  uint64
	estKept int
	// histPlan is the history at the start of the last plan, histSame
	// whether it is the same at this one's (fresh).
	histPlan histMark
	histSame bool
	// cards remembers the running jobs' card numbers from cycle to cycle
	// (the same numbers a lookup gives: baseline.CardIDs).
	cards baseline.CardIDs
	// prof is the last cycle's profile, reset and reused while the layout
	// is the same (a new one costs an allocation per card).
	prof *profile.Profile
	// flat is the last cycle's predicted profile of a flat machine
	// (flatFor), its buffers reused; perCardPrediction keeps every cycle
	// on the card-by-card Profile (for the differential test).
	flat              flatPred
	perCardPrediction bool
	// holders, runnings and queueds are the last cycle's buffers of the
	// cycle's holder, running and queued, reused (a cycle never outlives
	// Plan).
	holders  []holder
	runnings []runningJob
	queueds  []queuedJob
	posOf    []int
	pendPos  []int
	pendBuf  []model.Pending
	// runList keeps running jobs' distributions from one cycle to the
	// next: the last cycle's running jobs in the snapshot's order, their
	// first cards (runFirsts) and their distributions (runVals), side by
	// side. A job on the same first card with the same user, class,
	// card count and limit has the same distribution while its cache
	// entry is current and the same computation. A cycle walks the lists
	// alongside the snapshot's running jobs (a resource manager lists
	// them in a stable order: a cycle drops the ended ones and adds the
	// started ones) and writes the next cycle's in its order, so that
	// every job's key and distribution are read and written in memory
	// order, here and by the phases (runningEst). runAt finds a job
	// further away (its index in the lists by first card, checked
	// against runFirsts). runListHist is the history their entries were
	// current with (runningDist).
	runList, runListNext     []runKey
	runFirsts, runFirstsNext []int32 // -1: taken into the next lists
	runVals, runValsNext     []runEst
	runListHist              histMark
	runAt                    []int32
	// memo is the last cycle's queued jobs in the snapshot's order, with
	// the cache entry of each one's estimate once a phase asked for it
	// (queuedEst), memoNext the buffer of the next cycle's. A deep queue
	// is mostly the same jobs in the same order from one cycle to the
	// next, and finding each one's entry by user, class and card count
	// (hashing two strings) every cycle was a sixth of a million-job
	// replay.
	memo, memoNext []queuedMemo
	missed         []int32               // matchQueued's jobs not found by the walk
	memoIDs        map[string]int        // matchQueued's lookup by id, cleared and kept
	tagged         []int                 // matchQueued's jobs that may hold a tag (cycle.tagged)
	fragOf         []model.FragmentClass // classify's labels, reused
	cyc            cycle                 // the plan under way (newCycle)
	tagPos         []int                 // behindTheirHeads: each queued job's position in order
	tagKept        []int                 // behindTheirHeads: the tagged jobs, by position
	cycles         uint64                // cycles begun (newCycle): cycle.no
	taken          []bool                // candidates' buffers
	cands          []int
	keyed          []byMed // backfillBeyond's buffers
	sorted         []int
	lvFlat         []int // windowLevels' buffers
	lvAvail        [][]int
	startDists     []estimate.Dist // cycle.startDist's buffer
	remHelds       []remHeld       // cycle.remHeld's
	maxOf          []estimate.Dist // startDistOf's
	lpCands        []candidate     // placeLP's buffers
	lpRest         []int
	lpPos          []int32
	wins           []runWin // cycle.wins' buffer
	// held is the guarantee's running jobs' busy times (HeldUntils),
	// kept for its memory; relUntil the same with the planned yields
	// (withReleases), tryUntil each kind of try's, yieldBuf the buffers
	// of cycle.yieldable: at 65,536 cards, a list of 28,000 running jobs
	// each.
	held, relUntil []int64
	tryUntil       [2][]int64
	yieldBuf       [2][]yielder
	// yielding is the map of the yields a kept try plans (the guarantee
	// keeps one try a plan), cleared and filled anew: made anew each
	// plan, its thousands of entries were a twentieth of what a plan
	// allocated at 65,536 cards. Read only within the plan.
	yielding map[int]preempt.Release
	// orders are the buffers of the cycle's two queue orders: EASY's
	// and huitian's (queueOrder).
	orders [2]baseline.Orders
	// needs are the messages of jobs waiting for free cards, by card
	// count (needsMsg).
	needs []string
	// noFreeBound makes the guarantee plan every try (tests: the bound
	// must never change a decision).
	noFreeBound bool
	// fullFirst makes the guarantee walk EASY's whole plan before it
	// sets up its tries, as it did before it waited for them after the
	// main pass (tests: the wait changes no decision).
	fullFirst     bool
	heldPer       []int32   // mayBeFree's cards held per node
	wakeTs        []int64   // wakeHeld's release times
	allUntil      []int64   // allYield's busy times
	candBuf       []yielder // yieldCandidates' list
	freePerSwitch []int     // mayBeFree's free cards (or whole nodes) per switch
}

// NewHuitianGreedy returns the huitian planner with greedy best-fit
// placement of backfill candidates (policy huitian-greedy).
func NewHuitianGreedy(cfg Config) *Huitian {
	if cfg.Quantile <= 0 || cfg.Quantile >= 1 {
		cfg.Quantile = 0.8
	}
	if cfg.Depth <= 0 {
		cfg.Depth = 1
	}
	if cfg.Horizon <= 0 {
		cfg.Horizon = 24 * time.Hour
	}
	if cfg.SaturatedBacklog <= 0 {
		cfg.SaturatedBacklog = 8 * time.Hour
	}
	switch {
	case cfg.GuaranteeShare <= 0:
		cfg.GuaranteeShare = defaultGuaranteeShare
	case cfg.GuaranteeShare > 1:
		cfg.GuaranteeShare = 1
	}
	return &Huitian{name: "huitian-greedy", cfg: cfg, mem: newMemory(cfg), core: &baseline.Planner{Exact: true}}
}

// holder says who holds a card now: nobody (the zero value), a running
// job of the snapshot, or a job started this cycle.
type holder int32

func runningHolder(i int) holder { return holder(i + 1) }
func startedHolder(k int) holder { return holder(-k - 1) }

// running returns the index into s.Running of a running job's card.
func (h holder) running() (int, bool) { return int(h) - 1, h > 0 }

// started returns the index into the decision's starts of a card taken this cycle.
func (h holder) started() (int, bool) { return int(-h) - 1, h < 0 }

// cycle is the working state of one Plan call.
type cycle struct {
	h      *Huitian
	no     uint64 // this cycle's number (Huitian.cycles)
	s      *model.Snapshot
	prof   *profile.Profile
	lay    *model.Layout
	params tune.Params
	d      *model.Decision

	holder    []holder        // who holds each card now
	running   []runningJob    // the running jobs, by index into s.Running
	queued    []queuedJob     // the queued jobs' estimates once asked (queuedEst)
	yfTargets map[string]bool // the jobs yielded for (tagsOf), once asked
	// tagged: the queued jobs that may hold a membership tag (matchQueued);
	// every other job's tags are current and empty.
	tagged    []int
	startDist []estimate.Dist // runtime of jobs started this cycle
	resv      []resv
	classes   fragment.Classes
	// runBackfill is the cards running backfill jobs hold (newCycle).
	runBackfill int
	waiting     string
	core        baseline.Brief // the guarantee's decision's queued indexes
	// flat, when not nil, is the predicted profile of a flat machine
	// (flatFor), and prof is nil.
	flat      *flatPred
	grace     int64
	runCards  [][]int      // each running job's cards (baseline.CardIDs.Resolve)
	numbers   bool         // starts by number alone (PlanCards; baseline.Prepared.Numbers)
	memo      []queuedMemo // each queued job's estimate cache entry, once known (queuedEst)
	remHeld   []remHeld    // running jobs' remaining times, once asked (runningRem)
	order     []int        // the queue in queue order (queueOrder)
	easyOrder []int        // the queue in EASY's order (no compensation): the guarantee's
	posOf     []int        // queue position (in order) of each queued job, by index
	pendPos   []int        // queue position of each pending entry
	seenBuf   []holder     // holdersOf's list
	cardScale float64      // mean cards of this cycle's LP candidates (value's unit)
	sat       int8         // saturated(): 0 not yet known, 1 yes, -1 no
	// yieldable is, once a try of the guarantee asked (yieldAsked), the
	// backfill jobs it tells to yield besides those planned: without and
	// with requeue.
	yieldable  [2][]yielder
	yieldAsked [2]bool
	// heldYield: the guarantee's kept try requeues these running jobs (by
	// index), lent into windows, because only they keep the head from
	// starting (guaranteeTries.setUp).
	heldYield map[int]bool
	// heldWake: when a held try becomes worth making (wakeHeld); zero
	// when none.
	heldWake time.Time
	wins     []runWin // runWindow's answers, by running index
	soon     []int8   // endsSoon, once asked: 0 not yet, 1 yes, -1 no
	// The messages of the waiting jobs that name the job they wait
	// behind, made once a cycle: a deep queue gets one per job.
	optOutMsg, saturatedMsg, delayMsg behindMsg
}

// behindMsg is a message naming the job others wait behind, kept while
// that job is the same.
type behindMsg struct{ waiting, msg string }

// of returns prefix+waiting+suffix, the string made last time when
// waiting is the same.
func (m *behindMsg) of(prefix, waiting, suffix string) string {
	if m.msg == "" || m.waiting != waiting {
		m.waiting, m.msg = waiting, prefix+waiting+suffix
	}
	return m.msg
}

// needsMsg is the message of a job of the given cards that waits for
// cards to come free, made once per card count: a deep queue gets one
// per job every cycle.
func (h *Huitian) needsMsg(cards int) string {
	if cards < 0 || cards > 1<<16 {
		return "needs " + strconv.Itoa(cards) + " cards, not enough free"
	}
	if cards >= len(h.needs) {
		h.needs = append(h.needs, make([]string, cards+1-len(h.needs))...)
	}
	if h.needs[cards] == "" {
		h.needs[cards] = "needs " + strconv.Itoa(cards) + " cards, not enough free"
	}
	return h.needs[cards]
}

type jobEst struct {
	dist  estimate.Dist
	basis estimate.Basis
}

// estEntry is a cached estimate of a user, class and card count, before
// it is scaled to a job's limit, with the token that says while it holds.
type estEntry struct {
	ratios estimate.Ratios
	basis  estimate.Basis
	tok    estimate.Token
	used   uint64 // the last plan (estPlan) that read it
	ver    uint64 // which computation of the planner's (Huitian.estVer) it holds
}

type resv struct {
	job *model.Job
	// t is when the reservation claims its cards in the predicted profile:
	// the Quantile of its start distribution, no later than limit. limit
	// is EASY's reserved start, from the running jobs' time limits: the
	// cards are free by then whatever the estimates say.
	t, limit int64
	cards    []int
	s        estimate.Dist // start-time distribution: when its cards are all free
	conf     float64       // P(cards free by t)
	// survive is the probability that no backfill job placed on its cards
	// this cycle (that cannot checkpoint) still runs when it starts.
	survive float64
	// protect: a large job's reservation beyond the head's (LargeDepth),
	// which protects its cards and draws no backfill to them
	// (Profile.ReserveProtect).
	protect bool
}

// estKey is what a runtime estimate depends on besides the history and
// the job's limit (the cached ratios are scaled to it).
type estKey struct {
	user, class string
	cards       int
}

// estEntryOf returns the cached estimate of the job's user, class and
// card count, current: kept across cycles for as long as the history
// would answer the same, and scaled to a job's limit by Ratios.Of.
func (h *Huitian) estEntryOf(j *model.Job) *estEntry {
	if h.est == nil {
		h.est = map[estKey]*estEntry{}
	}
	key := estKey{j.User, j.Class, j.Cards}
	e := h.est[key]
	if e == nil {
		e = &estEntry{}
		h.est[key] = e
		h.estimate(e, j)
	}
	return h.fresh(e, j)
}

// fresh returns e, the cache entry of j's user, class and card count
// (found in h.est, or kept by a running job's runEst or a queued job's
// memo), up to date with the history. An entry read earlier in this plan
// is: the history changes only between plans (Observe); so is one read in
// the last plan when the history has not changed since (histSame: a cycle
// that only took arrivals), without its token read.
//
// An entry the history has moved past is computed again once for its key:
// a kept entry that a sweep dropped from h.est (it was still right, so a
// running job or a queued job kept it) goes back into h.est, or gives way
// to the entry there, which it equals once both are current. Without
// this, every job that kept a dropped entry computed its own copy each
// plan: at 65,536 cards, 4,000–10,000 estimates a plan for about 1,000
// keys.
func (h *Huitian) fresh(e *estEntry, j *model.Job) *estEntry {
	if e.used == h.estPlan || e.used+1 == h.estPlan && h.histSame {
		e.used = h.estPlan
		return e
	}
	if !h.mem.hist.Current(e.tok) {
		key := estKey{j.User, j.Class, j.Cards}
		if m := h.est[key]; m != nil && m != e {
			return h.fresh(m, j)
		} else if m == nil {
			h.est[key] = e
		}
		h.estimate(e, j)
	}
	e.used = h.estPlan
	return e
}

// histMark says which history (the window, and how many jobs it was
// given) a cache was last checked against.
type histMark struct {
	w *estimate.Window
	n int
}

// histNow is the history's mark now.
func (h *Huitian) histNow() histMark { return histMark{h.mem.hist, h.mem.hist.Len()} }

// estimate computes e for j's user, class and card count.
func (h *Huitian) estimate(e *estEntry, j *model.Job) {
	r, b, tok := h.mem.hist.EstimateRatios(j.User, j.Class, j.Cards)
	b.Quantile = h.cfg.Quantile
	h.estVer++
	*e = estEntry{ratios: r, basis: b, tok: tok, ver: h.estVer}
}

// runKey is a running job as Huitian.runList keeps it: what its
// distribution (runEst, in runVals at the same index: a function of
// these and of the entry's computation) was computed from. One cache
// line: at 65,536 cards the 28,000 running jobs' keys are read every
// cycle. Read with their distributions, out of cache, they took 11 ms a
// cycle; read by their first cards, in no order, about 4 ms, and their
// distributions about as much again (CPU profiles of bench's 65,536 /
// 20,000).
type runKey struct {
	user, class string
	entry       *estEntry // the cache entry the distribution was scaled from
	ver         uint64    // the entry's computation it was scaled from (estEntry.ver)
	limit       time.Duration
	cards       int32 // the job's cards; one past int32 never matches
}

// runEst is a running job's distribution as the cycle that last
// computed it left it.
type runEst struct {
	dist estimate.Dist
	own  bool // the estimate rests on the user's own history (Basis.Own)
}

// runningDist finds running job i's runtime distribution and writes it,
// with its key, to the next lists: the last cycle's (from *cur on, else
// by its first card) when that holds the same user, class, card count
// and limit (brought up to date when the history moved, with no token
// read when sameHist), else estEntryOf's.
// Every running job asks every cycle, and most of an estimate's cost
// was the map lookup and the scaling to the limit. sameHist says the
// history is the one the last cycle's entries were current with.
func (c *cycle) runningDist(i int, sameHist bool, cur *int) {
	h, j := c.h, &c.s.Running[i].Job
	first := int32(c.runCards[i][0]) // a valid snapshot's running jobs hold cards (newCycle checks)
	h.runFirstsNext = append(h.runFirstsNext, first)
	if k := h.lastRun(first, cur); k >= 0 {
		h.runFirsts[k] = -1
		rk := h.runList[k]
		if rk.user == j.User && rk.class == j.Class && int(rk.cards) == j.Cards && rk.limit == j.TimeLimit {
			h.runListNext = append(h.runListNext, rk)
			h.runValsNext = append(h.runValsNext, h.runVals[k])
			if !sameHist {
				// The history moved: the same entry, brought up to date (once
				// a plan, however many jobs share it) without looking
				// it up again. The distribution stays while the entry
				// holds the computation it was scaled from: tokens are
				// read per entry, not per job.
				if e := h.fresh(rk.entry, j); e != rk.entry || e.ver != rk.ver {
					h.setRunEst(len(h.runListNext)-1, j, e)
				}
			}
			return
		}
	}
	h.runListNext = append(h.runListNext, runKey{})
	h.runValsNext = append(h.runValsNext, runEst{})
	h.setRunEst(len(h.runListNext)-1, j, h.estEntryOf(j))
}

// lastRun returns the index in the last cycle's lists of the running job
// on first card first, -1 when none is left: looked for from *cur on
// (past the jobs that ended since), then by the card.
func (h *Huitian) lastRun(first int32, cur *int) int {
	for k := *cur; k < len(h.runFirsts) && k < *cur+lookAhead; k++ {
		if h.runFirsts[k] == first {
			*cur = k + 1
			return k
		}
	}
	if k := int(h.runAt[first]); k >= 0 && k < len(h.runFirsts) && h.runFirsts[k] == first {
		return k
	}
	return -1
}

// endRunLists makes the lists runningDist wrote the next cycle's. Every
// entry in them was read, and brought up to date, by this cycle: a
// cancelled cycle's lists hold the jobs it read, and the next cycle
// finds the others anew.
func (h *Huitian) endRunLists() {
	h.runList, h.runListNext = h.runListNext, h.runList[:0]
	h.runFirsts, h.runFirstsNext = h.runFirstsNext, h.runFirsts[:0]
	h.runVals, h.runValsNext = h.runValsNext, h.runVals[:0]
	for k, f := range h.runFirsts {
		h.runAt[f] = int32(k)
	}
	h.runListHist = h.histNow()
}

// runningEst returns running job i's runtime distribution (runningDist).
func (c *cycle) runningEst(i int) *runEst { return &c.h.runVals[i] }

// setRunEst makes the next lists' entry k j's, from its current cache
// entry e.
func (h *Huitian) setRunEst(k int, j *model.Job, e *estEntry) {
	h.runListNext[k] = runKey{user: j.User, class: j.Class, cards: int32(j.Cards), limit: j.TimeLimit, entry: e, ver: e.ver}
	h.runValsNext[k] = runEst{dist: e.ratios.Of(j.TimeLimit.Seconds()), own: e.basis.Own()}
}

// sweepEstimates starts a plan's use of the estimate cache: it counts the
// plan and, when the cache has doubled since the last sweep, drops the
// entries that are stale or that the last plan did not read, so
// that the cache follows the queue rather than every job ever seen.
func (h *Huitian) sweepEstimates() {
	h.estPlan++
	now := h.histNow()
	h.histSame, h.histPlan = now == h.histPlan, now
	if len(h.est) <= 2*h.estKept+1024 {
		return
	}
	for k, e := range h.est {
		if e.used+1 < h.estPlan || !h.mem.hist.Current(e.tok) {
			delete(h.est, k)
		}
	}
	h.estKept = len(h.est)
}

// resized returns *buf with length n, its contents unspecified, and keeps
// it in *buf: a new array only when the old one is too short.
func resized[T any](buf *[]T, n int) []T {
	if cap(*buf) < n {
		*buf = make([]T, n, n+n/4) // room to grow: queues and running lists vary a little each cycle
	}
	*buf = (*buf)[:n]
	return *buf
}

func ceilSec(v float64) int64 {
	if v <= 0 {
		return 0
	}
	return int64(math.Ceil(v - 1e-9))
}

// PlanCards is Plan for a caller that holds the running jobs' cards as
// the layout's dense card numbers, as baseline.Planner.PlanCards takes
// them (sim.CardsPlanner).
func (h *Huitian) PlanCards(ctx context.Context, s *model.Snapshot, cards [][]int) (*model.Decision, error) {
	if err := baseline.CheckCards(s, cards); err != nil {
		return nil, err
	}
	return h.plan(ctx, s, cards, true)
}

// ReservationNumbers are the card numbers of reservation k of the last
// decision PlanCards made, sorted, read only. A flat machine's head
// reservation names its count alone and leaves its numbers unread until
// asked (baseline.Prepared.LazyClaims): they are read out now. Valid until
// the next plan; nil for a reservation that names its cards by reference.
func (h *Huitian) ReservationNumbers(k int) []int {
	c := &h.cyc
	if c.d == nil || k < 0 || k >= len(c.d.Reservations) {
		return nil
	}
	if nums := c.d.Reservations[k].CardNumbers; nums != nil || c.d.Reservations[k].Cards != nil {
		return nums
	}
	if k < len(c.core.ReservationCards) {
		return c.core.ClaimCards(k)
	}
	return nil
}

// Plan plans one cycle, in the phases solver/README.md draws.
func (h *Huitian) Plan(ctx context.Context, s *model.Snapshot) (*model.Decision, error) {
	return h.plan(ctx, s, nil, false)
}

// plan is Plan with the running jobs' cards given (PlanCards), or nil to
// resolve them from their references; numbers says the starts name their
// cards by number alone (PlanCards' caller reads them so).
func (h *Huitian) plan(ctx context.Context, s *model.Snapshot, cards [][]int, numbers bool) (*model.Decision, error) {
	c, candidates, err := h.toBackfill(ctx, s, cards, numbers)
	if err != nil {
		return nil, err
	}
	// 6. Backfill beyond EASY: the LP places what it can, a greedy pass
	// the remainder, both with one admission rule.
	c.backfillBeyond(ctx, candidates)
	if err := cancelled(ctx); err != nil {
		return nil, err
	}
	// 7. Estimated starts of waiting jobs, from the same model, as far as
	// the budget allows: a brief plan lists no waiting job.
	if !s.Options.Brief {
		c.estimateStarts(ctx)
		c.sortPending()
	}
	c.d.ReplanBy = c.replanBy()
	return c.d, nil
}

// toBackfill sets a cycle up and runs Plan's phases 1 to 5: what the
// backfill beyond EASY starts from, and the candidates it considers.
// cards is the running jobs' cards as PlanCards takes them, or nil;
// numbers is plan's.
func (h *Huitian) toBackfill(ctx context.Context, s *model.Snapshot, cards [][]int, numbers bool) (*cycle, []int, error) {
	h.sweepEstimates()
	c, err := h.newCycle(ctx, s, cards, numbers)
	if err != nil {
		return nil, nil, err
	}
	// 1. The guarantee: EASY's decision on the time limits, and whether
	// making backfill jobs yield starts the head markedly earlier.
	core, planned, tell, err := c.guarantee(sooner(ctx, h.cfg.GuaranteeShare))
	if err != nil {
		return nil, nil, err
	}
	if err := cancelled(ctx); err != nil {
		return nil, nil, err
	}
	// 2. Load the predicted profile: each running job holds its cards
	// until the Quantile of its remaining time, a job told to yield until
	// it must have. On a flat machine, the guarantee's free cards.
	c.flat = c.flatFor(len(core.Reservations))
	if err := c.load(ctx, planned); err != nil {
		return nil, nil, err
	}
	// Room for the guarantee's starts and for as many beyond it as most
	// cycles make; a cycle that starts more grows the list (a cap of
	// every free card allocated for one start). Grown from 16 instead,
	// at 65,536 cards the list's copies were a twelfth of what a plan
	// allocates.
	c.d.Starts = make([]model.Start, 0, len(core.Starts)+min(len(s.Queued)-len(core.Starts), c.freeCount(), 16))
	// The entries are made in a buffer of the planner's and copied out in
	// queue order by sortPending: one list of a deep queue's per cycle.
	if !s.Options.Brief {
		c.d.Pending = resized(&h.pendBuf, len(s.Queued))[:0]
	}
	// 3. Main pass and EASY's backfill: every start of the guarantee.
	c.applyStarts(core)
	// 4. Reservations on EASY's cards, and the preemptions they need.
	if err := c.applyReservations(core, tell); err != nil {
		return nil, nil, err
	}
	if err := cancelled(ctx); err != nil {
		return nil, nil, err
	}
	// 5. Classify the idle capacity left.
	candidates := c.candidates()
	c.classify(candidates)
	return c, candidates, nil
}

// queuedJob is a queued job's estimate, once a phase of cycle number
// cycle asked for it: the buffer is kept across cycles and not cleared
// (20,000 queued jobs' estimates are 4.6 MB).
type queuedJob struct {
	est   jobEst
	cycle uint64
}

// queuedEst is the estimate of queued job k (its index in s.Queued),
// looked up once a cycle: the guarantee's order, the shortest-first order
// and the backfill pass each ask for nearly every job.
func (c *cycle) queuedEst(k int) jobEst {
	q := &c.queued[k]
	if q.cycle != c.no {
		e := c.queuedEntry(k)
		q.est, q.cycle = jobEst{e.ratios.Of(c.s.Queued[k].TimeLimit.Seconds()), e.basis}, c.no
	}
	return q.est
}

// queuedMed is queuedEst(k).dist.Quantile(0.5), without making the
// distribution when no phase asked for it yet this cycle: the
// shortest-first order reads the median of every candidate, the rest of
// a plan the distributions of a few.
func (c *cycle) queuedMed(k int) float64 {
	if q := &c.queued[k]; q.cycle == c.no {
		return q.est.dist.Quantile(0.5)
	}
	return c.queuedEntry(k).ratios.Median(c.s.Queued[k].TimeLimit.Seconds())
}

// queuedEntry is queued job k's estimate cache entry, brought up to date
// with the history.
func (c *cycle) queuedEntry(k int) *estEntry {
	j, m := &c.s.Queued[k], &c.memo[k]
	e := m.entry
	if e == nil {
		e = c.h.estEntryOf(j)
		*m = queuedMemo{id: j.ID, user: j.User, class: j.Class, cards: j.Cards, entry: e, tags: m.tags}
	} else {
		e = c.h.fresh(e, j)
		m.entry = e
	}
	return e
}

// queuedMemo is a queued job's estimate cache entry as a cycle found it
// (entry nil: not asked).
type queuedMemo struct {
	id, user, class string
	cards           int
	entry           *estEntry
	tags            memberTags
}

// memberTags is a queued job's membership in the memory's maps, as read
// when memory.marks was mark-1 (0: never read).
type memberTags struct {
	mark      uint64
	reserved  bool   // in firstReserved: it holds a head's promise
	preempted bool   // back in the queue after a preemption
	target    bool   // a job yielded its cards for it (a yieldedFor value)
	yf        string // the job it yielded its cards for, if any
}

// any says whether the job holds any membership.
func (t *memberTags) any() bool { return t.reserved || t.preempted || t.target || t.yf != "" }

// matchQueued finds each queued job in the last cycle's memo, walking both
// in order: a job keeps its entry while its user, class and card count
// are the same. Between two cycles jobs leave the queue (a run of them
// widens the search) and arrive (mostly at its end), so each is found in
// a few comparisons or, new, after a short search. Past maxMisses jobs in
// a row not found (a queue sent in another order, as a resource manager
// listing its jobs from a hash map would; or many arrivals) the rest are
// looked up by id among the entries not taken: the widening search alone
// would be quadratic in the queue.
func (c *cycle) matchQueued() {
	h, q := c.h, c.s.Queued
	last := h.memo
	next := resized(&h.memoNext, len(q))
	var byID map[string]int
	m, misses := 0, 0
	missed := h.missed[:0]
	// The jobs whose tags may name a membership: those carried with one,
	// and those whose tags are stale (new jobs, or every job once the
	// memory's maps changed) — behindTheirHeads reads only these.
	mark := h.mem.marks + 1
	tagged := h.tagged[:0]
	for k := range q {
		j := &q[k]
		// The id is kept even for a job not asked, so that the next
		// cycle's walk finds it.
		next[k] = queuedMemo{id: j.ID}
		x := -1
		if byID != nil {
			if y, ok := byID[j.ID]; ok {
				x = y
			}
		} else {
			end := min(len(last), m+lookAhead*(1+misses))
			for y := m; y < end; y++ {
				if last[y].id == j.ID {
					x = y
					break
				}
			}
		}
		if x >= 0 {
			take(&next[k], &last[x], j)
			m, misses = max(m, x+1), 0
			if t := &next[k].tags; t.mark != mark || t.any() {
				tagged = append(tagged, k)
			}
			continue
		}
		// Not found (yet): its tags are stale, whatever byID finds later.
		tagged = append(tagged, k)
		if byID != nil {
			continue
		}
		missed = append(missed, int32(k))
		if misses++; misses > maxMisses {
			// The entries not taken yet (taken ones lose their id: a
			// job id is never empty), and every job missed so far. The
			// map is kept from cycle to cycle, its room with it: grown
			// afresh, its rehashing was 6% of a huitian plan at 65,536
			// cards and 20,000 queued, where a thousand arrivals a
			// cycle come to it.
			if h.memoIDs == nil {
				h.memoIDs = make(map[string]int, len(last)-m)
			}
			byID = h.memoIDs
			clear(byID)
			for y := range last {
				if last[y].id != "" {
					byID[last[y].id] = y
				}
			}
			for _, b := range missed {
				if y, ok := byID[q[b].ID]; ok {
					take(&next[b], &last[y], &q[b])
				}
			}
		}
	}
	h.missed = missed
	h.memo, h.memoNext = next, last
	c.memo = next
	h.tagged, c.tagged = tagged, tagged
}

// take gives job j the entry the last cycle held for it, while its user,
// class and card count are the same, and its membership tags (of its id
// alone), and marks the last cycle's record taken (an empty id: the
// buffer becomes the next cycle's).
func take(dst, e *queuedMemo, j *model.Job) {
	if e.entry != nil && e.user == j.User && e.class == j.Class && e.cards == j.Cards {
		*dst = *e
	}
	dst.tags = e.tags
	e.id = ""
}

// lookAhead is how far matchQueued looks down the last cycle's queue for a
// job, per job not found since the last one found (past maxMisses jobs not
// found in a row it looks them up by id), and lastRun down the last
// cycle's running jobs before it asks by card.
const (
	lookAhead = 8
	maxMisses = 32
)

// newCycle begins a plan of s: what every phase reads. cards is the
// running jobs' cards as PlanCards takes them, or nil to resolve them;
// numbers says the starts name their cards by number alone.
func (h *Huitian) newCycle(ctx context.Context, s *model.Snapshot, cards [][]int, numbers bool) (*cycle, error) {
	// The planner's own: one Plan at a time, and nothing of a cycle
	// outlives its Plan (a cycle's worth of allocation every cycle).
	c := &h.cyc
	*c = cycle{
		h: h, s: s, lay: s.Cluster.Layout(), params: h.mem.tuner.Params,
		d:         &model.Decision{Stats: model.Stats{Solver: h.name}},
		startDist: h.startDists[:0],
		remHeld:   h.remHelds[:0],
	}
	c.grace = baseline.OverrunGrace(s)
	// The running jobs' cards, resolved once for the guarantee's plans
	// and the predicted profile, or as PlanCards was given them.
	c.runCards, c.numbers = cards, numbers
	if cards == nil {
		var err error
		if c.runCards, err = h.cards.Resolve(s); err != nil {
			return nil, err
		}
	}
	for i, cards := range c.runCards {
		if len(cards) == 0 {
			return nil, fmt.Errorf("%w: running[%d].cards: a running job holds at least one card", model.ErrInvalid, i)
		}
	}
	if err := cancelled(ctx); err != nil {
		return nil, err
	}
	// Every running job's runtime distribution: the guarantee asks
	// whether backfill jobs end soon, the predicted profile holds every
	// job's cards by it.
	if len(h.runAt) != len(c.lay.Cards) {
		h.runAt = make([]int32, len(c.lay.Cards))
		for k := range h.runAt {
			h.runAt[k] = -1
		}
		h.runList, h.runFirsts, h.runVals = h.runList[:0], h.runFirsts[:0], h.runVals[:0]
	}
	h.cycles++
	c.no = h.cycles
	sameHist := h.runListHist == h.histNow()
	// Sized for every running job at once: grown by appends, the lists'
	// copies were a tenth of a huitian plan at 65,536 cards.
	n := len(s.Running)
	h.runListNext, h.runFirstsNext, h.runValsNext = slices.Grow(h.runListNext[:0], n), slices.Grow(h.runFirstsNext[:0], n), slices.Grow(h.runValsNext[:0], n)
	cur := 0
	for i := range s.Running {
		if err := cancelledEvery(ctx, i); err != nil {
			h.endRunLists()
			return nil, err
		}
		c.runningDist(i, sameHist, &cur)
		if s.Running[i].Kind == model.Backfill {
			c.runBackfill += len(c.runCards[i])
		}
	}
	h.endRunLists()
	c.queued = resized(&h.queueds, len(s.Queued))
	c.matchQueued()
	// EASY's order (the guarantee's) and huitian's differ only by the
	// compensation of requeued jobs: sorted once when none has any.
	plain := h.orders[0].By(s.Queued, nil)
	c.easyOrder = c.behindTheirHeads(plain)
	c.order = c.easyOrder
	for i := range s.Queued {
		if preempt.Compensation(h.cfg.Preempt, s.Queued[i].RequeueCount) > 0 {
			c.order = c.behindTheirHeads(h.queueOrder(s.Queued))
			break
		}
	}
	if err := cancelled(ctx); err != nil {
		return nil, err
	}
	c.pendPos = h.pendPos[:0]
	c.posOf = resized(&h.posOf, len(s.Queued))
	for n, k := range c.order {
		c.posOf[k] = n
	}
	return c, nil
}

// cancelled returns the context's error when the caller cancelled it, nil
// while it runs or when only its deadline (the time budget) passed: past
// the budget a plan returns the best complete decision it has.
func cancelled(ctx context.Context) error {
	if err := ctx.Err(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// cancelEvery is how many running jobs a phase reads between two checks
// of cancellation: at 65,536 cards (28,000 running jobs) setting a cycle
// up and loading the predicted profile took 10–17 ms each unchecked.
const cancelEvery = 1024

// cancelledEvery is cancelled(ctx) at every cancelEvery-th i, else nil.
func cancelledEvery(ctx context.Context, i int) error {
	if i%cancelEvery != cancelEvery-1 {
		return nil
	}
	return cancelled(ctx)
}

// shared is a context whose deadline comes before its parent's; its
// cancellation is the parent's. No timer fires at the earlier deadline:
// the planners read it through baseline.Done.
type shared struct {
	context.Context
	at time.Time
}

func (c shared) Deadline() (time.Time, bool) { return c.at, true }

// sooner returns ctx with its deadline moved to share of the time left
// until it, from now; ctx itself without a deadline, a share of 1 or a
// deadline passed.
func sooner(ctx context.Context, share float64) context.Context {
	dl, ok := ctx.Deadline()
	if !ok || share >= 1 {
		return ctx
	}
	left := time.Until(dl)
	if left <= 0 {
		return ctx
	}
	return shared{ctx, dl.Add(-time.Duration((1 - share) * float64(left)))}
}

// queueOrder: higher effective priority first (priority plus the bounded
// compensation of requeued jobs), then earlier submit, then id.
func (h *Huitian) queueOrder(q []model.Job) []int {
	return h.orders[1].By(q, func(j *model.Job) int { return preempt.Compensation(h.cfg.Preempt, j.RequeueCount) })
}

// load builds the predicted profile: each running job holds its cards
// until the reservation quantile of its remaining time; a backfill job
// told to yield (in yield, by index into s.Running) holds them only until
// it must have.
func (c *cycle) load(ctx context.Context, yield map[int]preempt.Release) error {
	s := c.s
	if c.flat != nil {
		// Only the running jobs as the phases read them: the cards are
		// the guarantee's (flatFor), and a job's release is asked of the
		// jobs the reservation waits for alone (releaseOf).
		c.prof = nil
		c.running = resized(&c.h.runnings, len(s.Running))
		for i := range s.Running {
			c.running[i] = c.runningJobOf(i)
			if rel, ok := yield[i]; ok {
				c.running[i].cap = rel.At.Sub(s.Now).Seconds()
			}
		}
		return nil
	}
	if c.h.prof != nil && c.h.prof.Layout() == c.lay {
		c.h.prof.Reset()
	} else {
		c.h.prof = profile.New(c.lay)
	}
	c.prof = c.h.prof
	c.prof.SetAlignEnds(c.h.alignNow(c.s))
	c.holder = resized(&c.h.holders, len(c.lay.Cards))
	clear(c.holder)
	// Every running job's entry is written below; its distributions are
	// computed when a phase first asks (runningRem): most are never asked.
	c.running = resized(&c.h.runnings, len(s.Running))
	for i := range s.Running {
		if err := cancelledEvery(ctx, i); err != nil {
			return err // the next cycle resets the profile
		}
		rj := c.runningJobOf(i)
		if len(yield) > 0 {
			if rel, ok := yield[i]; ok {
				rj.cap = rel.At.Sub(s.Now).Seconds()
			}
		}
		c.running[i] = rj
		end := max(ceilSec(rj.heldQuantile(c.grace, c.h.cfg.Quantile)), 1)
		c.prof.HoldAll(c.runCards[i], end)
		for _, id := range c.runCards[i] {
			c.holder[id] = runningHolder(i)
		}
	}
	return nil
}

// classify sorts the idle capacity into fragment classes for the
// candidates' smallest multi-card size, and counts idle and backfill cards
// for the tuner.
func (c *cycle) classify(candidates []int) {
	// The counts first: the tuner and the simulator read them.
	c.d.Stats.IdleCards = c.freeCount() + c.runBackfill
	c.d.Stats.BackfillCards += c.runBackfill
	for _, st := range c.d.Starts {
		if st.Kind == model.Backfill {
			c.d.Stats.IdleCards += st.CardCount()
		}
	}
	if c.s.Options.Brief {
		// The inventory and the labels are for people, and a pass over
		// every card (4% of a 200,000-job replay): a brief plan has
		// neither, and with c.classes left the zero Classes its starts
		// beyond EASY name no fragment.
		return
	}
	smallest := 0
	for _, idx := range candidates {
		j := &c.s.Queued[idx]
		if j.Cards > 1 && (smallest == 0 || j.Cards < smallest) {
			smallest = j.Cards
		}
	}
	c.classes = fragment.ClassifyInto(c.prof, baseline.Seconds(c.h.cfg.Horizon), smallest, c.h.fragOf)
	c.h.fragOf = c.classes.Of
	c.d.Fragments = c.classes.Inventory
	idle := 0
	for _, f := range c.classes.Inventory {
		idle += f.Cards
	}
	if idle > 0 { // the list grew card by card: a tenth of a plan on hgx:128
		c.d.Idle = make([]model.IdleCard, 0, idle)
		for id, cl := range c.classes.Of {
			if cl != model.FragmentUnspecified {
				c.d.Idle = append(c.d.Idle, model.IdleCard{Card: c.lay.Ref(id), Class: cl})
			}
		}
	}
}

// backfillBeyond places the candidates EASY did not start: shortest
// predicted runtime first (requeued jobs, with their compensation, ahead),
// through the LP when there is one, then the greedy pass. When the LP runs
// out of time every candidate goes through the greedy pass and the stats
// say so.
func (c *cycle) backfillBeyond(ctx context.Context, candidates []int) {
	s, h := c.s, c.h
	if len(candidates) > 0 && baseline.Done(ctx) != nil {
		// Past the budget already: ordering the candidates (a twentieth
		// of a plan at 20,000 queued) would only make the answer later.
		// Saturated or not, they are cut: those the guarantee's walk did
		// not reach were considered by no one, and saying the queue is
		// saturated would hide the cut from them and from the stats.
		c.d.Stats.Candidates = len(candidates)
		c.cut(candidates)
		return
	}
	if s.Options.Brief && c.saturated() {
		// Every candidate waits, and a brief plan says nothing of them.
		c.d.Stats.Candidates = len(candidates)
		return
	}
	if h.cfg.ShortestFirst {
		keyed := resized(&h.keyed, len(candidates))
		for k, idx := range candidates {
			j := &s.Queued[idx]
			keyed[k] = byMed{preempt.Compensation(h.cfg.Preempt, j.RequeueCount), c.queuedMed(idx), k}
		}
		if c.saturated() {
			candidates = c.firstByMed(candidates, keyed)
		} else {
			slices.SortFunc(keyed, byMed.compare)
			sorted := resized(&h.sorted, len(candidates))
			for k, e := range keyed {
				sorted[k] = candidates[e.k]
			}
			candidates = sorted
		}
	}
	c.d.Stats.Candidates = len(candidates)
	if c.saturated() {
		// The big jobs need every card EASY would give them: lending beyond
		// it when the queue is saturated delays them (KTH-SP2 on 80
		// processors: largest class p95 +9%).
		for _, idx := range candidates {
			c.backfillSaturated(idx)
		}
		return
	}
	if h.lp != nil && len(candidates) > 0 {
		if baseline.Done(ctx) != nil {
			// Past the budget already: the LP would not finish.
			c.d.Stats.Fallback = true
		} else {
			rest, fallback := c.placeLP(ctx, candidates)
			c.d.Stats.Fallback = c.d.Stats.Fallback || fallback
			candidates = rest
		}
	}
	// The greedy pass, as far as the budget allows: the guarantee's starts
	// and reservations are in already, so a cut here only backfills less.
	for k, idx := range candidates {
		if baseline.Done(ctx) != nil {
			c.cut(candidates[k:])
			return
		}
		c.backfill(idx)
	}
}

// cut leaves the candidates unconsidered: the budget ran out.
func (c *cycle) cut(candidates []int) {
	c.d.Stats.Fallback = true
	c.d.Stats.BudgetCut += len(candidates)
	for _, idx := range candidates {
		c.pending(idx, model.PendingResources, "not considered this cycle: the planner's time budget ran out")
	}
}

// byMed is a backfill candidate's place in the shortest-first order:
// requeued jobs (by compensation) first, then by predicted median
// runtime, then in queue order (k, its position among the candidates).
type byMed struct {
	comp int
	med  float64
	k    int
}

func (a byMed) compare(b byMed) int {
	if x := cmp.Compare(b.comp, a.comp); x != 0 {
		return x
	}
	if x := cmp.Compare(a.med, b.med); x != 0 {
		return x
	}
	return cmp.Compare(a.k, b.k)
}

// firstByMed orders the candidates of a saturated queue, which all wait
// (backfillSaturated), as far as the order shows: the pending list is put
// in queue order at the end (sortPending), and only estimateStarts reads
// it before, for the first PendingEstimates waiting jobs that can ever
// fit, in the order they were added. Those come first, in the
// shortest-first order, then the rest in queue order: the decision is
// the one a sort of every candidate gives, without sorting a deep queue
// every cycle (a tenth of a plan at 5,000 queued on 1,024 cards).
func (c *cycle) firstByMed(candidates []int, keyed []byMed) []int {
	need := c.h.cfg.PendingEstimates
	top := make([]byMed, 0, max(need, 0)+1)
	for _, e := range keyed {
		if need <= 0 || !c.canEverFit(profile.RequestOf(&c.s.Queued[candidates[e.k]])) {
			continue
		}
		if len(top) == need && e.compare(top[need-1]) >= 0 {
			continue
		}
		i, _ := slices.BinarySearchFunc(top, e, byMed.compare)
		top = slices.Insert(top, i, e)
		if len(top) > need {
			top = top[:need]
		}
	}
	out := make([]int, 0, len(candidates))
	first := make([]bool, len(candidates))
	for _, e := range top {
		out = append(out, candidates[e.k])
		first[e.k] = true
	}
	for k, idx := range candidates {
		if !first[k] {
			out = append(out, idx)
		}
	}
	return out
}

// backfillSaturated records why a candidate waits while the queue is
// saturated.
func (c *cycle) backfillSaturated(k int) {
	j := &c.s.Queued[k]
	req := profile.RequestOf(j)
	switch {
	case !c.canEverFit(req):
		c.pending(k, model.PendingNeverFits, "the cluster's usable cards can never hold "+req.String())
	case j.Backfill == model.BackfillOptOut:
		c.pending(k, model.PendingOptOut, c.optOutMsg.of("opted out of backfill: waits behind ", c.waiting, ""))
	default:
		c.pending(k, model.PendingPriority, c.saturatedMsg.of("the queue is saturated: no backfill beyond EASY's while ", c.waiting, " waits"))
	}
}

// pending records why queued job k waits. Messages are built by
// concatenation where a deep queue makes them often.
func (c *cycle) pending(k int, r model.PendingReason, msg string) {
	id := c.s.Queued[k].ID
	c.addPending(k, model.Pending{JobID: id, Reason: r, Message: msg})
	if c.waiting == "" && r != model.PendingNeverFits {
		c.waiting = id
	}
}

// addPending records p, the pending entry of queued job k (none in a
// brief plan).
func (c *cycle) addPending(k int, p model.Pending) {
	if c.s.Options.Brief {
		return
	}
	c.d.Pending = append(c.d.Pending, p)
	c.pendPos = append(c.pendPos, c.posOf[k])
}

// sortPending puts the waiting jobs in queue order.
func (c *cycle) sortPending() {
	made := c.d.Pending
	c.d.Pending = baseline.ByPosition(made, c.pendPos, len(c.s.Queued))
	c.h.pendBuf, c.h.pendPos = made[:0], c.pendPos[:0] // the next cycle's buffers
}

func (c *cycle) at(t int64) time.Time { return c.s.Now.Add(time.Duration(t) * time.Second) }

// startSpec is what a start records besides the job and its cards.
type startSpec struct {
	hold   int64 // seconds the cards are held in the predicted profile
	kind   model.AllocKind
	frag   model.FragmentClass
	reason string
	// refs, when not nil, are the cards' references as the guarantee's
	// decision gave them (read-only, as every decision's slices).
	refs []model.CardRef
	risk risk // zero for a start no reservation can claim
	// windowEnd, for a job admitted on its predicted runtime into cards a
	// reservation claims, is when it must have ended: past it, it yields
	// (requeued if it cannot checkpoint) once its cards start that job.
	windowEnd int64
	// guaranteed: a start of the guarantee's (applyStarts).
	guaranteed bool
}

// start records a start on cards held for sp.hold seconds in the profile.
func (c *cycle) start(j *model.Job, cards []int, e jobEst, sp startSpec) {
	k := len(c.d.Starts)
	if f := c.flat; f != nil {
		// The guarantee's starts are its pool's already.
		if sp.guaranteed {
			f.holds = append(f.holds, sp.hold)
		} else {
			f.take(cards)
		}
	} else {
		if err := c.prof.Reserve(cards, 0, sp.hold); err != nil {
			panic(fmt.Sprintf("solver: start of %s: %v", j.ID, err)) // FitNow just placed them
		}
		for _, id := range cards {
			c.holder[id] = startedHolder(k)
		}
	}
	c.startDist = append(c.startDist, e.dist)
	c.h.startDists = c.startDist // grown: the next cycle's buffer
	st := model.Start{
		JobID: j.ID, CardNumbers: cards, Kind: sp.kind, Fragment: sp.frag, Reason: sp.reason,
		PreemptProb: sp.risk.prob, Unbounded: !sp.risk.claimed,
	}
	if !c.numbers {
		st.Cards = sp.refs
		if st.Cards == nil {
			st.Cards = c.lay.Refs(cards)
		}
	}
	if sp.risk.claimed {
		st.ExpectedRetention = time.Duration(sp.risk.claim.Mean() * float64(time.Second))
	}
	if sp.windowEnd > 0 {
		st.WindowEnd = c.at(sp.windowEnd)
	}
	if sp.kind == model.Backfill {
		prot := c.params.ProtectFraction * e.dist.Quantile(0.5)
		st.ProtectedUntil = c.at(max(ceilSec(prot), 1))
		c.d.Stats.BackfillCards += len(cards)
	}
	c.d.Starts = append(c.d.Starts, st)
}

// runningJob is what load read of a running job, and its remaining time
// once a phase asked for it (runningRem).
type runningJob struct {
	total                         *estimate.Dist // its runtime estimate (in cycle.runEst)
	limit, elapsed, progress, cap float64        // seconds but progress; cap: when it must have yielded (+Inf: never)
	remAt                         int32          // 1 + its index in cycle.remHeld once computed, else 0
}

// remHeld is a running job's remaining time if left to run, and as held
// (capped where it was told to yield): few jobs a cycle are asked, and a
// deep cluster's every running job is written each cycle.
type remHeld struct{ rem, held estimate.Dist }

// runningJobOf is running job i as the snapshot and its estimate give
// it, told to yield nowhere (cap +Inf).
func (c *cycle) runningJobOf(i int) runningJob {
	r := &c.s.Running[i]
	return runningJob{total: &c.runningEst(i).dist, limit: r.Job.TimeLimit.Seconds(),
		elapsed: baseline.Elapsed(c.s.Now, r.Start).Seconds(), progress: r.Progress, cap: math.Inf(1)}
}

// overrun says whether the job is past its limit: it is then taken to
// end a grace from now, whatever the history says.
func (rj *runningJob) overrun() bool { return rj.limit-rj.elapsed <= 0 }

// heldQuantile is the quantile p of the job's remaining time as held,
// without the whole distribution (estimate.RemainingQuantile).
func (rj *runningJob) heldQuantile(grace int64, p float64) float64 {
	if rj.overrun() {
		held := estimate.Point(float64(grace)).Cap(rj.cap)
		return held.Quantile(p)
	}
	return estimate.RemainingQuantile(rj.total, rj.limit, rj.elapsed, rj.progress, rj.cap, p)
}

// remaining is the job's remaining time if left to run: a grace from now
// once past its limit.
func (rj *runningJob) remaining(grace int64) estimate.Dist {
	if rj.overrun() {
		return estimate.Point(float64(grace))
	}
	return estimate.Remaining(*rj.total, rj.limit, rj.elapsed, rj.progress)
}

// runningRem returns running job i's remaining time if left to run, and
// as held in the predicted profile (capped where it was told to yield).
func (c *cycle) runningRem(i int) (rem, held estimate.Dist) {
	rj := &c.running[i]
	if rj.remAt == 0 {
		rh := remHeld{rem: rj.remaining(c.grace)}
		rh.held = rh.rem.Cap(rj.cap)
		c.remHeld = append(c.remHeld, rh)
		c.h.remHelds = c.remHeld // grown: the next cycle's buffer
		rj.remAt = int32(len(c.remHeld))
	}
	rh := &c.remHeld[rj.remAt-1]
	return rh.rem, rh.held
}

// releaseDist is the distribution of when a holder's cards are free.
func (c *cycle) releaseDist(hd holder) estimate.Dist {
	if i, ok := hd.running(); ok {
		_, held := c.runningRem(i)
		return held
	}
	k, _ := hd.started()
	return c.startDist[k]
}

// holdersOf lists the jobs holding cards, each once, in the order their
// first card comes (the list is c.seenBuf's, good until the next call).
// They are mostly few (a reservation's cards are held by a few jobs,
// neighbours mostly by the same one), so a list, and a map past a few
// dozen; a flat machine's head names tens of thousands of cards.
func (c *cycle) holdersOf(cards []int) []holder {
	seen := c.seenBuf[:0]
	var many map[holder]bool
	for _, id := range cards {
		hd := c.holder[id]
		if hd == 0 || len(seen) > 0 && seen[len(seen)-1] == hd {
			continue
		}
		if many != nil && many[hd] || many == nil && slices.Contains(seen, hd) {
			continue
		}
		seen = append(seen, hd)
		if many != nil {
			many[hd] = true
		} else if len(seen) > 32 {
			many = make(map[holder]bool, 2*len(seen))
			for _, x := range seen {
				many[x] = true
			}
		}
	}
	c.seenBuf = seen
	return seen
}

// startDistBy is the distribution of when the cards the jobs hs hold
// (holdersOf) are all free: the maximum of their release times.
func (c *cycle) startDistBy(hs []holder) estimate.Dist {
	ds := c.h.maxOf[:0]
	defer func() { c.h.maxOf = ds[:0] }()
	for _, hd := range hs {
		ds = append(ds, c.releaseDist(hd))
	}
	return estimate.MaxOf(ds)
}
