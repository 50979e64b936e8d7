package profile

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/huitian/huitian/model"
)

// Forever is the end of time in the profile.
const Forever int64 = math.MaxInt64

// ErrOverlap is returned when a reservation would overlap a card's busy time.
var ErrOverlap = errors.New("profile: reservation overlaps busy time")

// Request is what a job asks of the cards.
type Request struct {
	Cards    int
	PerNode  int // 0: no per-node requirement; else exactly PerNode cards on each node used
	Topology model.Topology
	Model    string // "" accepts any card model
}

// String describes a request for people: "16 cards same-switch, 8 per node".
func (r Request) String() string {
	s := strconv.Itoa(r.Cards) + " cards " + r.Topology.String()
	if r.PerNode > 0 {
		s += ", " + strconv.Itoa(r.PerNode) + " per node"
	}
	if r.Model != "" {
		s += ", model " + r.Model
	}
	return s
}

// RequestOf derives a Request from a job. A job confined to one node or
// one island has no separate per-node count.
func RequestOf(j *model.Job) Request {
	r := Request{Cards: j.Cards, PerNode: j.CardsPerNode, Topology: j.Topology, Model: j.CardModel}
	if r.PerNode == r.Cards && r.Topology != model.TopologySameIsland {
		// All its cards per node: one node.
		r.Topology = model.TopologySameNode
	}
	if r.Topology == model.TopologySameNode || r.Topology == model.TopologySameIsland {
		r.PerNode = 0
	}
	return r
}

type span struct {
	start, end int64
	// protect marks a reservation made to keep other jobs off its cards
	// (ReserveProtect), not one whose cards placement fills first.
	protect bool
}

// Profile is the availability of every card over time. A card is busy from
// now until rel[c] (a running job or a start now), then in each of its spans
// (reservations), and free otherwise. Not safe for concurrent use.
type Profile struct {
	lay   *model.Layout
	rel   []int64
	spans [][]span
	// cardOK is each card's Layout.Cards[c].Usable, packed: FreeNow and
	// FreeOver read it per card, and the layout's card records are 32
	// bytes wide.
	cardOK []bool
	// nodeOf is each card's node, packed: placement reads it per candidate
	// card, and the layout's card records are 8 times wider.
	nodeOf []int32

	// group maps a node to its switch group: the leaf switch, or a group of
	// its own for a node under no switch.
	group   []int32
	ngroups int

	// free is the sorted list of usable cards free now, with stale entries
	// (cards started since) skipped on use and compacted when many.
	free      []int
	stale     int
	freeDirty bool

	ix index

	gen, baseGen int64 // state version, and the version base was built at
	// grew is bumped by every change that may free capacity (Reset,
	// Advance, Set); Hold and Reserve only take it. A FitNow failure
	// noted since the last such change still holds (FitNowAny).
	grew int64
	// evValid says the event streams (base, gapsIn, gapsOut) were built and
	// only the cards in evDirty changed since: events patches them.
	evValid bool
	evDirty []int32
	// evAt is what the streams hold of each card, as of its last
	// (re)build or patch: -1 not in base (reserved, or unusable), 0 a base
	// event free now, else its base event's time plus evClock then; and
	// evClock is the time Advance moved on since New. A card noted
	// changed that is back where the streams have it (a reservation made
	// and undone between two sweeps: EASY's head, every cycle) is not
	// patched: see unchanged.
	evAt    []int64
	evClock int64
	base    []baseEvent
	gapsIn  []gap
	gapsOut []gap

	usable  int              // usable cards, -1 until counted
	fits    map[Request]bool // CanEverFit cache
	fitsAny map[fitKey]bool  // the same for requests of any card model
	// fitsDense is fitsAny for the common shapes (denseSlot; 0: not
	// known, 1: fits, -1: never): the map's hash was 4% of a million-job
	// replay.
	fitsDense [][]int8
	// failed remembers, per request, the shortest duration FitNow found
	// no place for at state version gen, and why (see FitNowWhere).
	failed      map[Request]failure
	failedDense [][]failure // the common shapes' (failedSlot)

	// The cards Reserve started now, and those it gave a reservation,
	// since the last Reset or Advance (a card may repeat): what Advance
	// returns, and undoes.
	startLog, spanLog []int32

	// lazy is the reservations' spans on cards busy now that no query
	// has read yet: the cards, and each reservation's part of them. A
	// reservation of a card busy now changes nothing a start now sees,
	// and EASY's head, reserved every cycle and undone by the next
	// Advance, mostly claims cards busy now (a flat 93,312-card
	// machine's head, thousands): Advance drops them unread, and any
	// query that could read such a card's spans settles them first.
	lazy      []lazyResv
	lazyCards []int32
	lazyOf    []lazyTag // per card: the lazy reservation it is in, if any
	lazyEpoch uint32    // bumped whenever the lazy spans are settled or dropped
	noLazy    bool      // reserve every span at once: for differential tests
	// spanGen is bumped by every change to any card's spans (fitFlat's
	// list of dirty cards is good while it is not).
	spanGen int64

	sweepAll bool // never take earliestFlat's shortcut: for differential tests

	// cardRanked says that every node holds at most one card and node
	// names order the cards as their numbers do (fitFlat).
	cardRanked bool

	// alignEnds places a one-node job where it extends the node's busy
	// time least (SetAlignEnds).
	alignEnds bool

	sc scratch
}

