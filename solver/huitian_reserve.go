package solver

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/solver/baseline"
	"github.com/huitian/huitian/solver/estimate"
	"github.com/huitian/huitian/solver/preempt"
	"github.com/huitian/huitian/solver/profile"
)

// guarantee returns EASY's decision for the snapshot (reservation depth as
// the snapshot or the config says), made on the users' time limits, the
// backfill jobs planned to yield (their cards free when they must have
// yielded) and, of those, the ones to tell now.
//
// A backfill job admitted on its predicted runtime into cards a reservation
// claims (it has a window) counts as ending when its window does: that is
// its contract. EASY itself would never have started it, and must not
// reserve around it. Once it has overrun its window and only it keeps the
// head from starting, it is requeued at once.
//
// When other running backfill jobs could yield (checkpointable ones by
// suspension; ones that cannot checkpoint by requeue once the head has
// waited past the threshold), EASY is asked again with those jobs ending
// when they must have yielded (a try). If that starts the head more than
// MinGain earlier by suspensions alone, or now at all with requeues, that
// decision is the guarantee and the victims yield.
//
// Whether a try is worth planning is read from the main pass of EASY's
// own plan (where the head would start). When one is, EASY's backfill
// pass waits for the try: a try planned is nearly always kept, and the
// plan thrown away was a third of the guarantee in the slowest plans at
// 65,536 cards, 9–16 ms (bench/README.md). Only when no try is kept is
// EASY's plan made whole, the same plan as without the wait.
func (c *cycle) guarantee(ctx context.Context) (core *model.Decision, planned, tell map[int]preempt.Release, err error) {
	h, s := c.h, c.s
	h.core.P = h.easyParams(s)
	if h.cfg.ExpansionOrder && !c.saturated() {
		h.core.P.BackfillKey = func(k int) float64 {
			j, e := &s.Queued[k], c.queuedEst(k)
			m := max(e.dist.Quantile(0.5), minRelief)
			return -(s.Now.Sub(j.Submit).Seconds() + m) / m
		}
	}
	planned = c.contracts()
	h.held = baseline.HeldUntils(s, h.held)
	prep := baseline.Prepared{Order: c.easyOrder, Cards: c.runCards, Numbers: c.numbers, LazyClaims: c.numbers}
	prep.Until = c.withReleases(h.held, planned)
	g := &guaranteeTries{c: c, ctx: ctx, prep: prep, planned: planned, margin: max(baseline.Seconds(h.cfg.Preempt.Margin), 1)}
	more := g.setUp
	if h.fullFirst {
		more = nil // tests: EASY's whole plan first, the tries set up from it
	}
	core, brief, full, err := h.core.MainThen(ctx, s, prep, more)
	if err != nil {
		return nil, nil, nil, err
	}
	c.d.Stats.Fallback = core.Stats.Fallback
	if full && !g.asked && len(core.Reservations) > 0 {
		// The main pass reserved nothing (a reservation depth of 0) and
		// the walk after it did (a large gang's): that is the head, and
		// the tries are set up from the whole plan.
		g.setUp(core, brief)
	}
	if g.gated {
		// A try is worth planning: plan it (and the next, if it is not kept).
		for {
			if d, b, yield, ok := g.walk(); ok {
				c.core, c.waiting = b, b.Waiting
				c.d.Stats.Fallback = c.d.Stats.Fallback || d.Stats.Fallback
				return d, yield, c.victims(d, b, g.head, yield), nil
			}
			if !g.gateNext() {
				break
			}
		}
	}
	if !full {
		// No try kept: EASY's plan, whole; past the budget, its main pass
		// (the starts in queue order and the head's reservation) alone,
		// and what it did not consider goes to the backfill beyond EASY,
		// as after a walk the budget cut.
		if baseline.Done(ctx) != nil {
			c.d.Stats.Fallback = true
		} else if core, brief, err = h.core.PlanBrief(ctx, s, prep); err != nil {
			return nil, nil, nil, err
		}
		c.d.Stats.Fallback = c.d.Stats.Fallback || core.Stats.Fallback
	}
	c.core, c.waiting = brief, brief.Waiting
	if g.nearHead {
		// Only jobs told to yield within the margin keep the head waiting:
		// those that overran their window are requeued now.
		return core, planned, c.victims(core, brief, core.Reservations[0].JobID, planned), nil
	}
	return core, planned, nil, nil
}

// guaranteeTries is the guarantee's tries of a cycle: set up from the
// main pass of EASY's plan (setUp), each gated (gateNext) and then planned
// (walk), in order, until one is kept.
type guaranteeTries struct {
	c       *cycle
	ctx     context.Context
	prep    baseline.Prepared
	planned map[int]preempt.Release
	margin  int64 // Preempt.Margin, in seconds (at least 1)

	// asked: setUp was given a decision with a reservation.
	asked bool
	// nearHead: the head's reservation is within the margin (no try).
	nearHead    bool
	head        string          // the head's id
	headReq     profile.Request // what it asks
	keepPromise bool            // its promise is at stake (see setUp)

	tries [2]guaranteeTry
	held  []yielder         // lent jobs on the head's cards, requeued at once by a held try
	n, at int               // tries set up, and the next to gate
	cur   int               // the try gated to walk
	alt   baseline.Prepared // its preparation
	adds  []yielder         // the jobs it tells to yield besides those planned
	gated bool              // cur is gated and not walked yet
}

// guaranteeTry is one try: every backfill job that can yield told to
// (requeued too when requeue); kept when the head is still the head and
// keep accepts its start t1 (from now), which it does for no t1 past
// last.
type guaranteeTry struct {
	requeue bool
	held    bool // tells only the lent jobs on the head's cards (g.held), by requeue
	last    int64
	keep    func(t1 int64) bool
	// worth, on a held try, is its weighing alone, for a start t1 past
	// the margin: the requeue is worth making once t1 comes within the
	// margin, and a cycle is asked for then (heldWake).
	worth func(t1 int64) bool
}

