package profile

// End-aligned placement (SetAlignEnds). A job that fits in one node goes,
// after the temporal fragments, to the node whose busy time it extends
// least: ext = max(0, its end − the node's last release), then by best
// fit. Best fit alone packs by free count and scatters long jobs over
// nodes whose other jobs end soon, so that no eight whole nodes come free
// together for a 64-card gang; gathering the long jobs on nodes that are
// busy long anyway keeps the rest able to empty.
//
// For the index (fastFit) the clean nodes are kept, per free count, in a
// max tree over their name order of their last release, so that the node
// a job extends least is found in log time instead of by scanning every
// clean node with room (at 65,536 cards, 800 nodes a placement).

// alignTrees are the index's trees for aligned placement, built on first
// use after a reset and kept by every change to a node's free count,
// cleanliness or last release from then on.
type alignTrees struct {
	valid bool
	// at is each node's last release as a time since the last Reset: its
	// cards' largest busy time plus shift. A node whose cards are all free
	// has at ≤ shift.
	at    []int64
	shift int64     // the Advance moves since the last Reset
	size  int       // leaves per tree: a power of two ≥ the nodes
	tree  [][]int64 // [free count] max tree over ranks of clean nodes' at; -1: none
}

// nodeBusy is node n's last release from now: the largest busy time of
// its cards (0 when all are free).
func (p *Profile) nodeBusy(n int32) int64 {
	nd := p.lay.Nodes[n]
	var busy int64
	for c := nd.First; c < nd.First+nd.Len; c++ {
		busy = max(busy, p.rel[c])
	}
	return busy
}

// nodeAt is node n's last release in the trees' time.
func (p *Profile) nodeAt(n int32) int64 { return p.nodeBusy(n) + p.ix.al.shift }

// buildAlign builds the trees from the (fresh) index.
func (p *Profile) buildAlign() {
	x := &p.ix
	a := &x.al
	n := len(p.lay.Nodes)
	if a.tree == nil {
		a.size = 1
		for a.size < n {
			a.size *= 2
		}
		a.at = make([]int64, n)
		a.tree = make([][]int64, x.maxLen+1)
		for c := 1; c <= x.maxLen; c++ {
			a.tree[c] = make([]int64, 2*a.size)
		}
	}
	for c := 1; c <= x.maxLen; c++ {
		t := a.tree[c]
		for i := range t {
			t[i] = -1
		}
	}
	for nd := range n {
		a.at[nd] = p.nodeAt(int32(nd))
		if c := x.cnt[nd]; c > 0 && x.dirty[nd] == 0 {
			a.tree[c][a.size+int(x.rank[nd])] = a.at[nd]
		}
	}
	for c := 1; c <= x.maxLen; c++ {
		t := a.tree[c]
		for i := a.size - 1; i >= 1; i-- {
			t[i] = max(t[2*i], t[2*i+1])
		}
	}
	a.valid = true
}

// setLeaf sets node n's leaf in tree c to v and updates its ancestors.
func (a *alignTrees) setLeaf(c int32, rank int32, v int64) {
	t := a.tree[c]
	i := a.size + int(rank)
	t[i] = v
	for i /= 2; i >= 1; i /= 2 {
		m := max(t[2*i], t[2*i+1])
		if t[i] == m {
			break
		}
		t[i] = m
	}
}

// leave takes clean node n out of its tree, before a change.
func (x *index) leave(n int32) {
	if x.al.valid && x.dirty[n] == 0 && x.cnt[n] > 0 {
		x.al.setLeaf(x.cnt[n], x.rank[n], -1)
	}
}

// enter puts clean node n into its tree, after a change.
func (x *index) enter(n int32) {
	if x.al.valid && x.dirty[n] == 0 && x.cnt[n] > 0 {
		x.al.setLeaf(x.cnt[n], x.rank[n], x.al.at[n])
	}
}

// busyChanged updates the trees after a card of node n changed its busy
// time.
func (p *Profile) busyChanged(n int32) {
	x := &p.ix
	if !x.al.valid || x.stale {
		return
	}
	at := p.nodeAt(n)
	if at == x.al.at[n] {
		return
	}
	x.leave(n)
	x.al.at[n] = at
	x.enter(n)
}

// firstAtLeast returns the first rank whose leaf in t is ≥ v, or -1.
func (a *alignTrees) firstAtLeast(t []int64, v int64) int {
	if t[1] < v {
		return -1
	}
	i := 1
	for i < a.size {
		if t[2*i] >= v {
			i *= 2
		} else {
			i = 2*i + 1
		}
	}
	return i - a.size
}

// alignedClean returns the clean node with ≥ k free cards that a job of
// dur extends least (max(0, dur − the node's last release)), then with the
// fewest free cards, then first in name order, and that extension; or -1.
func (p *Profile) alignedClean(k int, dur int64) (int32, int64) {
	x := &p.ix
	if !x.al.valid {
		p.buildAlign()
	}
	a := &x.al
	durAt := dur + a.shift
	best, bestExt := int32(-1), int64(0)
	for c := max(k, 1); c <= x.maxLen; c++ {
		t := a.tree[c]
		m := t[1]
		if m < 0 {
			continue
		}
		if m >= durAt {
			// No extension: nothing beats it, and no smaller count had one.
			return x.byRank[a.firstAtLeast(t, durAt)], 0
		}
		var ext int64
		var r int
		if m <= a.shift {
			// Every node of this count is free: all extend it by dur.
			ext, r = dur, a.firstAtLeast(t, 0)
		} else {
			ext, r = durAt-m, a.firstAtLeast(t, m)
		}
		if best < 0 || ext < bestExt {
			best, bestExt = x.byRank[r], ext
		}
	}
	return best, bestExt
}
