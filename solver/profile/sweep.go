package profile

import (
	"cmp"
	"math/bits"
	"slices"
	"sort"

	"github.com/huitian/huitian/internal/sorted"
	"github.com/huitian/huitian/model"
)

// event is a card entering (add) or leaving the set of cards that can hold
// the job from time t on.
type event struct {
	t    int64
	card int32
	add  bool
}

// EarliestStart finds the earliest time ≥ after at which the job, running
// for dur seconds, can start on cards free for the whole [t, t+dur), and the
// cards by best fit. Among the cards free then it prefers those released
// latest, so that cards free earlier stay for backfill. ok is false when the
// job can never fit on the usable cards.
//
// It sweeps over the times at which cards become free: each free gap of a
// card that is long enough gives an interval of feasible start times, and
// per-node, per-island and per-switch counters tell in O(1) per event
// whether the cards in the set can hold the job.
func (p *Profile) EarliestStart(after, dur int64, req Request) (start int64, cards []int, ok bool) {
	start, cards, ok, _ = p.earliest(after, dur, req, true, nil, nil)
	return start, cards, ok
}

// EarliestStartOr is EarliestStart that gives up once stop returns true
// (a time budget spent): it asks every stopEvery events of the sweep, and
// when it gives up it returns stopped true and nothing else. When the
// cards it would return are those of last (in card order, as it returns
// them), it may return last itself instead of a new slice: a planner that
// reserves for the same head cycle after cycle passes the last cycle's
// cards (on a flat 93,312-card machine, 56,000 a reservation on average,
// allocated anew every plan: a third of what a replay allocated). The
// cards are read-only: Reserve trusts a list EarliestStartOr just
// returned (picked).
func (p *Profile) EarliestStartOr(after, dur int64, req Request, stop func() bool, last []int) (start int64, cards []int, ok, stopped bool) {
	return p.earliest(after, dur, req, true, stop, last)
}

// stopEvery is how many events a sweep handles between two questions to
// its stop function: at 65,536 cards a sweep handles about a million a
// second, so a budget is overrun by a millisecond at most.
const stopEvery = 1024

// EarliestTime is EarliestStart's time alone: the counters decide it
// exactly, so no cards are chosen.
func (p *Profile) EarliestTime(after, dur int64, req Request) (int64, bool) {
	t, _, ok, _ := p.earliest(after, dur, req, false, nil, nil)
	return t, ok
}

// EarliestTimeOr is EarliestTime that gives up once stop returns true, as
// EarliestStartOr does: stopped true and nothing else.
func (p *Profile) EarliestTimeOr(after, dur int64, req Request, stop func() bool) (start int64, ok, stopped bool) {
	start, _, ok, stopped = p.earliest(after, dur, req, false, stop, nil)
	return start, ok, stopped
}

// last, when not nil, is the caller's last cards (EarliestStartOr).
func (p *Profile) earliest(after, dur int64, req Request, pick bool, stop func() bool, last []int) (start int64, cards []int, ok, stopped bool) {
	if req.Cards <= 0 || dur <= 0 {
		return 0, nil, false, false
	}
	if stop != nil && stop() {
		// Before the streams are rebuilt, at 65,536 cards milliseconds.
		return 0, nil, false, true
	}
	if p.flatCount(req) {
		if base, in, _ := p.events(); len(in) == 0 {
			start, cards, ok = p.earliestFlat(after, req.Cards, pick, base, last)
			return start, cards, ok, false
		}
	}
	if start, cards, ok, handled := p.earliestByDomain(after, req, pick); handled {
		return start, cards, ok, false
	}
	it := p.eventsFrom(after, dur, req)
	f := newFeasibility(p, req)
	defer f.reset()
	n := 0
	for it.more() {
		t := it.peek().t
		added := false
		for it.more() && it.peek().t == t {
			e := it.next()
			f.update(int(e.card), e.add)
			added = added || e.add
			if !pick && e.add && f.feasible() {
				// At one time the cards that leave come first (fill): the
				// rest of t's events only add cards, and an added card
				// only raises the counters, so t is the answer. A time
				// needs no more; a placement needs every card of t (at
				// 65,536 cards, a one-card job's time was a pass over
				// every free card).
				return t, nil, true, false
			}
			if n++; stop != nil && n%stopEvery == 0 && stop() {
				return 0, nil, false, true
			}
		}
		if !added || !f.feasible() {
			continue
		}
		if !pick {
			return t, nil, true, false
		}
		cands := p.sc.cands[:0]
		for c, in := range p.sc.inSet {
			if in {
				cands = append(cands, c)
				p.sc.key[c] = -p.freeSince(c, t)
			}
		}
		p.sc.cands = cands
		if got := p.place(req, cands); got != nil {
			return t, got, true, false
		}
		// The counters decide feasibility exactly, so place finds cards;
		// should it not, the sweep goes on rather than fail.
	}
	return 0, nil, false, false
}