// New returns a profile with every card free forever.
func New(lay *model.Layout) *Profile {
	p := &Profile{
		lay:       lay,
		rel:       make([]int64, len(lay.Cards)),
		spans:     make([][]span, len(lay.Cards)),
		group:     make([]int32, len(lay.Nodes)),
		nodeOf:    make([]int32, len(lay.Cards)),
		evAt:      make([]int64, len(lay.Cards)),
		cardOK:    make([]bool, len(lay.Cards)),
		lazyOf:    make([]lazyTag, len(lay.Cards)),
		lazyEpoch: 1,
		freeDirty: true,
		usable:    -1,
	}
	for c := range lay.Cards {
		p.nodeOf[c] = lay.Cards[c].Node
		p.cardOK[c] = lay.Cards[c].Usable
	}
	ns := int32(len(lay.Switches))
	for i, n := range lay.Nodes {
		if n.Switch >= 0 {
			p.group[i] = n.Switch
		} else {
			p.group[i] = ns
			ns++
		}
	}
	p.ngroups = int(ns)
	p.sc.init(lay, p.ngroups)
	p.ix.init(lay)
	p.cardRanked = p.ix.maxLen <= 1
	for c := range lay.Cards {
		if p.ix.rank[p.nodeOf[c]] != int32(c) {
			p.cardRanked = false
			break
		}
	}
	return p
}

// Reset makes every card free forever again, keeping the profile's memory
// (and its per-layout caches), so that a planner can reuse one profile
// cycle after cycle without allocating it anew.
func (p *Profile) Reset() {
	clear(p.rel)
	p.spanGen++
	for c := range p.spans {
		if len(p.spans[c]) > 0 {
			p.spans[c] = p.spans[c][:0]
		}
	}
	p.freeDirty = true
	p.gen++
	p.grew++
	p.evValid = false
	p.ix.reset(p.lay)
	clear(p.failed)
	p.startLog, p.spanLog = p.startLog[:0], p.spanLog[:0]
	p.dropLazy()
}

// SetAlignEnds turns end-aligned placement on or off: a job that fits in
// one node goes, after the temporal fragments, to the node whose busy time
// it extends least (max(0, its end − the node's last release)), then by
// best fit. Long jobs gather on nodes that are busy long anyway, so that
// whole nodes come free together for the gangs that need them.
func (p *Profile) SetAlignEnds(on bool) { p.alignEnds = on }

// Layout returns the layout the profile was built on.
func (p *Profile) Layout() *model.Layout { return p.lay }

// Hold marks a card busy from now until the given time (a running job).
// A later Hold of the same card extends the busy time.
func (p *Profile) Hold(card int, until int64) {
	p.settleFor(card)
	if until > p.rel[card] {
		if p.FreeNow(card) {
			p.noteBusy(card)
		}
		p.rel[card] = until
		p.busyChanged(p.nodeOf[card])
		p.freeDirty = true
		p.gen++
		p.noteChanged(card)
	}
}

