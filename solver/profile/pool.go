package profile

import (
	"cmp"
	"fmt"
	"math/bits"
	"slices"
	"sort"

	"github.com/huitian/huitian/model"
)

// Cards held as counts (issue 15). On a cluster whose usable cards are all
// interchangeable — one card a node, one model, no switch — no request can
// tell one card from another: a job's cards matter only by how many are
// free when. A Pool holds that machine's availability as counts, not card
// by card: the cards free now, the groups of busy cards by when they are
// released (a running job, or a start of this plan), and the plan's
// reservations as a number of cards over a span of time. A query then
// costs what the running jobs and reservations number, not what the cards
// do: a flat 93,312-processor machine's head reservation is one claim,
// where the card-by-card Profile chose and marked thousands of cards
// every cycle. Only a start names cards (pick).
//
// The decisions are Profile's on such a machine (what a start now
// needs — enough cards free now that no reservation needs before the job
// ends — and the earliest start of a reservation, are questions about
// counts there), which the baseline planners' differential test checks
// cycle by cycle; the cards chosen and a backfill start's expected
// retention (the first time the reservations would need its cards) are
// the Pool's own.

// IsPool says whether a layout's usable cards are interchangeable: at
// least one, one card on every node, no leaf switch, one card model.
func IsPool(lay *model.Layout) bool {
	if lay.UsableCards == 0 || len(lay.Switches) > 0 {
		return false
	}
	for i := range lay.Nodes {
		if lay.Nodes[i].Len != 1 {
			return false
		}
	}
	first := -1
	for c := range lay.Cards {
		if !lay.Cards[c].Usable {
			continue
		}
		if first < 0 {
			first = c
		} else if lay.Cards[c].Model != lay.Cards[first].Model {
			return false
		}
	}
	return true
}

// RankedByCard says whether a pool's node names order its cards as their
// numbers do (every node one card, names increasing with the nodes'
// order): the machines sim.Flat builds. On such a pool the card-by-card
// Profile's choices are the lowest-numbered cards that its rules allow,
// which an exact pool (SetExact) makes too.
func RankedByCard(lay *model.Layout) bool {
	for i := range lay.Nodes {
		if lay.Nodes[i].Len != 1 || i > 0 && lay.Nodes[i-1].Name >= lay.Nodes[i].Name {
			return false
		}
	}
	return true
}

// Pool is the availability of a pool of interchangeable cards (IsPool) as
// counts. Times are seconds from now, as in Profile. Not safe for
// concurrent use.
type Pool struct {
	lay    *model.Layout
	model  string // the cards' model
	usable int
	clock  int64 // seconds Advance moved on since New or Reset

	spares *Spares // where LowestFree takes its lists (SetSpares), nil: allocated

	free  []uint64 // the usable cards free now, a bit each
	ok    []uint64 // the usable cards, a bit each
	nfree int
	// groups are the busy cards by release, sorted by (end, first card):
	// a running job's (Hold) or a start's (Reserve at 0). endOf is each
	// group's end by its first card (0: none), to find it again.
	groups []poolGroup
	endOf  []int64
	starts int // groups that are this plan's starts (undone by Advance)
	claims []poolClaim

	// exact: the cards chosen are the card-by-card Profile's (SetExact).
	// bound: with a claim, the free cards below it are the claim's.
	exact bool
	bound int
	lazy  bool     // claims' cards read out when asked (SetLazyClaims)
	set   []uint64 // scratch: a reservation's cards, a bit each
	tie   []uint64 // scratch: the cards of one release time, a bit each
	last  lastClaim
	comp  claimComp // scratch: exactCards' composition
	pend  pendClaim
	// claimGroups: the claim's busy groups (ClaimGroups), when known.
	claimGroups []ClaimGroup
	claimKnown  bool

	gen   int64 // bumped by every change
	steps []poolStep
	stepG int64 // gen that steps were built at; -1 none
	evs   []poolStep
}

type poolGroup struct {
	end   int64 // on the pool's clock: seconds from New or Reset
	cards []int // never modified: the caller's, or the Pool's own for a start
	n     int   // its usable cards (a job may run on a card since unhealthy)
	start bool  // a start of this plan
}

type poolClaim struct {
	start, end int64 // on the pool's clock
	n          int
}

// poolStep is the count of cards available (free and not claimed) from t
// (seconds from now) until the next step.
type poolStep struct {
	t int64
	n int
}