// flatCount says whether req takes any cards of any model on a machine of
// one-card nodes and no switches: the cards are interchangeable but for
// their busy times, so that, with no reservation on any card, the earliest
// start and its cards follow from the sorted release times alone.
func (p *Profile) flatCount(req Request) bool {
	return !p.sweepAll && req.Topology == model.TopologyAny && req.PerNode == 0 && req.Model == "" &&
		p.ix.maxLen == 1 && len(p.lay.Switches) == 0
}

// earliestFlat is the sweep for a flatCount request when no card holds a
// reservation, from the base events (every usable card, by release time
// and card): the job starts when its k-th card is released (or at after),
// on the k cards of the smallest placement key (released latest, then
// node name) among those released by then, as the sweep and placeFlat
// choose them. It costs a binary search and the cards of one release time
// or a few, not a pass over every event: the head of a flat 93,312-card
// replay is placed every cycle.
func (p *Profile) earliestFlat(after int64, k int, pick bool, base []baseEvent, last []int) (int64, []int, bool) {
	if len(base) < k {
		return 0, nil, false
	}
	t := max(p.baseT(base[k-1]), after)
	if !pick {
		return t, nil, true
	}
	// The cards free at t: base[:m].
	m := k + sort.Search(len(base)-k, func(i int) bool { return p.baseT(base[k+i]) > t })
	// Their placement keys, -release clamped as flatKey clamps, never
	// decrease along base: the k smallest keys lie in the run of cards
	// whose key is that of base[m-k] and after it.
	kk := clampKey(-p.baseT(base[m-k]))
	g := sort.Search(m, func(i int) bool { return clampKey(-p.baseT(base[i])) <= kk })
	j := g + sort.Search(m-g, func(i int) bool { return clampKey(-p.baseT(base[g+i])) < kk })
	// base[j:m] have smaller keys: all taken. Of base[g:j], one key, the
	// need first by node name (placeFlat's tie-break) are.
	set := p.sc.bits
	lo, hi := len(p.rel), -1
	take := func(e baseEvent) {
		c := int(e.card())
		set[c>>6] |= 1 << (c & 63)
		lo, hi = min(lo, c), max(hi, c)
	}
	for _, e := range base[j:m] {
		take(e)
	}
	if need := k - (m - j); need == j-g {
		for _, e := range base[g:j] {
			take(e)
		}
	} else if need > 0 && p.cardRanked && base[g].t() == base[j-1].t() {
		// One release time: base orders them by card, which is their
		// rank.
		for _, e := range base[g : g+need] {
			take(e)
		}
	} else if need > 0 {
		ranks := p.sc.packed[:0]
		for _, e := range base[g:j] {
			ranks = append(ranks, p.cardRank(int(e.card())))
		}
		p.sc.packed = ranks
		kth := nthSmallest(ranks, need)
		for _, e := range base[g:j] {
			if p.cardRank(int(e.card())) <= kth {
				take(e)
			}
		}
	}
	// Out in card order, the bits cleared as they are read: one card per
	// node, so a card is its node's first. While they are the caller's
	// last cards (EarliestStartOr), nothing is allocated.
	if len(last) != k {
		last = nil
	}
	var out []int
	n := 0 // cards read that match last
	for w := lo >> 6; w <= hi>>6; w++ {
		for set[w] != 0 {
			c := w<<6 | bits.TrailingZeros64(set[w])
			set[w] &= set[w] - 1
			if out == nil {
				if last != nil && last[n] == c {
					n++
					continue
				}
				out = make([]int, n, k)
				copy(out, last[:n])
			}
			out = append(out, c)
		}
	}
	if out == nil {
		out = last
	}
	p.sc.picked = picked{first: &out[0], n: k, t: t, gen: p.gen}
	return t, out, true
}

