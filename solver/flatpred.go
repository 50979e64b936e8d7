package solver

import (
	"fmt"
	"math/bits"
	"slices"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/solver/profile"
)

// The predicted profile of a flat machine (issue 15). On a pool whose node
// names order its cards, where the guarantee planned EASY on an exact pool
// (baseline.Brief.Pool: the card-by-card choices, on counts), a brief
// greedy plan needs of its predicted profile only what the card-by-card
// Profile would answer from three things:
//
//   - which cards are free now: the guarantee's pool's, after its starts;
//   - the jobs the reservation's cards are held by, and when each
//     releases them in the prediction: the groups the pool's claim takes
//     cards of (profile.Pool.ClaimGroups), each a running job or a start;
//   - the reservation's claim: from its expected start t, on its cards,
//     whose free ones are the lowest-numbered free cards (below bound).
//
// A card free now has the window t when the claim takes it, else none
// (Forever); a start takes the lowest-numbered free cards whose windows
// hold it, as the Profile's placement does on such a machine. So nothing
// is done card by card but reading the free bits: the predicted profile
// of every busy card, loaded, reserved and read back card by card every
// cycle, was two thirds of huitian-greedy's replay of a flat 93,312-card
// machine. TestFlatPredictionAsPerCard plans the same cycles both ways.

// flatPred is a cycle's predicted profile of a flat machine, kept by the
// planner from cycle to cycle for its memory.
type flatPred struct {
	lay    *model.Layout // the layout usable and model were read for
	usable int
	model  string

	free  []uint64 // the cards free now, a bit each
	nfree int
	// The reservation's claim, when claimed: from t on, on cards whose
	// free ones are those below bound, claimedFree of them.
	claimed     bool
	t           int64
	bound       int
	claimedFree int
	holds       []int64  // the guarantee's starts' busy times, by start
	held        []holder // claimHolders' list
}

// flatFor returns the cycle's flat predicted profile, or nil when the
// cycle plans on the card-by-card Profile: the guarantee did not plan on
// an exact pool, the plan is not brief or has an LP, a queued job asks
// for what a pool's placement rule does not answer (a card model, cards
// per node), or the reservation's cards are not known by their groups.
func (c *cycle) flatFor(resv int) *flatPred {
	h, s := c.h, c.s
	pool := c.core.Pool
	if pool == nil || !s.Options.Brief || h.lp != nil || h.perCardPrediction || resv > 1 {
		return nil
	}
	if _, ok := pool.ClaimGroups(); resv == 1 && !ok {
		return nil
	}
	f := &h.flat
	if f.lay != c.lay {
		*f = flatPred{lay: c.lay, usable: c.lay.UsableCards, model: profile.PoolModel(c.lay)}
	}
	for i := range s.Queued {
		j := &s.Queued[i]
		if !profile.PoolCanEverFit(f.usable, f.model, profile.RequestOf(j)) {
			continue // never fits: the same wherever
		}
		if j.CardModel != "" || j.Cards > 1 && (j.Topology != model.TopologyAny || j.CardsPerNode > 1) {
			return nil
		}
	}
	f.free = append(f.free[:0], pool.FreeBits()...)
	f.nfree = pool.FreeCount()
	f.claimed, f.t, f.bound, f.claimedFree = false, 0, 0, 0
	f.holds = f.holds[:0]
	return f
}

// canEverFit is the predicted profile's CanEverFit.
func (c *cycle) canEverFit(req profile.Request) bool {
	if f := c.flat; f != nil {
		return profile.PoolCanEverFit(f.usable, f.model, req)
	}
	return c.prof.CanEverFit(req)
}

// freeCount is how many cards are free now in the predicted profile.
func (c *cycle) freeCount() int {
	if f := c.flat; f != nil {
		return f.nfree
	}
	return c.prof.FreeCount()
}

// fitNow is the predicted profile's FitNow.
func (c *cycle) fitNow(dur int64, req profile.Request) ([]int, profile.Outcome) {
	if f := c.flat; f != nil {
		return f.fitNow(dur, req)
	}
	return c.prof.FitNow(dur, req)
}