// NewPool returns the pool of a layout for which IsPool holds, every card
// free.
func NewPool(lay *model.Layout) *Pool {
	words := (len(lay.Cards) + 63) / 64
	p := &Pool{lay: lay, free: make([]uint64, words), ok: make([]uint64, words), set: make([]uint64, words), tie: make([]uint64, words), endOf: make([]int64, len(lay.Cards)), stepG: -1}
	p.model = PoolModel(lay)
	for c := range lay.Cards {
		if lay.Cards[c].Usable {
			p.usable++
			p.ok[c>>6] |= 1 << (c & 63)
		}
	}
	p.Reset()
	return p
}

// Reset frees every card and drops every group and claim.
func (p *Pool) Reset() {
	copy(p.free, p.ok)
	for _, g := range p.groups {
		p.endOf[g.cards[0]] = 0
	}
	p.nfree, p.groups, p.starts, p.claims, p.clock, p.bound, p.claimKnown = p.usable, p.groups[:0], 0, p.claims[:0], 0, 0, false
	p.gen++
}

// SetExact makes the pool choose the cards that the card-by-card Profile
// chooses, with every reservation's cards named, on a pool whose node
// names order its cards (RankedByCard) and for a plan that reserves for
// one job at most (a second claim panics). The decisions on counts are
// the Profile's already; with the same cards too, a caller that goes on
// card by card from them (huitian's guarantee, whose cards its predicted
// profile holds) plans what it did on the Profile's, at a pool's cost.
// The Profile's rules on such a machine, with no reservation or one:
//
//   - a start takes the lowest-numbered free cards whose window holds it:
//     every free card when it ends by the reservation's start, else those
//     the reservation does not claim (its free cards are the
//     lowest-numbered free ones, below bound);
//   - a reservation takes, among the cards free by its start, those
//     released latest, ties and the cards free now by number.
func (p *Pool) SetExact(on bool) { p.exact = on }

// SetSpares has the pool's starts that no run of free cards holds take
// their lists from sp (nil: allocated).
func (p *Pool) SetSpares(sp *Spares) { p.spares = sp }

// Layout returns the pool's layout.
func (p *Pool) Layout() *model.Layout { return p.lay }

// FreeCount is how many cards are free now.
func (p *Pool) FreeCount() int { return p.nfree }

// Hold makes cards (free now unless unusable; sorted, each once; the
// slice never modified once given) busy until until > 0 seconds from
// now, as one group: a running job. Every list the pool takes is
// sorted, each card once (a running job's, baseline.CardIDs; a start's,
// FitNow's), so that its runs of consecutive numbers are found in a few
// reads (model.SortedRuns): thousands of cards a job on a flat machine.
func (p *Pool) Hold(cards []int, until int64) { p.hold(cards, until, false) }

func (p *Pool) hold(cards []int, until int64, start bool) {
	if len(cards) == 0 || until <= 0 {
		panic(fmt.Sprintf("profile: pool hold of %d cards until %d", len(cards), until))
	}
	n := p.flipCards(cards, false)
	p.nfree -= n
	g := poolGroup{end: until + p.clock, cards: cards, n: n, start: start}
	i, _ := slices.BinarySearchFunc(p.groups, g, cmpGroup)
	p.groups = slices.Insert(p.groups, i, g)
	p.endOf[cards[0]] = g.end
	if start {
		p.starts++
	}
	p.gen++
}

func cmpGroup(a, b poolGroup) int {
	return cmp.Or(cmp.Compare(a.end, b.end), cmp.Compare(a.cards[0], b.cards[0]))
}

// Release frees the cards of a group Hold made, by its cards (the first
// names it): nothing when no group holds them (Advance freed it at its
// end).
func (p *Pool) Release(cards []int) {
	if len(cards) == 0 || p.endOf[cards[0]] == 0 {
		return
	}
	i, ok := slices.BinarySearchFunc(p.groups, poolGroup{end: p.endOf[cards[0]], cards: cards}, cmpGroup)
	if !ok {
		panic(fmt.Sprintf("profile: pool group of card %d lost", cards[0]))
	}
	p.drop(i)
}

// drop frees group i.
func (p *Pool) drop(i int) {
	p.unhold(p.groups[i])
	p.groups = slices.Delete(p.groups, i, i+1)
	p.gen++
}

// unhold frees a group's cards; the caller takes it off the list.
func (p *Pool) unhold(g poolGroup) {
	p.flipCards(g.cards, true)
	p.nfree += g.n
	p.endOf[g.cards[0]] = 0
	if g.start {
		p.starts--
	}
}

