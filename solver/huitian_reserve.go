package solver

import (
	"fmt"
	"time"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/solver/preempt"
	"github.com/huitian/huitian/solver/profile"
)

// reserve gives a blocked job a reservation at the configured quantile of
// its start distribution, and tells backfill jobs on those cards to yield
// when the reservation is due.
func (c *cycle) reserve(j *model.Job) {
	h := c.h
	dur := max(ceilSec(j.TimeLimit.Seconds()), 1)
	req := profile.RequestOf(j)
	t, cards, ok := c.prof.EarliestStart(1, dur, req)
	if !ok {
		c.pending(j, model.PendingNeverFits, "no cards can ever hold %s", describe(req))
		return
	}
	// A job that cannot checkpoint may be requeued only when the reserved
	// job has waited past the threshold and no other cards serve it now.
	if len(c.resv) == 0 && t > 0 {
		if first, seen := h.mem.firstReserved[j.ID]; seen && c.s.Now.Sub(first) > h.cfg.Preempt.Threshold {
			if t2, cards2, ok2 := c.withRequeues(dur, req); ok2 && t2 < t {
				t, cards = t2, cards2
			}
		}
	}
	sd := c.startDistOf(cards)
	// Place the reservation at the quantile of its start: the cards are
	// free by then with that confidence.
	if tq := ceilSec(sd.Quantile(h.cfg.Quantile)); tq > t {
		free := true
		for _, id := range cards {
			if !c.prof.FreeOver(id, tq, tq+dur) {
				free = false
				break
			}
		}
		if free {
			t = tq
		}
	}
	if err := c.prof.Reserve(cards, t, t+dur); err != nil {
		panic(fmt.Sprintf("solver: reservation of %s: %v", j.ID, err))
	}
	at := c.at(t)
	conf := sd.CDF(float64(t))
	// The reservation starts at its reserved time, or later when its cards
	// are late: a backfill job that ends by then delays no one.
	c.resv = append(c.resv, resv{job: j, t: t, cards: cards, s: sd.Floor(float64(t)), conf: conf})
	c.d.Reservations = append(c.d.Reservations, model.Reservation{JobID: j.ID, Cards: c.lay.Refs(cards), Start: at, Confidence: conf})
	c.d.Pending = append(c.d.Pending, model.Pending{
		JobID: j.ID, Reason: model.PendingReserved, EstimatedStart: at,
		Message: fmt.Sprintf("holds %d cards from %s (confidence %.2f)", len(cards), at.UTC().Format(time.RFC3339), conf),
	})
	if c.waiting == "" {
		c.waiting = j.ID
	}
	c.preemptFor(j, t, cards)
}

// withRequeues finds the job's earliest start if backfill jobs that cannot
// checkpoint were requeued now, on a profile rebuilt that way.
func (c *cycle) withRequeues(dur int64, req profile.Request) (int64, []int, bool) {
	saved := *c
	if err := c.load(true); err != nil {
		*c = saved
		return 0, nil, false
	}
	// Re-apply this cycle's starts.
	for k, st := range c.d.Starts {
		ids := make([]int, len(st.Cards))
		for i, ref := range st.Cards {
			ids[i], _ = c.lay.CardID(ref)
			c.holder[ids[i]] = -2 - k
		}
		hold := max(ceilSec(c.startDist[k].Quantile(c.h.cfg.Quantile)), 1)
		_ = c.prof.Reserve(ids, 0, hold)
	}
	t, cards, ok := c.prof.EarliestStart(1, dur, req)
	if !ok || t > baselineMargin(c) {
		// Not served now even with requeues: keep the ordinary profile.
		*c = saved
		return 0, nil, false
	}
	return t, cards, true
}

func baselineMargin(c *cycle) int64 { return max(ceilSec(c.h.cfg.Preempt.Margin.Seconds()), 1) }

// preemptFor emits the preemptions a reservation at t needs now: backfill
// jobs on its cards that are expected to run past t, when t is within
// their notice (the reservation is due).
func (c *cycle) preemptFor(j *model.Job, t int64, cards []int) {
	h := c.h
	first, seen := h.mem.firstReserved[j.ID]
	thresholdPassed := seen && c.s.Now.Sub(first) > h.cfg.Preempt.Threshold
	var victims []preempt.Candidate
	seenJob := map[int]bool{}
	for _, id := range cards {
		ri := c.holder[id]
		if ri < 0 || seenJob[ri] {
			continue
		}
		seenJob[ri] = true
		r := &c.s.Running[ri]
		rel := preempt.ReleaseOf(h.cfg.Preempt, r, c.s.Now, thresholdPassed)
		if !rel.OK {
			continue
		}
		due := ceilSec(rel.At.Sub(c.s.Now).Seconds())
		// Expected to end before it could be made to yield: let it finish.
		if c.runDist[ri].Quantile(h.cfg.Quantile) < float64(due) {
			continue
		}
		if due < t || r.ProtectedUntil.After(c.s.Now) {
			continue // not due yet, or still protected: wait
		}
		victims = append(victims, preempt.Candidate{Index: ri, Release: rel, Start: r.Start, ID: r.Job.ID})
	}
	preempt.Order(victims)
	for _, v := range victims {
		c.d.Preemptions = append(c.d.Preemptions, model.Preemption{
			JobID: v.ID, Action: v.Release.Action, Notice: v.Release.Notice, ForJobID: j.ID,
			Reason: fmt.Sprintf("%s's reservation at %s is due on its cards", j.ID, c.at(t).UTC().Format(time.RFC3339)),
		})
	}
}
