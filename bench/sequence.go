package bench

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/solver"
)

// Sequence is a run of consecutive planning cycles on one cluster, as a
// resource manager would ask for them: each cycle acts on the last
// decision (its starts run, its preemptions requeue), moves the clock one
// step, ends the jobs whose runtime is up, and submits new jobs so that
// the queue stays about as deep as it started. The same arguments and the
// same decisions give the same sequence.
type Sequence struct {
	s     *model.Snapshot
	r     *rand.Rand
	depth int
	step  time.Duration
	// runtime is each job's actual runtime, drawn at submit: at most its
	// time limit.
	runtime map[string]time.Duration
	next    int
	// reuse: Advance builds the next snapshot in the one of two cycles
	// back (spare), so that the harness's garbage does not set off
	// collections inside the plans it measures. queued, gone and pre are
	// Advance's own maps, emptied each time.
	reuse  bool
	spare  *model.Snapshot
	queued map[string]int
	gone   map[string]bool
	pre    map[string]bool
}

// NewSequence starts a sequence at Snapshot(cards, queued, seed), one
// cycle every step.
func NewSequence(cards, queued int, seed uint64, step time.Duration) *Sequence {
	q := &Sequence{
		s: Snapshot(cards, queued, seed), r: rand.New(rand.NewPCG(seed, 0x73657120)),
		depth: queued, step: step, runtime: map[string]time.Duration{}, next: queued,
		queued: map[string]int{}, gone: map[string]bool{}, pre: map[string]bool{},
	}
	for _, r := range q.s.Running {
		q.runtime[r.Job.ID] = q.draw(r.Job.TimeLimit)
	}
	for _, j := range q.s.Queued {
		q.runtime[j.ID] = q.draw(j.TimeLimit)
	}
	return q
}

// draw returns an actual runtime for a limit: most jobs end well before
// it, a tenth run into it.
func (q *Sequence) draw(limit time.Duration) time.Duration {
	f := q.r.Float64()
	if q.r.IntN(10) == 0 {
		f = 1
	}
	return max(time.Second, time.Duration(f*float64(limit)).Truncate(time.Second))
}

// Snapshot returns this cycle's snapshot. Planners must not modify it;
// Advance builds the next one afresh, or, once Reuse was asked, in the
// snapshot of the cycle before this one.
func (q *Sequence) Snapshot() *model.Snapshot { return q.s }

// Reuse makes Advance build each snapshot in the arrays of the one two
// cycles back, as a resource manager linked in with the planner would
// keep its buffers: a caller may then hold a snapshot only until the
// second Advance after it (a planner keeps nothing of a snapshot but
// values, which the differential test checks with Reuse on).
func (q *Sequence) Reuse() *Sequence {
	q.reuse = true
	return q
}