// Advance undoes this plan's starts and reservations and moves time dt ≥
// 0 seconds on, freeing the groups whose busy time ends by then. A start
// that a job took up comes back as that job's Hold.
func (p *Pool) Advance(dt int64) {
	p.AdvancePending(dt)
	p.DropStarts()
}

// AdvancePending is Advance but for the plan's starts, which stay held,
// pending: each one a job took up becomes that job's group (TakeUp), on
// the same cards, and DropStarts frees the rest. Until then the pool
// holds cards no job may hold: the caller takes up and drops before it
// holds any other job. A start of thousands of cards on a flat 93,312-card
// machine was freed and held again card by card, the cycle after it.
func (p *Pool) AdvancePending(dt int64) {
	if dt < 0 {
		panic("profile: Advance moves time forward only")
	}
	p.clock += dt
	p.groups = slices.DeleteFunc(p.groups, func(g poolGroup) bool {
		if g.end <= p.clock {
			p.unhold(g)
			return true
		}
		return false
	})
	p.claims, p.bound, p.claimKnown = p.claims[:0], 0, false
	p.gen++
}

// TakeUp makes a pending start (AdvancePending) on cards — the same slice
// (SameCards) — a job's group held until until > 0 seconds from now, as
// Hold would, and says whether it found one.
func (p *Pool) TakeUp(cards []int, until int64) bool {
	if p.starts == 0 || len(cards) == 0 || p.endOf[cards[0]] == 0 {
		return false
	}
	i, ok := slices.BinarySearchFunc(p.groups, poolGroup{end: p.endOf[cards[0]], cards: cards}, cmpGroup)
	if !ok || !p.groups[i].start || !SameCards(p.groups[i].cards, cards) {
		return false
	}
	g := p.groups[i]
	p.groups = slices.Delete(p.groups, i, i+1)
	g.end, g.start = until+p.clock, false
	j, _ := slices.BinarySearchFunc(p.groups, g, cmpGroup)
	p.groups = slices.Insert(p.groups, j, g)
	p.endOf[cards[0]] = g.end
	p.starts--
	p.gen++
	return true
}

// DropStarts frees the plan's starts still held: after AdvancePending,
// those no job took up.
func (p *Pool) DropStarts() {
	if p.starts == 0 {
		return
	}
	p.groups = slices.DeleteFunc(p.groups, func(g poolGroup) bool {
		if g.start {
			p.unhold(g)
			return true
		}
		return false
	})
	p.gen++
}

// CanEverFit says whether the pool's usable cards can hold req: as many,
// of the model, and a topology that one card a node meets (any, one card
// a node at most; one card, anywhere).
func (p *Pool) CanEverFit(req Request) bool { return PoolCanEverFit(p.usable, p.model, req) }

// PoolCanEverFit is CanEverFit of a pool of usable cards of one model,
// without a Pool.
func PoolCanEverFit(usable int, cardModel string, req Request) bool {
	if req.Cards <= 0 || req.Cards > usable || !model.ModelAccepts(req.Model, cardModel) {
		return false
	}
	return req.Cards == 1 || (req.Topology == model.TopologyAny && req.PerNode <= 1)
}

// PoolModel is the model of a pool's usable cards (IsPool: one).
func PoolModel(lay *model.Layout) string {
	for c := range lay.Cards {
		if lay.Cards[c].Usable {
			return lay.Cards[c].Model
		}
	}
	return ""
}

// buildSteps returns the available count as steps from now on: free and
// released cards less the claims, at every change.
func (p *Pool) buildSteps() []poolStep {
	if p.stepG == p.gen {
		return p.steps
	}
	evs := p.evs[:0]
	for _, g := range p.groups {
		evs = append(evs, poolStep{g.end - p.clock, g.n})
	}
	for _, c := range p.claims {
		evs = append(evs, poolStep{c.start - p.clock, -c.n}, poolStep{c.end - p.clock, c.n})
	}
	slices.SortFunc(evs, func(a, b poolStep) int { return cmp.Compare(a.t, b.t) })
	steps := append(p.steps[:0], poolStep{0, p.nfree})
	for _, e := range evs {
		if e.t <= 0 {
			steps[0].n += e.n // a claim from now on
			continue
		}
		if last := &steps[len(steps)-1]; last.t == e.t {
			last.n += e.n
		} else {
			steps = append(steps, poolStep{e.t, last.n + e.n})
		}
	}
	p.evs, p.steps, p.stepG = evs, steps, p.gen
	return steps
}

