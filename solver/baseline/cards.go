package baseline

import (
	"slices"

	"github.com/huitian/huitian/model"
)

// CardIDs resolves running jobs' card references to dense card numbers and
// remembers each job's answer from one cycle to the next: a running job's
// cards do not change while it runs, and at 65,536 cards a map lookup per
// busy card every cycle was most of a plan (issue 15: 75% of a flat
// 93,312-processor replay in loading the profile). A remembered answer is used only
// when the layout is the same and every reference still names the same
// card, so the numbers are those a lookup would give. The zero value is
// ready; it is not safe for concurrent use.
type CardIDs struct {
	lay   *model.Layout
	byJob map[string]cardsOf
	cycle uint32
	// last is the last Resolve's running jobs in its order: Resolve walks
	// it alongside the snapshot's and finds most jobs there without a map
	// lookup (a resource manager lists its running jobs in a stable
	// order: a cycle drops the ended ones and adds the started ones).
	last, next []resolved
	out        [][]int // Resolve's answer, reused
}

type resolved struct {
	id string
	cardsOf
}

// lookAhead is how far Resolve looks down the last cycle's list for a
// job before it asks the map: past jobs that ended since.
const lookAhead = 8

type cardsOf struct {
	ids []int // sorted
	// order is ids in the references' order when a resource manager
	// lists them out of card order, else ids itself: the references are
	// checked against it (still).
	order []int
	cycle uint32 // the last cycle that used it
}

// Begin starts a cycle on a layout: answers for another layout are dropped.
func (c *CardIDs) Begin(lay *model.Layout) {
	if c.lay != lay || c.byJob == nil {
		c.lay, c.byJob, c.last = lay, map[string]cardsOf{}, c.last[:0]
	}
	c.cycle++
}

// of returns the dense numbers of a running job's cards, sorted (ids: a
// profile or pool takes a job's cards along their runs of consecutive
// numbers, found in a few reads on a sorted list, model.SortedRuns), and
// in the references' order. When a reference names no card it returns
// the position of the first such one and false. The slices are the
// CardIDs' own: the caller must not modify them.
func (c *CardIDs) of(jobID string, refs []model.CardRef) (cardsOf, int, bool) {
	if e, ok := c.byJob[jobID]; ok && c.still(e, refs) {
		e.cycle = c.cycle
		c.byJob[jobID] = e
		return e, 0, true
	}
	ids := make([]int, len(refs))
	next := 0 // a decision lists a job's cards in card order
	for k, ref := range refs {
		id, ok := c.lay.CardIDNear(ref, next)
		if !ok {
			return cardsOf{}, k, false
		}
		ids[k] = id
		next = id + 1
	}
	e := cardsOf{ids: ids, order: ids, cycle: c.cycle}
	if !slices.IsSorted(ids) {
		e.ids = slices.Sorted(slices.Values(ids))
	}
	c.byJob[jobID] = e
	return e, 0, true
}

// still says whether an answer still holds: refs name its cards, in its
// order.
func (c *CardIDs) still(e cardsOf, refs []model.CardRef) bool {
	if len(e.order) != len(refs) {
		return false
	}
	for k, id := range e.order {
		if c.lay.Ref(id) != refs[k] {
			return false
		}
	}
	return true
}

// End finishes a cycle of running jobs: answers no job used for a while
// are dropped once they outnumber those in use.
func (c *CardIDs) End(running int) {
	if len(c.byJob) <= 2*running+64 {
		return
	}
	for id, e := range c.byJob {
		if e.cycle != c.cycle {
			delete(c.byJob, id)
		}
	}
}
