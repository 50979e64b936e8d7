package solver

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
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
	// Quantile is where reservations are placed in the distribution of
	// their start, and how long running jobs are assumed to hold their
	// cards (default 0.8).
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
	// StickySlack: the head keeps last cycle's reserved cards unless other
	// cards start it more than this much earlier (default 15 min).
	StickySlack time.Duration
	// ShortestFirst orders backfill candidates by predicted median runtime,
	// shortest first, as EASY++ does (default true); false keeps queue order.
	ShortestFirst bool
}

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{
		Tune: tune.Defaults(), Preempt: preempt.Defaults(),
		Quantile: 0.8, Depth: 1, PendingEstimates: 16, Horizon: 24 * time.Hour, ShortestFirst: true,
		SuspendMaxProb: 0.5, StickySlack: 15 * time.Minute,
	}
}

// Huitian is the huitian planner: runtime distributions learned from
// history, reservations at a quantile of their start, safe and suspendable
// backfill with a bounded preemption probability, protection, preemption
// and a self-tuning controller. Backfill candidates are placed by a Placer;
// NewHuitianGreedy places them greedily by best fit.
//
// A Huitian is a Learner: its memory changes only through Observe and
// Decided, so Plan is a function of the snapshot and that memory. It is
// not safe for concurrent use.
type Huitian struct {
	name string
	cfg  Config
	mem  memory
	lp   lp.Solver // nil: greedy placement

	// est caches estimates while the history has estAt jobs: a cache of a
	// pure function of the memory, so Plan stays a function of its inputs.
	est   map[estKey]jobEst
	estAt int
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
	return &Huitian{name: "huitian-greedy", cfg: cfg, mem: newMemory(cfg)}
}

// cycle is the working state of one Plan call.
type cycle struct {
	h      *Huitian
	s      *model.Snapshot
	prof   *profile.Profile
	lay    *model.Layout
	params tune.Params
	d      *model.Decision

	// holder[c] is who holds card c now: a running job (≥ 0, index into
	// s.Running), a job started this cycle (-2-k, index k into starts), or
	// nobody (-1).
	holder    []int
	runDist   []estimate.Dist // remaining time of running jobs, as held in the profile
	runRem    []estimate.Dist // remaining time of running jobs, if left to run
	startDist []estimate.Dist // runtime of jobs started this cycle
	resv      []resv
	classes   fragment.Classes
	waiting   string
	grace     int64
	byID      map[string]int
	posOf     map[*model.Job]int // queue position of each queued job
	pendPos   []int              // queue position of each pending entry
	cardScale float64            // mean cards of this cycle's LP candidates (value's unit)
}

type jobEst struct {
	dist  estimate.Dist
	basis estimate.Basis
}

type resv struct {
	job   *model.Job
	t     int64
	cards []int
	s     estimate.Dist // start-time distribution: max(reserved time, cards free)
	conf  float64       // P(cards free by the reserved time)
	// survive is the probability that no backfill job placed on its cards
	// this cycle (that cannot checkpoint) still runs when it starts.
	survive float64
}

// estKey is what a runtime estimate depends on besides the history.
type estKey struct {
	user, class string
	cards       int
	limit       time.Duration
}

// estimateOf returns a job's runtime distribution, cached across cycles
// for as long as the history does not change.
func (h *Huitian) estimateOf(_ *cycle, j *model.Job) jobEst {
	if n := h.mem.hist.Len(); n != h.estAt || h.est == nil {
		h.est, h.estAt = map[estKey]jobEst{}, n
	}
	key := estKey{j.User, j.Class, j.Cards, j.TimeLimit}
	if e, ok := h.est[key]; ok {
		return e
	}
	d, b := h.mem.hist.Estimate(j)
	b.Quantile = h.cfg.Quantile
	e := jobEst{d, b}
	h.est[key] = e
	return e
}

func ceilSec(v float64) int64 {
	if v <= 0 {
		return 0
	}
	return int64(math.Ceil(v - 1e-9))
}

