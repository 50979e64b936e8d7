package baseline

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/huitian/huitian/internal/sorted"
	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/solver/profile"
)

// Params choose the variant of the one algorithm.
type Params struct {
	Name string
	// Depth is how many blocked jobs get a reservation: 0 none, -1 all.
	Depth int
	// Backfill lets later jobs start while an earlier one waits.
	Backfill bool
	// ShortestFirst orders backfill candidates by time limit, shortest first
	// (ties keep queue order), once the reservations are made.
	ShortestFirst bool
	// BackfillKey, when set, orders the backfill candidates instead: by
	// increasing key of their index in the snapshot's queue, ties in queue
	// order.
	BackfillKey func(k int) float64
	// LargeDepth more reservations go, once Depth is reached, to the first
	// waiting jobs in queue order that Large accepts, before the backfill
	// pass: EASY for the rest, conservative for the first large jobs, so
	// that backfill does not starve a large job behind the head. 0 (the
	// default) is plain EASY.
	LargeDepth int
	Large      func(j *model.Job) bool
	// AlignEnds places one-node jobs by end-aligned fit
	// (profile.SetAlignEnds) instead of best fit alone.
	AlignEnds bool
}

// DefaultHybridDepth is the reservation depth of PolicyHybridDepth when the
// request does not give one.
const DefaultHybridDepth = 4

// ForPolicy returns the parameters of a baseline policy. depth is the
// request's reservation depth, used by PolicyHybridDepth.
func ForPolicy(p model.Policy, depth int) (Params, bool) {
	switch p {
	case model.PolicyFCFS:
		return Params{Name: "fcfs"}, true
	case model.PolicyEASY:
		return Params{Name: "easy", Depth: 1, Backfill: true}, true
	case model.PolicyConservative:
		return Params{Name: "conservative", Depth: -1, Backfill: true}, true
	case model.PolicyEASYSJBF:
		return Params{Name: "easy-sjbf", Depth: 1, Backfill: true, ShortestFirst: true}, true
	case model.PolicyHybridDepth:
		if depth <= 0 {
			depth = DefaultHybridDepth
		}
		return Params{Name: fmt.Sprintf("hybrid-%d", depth), Depth: depth, Backfill: true}, true
	}
	return Params{}, false
}

// Planner is a baseline planner. Between cycles it keeps the last cycle's
// profile loaded and the running jobs' card numbers (CardIDs): the next
// cycle on the same cluster changes the profile by what changed (the jobs
// that started, ended or passed their end, and the time that passed)
// instead of loading every busy card again, and plans what a fresh load
// would plan. It is safe for concurrent use: a plan takes that state for
// itself, and a plan that runs while another holds it starts from scratch
// (with the same result).
type Planner struct {
	P Params
	// FromScratch loads every cycle's profile anew, as the first cycle
	// does. The plans are the same; it is for differential tests and for
	// measuring what the kept profile saves.
	FromScratch bool
	// PerCard plans card by card on a cluster whose cards are
	// interchangeable too (profile.IsPool), where the planner otherwise
	// plans on counts (profile.Pool): the same starts and reservation
	// times, with every reservation's cards named (Brief.ReservationCards,
	// which huitian reads) and the cards of each start chosen by best
	// fit. For a caller that needs the cards, and for differential tests.
	PerCard bool
	// Exact plans what PerCard plans — the same starts on the same
	// cards, every reservation's cards named — but on counts where it
	// can: on a pool whose node names order its cards
	// (profile.RankedByCard), reserving for one job at most (a depth of 1
	// or less, and no large job's reservation beyond it queued), an exact
	// pool (profile.Pool.SetExact) makes the card-by-card choices at a
	// pool's cost; elsewhere it plans card by card. huitian's guarantee
	// plans so: its predicted profile holds the cards EASY's plan names.
	Exact bool
	state atomic.Pointer[loadState]
}

// New returns a planner with the given parameters.
func New(p Params) *Planner { return &Planner{P: p} }

// take returns the planner's state, fresh when another plan holds it.
func (pl *Planner) take() *loadState {
	if st := pl.state.Swap(nil); st != nil {
		return st
	}
	return &loadState{}
}

// Plan plans one cycle. The snapshot must be valid (model.Snapshot.Validate);
// Plan does not modify it.
//
// The context bounds the work: Plan checks it before each queued job and
// inside a reservation's sweep. When it is cancelled (the caller left),
// Plan stops and returns its error. When its deadline (the time budget)
// passes, Plan stops at the next check once it has considered the first
// job in queue order (so that every plan decides something): the
// decision is the full plan's on the jobs considered so far — the main
// pass as far as it got, then the head's reservation, then backfill or
// deeper reservations — and every job not considered is pending with a
// message saying so, Stats.BudgetCut counting them and Stats.Fallback
// set. Conservative thus reserves as deep as time allowed; a main pass
// that starts thousands of jobs (a wave of completions at 65,536 cards)
// starts the rest in the next cycles, as a scheduler's own time-bounded
// main loop does, instead of answering past the budget.
func (pl *Planner) Plan(ctx context.Context, s *model.Snapshot) (*model.Decision, error) {
	return pl.PlanPrepared(ctx, s, Prepared{Order: QueueOrder(s.Queued)})
}