// earliest is the first t ≥ after at which k cards are available for dur
// seconds.
func (p *Pool) earliest(after, dur int64, k int) (int64, bool) {
	steps := p.buildSteps()
	// The first step after after; steps[0] is now, at or before it.
	i, _ := slices.BinarySearchFunc(steps, after, func(s poolStep, t int64) int {
		if s.t <= t {
			return -1
		}
		return 1
	})
	i-- // steps[i] is in force at after
	cand := after
	for {
		end := satAdd(cand, dur)
		bad := -1
		for j := i; j < len(steps) && (j == i || steps[j].t < end); j++ {
			if steps[j].n < k {
				bad = j
				break
			}
		}
		if bad < 0 {
			return cand, true
		}
		// The next candidate is the next step with enough.
		j := bad + 1
		for j < len(steps) && steps[j].n < k {
			j++
		}
		if j == len(steps) {
			return 0, false
		}
		i, cand = j, steps[j].t
	}
}

func satAdd(a, b int64) int64 {
	if s := a + b; s >= a {
		return s
	}
	return Forever
}

// FitNow says whether a job of k = req.Cards cards for dur seconds can
// start now, and if so on which cards (pick's).
func (p *Pool) FitNow(dur int64, req Request) ([]int, Outcome) {
	if !p.CanEverFit(req) {
		return nil, WrongShape
	}
	if p.nfree < req.Cards {
		return nil, NoCards
	}
	if t, ok := p.earliest(0, dur, req.Cards); !ok || t != 0 {
		return nil, Claimed
	}
	if p.exact {
		return LowestFree(p.lay, p.free, req.Cards, p.exactFrom(dur), p.spares), Fits
	}
	return p.pick(req.Cards), Fits
}

// exactFrom is the first card an exact pool's start for dur seconds may
// take: any free card when it ends by the claim's start (or nothing is
// claimed), else the first the claim leaves.
func (p *Pool) exactFrom(dur int64) int {
	if len(p.claims) == 0 || dur <= p.claims[0].start-p.clock {
		return 0
	}
	return p.bound
}

// LowestFree returns the k lowest-numbered cards set in free (a bit a
// card, as FreeBits, of lay's cards) from card from on: a slice of the
// layout's own numbers (model.Layout.Run), read only, when they are
// consecutive — two starts in three of huitian-greedy's on a flat
// 93,312-card machine, thousands of cards each, numbered then without a
// list of their own. Otherwise a list of its own: one of sp's (Spares)
// when sp is not nil, else allocated. The caller counted them there:
// fewer is a broken invariant, and panics.
func LowestFree(lay *model.Layout, free []uint64, k, from int, sp *Spares) []int {
	first, run := freeRun(free, k, from)
	if run {
		return lay.Run(first, k)
	}
	out := sp.take(k)
	n := 0
	for w := first >> 6; w < len(free) && n < k; w++ {
		word := free[w]
		if w == first>>6 {
			word &^= 1<<(first&63) - 1
		}
		if word == ^uint64(0) && k-n >= 64 {
			// A word of free cards, numbered without reading a bit:
			// thousands a start on a flat 93,312-card machine.
			run := out[n : n+64]
			for b := range run {
				run[b] = w<<6 + b
			}
			n += 64
			continue
		}
		for ; word != 0 && n < k; word &= word - 1 {
			out[n] = w<<6 | bits.TrailingZeros64(word)
			n++
		}
	}
	if n < k {
		panic(fmt.Sprintf("profile: %d cards free from card %d, the count said %d", n, from, k))
	}
	return out
}

// freeRun returns the first card set in free from card from on
// (len(free)*64 when none is), and says whether the k lowest-numbered
// from there are consecutive: a word at a time.
func freeRun(free []uint64, k, from int) (first int, run bool) {
	first = len(free) << 6
	for w := from >> 6; w < len(free); w++ {
		word := free[w]
		if w == from>>6 {
			word &^= 1<<(from&63) - 1
		}
		if word != 0 {
			first = w<<6 | bits.TrailingZeros64(word)
			break
		}
	}
	if k <= 0 || first+k > len(free)<<6 {
		return first, false
	}
	for w, mask := range model.Words(first, first+k) {
		if free[w]&mask != mask {
			return first, false
		}
	}
	return first, true
}

// FitNowAny is FitNow's cards and whether it fits.
func (p *Pool) FitNowAny(dur int64, req Request) ([]int, bool) {
	cards, out := p.FitNow(dur, req)
	return cards, out == Fits
}

