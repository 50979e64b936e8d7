package baseline

import (
	"time"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/solver/profile"
)

// loadState is what a baseline planner carries from one cycle to the
// next: its loaded profiles, one per slot (Prepared.Slot), and the running
// jobs' card numbers.
type loadState struct {
	ld    [Slots]loader
	pools [Slots]loader // on a cluster planned on counts (Planner.pooled)
	ids   CardIDs
	until []int64 // scratch: each running job's busy time
	// spares are the lists of ended jobs' cards the caller handed back
	// (Planner.Recycle), for slot 0's pool to number starts into.
	spares profile.Spares
	// Whether poolLay is a pool (profile.IsPool), and one whose node
	// names order its cards (profile.RankedByCard), asked once a layout.
	poolLay        *model.Layout
	isPool, ranked bool
}

// loader keeps a profile loaded with a snapshot's running jobs from one
// cycle to the next (issue 15): a profile of every card, or on a cluster
// planned on counts a pool (profile.Pool). The next cycle's load changes
// it by what changed instead of resetting it and holding every busy card
// again: the last plan's reservations are undone and time moves on
// (Advance); the cards of the jobs that ended, and of the plan's starts
// that no job took up, are freed; those of the jobs that started, changed
// or hold their cards to another time are held. The profile is the one a
// fresh load gives, whatever changed; a load of another layout, or at an
// earlier time or a fraction of a second later, loads anew. The zero
// value is ready; it is not safe for concurrent use.
type loader struct {
	prof *profile.Profile // one of prof and pool, kept as kept
	pool *profile.Pool
	kept kept

	loaded bool      // the profile holds jobs, at origin + at seconds
	origin time.Time // the first load's time
	at     int64     // the last load's time, in seconds from origin
	cycle  uint32    // loads made
	// The running jobs loaded, each by its first card (a card is held by
	// one job at a time), so that a load finds them without hashing their
	// ids: 24,000 running jobs at 65,536 cards took a map lookup each. A
	// job is known by its cards and busy time only, which is all the
	// profile holds of it. firsts lists the last load's first cards.
	byCard []heldJob
	firsts []int
	hold   []int    // scratch: the running jobs to hold, by index
	mark   []uint32 // per card: the load that last held a job on it (a profile's)

	head headRefs // the walks' on this profile (walker.resRefs)
	// starts is how many starts the last walk on this profile made: the
	// next decision's list is allocated that long (grown start by
	// start, its copies were a twelfth of what a plan allocated at
	// 65,536 cards).
	starts int
}

// kept is what a loader keeps loaded, a profile or a pool, as it loads it.
type kept interface {
	reset()
	// advance undoes the last plan's reservations and moves time dt on.
	// It returns the cards the plan started that are still held, for the
	// loader to free those no running job holds now: a profile's, and
	// none of a pool, whose starts stay pending until takeUp and
	// dropStarts.
	advance(dt int64) []int32
	// takeUp makes a pending start on the same cards (the same slice) a
	// job's hold until until, and says whether there was one (a pool's);
	// dropStarts frees the pending starts no job took up.
	takeUp(cards []int, until int64) bool
	dropStarts()
	// hold holds a job's cards until until, on a profile just reset when
	// fresh; release frees them; free frees one card.
	hold(cards []int, until int64, fresh bool)
	release(cards []int)
	free(card int32)
}

func (c cardCap) reset()                   { c.Reset() }
func (c cardCap) advance(dt int64) []int32 { return c.Advance(dt) }
func (c cardCap) free(card int32)          { c.Set(int(card), 0) }
func (c cardCap) takeUp([]int, int64) bool { return false }
func (c cardCap) dropStarts()              {}

func (c cardCap) hold(cards []int, until int64, fresh bool) {
	for _, k := range cards {
		if fresh {
			c.Hold(k, until)
		} else {
			c.Set(k, until)
		}
	}
}

func (c cardCap) release(cards []int) {
	for _, k := range cards {
		c.Set(k, 0)
	}
}

func (c poolCap) reset()                                { c.Reset() }
func (c poolCap) advance(dt int64) []int32              { c.AdvancePending(dt); return nil }
func (c poolCap) takeUp(cards []int, until int64) bool  { return c.TakeUp(cards, until) }
func (c poolCap) dropStarts()                           { c.DropStarts() }
func (c poolCap) hold(cards []int, until int64, _ bool) { c.Hold(cards, until) }
func (c poolCap) release(cards []int)                   { c.Release(cards) }
func (c poolCap) free(int32)                            {}

// heldJob is a running job as the profile holds it.
type heldJob struct {
	cards []int  // its card numbers (the resolved slice: never modified)
	end   int64  // busy until, in seconds from origin
	cycle uint32 // the last load that held it
}