// PlanCards is Plan for a caller that holds the running jobs' cards as
// the layout's dense card numbers (the what-if simulator, sim.CardsPlanner):
// cards[i] is s.Running[i]'s cards, sorted, and the same slice, never
// modified, for as long as the job runs. The planner reads them instead
// of resolving every running job's references each cycle, and does not
// check them against the references: they are the caller's word. Its
// starts name their cards by number alone (Prepared.Numbers), and a
// running job may name none (model.Running.Cards).
func (pl *Planner) PlanCards(ctx context.Context, s *model.Snapshot, cards [][]int) (*model.Decision, error) {
	if err := CheckCards(s, cards); err != nil {
		return nil, err
	}
	return pl.PlanPrepared(ctx, s, Prepared{Order: QueueOrder(s.Queued), Cards: cards, Numbers: true})
}

// Recycle takes back the card numbers of a start this planner made, once
// its job has ended and the caller has freed its cards and reads and
// writes them no more (sim.Recycler): a later start on a cluster planned
// on counts numbers its cards into the list instead of a new one. The
// next plan's load still reads it, to free the job's cards; it is lent
// out after that. For a caller that plans every cycle in slot 0 (Plan,
// PlanCards), as the simulator does: another slot's kept load could read
// a list long after. A slice of the layout's own numbers
// (model.Layout.RunAt) is read only, and not taken.
func (pl *Planner) Recycle(cards []int) {
	st := pl.take()
	defer pl.state.Store(st)
	if pool := st.pools[0].pool; pool == nil || pool.Layout().RunAt(cards) {
		return
	}
	st.spares.Retire(cards)
}

// CheckCards checks a caller's running jobs' card numbers (PlanCards) for
// what can be checked without reading every card: one list per running
// job, as many as it holds (model.Running.CardCount), none empty.
func CheckCards(s *model.Snapshot, cards [][]int) error {
	if len(cards) != len(s.Running) {
		return fmt.Errorf("%w: cards of %d running jobs given for %d", model.ErrInvalid, len(cards), len(s.Running))
	}
	for i, cs := range cards {
		if n := s.Running[i].CardCount(); len(cs) == 0 || len(cs) != n {
			return fmt.Errorf("%w: running[%d]: %d card numbers given for %d cards", model.ErrInvalid, i, len(cs), n)
		}
	}
	return nil
}

// Prepared is what a caller that plans one snapshot more than once (with
// other limits for some running jobs, as a what-if of a preemption does)
// computes once: the queue order, QueueOrder(s.Queued), and the dense
// numbers of each running job's cards (CardIDs.Resolve), nil to have the
// planner resolve them. It holds for every snapshot with the same queue
// and the same running jobs on the same cards. The planner keeps the card
// slices from one plan to the next (the same slice is the same cards): a
// caller must not modify one once given. Until, when not nil, is each
// running job's busy time in seconds from now, HeldUntils(s) or what a
// what-if makes of it (a few jobs ending sooner), read instead of the
// running jobs' limits: a what-if then plans s itself rather than a copy
// of its running jobs with those limits changed.
//
// Slot is which of the planner's kept profiles the plan loads, from 0 to
// Slots-1. A caller that plans one what-if every cycle beside its own plan,
// with many busy times other than the snapshot's (every backfill job told
// to yield), gives the what-if a slot of its own: each slot loads by what
// changed since its own last load, where sharing one would load the
// difference between the two twice a cycle (at 65,536 cards, most of the
// cards, and the event streams sorted anew). The plan is the same in every
// slot.
//
// WhatIf says the plan is a what-if whose caller decides without it (the
// guarantee's yield tries): past the deadline it stops at its first
// check, before it has considered any job. A plan must complete its first
// job's sweep to decide anything; a what-if need not, and that sweep —
// a large gang's, on a profile of its own slot — took 10–19 ms at 65,536
// cards, begun with a millisecond of the budget left.
//
// Numbers says the caller reads starts by card number: the decision's
// starts then name their cards by model.Start.CardNumbers alone, without
// a reference per card (Cards nil).
//
// LazyClaims says the caller reads an exact pool's reservation by its
// claim's groups, and its cards only now and then: the reservation's
// CardNumbers and Brief.ReservationCards stay nil until Brief.ClaimCards
// reads them out (profile.Pool.SetLazyClaims). On a flat 93,312-card
// machine the head's tens of thousands of cards, read out whenever what
// it waits for changed, were four fifths of what huitian allocated.
type Prepared struct {
	Order      []int
	Cards      [][]int
	Until      []int64
	Slot       int
	WhatIf     bool
	Numbers    bool
	LazyClaims bool
}

// Slots is how many profiles a planner keeps loaded (Prepared.Slot).
const Slots = 3

// PlanPrepared is Plan with what was prepared.
func (pl *Planner) PlanPrepared(ctx context.Context, s *model.Snapshot, prep Prepared) (*model.Decision, error) {
	d, _, err := pl.plan(ctx, s, prep, walkFull, nil)
	return d, err
}

