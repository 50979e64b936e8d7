package sim

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/huitian/huitian/model"
)

// cycle runs one planning cycle at t: snapshot, plan, check, execute. It
// reports whether the decision freed cards at once.
func (e *engine) cycle(ctx context.Context, t int64) (released bool, err error) {
	e.cycles++
	now := e.at(t)
	e.snap.Now = now
	e.snap.Running = e.lists.running
	e.snap.Queued = e.lists.queued
	e.lists.snapLive = true
	var d *model.Decision
	if cp, ok := e.pl.(CardsPlanner); ok {
		// Each running job's cards as the simulator holds them, checked
		// when the job started: the same slice from one cycle to the next.
		e.runCards = e.runCards[:0]
		for _, ji := range e.lists.ridx {
			e.runCards = append(e.runCards, e.js[ji].cards)
		}
		d, err = cp.PlanCards(ctx, &e.snap, e.runCards)
	} else {
		d, err = e.pl.Plan(ctx, &e.snap)
	}
	if err != nil {
		return false, fmt.Errorf("sim: cycle %d at %s: plan: %w", e.cycles, now.UTC().Format(time.RFC3339), err)
	}
	if d == nil {
		return false, fmt.Errorf("sim: cycle %d at %s: plan returned no decision", e.cycles, now.UTC().Format(time.RFC3339))
	}
	e.meter.account(t)
	e.meter.statIdle, e.meter.statBf = d.Stats.IdleCards, d.Stats.BackfillCards
	e.meter.acc.accounted = e.meter.acc.accounted || d.Stats.IdleCards > 0 || d.Stats.BackfillCards > 0
	e.stamp++
	// 1. Preemptions first: a requeue without notice frees its cards for
	// the starts of the same decision.
	for i := range d.Preemptions {
		if err := e.preempt(&d.Preemptions[i], t); err != nil {
			return false, err
		}
	}
	// 2. Check every start before executing any.
	cards := make([][]int, len(d.Starts))
	for i := range d.Starts {
		ids, err := e.checkStart(&d.Starts[i])
		if err != nil {
			return false, err
		}
		cards[i] = ids
	}
	if len(d.Starts) > 0 {
		for pos, ji := range e.lists.qidx {
			e.js[ji].qpos = int32(pos)
		}
	}
	// 3. Execute the starts.
	for i := range d.Starts {
		e.start(&d.Starts[i], cards[i], t)
	}
	e.head(d, t)
	e.wakeAt(d.ReplanBy, t)
	// 4. Tell a Learner, then change the slices it saw.
	if e.learner != nil {
		e.learner.Decided(&e.snap, d)
	}
	if e.reporter != nil && e.meter.series != nil {
		e.meter.series.status(t, e.reporter.PlannerStatus())
	}
	e.lists.snapLive = false
	released = len(e.lists.released) > 0
	e.compact()
	return released, nil
}

// wakeAt makes a planning cycle happen at the decision's ReplanBy (whole
// seconds, rounded up) when nothing else would by then: an event-driven
// resource manager plans again when its planner asks, and so does huitian's
// own loop (CyclesLoop). Timer-driven cycles (CyclesInterval) plan on their
// ticks only, as such a resource manager does. One wake is pending at a
// time, the earliest asked for.
func (e *engine) wakeAt(by time.Time, t int64) {
	if by.IsZero() || e.cfg.Cycles == CyclesInterval {
		return
	}
	w := seconds(by.Sub(e.epoch))
	if w <= t || (e.wake > t && e.wake <= w) {
		return
	}
	e.wake = w
	e.heap.push(event{t: w, job: -1, kind: evWake})
}

func (e *engine) refuse(jobID, format string, args ...any) error {
	return &DecisionError{Cycle: e.cycles, Time: e.snap.Now, JobID: jobID, Reason: fmt.Sprintf(format, args...)}
}