// load returns the profile Reset and Hold would load from the snapshot's
// running jobs, running job i holding its cards (cards[i], never modified
// by the caller once given) until until[i] > 0 seconds from now, with no
// starts or reservations: the loader's own, kept for the next load. With
// scratch it loads anew (for differential tests and measuring).
func (l *loader) load(s *model.Snapshot, cards [][]int, until []int64, scratch bool) *profile.Profile {
	lay := s.Cluster.Layout()
	if l.prof == nil || l.prof.Layout() != lay {
		l.prof, l.pool, l.head = profile.New(lay), nil, headRefs{}
		l.renew(cardCap{l.prof}, len(lay.Cards))
		l.mark = make([]uint32, len(lay.Cards))
	}
	l.sync(s, cards, until, scratch)
	return l.prof
}

// loadPool is load for a cluster planned on counts (Planner.pooled).
func (l *loader) loadPool(s *model.Snapshot, cards [][]int, until []int64, scratch bool) *profile.Pool {
	lay := s.Cluster.Layout()
	if l.pool == nil || l.pool.Layout() != lay {
		l.prof, l.pool, l.head = nil, profile.NewPool(lay), headRefs{}
		l.renew(poolCap{l.pool}, len(lay.Cards))
		l.mark = nil
	}
	l.sync(s, cards, until, scratch)
	return l.pool
}

// renew starts over on a new profile or pool.
func (l *loader) renew(k kept, cards int) {
	l.kept, l.loaded = k, false
	l.byCard = make([]heldJob, cards)
}

// sync brings the kept profile or pool to the snapshot.
func (l *loader) sync(s *model.Snapshot, cards [][]int, until []int64, scratch bool) {
	step := s.Now.Sub(l.origin) - time.Duration(l.at)*time.Second
	if scratch || !l.loaded || step < 0 || step%time.Second != 0 {
		l.reload(s, cards, until)
		return
	}
	dt := int64(step / time.Second)
	// The last plan's starts stay busy on a profile: those the resource
	// manager took up come back as running jobs on the same cards, held
	// to the same time (their Set changes nothing); the rest are freed
	// below.
	started := l.kept.advance(dt)
	l.at += dt
	last := l.cycle
	l.cycle++
	// Unchanged: the same cards, and a busy time that Advance moved to
	// where it belongs.
	hold := l.hold[:0]
	for i, cs := range cards {
		if len(cs) == 0 {
			continue
		}
		if h := &l.byCard[cs[0]]; h.cycle == last && profile.SameCards(h.cards, cs) && h.end == l.at+until[i] {
			h.cycle = l.cycle
			continue
		}
		hold = append(hold, i)
	}
	// Free the cards of every job of the last load not unchanged (ended,
	// or changed and held again below) before holding any.
	for _, f := range l.firsts {
		if h := &l.byCard[f]; h.cycle == last {
			l.kept.release(h.cards)
			h.cycle = 0
		}
	}
	// A job on a start of the last plan, the same slice of cards (the
	// simulator's: its starts' own), is held where the start was;
	// then the starts no job took up are freed, and the rest held.
	rest := hold[:0]
	for _, i := range hold {
		if l.kept.takeUp(cards[i], until[i]) {
			l.noteHeld(cards[i], until[i])
			continue
		}
		rest = append(rest, i)
	}
	l.kept.dropStarts()
	for _, i := range rest {
		l.holdJob(cards[i], until[i], false)
	}
	for _, c := range started {
		if l.mark[c] != l.cycle {
			l.kept.free(c)
		}
	}
	l.hold = rest
	l.noteFirsts(cards)
}

// holdJob holds a job's cards until end (seconds from now), on a profile
// just reset when fresh, and notes it held by this load.
func (l *loader) holdJob(cards []int, end int64, fresh bool) {
	l.kept.hold(cards, end, fresh)
	l.noteHeld(cards, end)
}

// noteHeld notes a job held by this load on cards until end.
func (l *loader) noteHeld(cards []int, end int64) {
	if l.mark != nil {
		for _, c := range cards {
			l.mark[c] = l.cycle
		}
	}
	l.byCard[cards[0]] = heldJob{cards: cards, end: l.at + end, cycle: l.cycle}
}

// noteFirsts lists the running jobs' first cards for the next load.
func (l *loader) noteFirsts(cards [][]int) {
	l.firsts = l.firsts[:0]
	for _, cs := range cards {
		if len(cs) > 0 {
			l.firsts = append(l.firsts, cs[0])
		}
	}
}

// reload loads the profile anew.
func (l *loader) reload(s *model.Snapshot, cards [][]int, until []int64) {
	l.kept.reset()
	l.cycle++
	l.loaded, l.origin, l.at = true, s.Now, 0
	for i, cs := range cards {
		if len(cs) > 0 {
			l.holdJob(cs, until[i], true)
		}
	}
	l.noteFirsts(cards)
}

// HeldUntils returns each running job's busy time in seconds from now, as
// Hold gives it (HeldUntil), in buf.
func HeldUntils(s *model.Snapshot, buf []int64) []int64 {
	grace := OverrunGrace(s)
	buf = buf[:0]
	for i := range s.Running {
		r := &s.Running[i]
		buf = append(buf, HeldUntil(s.Now, r.Start, r.Job.TimeLimit, grace))
	}
	return buf
}
