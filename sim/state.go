package sim

import (
	"fmt"

	"github.com/huitian/huitian/model"
)

// cardOwners is which cards are held, a bit a card (by the layout's dense
// card number): by a job from the check of its start (checkStart) until
// its cards are freed, and of those by jobs lent cards in a window
// (heldByLent). A start's cards are checked and taken a word at a time
// along their runs; who holds a card is asked only to explain a refused
// start (holderOf).
type cardOwners struct {
	held   []uint64
	lent   []uint64
	ok     []uint64 // the usable cards
	busy   int      // cards held by running jobs
	usable int      // cards that can be held
}

func newCardOwners(lay *model.Layout) cardOwners {
	words := (len(lay.Cards) + 63) / 64
	c := cardOwners{held: make([]uint64, words), lent: make([]uint64, words), ok: make([]uint64, words)}
	for i := range lay.Cards {
		if lay.Cards[i].Usable {
			c.ok[i>>6] |= 1 << (i & 63)
			c.usable++
		}
	}
	return c
}

// claim takes cards first to end-1 when every one is usable and free, and
// says whether they were; it takes none when one is not.
func (c *cardOwners) claim(first, end int) bool {
	for w, mask := range model.Words(first, end) {
		if c.held[w]&mask != 0 || c.ok[w]&mask != mask {
			return false
		}
	}
	for w, mask := range model.Words(first, end) {
		c.held[w] |= mask
	}
	return true
}

// isHeld and isLent say whether card id is held, and by a lent job.
func (c *cardOwners) isHeld(id int) bool { return c.held[id>>6]&(1<<(id&63)) != 0 }
func (c *cardOwners) isLent(id int) bool { return c.lent[id>>6]&(1<<(id&63)) != 0 }

// run counts a started job's cards, taken when its start was checked
// (claim), as busy, and marks them held by a job lent them in a window
// when it is one.
func (c *cardOwners) run(ids []int, lent bool) {
	c.busy += len(ids)
	if !lent {
		return
	}
	for first, end := range model.SortedRuns(ids) {
		for w, mask := range model.Words(first, end) {
			c.lent[w] |= mask
		}
	}
}

// free frees a job's cards (sorted, as a job's are: checkStart).
func (c *cardOwners) free(ids []int) {
	for first, end := range model.SortedRuns(ids) {
		for w, mask := range model.Words(first, end) {
			c.held[w] &^= mask
			c.lent[w] &^= mask
		}
	}
	c.busy -= len(ids)
}

// jobLists are the queued and the running jobs, in the snapshot's order,
// with each one's trace index and a lookup by id. The slices are also the
// snapshot's: they change only between the planner's call and the next
// cycle, never while the planner or a Learner looks at them.
type jobLists struct {
	queued  []model.Job
	qidx    []int32
	inQueue map[string]int32
	running []model.Running
	ridx    []int32
	inRun   map[string]int32

	// After the planner's call: what changes the slices once a Learner
	// has seen the snapshot.
	snapLive   bool // the planner or a Learner may be looking at the slices
	startedRun []model.Running
	startedIdx []int32
	released   []int32
}

// runPos is a running job's position in the running list.
func (l *jobLists) runPos(ji int32) int {
	for i, r := range l.ridx {
		if r == ji {
			return i
		}
	}
	panic(fmt.Sprintf("sim: job %d is not in the running list", ji))
}

// accounting is what the run measures over time, besides each job's
// outcome.
type accounting struct {
	acc accum
	// When the queue-time utilization was last integrated (-1 before the
	// first event), and how many queued jobs ask for no more cards than
	// the cluster has (one larger never starts, and would count the whole
	// run as queue time).
	queuedT   int64
	queuedFit int
	// The last cycle's idle-capacity accounting and its time; statT < 0
	// before the first cycle.
	statT            int64
	statIdle, statBf int
	series           *seriesRec
	progress         int // jobs finished since the last Config.Progress call
}

// account integrates the last cycle's idle-capacity accounting up to t.
func (m *accounting) account(t int64) {
	if m.statT >= 0 && t > m.statT {
		dt := float64(t - m.statT)
		m.acc.idleCardSeconds += float64(m.statIdle) * dt
		m.acc.backfillCardSeconds += float64(m.statBf) * dt
	}
	m.statT = max(m.statT, t)
}

// queueTime integrates the utilization while jobs wait up to t, with
// busy of usable cards held since the last call.
func (m *accounting) queueTime(t int64, busy, usable int) {
	if m.queuedT >= 0 && t > m.queuedT && m.queuedFit > 0 {
		dt := float64(t - m.queuedT)
		m.acc.queuedBusySeconds += float64(busy) * dt
		m.acc.queuedCapSeconds += float64(usable) * dt
	}
	m.queuedT = t
}