// Plan plans one cycle.
func (h *Huitian) Plan(ctx context.Context, s *model.Snapshot) (*model.Decision, error) {
	c := &cycle{
		h: h, s: s, lay: s.Cluster.Layout(), params: h.mem.tuner.Params,
		d: &model.Decision{Stats: model.Stats{Solver: h.name}},
	}
	c.grace = baseline.Seconds(s.Options.OverrunGrace)
	if c.grace == 0 {
		c.grace = baseline.Seconds(model.DefaultOverrunGrace)
	}
	if err := c.load(keepAll); err != nil {
		return nil, err
	}
	// Every job starts or waits: room for both up front, not by doubling
	// (a Start is large, and a big plan has thousands).
	c.d.Starts = make([]model.Start, 0, min(len(s.Queued), c.prof.FreeCount()))
	c.d.Pending = make([]model.Pending, 0, len(s.Queued))
	depth := s.Options.ReservationDepth
	if depth <= 0 {
		depth = h.cfg.Depth
	}
	order := h.queueOrder(s.Queued)
	c.posOf = make(map[*model.Job]int, len(order))
	for n, k := range order {
		c.posOf[&s.Queued[k]] = n
	}
	// 1. Main pass: start jobs in queue order while they fit.
	i := 0
	for ; i < len(order); i++ {
		j := &s.Queued[order[i]]
		req := profile.RequestOf(j)
		if !c.prof.CanEverFit(req) {
			c.pending(j, model.PendingNeverFits, "the cluster's usable cards can never hold "+req.String())
			continue
		}
		e := h.estimateOf(c, j)
		hold := max(ceilSec(e.dist.Quantile(h.cfg.Quantile)), 1)
		cards, out := c.prof.FitNow(hold, req)
		if out != profile.Fits {
			break
		}
		c.start(j, cards, hold, e, model.Regular, model.FragmentFree, "fits now in queue order", 0, estimate.Dist{}, false)
	}
	// 2. Reserve for the first blocked jobs; preempt where a reservation
	// is due on cards backfill jobs hold.
	rest := order[i:]
	var backfill []int
	for k, idx := range rest {
		j := &s.Queued[idx]
		req := profile.RequestOf(j)
		if !c.prof.CanEverFit(req) {
			c.pending(j, model.PendingNeverFits, "the cluster's usable cards can never hold "+req.String())
			continue
		}
		if len(c.resv) >= depth {
			backfill = append(backfill, rest[k:]...)
			break
		}
		c.reserve(j)
	}
	// 3. Classify the idle capacity the reservations leave.
	smallest := 0
	for _, idx := range backfill {
		j := &s.Queued[idx]
		if j.Cards > 1 && (smallest == 0 || j.Cards < smallest) {
			smallest = j.Cards
		}
	}
	c.classes = fragment.Classify(c.prof, baseline.Seconds(h.cfg.Horizon), smallest)
	c.d.Fragments = c.classes.Inventory
	c.d.Stats.IdleCards = len(c.prof.FreeCards())
	for _, r := range s.Running {
		if r.Kind == model.Backfill {
			c.d.Stats.IdleCards += len(r.Cards)
			c.d.Stats.BackfillCards += len(r.Cards)
		}
	}
	// 4. Backfill the rest: the LP places what it can, a greedy pass the
	// remainder. When the LP runs out of time, the whole cycle is planned
	// again greedily and the stats say so.
	if h.cfg.ShortestFirst {
		// Shortest predicted runtime first (ties: queue order), as EASY++.
		type byMed struct {
			med float64
			k   int // position in queue order: the tie-break
		}
		keyed := make([]byMed, len(backfill))
		for k, idx := range backfill {
			e := h.estimateOf(c, &s.Queued[idx])
			keyed[k] = byMed{e.dist.Quantile(0.5), k}
		}
		slices.SortFunc(keyed, func(a, b byMed) int {
			if x := cmp.Compare(a.med, b.med); x != 0 {
				return x
			}
			return cmp.Compare(a.k, b.k)
		})
		sorted := make([]int, len(backfill))
		for k, e := range keyed {
			sorted[k] = backfill[e.k]
		}
		backfill = sorted
	}
	c.d.Stats.Candidates = len(backfill)
	if h.lp != nil && len(backfill) > 0 {
		// Out of budget (or a solver failure), the LP placed nothing and
		// every candidate goes through the greedy pass: the greedy decision,
		// and the stats say so.
		rest, fallback := c.placeLP(ctx, backfill)
		c.d.Stats.Fallback = fallback
		backfill = rest
	}
	for _, idx := range backfill {
		c.backfill(&s.Queued[idx])
	}
	// 5. Estimated starts of waiting jobs, from the same model.
	c.estimateStarts()
	c.sortPending()
	return c.d, nil
}