// fitNow is Profile.FitNow on the flat machine: the lowest-numbered free
// cards whose windows hold dur seconds — every free card when dur ends by
// the claim, else those the claim leaves.
func (f *flatPred) fitNow(dur int64, req profile.Request) ([]int, profile.Outcome) {
	k := req.Cards
	if !profile.PoolCanEverFit(f.usable, f.model, req) {
		return nil, profile.WrongShape
	}
	if f.nfree < k {
		return nil, profile.NoCards
	}
	from, eligible := 0, f.nfree
	if f.claimed && dur > f.t {
		from, eligible = f.bound, f.nfree-f.claimedFree
	}
	if eligible < k {
		return nil, profile.Claimed
	}
	return profile.LowestFree(f.lay, f.free, k, from, nil), profile.Fits
}

// window is how long cards free now (sorted) stay free: the claim's t
// when it takes one of them, else Forever.
func (f *flatPred) window(cards []int) int64 {
	if f.claimed && len(cards) > 0 && cards[0] < f.bound {
		return f.t
	}
	return profile.Forever
}

// take starts cards free now, sorted (fitNow's): a word at a time along
// their runs.
func (f *flatPred) take(cards []int) {
	for first, end := range model.SortedRuns(cards) {
		for w, mask := range model.Words(first, end) {
			f.free[w] &^= mask
			if f.claimed && w<<6 < f.bound {
				if w == f.bound>>6 {
					mask &= 1<<(f.bound&63) - 1
				}
				f.claimedFree -= bits.OnesCount64(mask)
			}
		}
	}
	f.nfree -= len(cards)
}

// claim makes the reservation's claim from t, on cards whose free ones
// are the free cards below bound (profile.Pool.ClaimBound).
func (f *flatPred) claim(bound int, t int64) {
	f.claimed, f.t, f.bound, f.claimedFree = true, t, bound, 0
	for w := 0; w < (bound+63)>>6; w++ {
		word := f.free[w]
		if w == bound>>6 {
			word &= 1<<(bound&63) - 1
		}
		f.claimedFree += bits.OnesCount64(word)
	}
}

// claimHolders are the jobs holding the reservation's cards, each once,
// in the order of the first of their cards it takes (holdersOf's order):
// the groups of the guarantee's claim, running jobs and its starts.
func (c *cycle) claimHolders() ([]holder, error) {
	groups, ok := c.core.Pool.ClaimGroups()
	if !ok {
		return nil, fmt.Errorf("solver: the guarantee's reservation names no groups") // flatFor checked
	}
	gs := slices.Clone(groups)
	slices.SortFunc(gs, func(a, b profile.ClaimGroup) int { return a.Least - b.Least })
	f, h := c.flat, c.h
	f.held = f.held[:0]
	for _, g := range gs {
		first := g.Cards[0]
		if i := int(h.runAt[first]); i >= 0 && i < len(c.runCards) && c.runCards[i][0] == first {
			f.held = append(f.held, runningHolder(i))
			continue
		}
		k := slices.IndexFunc(c.core.StartCards, func(cs []int) bool { return cs[0] == first })
		if k < 0 {
			return nil, fmt.Errorf("solver: card %d of the guarantee's reservation held by no job", first)
		}
		f.held = append(f.held, startedHolder(k))
	}
	return f.held, nil
}

// releaseOf is when a holder's cards are free in the predicted profile:
// a running job's held quantile, a start's hold (Profile.Release).
func (c *cycle) releaseOf(hd holder) int64 {
	if i, ok := hd.running(); ok {
		return c.heldEnd(i)
	}
	k, _ := hd.started()
	return c.flat.holds[k]
}

// heldEnd is when running job i releases its cards in the predicted
// profile: the Quantile of its remaining time as held, at least a second.
func (c *cycle) heldEnd(i int) int64 {
	return max(ceilSec(c.running[i].heldQuantile(c.grace, c.h.cfg.Quantile)), 1)
}
