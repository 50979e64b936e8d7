package profile

import (
	"cmp"
	"slices"

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
	if req.Cards <= 0 || dur <= 0 {
		return 0, nil, false
	}
	it := p.eventsFrom(after, dur, req)
	f := newFeasibility(p, req)
	defer f.reset()
	for it.more() {
		t := it.peek().t
		added := false
		for it.more() && it.peek().t == t {
			e := it.next()
			f.update(int(e.card), e.add)
			added = added || e.add
		}
		if !added || !f.feasible() {
			continue
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
			return t, got, true
		}
		// The counters are necessary, not sufficient, for placement only in
		// corner cases (islands split across a per-node request); go on.
	}
	return 0, nil, false
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

// eventIter merges two sorted event streams: the cards with no
// reservation (one entry each: free from their release on, forever),
// cached per profile state, and the events of cards with reservations,
// built per call. Base times before after are raised to after.
type eventIter struct {
	p     *Profile
	after int64
	req   Request
	base  []baseEvent
	i     int
	extra []event
	j     int
	cur   event
	ok    bool
}

type baseEvent struct {
	t    int64
	card int32
}

func (it *eventIter) fill() {
	for !it.ok {
		var b *baseEvent
		for it.i < len(it.base) {
			cand := &it.base[it.i]
			if it.req.Model == "" || model.ModelAccepts(it.req.Model, it.p.lay.Cards[cand.card].Model) {
				b = cand
				break
			}
			it.i++
		}
		var x *event
		if it.j < len(it.extra) {
			x = &it.extra[it.j]
		}
		switch {
		case b == nil && x == nil:
			return
		case x == nil || b != nil && max(b.t, it.after) < x.t ||
			b != nil && max(b.t, it.after) == x.t && x.add: // leave before enter
			it.cur = event{t: max(b.t, it.after), card: b.card, add: true}
			it.i++
		default:
			it.cur = *x
			it.j++
		}
		it.ok = true
	}
}

func (it *eventIter) more() bool  { it.fill(); return it.ok }
func (it *eventIter) peek() event { it.fill(); return it.cur }
func (it *eventIter) next() event { it.fill(); it.ok = false; return it.cur }

// baseEvents returns the usable cards without reservations, by release
// time, cached until the profile changes.
func (p *Profile) baseEvents() []baseEvent {
	if p.baseGen == p.gen && p.base != nil {
		return p.base
	}
	p.base = p.base[:0]
	for c := range p.rel {
		if p.lay.Cards[c].Usable && len(p.spans[c]) == 0 {
			p.base = append(p.base, baseEvent{p.rel[c], int32(c)})
		}
	}
	slices.SortFunc(p.base, func(a, b baseEvent) int {
		if c := cmp.Compare(a.t, b.t); c != 0 {
			return c
		}
		return cmp.Compare(a.card, b.card)
	})
	p.baseGen = p.gen
	return p.base
}

func (p *Profile) eventsFrom(after, dur int64, req Request) *eventIter {
	it := &eventIter{p: p, after: after, req: req, base: p.baseEvents()}
	for c := range p.rel {
		loc := &p.lay.Cards[c]
		if len(p.spans[c]) == 0 || !loc.Usable || !model.ModelAccepts(req.Model, loc.Model) {
			continue
		}
		gs := p.rel[c]
		for i := 0; i <= len(p.spans[c]); i++ {
			ge := Forever
			if i < len(p.spans[c]) {
				ge = p.spans[c][i].start
			}
			lo := max(gs, after)
			hi := Forever
			if ge != Forever {
				hi = ge - dur
			}
			if lo <= hi {
				it.extra = append(it.extra, event{t: lo, card: int32(c), add: true})
				if hi != Forever {
					it.extra = append(it.extra, event{t: hi + 1, card: int32(c)})
				}
			}
			if i < len(p.spans[c]) {
				gs = p.spans[c][i].end
			}
		}
	}
	slices.SortFunc(it.extra, func(a, b event) int {
		if c := cmp.Compare(a.t, b.t); c != 0 {
			return c
		}
		if a.add != b.add { // leave before enter
			if a.add {
				return 1
			}
			return -1
		}
		return cmp.Compare(a.card, b.card)
	})
	return it
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
}

func newFeasibility(p *Profile, req Request) *feasibility {
	f := &feasibility{p: p, req: req}
	switch {
	case req.Topology == model.TopologySameNode:
		f.nodeTh = int32(req.Cards)
	case req.PerNode > 0:
		f.nodeTh = int32(req.PerNode)
	}
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
	loc := &f.p.lay.Cards[c]
	f.total += int(d)
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
}