// Brief is what PlanBrief says besides its decision.
type Brief struct {
	// Waiting is the first job in queue order that waits, "" when none
	// does (the first pending entry PlanPrepared gives that does not say
	// the job never fits).
	Waiting string
	// Starts and Reservations are the queued index (into s.Queued) of
	// each of the decision's starts and reservations, in their order: a
	// caller need not look the jobs up by id in a deep queue.
	Starts, Reservations []int
	// Large is how many of the reservations, the last ones, are large
	// jobs' (Params.LargeDepth), made with Profile.ReserveProtect.
	Large int
	// StartCards and ReservationCards are the card numbers (in the
	// layout's numbering, sorted) of each start and reservation, in their
	// order: what the decision's references name, for a caller that
	// works on card numbers (converting them back card by card was a
	// twentieth of huitian's plan on a flat 93,312-card machine). Read
	// only: a slice may be the planner's own. A reservation on an exact
	// pool planned with Prepared.LazyClaims has none here: ClaimCards
	// reads them out.
	StartCards, ReservationCards [][]int
	// Pool is the exact pool the walk planned on (Planner.Exact), with
	// its starts and its reservation's claim, for a caller that goes on
	// from its free cards and the groups its reservation takes cards of
	// (profile.Pool.FreeBits, ClaimGroups): read only, until the
	// planner's next plan. Nil when the walk planned card by card.
	Pool *profile.Pool
}

// ClaimCards are reservation k's cards: ReservationCards[k], or on an
// exact pool that left them unread (Prepared.LazyClaims) its claim's, read
// out now (profile.Pool.ClaimCards). Valid until the planner's next plan
// in the same slot.
func (b Brief) ClaimCards(k int) []int {
	if cs := b.ReservationCards[k]; cs != nil || b.Pool == nil {
		return cs
	}
	return b.Pool.ClaimCards()
}

// summary is the walk's Brief.
func (w *walker) summary() Brief {
	return Brief{Waiting: w.waiting, Starts: w.startIdx, Reservations: w.resvIdx, Large: w.large,
		StartCards: w.startCards, ReservationCards: w.resvCards, Pool: w.exact}
}

// PlanBrief is PlanPrepared for a caller that reads the starts and the
// reservations alone: the decision lists no pending jobs (a deep queue's
// list and messages were most of what a plan allocated).
func (pl *Planner) PlanBrief(ctx context.Context, s *model.Snapshot, prep Prepared) (*model.Decision, Brief, error) {
	d, w, err := pl.plan(ctx, s, prep, walkBrief, nil)
	if err != nil {
		return nil, Brief{}, err
	}
	return d, w.summary(), nil
}

// Main is PlanBrief cut after the main pass: the jobs in queue order up to
// where the reservation depth is spent, started or reserved as Plan would
// (Plan's decision begins with the same starts and the same
// reservations), and nothing backfilled, nor the large jobs' reservations
// (Params.LargeDepth) that follow the main pass. It is for a caller that needs
// only the head's start, such as a what-if of a preemption.
func (pl *Planner) Main(ctx context.Context, s *model.Snapshot, prep Prepared) (*model.Decision, error) {
	d, _, err := pl.plan(ctx, s, prep, walkMain, nil)
	return d, err
}

// MainThen is Main, then, when more says so of Main's decision, the rest
// of PlanBrief's walk on from there: PlanBrief's decision and brief and
// full true, or Main's decision, its brief, and full false. It is Main
// followed by PlanBrief on the same snapshot and preparation, for a
// caller that decides from the main pass whether it needs the whole
// plan, without loading the profile and walking the main pass twice (at
// 65,536 cards, half of such a what-if). more is given Main's decision
// and its brief; it must not keep or modify either: the walk goes on
// filling them.
func (pl *Planner) MainThen(ctx context.Context, s *model.Snapshot, prep Prepared, more func(main *model.Decision, b Brief) bool) (d *model.Decision, b Brief, full bool, err error) {
	d, w, err := pl.plan(ctx, s, prep, walkBrief, more)
	if err != nil {
		return nil, Brief{}, false, err
	}
	return d, w.summary(), !w.mainOnly, nil
}

// walkMode is how much of a plan a walk makes.
type walkMode uint8

const (
	walkFull  walkMode = iota // the whole decision
	walkBrief                 // no pending list
	walkMain                  // no pending list, and no backfill pass
)