// pick returns k free cards: the first k of the run of consecutive free
// cards that best fits them (run) when there is one — a slice of the
// layout's numbers (Layout.Run), read only, and a start whose references are a view of
// the layout's (model.Layout.RefsView) — else the k lowest-numbered.
func (p *Pool) pick(k int) []int {
	if first, ok := p.run(k); ok {
		return p.lay.Run(first, k)
	}
	return LowestFree(p.lay, p.free, k, 0, p.spares)
}

// EarliestStartOr is the earliest start at or after after of a job of
// req.Cards cards for dur seconds, as Profile's is; it names no cards (a
// reservation on a pool is a count) but on an exact pool, which names the
// Profile's (exactCards), and is never stopped.
func (p *Pool) EarliestStartOr(after, dur int64, req Request, _ func() bool, _ []int) (start int64, cards []int, ok, stopped bool) {
	if !p.CanEverFit(req) {
		return 0, nil, false, false
	}
	t, ok := p.earliest(after, dur, req.Cards)
	if !ok || !p.exact {
		return t, nil, ok, false
	}
	return t, p.exactCards(t, req.Cards), true, false
}

// exactCards are the k cards the card-by-card Profile reserves from t for
// a job whose earliest start t is: among the cards free by t, those
// released latest, ties (one release time) and the cards free now by
// number. EASY's head, cycle after cycle, names tens of thousands of
// cards on a flat 93,312-card machine, mostly the same as the last plan's
// (three plans in four of a 10,000-job replay): the cards are known by
// what they are made of — the groups taken whole, those of the tie and
// how many of their cards, the free cards taken — and when that is what
// the last call's were made of, its list is returned again without
// reading a card (baseline's headRefs then hands out its references
// again too). Else they are marked, a word at a time along runs, and read
// out (readClaim) — on a lazy pool (SetLazyClaims) only when asked
// (ClaimCards): it returns nil then.
func (p *Pool) exactCards(t int64, k int) []int {
	// What they are made of: the groups released by t, latest first,
	// whole while they fit in k, then the need lowest-numbered usable
	// cards of one release time (the tie), then the lowest-numbered free
	// cards.
	cm := &p.comp
	cm.whole, cm.tie, cm.tieNeed = cm.whole[:0], cm.tie[:0], 0
	i := sort.Search(len(p.groups), func(i int) bool { return p.groups[i].end-p.clock > t })
	need := k
	for i > 0 && need > 0 {
		// groups[j:i] share one release time.
		j, n := i-1, p.groups[i-1].n
		for j > 0 && p.groups[j-1].end == p.groups[i-1].end {
			j--
			n += p.groups[j].n
		}
		if n <= need {
			for _, g := range p.groups[j:i] {
				cm.whole = append(cm.whole, g.cards)
			}
		} else {
			cm.tie, cm.tieNeed = append(cm.tie, p.groups[j:i]...), need
			n = need
		}
		need -= n
		i = j
	}
	// The free cards taken, a word each up to the last; the claim's free
	// cards end below bound (ReserveCount).
	cm.free, cm.bound = cm.free[:0], 0
	for w := 0; need > 0; w++ {
		if w == len(p.free) {
			panic(fmt.Sprintf("profile: exact pool: %d cards short of a reservation the count allowed", need))
		}
		f := p.free[w]
		if n := bits.OnesCount64(f); n > need {
			for range n - need {
				f &^= 1 << (63 - bits.LeadingZeros64(f)) // the highest taken back
			}
		}
		cm.free = append(cm.free, f)
		if f != 0 {
			need -= bits.OnesCount64(f)
			cm.bound = w<<6 + 64 - bits.LeadingZeros64(f)
		}
	}
	l := &p.last
	if !l.known || l.k != k || !cm.sameAs(&l.comp) {
		// Another claim: the groups it takes cards of, each with the
		// least it takes, and what it is made of become the last call's.
		groups := l.groups[:0]
		for _, cs := range cm.whole {
			if least := p.leastUsable(cs); least >= 0 {
				groups = append(groups, ClaimGroup{Cards: cs, Least: least})
			}
		}
		if cm.tieNeed > 0 {
			// The tie's groups claimed are those with a usable card up
			// to its need-th.
			last := p.tieWords(cm, nil)
			for gi, g := range cm.tie {
				if least := cm.leasts[gi]; least >= 0 && least <= last {
					groups = append(groups, ClaimGroup{Cards: g.cards, Least: least})
				}
			}
		}
		l.groups, l.known, l.k, l.cards = groups, true, k, nil
		l.comp.whole = append(l.comp.whole[:0], cm.whole...)
		l.comp.tie = append(l.comp.tie[:0], cm.tie...)
		l.comp.free = append(l.comp.free[:0], cm.free...)
		l.comp.tieNeed, l.comp.bound = cm.tieNeed, cm.bound
	}
	if l.cards == nil && !p.lazy {
		l.cards = p.readClaim()
	}
	p.pend = pendClaim{gen: p.gen, bound: cm.bound, groups: l.groups, cards: l.cards, ok: true}
	return l.cards
}