// preempt executes one preemption: the job keeps working until the notice
// runs out, then yields (see yield).
func (e *engine) preempt(p *model.Preemption, t int64) error {
	ji, ok := e.lists.inRun[p.JobID]
	if !ok {
		if _, q := e.lists.inQueue[p.JobID]; q {
			return e.refuse(p.JobID, "preempted, but it is queued, not running")
		}
		return e.refuse(p.JobID, "preempted, but no such job is running")
	}
	j := &e.js[ji]
	if j.mark == e.stamp {
		return e.refuse(p.JobID, "preempted twice in one decision")
	}
	j.mark = e.stamp
	if p.Action != model.PreemptSuspend && p.Action != model.PreemptRequeue {
		return e.refuse(p.JobID, "preemption action %s: want suspend or requeue", p.Action)
	}
	if p.Notice < 0 {
		return e.refuse(p.JobID, "preemption notice %v: want ≥ 0", p.Notice)
	}
	if j.state == stYielding {
		return nil // already yielding: a planner may repeat itself during the notice
	}
	// The notice is the time until the cards must be free. A suspended
	// job writes its checkpoint at the end of the notice (the contract's
	// notice is its checkpoint cost plus a margin), so it stops working
	// checkpoint-cost before the notice runs out; a requeued job stops at
	// the end of the notice.
	notice := seconds(p.Notice)
	stop := notice
	if p.Action == model.PreemptSuspend {
		stop = max(notice-j.ckpt, 0)
	}
	if end, _ := e.segment(j, j.segStart); end <= t+stop {
		return nil // it ends before it has to stop
	}
	j.state = stYielding
	j.action = p.Action
	if stop == 0 {
		e.yield(ji, t)
		return nil
	}
	e.heap.push(event{t: t + stop, job: ji, gen: j.gen, kind: evYield})
	return nil
}

// checkStart checks one start against the cluster and the queue and
// returns its cards' dense numbers, which it takes at once
// (cardOwners.claim): the decision's later starts find them held, and a
// refused decision ends the run, with nothing to undo.
func (e *engine) checkStart(st *model.Start) ([]int, error) {
	ji, ok := e.lists.inQueue[st.JobID]
	if !ok {
		if rj, run := e.lists.inRun[st.JobID]; run {
			if e.js[rj].mark == e.stamp {
				return nil, e.refuse(st.JobID, "started, but it is running and preempted in this decision")
			}
			return nil, e.refuse(st.JobID, "started, but it is already running")
		}
		return nil, e.refuse(st.JobID, "started, but it is not in the queue")
	}
	j := &e.js[ji]
	if j.mark == e.stamp {
		return nil, e.refuse(st.JobID, "started twice in one decision")
	}
	j.mark = e.stamp
	if st.Kind != model.Regular && st.Kind != model.Backfill {
		return nil, e.refuse(st.JobID, "start kind %d: want regular or backfill", st.Kind)
	}
	want := e.trace[ji].Spec.Cards
	var ids []int
	var err error
	if st.Cards == nil && st.CardNumbers != nil {
		ids, err = e.takeNumbers(st, want)
	} else {
		ids, err = e.takeRefs(st, want)
	}
	if err != nil {
		return nil, err
	}
	if why := e.shape(&e.trace[ji].Spec, ids); why != "" {
		return nil, e.refuse(st.JobID, "%s", why)
	}
	return ids, nil
}

// takeRefs resolves a start's cards by reference (a planner that names
// them so: Planner.Plan) and takes them.
func (e *engine) takeRefs(st *model.Start, want int) ([]int, error) {
	if len(st.Cards) != want {
		return nil, e.refuse(st.JobID, "started on %d cards, it asks for %d", len(st.Cards), want)
	}
	// The layout's own references (model.Layout.RefsView): consecutive
	// cards, known without looking each up, and numbered by a slice of
	// the layout's own numbers (Layout.Run).
	view, isView := e.lay.ViewAt(st.Cards)
	var ids []int
	if !isView {
		ids = make([]int, 0, len(st.Cards))
	}
	next := 0 // the card after the last one resolved: planners list cards in order
	for k, ref := range st.Cards {
		id, ok := view+k, true
		if !isView {
			id, ok = e.lay.CardIDNear(ref, next)
		}
		next = id + 1
		if !ok {
			return nil, e.refuse(st.JobID, "card %s does not exist", ref)
		}
		if err := e.takeCard(st, id); err != nil {
			return nil, err
		}
		if !isView {
			ids = append(ids, id)
		}
	}
	if isView {
		return e.lay.Run(view, len(st.Cards)), nil
	}
	slices.Sort(ids)
	return ids, nil
}

// takeNumbers checks a start's cards by number (a CardsPlanner names them
// so: model.Start.CardNumbers), sorted and each once, and takes them, a
// word at a time along their runs. The slice is the job's cards from then
// on, handed back to the planner (CardsPlanner: neither modifies it),
// which knows its own start by it.
func (e *engine) takeNumbers(st *model.Start, want int) ([]int, error) {
	nums := st.CardNumbers
	if len(nums) != want {
		return nil, e.refuse(st.JobID, "started on %d cards, it asks for %d", len(nums), want)
	}
	// Run by run: sorted and each once when every run begins past the
	// last one's end. A slice of the layout's own numbers (a start on
	// consecutive free cards) is one run, known without a read.
	prev, n := -1, len(e.lay.Cards)
	for first, end := range e.lay.Runs(nums) {
		switch {
		case first < 0:
			return nil, e.refuse(st.JobID, "card number %d does not exist (the cluster has %d cards)", first, n)
		case end > n:
			return nil, e.refuse(st.JobID, "card number %d does not exist (the cluster has %d cards)", max(first, n), n)
		case first <= prev:
			return nil, e.refuse(st.JobID, "card numbers not sorted, or a card twice: %d after %d", first, prev)
		case !e.cards.claim(first, end):
			return nil, e.whyNot(st, first, end)
		}
		prev = end - 1
	}
	return nums, nil
}