// plan walks the queue in the given mode; more, when not nil, is asked
// after the main pass whether to go on (MainThen).
func (pl *Planner) plan(ctx context.Context, s *model.Snapshot, prep Prepared, mode walkMode, more func(*model.Decision, Brief) bool) (*model.Decision, *walker, error) {
	if err := ctx.Err(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return nil, nil, err
	}
	st := pl.take()
	defer pl.state.Store(st)
	if prep.Cards == nil {
		var err error
		if prep.Cards, err = st.ids.Resolve(s); err != nil {
			return nil, nil, err
		}
	}
	until := prep.Until
	if until == nil {
		st.until = HeldUntils(s, st.until)
		until = st.until
	}
	if prep.Slot < 0 || prep.Slot >= Slots {
		return nil, nil, fmt.Errorf("baseline: Prepared.Slot %d: want 0 to %d", prep.Slot, Slots-1)
	}
	ld := &st.ld[prep.Slot]
	var capa capacity
	starts := &ld.starts
	var exactPool *profile.Pool
	if pooled, exact := pl.pooled(st, s); pooled {
		pd := &st.pools[prep.Slot]
		pool := pd.loadPool(s, prep.Cards, until, pl.FromScratch)
		if prep.Slot == 0 {
			// The load has freed the ended jobs' cards: their lists are
			// read no more (Recycle).
			st.spares.Ready()
			pool.SetSpares(&st.spares)
		}
		pool.SetExact(exact)
		pool.SetLazyClaims(exact && prep.LazyClaims)
		capa, starts = poolCap{pool}, &pd.starts
		if exact {
			exactPool = pool
		}
	} else {
		prof := ld.load(s, prep.Cards, until, pl.FromScratch)
		prof.SetAlignEnds(pl.P.AlignEnds)
		capa = cardCap{prof}
	}
	d := &model.Decision{Stats: model.Stats{Solver: pl.P.Name}}
	if *starts > 0 {
		d.Starts = make([]model.Start, 0, *starts)
	}
	w := &walker{ctx: ctx, p: pl.P, s: s, capa: capa, d: d, mainOnly: mode == walkMain, more: more, brief: mode != walkFull || s.Options.Brief,
		head: &ld.head, considered: prep.WhatIf, exact: exactPool, numbers: prep.Numbers}
	if !w.brief {
		// Nearly every queued job waits in a deep queue.
		d.Pending = make([]model.Pending, 0, len(s.Queued))
		w.pendIdx = make([]int, 0, len(s.Queued))
	}
	w.run(prep.Order)
	if w.stopped != nil && !errors.Is(w.stopped, context.DeadlineExceeded) {
		return nil, nil, w.stopped
	}
	*starts = len(d.Starts)
	if len(d.Starts) == 0 {
		d.Starts = nil // as a walk that allocated none leaves it
	}
	return d, w, nil
}

// Load builds the profile of a snapshot: every running job holds its cards
// until its start plus its time limit. A job already past its limit is
// assumed to end OverrunGrace from now (default one minute, a scheduling
// cycle): the resource manager kills it at its limit, so it cannot run much
// longer, and treating it as ending now would place a reservation on cards
// that are still busy.
func Load(s *model.Snapshot) (*profile.Profile, error) {
	var ids CardIDs
	cards, err := ids.Resolve(s)
	if err != nil {
		return nil, err
	}
	var l loader
	return l.load(s, cards, HeldUntils(s, nil), true), nil
}

// Resolve returns the dense numbers of every running job's cards, sorted
// (of), by index into s.Running, remembering them for the next cycle.
// The slices are the CardIDs' own: the caller must not modify them, and the outer
// one is the next Resolve's too (one list of 28,000 running jobs a cycle
// at 65,536 cards); each job's cards stay as they are.
func (c *CardIDs) Resolve(s *model.Snapshot) ([][]int, error) {
	c.Begin(s.Cluster.Layout())
	defer c.End(len(s.Running))
	if n := len(s.Running); cap(c.out) < n {
		c.out = make([][]int, n, n+n/4)
	}
	out := c.out[:len(s.Running)]
	next, j := c.next[:0], 0
	for i := range s.Running {
		r := &s.Running[i]
		var got resolved
		for k := j; k < len(c.last) && k < j+lookAhead; k++ {
			if e := &c.last[k]; e.id == r.Job.ID {
				if c.still(e.cardsOf, r.Cards) {
					got = *e
				}
				j = k + 1
				break
			}
		}
		if got.ids == nil {
			e, bad, ok := c.of(r.Job.ID, r.Cards)
			if !ok {
				// The jobs before this one may have been answered anew in
				// the map but not in the last list, which then holds an
				// older answer than the map for them: the next cycle
				// would give a job found in the list one slice, and the
				// cycle after, missing it there, the map's other one.
				c.last = c.last[:0]
				return nil, fmt.Errorf("%w: running[%d].cards[%d]: card %s does not exist", model.ErrInvalid, i, bad, r.Cards[bad])
			}
			got = resolved{r.Job.ID, e}
		}
		out[i] = got.ids
		next = append(next, got)
	}
	c.last, c.next = next, c.last
	return out, nil
}

// OverrunGrace is how long a job past its time limit is assumed to run
// on, in seconds: the snapshot's Options.OverrunGrace, or the default.
func OverrunGrace(s *model.Snapshot) int64 {
	if s.Options.OverrunGrace == 0 {
		return Seconds(model.DefaultOverrunGrace)
	}
	return Seconds(s.Options.OverrunGrace)
}

// HeldUntil is when a job running since start with the given time limit
// frees its cards, in seconds from now: at its start plus its limit, or
// grace (OverrunGrace) from now once past it.
func HeldUntil(now, start time.Time, limit time.Duration, grace int64) int64 {
	// limit − elapsed is start+limit−now without building the time (every
	// running job, every cycle); it cannot overflow for a job started
	// before now with a limit ≥ 0, and Time.Sub saturates otherwise.
	var end int64
	if el := Elapsed(now, start); el >= 0 && limit >= 0 {
		end = Seconds(limit - el)
	} else {
		end = Rel(now, start.Add(limit))
	}
	if end > 0 {
		return end
	}
	return grace
}