// HoldAll is Hold of each of the cards until the same time: a running
// job's, loaded in one pass (a planner that loads every cycle holds
// every busy card).
func (p *Profile) HoldAll(cards []int, until int64) {
	p.settle()
	held := false
	for _, c := range cards {
		if until <= p.rel[c] {
			continue
		}
		if p.rel[c] == 0 && p.cardOK[c] {
			p.noteBusy(c)
		}
		p.rel[c] = until
		p.busyChanged(p.nodeOf[c])
		p.noteChanged(c)
		held = true
	}
	if held {
		p.freeDirty = true
		p.gen++
	}
}

// noteBusy updates the index for a free card about to become busy now.
func (p *Profile) noteBusy(card int) {
	dd := int32(0)
	if len(p.spans[card]) > 0 {
		dd = -1
	}
	p.ix.change(p.nodeOf[card], -1, dd)
}

// Release returns when the card's current busy time ends: 0 when it is free now.
func (p *Profile) Release(card int) int64 { return p.rel[card] }

// FreeNow reports whether a card is usable and free now.
func (p *Profile) FreeNow(card int) bool {
	return p.rel[card] == 0 && p.cardOK[card]
}

// Window returns how long a card stays free from the given time on: the
// start of its next busy span minus at, Forever when none follows, and 0 when
// it is busy at that time.
func (p *Profile) Window(card int, at int64) int64 {
	if at < p.rel[card] {
		return 0
	}
	p.settleFor(card)
	for _, s := range p.spans[card] {
		if s.end <= at {
			continue
		}
		if s.start <= at {
			return 0
		}
		return s.start - at
	}
	return Forever
}

// claimWindow is how long a card free now stays free of the reservations
// placement fills first: Window(card, 0) as if no ReserveProtect span
// were there. It orders placement (temporal fragments first, shortest
// window first); whether a job fits is Window's.
func (p *Profile) claimWindow(card int) int64 {
	p.settleFor(card)
	for _, s := range p.spans[card] {
		if s.protect || s.end <= 0 {
			continue
		}
		if s.start <= 0 {
			return 0
		}
		return s.start
	}
	return Forever
}

// NextClaim returns the start of the first reservation span on a card at or
// after at, or Forever.
func (p *Profile) NextClaim(card int, at int64) int64 {
	p.settleFor(card)
	for _, s := range p.spans[card] {
		if s.start >= at {
			return s.start
		}
	}
	return Forever
}

// FreeOver reports whether a usable card is free over [start, end).
func (p *Profile) FreeOver(card int, start, end int64) bool {
	if !p.cardOK[card] || start < p.rel[card] {
		return false
	}
	if t := p.lazyOf[card]; len(p.lazy) > 0 && t.epoch == p.lazyEpoch {
		// In one lazy reservation: read it where it is (the predicted
		// profile claims the head's cards before its reservation).
		if k := t.in; k < 0 {
			p.settle()
		} else if r := &p.lazy[k]; r.start < end && start < r.end {
			return false
		}
	}
	for _, s := range p.spans[card] {
		if s.start < end && start < s.end {
			return false
		}
	}
	return true
}

// Reserve marks cards busy over [start, end). A start at 0 on a card free now
// is a start now. It fails without changing anything when a card is not free
// over the whole interval.
func (p *Profile) Reserve(cards []int, start, end int64) error {
	return p.reserve(cards, start, end, false)
}

// ReserveProtect is Reserve for a job whose reservation only protects it:
// no job may hold its cards past start, as with Reserve, but placement
// does not fill its cards first as it fills those a reservation claims
// later (temporal fragments, which the claim leaves idle until it starts
// anyway): they count as unclaimed. For a reservation made beyond EASY's
// head (Params.LargeDepth), whose cards a plain EASY leaves whole for a
// gang that fits now.
func (p *Profile) ReserveProtect(cards []int, start, end int64) error {
	return p.reserve(cards, start, end, true)
}

