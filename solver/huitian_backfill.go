package solver

import (
	"fmt"
	"strconv"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/solver/estimate"
	"github.com/huitian/huitian/solver/profile"
)

// risk is what a placement on given cards exposes a job to.
type risk struct {
	prob    float64       // P(the job still runs when a reservation claims a card)
	claim   estimate.Dist // the claiming reservation's start distribution
	claimT  int64         // its planned start
	claimed bool
	res     int // the claiming reservation, when claimed
}

// riskOf computes the preemption probability of a job with runtime r on
// cards: against the reservation with the earliest claim on any of them.
//
// Cards no reservation claims: the job can be preempted only if a later
// cycle moves a reservation onto them. That happens when the head's
// planned cards are not free in time (probability 1 − its confidence) and
// the head then needs these cards: we take the share of the head's demand
// these cards could cover as that chance. The job is then exposed if it
// outlives the head's start. So P = P(R > S_head) · (1 − conf_head) ·
// min(1, usable cards / head cards), and 0 when the head cannot use the
// cards (another card model).
func (c *cycle) riskOf(r *estimate.Dist, cards []int) risk {
	best := -1
	var bestT int64
	for _, id := range cards {
		t := c.prof.NextClaim(id, 0)
		if t == profile.Forever {
			continue
		}
		if best < 0 || t < bestT {
			for k := range c.resv {
				if c.resv[k].t == t && containsCard(c.resv[k].cards, id) {
					best, bestT = k, t
					break
				}
			}
		}
	}
	if best >= 0 {
		rv := &c.resv[best]
		return risk{prob: estimate.ProbExceeds(r, &rv.s), claim: rv.s, claimT: rv.t, claimed: true, res: best}
	}
	usable := 0
	for _, id := range cards {
		if len(c.resv) > 0 && model.ModelAccepts(c.resv[0].job.CardModel, c.lay.Cards[id].Model) {
			usable++
		}
	}
	return risk{prob: c.exposure(r, usable)}
}

// exposure is the preemption probability on unclaimed cards, of which
// usable could serve the head (see riskOf).
func (c *cycle) exposure(r *estimate.Dist, usable int) float64 {
	if len(c.resv) == 0 || usable == 0 {
		return 0
	}
	head := &c.resv[0]
	share := min(1, float64(usable)/float64(head.job.Cards))
	return estimate.ProbExceeds(r, &head.s) * (1 - head.conf) * share
}

// delayOK bounds the risk a reservation runs in aggregate: each backfill
// job that cannot checkpoint, placed on its cards, may still run when it
// starts; the chance that any of them does, 1 − Π(1 − p), stays within ε.
// (One bound per job would let twenty jobs at 5% each delay the main job
// two times in three.) Checkpointable jobs yield instead and do not count.
func (c *cycle) delayOK(j *model.Job, rk risk) bool {
	if !rk.claimed || j.Checkpointable {
		return true
	}
	return 1-c.resv[rk.res].survive*(1-rk.prob) <= c.params.Epsilon+1e-12
}

// chargeDelay records a placement's share of its reservation's risk.
func (c *cycle) chargeDelay(j *model.Job, rk risk) {
	if rk.claimed && !j.Checkpointable {
		c.resv[rk.res].survive *= 1 - rk.prob
	}
}

func containsCard(cards []int, id int) bool {
	for _, c := range cards {
		if c == id {
			return true
		}
	}
	return false
}

