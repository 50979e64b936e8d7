package sim

import (
	"math"
	"slices"

	"github.com/huitian/huitian/model"
)

// JobResult is what happened to one job. Times are seconds from the epoch.
type JobResult struct {
	ID     string
	Submit int64
	// Start is the job's first start, -1 when it never started.
	Start int64
	// End is when it finished, -1 when it never did.
	End int64
	// Run is how long it worked: its actual runtime, or its limit when it
	// was killed there.
	Run   int64
	Cards int
	// Kind is the kind of its first start.
	Kind model.AllocKind
	// Backfilled: some start of the job was on backfill resources.
	Backfilled  bool
	Preemptions int
	Exit        model.ExitState
	// Headed: the job was the reserved head of some executed decision
	// (its first reservation); HeadPromise is the start that decision
	// promised it, HeadStart its next start after that (-1 when none).
	Headed      bool
	HeadPromise int64
	HeadStart   int64
	// HeadHeld is how long, as the reserved head, it waited with its
	// reserved cards free but for jobs lent into windows (seconds; see
	// HeadDelay.Held).
	HeadHeld int64
}

// Finished reports whether the job ran to its end.
func (r *JobResult) Finished() bool { return r.End >= 0 }

// Wait is the time from submit to first start.
func (r *JobResult) Wait() int64 { return r.Start - r.Submit }

// Flow is the time from submit to end.
func (r *JobResult) Flow() int64 { return r.End - r.Submit }

// BSLD is the bounded slowdown max(1, flow / max(10 s, run)).
func (r *JobResult) BSLD() float64 {
	return math.Max(1, float64(r.Flow())/float64(max(10, r.Run)))
}

// Summary aggregates a run. Averages are over the jobs that finished.
type Summary struct {
	Jobs         int `json:"jobs"`
	NeverStarted int `json:"never_started"`

	AvgWait    float64 `json:"avg_wait_s"`
	MedianWait float64 `json:"median_wait_s"`
	P95Wait    float64 `json:"p95_wait_s"`
	AvgFlow    float64 `json:"avg_flow_s"`
	AvgBSLD    float64 `json:"avg_bsld"`
	// Utilization is busy card-seconds over usable cards × the span from
	// the first submit to the last end.
	Utilization float64 `json:"utilization"`
	// UtilizationQueued is busy card-seconds over usable card-seconds
	// during the time some job waited in the queue (one that asks for no
	// more cards than the cluster has): what backfill works on, free of
	// the span the trace's last jobs set. Nil when no job ever waited.
	UtilizationQueued *float64 `json:"utilization_while_queued"`
	// Makespan is the span from the first submit to the last end.
	Makespan int64 `json:"makespan_s"`

	// Starts count every start, restarts after a preemption included.
	RegularStarts  int `json:"regular_starts"`
	BackfillStarts int `json:"backfill_starts"`
	Preemptions    int `json:"preemptions"`
	// LostCardSeconds is the card time preemptions wasted: checkpoint and
	// restore time of suspended jobs, all the work of requeued ones.
	LostCardSeconds float64 `json:"lost_card_seconds"`
	BusyCardSeconds float64 `json:"busy_card_seconds"`
	// LostShare is LostCardSeconds over BusyCardSeconds (busy time
	// includes the work that was lost); nil when no card was busy.
	LostShare *float64 `json:"lost_share"`

	// BackfillCompletionRate is the share of the jobs started on backfill
	// resources that ended without being preempted; nil when none was.
	BackfillCompletionRate *float64 `json:"backfill_completion_rate"`
	// BackfillUtilization is the share of otherwise idle card time that
	// backfill used, from the planner's own accounting: each cycle's
	// model.Stats.BackfillCards over its IdleCards, both weighted by the time
	// to the next cycle (as the planner's tuner measures it). Nil when the
	// planner reports no such accounting (the baselines).
	BackfillUtilization *float64 `json:"backfill_utilization"`
	// MainJobs and MainAvgWait are over the finished jobs whose first start
	// was regular; MainAvgWait is nil when there are none. Which jobs
	// start regular depends on the policy (one that backfills more leaves
	// mostly the large jobs as main jobs), so MainAvgWait compares a
	// different population per policy: compare Classes (and
	// CompareClasses) for the same jobs, HeadDelay for the promise.
	MainJobs    int      `json:"main_jobs"`
	MainAvgWait *float64 `json:"main_avg_wait_s"`

	// Classes has one entry per size class (Result.Classes).
	Classes []ClassStats `json:"classes"`
	// HeadDelay is how late reserved heads started against their first
	// reservation.
	HeadDelay HeadDelay `json:"head_delay"`

	Cycles int `json:"cycles"`
}

