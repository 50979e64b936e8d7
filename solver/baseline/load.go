package baseline

import (
	"time"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/solver/profile"
)

// loadState is what a planner carries from one cycle to the next: the
// profile loaded with the last snapshot's running jobs (and since planned
// on), and what it was loaded with.
type loadState struct {
	prof *profile.Profile
	ids  CardIDs

	loaded bool      // the profile holds jobs, at origin + at seconds
	origin time.Time // the first load's time
	at     int64     // the last load's time, in seconds from origin
	grace  int64     // the overrun grace the jobs were loaded with
	// The running jobs loaded: by id, and in the last snapshot's order
	// (ids, held), for a snapshot of the same running jobs — a what-if of
	// a preemption, planned several times a cycle — to skip the map.
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

// load makes the profile the one Reset and Hold would load from the
// snapshot's running jobs (cards: their card numbers), with no starts or
// reservations. When the last load was of the same cluster at an earlier
// time, a whole number of seconds before, it changes that profile by what
// changed: the last plan is undone and time moved on (Rebase), the cards
// of the jobs that ended are freed, and those of the jobs that started,
// changed or passed their end are held. Otherwise, or when scratch is
// set, it loads anew.
func (st *loadState) load(s *model.Snapshot, cards [][]int, scratch bool) {
	grace := overrunGrace(s)
	step := s.Now.Sub(st.origin) - time.Duration(st.at)*time.Second
	if scratch || !st.loaded || step < 0 || step%time.Second != 0 || grace != st.grace {
		st.reload(s, cards, grace)
		return
	}
	dt := int64(step / time.Second)
	st.prof.Rebase(dt)
	st.at += dt
	if st.aligned(s) {
		st.loadAligned(s, cards, grace)
		return
	}
	st.cycle++
	hold := st.hold[:0]
	st.order, st.held = st.order[:0], st.held[:0]
	for i := range s.Running {
		r := &s.Running[i]
		end := heldUntil(s, r, grace)
		h, ok := st.jobs[r.Job.ID]
		st.order = append(st.order, r.Job.ID)
		st.held = append(st.held, h)
		// Unchanged: the same cards, and a busy time that Rebase moved
		// to where it belongs (one past its end is held a grace anew).
		if ok && sameCards(h.cards, cards[i]) && h.end == st.at+end {
			h.cycle = st.cycle
			st.jobs[r.Job.ID] = h
			continue
		}
		hold = append(hold, i)
	}
	// Free every card held by a job not unchanged (ended, or changed and
	// held again below) before holding any.
	for id, h := range st.jobs {
		if h.cycle != st.cycle {
			for _, c := range h.cards {
				st.prof.Set(c, 0)
			}
			delete(st.jobs, id)
		}
	}
	for _, i := range hold {
		r := &s.Running[i]
		end := heldUntil(s, r, grace)
		for _, c := range cards[i] {
			st.prof.Set(c, end)
		}
		h := heldJob{cards: cards[i], end: st.at + end, cycle: st.cycle}
		st.jobs[r.Job.ID] = h
		st.held[i] = h
	}
	st.hold = hold
}

// aligned says whether s runs the jobs of the last load, in its order.
func (st *loadState) aligned(s *model.Snapshot) bool {
	if len(st.order) != len(s.Running) {
		return false
	}
	for i := range s.Running {
		if st.order[i] != s.Running[i].Job.ID {
			return false
		}
	}
	return true
}

// loadAligned is load's difference for a snapshot of the same running
// jobs in the same order: each compared with its own, no job ended.
func (st *loadState) loadAligned(s *model.Snapshot, cards [][]int, grace int64) {
	hold := st.hold[:0]
	for i := range s.Running {
		end := heldUntil(s, &s.Running[i], grace)
		if h := &st.held[i]; !sameCards(h.cards, cards[i]) || h.end != st.at+end {
			for _, c := range h.cards {
				st.prof.Set(c, 0)
			}
			hold = append(hold, i)
		}
	}
	for _, i := range hold {
		r := &s.Running[i]
		end := heldUntil(s, r, grace)
		for _, c := range cards[i] {
			st.prof.Set(c, end)
		}
		h := heldJob{cards: cards[i], end: st.at + end, cycle: st.jobs[r.Job.ID].cycle}
		st.held[i] = h
		st.jobs[r.Job.ID] = h
	}
	st.hold = hold
}

// reload loads the profile anew.
func (st *loadState) reload(s *model.Snapshot, cards [][]int, grace int64) {
	st.prof.Reset()
	st.cycle++
	if st.jobs == nil {
		st.jobs = make(map[string]heldJob, len(s.Running))
	}
	clear(st.jobs)
	st.loaded, st.origin, st.at, st.grace = true, s.Now, 0, grace
	st.order, st.held = st.order[:0], st.held[:0]
	for i := range s.Running {
		r := &s.Running[i]
		end := heldUntil(s, r, grace)
		for _, c := range cards[i] {
			st.prof.Hold(c, end)
		}
		h := heldJob{cards: cards[i], end: end, cycle: st.cycle}
		st.jobs[r.Job.ID] = h
		st.order = append(st.order, r.Job.ID)
		st.held = append(st.held, h)
	}
}

// sameCards reports whether two card lists are the same slice: a
// resolved list is never modified, so the same slice holds the same cards.
func sameCards(a, b []int) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}