// setUp reads the head and its start from the main pass of EASY's plan
// (m, and its brief mb), sets up the tries, and says whether EASY's plan
// goes on to its backfill pass: it does unless a try passes its gate.
func (g *guaranteeTries) setUp(m *model.Decision, mb baseline.Brief) bool {
	c := g.c
	h, s := c.h, c.s
	if len(m.Reservations) == 0 {
		return true
	}
	g.asked = true
	head := m.Reservations[0]
	t0 := baseline.Rel(s.Now, head.Start)
	if t0 <= g.margin {
		g.nearHead = true
		return true
	}
	if h.mem.tuner.Params.HoldPreemption {
		// Too much work lost to preemption lately: the head waits for
		// what EASY gives it.
		return true
	}
	first, seen := h.mem.firstReserved[head.JobID]
	thresholdPassed := seen && s.Now.Sub(first) > h.cfg.Preempt.Threshold
	g.head, g.headReq = head.JobID, profile.RequestOf(&s.Queued[mb.Reservations[0]])
	// The head's promise, the start of its first reservation, is at stake
	// when EASY alone would start it later. A try that keeps it is then
	// worth its suspensions whatever it gains, and asks every job that
	// can yield, even one whose median says it ends within MinGain
	// (endsSoon): such a job was asked when the promise was made, and
	// dropping it moves the head back to that job's limit (13 minutes
	// past the promise, on a 20,000-job synthetic workload).
	promise := int64(-1)
	if p := baseline.Rel(s.Now, first); seen && p < t0 {
		promise = p
	}
	g.keepPromise = promise >= 0
	minGain := baseline.Seconds(h.cfg.Preempt.MinGain)
	last := t0 - minGain - 1
	if g.keepPromise {
		last = max(last, promise)
	}
	keepPromise := g.keepPromise
	g.tries[0] = guaranteeTry{last: last, keep: func(t1 int64) bool { return t0-t1 > minGain || keepPromise && t1 <= promise }}
	g.n = 1
	margin := g.margin
	switch {
	case thresholdPassed:
		g.tries[1] = guaranteeTry{requeue: true, last: min(margin, t0-1), keep: func(t1 int64) bool { return t1 <= margin && t0-t1 > 0 }}
		g.n = 2
	case t0-margin > margin && len(mb.ReservationCards) > 0:
		// Jobs lent into windows on the head's cards may keep it waiting
		// past the moment EASY, which lends nothing so, would have
		// started it (its promise is then still off: the windows end by
		// it). They are requeued now when that starts the head within
		// the margin, more than the margin (the requeue's own notice)
		// before they are expected to end, and the card-time its other
		// cards would stand idle meanwhile exceeds the work their
		// requeue throws away, less the work they are expected to lose
		// at their windows' ends (lentCost). On NASA-iPSC at load 0.7
		// the whole machine's job waited 2.6 h for lent jobs. The bar is
		// the margin, not MinGain: they were lent the head's own cards,
		// and a head kept a few minutes past EASY's start moves every
		// job behind it (NASA-iPSC at load 0.7: the largest jobs' p95
		// wait 2.7% over EASY's with MinGain, EASY's with the margin).
		if g.held = c.lentOn(mb, g.planned); len(g.held) > 0 {
			wait, lentCards, net := c.lentCost(g.held, t0)
			others := float64(m.Reservations[0].Count - lentCards)
			worth := func(t1 int64) bool {
				gain := wait - float64(t1)
				return gain > float64(margin) && others*gain > net
			}
			g.tries[1] = guaranteeTry{requeue: true, held: true, last: min(margin, t0-1), worth: worth,
				keep: func(t1 int64) bool { return t1 <= margin && worth(t1) }}
			g.n = 2
		}
	}
	return !g.gateNext()
}

// gateNext gates the tries not gated yet, in order, and says whether one
// passed: it is the one walk plans.
func (g *guaranteeTries) gateNext() bool {
	for g.at < g.n {
		k := g.at
		g.at++
		if g.gate(k) {
			g.cur, g.gated = k, true
			return true
		}
	}
	return false
}

// gate says whether try k is worth planning, and prepares it: not past
// the budget, not when no job it tells to yield is left, nor when too
// few cards can be free by the last start its keep accepts.
func (g *guaranteeTries) gate(k int) bool {
	c := g.c
	h := c.h
	tr := &g.tries[k]
	if baseline.Done(g.ctx) != nil {
		return false // past the budget: EASY's own guarantee
	}
	// The jobs told to yield besides those planned: the other backfill
	// jobs that can, each once a cycle per kind of try (at 65,536 cards
	// most running jobs are backfill jobs: a map of them all, and their
	// quantiles, every try was a tenth of the plan).
	kind := b2i(tr.requeue)
	adds := &c.yieldable[kind]
	if tr.held {
		c.yieldAsked[kind] = true // the only requeue try of the cycle
		*adds = g.held
	} else if !c.yieldAsked[kind] {
		cands := c.yieldCandidates(g.planned, tr.requeue)
		if !g.keepPromise && !h.noFreeBound && !c.mayBeFree(c.allYield(g.prep.Until, cands), tr.last, g.headReq) {
			// Which of them may yield asks each whether it ends soon
			// (its median remaining time: every running job's
			// distribution read, 5 ms of a plan at 65,536 cards). First
			// the bound with every one of them told to, which no try
			// beats: most tries end here.
			return false
		}
		c.yieldAsked[kind] = true
		*adds = h.yieldBuf[kind][:0]
		for _, y := range cands {
			if g.keepPromise || !c.endsSoon(y.i) {
				*adds = append(*adds, y)
			}
		}
		h.yieldBuf[kind] = *adds // grown: the next cycle's buffer
	}
	if len(*adds) == 0 {
		return false
	}
	g.adds = *adds
	alt := g.prep
	h.tryUntil[kind] = append(h.tryUntil[kind][:0], g.prep.Until...)
	alt.Until = h.tryUntil[kind]
	for _, y := range *adds {
		if u, ok := c.releasedUntil(y.i, y.rel); ok {
			alt.Until[y.i] = u
		}
	}
	alt.Slot = 1 // its own kept profile: most cards differ from prep's
	if tr.requeue {
		alt.Slot = 2
	}
	// A try the budget cuts before it decides the head is not kept:
	// EASY's own plan stands.
	alt.WhatIf = true
	g.alt = alt
	// Too few cards can be free by the last start keep accepts, whatever
	// the walk would place: no plan needed.
	free := c.mayBeFree(alt.Until, tr.last, g.headReq)
	if !free && tr.held {
		g.wakeHeld(alt.Until, tr) // with or without the bound: a plan's ReplanBy is the same
	}
	return h.noFreeBound || free
}