// backfill tries to start a job that would jump the queue:
//  1. an opted-out job waits; a job whose median runtime exceeds the
//     controller's maximum backfill runtime waits;
//  2. safe backfill: cards free for the job's (1−ε) runtime quantile,
//     then for longer windows, accepted when the preemption probability is
//     at most ε (or, for a low-risk-only job, its own limit);
//  3. suspendable backfill: a checkpointable job (that allows any risk)
//     may take cards whose window covers at least its protection period;
//     the expected checkpoint cost is charged in the reason.
func (c *cycle) backfill(j *model.Job) {
	if j.Backfill == model.BackfillOptOut {
		c.pending(j, model.PendingOptOut, "opted out of backfill: waits behind "+c.waiting)
		return
	}
	req := profile.RequestOf(j)
	if !c.prof.CanEverFit(req) {
		c.pending(j, model.PendingNeverFits, "the cluster's usable cards can never hold "+req.String())
		return
	}
	if c.prof.FreeCount() < j.Cards {
		c.pending(j, model.PendingResources, "needs "+strconv.Itoa(j.Cards)+" cards, not enough free")
		return
	}
	e := c.h.estimateOf(c, j)
	med := e.dist.Quantile(0.5)
	if maxRT := c.params.MaxBackfillRuntime.Seconds(); med > maxRT {
		c.pending(j, model.PendingRuntimeCap, fmt.Sprintf("estimated runtime %.0fs exceeds the maximum backfill runtime %.0fs", med, maxRT))
		return
	}
	limit := e.dist.Quantile(1)
	thr := c.params.Epsilon
	lowRisk := j.Backfill == model.BackfillLowRiskOnly
	if lowRisk {
		thr = j.MaxPreemptProb
	}
	hold := func(cards []int) int64 {
		h := max(ceilSec(e.dist.Quantile(c.h.cfg.Quantile)), 1)
		for _, id := range cards {
			h = min(h, c.prof.Window(id, 0))
		}
		return max(h, 1)
	}
	var last profile.Outcome = profile.NoCards
	tooRisky := false
	// 2. Safe backfill, from the shortest window that can work to the limit.
	durs := []int64{max(ceilSec(e.dist.Quantile(1-thr)), 1)}
	if d2 := max(ceilSec(1.5*float64(durs[0])), 1); d2 < ceilSec(limit) {
		durs = append(durs, d2)
	}
	if dl := max(ceilSec(limit), 1); dl > durs[len(durs)-1] {
		durs = append(durs, dl)
	}
	for _, d := range durs {
		cards, out := c.prof.FitNow(d, req)
		last = out
		if out != profile.Fits {
			continue
		}
		rk := c.riskOf(&e.dist, cards)
		if rk.prob > thr+1e-12 || !c.delayOK(j, rk) {
			tooRisky = true
			continue
		}
		if rk.claimed && !c.protectionFits(e.dist, rk.claimT) {
			tooRisky = true
			continue
		}
		c.startBackfill(j, cards, e, rk, "safe backfill")
		return
	}
	// 3. Suspendable backfill for checkpointable jobs: the checkpoint is
	// insurance, not a plan. The job may take cards a reservation claims
	// when it will more likely than not be done by then (probability at
	// most SuspendMaxProb) and the work it is expected to do there outweighs
	// the expected cost of one suspension (checkpoint and restore).
	if j.Checkpointable && !lowRisk {
		prot := max(ceilSec(c.params.ProtectFraction*med), 1)
		if cards, out := c.prof.FitNow(prot, req); out == profile.Fits {
			rk := c.riskOf(&e.dist, cards)
			cost := 2 * j.CheckpointCost.Seconds() * rk.prob
			gain := estimate.ExpectedMin(&e.dist, &rk.claim)
			if !rk.claimed {
				gain = e.dist.Mean()
			}
			if rk.prob <= c.h.cfg.SuspendMaxProb+1e-12 && gain > cost {
				c.start(j, cards, hold(cards), e, model.Backfill, c.classes.Dominant(cards),
					fmt.Sprintf("suspendable backfill while %s waits: checkpoints if its cards are claimed first; preemption probability %.3f, expected checkpoint cost %.0fs", c.waiting, rk.prob, cost),
					rk.prob, rk.claim, rk.claimed)
				return
			}
			tooRisky = true
		}
	}
	switch {
	case tooRisky && lowRisk:
		c.pending(j, model.PendingRisk, fmt.Sprintf("every placement's preemption probability is above its limit %.3f", thr))
	case tooRisky:
		c.pending(j, model.PendingPriority, fmt.Sprintf("would likely delay %s: preemption probability above %.3f", c.waiting, thr))
	case last == profile.NoCards:
		c.pending(j, model.PendingResources, "needs "+strconv.Itoa(j.Cards)+" cards, not enough free")
	case last == profile.Claimed:
		c.pending(j, model.PendingPriority, "would delay the reservation of "+c.waiting)
	default:
		c.pending(j, model.PendingTopology, "free cards do not meet "+req.String())
	}
}

// protectionFits: a job placed on cards a reservation claims at t must see
// its protection end (f × its median runtime) by t, so that protection can
// never delay a main job.
func (c *cycle) protectionFits(d estimate.Dist, t int64) bool {
	return c.params.ProtectFraction*d.Quantile(0.5) <= float64(t)
}

// estimateStarts fills the estimated start of waiting jobs that hold no
// reservation: the earliest start on the final profile for the job's
// runtime at the reservation quantile, without committing it. Only the
// first PendingEstimates jobs get one; the rest stay unknown.
func (c *cycle) estimateStarts() {
	// Jobs of one shape get one answer: the profile does not change here.
	type shapeKey struct {
		req        profile.Request
		dur, after int64
	}
	cache := map[shapeKey]int64{}
	n := 0
	for i := range c.d.Pending {
		p := &c.d.Pending[i]
		if p.Reason == model.PendingReserved || p.Reason == model.PendingNeverFits {
			continue
		}
		if n >= c.h.cfg.PendingEstimates {
			break
		}
		n++
		j := c.jobByID(p.JobID)
		if j == nil {
			continue
		}
		e := c.h.estimateOf(c, j)
		d := max(ceilSec(e.dist.Quantile(c.h.cfg.Quantile)), 1)
		after := int64(1)
		if j.Backfill == model.BackfillOptOut && len(c.resv) > 0 {
			after = c.resv[0].t // it starts only once the jobs ahead have
		}
		key := shapeKey{req: profile.RequestOf(j), dur: d, after: after}
		t, seen := cache[key]
		if !seen {
			t = -1
			if st, ok := c.prof.EarliestTime(after, d, key.req); ok {
				t = st
			}
			cache[key] = t
		}
		if t >= 0 {
			p.EstimatedStart = c.at(t)
		}
	}
}

func (c *cycle) jobByID(id string) *model.Job {
	if c.byID == nil {
		c.byID = make(map[string]int, len(c.s.Queued))
		for i := range c.s.Queued {
			c.byID[c.s.Queued[i].ID] = i
		}
	}
	if i, ok := c.byID[id]; ok {
		return &c.s.Queued[i]
	}
	return nil
}
