package profile

import (
	"slices"

	"github.com/huitian/huitian/model"
)

// earliestByDomain is the sweep for a request when no card holds a
// reservation (none made since the last Reset or Advance): every usable
// card is then free from its release on, forever, so the set of cards that
// can hold the job only grows with time, and the sweep's first feasible
// time is, over the domains the request may use (a node, a switch group,
// the cluster), the earliest at which one holds enough: the need-th
// smallest release (raised to after) of its units — cards, or nodes ready
// when their perNode-th card is. The cards are the sweep's: placement
// among every card free by then, by the same keys. It reads every card
// once, where the sweep built the event streams and went through most of
// them: EASY's head, a gang that wants a whole switch, took 3–6 ms at
// 65,536 cards (10–19 ms at times), which no time budget can cut, as a
// plan decides the head whatever the budget. handled is false for a
// request it does not answer (one island, or a profile with
// reservations), and when placement finds no cards where the counts say
// it must (never seen; the sweep then decides).
func (p *Profile) earliestByDomain(after int64, req Request, pick bool) (start int64, cards []int, ok, handled bool) {
	if p.sweepAll || len(p.spanLog) > 0 || len(p.lazy) > 0 {
		return 0, nil, false, false
	}
	// The feasibility's rules (newFeasibility, feasible): the unit a
	// domain counts, how many it needs, and whether the domains are the
	// switch groups or the cluster (node domains are units of need 1).
	perNode, need, byGroup := 0, req.Cards, false
	switch {
	case req.Topology == model.TopologySameNode:
		perNode, need = req.Cards, 1
	case req.Topology == model.TopologySameSwitch:
		byGroup = true
		if req.PerNode > 0 {
			perNode, need = req.PerNode, req.Cards/req.PerNode
		}
	case req.Topology == model.TopologyAny:
		if req.PerNode > 0 {
			perNode, need = req.PerNode, req.Cards/req.PerNode
		}
	default:
		return 0, nil, false, false
	}
	if need < 1 {
		return 0, nil, false, false
	}
	// Each unit's time, and its domain (0 for the cluster).
	vals, dom := p.sc.domVals[:0], p.sc.domOf[:0]
	own := p.sc.domOwn[:0]
	for n := range p.lay.Nodes {
		nd := &p.lay.Nodes[n]
		g := int32(0)
		if byGroup {
			g = p.group[n]
		}
		own = own[:0]
		for c := nd.First; c < nd.First+nd.Len; c++ {
			if !p.cardOK[c] || !p.accepts(req.Model, c) {
				continue
			}
			t := max(p.rel[c], after)
			if perNode == 0 {
				vals, dom = append(vals, t), append(dom, g)
			} else {
				own = append(own, t)
			}
		}
		if perNode > 0 && len(own) >= perNode {
			vals, dom = append(vals, nthSmallest(own, perNode)), append(dom, g)
		}
	}
	p.sc.domVals, p.sc.domOf, p.sc.domOwn = vals, dom, own
	start = Forever
	if !byGroup {
		if len(vals) >= need {
			start = nthSmallest(vals, need)
		}
	} else {
		// Units grouped by domain (a counting sort), then each domain's
		// need-th smallest.
		ng := p.ngroups
		cnt := slices.Grow(p.sc.domCnt[:0], ng+1)[:ng+1]
		clear(cnt)
		for _, g := range dom {
			cnt[g+1]++
		}
		for g := 1; g <= ng; g++ {
			cnt[g] += cnt[g-1]
		}
		sorted := slices.Grow(p.sc.domTmp[:0], len(vals))[:len(vals)]
		next := append(p.sc.domNext[:0], cnt[:ng]...)
		for i, g := range dom {
			sorted[next[g]] = vals[i]
			next[g]++
		}
		for g := range ng {
			if seg := sorted[cnt[g]:cnt[g+1]]; len(seg) >= need {
				start = min(start, nthSmallest(seg, need))
			}
		}
		p.sc.domCnt, p.sc.domTmp, p.sc.domNext = cnt, sorted, next
	}
	if start == Forever {
		return 0, nil, false, true
	}
	if !pick {
		return start, nil, true, true
	}
	cands := p.sc.cands[:0]
	for c := range p.rel {
		if !p.cardOK[c] || max(p.rel[c], after) > start || !p.accepts(req.Model, c) {
			continue
		}
		cands = append(cands, c)
		p.sc.key[c] = -p.rel[c] // freeSince, with no reservation
	}
	p.sc.cands = cands
	if got := p.place(req, cands); got != nil {
		return start, got, true, true
	}
	return 0, nil, false, false
}