// Advance acts on d, the decision for the current snapshot, and moves to
// the next cycle. It returns the events of the step (starts, finishes,
// preemptions), for planners that learn.
func (q *Sequence) Advance(d *model.Decision) []model.Event {
	s := q.s
	now := s.Now.Add(q.step)
	next := &model.Snapshot{}
	if q.reuse && q.spare != nil {
		next = q.spare
	}
	*next = model.Snapshot{Now: now, Cluster: s.Cluster, Options: s.Options, Running: next.Running[:0], Queued: next.Queued[:0]}
	queued, gone, preempted := q.queued, q.gone, q.pre
	clear(queued)
	clear(gone)
	clear(preempted)
	var evs []model.Event
	for i := range s.Queued {
		queued[s.Queued[i].ID] = i
	}
	// 1. The decision: starts run from now; preempted jobs go back to the
	// queue (requeued with their count, suspended ones too). 2. Then the
	// jobs whose actual runtime is up by the next now complete. The next
	// snapshot's lists are sized once (in the spare's arrays with Reuse):
	// the harness's own garbage (slices grown by appends, a copy of the
	// running jobs) set off collections during the plans it measures.
	for _, p := range d.Preemptions {
		preempted[p.JobID] = true
	}
	next.Running = slices.Grow(next.Running, len(s.Running)+len(d.Starts))
	var back []model.Job
	var done []model.Event
	run := func(r *model.Running) {
		end := r.Start.Add(q.runtime[r.Job.ID])
		if !end.After(now) {
			delete(q.runtime, r.Job.ID) // it never comes back
			j := r.Job
			done = append(done, model.Event{Kind: model.EventFinished, JobID: j.ID, Time: end, Start: r.Start,
				Job: &j, Alloc: r.Kind, Exit: model.ExitCompleted})
			return
		}
		next.Running = append(next.Running, *r)
	}
	for i := range s.Running {
		r := &s.Running[i]
		if preempted[r.Job.ID] {
			j := r.Job
			j.RequeueCount++
			back = append(back, j)
			evs = append(evs, model.Event{Kind: model.EventPreempted, JobID: j.ID, Time: s.Now, Start: r.Start, Job: &j})
			continue
		}
		run(r)
	}
	for _, st := range d.Starts {
		i, ok := queued[st.JobID]
		if !ok {
			panic(fmt.Sprintf("bench: start of %s, not queued", st.JobID))
		}
		r := model.Running{Job: s.Queued[i], Cards: st.Cards, Start: s.Now, Kind: st.Kind, ProtectedUntil: st.ProtectedUntil}
		gone[st.JobID] = true
		evs = append(evs, model.Event{Kind: model.EventStarted, JobID: st.JobID, Time: s.Now, Job: &r.Job, Alloc: st.Kind})
		run(&r)
	}
	evs = append(evs, done...)
	// 3. The queue: what did not start, the preempted, and arrivals that
	// keep it about as deep as it was asked to be.
	next.Queued = slices.Grow(next.Queued, max(len(s.Queued)+len(back), q.depth)+2)
	for _, j := range s.Queued {
		if !gone[j.ID] {
			next.Queued = append(next.Queued, j)
		}
	}
	next.Queued = append(next.Queued, back...)
	arrive := max(0, q.depth-len(next.Queued)) + q.r.IntN(3)
	from := len(next.Queued)
	for range arrive {
		j := drawJob(q.r, fmt.Sprintf("q-%d", q.next), 64)
		q.next++
		j.Submit = s.Now.Add(time.Duration(q.r.Int64N(int64(q.step))))
		q.runtime[j.ID] = q.draw(j.TimeLimit)
		next.Queued = append(next.Queued, j)
	}
	// Listed in submit order, as Slurm lists its queue (by job id): the
	// queue's order, and every decision, is the same in any listing (the
	// planners sort it), but not the cost of sorting it.
	slices.SortStableFunc(next.Queued[from:], func(a, b model.Job) int { return a.Submit.Compare(b.Submit) })
	slices.SortStableFunc(evs, func(a, b model.Event) int { return a.Time.Compare(b.Time) })
	q.s, q.spare = next, s
	return evs
}

// SeqResult is one policy's measurements over a sequence of cycles.
type SeqResult struct {
	Result
	Cycles int `json:"cycles"`
	// BudgetCuts counts the plans the time budget cut short (some queued
	// job left unconsidered); Fallbacks (in Result) those that fell back
	// for any reason, the LP's time included.
	BudgetCuts int `json:"budget_cuts"`
	// MeanCut is the mean number of jobs a cut plan left unconsidered.
	MeanCut float64 `json:"mean_cut"`
	MaxMs   float64 `json:"max_ms"`
	// Late counts the plans answered more than LateSlack past the budget:
	// the budget is a bound when none is.
	Late int `json:"late"`
	// Round is which round of a repeated measurement this is (from 1;
	// 0 when not repeated): see Summarize.
	Round int `json:"round,omitempty"`
	// Depth is the queue depth the sequence keeps (what was asked for);
	// Queued (in Result) the last snapshot's, which arrivals move by a
	// job or two.
	Depth int `json:"depth"`
}

// SeqSummary is one policy's measurements at one size over the rounds
// of a repeated measurement: on a shared machine one sequence's p99 moves
// by tens of percent from one run to the next, its median over rounds
// much less.
type SeqSummary struct {
	Policy string `json:"policy"`
	Cards  int    `json:"cards"`
	Queued int    `json:"queued"`
	Rounds int    `json:"rounds"`
	// P50ms and P99ms are the medians over the rounds of each round's
	// p50 and p99; P99Min and P99Max the lowest and highest p99.
	P50ms  float64 `json:"p50_ms"`
	P99ms  float64 `json:"p99_ms"`
	P99Min float64 `json:"p99_min_ms"`
	P99Max float64 `json:"p99_max_ms"`
	MaxMs  float64 `json:"max_ms"` // the highest latency of any round
	// RatioToEASY is the median over the rounds of each round's ratio
	// (its p99 over EASY's p99 in the same round); RatioMin and RatioMax
	// the lowest and highest. 0 when EASY was not measured.
	RatioToEASY float64 `json:"ratio_to_easy"`
	RatioMin    float64 `json:"ratio_min"`
	RatioMax    float64 `json:"ratio_max"`
	// Late, BudgetCuts and Fallbacks are summed over the rounds, as is
	// Cycles (the plans measured).
	Late       int `json:"late"`
	BudgetCuts int `json:"budget_cuts"`
	Fallbacks  int `json:"fallbacks"`
	Cycles     int `json:"cycles"`
}

