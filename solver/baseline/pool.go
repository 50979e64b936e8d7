package baseline

import (
	"time"

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

func (c poolCap) retention(cards []int, dur int64) int64 { return c.Retention(len(cards), dur) }

// pooled says whether the planner plans lay on counts: a cluster whose
// cards are interchangeable (profile.IsPool), unless the planner plans
// card by card (PerCard) or places by end-aligned fit, which tells the
// cards apart by when they are released.
func (pl *Planner) pooled(st *loadState, lay *model.Layout) bool {
	if pl.PerCard || pl.P.AlignEnds {
		return false
	}
	if st.poolLay != lay {
		st.poolLay, st.isPool = lay, profile.IsPool(lay)
	}
	return st.isPool
}

// poolLoader is loader for a pool: it keeps a profile.Pool loaded with
// the running jobs from one cycle to the next, each job one group of
// cards held or released whole, and the last plan's starts and
// reservations undone (profile.Pool.Advance). The pool is the one a fresh
// load gives, whatever changed.
type poolLoader struct {
	pool   *profile.Pool
	loaded bool
	origin time.Time
	at     int64
	cycle  uint32
	byCard []heldJob // as loader's
	firsts []int
	hold   []int
	starts int // as loader's
}

func (l *poolLoader) load(s *model.Snapshot, cards [][]int, until []int64, scratch bool) *profile.Pool {
	lay := s.Cluster.Layout()
	if l.pool == nil || l.pool.Layout() != lay {
		l.pool, l.loaded = profile.NewPool(lay), false
		l.byCard = make([]heldJob, len(lay.Cards))
	}
	step := s.Now.Sub(l.origin) - time.Duration(l.at)*time.Second
	if scratch || !l.loaded || step < 0 || step%time.Second != 0 {
		l.pool.Reset()
		l.cycle++
		l.loaded, l.origin, l.at = true, s.Now, 0
		for i, cs := range cards {
			if len(cs) > 0 {
				l.holdJob(cs, until[i])
			}
		}
		l.noteFirsts(cards)
		return l.pool
	}
	dt := int64(step / time.Second)
	l.pool.Advance(dt)
	l.at += dt
	last := l.cycle
	l.cycle++
	hold := l.hold[:0]
	for i, cs := range cards {
		if len(cs) == 0 {
			continue
		}
		if h := &l.byCard[cs[0]]; h.cycle == last && sameCards(h.cards, cs) && h.end == l.at+until[i] {
			h.cycle = l.cycle
			continue
		}
		hold = append(hold, i)
	}
	// Release every job of the last load not unchanged (ended, or
	// changed and held again below) before holding any.
	for _, f := range l.firsts {
		if h := &l.byCard[f]; h.cycle == last {
			l.pool.Release(h.cards)
			h.cycle = 0
		}
	}
	for _, i := range hold {
		l.holdJob(cards[i], until[i])
	}
	l.hold = hold
	l.noteFirsts(cards)
	return l.pool
}

func (l *poolLoader) holdJob(cards []int, end int64) {
	l.pool.Hold(cards, end)
	l.byCard[cards[0]] = heldJob{cards: cards, end: l.at + end, cycle: l.cycle}
}

func (l *poolLoader) noteFirsts(cards [][]int) {
	l.firsts = l.firsts[:0]
	for _, cs := range cards {
		if len(cs) > 0 {
			l.firsts = append(l.firsts, cs[0])
		}
	}
}