// accum is what the engine counts as it goes.
type accum struct {
	busyCardSeconds float64
	lostCardSeconds float64
	preemptions     int
	regularStarts   int
	backfillStarts  int

	// Busy card-seconds and card-seconds of the usable cards while some job
	// waited in the queue.
	queuedBusySeconds float64
	queuedCapSeconds  float64

	// The planner's idle-capacity accounting, integrated over time.
	idleCardSeconds     float64
	backfillCardSeconds float64
	accounted           bool // some cycle reported idle or backfill cards
}

// summarize aggregates job results on a cluster of usable cards.
func summarize(jobs []JobResult, usable int, acc accum, cycles int) Summary {
	s := Summary{
		RegularStarts: acc.regularStarts, BackfillStarts: acc.backfillStarts,
		Preemptions: acc.preemptions, LostCardSeconds: acc.lostCardSeconds,
		BusyCardSeconds: acc.busyCardSeconds, Cycles: cycles,
	}
	if acc.busyCardSeconds > 0 {
		l := acc.lostCardSeconds / acc.busyCardSeconds
		s.LostShare = &l
	}
	if len(jobs) == 0 {
		return s
	}
	first, last := jobs[0].Submit, int64(math.MinInt64)
	var (
		waits                     []float64
		sumWait, sumFlow, sumBSLD float64
		mainWait                  float64
		bfJobs, bfClean           int
	)
	for i := range jobs {
		r := &jobs[i]
		first = min(first, r.Submit)
		if !r.Finished() {
			s.NeverStarted++
			continue
		}
		s.Jobs++
		last = max(last, r.End)
		w := float64(r.Wait())
		waits = append(waits, w)
		sumWait += w
		sumFlow += float64(r.Flow())
		sumBSLD += r.BSLD()
		if r.Kind == model.Regular {
			s.MainJobs++
			mainWait += w
		}
		if r.Backfilled {
			bfJobs++
			if r.Preemptions == 0 {
				bfClean++
			}
		}
	}
	if s.Jobs == 0 {
		return s
	}
	n := float64(s.Jobs)
	s.AvgWait, s.AvgFlow, s.AvgBSLD = sumWait/n, sumFlow/n, sumBSLD/n
	slices.Sort(waits)
	s.MedianWait = quantile(waits, 0.5)
	s.P95Wait = quantile(waits, 0.95)
	s.Makespan = last - first
	if s.Makespan > 0 && usable > 0 {
		s.Utilization = acc.busyCardSeconds / (float64(usable) * float64(s.Makespan))
	}
	if acc.queuedCapSeconds > 0 {
		u := acc.queuedBusySeconds / acc.queuedCapSeconds
		s.UtilizationQueued = &u
	}
	if bfJobs > 0 {
		r := float64(bfClean) / float64(bfJobs)
		s.BackfillCompletionRate = &r
	}
	if acc.accounted && acc.idleCardSeconds > 0 {
		u := acc.backfillCardSeconds / acc.idleCardSeconds
		s.BackfillUtilization = &u
	}
	if s.MainJobs > 0 {
		w := mainWait / float64(s.MainJobs)
		s.MainAvgWait = &w
	}
	s.HeadDelay = headDelay(jobs)
	return s
}

// quantile is the q-quantile of sorted values, interpolating linearly
// between the closest ranks (R's type 7, numpy's default).
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	h := q * float64(len(sorted)-1)
	lo := int(math.Floor(h))
	if lo >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	return sorted[lo] + (h-float64(lo))*(sorted[lo+1]-sorted[lo])
}

func (e *engine) result() *Result {
	r := &Result{Jobs: e.res, Summary: summarize(e.res, e.cards.usable, e.meter.acc, e.cycles), Classes: ClassesOf(e.lay)}
	r.Summary.Classes = classStats(e.res, r.Classes)
	if e.meter.series != nil {
		r.Series = e.meter.series.finish(e.cards.usable)
	}
	return r
}