// wakeHeld asks for a cycle (heldWake) when a held try would be worth
// making but for the head's other cards, which other jobs hold past the
// margin: at the first time their limits may free them, less the margin,
// so that the lent jobs' notice runs out as the head's cards come free.
// The cycle then plans the try as at any other. Without it the requeue
// waited for the cycle that freed the cards, and the head started a
// notice after EASY started it. A job that ends before its limit cannot
// be foreseen so: on Lublin-256's first 1,500 jobs at load 0.9 the
// 256-card head's other cards came free when a 2-card job ended early,
// and it still starts a minute after EASY starts it.
func (g *guaranteeTries) wakeHeld(until []int64, tr *guaranteeTry) {
	c := g.c
	ts := append(c.h.wakeTs[:0], until...)
	slices.Sort(ts)
	ts = slices.Compact(ts)
	c.h.wakeTs = ts
	// mayBeFree only grows with t: the first time it holds, by halves.
	k, _ := slices.BinarySearch(ts, tr.last+1)
	ts = ts[k:]
	i := sort.Search(len(ts), func(i int) bool { return c.mayBeFree(until, ts[i], g.headReq) })
	if i == len(ts) || !tr.worth(ts[i]) {
		return
	}
	c.heldWake = c.s.Now.Add(time.Duration(ts[i]-g.margin) * time.Second)
}

// walk plans the try gated, and returns its decision, brief and yields
// when it is kept.
func (g *guaranteeTries) walk() (*model.Decision, baseline.Brief, map[int]preempt.Release, bool) {
	if !g.gated {
		return nil, baseline.Brief{}, nil, false
	}
	g.gated = false
	c := g.c
	h, s := c.h, c.s
	tr := &g.tries[g.cur] // gate checked the budget just before
	// The main pass alone says where the head would start, and most
	// tries gain too little to keep: plan the rest only for one kept,
	// or when the head was left to the backfill pass.
	d, b, full, err := h.core.MainThen(g.ctx, s, g.alt, func(m *model.Decision, _ baseline.Brief) bool {
		t1, decided := int64(0), startsJob(m, g.head)
		if !decided && len(m.Reservations) > 0 && m.Reservations[0].JobID == g.head {
			t1, decided = baseline.Rel(s.Now, m.Reservations[0].Start), true
		}
		return !decided || tr.keep(t1)
	})
	if err != nil || !full {
		return nil, baseline.Brief{}, nil, false
	}
	if startsJob(d, g.head) {
		if !tr.keep(0) {
			return nil, baseline.Brief{}, nil, false
		}
		return d, b, g.yields(), true
	}
	if len(d.Reservations) == 0 || d.Reservations[0].JobID != g.head {
		return nil, baseline.Brief{}, nil, false
	}
	if t1 := baseline.Rel(s.Now, d.Reservations[0].Start); !tr.keep(t1) {
		return nil, baseline.Brief{}, nil, false
	}
	return d, b, g.yields(), true
}

// yields is the kept try's yields: those planned and those it told. The
// map is the planner's, cleared each plan.
func (g *guaranteeTries) yields() map[int]preempt.Release {
	h := g.c.h
	if h.yielding == nil {
		h.yielding = make(map[int]preempt.Release, len(g.planned)+len(g.adds))
	}
	y := h.yielding
	clear(y)
	maps.Copy(y, g.planned)
	for _, a := range g.adds {
		y[a.i] = a.rel
	}
	if g.tries[g.cur].held {
		g.c.heldYield = make(map[int]bool, len(g.adds))
		for _, a := range g.adds {
			g.c.heldYield[a.i] = true
		}
	}
	return y
}

// lentOn returns the running jobs lent into windows (planned to yield by
// their window: they cannot checkpoint) that hold any of the cards of b's
// first reservation, not told to yield yet, each with its release if
// requeued now: in the snapshot's order.
func (c *cycle) lentOn(b baseline.Brief, planned map[int]preempt.Release) []yielder {
	if len(planned) == 0 {
		return nil // no job holds a window (most cycles)
	}
	cards := b.ClaimCards(0) // sorted
	idx := slices.Sorted(maps.Keys(planned))
	var out []yielder
	for _, i := range idx {
		r := &c.s.Running[i]
		if r.Job.Checkpointable {
			continue
		}
		if _, told := c.h.mem.yielding[r.Job.ID]; told {
			continue
		}
		if _, windowed := c.runWindow(i); !windowed {
			continue
		}
		if !slices.ContainsFunc(c.runCards[i], func(id int) bool { _, ok := slices.BinarySearch(cards, id); return ok }) {
			continue
		}
		if rel := preempt.ReleaseOf(c.h.cfg.Preempt, r, c.s.Now, true); rel.OK {
			out = append(out, yielder{i, rel})
		}
	}
	return out
}

