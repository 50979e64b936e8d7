package sim

// Event kinds in the order they are handled at one instant. Arrivals and
// interval ticks are not in the heap: arrivals come from the submit-ordered
// trace, ticks from a counter, and both are handled after every heap event
// of the same time.
const (
	evEnd     uint8 = iota // a job's run ends: it completed or was killed at its limit
	evYield                // a preemption notice ran out: the job stops working
	evRelease              // a suspended job finished its checkpoint and frees its cards
	evWake                 // the planner asked to plan again then (Decision.ReplanBy); job is -1
)

// event is something that happens to a running job at a time. gen is the
// job's generation when the event was made; a job that changed state since
// (finished, yielded) has a newer generation, and the event is stale.
type event struct {
	t    int64
	seq  uint64
	job  int32
	gen  uint32
	kind uint8
}

func (a *event) less(b *event) bool {
	if a.t != b.t {
		return a.t < b.t
	}
	if a.kind != b.kind {
		return a.kind < b.kind
	}
	return a.seq < b.seq
}

// eventHeap is a binary min-heap of events; no interface dispatch, as it is
// on the simulator's hot path.
type eventHeap struct {
	evs []event
	seq uint64
}

func (h *eventHeap) len() int { return len(h.evs) }

func (h *eventHeap) top() *event { return &h.evs[0] }

func (h *eventHeap) push(e event) {
	h.seq++
	e.seq = h.seq
	h.evs = append(h.evs, e)
	i := len(h.evs) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h.evs[i].less(&h.evs[p]) {
			break
		}
		h.evs[i], h.evs[p] = h.evs[p], h.evs[i]
		i = p
	}
}

func (h *eventHeap) pop() event {
	e := h.evs[0]
	n := len(h.evs) - 1
	h.evs[0] = h.evs[n]
	h.evs = h.evs[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && h.evs[r].less(&h.evs[l]) {
			m = r
		}
		if !h.evs[m].less(&h.evs[i]) {
			break
		}
		h.evs[i], h.evs[m] = h.evs[m], h.evs[i]
		i = m
	}
	return e
}
