package baseline

import (
	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/solver/profile"
)

// capacity is what a walk plans on: a profile of every card, or on a
// cluster whose cards are interchangeable the pool's counts.
type capacity interface {
	FitNow(dur int64, req profile.Request) ([]int, profile.Outcome)
	FitNowAny(dur int64, req profile.Request) ([]int, bool)
	EarliestStartOr(after, dur int64, req profile.Request, stop func() bool, last []int) (start int64, cards []int, ok, stopped bool)
	CanEverFit(req profile.Request) bool
	FreeCount() int
	Layout() *model.Layout
	// reserve starts cards (FitNow's) now until end when start is 0,
	// else reserves k cards (EarliestStartOr's, none on a pool) from
	// start to end; protect keeps backfill off them without drawing it
	// to them (Profile.ReserveProtect).
	reserve(cards []int, k int, start, end int64, protect bool) error
	// retention is when a reservation first needs the cards of a start
	// made until dur, in seconds from now: Forever when none does.
	retention(cards []int, dur int64) int64
}

// cardCap is a profile of every card as a walk's capacity.
type cardCap struct{ *profile.Profile }

func (c cardCap) reserve(cards []int, _ int, start, end int64, protect bool) error {
	if protect {
		return c.ReserveProtect(cards, start, end)
	}
	return c.Reserve(cards, start, end)
}

func (c cardCap) retention(cards []int, dur int64) int64 {
	claim := profile.Forever
	for _, k := range cards {
		claim = min(claim, c.NextClaim(k, dur))
	}
	return claim
}

// poolCap is a pool's counts as a walk's capacity.
type poolCap struct{ *profile.Pool }

// reserve on a pool claims a count; protection is a matter of which
// cards backfill is drawn to, and a pool has no such choice.
func (c poolCap) reserve(cards []int, k int, start, end int64, _ bool) error {
	return c.ReserveCount(cards, k, start, end)
}

func (c poolCap) retention(cards []int, dur int64) int64 { return c.Retention(cards, dur) }

// pooled says whether the planner plans a snapshot's cluster on counts:
// one whose cards are interchangeable (profile.IsPool), unless the
// planner plans card by card (PerCard) or places by end-aligned fit,
// which tells the cards apart by when they are released; and whether on
// an exact pool (Exact), which the planner's Exact plans on where it
// can, and else card by card.
func (pl *Planner) pooled(st *loadState, s *model.Snapshot) (pooled, exact bool) {
	if pl.PerCard || pl.P.AlignEnds {
		return false, false
	}
	if lay := s.Cluster.Layout(); st.poolLay != lay {
		st.poolLay, st.isPool = lay, profile.IsPool(lay)
		st.ranked = st.isPool && profile.RankedByCard(lay)
	}
	if !pl.Exact || !st.isPool {
		return st.isPool, false
	}
	if !st.ranked || pl.P.Depth < 0 || pl.P.Depth > 1 {
		return false, false
	}
	if pl.P.LargeDepth > 0 && pl.P.Large != nil {
		for i := range s.Queued {
			if pl.P.Large(&s.Queued[i]) {
				return false, false // a second reservation, and a protected one
			}
		}
	}
	return true, true
}
