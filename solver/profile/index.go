package profile

import (
	"math/bits"
	"slices"

	"github.com/huitian/huitian/model"
)

// index keeps, per node, how many usable cards are free now and how many
// of those a reservation claims later ("dirty" nodes), and buckets the
// clean nodes by free count in name order. It lets FitNow pick the
// best-fit node for a single-node request without scanning every free
// card: the smallest non-empty bucket that holds the job, against the few
// dirty nodes, scanned.
type index struct {
	cnt    []int32    // free usable cards per node
	dirty  []int32    // of those, cards with a finite window
	rank   []int32    // node → position in name order
	byRank []int32    // name order → node
	bucket [][]uint64 // [count] bitset over ranks of clean nodes
	dirtyN []int32    // dirty nodes, unordered
	dpos   []int32    // node → position in dirtyN, -1
	maxLen int
	total  int  // free usable cards
	single bool // every node is one NVLink island
	// stale says that only total is kept: the rest is rebuilt from the
	// profile (fresh) when a placement needs it. A reset makes it stale,
	// so that loading a cycle's running jobs updates one counter per card
	// instead of a node's bucket (a tenth of a flat 93,312-card replay,
	// whose jobs all span nodes and never read the buckets).
	stale bool

	// The index with every usable card free, copied back by fresh: at
	// 93,312 one-card nodes, recounting every node each cycle was a tenth
	// of a flat replay.
	cnt0    []int32
	bucket0 [][]uint64
	total0  int

	al alignTrees // aligned placement's (align.go)
}

func (x *index) init(lay *model.Layout) {
	n := len(lay.Nodes)
	x.cnt = make([]int32, n)
	x.dirty = make([]int32, n)
	x.rank = make([]int32, n)
	x.byRank = make([]int32, n)
	x.dpos = make([]int32, n)
	for i := range x.byRank {
		x.byRank[i] = int32(i)
		x.dpos[i] = -1
	}
	slices.SortFunc(x.byRank, func(a, b int32) int {
		if lay.Nodes[a].Name < lay.Nodes[b].Name {
			return -1
		}
		if lay.Nodes[a].Name > lay.Nodes[b].Name {
			return 1
		}
		return 0
	})
	for r, nd := range x.byRank {
		x.rank[nd] = int32(r)
	}
	x.single = true
	for i, nd := range lay.Nodes {
		x.maxLen = max(x.maxLen, nd.Len)
		for c := nd.First; c < nd.First+nd.Len; c++ {
			if lay.Cards[c].Usable {
				x.cnt[i]++
			}
			if lay.Cards[c].Island != lay.Cards[nd.First].Island {
				x.single = false
			}
		}
		x.total += int(x.cnt[i])
	}
	words := (n + 63) / 64
	x.bucket = make([][]uint64, x.maxLen+1)
	for c := range x.bucket {
		x.bucket[c] = make([]uint64, words)
	}
	for i := range lay.Nodes {
		x.setBit(int32(i), true)
	}
	x.cnt0, x.total0 = slices.Clone(x.cnt), x.total
	x.bucket0 = make([][]uint64, len(x.bucket))
	for c := range x.bucket {
		x.bucket0[c] = slices.Clone(x.bucket[c])
	}
}

// reset returns the index to every usable card free, with no reservation
// (the state init left), stale until fresh.
func (x *index) reset(*model.Layout) {
	x.total = x.total0
	x.stale = true
	x.al.valid, x.al.shift = false, 0
}

// fresh rebuilds a stale index from the profile: what the changes since
// the reset would have made of it. The dirty nodes' order differs, which
// no answer depends on.
func (p *Profile) fresh() {
	x := &p.ix
	if !x.stale {
		return
	}
	copy(x.cnt, x.cnt0)
	clear(x.dirty)
	for _, n := range x.dirtyN {
		x.dpos[n] = -1
	}
	x.dirtyN = x.dirtyN[:0]
	for c := range x.bucket {
		copy(x.bucket[c], x.bucket0[c])
	}
	x.total = x.total0
	x.stale = false
	for c, r := range p.rel {
		if !p.cardOK[c] {
			continue
		}
		switch {
		case r != 0:
			x.change(p.nodeOf[c], -1, 0)
		case len(p.spans[c]) > 0:
			x.change(p.nodeOf[c], 0, 1)
		}
	}
}

func (x *index) setBit(n int32, on bool) {
	r := x.rank[n]
	w := &x.bucket[x.cnt[n]][r/64]
	if on {
		*w |= 1 << (r % 64)
	} else {
		*w &^= 1 << (r % 64)
	}
}

// change applies a change to node n: dc free cards, dd claimed free cards.
func (x *index) change(n int32, dc, dd int32) {
	if x.stale {
		x.total += int(dc)
		return
	}
	x.leave(n)
	if x.dirty[n] == 0 {
		x.setBit(n, false)
	}
	x.cnt[n] += dc
	x.total += int(dc)
	was := x.dirty[n]
	x.dirty[n] += dd
	switch {
	case was == 0 && x.dirty[n] > 0:
		x.dpos[n] = int32(len(x.dirtyN))
		x.dirtyN = append(x.dirtyN, n)
	case was > 0 && x.dirty[n] == 0:
		i := x.dpos[n]
		last := x.dirtyN[len(x.dirtyN)-1]
		x.dirtyN[i] = last
		x.dpos[last] = i
		x.dirtyN = x.dirtyN[:len(x.dirtyN)-1]
		x.dpos[n] = -1
	}
	if x.dirty[n] == 0 {
		x.setBit(n, true)
	}
	x.enter(n)
}