// takeCard gives card id to a start, or says why it cannot have it.
func (e *engine) takeCard(st *model.Start, id int) error {
	if e.cards.claim(id, id+1) {
		return nil
	}
	return e.whyNot(st, id, id+1)
}

// whyNot says why a start cannot have cards first to end-1, of which one
// is unusable or held: by a running job, or by a start earlier in the
// same decision.
func (e *engine) whyNot(st *model.Start, first, end int) error {
	for id := first; id < end; id++ {
		switch {
		case !e.lay.Cards[id].Usable:
			return e.refuse(st.JobID, "card %s is unhealthy or on an unschedulable node", e.lay.Ref(id))
		case !e.cards.isHeld(id):
			continue
		}
		if o, ok := e.holderOf(id); ok {
			return e.refuse(st.JobID, "card %s is busy: job %q holds it", e.lay.Ref(id), e.trace[o].ID)
		}
		return e.refuse(st.JobID, "card %s is also given to another start in this decision", e.lay.Ref(id))
	}
	panic(fmt.Sprintf("sim: cards %d to %d refused, but each is usable and free", first, end-1))
}

// holderOf is the job holding card id since before this decision, when
// one does: a running or yielding job's cards are sorted.
func (e *engine) holderOf(id int) (int32, bool) {
	for ji := range e.js {
		j := &e.js[ji]
		if j.state != stRunning && j.state != stYielding {
			continue
		}
		if _, found := slices.BinarySearch(j.cards, id); found {
			return int32(ji), true
		}
	}
	return 0, false
}

// shape says how cards (sorted) break the job's placement constraint, or "".
func (e *engine) shape(spec *model.Job, ids []int) string {
	if spec.CardModel == "" && spec.Topology == model.TopologyAny && spec.CardsPerNode == 0 {
		return "" // any cards will do
	}
	l := e.lay
	if spec.CardModel != "" {
		for _, c := range ids {
			if m := l.Cards[c].Model; m != spec.CardModel {
				return fmt.Sprintf("card %s is a %q, the job asks for %q", l.Ref(c), m, spec.CardModel)
			}
		}
	}
	first := l.Cards[ids[0]]
	for _, c := range ids[1:] {
		loc := l.Cards[c]
		switch spec.Topology {
		case model.TopologySameNode:
			if loc.Node != first.Node {
				return fmt.Sprintf("cards on nodes %s and %s, the job asks for one node", l.Nodes[first.Node].Name, l.Nodes[loc.Node].Name)
			}
		case model.TopologySameIsland:
			if loc.Island != first.Island {
				return fmt.Sprintf("cards %s and %s are in different NVLink islands, the job asks for one", l.Ref(ids[0]), l.Ref(c))
			}
		case model.TopologySameSwitch:
			a, b := l.Nodes[first.Node].Switch, l.Nodes[loc.Node].Switch
			if loc.Node != first.Node && (a < 0 || a != b) {
				return fmt.Sprintf("cards on nodes %s and %s, not under one leaf switch", l.Nodes[first.Node].Name, l.Nodes[loc.Node].Name)
			}
		}
	}
	if per := spec.CardsPerNode; per > 0 {
		// Cards are numbered node by node: a node's cards are one run.
		for i := 0; i < len(ids); {
			n := l.Cards[ids[i]].Node
			k := i
			for k < len(ids) && l.Cards[ids[k]].Node == n {
				k++
			}
			if k-i != per {
				return fmt.Sprintf("%d cards on node %s, the job asks for %d per node", k-i, l.Nodes[n].Name, per)
			}
			i = k
		}
	}
	return ""
}