// lentCost is what the lent jobs held (lentOn) cost a head that EASY
// starts at t0 with them: how long it is expected to wait for them if they
// run on (the mean of the last one's end, by t0), the cards they hold, and
// what a requeue now costs net, in card-seconds: the work it throws away
// less the loss it spares them.
//
// A requeue now throws away the card-seconds they have run. Left to run,
// a lent job that outlives its window is requeued at the window's end all
// the same, with the work it did until then: that loss is expected with
// the chance that it outlives the window, and a requeue now saves it. On
// KTH-SP2 a 64-processor head waited 1,309 s for a 12-processor job that
// had run 9,586 s, and which was then requeued at its window's end: the
// work was lost and the head held all the same. Its history gave it a 29%
// chance of outliving the window, too little to requeue it (52 idle
// processors for the expected 847 s against 76,600 card-seconds): the
// weighing is of expectations, and that job was the unlucky 29%.
func (c *cycle) lentCost(held []yielder, t0 int64) (wait float64, cards int, net float64) {
	ds := make([]estimate.Dist, 0, len(held))
	for _, y := range held {
		rj := c.runningJobOf(y.i) // before load: runningRem's are not made yet
		rem := rj.remaining(c.grace)
		ds = append(ds, rem)
		n := float64(len(c.runCards[y.i]))
		cards += len(c.runCards[y.i])
		net += n * rj.elapsed
		if end, ok := c.runWindow(y.i); ok {
			w := float64(max(baseline.Rel(c.s.Now, end), 0))
			net -= rem.Survival(w) * n * (rj.elapsed + w)
		}
	}
	mx := estimate.MaxOf(ds).Cap(float64(t0))
	return mx.Mean(), cards, net
}

// mayBeFree says whether the head's cards (req) can all be free at t
// (seconds from now) when running job i holds its cards until until[i]:
// at most every card but those of the jobs still holding them then is,
// and a head that needs its cards on one node (or one island of one, or
// PerNode of them on each of its nodes) needs a node (enough nodes) with
// that many; one that needs one switch needs them all under one switch
// (a node that names none is a switch of its own, as placement has it).
// A head start needs its cards free; the main pass's starts only take
// more of them. On hgx:128, a 64-card gang of whole nodes often finds
// enough cards free by then and not eight whole nodes; at 65,536 cards,
// a 256-card gang of one switch finds 32 whole nodes free across the
// cluster and not under one switch: the try is not planned.
func (c *cycle) mayBeFree(until []int64, t int64, req profile.Request) bool {
	if t < 0 {
		return false
	}
	perNode, nodes := 0, 0
	switch {
	case req.Topology == model.TopologySameNode || req.Topology == model.TopologySameIsland:
		perNode, nodes = req.Cards, 1
	case req.PerNode > 0:
		perNode, nodes = req.PerNode, req.Cards/req.PerNode
	}
	oneSwitch := req.Topology == model.TopologySameSwitch
	n := len(c.lay.Cards)
	var held []int32 // cards held past t, per node
	if perNode > 0 || oneSwitch {
		held = resized(&c.h.heldPer, len(c.lay.Nodes))
		clear(held)
	}
	for i, u := range until {
		if u <= t {
			continue
		}
		n -= len(c.runCards[i])
		if held != nil {
			for _, id := range c.runCards[i] {
				held[c.lay.Cards[id].Node]++
			}
		}
	}
	if n < req.Cards || held == nil {
		return n >= req.Cards
	}
	if !oneSwitch {
		for k, nd := range c.lay.Nodes {
			if nd.Len-int(held[k]) >= perNode {
				if nodes--; nodes <= 0 {
					return true
				}
			}
		}
		return false
	}
	// Per switch: the nodes with PerNode free (or the cards free), and
	// each node without a switch alone.
	per := resized(&c.h.freePerSwitch, len(c.lay.Switches))
	clear(per)
	need := req.Cards
	if perNode > 0 {
		need = nodes
	}
	for k, nd := range c.lay.Nodes {
		free := nd.Len - int(held[k])
		if perNode > 0 {
			free = b2i(free >= perNode)
		}
		if nd.Switch < 0 {
			if free >= need {
				return true
			}
			continue
		}
		if per[nd.Switch] += free; per[nd.Switch] >= need {
			return true
		}
	}
	return false
}

// endsSoon says whether running job i is expected to end within MinGain
// (the median of its remaining time): telling it to yield could gain the
// head no more than that, whatever the limits say. The gain a try
// measures is by the limits, and a job well inside its limit (often, and
// often a backfill job EASY itself started) may be about to end: on
// synth seed 3 at load 0.7, a job suspended for a 10-minute gain by the
// limits gained the head 114 s and held a later job back 432 s.
//
// Only the job's own history is trusted for this: a job whose estimate
// rests on other users' jobs (the class's, everyone's) or on nothing is
// taken at its limit, as EASY takes it, and may yield.
func (c *cycle) endsSoon(i int) bool {
	if !c.runningEst(i).own {
		return false
	}
	if c.soon == nil {
		c.soon = make([]int8, len(c.s.Running))
	}
	if c.soon[i] == 0 {
		c.soon[i] = -1
		if rj := c.runningJobOf(i); rj.heldQuantile(c.grace, 0.5) <= c.h.cfg.Preempt.MinGain.Seconds() {
			c.soon[i] = 1
		}
	}
	return c.soon[i] > 0
}

// alignNow says whether this cycle places end-aligned (Config.AlignEnds):
// configured so, the history shows time limits that order runtimes, and
// it holds a job of at least the cards of the cluster's largest node.
// Aligned placement empties nodes for such jobs; a workload without them
// gains nothing by it and pays for it: Philly's VC trace on hgx:4 at load
// 0.7 (jobs of 1 to 4 cards, nodes of 8) read a bounded slowdown ×1.0023
// of EASY's aligned, its 2-card jobs' ×1.27, with nothing else differing
// from EASY's run. Until the history holds enough finished jobs to tell,
// placement is best fit.
func (h *Huitian) alignNow(s *model.Snapshot) bool {
	if !h.cfg.AlignEnds || h.mem.hist.MaxCards() < s.Cluster.Layout().MaxNodeUsable {
		return false
	}
	spread, ok := h.mem.hist.LimitSpread()
	return ok && spread <= h.cfg.AlignSpread
}

// easyParams are the guarantee's: EASY at the snapshot's reservation depth
// (the planner's when it sets none), the large gangs' reservations, and
// this cycle's placement (alignNow).
func (h *Huitian) easyParams(s *model.Snapshot) baseline.Params {
	depth := s.Options.ReservationDepth
	if depth <= 0 {
		depth = h.cfg.Depth
	}
	above := s.Cluster.Layout().LargeAbove()
	return baseline.Params{Name: "easy", Depth: depth, Backfill: true,
		LargeDepth: h.cfg.LargeDepth, Large: func(j *model.Job) bool { return largeGang(j, above) },
		AlignEnds: h.alignNow(s)}
}