// Elapsed is now.Sub(start), bit for bit, computed from the wall clock
// directly when the two are less than 280 years apart and not both
// carry a monotonic reading (a snapshot's times do not): Time.Sub builds
// the sum back to check for overflow, and every running job asks every
// cycle (3% of a million-job replay).
func Elapsed(now, start time.Time) time.Duration {
	if now.Round(0) != now && start.Round(0) != start {
		return now.Sub(start)
	}
	ds := now.Unix() - start.Unix()
	if ds > maxElapsedSec || ds < -maxElapsedSec {
		return now.Sub(start)
	}
	return time.Duration(ds)*time.Second + time.Duration(now.Nanosecond()-start.Nanosecond())
}

// maxElapsedSec bounds Elapsed's direct computation well inside a
// Duration (±292 years).
const maxElapsedSec = 280 * 365 * 24 * 3600

// Rel converts a time to whole seconds from now, rounding up.
func Rel(now, t time.Time) int64 {
	return Seconds(t.Sub(now))
}

// Done returns the context's error, or context.DeadlineExceeded once its
// deadline has passed although the timer that cancels it has not fired
// yet. The timer runs on the Go scheduler: with one processor busy
// planning (huitian bench's default, a loaded service) it fired 5–20 ms
// late, and a budget checked by ctx.Err alone was overrun by that much
// (conservative at 65,536 cards). The deadline is the time budget, the
// one input allowed to make two plans differ.
func Done(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	// time.Until reads the monotonic clock alone when dl has it (every
	// deadline context.WithTimeout makes does): half of time.Now's cost,
	// and a deep queue's walk asks once a job.
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= 0 {
		return context.DeadlineExceeded
	}
	return nil
}

// Seconds rounds a duration up to whole seconds.
func Seconds(d time.Duration) int64 {
	s := int64(d / time.Second)
	if d%time.Second > 0 {
		s++
	}
	return s
}

// QueueOrder returns the indexes of the queued jobs in queue order: higher
// priority first, then earlier submit, then id (natural order).
func QueueOrder(q []model.Job) []int { return QueueOrderBy(q, nil) }

// QueueOrderBy is QueueOrder with each job's priority raised by bonus
// (none when nil): huitian raises a requeued job's by its compensation.
func QueueOrderBy(q []model.Job, bonus func(*model.Job) int) []int {
	var o Orders
	return o.By(q, bonus)
}

// Orders keeps QueueOrderBy's buffers for a caller that orders a deep
// queue every cycle: By's answer is its own until the next By.
type Orders struct {
	keys, raised, out []orderKey
	order             []int
}

// sortListed sorts keys, a list mostly in order already, by compare (a
// total order, so that the result is the sort's): the keys that keep
// the order of those before them stay in place, the others (out, a
// buffer) are sorted apart and merged in, O(n + k log k) for k out of
// order; when more than an eighth are, all are sorted. It returns the
// sorted keys and out emptied, for reuse. A deep queue with a requeued
// job or two in it was sorted whole every cycle: a sixth of an EASY plan
// at 65,536 cards and 20,000 queued.
func sortListed(keys, out []orderKey, compare func(a, b orderKey) int) ([]orderKey, []orderKey) {
	m := 0
	for _, k := range keys { // keys[m] is written only once read (m ≤ the index)
		if m == 0 || compare(keys[m-1], k) <= 0 {
			keys[m] = k
			m++
		} else {
			out = append(out, k)
		}
	}
	switch {
	case len(out) == 0:
		return keys, out
	case len(out) > len(keys)/8:
		copy(keys[m:], out)
		slices.SortFunc(keys, compare)
		return keys, out[:0]
	}
	slices.SortFunc(out, compare)
	sorted.MergeFunc(keys, m, out, compare)
	return keys, out[:0]
}

// orderKey is a job's sort key, side by side with the others': a deep
// queue's sort compared times and priorities through the jobs, a cache
// miss each.
type orderKey struct {
	prio int
	sec  int64
	nsec int32
	k    int32
}

// By is QueueOrderBy in o's buffers.
func (o *Orders) By(q []model.Job, bonus func(*model.Job) int) []int {
	keys := slices.Grow(o.keys[:0], len(q))[:len(q)]
	// The jobs a bonus raises go to raised, the others stay in keys in
	// the queue's order.
	raised := o.raised[:0]
	n := 0
	for i := range q {
		j := &q[i]
		key := orderKey{prio: j.Priority, sec: j.Submit.Unix(), nsec: int32(j.Submit.Nanosecond()), k: int32(i)}
		if bonus != nil {
			if b := bonus(j); b != 0 {
				key.prio += b
				raised = append(raised, key)
				continue
			}
		}
		keys[n] = key
		n++
	}
	keys = keys[:n]
	compare := func(a, b orderKey) int {
		if c := cmp.Compare(b.prio, a.prio); c != 0 {
			return c
		}
		if c := cmp.Compare(a.sec, b.sec); c != 0 {
			return c
		}
		if c := cmp.Compare(a.nsec, b.nsec); c != 0 {
			return c
		}
		if c := model.CompareIDs(q[a.k].ID, q[b.k].ID); c != 0 {
			return c
		}
		return cmp.Compare(a.k, b.k)
	}
	// A resource manager (and the simulator) lists its queue in submit
	// order, mostly in the order asked: the few out of it (a requeued
	// job keeps its submit time) are sorted apart and merged in
	// (sortListed).
	keys, o.out = sortListed(keys, o.out[:0], compare)
	// The few raised jobs (requeued ones, with their compensation) are
	// sorted apart and merged in, not the whole queue sorted again: the
	// same order, since it is total.
	slices.SortFunc(raised, compare)
	order := slices.Grow(o.order[:0], len(q))[:len(q)]
	a, b := 0, 0
	for i := range order {
		if b == len(raised) || a < len(keys) && compare(keys[a], raised[b]) < 0 {
			order[i] = int(keys[a].k)
			a++
		} else {
			order[i] = int(raised[b].k)
			b++
		}
	}
	o.keys, o.raised, o.order = keys, raised, order
	return order
}

