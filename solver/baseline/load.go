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

	loaded bool               // the profile holds jobs, at now
	now    time.Time          // the time the profile's busy times count from
	grace  int64              // the overrun grace they were loaded with
	jobs   map[string]heldJob // the running jobs loaded, by id
	cycle  uint32
	hold   []int // scratch: the running jobs to hold, by index
}

// heldJob is a running job as the profile holds it.
type heldJob struct {
	cards []int // its card numbers (the resolved slice: never modified)
	end   int64 // busy until, seconds from loadState.now
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
	step := s.Now.Sub(st.now)
	if scratch || !st.loaded || step < 0 || step%time.Second != 0 || grace != st.grace {
		st.reload(s, cards, grace)
		return
	}
	dt := int64(step / time.Second)
	st.prof.Rebase(dt)
	st.cycle++
	hold := st.hold[:0]
	for i := range s.Running {
		r := &s.Running[i]
		end := heldUntil(s, r, grace)
		h, ok := st.jobs[r.Job.ID]
		// Unchanged: the same cards, and a busy time that Rebase moved
		// to where it belongs (one past its end is held a grace anew).
		if ok && sameCards(h.cards, cards[i]) && h.end-dt == end {
			h.end, h.cycle = end, st.cycle
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
		st.jobs[r.Job.ID] = heldJob{cards: cards[i], end: end, cycle: st.cycle}
	}
	st.hold = hold
	st.now = s.Now
}

// reload loads the profile anew.
func (st *loadState) reload(s *model.Snapshot, cards [][]int, grace int64) {
	st.prof.Reset()
	st.cycle++
	if st.jobs == nil {
		st.jobs = make(map[string]heldJob, len(s.Running))
	}
	clear(st.jobs)
	for i := range s.Running {
		r := &s.Running[i]
		end := heldUntil(s, r, grace)
		for _, c := range cards[i] {
			st.prof.Hold(c, end)
		}
		st.jobs[r.Job.ID] = heldJob{cards: cards[i], end: end, cycle: st.cycle}
	}
	st.loaded, st.now, st.grace = true, s.Now, grace
}

// sameCards reports whether two card lists are the same slice: a
// resolved list is never modified, so the same slice holds the same cards.
func sameCards(a, b []int) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}