// largeGang says whether j is a large gang: more than above cards
// (Layout.LargeAbove), placed by topology (whole nodes, one node, island
// or switch). Cards freed here and there by backfill do not add up to a
// place for it, so backfill starves it behind the head; a job that takes
// any cards can use whichever come free, and reserving for it as well
// cost the small jobs more than it gave it (KTH-SP2 on 80 processors:
// p95 wait 34.6 h against 32.4 h; at its own size, bounded slowdown 83.0
// against 75.1).
func largeGang(j *model.Job, above int) bool {
	return j.Cards > above && (j.Topology != model.TopologyAny || j.CardsPerNode > 0)
}

// saturated reports whether the queued work, by the time limits, would
// keep every usable card busy for longer than SaturatedBacklog. Jobs larger
// than the usable cards never run and do not count. It is computed once a
// cycle.
func (c *cycle) saturated() bool {
	if c.sat != 0 {
		return c.sat > 0
	}
	usable := c.lay.UsableCards
	work := 0.0
	for i := range c.s.Queued {
		if j := &c.s.Queued[i]; j.Cards <= usable {
			work += float64(j.Cards) * j.TimeLimit.Seconds()
		}
	}
	c.sat = -1
	if usable == 0 || work/float64(usable) > c.h.cfg.SaturatedBacklog.Seconds() {
		c.sat = 1
	}
	return c.sat > 0
}

// behindTheirHeads moves each queued job that yielded its cards for
// another queued job (memory.yieldedFor) to right behind that job, when
// it was ahead of it in order (queue positions into s.Queued): a job never
// takes back the cards it freed for the job it yielded them to. A job back
// in the queue after a preemption (memory.preempted) also goes behind the
// last job in order that holds a head's promise (memory.firstReserved):
// it keeps its submit time, and ahead of the promised head it would take
// the cards promised (seen on 20,000-job synthetic workloads: a job
// suspended for one head came back when that one started and took the
// next head's cards, 31 minutes past its promise). A job only moves to a
// later position, so every chain of moves ends at a job that stays, and
// each job is emitted once.
func (c *cycle) behindTheirHeads(order []int) []int {
	m := &c.h.mem
	if len(m.yieldedFor) == 0 && (len(m.preempted) == 0 || len(m.firstReserved) == 0) {
		return order
	}
	// Only the jobs matchQueued found tagged, or could not vouch for
	// (c.tagged), can move or be moved behind: the last position of a
	// promised head, whether a job back from a preemption is ahead of it,
	// and the positions of the jobs yielded for are read from those
	// alone, in order (walking a deep queue's every memo entry twice a
	// cycle was 5% of a million-job replay, in which the maps change in
	// one cycle of 200).
	kept := c.h.tagKept[:0]
	for _, k := range c.tagged {
		if t := c.tagsOf(k); t.any() {
			kept = append(kept, k)
		}
	}
	c.h.tagKept = kept
	if len(kept) == 0 {
		return order
	}
	pos := resized(&c.h.tagPos, len(c.s.Queued))
	for n, k := range order {
		pos[k] = n
	}
	slices.SortFunc(kept, func(a, b int) int { return cmp.Compare(pos[a], pos[b]) })
	promised, firstBack := -1, -1
	var at map[string]int // job yielded for → position in order
	for _, k := range kept {
		t, n := &c.memo[k].tags, pos[k]
		if t.reserved {
			promised = n
		}
		if firstBack < 0 && t.preempted {
			firstBack = n
		}
		if t.target {
			if at == nil {
				at = map[string]int{}
			}
			at[c.s.Queued[k].ID] = n
		}
	}
	back := firstBack >= 0 && firstBack < promised
	if at == nil && !back {
		return order
	}
	var behind map[int][]int // position of a target → the positions to put after it
	var moved []bool
	for _, k := range kept {
		t, n := &c.memo[k].tags, pos[k]
		target := -1
		if t.yf != "" {
			if p, ok := at[t.yf]; ok && p > n {
				target = p
			}
		}
		if back && t.preempted && promised > max(n, target) {
			target = promised
		}
		if target >= 0 {
			if behind == nil {
				behind = map[int][]int{}
				moved = make([]bool, len(order))
			}
			behind[target] = append(behind[target], n)
			moved[n] = true
		}
	}
	if behind == nil {
		return order
	}
	out := make([]int, 0, len(order))
	var emit func(n int)
	emit = func(n int) {
		out = append(out, order[n])
		for _, b := range behind[n] {
			emit(b)
		}
	}
	for n := range order {
		if !moved[n] {
			emit(n)
		}
	}
	return out
}

// tagsOf returns queued job k's membership in the memory's maps: carried
// from the last cycle while no membership changed since (memory.marks),
// else looked up.
func (c *cycle) tagsOf(k int) memberTags {
	m, t := &c.h.mem, &c.memo[k].tags
	if t.mark == m.marks+1 {
		return *t
	}
	id := c.s.Queued[k].ID
	_, reserved := m.firstReserved[id]
	*t = memberTags{mark: m.marks + 1, reserved: reserved, preempted: m.preempted[id], yf: m.yieldedFor[id]}
	if len(m.yieldedFor) > 0 {
		if c.yfTargets == nil {
			c.yfTargets = make(map[string]bool, len(m.yieldedFor))
			for _, f := range m.yieldedFor {
				c.yfTargets[f] = true
			}
		}
		t.target = c.yfTargets[id]
	}
	return *t
}