// Summarize groups results by policy and size (cards, and the queue
// depth asked for), in the order each group first appears, and gives
// each group's medians over its rounds.
func Summarize(results []SeqResult) []SeqSummary {
	type key struct {
		policy        string
		cards, queued int
	}
	var order []key
	groups := map[key][]SeqResult{}
	for _, r := range results {
		k := key{r.Policy, r.Cards, r.Depth}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	out := make([]SeqSummary, 0, len(order))
	for _, k := range order {
		g := groups[k]
		sum := SeqSummary{Policy: k.policy, Cards: k.cards, Queued: k.queued, Rounds: len(g)}
		var p50, p99, ratio []float64
		for _, r := range g {
			p50, p99 = append(p50, r.P50ms), append(p99, r.P99ms)
			if r.RatioToEASY > 0 {
				ratio = append(ratio, r.RatioToEASY)
			}
			sum.MaxMs = max(sum.MaxMs, r.MaxMs)
			sum.Late += r.Late
			sum.BudgetCuts += r.BudgetCuts
			sum.Fallbacks += r.Fallbacks
			sum.Cycles += r.Cycles
		}
		sum.P50ms = median(p50)
		sum.P99ms, sum.P99Min, sum.P99Max = median(p99), slices.Min(p99), slices.Max(p99)
		if len(ratio) > 0 {
			sum.RatioToEASY, sum.RatioMin, sum.RatioMax = median(ratio), slices.Min(ratio), slices.Max(ratio)
		}
		out = append(out, sum)
	}
	return out
}

// median is the middle value of v (the mean of the middle two when even).
func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// LateSlack is how far past its budget a plan may answer before
// MeasureSequence counts it late: the slack of issue 15's bound for
// conservative (its budget + 10 ms), applied to every policy.
const LateSlack = 10 * time.Millisecond

// MeasureSequence plans warmup and then cycles consecutive cycles of a
// sequence with the planner, each under the budget, acting on each
// decision, and reports latency percentiles over the measured cycles, the
// budget cuts and fallbacks. The warm-up cycles (planned, acted on, not
// counted) take the generated snapshot to the planner's steady state: the
// first cycle starts a quarter-busy cluster's worth of jobs.
// Learning planners observe the events and decisions as a service's
// would. clock is the caller's (only cmd and tests own one).
func MeasureSequence(ctx context.Context, pl solver.Planner, q *Sequence, warmup, cycles int, budget time.Duration, clock func() time.Time) (SeqResult, error) {
	var res SeqResult
	lat := make([]float64, 0, cycles)
	cutJobs := 0
	for n := range warmup + cycles {
		s := q.Snapshot()
		cctx, cancel := context.WithDeadline(ctx, clock().Add(budget))
		t0 := clock()
		d, err := pl.Plan(cctx, s)
		el := clock().Sub(t0)
		cancel()
		if err != nil {
			return res, err
		}
		l, learns := pl.(solver.Learner)
		if learns {
			l.Decided(s, d)
		}
		for _, e := range q.Advance(d) {
			if learns {
				l.Observe(e)
			}
		}
		if n < warmup {
			continue
		}
		lat = append(lat, float64(el)/float64(time.Millisecond))
		if el > budget+LateSlack {
			res.Late++
		}
		if d.Stats.Fallback {
			res.Fallbacks++
		}
		if d.Stats.BudgetCut > 0 {
			res.BudgetCuts++
			cutJobs += d.Stats.BudgetCut
		}
		res.Candidates, res.LPRows, res.LPCols, res.Gap = d.Stats.Candidates, d.Stats.LPRows, d.Stats.LPCols, d.Stats.Gap
		res.Starts += len(d.Starts)
		for _, st := range d.Starts {
			if st.Kind == model.Backfill {
				res.Backfills++
			}
		}
		res.Running = len(s.Running)
	}
	if res.BudgetCuts > 0 {
		res.MeanCut = float64(cutJobs) / float64(res.BudgetCuts)
	}
	res.P50ms, res.P99ms, res.MaxMs = percentiles(lat)
	res.Runs, res.Cycles = cycles, cycles
	s := q.Snapshot()
	res.Cards, res.Queued, res.Depth = len(s.Cluster.Layout().Cards), len(s.Queued), q.depth
	return res, nil
}

// percentiles returns the p50, p99 (nearest rank) and maximum of lat.
func percentiles(lat []float64) (p50, p99, maxv float64) {
	if len(lat) == 0 {
		return 0, 0, 0
	}
	l := slices.Clone(lat)
	slices.Sort(l)
	rank := func(p float64) float64 { return l[min(len(l)-1, max(0, int(math.Ceil(p*float64(len(l))))-1))] }
	return rank(0.5), rank(0.99), l[len(l)-1]
}
