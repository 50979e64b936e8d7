package model

import (
	"cmp"
	"iter"
	"slices"
	"sync"
)

// Layout numbers a cluster's cards densely, 0..N-1, node by node in the
// cluster's node order and by card index within a node, and records for each
// card its node, NVLink island and leaf switch. The planner works on these
// numbers; CardRef is for the edges.
type Layout struct {
	Cards    []CardLoc
	Nodes    []NodeLoc
	Islands  []IslandLoc
	Switches []string // leaf switch domain ids, sorted
	// UsableCards counts the cards with Usable set; MaxNodeUsable is the
	// most of them on one node.
	UsableCards, MaxNodeUsable int

	// refs is each card's CardRef by dense number, and the lookup by
	// them, made on first use (refIndex): a simulator that plans by card
	// number asks for neither, and at 93,312 one-card nodes they were
	// half of sealing the cluster.
	refs refIndex
	// numbers is 0, 1, …: Run hands out slices of it.
	numbers []int
}

// refIndex is a layout's references: each card's, by dense number (Refs
// copies a planned job's cards from it: a flat 93,312-card replay
// converted the head's reservation card by card every cycle, a tenth of
// its time), and the number of each. Made once, on first use, by
// whichever goroutine asks first.
type refIndex struct {
	once  sync.Once
	byRef map[CardRef]int
	refs  []CardRef
}

// index returns the layout's references, made on first use.
func (l *Layout) index() *refIndex {
	x := &l.refs
	x.once.Do(func() {
		x.byRef, x.refs = make(map[CardRef]int, len(l.Cards)), make([]CardRef, len(l.Cards))
		for id := range l.Cards {
			ref := CardRef{Node: l.Nodes[l.Cards[id].Node].Name, Index: int(l.Cards[id].Index)}
			x.byRef[ref], x.refs[id] = id, ref
		}
	})
	return x
}

// CardLoc is where a dense card number lives.
type CardLoc struct {
	Node   int32 // index into Layout.Nodes
	Island int32 // index into Layout.Islands
	Index  int32 // the card's index on its node
	Usable bool  // healthy and on a schedulable node
	Model  string
}

// NodeLoc is a node in the layout; its cards are First..First+Len-1.
type NodeLoc struct {
	Name   string
	First  int
	Len    int
	Switch int32 // index into Layout.Switches, -1 when the node names no switch
}

// IslandLoc is an NVLink island: a set of cards on one node.
type IslandLoc struct {
	Node int32
	Name string
}

// CardID returns the dense number of ref.
func (l *Layout) CardID(ref CardRef) (int, bool) {
	id, ok := l.index().byRef[ref]
	return id, ok
}

// CardIDNear is CardID trying guess first: a caller resolving a list of
// cards in card order (as planners emit them, often in runs of
// consecutive numbers) passes the number after the last one and skips the
// map, which at 93,312 cards was a sixth of a flat replay. guess is taken
// only when it names ref's node and index, so the answer is CardID's.
func (l *Layout) CardIDNear(ref CardRef, guess int) (int, bool) {
	if refs := l.index().refs; guess >= 0 && guess < len(refs) && refs[guess] == ref {
		return guess, true
	}
	return l.CardID(ref)
}

// Ref returns the CardRef of a dense card number.
func (l *Layout) Ref(id int) CardRef { return l.index().refs[id] }

// RefsView is Refs without a copy when ids are consecutive numbers in
// order (a start on a flat machine's lowest free cards, mostly): the
// layout's own references then, which the caller must not modify. A
// start of thousands of cards on a flat 93,312-card machine converted
// its numbers one by one, a quarter of an EASY replay.
func (l *Layout) RefsView(ids []int) []CardRef {
	n := len(ids)
	if n == 0 || ids[n-1]-ids[0] != n-1 {
		return l.Refs(ids)
	}
	for i := 1; i < n; i++ {
		if ids[i] != ids[i-1]+1 {
			return l.Refs(ids)
		}
	}
	return l.index().refs[ids[0] : ids[0]+n : ids[0]+n]
}

// Run is the card numbers first to first+n-1, as a slice of the layout's
// own, read only: a start on consecutive cards numbered without a list of
// its own (thousands a start on a flat 93,312-card machine).
func (l *Layout) Run(first, n int) []int { return l.numbers[first : first+n : first+n] }

// RunAt says whether ids is a slice of the layout's own numbers (Run),
// and so the cards ids[0] to ids[0]+len(ids)-1 in order, known without
// reading them.
func (l *Layout) RunAt(ids []int) bool {
	n := len(ids)
	return n > 0 && ids[0] >= 0 && ids[0]+n <= len(l.numbers) && &ids[0] == &l.numbers[ids[0]]
}

// Runs is model.Runs, and a run of the layout's own numbers (RunAt)
// yielded at once.
func (l *Layout) Runs(ids []int) iter.Seq2[int, int] {
	if l.RunAt(ids) {
		return func(yield func(int, int) bool) { yield(ids[0], ids[0]+len(ids)) }
	}
	return Runs(ids)
}