// walker walks the queue once.
type walker struct {
	ctx  context.Context
	p    Params
	s    *model.Snapshot
	capa capacity
	d    *model.Decision

	waiting  string // the first job that waits, "" while none does
	reserved int
	lastRes  int64 // the latest reserved start so far (seconds from now)
	stopped  error // the context's error once it stopped the walk
	pendIdx  []int // the queued index of each entry of d.Pending
	startIdx []int // the queued index of each entry of d.Starts
	resvIdx  []int // the queued index of each entry of d.Reservations
	cur      int   // the queued index of the job under consideration
	mainOnly bool  // stop after the main pass (Planner.Main)
	// more, when not nil, says after the main pass whether to go on
	// (Planner.MainThen); mainOnly is set when it says no.
	more  func(*model.Decision, Brief) bool
	brief bool // no pending list (Planner.PlanBrief, Main)
	// considered: a job was considered (or the plan is a what-if,
	// Prepared.WhatIf), so the deadline may stop the walk.
	considered bool
	// beyondDepth lets consider reserve past the depth (reserveLarge).
	beyondDepth bool
	large       int // reservations made beyond the depth
	head        *headRefs
	// The card numbers of each entry of d.Starts and d.Reservations.
	startCards, resvCards [][]int
	exact                 *profile.Pool // capa's, when an exact pool (Brief.Pool)
	numbers               bool          // starts by number alone (Prepared.Numbers)
}

// headRefs is the last plan's first reservation of many cards: its cards
// and their references, which the next plan hands out again when its
// first reservation is on the same cards (EASY's head, cycle after cycle
// until it starts). The references of the head of a flat 93,312-card
// replay were a tenth of the replay, and most of its garbage. A
// decision's slices are read, never modified, by its users, and the
// planner never modifies one it handed out (cards is replaced, not
// overwritten): sharing one with the last decision is safe.
type headRefs struct {
	cards []int
	refs  []model.CardRef
}

// headMin is how many cards a first reservation needs for headRefs:
// fewer cost less to convert than to compare.
const headMin = 64

// lastHead is the cards of the last plan's first reservation while this
// plan has none yet: the sweep returns them, not a copy, when the next
// reservation is on the same cards (profile.EarliestStartOr).
func (w *walker) lastHead() []int {
	if len(w.d.Reservations) > 0 {
		return nil
	}
	return w.head.cards
}

// resRefs returns the references of a reservation's cards.
func (w *walker) resRefs(cards []int) []model.CardRef {
	h := w.head
	if len(cards) == 0 {
		return nil // a pool's: a count
	}
	if len(w.d.Reservations) > 0 || len(cards) < headMin {
		return w.capa.Layout().Refs(cards)
	}
	if !sameInts(h.cards, cards) {
		h.cards, h.refs = cards, w.capa.Layout().Refs(cards)
	}
	return h.refs
}

// sameInts reports whether two lists hold the same numbers: at once when
// they are the same slice (profile.SameCards).
func sameInts(a, b []int) bool { return profile.SameCards(a, b) || slices.Equal(a, b) }

// next says whether to consider one more job: not once the context is
// cancelled, nor past its deadline once a job was considered. Jobs left
// over are pending, counted in Stats.BudgetCut, and the stats say the
// plan fell back.
func (w *walker) next(j *model.Job) bool {
	if w.stop() {
		w.cut(j)
		return false
	}
	return true
}

// stop says whether the walk stops here, and notes why: once the context
// is cancelled, or past its deadline once a job was considered (the
// first job's own sweep is completed).
func (w *walker) stop() bool {
	if w.stopped == nil {
		if err := Done(w.ctx); err != nil && (w.considered || !errors.Is(err, context.DeadlineExceeded)) {
			w.stopped = err
			w.d.Stats.Fallback = true
		}
	}
	return w.stopped != nil
}

// cut leaves j unconsidered: the walk stopped.
func (w *walker) cut(j *model.Job) {
	w.d.Stats.BudgetCut++
	w.pending(j, model.PendingResources, "not considered this cycle: the planner's time budget ran out")
}