func (p *Profile) reserve(cards []int, start, end int64, protect bool) error {
	if end <= start {
		return fmt.Errorf("profile: empty interval [%d, %d)", start, end)
	}
	if !p.sc.picked.holds(cards, start, p.gen) {
		for _, c := range cards {
			if !p.FreeOver(c, start, end) {
				return fmt.Errorf("%w: card %s over [%d, %d)", ErrOverlap, p.lay.Ref(c), start, end)
			}
		}
	}
	lazyFrom := len(p.lazyCards)
	for _, c := range cards {
		if start == 0 {
			p.noteBusy(c)
			p.dropFree(c)
			p.rel[c] = end
			p.busyChanged(p.nodeOf[c])
			p.startLog = append(p.startLog, int32(c))
			p.noteChanged(c)
		} else if p.rel[c] > 0 && !p.noLazy {
			p.lazyCards = append(p.lazyCards, int32(c))
			if t := &p.lazyOf[c]; t.epoch == p.lazyEpoch {
				t.in = -1
			} else {
				*t = lazyTag{p.lazyEpoch, int32(len(p.lazy))}
			}
		} else {
			p.addSpan(c, span{start, end, protect})
			p.noteChanged(c)
		}
	}
	if n := len(p.lazyCards); n > lazyFrom {
		p.lazy = append(p.lazy, lazyResv{from: lazyFrom, to: n, start: start, end: end, protect: protect})
	}
	p.gen++
	return nil
}

// noteChanged notes that a card's busy times changed, for events. A card
// is noted once; events patches those that are not back where the streams
// have them, or rebuilds the streams when they are many.
func (p *Profile) noteChanged(c int) {
	if !p.evValid || p.sc.evNoted[c] {
		return
	}
	p.sc.evNoted[c] = true
	p.evDirty = append(p.evDirty, int32(c))
}

// unchanged says whether card c's events are those the streams hold of it
// (evAt): a usable card with no reservation, free now and free now when
// recorded, or busy until the time recorded, moved as Advance moved the
// base event (an event stays put once free, so a card freed since is
// changed). A card with reservations or an unusable one is changed.
func (p *Profile) unchanged(c int32) bool {
	if !p.cardOK[c] || len(p.spans[c]) > 0 {
		return !p.cardOK[c] && p.evAt[c] < 0
	}
	if r := p.rel[c]; r > 0 {
		return r+p.evClock == p.evAt[c]
	}
	return p.evAt[c] == 0
}

// record notes what the streams hold of card c now (evAt).
func (p *Profile) record(c int) {
	switch {
	case !p.cardOK[c] || len(p.spans[c]) > 0:
		p.evAt[c] = -1
	case p.rel[c] > 0:
		p.evAt[c] = p.rel[c] + p.evClock
	default:
		p.evAt[c] = 0
	}
}

// dropDirty forgets the cards noted changed.
func (p *Profile) dropDirty() {
	for _, c := range p.evDirty {
		p.sc.evNoted[c] = false
	}
	p.evDirty = p.evDirty[:0]
}

// dropFree notes that a free card becomes busy: its entry in the free
// list goes stale.
func (p *Profile) dropFree(c int) {
	if !p.freeDirty && p.FreeNow(c) {
		p.stale++
	}
}

func (p *Profile) refreshFree() {
	switch {
	case p.freeDirty:
		p.free = p.free[:0]
		for c := range p.rel {
			if p.FreeNow(c) {
				p.free = append(p.free, c)
			}
		}
		p.freeDirty, p.stale = false, 0
	case p.stale > 0 && 2*p.stale >= len(p.free):
		p.compactFree()
	}
}

func (p *Profile) compactFree() {
	p.free = slices.DeleteFunc(p.free, func(c int) bool { return !p.FreeNow(c) })
	p.stale = 0
}

// FreeCards returns the usable cards free now, in card order. The slice is
// the profile's own and valid until the next change.
func (p *Profile) FreeCards() []int {
	p.refreshFree()
	if p.stale > 0 {
		p.compactFree()
	}
	return p.free
}

// Outcome says why FitNow could not place a job.
type Outcome uint8

const (
	// Fits: the job can start now.
	Fits Outcome = iota
	// NoCards: fewer free cards than the job needs.
	NoCards
	// Claimed: enough free cards, but a reservation claims some of them
	// before the job would end.
	Claimed
	// WrongShape: enough free cards, but not in the required topology.
	WrongShape
)