// freeSince returns when the gap of card c that contains t began.
func (p *Profile) freeSince(c int, t int64) int64 {
	since := p.rel[c]
	for _, s := range p.spans[c] {
		if s.end <= t {
			since = s.end
		} else {
			break
		}
	}
	return since
}

// eventIter merges sorted event streams: the cards with no reservation
// (one entry each: free from their release on, forever), and the free gaps
// of cards with reservations — entering at the gap's start, leaving dur
// before its end. Both are cached per profile state, sorted by start and
// by end, so a sweep sorts nothing. Times before after are raised to after.
type eventIter struct {
	p     *Profile
	after int64
	dur   int64
	req   Request
	base  []baseEvent
	i     int
	ins   []gap // by start
	j     int
	outs  []gap // by end
	k     int
	cur   event
	ok    bool
}

// baseEvent is a card without reservations, free from t on: packed as
// t<<24 | card so that a plain integer sort orders them. t is 0 for a
// card free now, else its release in the profile's own clock (evClock
// when it was recorded plus the release from then): Advance moves time
// without a pass over the events, and an event keeps its place until its
// card changes (baseT reads it from now).
type baseEvent int64

// baseAt is card c's time in a base event: 0 when it is free now, else
// its release on the profile's clock.
func (p *Profile) baseAt(c int) int64 {
	if r := p.rel[c]; r > 0 {
		return r + p.evClock
	}
	return 0
}

// baseT is a base event's time from now: 0 for a card free now.
func (p *Profile) baseT(e baseEvent) int64 {
	if t := e.t(); t > 0 {
		return t - p.evClock
	}
	return 0
}

const cardBits = 24

func packBase(t int64, card int) baseEvent { return baseEvent(t<<cardBits | int64(card)) }
func (b baseEvent) t() int64               { return int64(b) >> cardBits }
func (b baseEvent) card() int32            { return int32(int64(b) & (1<<cardBits - 1)) }

// gap is a free interval [start, end) of a card with reservations.
type gap struct {
	start, end int64
	card       int32
}

func (it *eventIter) accepts(card int32) bool { return it.p.accepts(it.req.Model, int(card)) }

// accepts says whether card c is of a model a request for want takes
// ("" takes any, without reading the card).
func (p *Profile) accepts(want string, c int) bool {
	return want == "" || model.ModelAccepts(want, p.lay.Cards[c].Model)
}

// usable says whether a gap can hold the job: it must be dur long after after.
func (it *eventIter) usable(g *gap) bool {
	return g.end == Forever || max(g.start, it.after) <= g.end-it.dur
}