func (w *walker) run(order []int) {
	q := w.s.Queued
	// 1. In queue order: start what fits, reserve for the blocked jobs
	// while the depth allows.
	i := 0
	for ; i < len(order); i++ {
		if w.p.Depth >= 0 && w.reserved >= w.p.Depth && w.waiting != "" {
			break
		}
		w.cur = order[i]
		if w.next(&q[order[i]]) {
			w.consider(&q[order[i]], true)
			w.considered = true
		}
	}
	if w.mainOnly {
		return
	}
	if w.more != nil && !w.more(w.d, w.summary()) {
		w.mainOnly = true
		return
	}
	rest := order[i:]
	if w.p.LargeDepth > 0 && w.p.Large != nil && w.waiting != "" && !w.stop() {
		rest = w.reserveLarge(rest)
	}
	// 2. Backfill the rest, shortest limit first for SJBF.
	switch {
	case w.p.BackfillKey != nil:
		// Keys by position in rest, sorted with it: a map lookup per
		// comparison was a tenth of huitian's cycle at 5,000 queued.
		type keyed struct {
			key  float64
			n, k int // position in rest, queued index
		}
		ks := make([]keyed, len(rest))
		for n, k := range rest {
			ks[n] = keyed{w.p.BackfillKey(k), n, k}
		}
		// Ties in queue order: by position, as a stable sort would
		// keep them, but with the faster unstable one.
		slices.SortFunc(ks, func(a, b keyed) int {
			if c := cmp.Compare(a.key, b.key); c != 0 {
				return c
			}
			return cmp.Compare(a.n, b.n)
		})
		rest = make([]int, len(ks))
		for n, e := range ks {
			rest[n] = e.k
		}
	case w.p.ShortestFirst:
		rest = slices.Clone(rest)
		slices.SortStableFunc(rest, func(a, b int) int { return cmp.Compare(q[a].TimeLimit, q[b].TimeLimit) })
	}
	for _, k := range rest {
		if w.brief && q[k].Cards > w.capa.FreeCount() {
			// It cannot start now, and a brief walk records nothing
			// else of a job in the backfill pass (the waiting job is
			// already named): a full cluster's deep queue is skipped,
			// and once no card is free, the rest of it (every job
			// asks for one at least).
			if w.capa.FreeCount() == 0 {
				break
			}
			continue
		}
		w.cur = k
		if !w.next(&q[k]) {
			continue
		}
		if w.brief && w.waiting != "" {
			w.backfillNow(&q[k])
		} else {
			w.consider(&q[k], false)
		}
	}
	if w.brief {
		return
	}
	// Pending in queue order for a stable output: each entry's queue
	// position was noted when it was made (IDs are unique, so no two
	// entries share one).
	pos := make([]int, len(w.s.Queued))
	for n, k := range order {
		pos[k] = n
	}
	for i, k := range w.pendIdx {
		w.pendIdx[i] = pos[k]
	}
	w.d.Pending = ByPosition(w.d.Pending, w.pendIdx, len(order))
}

// reserveLarge considers the first LargeDepth jobs of rest (in queue
// order) that Params.Large accepts as the head was: each starts if it fits
// now without delaying a reservation, else gets its own. It returns rest
// without them (rest itself when there is none: most cycles, with no copy
// of a deep queue).
func (w *walker) reserveLarge(rest []int) []int {
	q := w.s.Queued
	var out []int // rest without the large jobs, from the first one on
	n := 0
	for i, k := range rest {
		if n == w.p.LargeDepth {
			out = append(out, rest[i:]...)
			break
		}
		j := &q[k]
		if !w.p.Large(j) {
			if out != nil {
				out = append(out, k)
			}
			continue
		}
		if out == nil {
			out = append(make([]int, 0, len(rest)-1), rest[:i]...)
		}
		n++
		w.cur = k
		if w.next(j) {
			w.beyondDepth = true
			w.consider(j, true)
			w.beyondDepth = false
		}
	}
	if n == 0 {
		return rest
	}
	return out
}

// ByPosition returns items ordered by their positions pos[i], each in
// [0, n), ties in their order in items: a counting sort, linear in
// len(items) + n, for putting a decision's entries in queue order.
func ByPosition[T any](items []T, pos []int, n int) []T {
	next := make([]int, n+1)
	for _, p := range pos {
		next[p+1]++
	}
	for p := 1; p <= n; p++ {
		next[p] += next[p-1]
	}
	out := make([]T, len(items))
	for i, p := range pos {
		out[next[p]] = items[i]
		next[p]++
	}
	return out
}

// pending records why j waits. Messages are built by concatenation: a
// deep queue gets one per job per cycle.
func (w *walker) pending(j *model.Job, r model.PendingReason, msg string) {
	w.addPending(j, model.Pending{JobID: j.ID, Reason: r, Message: msg})
}

func (w *walker) addPending(j *model.Job, p model.Pending) {
	if w.brief {
		return
	}
	w.d.Pending = append(w.d.Pending, p)
	w.pendIdx = append(w.pendIdx, w.cur)
}

// backfillNow is consider for a job of a brief walk's backfill pass,
// behind a job that waits: a brief walk records nothing of a job that does
// not start, so all that is asked is whether it may start and fits now.
// Whether it could ever fit is not asked: one that never fits does not fit
// now (a deep queue's every job asked it, in every walk of the guarantee).
func (w *walker) backfillNow(j *model.Job) {
	if !w.p.Backfill || j.Backfill == model.BackfillOptOut {
		return
	}
	dur := Seconds(j.TimeLimit)
	if cards, fits := w.capa.FitNowAny(dur, profile.RequestOf(j)); fits {
		w.start(j, cards, dur)
	}
}

