package profile

import (
	"cmp"
	"math/bits"
	"slices"

	"github.com/huitian/huitian/model"
)

// scratch holds per-call working memory, sized once per profile.
type scratch struct {
	cands   []int
	onNodes []int
	key     []int64 // per card: placement preference, smaller first
	nodes   []nodeGroup

	nodeCnt   []int32 // sweep counters
	islandCnt []int32
	groupCap  []int32
	inSet     []bool
	evMark    []bool // per card: its events are being patched (events)
	evNoted   []bool // per card: in Profile.evDirty
	// A sweep's nodes and cards touched (feasibility), kept empty.
	fNodes, fCards []int32

	// events' counting sorts: their working memory and spare buffers.
	ct      countingScratch
	baseTmp []baseEvent
	gapTmp  []gap
	// patchEvents' changed cards' events.
	patchBase []baseEvent
	patchGaps []gap

	packed []int64 // placeFlat's keys
	flatKs []int64 // fitFlat's keys of the claimed free cards long enough
	// fitFlat's dirty cards (free when listed, with reservations) by
	// key, with their windows from now, made at spanGen flatAt-1 (0:
	// never made).
	flatDirty []flatDirty
	flatAt    int64
	flatFree  flatFree // the list's free cards at one state (flatFreeNow)
	bits      []uint64 // earliestFlat's chosen cards, fitFlat's seen ones: one bit each, cleared after use
	// picked is the flat sweep's last answer (earliestFlat), which
	// Reserve need not check card by card.
	picked picked

	// placeSwitch's per-group capacity (+1 once seen), apart from the
	// sweep's counters, which are live while it places.
	switchCap []int32
	touched   []int32

	// Buffers of pickInNode's cards in one island, placeSwitch's nodes
	// under the chosen switch and placeSpread's order: every start,
	// reservation and sweep that places cards asked for new ones.
	pick     []int
	inSwitch []nodeGroup
	spread   []nodeGroup

	dur   int64   // fitAmong's duration, for alignEnds
	freed []int32 // Advance's cards whose busy time ended

	// earliestByDomain's units (their times, their domains), one node's
	// card times, and the units sorted by domain.
	domVals, domOwn, domTmp []int64
	domOf                   []int32
	domCnt, domNext         []int
}

type nodeGroup struct {
	node  int32
	cards []int // a sub-slice of the candidate list
	key   int64 // the smallest key of its cards
	ext   int64 // alignEnds: how far the job would extend the node's busy time
}

func (s *scratch) init(lay *model.Layout, ngroups int) {
	s.key = make([]int64, len(lay.Cards))
	s.nodeCnt = make([]int32, len(lay.Nodes))
	s.islandCnt = make([]int32, len(lay.Islands))
	s.groupCap = make([]int32, ngroups)
	s.switchCap = make([]int32, ngroups)
	s.inSet = make([]bool, len(lay.Cards))
	s.evMark = make([]bool, len(lay.Cards))
	s.evNoted = make([]bool, len(lay.Cards))
	s.bits = make([]uint64, (len(lay.Cards)+63)/64)
}

// place chooses cards for req among cands (sorted by card number; each
// card's preference in sc.key) by best fit, or returns nil. The result is a
// fresh slice sorted by card number.
//
// Best fit: the domain (node, island, switch) with the fewest candidate
// cards that still holds the job, ties broken by the smaller preference key
// and then by name; a job never spreads over more nodes or islands than it
// must.
func (p *Profile) place(req Request, cands []int) []int {
	if req.Cards <= 0 || len(cands) < req.Cards {
		return nil
	}
	if p.ix.maxLen == 1 && len(p.lay.Switches) == 0 && req.Topology == model.TopologyAny && req.PerNode == 0 {
		return p.placeFlat(req.Cards, cands)
	}
	return p.placeGeneral(req, cands)
}

