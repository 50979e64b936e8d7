package baseline

import (
	"time"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/solver/profile"
)

// loadState is what a baseline planner carries from one cycle to the
// next: its loaded profile and the running jobs' card numbers.
type loadState struct {
	ld    loader
	ids   CardIDs
	until []int64 // scratch: each running job's busy time
}

// loader keeps a profile loaded with a snapshot's running jobs from one
// cycle to the next (issue 15): the next cycle's load changes it by what
// changed — the last plan's starts and reservations undone, time moved on
// (profile.Rebase), the cards of the jobs that ended freed, those of the
// jobs that started, changed or hold their cards to another time held —
// instead of resetting it and holding every busy card again. The profile
// is the one a fresh load gives, whatever changed: a load of another
// layout, or at an earlier time or a fraction of a second later, loads
// anew. The zero value is ready; it is not safe for concurrent use.
type loader struct {
	prof *profile.Profile

	loaded bool      // the profile holds jobs, at origin + at seconds
	origin time.Time // the first load's time
	at     int64     // the last load's time, in seconds from origin
	// The running jobs loaded: by id, and in the last snapshot's order
	// (order, held), for a snapshot of the same running jobs — a what-if
	// of a preemption, planned several times a cycle — to skip the map.
	jobs  map[string]heldJob
	order []string
	held  []heldJob
	cycle uint32
	hold  []int // scratch: the running jobs to hold, by index
}

// heldJob is a running job as the profile holds it.
type heldJob struct {
	cards []int // its card numbers (the resolved slice: never modified)
	end   int64 // busy until, in seconds from origin
	cycle uint32
}

// load returns the profile Reset and Hold would load from the snapshot's
// running jobs, running job i holding its cards (cards[i], never modified
// by the caller once given) until until[i] > 0 seconds from now, with no
// starts or reservations: the loader's own, kept for the next load. With
// scratch it loads anew (for differential tests and measuring).
func (l *loader) load(s *model.Snapshot, cards [][]int, until []int64, scratch bool) *profile.Profile {
	lay := s.Cluster.Layout()
	if l.prof == nil || l.prof.Layout() != lay {
		l.prof, l.loaded = profile.New(lay), false
	}
	step := s.Now.Sub(l.origin) - time.Duration(l.at)*time.Second
	if scratch || !l.loaded || step < 0 || step%time.Second != 0 {
		l.reload(s, cards, until)
		return l.prof
	}
	dt := int64(step / time.Second)
	l.prof.Rebase(dt)
	l.at += dt
	if l.aligned(s) {
		l.loadAligned(s, cards, until)
		return l.prof
	}
	l.cycle++
	hold := l.hold[:0]
	l.order, l.held = l.order[:0], l.held[:0]
	for i := range s.Running {
		id := s.Running[i].Job.ID
		h, ok := l.jobs[id]
		l.order = append(l.order, id)
		l.held = append(l.held, h)
		// Unchanged: the same cards, and a busy time that Rebase moved
		// to where it belongs.
		if ok && sameCards(h.cards, cards[i]) && h.end == l.at+until[i] {
			h.cycle = l.cycle
			l.jobs[id] = h
			continue
		}
		hold = append(hold, i)
	}
	// Free every card held by a job not unchanged (ended, or changed and
	// held again below) before holding any.
	for id, h := range l.jobs {
		if h.cycle != l.cycle {
			for _, c := range h.cards {
				l.prof.Set(c, 0)
			}
			delete(l.jobs, id)
		}
	}
	for _, i := range hold {
		for _, c := range cards[i] {
			l.prof.Set(c, until[i])
		}
		h := heldJob{cards: cards[i], end: l.at + until[i], cycle: l.cycle}
		l.jobs[s.Running[i].Job.ID] = h
		l.held[i] = h
	}
	l.hold = hold
	return l.prof
}

// aligned says whether s runs the jobs of the last load, in its order.
func (l *loader) aligned(s *model.Snapshot) bool {
	if len(l.order) != len(s.Running) {
		return false
	}
	for i := range s.Running {
		if l.order[i] != s.Running[i].Job.ID {
			return false
		}
	}
	return true
}

// loadAligned is Load's difference for a snapshot of the same running
// jobs in the same order: each compared with its own, no job ended.
func (l *loader) loadAligned(s *model.Snapshot, cards [][]int, until []int64) {
	hold := l.hold[:0]
	for i := range s.Running {
		if h := &l.held[i]; !sameCards(h.cards, cards[i]) || h.end != l.at+until[i] {
			for _, c := range h.cards {
				l.prof.Set(c, 0)
			}
			hold = append(hold, i)
		}
	}
	for _, i := range hold {
		for _, c := range cards[i] {
			l.prof.Set(c, until[i])
		}
		id := s.Running[i].Job.ID
		h := heldJob{cards: cards[i], end: l.at + until[i], cycle: l.jobs[id].cycle}
		l.held[i] = h
		l.jobs[id] = h
	}
	l.hold = hold
}

// reload loads the profile anew.
func (l *loader) reload(s *model.Snapshot, cards [][]int, until []int64) {
	l.prof.Reset()
	l.cycle++
	if l.jobs == nil {
		l.jobs = make(map[string]heldJob, len(s.Running))
	}
	clear(l.jobs)
	l.loaded, l.origin, l.at = true, s.Now, 0
	l.order, l.held = l.order[:0], l.held[:0]
	for i := range s.Running {
		for _, c := range cards[i] {
			l.prof.Hold(c, until[i])
		}
		h := heldJob{cards: cards[i], end: until[i], cycle: l.cycle}
		l.jobs[s.Running[i].Job.ID] = h
		l.order = append(l.order, s.Running[i].Job.ID)
		l.held = append(l.held, h)
	}
}

// sameCards reports whether two card lists are the same slice: a
// resolved list is never modified, so the same slice holds the same cards.
func sameCards(a, b []int) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// heldUntils returns each running job's busy time in seconds from now, as
// Hold gives it, in buf.
func heldUntils(s *model.Snapshot, buf []int64) []int64 {
	grace := overrunGrace(s)
	buf = buf[:0]
	for i := range s.Running {
		buf = append(buf, heldUntil(s, &s.Running[i], grace))
	}
	return buf
}
