package solver

import (
	"context"
	"fmt"
	"math"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/solver/baseline"
	"github.com/huitian/huitian/solver/estimate"
	"github.com/huitian/huitian/solver/preempt"
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
	if f := c.flat; f != nil {
		// One reservation, which claims the cards or none of them.
		if f.window(cards) != profile.Forever {
			rv := &c.resv[0]
			return risk{prob: estimate.ProbExceeds(r, &rv.s), claim: rv.s, claimT: rv.t, claimed: true}
		}
		usable := 0
		if len(c.resv) > 0 && model.ModelAccepts(c.resv[0].job.CardModel, f.model) {
			usable = len(cards)
		}
		return risk{prob: c.exposure(r, usable)}
	}
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

// verdict is what the admission rule says of a placement.
type verdict uint8

const (
	rejected verdict = iota
	// safe: within the risk bound.
	safe
	// suspendable: checkpointable, beyond the bound; suspended with notice
	// if its cards are claimed before it ends.
	suspendable
)

// threshold is the preemption probability a job accepts: ε, or a
// low-risk-only job's own limit.
func (c *cycle) threshold(j *model.Job) float64 {
	if j.Backfill == model.BackfillLowRiskOnly {
		return j.MaxPreemptProb
	}
	return c.params.Epsilon
}

// admit is the one backfill admission rule, for the greedy pass and for
// the LP's levels and its rounding. A job placed where its cards stay free
// for window seconds (profile.Forever: no reservation claims them), with
// the risk rk there, is
//   - safe when the window holds its (1−thr) runtime quantile, its
//     preemption probability is within thr, the claiming reservation's
//     aggregate risk stays within ε (delayOK), and its protection ends by
//     the claim;
//   - else suspendable when it can checkpoint and accepts any risk, the
//     window covers its protection, the probability is at most
//     SuspendMaxProb, and the work it is expected to do before the claim
//     outweighs the expected cost of a suspension (checkpoint and restore);
//   - else rejected.
func (c *cycle) admit(j *model.Job, e *jobEst, rk risk, window int64) verdict {
	thr := c.threshold(j)
	if rk.claimed && !c.protectionFits(j, e.dist, rk.claimT) {
		return rejected
	}
	if window >= max(ceilSec(e.dist.Quantile(1-thr)), 1) && rk.prob <= thr+1e-12 && c.delayOK(j, rk) {
		return safe
	}
	if !j.Checkpointable || j.Backfill == model.BackfillLowRiskOnly {
		return rejected
	}
	if window < max(ceilSec(c.params.ProtectFraction*e.dist.Quantile(0.5)), 1) || rk.prob > c.h.cfg.SuspendMaxProb+1e-12 {
		return rejected
	}
	cost := 2 * j.CheckpointCost.Seconds() * rk.prob
	gain := e.dist.Mean()
	if rk.claimed {
		gain = estimate.ExpectedMin(&e.dist, &rk.claim)
	}
	if gain <= cost {
		return rejected
	}
	return suspendable
}

// lendRequest is the request that backfill beyond EASY places job j by
// (req: its own). By default, and for a single card or a job that
// communicates little, it is req; with Config.OneNodeGangs a job that
// communicates (model.CommHigh) goes on one node, and one that needs
// several nodes is not lent at all (false).
func (c *cycle) lendRequest(j *model.Job, req profile.Request) (profile.Request, bool) {
	if !c.h.cfg.OneNodeGangs || j.Cards <= 1 || j.Comm != model.CommHigh {
		return req, true
	}
	switch {
	case req.Topology == model.TopologySameNode || req.Topology == model.TopologySameIsland:
		return req, true
	case req.PerNode > 0 || j.Cards > c.lay.MaxNodeUsable:
		return req, false
	}
	req.Topology = model.TopologySameNode
	return req, true
}

// windowOf is how long all of cards stay free: until the first claim.
func (c *cycle) windowOf(cards []int) int64 {
	if c.flat != nil {
		return c.flat.window(cards)
	}
	w := profile.Forever
	for _, id := range cards {
		w = min(w, c.prof.Window(id, 0))
	}
	return w
}

// backfill tries to start queued job k beyond what EASY started, by the
// admission rule:
//  1. an opted-out job waits; a job whose median runtime exceeds the
//     controller's maximum backfill runtime waits;
//  2. safe: cards free for the job's (1−ε) runtime quantile, then for
//     longer windows, up to its limit;
//  3. suspendable (checkpointable jobs): cards whose window covers at
//     least its protection period, and its notice after it when a
//     reservation claims them (protectionFits).
func (c *cycle) backfill(k int) {
	j := &c.s.Queued[k]
	if j.Backfill == model.BackfillOptOut {
		c.pending(k, model.PendingOptOut, c.optOutMsg.of("opted out of backfill: waits behind ", c.waiting, ""))
		return
	}
	req := profile.RequestOf(j)
	if !c.canEverFit(req) {
		c.pending(k, model.PendingNeverFits, "the cluster's usable cards can never hold "+req.String())
		return
	}
	if c.freeCount() < j.Cards {
		c.pending(k, model.PendingResources, c.h.needsMsg(j.Cards))
		return
	}
	req, ok := c.lendRequest(j, req)
	if !ok {
		c.pending(k, model.PendingPolicy, "a gang that communicates across nodes is lent no cards beyond EASY's backfill: it starts on its time limit")
		return
	}
	e := c.queuedEst(k)
	med := e.dist.Quantile(0.5)
	if maxRT := c.params.MaxBackfillRuntime.Seconds(); med > maxRT {
		c.pending(k, model.PendingRuntimeCap, fmt.Sprintf("estimated runtime %.0fs exceeds the maximum backfill runtime %.0fs", med, maxRT))
		return
	}
	thr := c.threshold(j)
	limit := e.dist.Quantile(1)
	var last profile.Outcome = profile.NoCards
	tooRisky := false
	// 2. Safe, from the shortest window that can work to the limit.
	durs := []int64{max(ceilSec(e.dist.Quantile(1-thr)), 1)}
	if d2 := max(ceilSec(1.5*float64(durs[0])), 1); d2 < ceilSec(limit) {
		durs = append(durs, d2)
	}
	if dl := max(ceilSec(limit), 1); dl > durs[len(durs)-1] {
		durs = append(durs, dl)
	}
	for _, d := range durs {
		cards, out := c.fitNow(d, req)
		last = out
		if out != profile.Fits {
			continue
		}
		rk := c.riskOf(&e.dist, cards)
		if c.admit(j, &e, rk, c.windowOf(cards)) != safe {
			tooRisky = true
			continue
		}
		c.startBackfill(j, cards, e, rk, safe, "safe backfill")
		return
	}
	// 3. Suspendable: the checkpoint is insurance, not a plan.
	if j.Checkpointable && j.Backfill != model.BackfillLowRiskOnly {
		prot := max(ceilSec(c.params.ProtectFraction*med), 1)
		if cards, out := c.fitNow(prot, req); out == profile.Fits {
			rk := c.riskOf(&e.dist, cards)
			if v := c.admit(j, &e, rk, c.windowOf(cards)); v != rejected {
				c.startBackfill(j, cards, e, rk, v, "suspendable backfill: checkpoints if its cards are claimed first")
				return
			}
			tooRisky = true
		}
	}
	switch {
	case tooRisky && j.Backfill == model.BackfillLowRiskOnly:
		c.pending(k, model.PendingRisk, fmt.Sprintf("every placement's preemption probability is above its limit %.3f", thr))
	case tooRisky:
		c.pending(k, model.PendingPriority, fmt.Sprintf("would likely delay %s: preemption probability above %.3f", c.waiting, thr))
	case last == profile.NoCards:
		c.pending(k, model.PendingResources, c.h.needsMsg(j.Cards))
	case last == profile.Claimed:
		c.pending(k, model.PendingPriority, c.delayMsg.of("would delay the reservation of ", c.waiting, ""))
	default:
		c.pending(k, model.PendingTopology, "free cards do not meet "+req.String())
	}
}

// startBackfill records a backfill start beyond EASY with its risk. A job
// that cannot checkpoint, admitted on its predicted runtime into cards a
// reservation claims (its limit would not fit), gets the claim as the end
// of its window: past it, it is requeued as soon as that starts the
// reserved job, so an estimate that was wrong never holds a main job.
func (c *cycle) startBackfill(j *model.Job, cards []int, e jobEst, rk risk, v verdict, how string) {
	hold := max(ceilSec(e.dist.Quantile(c.h.cfg.Quantile)), 1)
	hold = max(min(hold, c.windowOf(cards)), 1)
	c.chargeDelay(j, rk)
	sp := startSpec{
		hold: hold, kind: model.Backfill, frag: c.classes.Dominant(cards),
		reason: how + "; " + backfillReason(c.waiting, rk.prob, e.basis.String()), risk: rk,
	}
	if v == safe && rk.claimed && !j.Checkpointable && max(baseline.Seconds(j.TimeLimit), 1) > rk.claimT {
		sp.windowEnd = rk.claimT
	}
	c.start(j, cards, e, sp)
}

// protectionFits: a job placed on cards a reservation claims at t must be
// able to yield by t if it runs on: its protection end (f × its median
// runtime) and then the notice it would be told with (its checkpoint cost
// and the margin, or the margin alone for a job that cannot checkpoint),
// so that neither its protection nor its notice can delay a main job.
// With the protection alone by t, a job admitted 75 s before the claim,
// protected 13 s and with a notice of 131 s, held the head to its own
// limit (25 s past the head's promise, on a synthetic workload).
func (c *cycle) protectionFits(j *model.Job, d estimate.Dist, t int64) bool {
	return c.params.ProtectFraction*d.Quantile(0.5)+preempt.Notice(c.h.cfg.Preempt, j).Seconds() <= float64(t)
}

// estimateStarts fills the estimated start of waiting jobs that hold no
// reservation: the earliest start on the final profile for the job's
// runtime at the reservation quantile, without committing it. Only the
// first PendingEstimates jobs get one; the rest stay unknown.
func (c *cycle) estimateStarts(ctx context.Context) {
	// The profile does not change here, so jobs of one shape (request
	// and earliest allowed start) are answered from the same profile, and
	// a shape's earliest start never comes sooner for a longer runtime
	// (the cards free long enough only shrink). A runtime between two
	// asked whose answers agree has that answer too, and so has one
	// shorter than a runtime answered with after, the soonest possible:
	// no sweep. (Most of the jobs asked about wait behind the head, and
	// a job that opted out of backfill is asked from the head's start.)
	type shape struct {
		req   profile.Request
		after int64
	}
	answers := map[shape][]durStart{}
	// A sweep is a millisecond or more at 65,536 cards (the first one
	// rebuilds the profile's event streams): it stops at the budget too.
	stop := func() bool { return baseline.Done(ctx) != nil }
	n := 0
	for i := range c.d.Pending {
		p := &c.d.Pending[i]
		if p.Reason == model.PendingReserved || p.Reason == model.PendingNeverFits {
			continue
		}
		if n >= c.h.cfg.PendingEstimates || baseline.Done(ctx) != nil {
			break
		}
		n++
		k := c.order[c.pendPos[i]] // pending entries are not sorted yet
		j, e := &c.s.Queued[k], c.queuedEst(k)
		d := max(ceilSec(e.dist.Quantile(c.h.cfg.Quantile)), 1)
		after := int64(1)
		if j.Backfill == model.BackfillOptOut && len(c.resv) > 0 {
			after = c.resv[0].t // it starts only once the jobs ahead have
		}
		sh := shape{req: profile.RequestOf(j), after: after}
		t, known := between(answers[sh], d, after)
		if !known {
			st, ok, stopped := c.prof.EarliestTimeOr(after, d, sh.req, stop)
			if stopped {
				break
			}
			t = neverStarts
			if ok {
				t = st
			}
			answers[sh] = append(answers[sh], durStart{d, t})
		}
		if t != neverStarts {
			p.EstimatedStart = c.at(t)
		}
	}
}

// durStart is an earliest start (neverStarts: none) found for a runtime.
type durStart struct{ dur, t int64 }

const neverStarts = math.MaxInt64

// between answers the earliest start of a runtime dur from those found
// for other runtimes of the same shape, when they decide it: the answer
// is at least after and at least that of any shorter runtime, and at
// most that of any longer one.
func between(found []durStart, dur, after int64) (int64, bool) {
	lo, hi := after, int64(neverStarts)
	longer := false
	for _, f := range found {
		if f.dur == dur {
			return f.t, true
		}
		if f.dur < dur {
			lo = max(lo, f.t)
		} else {
			hi, longer = min(hi, f.t), true
		}
	}
	if lo == neverStarts || longer && lo == hi {
		return lo, true
	}
	return 0, false
}