// contracts are the running backfill jobs that must go: those an earlier
// cycle told to yield, gone when their notice runs out, and those
// admitted on their predicted runtime into claimed cards, planned to be
// gone when their window ends, or a margin from now once they overran it.
func (c *cycle) contracts() map[int]preempt.Release {
	var out map[int]preempt.Release
	for i := range c.s.Running {
		r := &c.s.Running[i]
		if r.Kind != model.Backfill {
			continue // only backfill jobs yield, or have windows
		}
		if gone, ok := c.h.mem.yielding[r.Job.ID]; ok {
			// Told to yield by an earlier cycle: gone by then.
			at := gone
			if at.Before(c.s.Now) {
				at = c.s.Now
			}
			action := model.PreemptRequeue
			if r.Job.Checkpointable {
				action = model.PreemptSuspend
			}
			if out == nil {
				out = map[int]preempt.Release{}
			}
			out[i] = preempt.Release{OK: true, At: at, Action: action, Notice: at.Sub(c.s.Now), Lost: preempt.Lost(r, action, at)}
			continue
		}
		// A checkpointable job is suspended with notice instead, as any.
		if r.Job.Checkpointable {
			continue
		}
		w, ok := c.runWindow(i)
		if !ok {
			continue
		}
		at := w
		if soon := c.s.Now.Add(c.h.cfg.Preempt.Margin); at.Before(soon) {
			at = soon
		}
		if out == nil {
			out = map[int]preempt.Release{}
		}
		out[i] = preempt.Release{OK: true, At: at, Action: model.PreemptRequeue, Notice: c.h.cfg.Preempt.Margin,
			Lost: preempt.Lost(r, model.PreemptRequeue, at)}
	}
	return out
}

// runWindow is running job i's window end (the memory's window), looked
// up once a cycle: the guarantee's contracts and replanBy ask for every
// backfill job, and at 65,536 cards most of 28,000 running jobs are.
func (c *cycle) runWindow(i int) (time.Time, bool) {
	if c.wins == nil {
		c.wins = resized(&c.h.wins, len(c.s.Running))
	}
	w := &c.wins[i]
	if w.no != c.no {
		w.t, w.ok = c.h.mem.window[c.s.Running[i].Job.ID]
		w.no = c.no
	}
	return w.t, w.ok
}

// runWin is a running job's window end as runWindow found it in cycle no.
type runWin struct {
	t  time.Time
	ok bool
	no uint64
}

// withReleases returns the running jobs' busy times (base, from
// baseline.HeldUntils) with each job in rel ending when it must have
// yielded (its time limit cut to that), for EASY to plan on: base itself
// when rel is empty, else a copy (in the planner's buffer: one a cycle).
func (c *cycle) withReleases(base []int64, rel map[int]preempt.Release) []int64 {
	if len(rel) == 0 {
		return base
	}
	c.h.relUntil = append(c.h.relUntil[:0], base...)
	out := c.h.relUntil
	for i, r := range rel {
		if u, ok := c.releasedUntil(i, r); ok {
			out[i] = u
		}
	}
	return out
}

// yieldCandidates are the backfill jobs not in planned that can yield
// (requeued too when requeue), in running order, with how each would: the
// planner's buffer.
func (c *cycle) yieldCandidates(planned map[int]preempt.Release, requeue bool) []yielder {
	out := c.h.candBuf[:0]
	for i := range c.s.Running {
		r := &c.s.Running[i]
		if _, ok := planned[i]; ok || r.Kind != model.Backfill {
			continue
		}
		if rel := preempt.ReleaseOf(c.h.cfg.Preempt, r, c.s.Now, requeue); rel.OK {
			out = append(out, yielder{i, rel})
		}
	}
	c.h.candBuf = out
	return out
}

// allYield returns until (each running job's busy time, seconds from
// now) with every job of cands ending when it must have, or at its own
// busy time when that is sooner: no try of the guarantee, which tells
// some of them to yield, frees more cards sooner, so a head that cannot
// be free by a time with it cannot in any try (mayBeFree). The slice is
// the planner's buffer.
func (c *cycle) allYield(until []int64, cands []yielder) []int64 {
	out := append(c.h.allUntil[:0], until...)
	c.h.allUntil = out
	for _, y := range cands {
		if u, ok := c.releasedUntil(y.i, y.rel); ok {
			out[y.i] = min(out[y.i], u)
		}
	}
	return out
}

// releasedUntil is running job i's busy time (seconds from now) when it
// yields by r, and whether that comes before its limit.
func (c *cycle) releasedUntil(i int, r preempt.Release) (int64, bool) {
	run := &c.s.Running[i]
	if lim := r.At.Sub(run.Start); lim < run.Job.TimeLimit {
		return baseline.HeldUntil(c.s.Now, run.Start, lim, c.grace), true
	}
	return 0, false
}

