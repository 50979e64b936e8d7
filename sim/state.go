package sim

import (
	"fmt"

	"github.com/huitian/huitian/model"
)

// cardOwners is who holds each card (by the layout's dense card number).
type cardOwners struct {
	// owner is per card the job holding it (from the check of its start,
	// checkStart), free, or unusable: one read says whether a start may
	// have it.
	owner  []int32
	busy   int // cards held by running jobs
	usable int // cards that can be held
}

// Card owners besides jobs.
const (
	free     int32 = -1
	unusable int32 = -2 // unhealthy or on an unschedulable node
)

func newCardOwners(lay *model.Layout) cardOwners {
	c := cardOwners{owner: make([]int32, len(lay.Cards))}
	for i := range c.owner {
		c.owner[i] = unusable
		if lay.Cards[i].Usable {
			c.owner[i] = free
			c.usable++
		}
	}
	return c
}

// claim gives card id to job ji when it is free, and says whether it was.
func (c *cardOwners) claim(id int, ji int32) bool {
	if c.owner[id] != free {
		return false
	}
	c.owner[id] = ji
	return true
}

// free frees cards.
func (c *cardOwners) free(ids []int) {
	for _, id := range ids {
		c.owner[id] = free
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