// start executes a checked start.
func (e *engine) start(st *model.Start, ids []int, t int64) {
	ji := e.lists.inQueue[st.JobID]
	j := &e.js[ji]
	j.state = stRunning
	j.segStart = t
	j.cards = ids
	j.kind = st.Kind
	if j.lent = st.Kind == model.Backfill && !st.WindowEnd.IsZero(); j.lent {
		e.lent++
	}
	e.cards.run(ids, j.lent) // taken since checkStart
	end, _ := e.segment(j, t)
	e.heap.push(event{t: end, job: ji, gen: j.gen, kind: evEnd})
	if j.restore > 0 {
		e.meter.acc.lostCardSeconds += float64(len(ids)) * float64(j.restore)
	}
	res := &e.res[ji]
	if res.Start < 0 {
		res.Start = t
		res.Kind = st.Kind
	}
	if res.Headed && res.HeadStart < 0 {
		res.HeadStart = t
	}
	if st.Kind == model.Backfill {
		res.Backfilled = true
		e.meter.acc.backfillStarts++
	} else {
		e.meter.acc.regularStarts++
	}
	spec := e.lists.queued[j.qpos]
	if spec.Cards <= e.cards.usable {
		e.meter.queuedFit--
	}
	e.lists.startedRun = append(e.lists.startedRun, model.Running{
		Job: spec, Cards: st.Cards, Start: e.snap.Now, Kind: st.Kind, // the decision is the simulator's (Planner)
	})
	e.lists.startedIdx = append(e.lists.startedIdx, ji)
	delete(e.lists.inQueue, st.JobID)
	e.lists.inRun[st.JobID] = ji
	if e.learner != nil {
		e.learner.Observe(model.Event{
			Kind: model.EventStarted, JobID: spec.ID, Time: e.snap.Now, Job: &spec, Alloc: st.Kind,
		})
	}
}

// head records the promise of the decision's first reservation to its
// job, the first time that job is the reserved head, and whether only jobs
// lent into windows keep it from its cards now (heldByLent).
func (e *engine) head(d *model.Decision, t int64) {
	cur := int32(-1)
	var r *model.Reservation
	if len(d.Reservations) > 0 {
		r = &d.Reservations[0]
		if ji, ok := e.lists.inQueue[r.JobID]; ok {
			cur = ji
			if res := &e.res[ji]; !res.Headed {
				res.Headed = true
				res.HeadPromise = int64(math.Round(r.Start.Sub(e.epoch).Seconds()))
			}
		}
	}
	held := cur >= 0 && e.heldByLent(r)
	if e.heldJob >= 0 && (e.heldJob != cur || !held) {
		e.res[e.heldJob].HeadHeld += t - e.heldFrom
		e.heldJob = -1
	}
	if held && e.heldJob < 0 {
		e.heldJob, e.heldFrom = cur, t
	}
}

// heldByLent says whether every card of reservation r is free or held by a
// job lent cards in a window (a backfill start beyond EASY on cards a
// reservation claims), and at least one is held so: the head waits for
// lent jobs alone, past the moment EASY, which lends nothing so, could
// have started it on those cards. A pass over the head's cards (a count's
// by the numbers the planner gave them), made only while such a job runs.
func (e *engine) heldByLent(r *model.Reservation) bool {
	if e.lent == 0 {
		return false
	}
	byLent := false
	held := func(id int) bool { // free or lent: not a card that rules it out
		switch {
		case !e.cards.isHeld(id):
		case e.cards.isLent(id):
			byLent = true
		default:
			return false
		}
		return true
	}
	for _, ref := range r.Cards {
		if id, ok := e.lay.CardID(ref); !ok || !held(id) {
			return false
		}
	}
	// A count's, when the planner named the cards it waits for, or
	// names them when asked (a head reservation 0: ClaimNamer).
	nums := r.CardNumbers
	if nums == nil && r.Cards == nil && r.Count > 0 {
		if cn, ok := e.pl.(ClaimNamer); ok {
			nums = cn.ReservationNumbers(0)
		}
	}
	for _, id := range nums {
		if !held(id) {
			return false
		}
	}
	return byLent
}

// compact applies the cycle's changes to the queued and running slices.
func (e *engine) compact() {
	if len(e.lists.startedIdx) > 0 {
		w := 0
		for r, ji := range e.lists.qidx {
			if e.js[ji].state == stQueued {
				e.lists.queued[w] = e.lists.queued[r]
				e.lists.qidx[w] = ji
				w++
			}
		}
		clear(e.lists.queued[w:])
		e.lists.queued = e.lists.queued[:w]
		e.lists.qidx = e.lists.qidx[:w]
		e.lists.running = append(e.lists.running, e.lists.startedRun...)
		e.lists.ridx = append(e.lists.ridx, e.lists.startedIdx...)
		clear(e.lists.startedRun)
		e.lists.startedRun = e.lists.startedRun[:0]
		e.lists.startedIdx = e.lists.startedIdx[:0]
	}
	for _, ji := range e.lists.released {
		e.dropRunning(ji, e.lists.runPos(ji))
	}
	e.lists.released = e.lists.released[:0]
}