// yielder is a running job that a try of the guarantee tells to yield,
// by index into s.Running, and how it would.
type yielder struct {
	i   int
	rel preempt.Release
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func startsJob(d *model.Decision, id string) bool {
	for _, st := range d.Starts {
		if st.JobID == id {
			return true
		}
	}
	return false
}

// victims keeps, of the jobs that could yield, those on the head's cards
// in d (their numbers in its brief b) that are expected to run past its
// reservation and are due to be told now (the reservation is within
// their notice plus the lookahead); a job that cannot checkpoint,
// admitted into a window, once its window ends within its notice.
func (c *cycle) victims(d *model.Decision, b baseline.Brief, headID string, yield map[int]preempt.Release) map[int]preempt.Release {
	if len(d.Reservations) == 0 || d.Reservations[0].JobID != headID {
		return nil // the head starts now: nothing held its cards that had to yield
	}
	if len(yield) == 0 {
		return nil
	}
	cards := b.ClaimCards(0) // sorted
	t := baseline.Rel(c.s.Now, d.Reservations[0].Start)
	look := baseline.Seconds(c.h.cfg.Preempt.Lookahead)
	out := map[int]preempt.Release{}
	for i, rel := range yield {
		r := &c.s.Running[i]
		hit := slices.ContainsFunc(c.runCards[i], func(id int) bool { _, ok := slices.BinarySearch(cards, id); return ok })
		if !hit || r.ProtectedUntil.After(c.s.Now) {
			continue // protected: a later cycle tells it, once protection ends
		}
		if _, told := c.h.mem.yielding[r.Job.ID]; told {
			continue // told already, by an earlier cycle: it is on its way out
		}
		if w, ok := c.h.mem.window[r.Job.ID]; ok && rel.Action == model.PreemptRequeue && c.s.Now.Add(c.h.cfg.Preempt.Margin).Before(w) && !c.heldYield[i] {
			// Within its window by more than its notice: it may yet end in
			// time. Told only once past it, a job whose window ended at
			// the reservation (most do) left the head a notice late (60 s,
			// three times on KTH-SP2 at load 0.7).
			continue
		}
		due := baseline.Rel(c.s.Now, rel.At)
		if due > t || t > due+look {
			continue
		}
		out[i] = rel
	}
	return out
}

// applyStarts records every start of the guarantee: regular ones (the
// main pass) and EASY's backfill, which ends by its time limit before any
// reservation it could delay.
func (c *cycle) applyStarts(core *model.Decision) {
	for n, st := range core.Starts {
		j := &c.s.Queued[c.core.Starts[n]]
		cards := c.core.StartCards[n]
		e := c.queuedEst(c.core.Starts[n])
		sp := startSpec{hold: max(ceilSec(e.dist.Quantile(c.h.cfg.Quantile)), 1), kind: st.Kind, frag: st.Fragment, reason: st.Reason, refs: st.Cards, guaranteed: true}
		if st.Kind == model.Backfill {
			sp.reason = "safe backfill: ends by its time limit before any reservation it could delay (EASY); " + st.Reason
		}
		// A job that fits now is held in the predicted profile no longer
		// than its cards are free: EASY placed it on its limit. (No
		// reservation claims a card yet on a flat machine's.)
		if c.flat == nil {
			for _, id := range cards {
				sp.hold = min(sp.hold, c.prof.Window(id, 0))
			}
		}
		sp.hold = max(sp.hold, 1)
		c.start(j, cards, e, sp)
	}
}

// applyReservations holds EASY's reservations on EASY's cards. In the
// predicted profile a reservation claims its cards from the Quantile of
// its start distribution (when the jobs holding them are expected to have
// ended), never later than EASY's start: backfill beyond EASY judges its
// windows and its risk by that. The reservation reported is EASY's: the
// start the time limits guarantee; the expected start goes with the
// pending entry. Then the head's due preemptions.
func (c *cycle) applyReservations(core *model.Decision, tell map[int]preempt.Release) error {
	q := c.h.cfg.Quantile
	// A large job's reservation beyond the head's protects its cards and
	// draws no backfill to them, as in EASY's plan (ReserveProtect).
	reserve := func(rv *resv, start, end int64) error {
		if rv.protect {
			return c.prof.ReserveProtect(rv.cards, start, end)
		}
		return c.prof.Reserve(rv.cards, start, end)
	}
	// EASY's interval: from its start for the job's limit.
	end := func(rv *resv) int64 { return rv.limit + max(baseline.Seconds(rv.job.TimeLimit), 1) }
	easy := func(rv *resv) error {
		if err := reserve(rv, rv.limit, end(rv)); err != nil {
			return fmt.Errorf("solver: reservation of %s: %w", rv.job.ID, err)
		}
		return nil
	}
	for n, r := range core.Reservations {
		limit := max(baseline.Rel(c.s.Now, r.Start), 1)
		// The flat prediction reads a claim by its groups; the predicted
		// profile card by card, the claim read out (LazyClaims).
		cards := c.core.ReservationCards[n]
		if c.flat == nil {
			cards = c.core.ClaimCards(n)
		}
		c.resv = append(c.resv, resv{job: &c.s.Queued[c.core.Reservations[n]], t: limit, limit: limit,
			cards: cards, protect: n >= len(core.Reservations)-c.core.Large})
	}
	// EASY's intervals first, exactly: they are disjoint where they share
	// cards (a later reservation may sit before an earlier one's start).
	// Then each claim from its expected start, where nothing else holds
	// the cards in between. A lone reservation (most cycles) is reserved
	// once, from its expected start to its end: a pass over its cards
	// instead of two, the same spans but joined (on a flat machine's
	// head, tens of thousands of cards a cycle).
	lone := len(c.resv) == 1
	if !lone {
		for k := range c.resv {
			if err := easy(&c.resv[k]); err != nil {
				return err
			}
		}
	}
	for k := range c.resv {
		rv := &c.resv[k]
		var hs []holder // the jobs holding its cards (one list for both uses)
		if c.flat != nil {
			var err error
			if hs, err = c.claimHolders(); err != nil {
				return err
			}
		} else {
			hs = c.holdersOf(rv.cards)
		}
		sd := c.startDistBy(hs).Cap(float64(rv.limit))
		t := min(max(ceilSec(sd.Quantile(q)), 1), rv.limit)
		if f := c.flat; f != nil {
			// One reservation (flatFor): claimed from t when every job
			// holding its cards has released them by then, else from its
			// limit, as the Profile's Reserve allows.
			late := int64(0)
			for _, hd := range hs {
				late = max(late, c.releaseOf(hd))
			}
			if t = max(t, min(late, rv.limit)); t == rv.limit || late > t {
				if t = rv.limit; late > t {
					return fmt.Errorf("solver: reservation of %s: its cards are held %d s, past its start at %d s", rv.job.ID, late, t)
				}
			}
			f.claim(c.core.Pool.ClaimBound(), t)
		} else {
			for _, id := range rv.cards {
				t = max(t, min(c.prof.Release(id), rv.limit))
			}
			if lone {
				// The claim and EASY's interval at once, or EASY's alone.
				if t == rv.limit || reserve(rv, t, end(rv)) != nil {
					t = rv.limit
					if err := easy(rv); err != nil {
						return err
					}
				}
			} else if t < rv.limit && reserve(rv, t, rv.limit) != nil {
				t = rv.limit
			}
		}
		rv.t, rv.s = t, sd
		rv.conf = sd.CDF(float64(t))
		rv.survive = c.survivalBy(hs, t)
		j := rv.job
		at, exp := c.at(rv.limit), c.at(t)
		cr := &core.Reservations[k]
		c.d.Reservations = append(c.d.Reservations, model.Reservation{JobID: j.ID, Cards: cr.Cards, Count: cr.Count, CardNumbers: cr.CardNumbers, Start: at, Confidence: sd.CDF(float64(rv.limit))})
		c.addPending(c.core.Reservations[k], model.Pending{
			JobID: j.ID, Reason: model.PendingReserved, EstimatedStart: exp,
			Message: fmt.Sprintf("holds %d cards from %s at the latest (by the running jobs' limits); expected from %s (confidence %.2f)",
				cr.Count, at.UTC().Format(time.RFC3339), exp.UTC().Format(time.RFC3339), rv.conf),
		})
		if c.waiting == "" {
			c.waiting = j.ID
		}
		if k == 0 && len(tell) > 0 {
			c.preemptFor(j, rv.limit, tell)
		}
	}
	return nil
}

// survival is the probability that none of the running backfill jobs
// admitted into windows on cards still runs at t: the risk that earlier
// cycles already put on a reservation, which this cycle's admissions add
// to (delayOK bounds the total by ε).
func (c *cycle) survival(cards []int, t int64) float64 { return c.survivalBy(c.holdersOf(cards), t) }

// survivalBy is survival of the cards the jobs hs hold.
func (c *cycle) survivalBy(hs []holder, t int64) float64 {
	p := 1.0
	for _, hd := range hs {
		i, ok := hd.running()
		if !ok {
			continue
		}
		r := &c.s.Running[i]
		if _, windowed := c.runWindow(i); windowed && !r.Job.Checkpointable {
			rem, _ := c.runningRem(i)
			p *= rem.CDF(float64(t))
		}
	}
	return p
}

// replanBy is the decision's ReplanBy: the first time after now at which a
// cycle could tell a backfill job to yield for a reservation without
// anything else happening first — the end of a job's protection or
// window, the reservation coming within a job's notice plus the
// lookahead, within the margin when a job holds a window (it is requeued
// then if it overran), the head passing the requeue threshold, or the
// head's other cards coming within the margin of free while lent jobs
// hold the rest (heldWake). Without a cycle
// then, an event-driven owner would leave the head waiting until the
// next arrival or completion. Zero when no reservation waits or no
// backfill job runs.
func (c *cycle) replanBy() time.Time {
	if len(c.d.Reservations) == 0 {
		return time.Time{}
	}
	now, cfg := c.s.Now, c.h.cfg.Preempt
	var by time.Time
	note := func(t time.Time) {
		if t.After(now) && (by.IsZero() || t.Before(by)) {
			by = t
		}
	}
	notice := cfg.Margin
	lent, windowed := false, false
	for i := range c.s.Running {
		r := &c.s.Running[i]
		if r.Kind != model.Backfill {
			continue
		}
		lent = true
		note(r.ProtectedUntil)
		w, ok := c.runWindow(i)
		note(w)
		windowed = windowed || ok
		notice = max(notice, preempt.Notice(cfg, &r.Job))
	}
	for i := range c.d.Starts {
		if st := &c.d.Starts[i]; st.Kind == model.Backfill {
			lent = true
			note(st.ProtectedUntil)
			note(st.WindowEnd)
			windowed = windowed || !st.WindowEnd.IsZero()
		}
	}
	if !lent {
		return time.Time{}
	}
	head := c.d.Reservations[0]
	note(head.Start.Add(-notice - cfg.Lookahead))
	if windowed {
		// A job past its window is requeued once the head's reservation
		// is within the margin (the guarantee's nearHead), with the
		// margin as its notice: a cycle must come then. Without it the
		// next came by chance, and after its window's end (71 s before
		// the reservation on KTH-SP2 at load 0.9) the first was 56 s
		// before it: the head started 4 s past its promise.
		note(head.Start.Add(-cfg.Margin))
	}
	first, ok := c.h.mem.firstReserved[head.JobID]
	if !ok {
		first = head.Start
	}
	note(first.Add(cfg.Threshold))
	note(c.heldWake)
	return by
}

// preemptFor emits the preemptions of the head's victims, with a notice
// that runs out when its reservation starts, so that the cards are free
// then and not later because no cycle came at the right moment. The
// resource manager stops a job when its notice runs out, if it has not
// ended by then.
func (c *cycle) preemptFor(j *model.Job, t int64, yield map[int]preempt.Release) {
	var victims []preempt.Candidate
	for i, rel := range yield {
		r := &c.s.Running[i]
		// Expected to end by the reservation: let it finish.
		if rem, _ := c.runningRem(i); rem.Quantile(c.h.cfg.Quantile) <= float64(t) && rel.Action == model.PreemptSuspend {
			continue
		}
		rel.Notice = time.Duration(t) * time.Second
		victims = append(victims, preempt.Candidate{Index: i, Release: rel, Start: r.Start, ID: r.Job.ID})
	}
	preempt.Order(victims)
	for _, v := range victims {
		why := "%s's reservation at %s claims its cards"
		if w, ok := c.h.mem.window[v.ID]; c.heldYield[v.Index] {
			why = "%s could start at %s but for jobs lent into windows, this one among them; its other cards would stand idle for more card-time than they have run"
		} else if ok && !c.s.Now.Before(w) {
			why = "%s's reservation at %s claims its cards, and it ran past the window it was admitted into"
		} else if ok {
			why = "%s's reservation at %s claims its cards, and the window it was admitted into ends within its notice"
		}
		c.d.Preemptions = append(c.d.Preemptions, model.Preemption{
			JobID: v.ID, Action: v.Release.Action, Notice: v.Release.Notice, ForJobID: j.ID,
			Reason: fmt.Sprintf(why, j.ID, c.at(t).UTC().Format(time.RFC3339)),
		})
	}
}

// candidates are the queued jobs the guarantee neither started nor
// reserved for, in queue order.
func (c *cycle) candidates() []int {
	// The guarantee's starts and reservations, by queued index.
	taken := resized(&c.h.taken, len(c.s.Queued))
	clear(taken)
	for _, k := range c.core.Starts {
		taken[k] = true
	}
	for _, k := range c.core.Reservations {
		taken[k] = true
	}
	out := c.h.cands[:0]
	for _, idx := range c.order {
		if !taken[idx] {
			out = append(out, idx)
		}
	}
	c.h.cands = out
	return out
}
