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
	pools [Slots]poolLoader // on a cluster planned on counts (Planner.pooled)
	ids   CardIDs
	until []int64 // scratch: each running job's busy time
	// Whether poolLay is a pool (profile.IsPool), asked once a layout.
	poolLay *model.Layout
	isPool  bool
}

// loader keeps a profile loaded with a snapshot's running jobs from one
// cycle to the next (issue 15). The next cycle's load changes it by what
// changed instead of resetting it and holding every busy card again: the
// last plan's reservations are undone and time moves on (profile.Advance);
// the cards of the jobs that ended, and of the plan's starts that no job
// took up, are freed; those of the jobs that started, changed or hold
// their cards to another time are held. The profile is the one a fresh
// load gives, whatever changed; a load of another layout, or at an earlier
// time or a fraction of a second later, loads anew. The zero value is
// ready; it is not safe for concurrent use.
type loader struct {
	prof *profile.Profile

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
	mark   []uint32 // per card: the load that last held a job on it

	head headRefs // the walks' on this profile (walker.resRefs)
	// starts is how many starts the last walk on this profile made: the
	// next decision's list is allocated that long (grown start by
	// start, its copies were a twelfth of what a plan allocated at
	// 65,536 cards).
	starts int
}

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
		l.prof, l.loaded, l.head = profile.New(lay), false, headRefs{}
		l.byCard, l.mark = make([]heldJob, len(lay.Cards)), make([]uint32, len(lay.Cards))
	}
	step := s.Now.Sub(l.origin) - time.Duration(l.at)*time.Second
	if scratch || !l.loaded || step < 0 || step%time.Second != 0 {
		l.reload(s, cards, until)
		return l.prof
	}
	dt := int64(step / time.Second)
	// The last plan's starts stay busy: those the resource manager took
	// up come back as running jobs on the same cards, held to the same
	// time (their Set changes nothing); the rest are freed below.
	started := l.prof.Advance(dt)
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
		if h := &l.byCard[cs[0]]; h.cycle == last && sameCards(h.cards, cs) && h.end == l.at+until[i] {
			h.cycle = l.cycle
			continue
		}
		hold = append(hold, i)
	}
	// Free the cards of every job of the last load not unchanged (ended,
	// or changed and held again below) before holding any.
	for _, f := range l.firsts {
		if h := &l.byCard[f]; h.cycle == last {
			for _, c := range h.cards {
				l.prof.Set(c, 0)
			}
			h.cycle = 0
		}
	}
	for _, i := range hold {
		l.holdJob(cards[i], until[i], func(c int, end int64) { l.prof.Set(c, end) })
	}
	for _, c := range started {
		if l.mark[c] != l.cycle {
			l.prof.Set(int(c), 0)
		}
	}
	l.hold = hold
	l.noteFirsts(cards)
	return l.prof
}

// holdJob holds a job's cards until end (seconds from now) with hold,
// and notes it held by this load.
func (l *loader) holdJob(cards []int, end int64, hold func(c int, end int64)) {
	for _, c := range cards {
		hold(c, end)
		l.mark[c] = l.cycle
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
	l.prof.Reset()
	l.cycle++
	l.loaded, l.origin, l.at = true, s.Now, 0
	for i, cs := range cards {
		if len(cs) > 0 {
			l.holdJob(cs, until[i], l.prof.Hold)
		}
	}
	l.noteFirsts(cards)
}

// sameCards reports whether two card lists are the same slice: a
// resolved list is never modified, so the same slice holds the same cards.
func sameCards(a, b []int) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
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