// ViewAt says whether refs is a view of the layout's own references
// (RefsView), and of which card numbers: first to first+len(refs)-1.
func (l *Layout) ViewAt(refs []CardRef) (first int, ok bool) {
	n := len(refs)
	if n == 0 {
		return 0, false
	}
	id, found := l.CardID(refs[0])
	own := l.index().refs
	if !found || id+n > len(own) || &refs[0] != &own[id] || &refs[n-1] != &own[id+n-1] {
		return 0, false
	}
	return id, true
}

// Refs converts dense card numbers to CardRefs.
func (l *Layout) Refs(ids []int) []CardRef {
	own := l.index().refs
	out := make([]CardRef, len(ids))
	for i, id := range ids {
		out[i] = own[id]
	}
	return out
}

func buildLayout(c *Cluster) *Layout {
	n := 0
	for i := range c.Nodes {
		n += len(c.Nodes[i].Cards)
	}
	l := &Layout{numbers: make([]int, n), Cards: make([]CardLoc, 0, n), Nodes: make([]NodeLoc, 0, len(c.Nodes)), Islands: make([]IslandLoc, 0, len(c.Nodes))}
	kind := make(map[string]DomainKind, len(c.Domains))
	parentOf := make(map[string]string, len(c.Domains))
	for _, d := range c.Domains {
		kind[d.ID] = d.Kind
		parentOf[d.ID] = d.Parent
	}
	switchIdx := map[string]int32{}
	leaf := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		leaf[i] = leafSwitch(n.Domains, kind, parentOf)
		if leaf[i] != "" {
			switchIdx[leaf[i]] = 0
		}
	}
	for id := range switchIdx {
		l.Switches = append(l.Switches, id)
	}
	slices.Sort(l.Switches)
	for i, id := range l.Switches {
		switchIdx[id] = int32(i)
	}
	for ni, n := range c.Nodes {
		sw := int32(-1)
		if leaf[ni] != "" {
			sw = switchIdx[leaf[ni]]
		}
		byIndex := func(a, b Card) int { return cmp.Compare(a.Index, b.Index) }
		cards := n.Cards
		if !slices.IsSortedFunc(cards, byIndex) {
			cards = slices.Clone(cards)
			slices.SortFunc(cards, byIndex)
		}
		l.Nodes = append(l.Nodes, NodeLoc{Name: n.Name, First: len(l.Cards), Len: len(cards), Switch: sw})
		// This node's islands, by name: a scan of the few a small node
		// has (a map per node was most of sealing 93,312 one-card nodes).
		firstIsland := len(l.Islands)
		var named map[string]int32
		if len(cards) > 16 {
			named = map[string]int32{}
		}
		islandOf := func(name string) (int32, bool) {
			if named != nil {
				k, ok := named[name]
				return k, ok
			}
			k := slices.IndexFunc(l.Islands[firstIsland:], func(x IslandLoc) bool { return x.Name == name })
			return int32(firstIsland + k), k >= 0
		}
		usable := 0
		for _, cd := range cards {
			isl := int32(len(l.Islands))
			if cd.Island == "" {
				l.Islands = append(l.Islands, IslandLoc{Node: int32(ni)})
			} else if got, ok := islandOf(cd.Island); ok {
				isl = got
			} else {
				if named != nil {
					named[cd.Island] = isl
				}
				l.Islands = append(l.Islands, IslandLoc{Node: int32(ni), Name: cd.Island})
			}
			l.Cards = append(l.Cards, CardLoc{
				Node:   int32(ni),
				Island: isl,
				Index:  int32(cd.Index),
				Usable: !cd.Unhealthy && !n.Unschedulable,
				Model:  cd.Model,
			})
			if l.Cards[len(l.Cards)-1].Usable {
				usable++
			}
		}
		l.UsableCards += usable
		l.MaxNodeUsable = max(l.MaxNodeUsable, usable)
	}
	for c := range l.numbers {
		l.numbers[c] = c
	}
	return l
}

// LargeAbove is the card count above which a job is large on this layout:
// more than the usable cards of one node and more than 1/16 of all usable
// cards. The what-if size classes split there, and huitian reserves for
// the first large gang waiting behind the head.
func (l *Layout) LargeAbove() int { return LargeAbove(l.UsableCards, l.MaxNodeUsable) }

// LargeAbove is Layout.LargeAbove for a cluster of usable cards whose
// largest node has nodeCards usable cards.
func LargeAbove(usable, nodeCards int) int { return max(nodeCards, usable/16, 1) }

// leafSwitch picks the node's lowest switch: a switch domain the node names
// that is not an ancestor of another switch the node names (the first in
// name order when several are not). Each switch's chain is walked once:
// O(switches × depth), not the pairwise walk it once was.
func leafSwitch(names []string, kind map[string]DomainKind, parentOf map[string]string) string {
	var switches []string
	for _, d := range names {
		if kind[d] == DomainSwitch {
			switches = append(switches, d)
		}
	}
	if len(switches) <= 1 {
		if len(switches) == 1 {
			return switches[0]
		}
		return ""
	}
	slices.Sort(switches)
	switches = slices.Compact(switches)
	ancestor := make([]bool, len(switches))
	for _, o := range switches {
		for i, p := 0, parentOf[o]; p != "" && i < len(parentOf); i, p = i+1, parentOf[p] {
			if k, ok := slices.BinarySearch(switches, p); ok && p != o {
				ancestor[k] = true
			}
		}
	}
	for i, s := range switches {
		if !ancestor[i] {
			return s
		}
	}
	return ""
}