func (it *eventIter) fill() {
	if it.ok {
		return
	}
	for it.i < len(it.base) && !it.accepts(it.base[it.i].card()) {
		it.i++
	}
	for it.j < len(it.ins) && (!it.accepts(it.ins[it.j].card) || !it.usable(&it.ins[it.j])) {
		it.j++
	}
	for it.k < len(it.outs) && (it.outs[it.k].end == Forever || !it.accepts(it.outs[it.k].card) || !it.usable(&it.outs[it.k])) {
		it.k++
	}
	best := -1
	var t int64
	if it.k < len(it.outs) { // leave before enter at the same time
		best, t = 2, it.outs[it.k].end-it.dur+1
	}
	if it.i < len(it.base) {
		if bt := max(it.p.baseT(it.base[it.i]), it.after); best < 0 || bt < t {
			best, t = 0, bt
		}
	}
	if it.j < len(it.ins) {
		if gt := max(it.ins[it.j].start, it.after); best < 0 || gt < t {
			best, t = 1, gt
		}
	}
	switch best {
	case 0:
		it.cur = event{t: t, card: it.base[it.i].card(), add: true}
		it.i++
	case 1:
		it.cur = event{t: t, card: it.ins[it.j].card, add: true}
		it.j++
	case 2:
		it.cur = event{t: t, card: it.outs[it.k].card}
		it.k++
	default:
		return
	}
	it.ok = true
}

func (it *eventIter) more() bool  { it.fill(); return it.ok }
func (it *eventIter) peek() event { it.fill(); return it.cur }
func (it *eventIter) next() event { it.fill(); it.ok = false; return it.cur }

// events returns the cached streams, rebuilt when the profile changed.
//
// Every order is total (each card has one base event, and its gaps
// distinct starts and ends), so the streams are a function of the cards'
// busy times: after a few reservations (evDirty) only those cards' events
// are taken out and merged back in, which gives the same streams as a
// rebuild at O(cards) instead of O(cards log cards) (conservative reserves
// for every blocked job, and rebuilt the streams for each).
func (p *Profile) events() ([]baseEvent, []gap, []gap) {
	p.settle()
	if p.baseGen == p.gen && p.base != nil {
		return p.base, p.gapsIn, p.gapsOut
	}
	if p.evValid && p.base != nil && p.changedFew() {
		p.patchEvents()
	} else {
		p.base, p.gapsIn, p.gapsOut = p.base[:0], p.gapsIn[:0], p.gapsOut[:0]
		for c := range p.rel {
			p.appendEvents(c, &p.base, &p.gapsIn)
			p.record(c)
		}
		// All three are built in card order, each card's gaps in time
		// order: sorted stably by time, they are in (time, card) order.
		p.gapsOut = append(p.gapsOut, p.gapsIn...)
		p.base, p.sc.baseTmp = countingSort(p.base, p.sc.baseTmp, &p.sc.ct, baseEvent.t, func(a, b baseEvent) int { return cmp.Compare(a, b) })
		p.gapsIn, p.sc.gapTmp = countingSort(p.gapsIn, p.sc.gapTmp, &p.sc.ct, gapStart, byStart)
		p.gapsOut, p.sc.gapTmp = countingSort(p.gapsOut, p.sc.gapTmp, &p.sc.ct, gapEnd, byEnd)
	}
	p.evValid = true
	p.dropDirty()
	p.baseGen = p.gen
	return p.base, p.gapsIn, p.gapsOut
}

// countingScratch is countingSort's working memory.
type countingScratch struct {
	slotOf map[int64]int32 // distinct key → slot
	keys   []int64         // per slot
	slot   []int32         // per element
	next   []int32         // per slot: its next position in the output
	count  []int32
	order  []int32
}