// FitNow places a job of the given duration on cards free now and free for
// the whole duration, by best fit: cards whose window is the shortest that
// still holds the job are used first, so that long windows stay for long
// jobs. It does not change the profile.
func (p *Profile) FitNow(dur int64, req Request) ([]int, Outcome) {
	return p.FitNowWhere(dur, req, nil)
}

// failure is a FitNow that found no place: for jobs of dur or longer, at
// state version gen.
type failure struct {
	gen, dur int64
	grew     int64 // Profile.grew when it was noted
	out      Outcome
	set      bool // in failedDense: a failure is remembered
}

// failedSlot is where a failure of req is remembered when it is of a
// common shape (denseSlot): dense says so, and slot is nil while none was
// (alloc makes one). Other requests are kept in the map failed, whose
// hash of a request was a third of FitNow at a million jobs.
func (p *Profile) failedSlot(req Request, alloc bool) (slot *failure, dense bool) {
	return denseSlot(&p.failedDense, req, len(p.lay.Cards), alloc)
}

// failureOf returns the failure remembered for req, if any (of any
// state version).
func (p *Profile) failureOf(req Request) (failure, bool) {
	if slot, dense := p.failedSlot(req, false); dense {
		if slot == nil {
			return failure{}, false
		}
		return *slot, slot.set
	}
	f, ok := p.failed[req]
	return f, ok
}

// noteFailure remembers f for req.
func (p *Profile) noteFailure(req Request, f failure) {
	if slot, dense := p.failedSlot(req, true); dense {
		f.set = true
		*slot = f
		return
	}
	if p.failed == nil {
		p.failed = map[Request]failure{}
	}
	p.failed[req] = f
}

// FitNowWhere is FitNow on the cards allow accepts (all when nil).
//
// A request that found no place for dur finds none for a longer job
// either, for the same reason, until the profile changes: the cards free
// long enough for the longer job are a subset, and the reason is read from
// all the free cards, whatever the duration. A queue walk asks again and
// again for the same shapes between two starts, so FitNow answers those
// from the last failure (allow == nil only). Too few free cards
// (NoCards) or none in the shape (WrongShape) is read from every free
// card whatever the windows, so it answers a shorter job too; only a
// reservation in the way (Claimed) depends on the duration.
func (p *Profile) FitNowWhere(dur int64, req Request, allow func(card int) bool) ([]int, Outcome) {
	if allow == nil {
		if f, ok := p.failureOf(req); ok && f.gen == p.gen && dur >= f.dur {
			return nil, f.out
		}
	}
	cards, out := p.fitNow(dur, req, allow)
	if out != Fits && allow == nil {
		if f, ok := p.failureOf(req); !ok || f.gen != p.gen || dur < f.dur {
			p.noteFailure(req, failure{gen: p.gen, dur: failedFor(dur, out), grew: p.grew, out: out})
		}
	}
	return cards, out
}

// failedFor is the shortest duration a failure of dur with outcome out
// answers: any when the windows played no part in it.
func failedFor(dur int64, out Outcome) int64 {
	if out == Claimed {
		return dur
	}
	return 0
}

// FitNowAny is FitNow for a caller that needs to know only whether the
// job fits now, and where, not why it does not. A failure noted since the
// last change that could free capacity answers it at any later state:
// holds, starts and reservations only take cards away, and what found no
// place among some cards finds none among fewer, as FitNowWhere's reuse
// for a longer job already has it. EASY's walk of a deep queue asked
// FitNow again for every shape after each start (a fifth of a huitian
// plan at 65,536 cards and 20,000 queued).
func (p *Profile) FitNowAny(dur int64, req Request) ([]int, bool) {
	if f, ok := p.failureOf(req); ok && f.grew == p.grew && dur >= f.dur {
		return nil, false
	}
	cards, out := p.FitNowWhere(dur, req, nil)
	return cards, out == Fits
}