// firstClean returns the clean node with the fewest free cards ≥ k, the
// first in name order among equals, or -1.
func (x *index) firstClean(k int) int32 {
	for c := max(k, 0); c <= x.maxLen; c++ {
		for w, word := range x.bucket[c] {
			if word != 0 {
				return x.byRank[w*64+bits.TrailingZeros64(word)]
			}
		}
	}
	return -1
}

// anyAtLeast reports whether some node has ≥ k free cards, windows aside.
func (x *index) anyAtLeast(k int) bool {
	if x.firstClean(k) >= 0 {
		return true
	}
	for _, n := range x.dirtyN {
		if int(x.cnt[n]) >= k {
			return true
		}
	}
	return false
}

// fastFit places a single-node request by the index, with the same choice
// as place over all free cards would make. handled is false when the
// request is not of that kind or spreading must be considered.
func (p *Profile) fastFit(dur int64, req Request, allow func(int) bool) (cards []int, out Outcome, handled bool) {
	x := &p.ix
	k := req.Cards
	singleNode := req.Topology == model.TopologySameNode ||
		req.Topology == model.TopologySameIsland && x.single ||
		req.Topology == model.TopologyAny && (req.PerNode == 0 || req.PerNode == k)
	if !singleNode || req.Model != "" || allow != nil {
		return nil, 0, false
	}
	if x.total < k {
		return nil, NoCards, true
	}
	if req.Topology == model.TopologyAny && req.PerNode == 0 && k > x.maxLen {
		// No node holds it: it spreads, the long way (on a flat machine
		// the index answers for one-card jobs only).
		return nil, 0, false
	}
	p.fresh()
	// 1. Cards a reservation claims later, long enough: best fit among the
	// dirty nodes on those alone (temporal fragments first).
	type fit struct {
		node  int32
		count int
		key   int64
		ext   int64 // alignEnds: how far the job extends the node's busy time
	}
	better := func(a, b fit) bool {
		if a.ext != b.ext {
			return a.ext < b.ext
		}
		if a.count != b.count {
			return a.count < b.count
		}
		if a.key != b.key {
			return a.key < b.key
		}
		return p.lay.Nodes[a.node].Name < p.lay.Nodes[b.node].Name
	}
	claimedTotal, eligibleTotal := 0, 0
	best1, best2 := fit{node: -1}, fit{node: -1}
	for _, n := range x.dirtyN {
		nd := p.lay.Nodes[n]
		cl, el := 0, 0
		clKey, elKey := Forever, Forever
		var busy int64
		for c := nd.First; c < nd.First+nd.Len; c++ {
			busy = max(busy, p.rel[c])
			if !p.FreeNow(c) {
				continue
			}
			if p.Window(c, 0) < dur {
				continue
			}
			w := p.claimWindow(c)
			el++
			elKey = min(elKey, w)
			if w != Forever {
				cl++
				clKey = min(clKey, w)
			}
		}
		var ext int64
		if p.alignEnds {
			ext = max(0, dur-busy)
		}
		claimedTotal += cl
		eligibleTotal += el
		if cl >= k && (best1.node < 0 || better(fit{n, cl, clKey, ext}, best1)) {
			best1 = fit{n, cl, clKey, ext}
		}
		if el >= k && (best2.node < 0 || better(fit{n, el, elKey, ext}, best2)) {
			best2 = fit{n, el, elKey, ext}
		}
	}
	if best1.node >= 0 {
		return p.pickFast(best1.node, dur, k, true), Fits, true
	}
	if req.Topology == model.TopologyAny && claimedTotal >= k {
		return nil, 0, false // the claimed cards of several nodes may hold it
	}
	// 2. All cards long enough: the best of the clean buckets and the
	// dirty nodes.
	n, ext := x.firstClean(k), int64(0)
	if p.alignEnds {
		n, ext = p.alignedClean(k, dur)
	}
	if n >= 0 {
		f := fit{n, int(x.cnt[n]), Forever, ext}
		if best2.node < 0 || better(f, best2) {
			best2 = f
		}
	}
	if best2.node >= 0 {
		return p.pickFast(best2.node, dur, k, false), Fits, true
	}
	// 3. Why not. A job that may spread over nodes goes the long way,
	// unless too few cards are free long enough anywhere.
	if req.Topology == model.TopologyAny && req.PerNode == 0 {
		clean := x.total
		for _, n := range x.dirtyN {
			clean -= int(x.cnt[n])
		}
		if clean+eligibleTotal < k {
			return nil, Claimed, true
		}
		return nil, 0, false
	}
	if x.anyAtLeast(k) {
		return nil, Claimed, true
	}
	return nil, WrongShape, true
}

// pickFast takes k cards of node n free for dur (only claimed ones when
// claimedOnly), shortest window first, by pickInNode.
func (p *Profile) pickFast(n int32, dur int64, k int, claimedOnly bool) []int {
	nd := p.lay.Nodes[n]
	cands := p.sc.cands[:0]
	for c := nd.First; c < nd.First+nd.Len; c++ {
		if !p.FreeNow(c) {
			continue
		}
		if p.Window(c, 0) < dur {
			continue
		}
		w := p.claimWindow(c)
		if claimedOnly && w == Forever {
			continue
		}
		cands = append(cands, c)
		p.sc.key[c] = w
	}
	p.sc.cands = cands
	got := p.pickInNode(cands, k, nil)
	slices.Sort(got)
	return got
}