// countingSort sorts s, whose elements with equal keys are already in the
// wanted order, by key: what slices.SortFunc(s, order) gives, since order
// breaks ties the way s is ordered. With few distinct keys (a machine's
// cards are held by few jobs: a release time per job) it counts, in
// O(len(s)) instead of a sort's O(len(s) log len(s)) (a flat 93,312-card
// replay sorted every card each cycle); with many it sorts. The result is
// written to spare (grown as needed), and s is returned as the new spare.
func countingSort[E any](s, spare []E, sc *countingScratch, key func(E) int64, order func(a, b E) int) (sorted, rest []E) {
	limit := len(s)/16 + 16
	if sc.slotOf == nil {
		sc.slotOf = map[int64]int32{}
	}
	clear(sc.slotOf)
	keys, slot := sc.keys[:0], slices.Grow(sc.slot[:0], len(s))[:len(s)]
	defer func() { sc.keys, sc.slot = keys, slot }()
	last, lastSlot := int64(0), int32(-1)
	for i, e := range s {
		k := key(e)
		if k != last || lastSlot < 0 {
			sl, ok := sc.slotOf[k]
			if !ok {
				if len(keys) == limit {
					// Base events are sorted by the bytes of their times.
					if be, ok := any(s).([]baseEvent); ok {
						sp, _ := any(spare).([]baseEvent)
						out, rest := radixByTime(be, sp)
						return any(out).([]E), any(rest).([]E)
					}
					slices.SortFunc(s, order)
					return s, spare
				}
				sl = int32(len(keys))
				sc.slotOf[k] = sl
				keys = append(keys, k)
			}
			last, lastSlot = k, sl
		}
		slot[i] = lastSlot
	}
	// Each slot's first position in the output: slots in key order.
	ord := sc.order[:0]
	for i := range keys {
		ord = append(ord, int32(i))
	}
	slices.SortFunc(ord, func(a, b int32) int { return cmp.Compare(keys[a], keys[b]) })
	count := append(sc.count[:0], make([]int32, len(keys))...)
	for _, sl := range slot {
		count[sl]++
	}
	next := slices.Grow(sc.next[:0], len(keys))[:len(keys)]
	n := int32(0)
	for _, sl := range ord {
		next[sl] = n
		n += count[sl]
	}
	out := slices.Grow(spare[:0], len(s))[:len(s)]
	for i, e := range s {
		sl := slot[i]
		out[next[sl]] = e
		next[sl]++
	}
	sc.order, sc.count, sc.next = ord, count, next
	return out, s
}

// radixByTime sorts base events by time, stably, as countingSort does
// when their times are too many to count: a radix sort on the bytes of
// the time in which some events differ (a replay's release times span
// three or so), a pass over the events each, where a comparison sort made
// log₂ n of them (65,536 cards' predicted releases, all different, sorted
// every cycle). Events of one time keep their order: card order, from
// countingSort's caller, which is slices.Sort's. Negative times go to
// slices.Sort.
func radixByTime(s, spare []baseEvent) (sorted, rest []baseEvent) {
	or, and := int64(0), int64(-1)
	for _, e := range s {
		or |= int64(e)
		and &= int64(e)
	}
	if or < 0 {
		slices.Sort(s)
		return s, spare
	}
	diff := uint64(or^and) >> cardBits // the time bits that differ
	spare = slices.Grow(spare[:0], len(s))[:len(s)]
	var count [256]int
	for b := 0; b < 64-cardBits && diff>>b != 0; b += 8 {
		if (diff>>b)&0xff == 0 {
			continue
		}
		shift := cardBits + b
		clear(count[:])
		for _, e := range s {
			count[(uint64(e)>>shift)&0xff]++
		}
		sum := 0
		for d, n := range count {
			count[d] = sum
			sum += n
		}
		for _, e := range s {
			d := (uint64(e) >> shift) & 0xff
			spare[count[d]] = e
			count[d]++
		}
		s, spare = spare, s
	}
	return s, spare
}

func gapStart(g gap) int64 { return g.start }
func gapEnd(g gap) int64   { return g.end }

func byStart(a, b gap) int {
	if c := cmp.Compare(a.start, b.start); c != 0 {
		return c
	}
	return cmp.Compare(a.card, b.card)
}

func byEnd(a, b gap) int {
	if c := cmp.Compare(a.end, b.end); c != 0 {
		return c
	}
	return cmp.Compare(a.card, b.card)
}