func (p *Profile) fitNow(dur int64, req Request, allow func(card int) bool) ([]int, Outcome) {
	if cards, out, ok := p.fastFit(dur, req, allow); ok {
		return cards, out
	}
	if p.ix.total < req.Cards {
		return nil, NoCards
	}
	if allow == nil && p.flatCount(req) {
		if cards, out, ok := p.fitFlat(dur, req.Cards); ok {
			return cards, out
		}
	}
	if allow == nil && req.PerNode > 1 {
		if cards := p.fitOnNodesOf(dur, req); cards != nil {
			return cards, Fits
		}
		// No place: the reason is read from every free card, below.
	}
	p.refreshFree()
	return p.fitAmong(dur, req, p.free, allow)
}

// fitOnNodesOf is fitAmong's placement of a request of PerNode cards on
// each of its nodes among the free cards of the nodes with at least
// PerNode free (the index's counts), or nil when it finds none: the only
// nodes that can take part, so the placement is fitAmong's among all the
// free cards (placement orders nodes totally, and skips those with fewer
// candidate cards than PerNode). At 65,536 cards, where most nodes hold
// a busy card or two, a gang of whole nodes read every free card.
func (p *Profile) fitOnNodesOf(dur int64, req Request) []int {
	p.fresh()
	th := int32(req.PerNode)
	free := p.sc.onNodes[:0]
	for n, cnt := range p.ix.cnt {
		if cnt < th {
			continue
		}
		nd := &p.lay.Nodes[n]
		for c := nd.First; c < nd.First+nd.Len; c++ {
			if p.FreeNow(c) {
				free = append(free, c)
			}
		}
	}
	p.sc.onNodes = free
	if len(free) < req.Cards {
		return nil
	}
	cards, out := p.fitAmong(dur, req, free, nil)
	if out != Fits {
		return nil
	}
	return cards
}

// FitNowOn is FitNow on the cards of the given nodes only.
func (p *Profile) FitNowOn(dur int64, req Request, nodes []int32) ([]int, Outcome) {
	ns := slices.Clone(nodes)
	slices.Sort(ns)
	free := p.sc.onNodes[:0]
	for _, n := range ns {
		nd := p.lay.Nodes[n]
		for c := nd.First; c < nd.First+nd.Len; c++ {
			if p.FreeNow(c) {
				free = append(free, c)
			}
		}
	}
	p.sc.onNodes = free
	if len(free) < req.Cards {
		return nil, NoCards
	}
	return p.fitAmong(dur, req, free, nil)
}

// fitAmong places req among free (cards free now, in card order): first
// on cards a reservation claims later (temporal fragments), then on all
// cards free long enough, shortest window first.
func (p *Profile) fitAmong(dur int64, req Request, free []int, allow func(int) bool) ([]int, Outcome) {
	cands := p.sc.cands[:0]
	claimed := 0
	anyModel := req.Model == ""
	p.sc.dur = dur
	defer func() { p.sc.dur = 0 }()
	for _, c := range free {
		// Both callers list usable cards only, so free now is rel == 0
		// (p.free may hold a few that have been taken since); the card's
		// model is read only when the request names one: at 65k cards this
		// loop is most of a gang's placement.
		if p.rel[c] != 0 || !anyModel && !model.ModelAccepts(req.Model, p.lay.Cards[c].Model) || allow != nil && !allow(c) {
			continue
		}
		if p.Window(c, 0) >= dur {
			cands = append(cands, c)
			w := p.claimWindow(c)
			p.sc.key[c] = w
			if w != Forever {
				claimed++
			}
		}
	}
	p.sc.cands = cands
	if claimed >= req.Cards && claimed < len(cands) {
		sub := make([]int, 0, claimed)
		for _, c := range cands {
			if p.sc.key[c] != Forever {
				sub = append(sub, c)
			}
		}
		if got := p.place(req, sub); got != nil {
			return got, Fits
		}
	}
	if len(cands) >= req.Cards {
		if got := p.place(req, cands); got != nil {
			return got, Fits
		}
	}
	// Tell a reservation in the way apart from a topology that cannot be met.
	all := p.sc.cands[:0]
	for _, c := range free {
		if p.FreeNow(c) && model.ModelAccepts(req.Model, p.lay.Cards[c].Model) && (allow == nil || allow(c)) {
			all = append(all, c)
			p.sc.key[c] = 0
		}
	}
	p.sc.cands = all
	if len(all) < req.Cards {
		return nil, NoCards
	}
	if p.place(req, all) != nil {
		return nil, Claimed
	}
	return nil, WrongShape
}