// placeGeneral is place without the flat-machine shortcut.
func (p *Profile) placeGeneral(req Request, cands []int) []int {
	groups := p.groupByNode(cands)
	var got []int
	switch req.Topology {
	case model.TopologySameNode:
		got = p.placeOneNode(groups, req.Cards)
	case model.TopologySameIsland:
		got = p.placeIsland(groups, req.Cards)
	case model.TopologySameSwitch:
		got = p.placeSwitch(groups, req)
	default:
		if req.PerNode == 0 || req.PerNode == req.Cards {
			got = p.placeOneNode(groups, req.Cards)
		}
		if got == nil && req.PerNode != req.Cards {
			if len(p.lay.Switches) > 0 {
				got = p.placeSwitch(groups, req)
			}
			if got == nil {
				got = p.placeSpread(groups, req)
			}
		}
	}
	if got == nil {
		return nil
	}
	slices.Sort(got)
	return got
}

func (p *Profile) groupByNode(cands []int) []nodeGroup {
	gs := p.sc.nodes[:0]
	for i := 0; i < len(cands); {
		n := p.nodeOf[cands[i]]
		j := i
		k := p.sc.key[cands[i]]
		for j < len(cands) && p.nodeOf[cands[j]] == n {
			k = min(k, p.sc.key[cands[j]])
			j++
		}
		var ext int64
		if p.alignEnds && p.sc.dur > 0 {
			ext = max(0, p.sc.dur-p.nodeBusy(n))
		}
		gs = append(gs, nodeGroup{node: n, cards: cands[i:j], key: k, ext: ext})
		i = j
	}
	p.sc.nodes = gs
	return gs
}

func (p *Profile) nodeName(n int32) string { return p.lay.Nodes[n].Name }

// bestNode returns the group with the fewest cards ≥ need, or -1.
func (p *Profile) bestNode(groups []nodeGroup, need int) int {
	best := -1
	for i := range groups {
		g := &groups[i]
		if len(g.cards) < need {
			continue
		}
		if best < 0 || p.lessFit(g, &groups[best]) {
			best = i
		}
	}
	return best
}

func (p *Profile) lessFit(a, b *nodeGroup) bool {
	if c := cmp.Compare(a.ext, b.ext); c != 0 {
		return c < 0
	}
	if c := cmp.Compare(len(a.cards), len(b.cards)); c != 0 {
		return c < 0
	}
	if c := cmp.Compare(a.key, b.key); c != 0 {
		return c < 0
	}
	return p.ix.rank[a.node] < p.ix.rank[b.node]
}

func (p *Profile) placeOneNode(groups []nodeGroup, k int) []int {
	if i := p.bestNode(groups, k); i >= 0 {
		return p.pickInNode(groups[i].cards, k, nil)
	}
	return nil
}

// islandsOf splits a node's candidate cards by island, returning
// (island, cards) runs in order of first appearance.
func (p *Profile) islandsOf(cards []int) [][]int {
	if p.oneIsland(cards) {
		return [][]int{slices.Clone(cards)}
	}
	var out [][]int
	var ids []int32
	// A node has a few islands, searched in a slice; a node of thousands
	// of unnamed cards (each its own island) needs a map, or this is
	// quadratic in its cards (65,536 cards on one node: seconds per call).
	var pos map[int32]int
	for _, c := range cards {
		isl := p.lay.Cards[c].Island
		i, ok := -1, false
		if pos != nil {
			i, ok = pos[isl]
		} else {
			i = slices.Index(ids, isl)
			ok = i >= 0
		}
		if ok {
			out[i] = append(out[i], c)
			continue
		}
		ids = append(ids, isl)
		out = append(out, []int{c})
		switch {
		case pos != nil:
			pos[isl] = len(ids) - 1
		case len(ids) > 32:
			pos = make(map[int32]int, len(cards))
			for k, id := range ids {
				pos[id] = k
			}
		}
	}
	return out
}