// consider starts j now if it may and fits, else reserves for it when
// mayReserve and the depth allows, else records why it waits.
func (w *walker) consider(j *model.Job, mayReserve bool) {
	dur := Seconds(j.TimeLimit)
	req := profile.RequestOf(j)
	if why := w.neverFits(req); why != "" {
		w.pending(j, model.PendingNeverFits, why)
		return
	}
	if w.waiting != "" && !w.p.Backfill {
		w.pending(j, model.PendingPolicy, w.p.Name+" does not backfill: waits behind "+w.waiting)
		return
	}
	// A job that opted out of backfill does not start while a job ahead
	// of it waits, whether it fits or not: it is not placed (a deep
	// queue's opted-out jobs were placed every cycle, to no use: most of
	// the successful placements of a saturated replay's EASY walk).
	optOut := w.waiting != "" && j.Backfill == model.BackfillOptOut
	out := profile.NoCards // read below only when the job is not opted out
	if !optOut {
		var cards []int
		if w.brief {
			// Nothing records why a job waits: whether it fits is enough.
			var fits bool
			if cards, fits = w.capa.FitNowAny(dur, req); fits {
				out = profile.Fits
			}
		} else {
			cards, out = w.capa.FitNow(dur, req)
		}
		if out == profile.Fits {
			w.start(j, cards, dur)
			return
		}
	}
	if mayReserve && (w.p.Depth < 0 || w.reserved < w.p.Depth || w.beyondDepth) {
		// A job that opted out of backfill starts no earlier than the
		// jobs ahead of it: its reservation follows theirs.
		after := int64(1)
		if optOut {
			after = max(after, w.lastRes)
		}
		// The sweep stops where the walk would (the head's reservation
		// is completed past the deadline, a later one is not).
		t, rc, ok, stopped := w.capa.EarliestStartOr(after, dur, req, w.stop, w.lastHead())
		if stopped {
			w.cut(j)
			return
		}
		if ok {
			// A large job's reservation keeps backfill off its cards
			// without drawing backfill to them: plain EASY leaves them
			// whole for a gang that fits now.
			if err := w.capa.reserve(rc, req.Cards, t, t+dur, w.beyondDepth); err == nil {
				w.reserved++
				if w.beyondDepth {
					w.large++
				}
				w.lastRes = max(w.lastRes, t)
				at := w.s.Now.Add(time.Duration(t) * time.Second)
				r := model.Reservation{JobID: j.ID, Count: req.Cards, Start: at, Confidence: 1}
				if w.exact != nil {
					// A count, as on any pool, and the cards reasoned with.
					r.CardNumbers = rc
				} else {
					r.Cards = w.resRefs(rc)
				}
				w.d.Reservations = append(w.d.Reservations, r)
				w.resvIdx = append(w.resvIdx, w.cur)
				w.resvCards = append(w.resvCards, rc)
				if !w.brief {
					w.addPending(j, model.Pending{
						JobID: j.ID, Reason: model.PendingReserved, EstimatedStart: at,
						Message: fmt.Sprintf("holds %d cards from %s", req.Cards, at.UTC().Format(time.RFC3339)),
					})
				}
				w.markWaiting(j)
				return
			}
		}
	}
	if w.brief {
		w.markWaiting(j)
		return
	}
	switch {
	case optOut:
		w.pending(j, model.PendingOptOut, "opted out of backfill: waits behind "+w.waiting)
		w.markWaiting(j)
		return
	}
	switch out {
	case profile.NoCards:
		w.pending(j, model.PendingResources, "needs "+strconv.Itoa(j.Cards)+" cards, not enough free")
	case profile.Claimed:
		w.pending(j, model.PendingPriority, "would delay a reservation of an earlier job")
	default:
		w.pending(j, model.PendingTopology, "free cards do not meet "+req.String())
	}
	w.markWaiting(j)
}

func (w *walker) markWaiting(j *model.Job) {
	if w.waiting == "" {
		w.waiting = j.ID
	}
}

func (w *walker) start(j *model.Job, cards []int, dur int64) {
	if err := w.capa.reserve(cards, len(cards), 0, dur, false); err != nil {
		// FitNow just placed these cards: this is a broken invariant.
		panic(fmt.Sprintf("baseline: start of %s: %v", j.ID, err))
	}
	st := model.Start{
		JobID:       j.ID,
		CardNumbers: cards, // read only, as a decision is
		Kind:        model.Regular,
		Fragment:    model.FragmentFree,
		Unbounded:   true,
		Reason:      "fits now in queue order",
	}
	if !w.numbers {
		st.Cards = w.capa.Layout().RefsView(cards)
	}
	if w.waiting != "" {
		st.Kind = model.Backfill
		st.Reason = fmt.Sprintf("backfilled while %s waits", w.waiting)
		// The cards stay this job's until a reservation claims them.
		if claim := w.capa.retention(cards, dur); claim != profile.Forever {
			st.Unbounded = false
			st.ExpectedRetention = time.Duration(claim) * time.Second
			st.Fragment = model.FragmentTemporal
		}
	}
	w.d.Starts = append(w.d.Starts, st)
	w.startIdx = append(w.startIdx, w.cur)
	w.startCards = append(w.startCards, cards)
}

// neverFits says why the usable cards of the cluster can never hold req, or "".
func (w *walker) neverFits(req profile.Request) string {
	if !w.capa.CanEverFit(req) {
		return fmt.Sprintf("the cluster's usable cards can never hold %s", req.String())
	}
	return ""
}
