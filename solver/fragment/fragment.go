// Package fragment classifies idle capacity each cycle into the design's
// three classes — intra-node leftovers, cross-node fragments and temporal
// fragments — plus plain free capacity, and reports their inventory.
package fragment

import (
	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/solver/profile"
)

// Classes labels the cards free now, and measures every class.
type Classes struct {
	// Of holds each card's class; FragmentUnspecified for cards not free now.
	Of        []model.FragmentClass
	Inventory []model.FragmentSummary // one entry per class, in class order
}

// Classify labels the cards free now in p:
//   - temporal: a reservation claims the card later (a finite window);
//   - cross-node: the card's node has fewer free cards than smallest, the
//     smallest per-node demand of a waiting multi-card job (singles
//     scattered over nodes, for single-card or low-communication work);
//   - intra-node: the node is partly used and its free cards can hold a
//     multi-card job (high bandwidth, for communication-heavy jobs);
//   - free: a whole idle node.
//
// Cards busy now whose release comes before a reservation claims them are
// temporal fragments too; they count in the inventory (from their release
// to the claim) but carry no label. Card-seconds are counted up to horizon.
func Classify(p *profile.Profile, horizon int64, smallest int) Classes {
	return ClassifyInto(p, horizon, smallest, nil)
}

// ClassifyInto is Classify with the labels written into of, grown to the
// cards' count when short (a planner's buffer from one cycle to the next:
// every cycle labels every card).
func ClassifyInto(p *profile.Profile, horizon int64, smallest int, of []model.FragmentClass) Classes {
	lay := p.Layout()
	if cap(of) < len(lay.Cards) {
		of = make([]model.FragmentClass, len(lay.Cards))
	}
	of = of[:len(lay.Cards)]
	clear(of)
	out := Classes{Of: of}
	if smallest < 2 {
		smallest = 2
	}
	// Per class, indexed by it (Dominant counts the same way). Nodes are
	// visited one after the other, so a node is new to a class when it is
	// not the last one counted there: maps here were a quarter of a
	// huitian cycle at 93,312 one-card nodes.
	var inv [5]*model.FragmentSummary
	var lastNode [5]int32
	count := func(c model.FragmentClass, node int32, secs int64) {
		s := inv[c]
		if s == nil {
			s = &model.FragmentSummary{Class: c}
			inv[c] = s
			lastNode[c] = -1
		}
		s.Cards++
		s.CardSeconds += float64(secs)
		if lastNode[c] != node {
			lastNode[c] = node
			s.Nodes++
		}
	}
	for ni, n := range lay.Nodes {
		if n.Len == 1 {
			// One card (a flat machine's node): free, it is a temporal
			// fragment or one card of no node that holds two.
			c := n.First
			switch {
			case !lay.Cards[c].Usable:
			case p.FreeNow(c):
				w := p.Window(c, 0)
				cl := model.FragmentCrossNode
				if w != profile.Forever {
					cl = model.FragmentTemporal
				}
				out.Of[c] = cl
				count(cl, int32(ni), min(w, horizon))
			default:
				rel := p.Release(c)
				if claim := p.NextClaim(c, rel); claim != profile.Forever && claim > rel && rel < horizon {
					count(model.FragmentTemporal, int32(ni), min(claim, horizon)-rel)
				}
			}
			continue
		}
		free, busy := 0, 0
		for c := n.First; c < n.First+n.Len; c++ {
			switch {
			case p.FreeNow(c):
				free++
			case lay.Cards[c].Usable:
				busy++
			}
		}
		for c := n.First; c < n.First+n.Len; c++ {
			if !lay.Cards[c].Usable {
				continue
			}
			if !p.FreeNow(c) {
				rel := p.Release(c)
				if claim := p.NextClaim(c, rel); claim != profile.Forever && claim > rel && rel < horizon {
					count(model.FragmentTemporal, int32(ni), min(claim, horizon)-rel)
				}
				continue
			}
			w := p.Window(c, 0)
			var cl model.FragmentClass
			switch {
			case w != profile.Forever:
				cl = model.FragmentTemporal
			case free < smallest:
				cl = model.FragmentCrossNode
			case busy > 0:
				cl = model.FragmentIntraNode
			default:
				cl = model.FragmentFree
			}
			out.Of[c] = cl
			count(cl, int32(ni), min(w, horizon))
		}
	}
	for _, cl := range []model.FragmentClass{model.FragmentFree, model.FragmentIntraNode, model.FragmentCrossNode, model.FragmentTemporal} {
		if s := inv[cl]; s != nil {
			out.Inventory = append(out.Inventory, *s)
		}
	}
	return out
}

// Dominant returns the class that most of the cards belong to, ties to
// the earlier class in order temporal, intra-node, cross-node, free;
// FragmentUnspecified when nothing was classified (the zero Classes).
func (cs *Classes) Dominant(cards []int) model.FragmentClass {
	if cs.Of == nil {
		return model.FragmentUnspecified // nothing was classified
	}
	var n [5]int
	for _, c := range cards {
		n[cs.Of[c]]++
	}
	best := model.FragmentFree
	for _, cl := range []model.FragmentClass{model.FragmentTemporal, model.FragmentIntraNode, model.FragmentCrossNode, model.FragmentFree} {
		if n[cl] > n[best] {
			best = cl
		}
	}
	return best
}
