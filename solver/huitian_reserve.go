package solver

import (
	"fmt"
	"time"

	"github.com/huitian/huitian/solver/baseline"

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
		c.pending(j, model.PendingNeverFits, "no cards can ever hold "+req.String())
		return
	}
	// Keep the head on the cards it held last cycle unless others serve it
	// markedly earlier: a reservation that hops to other cards whenever
	// its own are late leaves the cards it left to long backfill jobs, and
	// slips again and again.
	if len(c.resv) == 0 {
		if tp, prev, ok := c.stickyStart(j, dur); ok && tp <= t+baseline.Seconds(h.cfg.StickySlack) {
			t, cards = tp, prev
		}
	}
	// Preempting backfill jobs for the head is worth it only when it
	// starts the head markedly earlier: checkpointable jobs are suspended
	// when that gains more than MinGain; jobs that cannot checkpoint are
	// requeued only past the threshold and when nothing else serves the
	// head now.
	preempting := false
	if len(c.resv) == 0 && t > 0 && c.hasReleasable() {
		mode := releaseCheckpointable
		if first, seen := h.mem.firstReserved[j.ID]; seen && c.s.Now.Sub(first) > h.cfg.Preempt.Threshold {
			mode = releaseAll
		}
		gain := baseline.Seconds(h.cfg.Preempt.MinGain)
		saved := *c
		if err := c.reload(mode); err == nil {
			t1, cards1, ok1 := c.prof.EarliestStart(1, dur, req)
			worth := ok1 && t-t1 > gain
			if mode == releaseAll && worth && t1 > marginSeconds(c) {
				// Cannot checkpoint: only when that serves the head now.
				c2 := *c
				*c = saved
				if err := c.reload(releaseCheckpointable); err == nil {
					t2, cards2, ok2 := c.prof.EarliestStart(1, dur, req)
					worth = ok2 && t-t2 > gain
					t1, cards1 = t2, cards2
				} else {
					*c = c2
				}
			}
			if worth {
				t, cards, preempting = t1, cards1, true
			} else {
				*c = saved
			}
		} else {
			*c = saved
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
	c.resv = append(c.resv, resv{job: j, t: t, cards: cards, s: sd.Floor(float64(t)), conf: conf, survive: 1})
	c.d.Reservations = append(c.d.Reservations, model.Reservation{JobID: j.ID, Cards: c.lay.Refs(cards), Start: at, Confidence: conf})
	c.addPending(j, model.Pending{
		JobID: j.ID, Reason: model.PendingReserved, EstimatedStart: at,
		Message: fmt.Sprintf("holds %d cards from %s (confidence %.2f)", len(cards), at.UTC().Format(time.RFC3339), conf),
	})
	if c.waiting == "" {
		c.waiting = j.ID
	}
	if preempting {
		c.preemptFor(j, t, cards)
	}
}

// stickyStart returns when the cards a job was reserved on last cycle are
// all free for dur, if they still exist and are usable.
func (c *cycle) stickyStart(j *model.Job, dur int64) (int64, []int, bool) {
	refs, ok := c.h.mem.lastCards[j.ID]
	if !ok || len(refs) != j.Cards {
		return 0, nil, false
	}
	cards := make([]int, len(refs))
	t := int64(1)
	for i, r := range refs {
		id, ok := c.lay.CardID(r)
		if !ok || !c.lay.Cards[id].Usable {
			return 0, nil, false
		}
		cards[i] = id
		t = max(t, c.prof.Release(id))
	}
	for _, id := range cards {
		if !c.prof.FreeOver(id, t, t+dur) {
			return 0, nil, false
		}
	}
	return t, cards, true
}

// hasReleasable reports whether some running backfill job could be made
// to yield.
func (c *cycle) hasReleasable() bool {
	for i := range c.s.Running {
		if c.s.Running[i].Kind == model.Backfill {
			return true
		}
	}
	return false
}

// reload rebuilds the profile with a release mode and re-applies this
// cycle's starts. The caller saves and restores the cycle around it.
func (c *cycle) reload(mode releaseMode) error {
	if err := c.load(mode); err != nil {
		return err
	}
	for k, st := range c.d.Starts {
		ids := make([]int, len(st.Cards))
		for i, ref := range st.Cards {
			ids[i], _ = c.lay.CardID(ref)
			c.holder[ids[i]] = -2 - k
		}
		hold := max(ceilSec(c.startDist[k].Quantile(c.h.cfg.Quantile)), 1)
		if err := c.prof.Reserve(ids, 0, hold); err != nil {
			return err
		}
	}
	return nil
}

// marginSeconds is the requeue notice in whole seconds.
func marginSeconds(c *cycle) int64 { return max(ceilSec(c.h.cfg.Preempt.Margin.Seconds()), 1) }

// preemptFor emits the preemptions a reservation at t needs: backfill
// jobs on its cards that may yield (checkpointable, or past the threshold),
// are expected to run past t, and are not protected now. Each is told once
// the reservation is within its notice plus the lookahead, with notice =
// the time until the cards must be free, so that it yields at t, not later
// because no cycle came at the right moment; the resource manager stops it
// when the notice runs out, if it has not ended by then.
func (c *cycle) preemptFor(j *model.Job, t int64, cards []int) {
	h := c.h
	first, seen := h.mem.firstReserved[j.ID]
	thresholdPassed := seen && c.s.Now.Sub(first) > h.cfg.Preempt.Threshold
	look := baseline.Seconds(h.cfg.Preempt.Lookahead)
	// Only jobs the reservation was planned to take cards from yield.
	var victims []preempt.Candidate
	seenJob := map[int]bool{}
	for _, id := range cards {
		ri := c.holder[id]
		if ri < 0 || seenJob[ri] {
			continue
		}
		seenJob[ri] = true
		r := &c.s.Running[ri]
		if r.ProtectedUntil.After(c.s.Now) {
			continue // protected: a later cycle tells it, once protection ends
		}
		rel := preempt.ReleaseOf(h.cfg.Preempt, r, c.s.Now, thresholdPassed)
		if !rel.OK {
			continue
		}
		due := ceilSec(rel.At.Sub(c.s.Now).Seconds())
		if due > t || t > due+look {
			continue // not needed for this reservation, or not yet
		}
		// Expected to end by the reservation: let it finish.
		if c.runRem[ri].Quantile(h.cfg.Quantile) <= float64(t) {
			continue
		}
		rel.Notice = time.Duration(t) * time.Second
		victims = append(victims, preempt.Candidate{Index: ri, Release: rel, Start: r.Start, ID: r.Job.ID})
	}
	preempt.Order(victims)
	for _, v := range victims {
		c.d.Preemptions = append(c.d.Preemptions, model.Preemption{
			JobID: v.ID, Action: v.Release.Action, Notice: v.Release.Notice, ForJobID: j.ID,
			Reason: fmt.Sprintf("%s's reservation at %s claims its cards", j.ID, c.at(t).UTC().Format(time.RFC3339)),
		})
	}
}