// SetLazyClaims makes an exact pool leave a claim's cards unread until
// asked (ClaimCards): EarliestStartOr names none for a claim not named
// before. A caller that reads the claim by its groups (ClaimGroups,
// ClaimBound) and its list only now and then (the simulator, for a head
// that jobs lent into windows hold) spares reading out tens of thousands
// of cards a plan.
func (p *Pool) SetLazyClaims(on bool) { p.lazy = on }

// ClaimCards are the cards of the last claim EarliestStartOr chose on an
// exact pool, sorted, read only: read out now when a lazy pool left them
// unread, and the same slice from then on while the claim is made of the
// same (the pool may have changed since: the list is what it was made
// of). nil when there was none.
func (p *Pool) ClaimCards() []int {
	l := &p.last
	if l.cards == nil && l.known {
		l.cards = p.readClaim()
	}
	return l.cards
}

// readClaim reads out the last claim's cards (lastClaim.comp): its whole
// groups' and free cards marked a word at a time along runs, the tie's
// up to its need.
func (p *Pool) readClaim() []int {
	l := &p.last
	cm := &l.comp
	set := p.set
	lo, hi := len(set), -1 // the words marked
	for _, cs := range cm.whole {
		l, h, _ := p.markAll(set, cs)
		lo, hi = min(lo, l), max(hi, h)
	}
	// Masked by the usable cards before the tie's and the free cards,
	// which are.
	for w := lo; w <= hi; w++ {
		set[w] &= p.ok[w]
	}
	if cm.tieNeed > 0 {
		p.tieWords(cm, func(w int, word uint64) {
			set[w] |= word
			lo, hi = min(lo, w), max(hi, w)
		})
	}
	for w, f := range cm.free {
		if f != 0 {
			set[w] |= f
			lo, hi = min(lo, w), max(hi, w)
		}
	}
	out := make([]int, 0, l.k)
	for w := lo; w <= hi; w++ {
		if word := set[w]; word == ^uint64(0) {
			out = append(out, p.lay.Run(w<<6, 64)...) // a word of the claim's, numbered without reading a bit
		} else {
			for ; word != 0; word &= word - 1 {
				out = append(out, w<<6|bits.TrailingZeros64(word))
			}
		}
		set[w] = 0
	}
	return out
}

// tieWords marks the tie's groups (cm.tie) in the tie scratch and takes
// their usable cards, lowest first, up to the need-th, a word at a time:
// each word taken to took when not nil. It returns the need-th card (-1:
// none) and leaves each tie group's least usable card in cm.leasts.
func (p *Pool) tieWords(cm *claimComp, took func(w int, word uint64)) int {
	tie := p.tie
	tlo, thi := len(tie), -1
	leasts := cm.leasts[:0]
	for _, g := range cm.tie {
		l, h, least := p.markAll(tie, g.cards)
		tlo, thi = min(tlo, l), max(thi, h)
		leasts = append(leasts, least)
	}
	cm.leasts = leasts
	left, last := cm.tieNeed, -1
	for w := tlo; w <= thi; w++ {
		word := tie[w] & p.ok[w]
		tie[w] = 0
		if left == 0 {
			continue
		}
		if c := bits.OnesCount64(word); c > left {
			for range c - left {
				word &^= 1 << (63 - bits.LeadingZeros64(word)) // past the need-th
			}
		}
		if word != 0 {
			if took != nil {
				took(w, word)
			}
			left -= bits.OnesCount64(word)
			last = w<<6 + 63 - bits.LeadingZeros64(word)
		}
	}
	return last
}

// leastUsable is the least usable card of a list (sorted), -1 when
// none is: a word at a time along its runs.
func (p *Pool) leastUsable(cards []int) int {
	for first, end := range model.SortedRuns(cards) {
		for w, mask := range model.Words(first, end) {
			if u := p.ok[w] & mask; u != 0 {
				return w<<6 | bits.TrailingZeros64(u)
			}
		}
	}
	return -1
}