// oneIsland says whether cards (at least one) are all of one island.
func (p *Profile) oneIsland(cards []int) bool {
	first := p.lay.Cards[cards[0]].Island
	for _, c := range cards[1:] {
		if p.lay.Cards[c].Island != first {
			return false
		}
	}
	return true
}

// poolUnnamed merges the cards that belong to no NVLink island (each its
// own island in the layout) into one group: within a node they are
// interchangeable, so they go by window like the cards of one island.
// Named islands keep their order; the pool comes last.
func (p *Profile) poolUnnamed(isl [][]int) [][]int {
	var pool []int
	out := isl[:0]
	for _, s := range isl {
		if p.islandName(s) == "" {
			pool = append(pool, s...)
		} else {
			out = append(out, s)
		}
	}
	if pool != nil {
		out = append(out, pool)
	}
	return out
}

func (p *Profile) islandName(cards []int) string {
	return p.lay.Islands[p.lay.Cards[cards[0]].Island].Name
}

func (p *Profile) byKey(cards []int) {
	slices.SortFunc(cards, func(a, b int) int {
		if c := cmp.Compare(p.sc.key[a], p.sc.key[b]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
}

// pickInNode takes k of a node's candidate cards: from the best-fit island
// that holds them all, else from the fewest islands, largest first, with the
// remainder in the best-fit island. The result is appended to dst.
func (p *Profile) pickInNode(cards []int, k int, dst []int) []int {
	if len(cards) == 1 && k == 1 {
		return append(dst, cards[0])
	}
	if p.oneIsland(cards) {
		// islandsOf's one run, sorted in a buffer: a node's cards are
		// mostly one island, and every start and sweep places some.
		c := append(p.sc.pick[:0], cards...)
		p.byKey(c)
		p.sc.pick = c
		return append(dst, c[:k]...)
	}
	isl := p.poolUnnamed(p.islandsOf(cards))
	if len(isl) == 1 {
		c := slices.Clone(isl[0])
		p.byKey(c)
		return append(dst, c[:k]...)
	}
	slices.SortFunc(isl, func(a, b []int) int {
		if c := cmp.Compare(len(b), len(a)); c != 0 {
			return c
		}
		return cmp.Compare(p.islandName(a), p.islandName(b))
	})
	for k > 0 {
		// The smallest island that holds the remainder, if any.
		fit := -1
		for i, s := range isl {
			if s != nil && len(s) >= k && (fit < 0 || len(s) < len(isl[fit])) {
				fit = i
			}
		}
		if fit < 0 {
			for i, s := range isl { // the largest left
				if s != nil {
					fit = i
					break
				}
			}
		}
		if fit < 0 {
			return nil
		}
		s := isl[fit]
		isl[fit] = nil
		p.byKey(s)
		n := min(k, len(s))
		dst = append(dst, s[:n]...)
		k -= n
	}
	return dst
}

func (p *Profile) placeIsland(groups []nodeGroup, k int) []int {
	var best []int
	var bestKey, bestExt int64
	var bestNode, bestName string
	for _, g := range groups {
		for _, s := range p.islandsOf(g.cards) {
			if len(s) < k {
				continue
			}
			key := p.sc.key[s[0]]
			for _, c := range s {
				key = min(key, p.sc.key[c])
			}
			name := p.islandName(s)
			node := p.nodeName(g.node)
			if best == nil || g.ext < bestExt || g.ext == bestExt && (len(s) < len(best) ||
				len(s) == len(best) && (key < bestKey || key == bestKey && (node < bestNode || node == bestNode && name < bestName))) {
				best, bestKey, bestExt, bestNode, bestName = s, key, g.ext, node, name
			}
		}
	}
	if best == nil {
		return nil
	}
	p.byKey(best)
	return slices.Clone(best[:k])
}

// placeSwitch places the job under the one switch group with the least
// capacity that holds it.
func (p *Profile) placeSwitch(groups []nodeGroup, req Request) []int {
	if len(groups) == 0 {
		return nil
	}
	capOf := func(g *nodeGroup) int {
		if req.PerNode > 0 {
			if len(g.cards) >= req.PerNode {
				return 1
			}
			return 0
		}
		return len(g.cards)
	}
	need := req.Cards
	if req.PerNode > 0 {
		need = req.Cards / req.PerNode
	}
	// groups are in node order; switch groups need not be contiguous, so
	// collect per group.
	caps, touched := p.sc.switchCap, p.sc.touched[:0]
	for i := range groups {
		g := p.group[groups[i].node]
		if caps[g] == 0 {
			touched = append(touched, g)
			caps[g] = 1
		}
		caps[g] += int32(capOf(&groups[i]))
	}
	bestG, bestCap := int32(-1), 0
	for _, g := range touched {
		c := int(caps[g]) - 1
		caps[g] = 0
		if c < need {
			continue
		}
		if bestG < 0 || c < bestCap || c == bestCap && p.groupName(g) < p.groupName(bestG) {
			bestG, bestCap = g, c
		}
	}
	p.sc.touched = touched
	if bestG < 0 {
		return nil
	}
	in := p.sc.inSwitch[:0]
	for _, g := range groups {
		if p.group[g.node] == bestG {
			in = append(in, g)
		}
	}
	p.sc.inSwitch = in
	if req.PerNode == 0 || req.PerNode == req.Cards {
		if got := p.placeOneNode(in, req.Cards); got != nil {
			return got
		}
	}
	return p.placeSpread(in, req)
}

func (p *Profile) groupName(g int32) string {
	if int(g) < len(p.lay.Switches) {
		return p.lay.Switches[g]
	}
	// A node under no switch is a group of its own: name it by the node.
	for i, gi := range p.group {
		if gi == g {
			return "\xff" + p.lay.Nodes[i].Name
		}
	}
	return "\xff"
}

// placeSpread places the job over several nodes: with a per-node count, on
// the best-fit nodes that each hold that count; without, on the fewest nodes,
// largest first, and the remainder on the best-fit node.
func (p *Profile) placeSpread(groups []nodeGroup, req Request) []int {
	order := append(p.sc.spread[:0], groups...)
	defer func() { p.sc.spread = order[:0] }()
	if req.PerNode > 0 {
		m := req.Cards / req.PerNode
		slices.SortFunc(order, func(a, b nodeGroup) int {
			if p.lessFit(&a, &b) {
				return -1
			}
			if p.lessFit(&b, &a) {
				return 1
			}
			return 0
		})
		var out []int
		for _, g := range order {
			if m == 0 {
				break
			}
			if len(g.cards) < req.PerNode {
				continue
			}
			out = p.pickInNode(g.cards, req.PerNode, out)
			m--
		}
		if m > 0 {
			return nil
		}
		return out
	}
	if allSingles(order) {
		// One card per node (a flat machine): order by preference, then
		// name, with a plain integer sort of packed keys.
		packed := make([]int64, len(order))
		for i, g := range order {
			k := min(max(g.key, -1<<37), 1<<37) + 1<<37
			packed[i] = k<<24 | int64(p.ix.rank[g.node])
		}
		slices.Sort(packed)
		byRank := p.ix.byRank
		for i, v := range packed {
			n := byRank[v&(1<<24-1)]
			order[i] = nodeGroup{node: n, key: v>>24 - 1<<37, cards: groupsByNode(groups, n)}
		}
	} else {
		slices.SortFunc(order, func(a, b nodeGroup) int {
			if c := cmp.Compare(len(b.cards), len(a.cards)); c != 0 {
				return c
			}
			if c := cmp.Compare(a.key, b.key); c != 0 {
				return c
			}
			return cmp.Compare(p.ix.rank[a.node], p.ix.rank[b.node])
		})
	}
	var out []int
	k := req.Cards
	for i := 0; i < len(order) && k > 0; i++ {
		// Finish on the best-fit node among the rest once one holds the
		// remainder (the order is by size, so only then can one).
		if len(order[i].cards) >= k {
			rest := order[i:]
			j := p.bestNode(rest, k)
			return p.pickInNode(rest[j].cards, k, out)
		}
		out = p.pickInNode(order[i].cards, len(order[i].cards), out)
		k -= len(order[i].cards)
	}
	if k > 0 {
		return nil
	}
	return out
}

func allSingles(gs []nodeGroup) bool {
	for _, g := range gs {
		if len(g.cards) != 1 {
			return false
		}
	}
	return true
}

// groupsByNode finds node n's group among groups (in node order).
func groupsByNode(groups []nodeGroup, n int32) []int {
	i, _ := slices.BinarySearchFunc(groups, n, func(g nodeGroup, n int32) int { return cmp.Compare(g.node, n) })
	return groups[i].cards
}

// placeFlat is place on a machine of one-card nodes and no switches (the
// SWF traces' processors): every node holds one card, so best fit is the
// k cards of smallest preference, then name — what the general path picks,
// without building node groups.
func (p *Profile) placeFlat(k int, cands []int) []int {
	packed := slices.Grow(p.sc.packed[:0], len(cands))[:len(cands)]
	p.sc.packed = packed
	for i, c := range cands {
		packed[i] = p.flatKey(c)
	}
	// The keys are distinct (one card per node), so the k smallest are
	// those up to the k-th smallest: no sort (placing the head of a flat
	// 93,312-card replay sorted every free card each cycle).
	kth := nthSmallest(packed, k)
	out := make([]int, 0, k)
	for _, c := range cands {
		if p.flatKey(c) <= kth {
			out = append(out, p.lay.Nodes[p.nodeOf[c]].First)
		}
	}
	if !slices.IsSorted(out) {
		slices.Sort(out)
	}
	return out
}

// flatKey packs a candidate's preference and its node's name rank into one
// integer, in placeFlat's order.
func (p *Profile) flatKey(c int) int64 {
	return clampKey(p.sc.key[c])<<24 | p.cardRank(c)
}

// cardRank is the name rank of card c's node: the card's own number where
// node names order the cards (cardRanked: a flat machine), without the
// two lookups.
func (p *Profile) cardRank(c int) int64 {
	if p.cardRanked {
		return int64(c)
	}
	return int64(p.ix.rank[p.nodeOf[c]])
}

// clampKey maps a placement key into flatKey's 38 bits, in order.
func clampKey(key int64) int64 { return min(max(key, -1<<37), 1<<37) + 1<<37 }

// nthSmallest returns the k-th smallest element of a (1 ≤ k ≤ len(a)),
// reordering a: a quickselect, O(len(a)) expected against a sort's
// O(len(a) log len(a)). Pivots come from a fixed pseudo-random sequence, so
// no input order makes it quadratic in practice; the answer does not
// depend on them. Past a depth limit it sorts what is left.
func nthSmallest(a []int64, k int) int64 {
	lo, hi := 0, len(a) // the k-th smallest is in a[lo:hi], at index k-1
	k--
	x := uint64(0x9e3779b97f4a7c15)
	for depth := 8 * bits.Len(uint(len(a))); hi-lo > 16; depth-- {
		if depth == 0 {
			break
		}
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		pivot := a[lo+int(x%uint64(hi-lo))]
		// [lo, lt) < pivot, [lt, gt) == pivot, [gt, hi) > pivot.
		lt, i, gt := lo, lo, hi
		for i < gt {
			switch v := a[i]; {
			case v < pivot:
				a[lt], a[i] = v, a[lt]
				lt++
				i++
			case v > pivot:
				gt--
				a[gt], a[i] = v, a[gt]
			default:
				i++
			}
		}
		switch {
		case k < lt:
			hi = lt
		case k >= gt:
			lo = gt
		default:
			return pivot
		}
	}
	slices.Sort(a[lo:hi])
	return a[k]
}