// queueOrder: higher effective priority first (priority plus the bounded
// compensation of requeued jobs), then earlier submit, then id.
func (h *Huitian) queueOrder(q []model.Job) []int {
	order := make([]int, len(q))
	for i := range order {
		order[i] = i
	}
	prio := func(j *model.Job) int { return j.Priority + preempt.Compensation(h.cfg.Preempt, j.RequeueCount) }
	slices.SortFunc(order, func(a, b int) int {
		ja, jb := &q[a], &q[b]
		if c := cmp.Compare(prio(jb), prio(ja)); c != 0 {
			return c
		}
		if c := ja.Submit.Compare(jb.Submit); c != 0 {
			return c
		}
		if c := model.CompareIDs(ja.ID, jb.ID); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	return order
}

// releaseMode says which running backfill jobs the profile lets go early.
type releaseMode uint8

const (
	// keepAll: every job holds its cards until it is expected to end.
	keepAll releaseMode = iota
	// releaseCheckpointable: checkpointable backfill jobs hold them only
	// until they could be suspended (protection end plus notice).
	releaseCheckpointable
	// releaseAll: also backfill jobs that cannot checkpoint (requeue), for
	// a reserved job past the threshold.
	releaseAll
)

// load builds the profile: each running job holds its cards until the
// reservation quantile of its remaining time; with a release mode, a
// backfill job that may be preempted holds them only until it could be
// made to yield.
func (c *cycle) load(mode releaseMode) error {
	s := c.s
	c.prof = profile.New(c.lay)
	c.holder = make([]int, len(c.lay.Cards))
	for i := range c.holder {
		c.holder[i] = -1
	}
	c.runDist = make([]estimate.Dist, len(s.Running))
	c.runRem = make([]estimate.Dist, len(s.Running))
	for i := range s.Running {
		r := &s.Running[i]
		e := c.h.estimateOf(c, &r.Job)
		lim := r.Job.TimeLimit.Seconds()
		el := s.Now.Sub(r.Start).Seconds()
		rem := estimate.Remaining(e.dist, lim, el, r.Progress)
		if lim-el <= 0 {
			rem = estimate.Point(float64(c.grace))
		}
		c.runRem[i] = rem
		if rel := preempt.ReleaseOf(c.h.cfg.Preempt, r, s.Now, mode == releaseAll); rel.OK && mode != keepAll {
			rem = rem.Cap(rel.At.Sub(s.Now).Seconds())
		}
		c.runDist[i] = rem
		end := max(ceilSec(rem.Quantile(c.h.cfg.Quantile)), 1)
		for k, ref := range r.Cards {
			id, ok := c.lay.CardID(ref)
			if !ok {
				return fmt.Errorf("%w: running[%d].cards[%d]: card %s does not exist", model.ErrInvalid, i, k, ref)
			}
			c.prof.Hold(id, end)
			c.holder[id] = i
		}
	}
	return nil
}

// pending records why j waits. Messages are built by concatenation where
// a deep queue makes them often.
func (c *cycle) pending(j *model.Job, r model.PendingReason, msg string) {
	c.addPending(j, model.Pending{JobID: j.ID, Reason: r, Message: msg})
	if c.waiting == "" && r != model.PendingNeverFits {
		c.waiting = j.ID
	}
}

func (c *cycle) addPending(j *model.Job, p model.Pending) {
	c.d.Pending = append(c.d.Pending, p)
	c.pendPos = append(c.pendPos, c.posOf[j])
}

// sortPending puts the waiting jobs in queue order.
func (c *cycle) sortPending() {
	idx := make([]int, len(c.d.Pending))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(c.pendPos[a], c.pendPos[b]) })
	out := make([]model.Pending, len(idx))
	for i, k := range idx {
		out[i] = c.d.Pending[k]
	}
	c.d.Pending = out
}

func (c *cycle) at(t int64) time.Time { return c.s.Now.Add(time.Duration(t) * time.Second) }

// start records a start on cards held for hold seconds in the profile.
func (c *cycle) start(j *model.Job, cards []int, hold int64, e jobEst, kind model.AllocKind, frag model.FragmentClass,
	reason string, prob float64, claim estimate.Dist, claimed bool) {
	if err := c.prof.Reserve(cards, 0, hold); err != nil {
		panic(fmt.Sprintf("solver: start of %s: %v", j.ID, err)) // FitNow just placed them
	}
	k := len(c.d.Starts)
	c.startDist = append(c.startDist, e.dist)
	for _, id := range cards {
		c.holder[id] = -2 - k
	}
	st := model.Start{
		JobID: j.ID, Cards: c.lay.Refs(cards), Kind: kind, Fragment: frag, Reason: reason,
		PreemptProb: prob, Unbounded: !claimed,
	}
	if claimed {
		st.ExpectedRetention = time.Duration(claim.Mean() * float64(time.Second))
	}
	if kind == model.Backfill {
		prot := c.params.ProtectFraction * e.dist.Quantile(0.5)
		st.ProtectedUntil = c.at(max(ceilSec(prot), 1))
		c.d.Stats.BackfillCards += len(cards)
	}
	c.d.Starts = append(c.d.Starts, st)
}

// releaseDist is the distribution of when a card is free: 0 when free now.
func (c *cycle) releaseDist(card int) (estimate.Dist, bool) {
	switch h := c.holder[card]; {
	case h >= 0:
		return c.runDist[h], true
	case h <= -2:
		return c.startDist[-2-h], true
	}
	return estimate.Dist{}, false
}

// startDistOf is the distribution of when all of cards are free: the
// maximum of the release times of the jobs holding them.
func (c *cycle) startDistOf(cards []int) estimate.Dist {
	var ds []estimate.Dist
	seen := map[int]bool{}
	for _, id := range cards {
		if d, ok := c.releaseDist(id); ok && !seen[c.holder[id]] {
			seen[c.holder[id]] = true
			ds = append(ds, d)
		}
	}
	return estimate.MaxOf(ds)
}