// markAll marks cards in set, a word at a time along their runs of
// consecutive numbers, usable or not (the caller masks the words by the
// usable cards), and returns the first and last word marked and the least
// usable card (-1: none).
func (p *Pool) markAll(set []uint64, cards []int) (lo, hi, least int) {
	lo, hi, least = len(set), -1, -1
	for first, end := range model.SortedRuns(cards) {
		for w, mask := range model.Words(first, end) {
			set[w] |= mask
			if u := p.ok[w] & mask; u != 0 {
				if l := w<<6 | bits.TrailingZeros64(u); least < 0 || l < least {
					least = l
				}
			}
		}
		lo, hi = min(lo, first>>6), max(hi, (end-1)>>6)
	}
	return lo, hi, least
}

// claimComp is what exactCards' cards are made of: the groups taken whole
// (their cards, by identity: a group's slice is never modified), the
// groups of the tie and how many of their cards, the free cards taken (a
// word each) and their bound.
type claimComp struct {
	whole   [][]int
	tie     []poolGroup
	tieNeed int
	free    []uint64
	bound   int
	leasts  []int // scratch: the tie's groups' least usable cards
}

// sameAs says whether two compositions make the same cards.
func (a *claimComp) sameAs(b *claimComp) bool {
	if len(a.whole) != len(b.whole) || len(a.tie) != len(b.tie) || a.tieNeed != b.tieNeed || !slices.Equal(a.free, b.free) {
		return false
	}
	for i := range a.whole {
		if !SameCards(a.whole[i], b.whole[i]) {
			return false
		}
	}
	for i := range a.tie {
		if !SameCards(a.tie[i].cards, b.tie[i].cards) {
			return false
		}
	}
	return true
}

// SameCards says whether two lists of cards are the same slice (a held
// group's or a running job's, never modified, known by identity).
func SameCards(a, b []int) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// lastClaim is the claim exactCards chose last: what it is made of, its
// k cards (nil until read out), and the groups it takes cards of.
type lastClaim struct {
	known  bool
	k      int
	cards  []int
	comp   claimComp
	groups []ClaimGroup // the claim's groups (ClaimGroups)
}

// pendClaim is the bound and the groups of the claim exactCards returned
// last (cards: the list it returned, nil when unread), at state gen: what
// ReserveCount sets when it claims them.
type pendClaim struct {
	ok     bool
	gen    int64
	cards  []int
	bound  int
	groups []ClaimGroup
}

// ClaimGroup is a group of busy cards that a claim takes cards of (all,
// or at a tie some): its cards, as held (Hold's, or a start's), and the
// least of them the claim takes.
type ClaimGroup struct {
	Cards []int
	Least int
}

// ClaimGroups are the busy groups whose cards an exact pool's claim takes
// (ReserveCount after EarliestStartOr), in the order of their release,
// latest first, then the starts made since on cards it takes (free ones):
// what a caller that holds those groups' jobs needs to know
// of the claim's cards without reading them (huitian's predicted
// profile: the jobs the reservation waits for). Read only, until the
// next change; ok is false without a claim, on a pool that is not exact,
// or when the claim's cards were not EarliestStartOr's.
func (p *Pool) ClaimGroups() (groups []ClaimGroup, ok bool) {
	return p.claimGroups, p.claimKnown && len(p.claims) > 0
}

// ClaimBound is an exact pool's claim's bound: the free cards the claim
// takes are the free cards below it (the lowest-numbered), now as when it
// was made, as starts only take cards. 0 without a claim.
func (p *Pool) ClaimBound() int { return p.bound }

// FreeBits are the cards free now, a bit each (card c is bit c&63 of word
// c>>6), read only: the pool's own, until it changes.
func (p *Pool) FreeBits() []uint64 { return p.free }