// denseShapes is how many request shapes the dense caches (denseSlot)
// hold: the four topologies × cards per node 0–15.
const denseShapes = 4 * 16

// denseSlot returns req's slot in tab, a cache by request shape and card
// count (up to most) that the walks ask of every job, where a map's hash
// of the request was the cost: dense says req is of a shape it holds (any
// card model, a topology, 0–15 cards per node, 0 to most cards), and slot
// is nil while its shape has no row and alloc is false.
func denseSlot[T any](tab *[][]T, req Request, most int, alloc bool) (slot *T, dense bool) {
	if req.Model != "" || req.Topology > model.TopologySameSwitch || req.PerNode < 0 || req.PerNode >= 16 ||
		req.Cards < 0 || req.Cards > most {
		return nil, false
	}
	sh := int(req.Topology)*16 + req.PerNode
	if *tab == nil || (*tab)[sh] == nil {
		if !alloc {
			return nil, true
		}
		if *tab == nil {
			*tab = make([][]T, denseShapes)
		}
		(*tab)[sh] = make([]T, most+1)
	}
	return &(*tab)[sh][req.Cards], true
}

// fitKey is a request of any card model, a cheap map key.
type fitKey struct {
	cards, perNode int
	topo           model.Topology
}

// CanEverFit reports whether the cluster's usable cards, all free, could
// hold req at all. Results are cached per request shape.
func (p *Profile) CanEverFit(req Request) bool {
	if req.Cards <= 0 {
		return false
	}
	if p.usable < 0 {
		p.usable = 0
		for _, c := range p.lay.Cards {
			if c.Usable {
				p.usable++
			}
		}
	}
	if req.Cards > p.usable {
		return false
	}
	if req.Topology == model.TopologyAny && req.PerNode == 0 && req.Model == "" {
		return true
	}
	key := fitKey{req.Cards, req.PerNode, req.Topology}
	slot, dense := denseSlot(&p.fitsDense, req, p.usable, true)
	switch {
	case dense:
		if *slot != 0 {
			return *slot > 0
		}
	case req.Model == "":
		if ok, seen := p.fitsAny[key]; seen {
			return ok
		}
	default:
		if ok, seen := p.fits[req]; seen {
			return ok
		}
	}
	all := p.sc.cands[:0]
	for c, loc := range p.lay.Cards {
		if loc.Usable && model.ModelAccepts(req.Model, loc.Model) {
			all = append(all, c)
			p.sc.key[c] = 0
		}
	}
	p.sc.cands = all
	ok := p.place(req, all) != nil
	if dense {
		*slot = -1
		if ok {
			*slot = 1
		}
		return ok
	}
	if req.Model == "" {
		if p.fitsAny == nil {
			p.fitsAny = map[fitKey]bool{}
		}
		p.fitsAny[key] = ok
		return ok
	}
	if p.fits == nil {
		p.fits = map[Request]bool{}
	}
	p.fits[req] = ok
	return ok
}

// Group returns a node's switch group: its leaf switch's index, or a group
// of its own (numbered after the switches) for a node under no switch.
func (p *Profile) Group(node int) int32 { return p.group[node] }

// NodeRank returns a node's position in name order.
func (p *Profile) NodeRank(node int) int32 { return p.ix.rank[node] }

// FreeCount returns how many usable cards are free now.
func (p *Profile) FreeCount() int { return p.ix.total }

// picked is the flat sweep's last answer (earliestFlat): its cards (the
// list's first element and length), its start, and the state version it
// was read at. With no reservation on any card (which earliestFlat needs),
// each of them is free from its release on for good, and every release
// is at most t: while the profile is unchanged the cards are free over
// any interval from t on, and Reserve need not ask each card (at a flat
// 93,312-card machine's head, tens of thousands of cards, every plan).
type picked struct {
	first  *int
	n      int
	t, gen int64
}

// holds says whether cards is the picked list, unchanged since, and start
// is at or after its time.
func (k picked) holds(cards []int, start, gen int64) bool {
	return k.n > 0 && len(cards) == k.n && &cards[0] == k.first && gen == k.gen && start >= k.t
}