// appendEvents appends card c's events: a base event when no reservation
// holds it, else its free gaps.
func (p *Profile) appendEvents(c int, base *[]baseEvent, gaps *[]gap) {
	if !p.cardOK[c] {
		return
	}
	if len(p.spans[c]) == 0 {
		*base = append(*base, packBase(p.baseAt(c), c))
		return
	}
	gs := p.rel[c]
	for i := 0; i <= len(p.spans[c]); i++ {
		ge := Forever
		if i < len(p.spans[c]) {
			ge = p.spans[c][i].start
		}
		if ge > gs {
			*gaps = append(*gaps, gap{gs, ge, int32(c)})
		}
		if i < len(p.spans[c]) {
			gs = p.spans[c][i].end
		}
	}
}

// changedFew drops from evDirty the cards back where the streams have
// them, and says whether few enough are left to patch. Patching costs a
// pass over the streams and a sort of the changed cards' events, a
// rebuild a sort of every card's: only past half of the cards is a
// rebuild cheaper. (At an eighth, noted with repeats, the guarantee's
// plans of a 200,000-job replay on hgx:128 rebuilt the streams 275,000
// times, 1.0 a cycle, a tenth of the replay; on a flat 93,312-card
// machine EASY's head alone, reserved and undone, was past half.)
func (p *Profile) changedFew() bool {
	kept := p.evDirty[:0]
	for _, c := range p.evDirty {
		if p.unchanged(c) {
			p.sc.evNoted[c] = false
			continue
		}
		kept = append(kept, c)
	}
	p.evDirty = kept
	return len(kept) < len(p.rel)/2+16
}

// patchEvents brings the streams up to date after the cards in evDirty
// changed: their events out, their new events merged in.
func (p *Profile) patchEvents() {
	mark := p.sc.evMark
	base, gaps := p.sc.patchBase[:0], p.sc.patchGaps[:0]
	defer func() { p.sc.patchBase, p.sc.patchGaps = base[:0], gaps[:0] }()
	for _, c := range p.evDirty {
		if !mark[c] {
			mark[c] = true
			p.appendEvents(int(c), &base, &gaps)
			p.record(int(c))
		}
	}
	p.base = mergeBase(p.base, base, mark)
	slices.SortFunc(gaps, byStart)
	p.gapsIn = mergeGaps(p.gapsIn, gaps, mark, byStart)
	slices.SortFunc(gaps, byEnd)
	p.gapsOut = mergeGaps(p.gapsOut, gaps, mark, byEnd)
	for _, c := range p.evDirty {
		mark[c] = false
	}
}

// mergeBase drops the marked cards' events from the sorted old and merges
// in the sorted add, in place.
func mergeBase(old, add []baseEvent, mark []bool) []baseEvent {
	keep := old[:0]
	for _, e := range old {
		if !mark[e.card()] {
			keep = append(keep, e)
		}
	}
	slices.Sort(add)
	n := len(keep)
	keep = append(keep, add...)
	sorted.Merge(keep, n, add)
	return keep
}

// mergeGaps is mergeBase for gaps in the order cmp.
func mergeGaps(old, add []gap, mark []bool, order func(a, b gap) int) []gap {
	keep := old[:0]
	for _, g := range old {
		if !mark[g.card] {
			keep = append(keep, g)
		}
	}
	n := len(keep)
	keep = append(keep, add...)
	sorted.MergeFunc(keep, n, add, order)
	return keep
}

func (p *Profile) eventsFrom(after, dur int64, req Request) eventIter {
	base, in, out := p.events()
	return eventIter{p: p, after: after, dur: dur, req: req, base: base, ins: in, outs: out}
}

// feasibility keeps the counters that tell whether the set of cards can
// hold a request.
type feasibility struct {
	p      *Profile
	req    Request
	total  int
	nodeTh int32 // per-node threshold, 0 when not used
	nodeGE int   // nodes with at least nodeTh cards
	isleGE int   // islands with at least req.Cards cards
	groupN int32 // per-switch-group need
	grpGE  int   // switch groups holding the job
	nodes  []int32
	// byCount: the request takes any cards (no topology, no per-node
	// count), so the total decides and the per-domain counters are not
	// kept; cards lists those added, for reset (a card may repeat).
	byCount bool
	cards   []int32
}