// ReserveCount starts cards (FitNow's) now until end when start is 0,
// else claims k cards from start to end.
func (p *Pool) ReserveCount(cards []int, k int, start, end int64) error {
	if end <= start || k <= 0 {
		return fmt.Errorf("profile: pool reservation of %d cards over [%d, %d)", k, start, end)
	}
	if start == 0 {
		if len(cards) != k {
			return fmt.Errorf("profile: pool start of %d cards named %d", k, len(cards))
		}
		p.hold(cards, end, true)
		if p.exact && p.claimKnown && len(p.claims) > 0 && cards[0] < p.bound {
			// On cards the claim takes (free ones, below bound): held
			// by this start now.
			p.claimGroups = append(p.claimGroups, ClaimGroup{Cards: cards, Least: cards[0]})
		}
		return nil
	}
	if t, ok := p.earliest(start, end-start, k); !ok || t != start {
		return ErrOverlap
	}
	if p.exact {
		if len(p.claims) > 0 {
			panic("profile: an exact pool claims for one job at most")
		}
		// The claim's free cards are the lowest-numbered free ones
		// (exactCards): below the last of them.
		if pd := p.pend; pd.ok && pd.gen == p.gen && (cards == nil && pd.cards == nil || cards != nil && SameCards(cards, pd.cards)) {
			p.bound = pd.bound
			p.claimGroups, p.claimKnown = append(p.claimGroups[:0], pd.groups...), true
		} else {
			p.claimGroups, p.claimKnown = p.claimGroups[:0], false // not exactCards' cards
			p.bound = 0
			for _, c := range cards {
				if p.free[c>>6]&(1<<(c&63)) != 0 {
					p.bound = c + 1
				}
			}
		}
	}
	p.claims = append(p.claims, poolClaim{start + p.clock, satAdd(end, p.clock), k})
	p.gen++
	return nil
}

// Retention is how long a start of k cards until dur (made) could keep
// its cards before a reservation needs them: the first time from dur on
// at which fewer than k cards are available, Forever when none. An exact
// pool's is the card-by-card Profile's: the claim's start when the start
// took a card it claims (below bound), else Forever.
func (p *Pool) Retention(cards []int, dur int64) int64 {
	if p.exact {
		if len(p.claims) > 0 && len(cards) > 0 && cards[0] < p.bound {
			return p.claims[0].start - p.clock
		}
		return Forever
	}
	k := len(cards)
	steps := p.buildSteps()
	for i, s := range steps {
		if (s.t >= dur || i+1 == len(steps) || steps[i+1].t > dur) && s.n < k {
			return max(s.t, dur)
		}
	}
	return Forever
}

// run finds the run of consecutive free cards that best fits k: the
// shortest of at least k cards, the lowest-numbered of those. Best fit
// keeps the long runs for the large jobs, whose starts are then one run
// too.
func (p *Pool) run(k int) (int, bool) {
	best, bestLen := 0, -1
	start, n := 0, 0 // the current run of free cards: its first, its length
	// ended notes the current run's end and says whether it fits exactly
	// (no run can fit better).
	ended := func() bool {
		if n >= k && (bestLen < 0 || n < bestLen) {
			best, bestLen = start, n
		}
		n = 0
		return bestLen == k
	}
	for w, word := range p.free {
		if word == ^uint64(0) {
			if n == 0 {
				start = w << 6
			}
			n += 64
			continue
		}
		for b := 0; b < 64; {
			rest := word >> b
			if rest == 0 {
				if n > 0 && ended() {
					return best, true
				}
				break
			}
			if zeros := bits.TrailingZeros64(rest); zeros > 0 {
				if n > 0 && ended() {
					return best, true
				}
				b += zeros
				continue
			}
			ones := bits.TrailingZeros64(^rest) // ≤ 64-b
			if n == 0 {
				start = w<<6 + b
			}
			n += ones
			if b += ones; b < 64 && ended() {
				return best, true
			}
		}
	}
	if n > 0 {
		ended()
	}
	return best, bestLen >= 0
}

// flipCards frees (free) or takes the usable cards of a list (sorted,
// each once), a word at a time along its runs of consecutive numbers (flipRun),
// and returns how many are usable. Taking one that is not free panics, as
// hold does. A job's cards on a flat machine are runs of hundreds, mostly.
func (p *Pool) flipCards(cards []int, free bool) int {
	usable := 0
	for first, end := range model.SortedRuns(cards) {
		usable += p.flipRun(first, end, free)
	}
	return usable
}

// flipRun frees (free) or takes the usable cards first to end-1, a
// word at a time, and returns how many are usable. Taking one that is
// not free panics, as hold does.
func (p *Pool) flipRun(first, end int, free bool) int {
	usable := 0
	for w, mask := range model.Words(first, end) {
		ok := p.ok[w] & mask
		if free {
			p.free[w] |= ok
		} else {
			if p.free[w]&ok != ok {
				panic(fmt.Sprintf("profile: pool hold of card %d, not free", w<<6+bits.TrailingZeros64(ok&^p.free[w])))
			}
			p.free[w] &^= ok
		}
		usable += bits.OnesCount64(ok)
	}
	return usable
}