func newFeasibility(p *Profile, req Request) *feasibility {
	// The lists of nodes and cards touched reuse the last sweep's arrays
	// (reset leaves them empty): grown anew for every sweep, they were
	// the most allocated memory of a 200,000-job replay after its clones.
	f := &feasibility{p: p, req: req, nodes: p.sc.fNodes[:0], cards: p.sc.fCards[:0]}
	switch {
	case req.Topology == model.TopologySameNode:
		f.nodeTh = int32(req.Cards)
	case req.PerNode > 0:
		f.nodeTh = int32(req.PerNode)
	}
	f.byCount = req.Topology == model.TopologyAny && req.PerNode == 0
	f.groupN = int32(req.Cards)
	if req.PerNode > 0 {
		f.groupN = int32(req.Cards / req.PerNode)
	}
	return f
}

func (f *feasibility) update(c int, add bool) {
	sc := &f.p.sc
	if sc.inSet[c] == add {
		return
	}
	sc.inSet[c] = add
	d := int32(1)
	if !add {
		d = -1
	}
	f.total += int(d)
	if f.byCount {
		if add {
			f.cards = append(f.cards, int32(c))
		}
		return
	}
	loc := &f.p.lay.Cards[c]
	n := loc.Node
	before := sc.nodeCnt[n]
	if before == 0 && add {
		f.nodes = append(f.nodes, n)
	}
	sc.nodeCnt[n] += d
	after := sc.nodeCnt[n]
	if f.nodeTh > 0 {
		if before < f.nodeTh && after >= f.nodeTh {
			f.nodeGE++
		} else if before >= f.nodeTh && after < f.nodeTh {
			f.nodeGE--
		}
	}
	k := int32(f.req.Cards)
	ib := sc.islandCnt[loc.Island]
	sc.islandCnt[loc.Island] += d
	ia := sc.islandCnt[loc.Island]
	if ib < k && ia >= k {
		f.isleGE++
	} else if ib >= k && ia < k {
		f.isleGE--
	}
	// Switch-group capacity: nodes holding PerNode cards, or cards.
	g := f.p.group[n]
	gb := sc.groupCap[g]
	if f.req.PerNode > 0 {
		th := int32(f.req.PerNode)
		if before < th && after >= th {
			sc.groupCap[g]++
		} else if before >= th && after < th {
			sc.groupCap[g]--
		}
	} else {
		sc.groupCap[g] += d
	}
	ga := sc.groupCap[g]
	if gb < f.groupN && ga >= f.groupN {
		f.grpGE++
	} else if gb >= f.groupN && ga < f.groupN {
		f.grpGE--
	}
}

func (f *feasibility) feasible() bool {
	r := f.req
	switch r.Topology {
	case model.TopologySameNode:
		return f.nodeGE > 0
	case model.TopologySameIsland:
		return f.isleGE > 0
	case model.TopologySameSwitch:
		return f.grpGE > 0
	}
	if r.PerNode > 0 {
		return f.nodeGE >= r.Cards/r.PerNode
	}
	return f.total >= r.Cards
}

// reset clears the scratch counters the sweep touched.
func (f *feasibility) reset() {
	sc := &f.p.sc
	for _, n := range f.nodes {
		sc.nodeCnt[n] = 0
		sc.groupCap[f.p.group[n]] = 0
		first, l := f.p.lay.Nodes[n].First, f.p.lay.Nodes[n].Len
		for c := first; c < first+l; c++ {
			sc.inSet[c] = false
			sc.islandCnt[f.p.lay.Cards[c].Island] = 0
		}
	}
	f.nodes = f.nodes[:0]
	for _, c := range f.cards {
		sc.inSet[c] = false
	}
	f.cards = f.cards[:0]
	sc.fNodes, sc.fCards = f.nodes, f.cards
}
