package sim

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/sim/trace"
)

// Planner plans one cycle; solver.Planner and every baseline satisfy it.
// A decision is the simulator's once returned: the planner must not change
// it, or any slice in it, later. The simulator keeps each start's card
// list as the running job's cards in the next snapshots (a copy of every
// start's list was a quarter of what a flat 93,312-card replay allocated).
type Planner interface {
	Plan(ctx context.Context, s *model.Snapshot) (*model.Decision, error)
}

// CardsPlanner is a Planner that can take the running jobs' cards as the
// simulator holds them, by the cluster's dense card numbers
// (model.Layout), instead of resolving every running job's card
// references again each cycle: cards[i] is s.Running[i]'s cards, sorted,
// checked when the job started, and the same slice, never changed, for
// as long as the job holds them. On a flat 93,312-card machine the
// references' check was a tenth of a replay (solver/baseline.CardIDs).
// PlanCards' starts name their cards by number alone
// (model.Start.CardNumbers), and each such slice, once checked, is the
// job's cards[i]: the planner never modifies it once handed out, and
// knows its own start by it.
type CardsPlanner interface {
	Planner
	PlanCards(ctx context.Context, s *model.Snapshot, cards [][]int) (*model.Decision, error)
}

// ClaimNamer is a CardsPlanner whose count-only reservations may leave
// their card numbers unread (model.Reservation.CardNumbers nil, on a flat
// machine: tens of thousands of cards a cycle): ReservationNumbers reads
// those of reservation k of its last decision, for the simulator's one
// reader of them (heldByLent), which asks only while jobs lent into
// windows run.
type ClaimNamer interface {
	CardsPlanner
	ReservationNumbers(k int) []int
}

// Recycler is a CardsPlanner that takes back the card numbers its starts
// named (model.Start.CardNumbers) once the job has ended or yielded and
// the simulator has freed its cards: a later start's cards are numbered
// into the list instead of a new one (solver/baseline's Planner.Recycle).
// The simulator hands each list back once and keeps no reference to it.
type Recycler interface {
	CardsPlanner
	Recycle(cards []int)
}

// Learner is a planner with memory (solver.Learner): the simulator reports
// job events to it as they happen and each decision after executing it.
type Learner interface {
	Planner
	Observe(e model.Event)
	Decided(s *model.Snapshot, d *model.Decision)
}

// Estimates says what the planner is told of a job's runtime.
type Estimates uint8

const (
	// EstimatesUser gives the planner the trace's limit: the user's request.
	EstimatesUser Estimates = iota
	// EstimatesExact gives the planner the actual runtime as the limit:
	// perfect estimates, for the published "exact" rows.
	EstimatesExact
)

func (e Estimates) String() string {
	if e == EstimatesExact {
		return "exact"
	}
	return "user"
}

// ParseEstimates parses "user" or "exact".
func ParseEstimates(s string) (Estimates, error) {
	switch s {
	case "user", "":
		return EstimatesUser, nil
	case "exact":
		return EstimatesExact, nil
	}
	return 0, fmt.Errorf("sim: estimates %q: want user or exact", s)
}

// Cycles says when planning cycles run.
type Cycles uint8

const (
	// CyclesPerTime runs one planning cycle per distinct event time, after
	// every completion and then every arrival at that time: the default.
	CyclesPerTime Cycles = iota
	// CyclesPerEvent replays pyss, predictsim's simulator: at one instant,
	// the jobs that end at their limit end first (pyss's profile already
	// shows their processors free), then every arrival is followed by a
	// cycle of its own, then every termination in the order the jobs
	// started, skipping a cycle that would see nothing new. See README.md
	// for why this reproduces the published numbers exactly.
	CyclesPerEvent
	// CyclesInterval plans only every Config.Interval, as a backfill
	// scheduler that runs on a timer does (Slurm's bf_interval): jobs that
	// arrive and cards that free up between two cycles wait for the next.
	CyclesInterval
	// CyclesLoop plans as huitian's own resource-manager loop does
	// (rm.Loop, behind huitian kube and huitian slurm): every
	// Config.Interval, and between two ticks when a decision asked for a
	// cycle (its ReplanBy) and when a preempted job's cards come back (its
	// notice ran out, or its checkpoint is done). For a planner that asks
	// for nothing and preempts nothing (the baselines) it is
	// CyclesInterval.
	CyclesLoop
)

func (c Cycles) String() string {
	switch c {
	case CyclesPerEvent:
		return "per-event"
	case CyclesInterval:
		return "interval"
	case CyclesLoop:
		return "loop"
	}
	return "per-time"
}

// Ties says how the planner orders queued jobs submitted in the same second.
type Ties uint8

const (
	// TiesID leaves the planner's own order: same-second jobs by id
	// (model.CompareIDs), as every planner in solver orders them. The default.
	TiesID Ties = iota
	// TiesArrival orders same-second jobs by arrival (trace order), pyss's
	// convention: its waiting list is in the order of the submission
	// events. The simulator adds k nanoseconds to the snapshot's Submit of
	// the k-th job (from 0) to arrive in a second, so that a planner's
	// (submit, id) order is arrival order; results keep whole seconds.
	TiesArrival
)

func (t Ties) String() string {
	if t == TiesArrival {
		return "arrival"
	}
	return "id"
}

// ParseTies parses "id" or "arrival".
func ParseTies(s string) (Ties, error) {
	switch s {
	case "id", "":
		return TiesID, nil
	case "arrival":
		return TiesArrival, nil
	}
	return 0, fmt.Errorf("sim: ties %q: want id or arrival", s)
}

// DefaultEpoch is the wall-clock time of the trace's second 0 when
// Config.Epoch is zero.
var DefaultEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// ErrBadDecision is wrapped by every *DecisionError.
var ErrBadDecision = errors.New("sim: bad decision")

// DecisionError is a decision the simulator refused to execute: a start on
// a busy or unknown card, a job started twice, a start of a job that is not
// queued, a preemption of a job that is not running.
type DecisionError struct {
	Cycle  int       // 1-based planning cycle
	Time   time.Time // the cycle's now
	JobID  string
	Reason string
}

func (e *DecisionError) Error() string {
	return fmt.Sprintf("sim: cycle %d at %s: job %q: %s", e.Cycle, e.Time.UTC().Format(time.RFC3339), e.JobID, e.Reason)
}

func (e *DecisionError) Unwrap() error { return ErrBadDecision }

// Config configures one simulation run. The zero value, with a Cluster,
// runs with user estimates, kills jobs at their limit and plans on events only.
type Config struct {
	// Cluster is the machine; Run seals it once, which validates it. It is
	// only read during the run, but runs in parallel should each have their
	// own (Seal writes it).
	Cluster *model.Cluster
	// Options go into every snapshot (policy, reservation depth, …).
	Options   model.Options
	Estimates Estimates
	// KeepOverrun lets a job whose actual runtime exceeds its limit run to
	// its actual end, for traces where that is the recorded behaviour. By
	// default the resource manager kills it at its limit.
	KeepOverrun bool
	// Interval adds a planning cycle every Interval (whole seconds, counted
	// from the first submit) while jobs run or arrive; 0 plans on events only.
	Interval time.Duration
	// Cycles says when planning cycles run; the zero value is CyclesPerTime.
	Cycles Cycles
	// Ties orders same-second submits for the planner; the zero value,
	// TiesID, leaves them to the planner (by id). TiesArrival with
	// CyclesPerEvent is pyss's order.
	Ties Ties
	// Epoch is the wall-clock time of the trace's second 0; zero means
	// DefaultEpoch.
	Epoch time.Time
	// Series records busy cards and queue length over time (Result.Series).
	Series bool
	// Progress, when set, is called from the run's goroutine with the number
	// of jobs that finished since its last call.
	Progress func(finished int)
}

// Result is what a run measured.
type Result struct {
	// Jobs has one entry per trace job, in trace order.
	Jobs    []JobResult
	Summary Summary
	// Series is nil unless Config.Series.
	Series *Series
	// Classes are the cluster's job-size classes (Summary.Classes).
	Classes SizeClasses
	// Wall is how long the replay took, set by RunAll; 0 from Run.
	Wall time.Duration
}

type jobState uint8

const (
	stPending  jobState = iota // not submitted yet
	stQueued                   // waiting in the queue
	stRunning                  // holding cards and working
	stYielding                 // preempted: holding cards until the notice and the checkpoint end
	stDone                     // finished
)

// job is the simulator's state of one trace job. Its specification lives in
// the queued or running slice while it is there.
type job struct {
	runtime  int64 // work the job needs, seconds
	limit    int64 // its time limit as the planner knows it, seconds
	done     int64 // work kept by checkpoints
	segStart int64 // start of the current run
	restore  int64 // restore time at the start of the current run
	cards    []int // its cards while it holds them (never changed: a new start, a new slice)
	state    jobState
	gen      uint32
	mark     uint32 // decision stamp, to find a job started or preempted twice
	qpos     int32  // its position in the queue during a cycle's starts
	kind     model.AllocKind
	lent     bool                // started as backfill into a window (model.Start.WindowEnd)
	action   model.PreemptAction // while yielding
	ckpt     int64               // checkpoint cost, seconds
}

// engine is one run's state: the trace and the jobs' states, the planner,
// the event heap and the snapshot, and the three parts it keeps up to date
// as jobs start and end: who holds each card (cards), the queue and the
// running jobs (lists), and what the run measures over time (meter).
type engine struct {
	cfg      Config
	trace    []trace.Job
	pl       Planner
	learner  Learner
	recycler Recycler // pl's, when it takes back its starts' card lists
	lay      *model.Layout
	epoch    time.Time
	// wake is the pending planning cycle a decision asked for
	// (Decision.ReplanBy, see wakeAt); stale once passed.
	wake int64
	// lent counts the running jobs lent cards in a window (a backfill
	// start with a WindowEnd); heldJob is the reserved head that only such
	// jobs keep from its cards, since heldFrom (-1: none). See heldByLent.
	lent     int
	heldJob  int32
	heldFrom int64

	// reporter is pl as a StatusReporter with Config.Series, else nil.
	reporter StatusReporter

	js  []job
	res []JobResult

	cards cardOwners
	lists jobLists
	meter accounting

	stamp uint32 // the current decision's stamp (job.mark)
	heap  eventHeap
	next  int // next trace job to arrive
	// secFirst is the first trace job submitted in the second of the last
	// arrival (for TiesArrival).
	secFirst int32
	snap     model.Snapshot
	cycles   int
	endBuf   []perEventEnd
	runCards [][]int // the running jobs' cards for a CardsPlanner, reused
}

// Run replays jobs (sorted by submit, as trace readers return them) on
// cfg.Cluster with planner pl and returns every job's outcome and the
// aggregate metrics. Jobs that never start (the cluster can never hold them,
// or the planner never starts them) are counted in Summary.NeverStarted.
//
// Run executes each decision exactly: starts on the cards named, preemptions
// as suspend or requeue; reservations are the planner's own business. A
// decision it cannot execute is an error wrapping ErrBadDecision. When pl is
// a solver.Learner it receives every job event in time order and, after each
// executed decision, the snapshot and the decision; the snapshot is valid
// only during that call.
func Run(ctx context.Context, jobs []trace.Job, pl Planner, cfg Config) (*Result, error) {
	e, err := newEngine(jobs, pl, cfg)
	if err != nil {
		return nil, err
	}
	if err := e.run(ctx); err != nil {
		return nil, err
	}
	return e.result(), nil
}

func newEngine(jobs []trace.Job, pl Planner, cfg Config) (*engine, error) {
	if cfg.Cluster == nil {
		return nil, errors.New("sim: config: cluster must be set")
	}
	if pl == nil {
		return nil, errors.New("sim: planner must be set")
	}
	if cfg.Interval < 0 {
		return nil, fmt.Errorf("sim: config: interval %v: want ≥ 0", cfg.Interval)
	}
	if cfg.Interval%time.Second != 0 {
		return nil, fmt.Errorf("sim: config: interval %v: want whole seconds", cfg.Interval)
	}
	if cfg.Ties > TiesArrival {
		return nil, fmt.Errorf("sim: config: ties %d: want TiesID or TiesArrival", cfg.Ties)
	}
	if (cfg.Cycles == CyclesInterval || cfg.Cycles == CyclesLoop) && cfg.Interval == 0 {
		return nil, fmt.Errorf("sim: config: %s cycles need an interval > 0", cfg.Cycles)
	}
	if cfg.Cycles > CyclesLoop {
		return nil, fmt.Errorf("sim: config: cycles %d: want per-time, per-event, interval or loop", cfg.Cycles)
	}
	for i := 1; i < len(jobs); i++ {
		if jobs[i].Submit < jobs[i-1].Submit {
			return nil, fmt.Errorf("sim: job %d (%q) submitted at %d s, before job %d at %d s: jobs must be sorted by submit", i, jobs[i].ID, jobs[i].Submit, i-1, jobs[i-1].Submit)
		}
	}
	// Sealed once (ParseCluster seals what it builds): sealing again
	// validated and laid out a flat 93,312-node machine anew per replay.
	if !cfg.Cluster.Sealed() {
		if err := cfg.Cluster.Seal(); err != nil {
			return nil, fmt.Errorf("sim: cluster: %w", err)
		}
	}
	e := &engine{
		cfg:     cfg,
		trace:   jobs,
		pl:      pl,
		lay:     cfg.Cluster.Layout(),
		epoch:   cfg.Epoch,
		js:      make([]job, len(jobs)),
		res:     make([]JobResult, len(jobs)),
		lists:   jobLists{inQueue: map[string]int32{}, inRun: map[string]int32{}},
		meter:   accounting{statT: -1, queuedT: -1},
		heldJob: -1,
	}
	if e.epoch.IsZero() {
		e.epoch = DefaultEpoch
	}
	e.learner, _ = pl.(Learner)
	e.recycler, _ = pl.(Recycler)
	if cfg.Series {
		e.reporter, _ = pl.(StatusReporter)
	}
	e.cards = newCardOwners(e.lay)
	for i := range jobs {
		tj := &jobs[i]
		if tj.Runtime <= 0 {
			return nil, fmt.Errorf("sim: job %d (%q): runtime %d s: want > 0", i, tj.ID, tj.Runtime)
		}
		j := &e.js[i]
		j.runtime = tj.Runtime
		j.limit = tj.Limit
		if cfg.Estimates == EstimatesExact {
			j.limit = tj.Runtime
		}
		if j.limit <= 0 {
			return nil, fmt.Errorf("sim: job %d (%q): no time limit (read the trace with an estimate rule, or use exact estimates)", i, tj.ID)
		}
		j.ckpt = seconds(tj.Spec.CheckpointCost)
		e.res[i] = JobResult{ID: tj.ID, Submit: tj.Submit, Start: -1, End: -1, Cards: tj.Spec.Cards, HeadStart: -1}
	}
	e.snap = model.Snapshot{Cluster: cfg.Cluster, Options: cfg.Options}
	// The simulator reads no waiting job's reason or estimated start: its
	// planners skip them (Options.Brief), and decide the same.
	e.snap.Options.Brief = true
	if cfg.Series && len(jobs) > 0 {
		e.meter.series = newSeriesRec(jobs[0].Submit)
	}
	return e, nil
}

// seconds rounds a duration up to whole seconds.
func seconds(d time.Duration) int64 {
	s := int64(d / time.Second)
	if d%time.Second > 0 {
		s++
	}
	return s
}

func (e *engine) at(t int64) time.Time { return e.epoch.Add(time.Duration(t) * time.Second) }

// run is the event loop: at each distinct time, every completion, then
// every arrival, then one planning cycle.
func (e *engine) run(ctx context.Context) error {
	interval := int64(e.cfg.Interval / time.Second)
	var nextTick int64 = -1
	var last int64
	idleTick := false // the last tick's cycle left nothing running
	if interval > 0 && len(e.trace) > 0 {
		nextTick = e.trace[0].Submit
	}
	for iter := 0; ; iter++ {
		// 1. The next time anything happens. A wake asked for by an
		// earlier decision and since superseded, or with nothing queued
		// to plan, is no reason for a cycle.
		for e.heap.len() > 0 && e.heap.top().kind == evWake && (e.heap.top().t != e.wake || len(e.lists.queued) == 0) {
			e.heap.pop()
		}
		t := int64(-1)
		if e.heap.len() > 0 {
			t = e.heap.top().t
		}
		if e.next < len(e.trace) && (t < 0 || e.trace[e.next].Submit < t) {
			t = e.trace[e.next].Submit
		}
		// Ticks go on while anything runs or is to arrive, and while jobs
		// wait unless the last tick planned them on an idle cluster and
		// left it idle (a requeue can leave the queue so at the end).
		ticking := nextTick >= 0 && (e.next < len(e.trace) || len(e.lists.running) > 0 || len(e.lists.queued) > 0 && !idleTick)
		if ticking && (t < 0 || nextTick < t) {
			t = nextTick
		}
		if t < 0 {
			break
		}
		// The state since the last event time holds until t.
		e.meter.queueTime(t, e.cards.busy, e.cards.usable)
		last = t
		if iter&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if e.cfg.Cycles == CyclesPerEvent {
			if err := e.perEvent(ctx, t); err != nil {
				return err
			}
			if ticking && nextTick == t {
				nextTick += interval
				if len(e.lists.queued) > 0 {
					if err := e.plan(ctx, t); err != nil {
						return err
					}
				}
				idleTick = len(e.lists.running) == 0
			}
			if e.meter.series != nil {
				e.meter.series.step(t, e.cards.busy, len(e.lists.queued))
			}
			continue
		}
		// 2. Completions, notices running out, checkpoints done.
		asked := false // a wake, or a preempted job's cards back (CyclesLoop)
		for e.heap.len() > 0 && e.heap.top().t == t {
			ev := e.heap.pop()
			switch {
			case ev.kind == evWake:
				asked = true // the superseded ones were dropped above
			case ev.kind == evYield || ev.kind == evRelease:
				asked = asked || ev.gen == e.js[ev.job].gen
			}
			e.handle(ev)
		}
		// 3. Arrivals.
		for e.next < len(e.trace) && e.trace[e.next].Submit == t {
			if err := e.arrive(int32(e.next), t); err != nil {
				return err
			}
			e.next++
		}
		tick := ticking && nextTick == t
		if tick {
			nextTick += interval
		}
		// 4. One planning cycle (with interval cycles, only on a tick; with
		// the loop's, on a tick or when asked).
		plan := tick
		switch e.cfg.Cycles {
		case CyclesInterval:
		case CyclesLoop:
			plan = tick || asked
		default:
			plan = true
		}
		if len(e.lists.queued) > 0 && plan {
			if err := e.plan(ctx, t); err != nil {
				return err
			}
		}
		if tick {
			idleTick = len(e.lists.running) == 0
		}
		if e.meter.series != nil {
			e.meter.series.step(t, e.cards.busy, len(e.lists.queued))
		}
	}
	e.meter.account(last)
	if e.cfg.Progress != nil && e.meter.progress > 0 {
		e.cfg.Progress(e.meter.progress)
		e.meter.progress = 0
	}
	return nil
}

// perEvent handles everything at t the way pyss does. pyss orders events at
// one instant submissions first, then terminations in the order the jobs
// started, and plans after each; its profile already shows free the
// processors of jobs that reach their estimate at t, before their
// termination is handled. So: jobs that end at their limit (and other heap
// events) end first; then each arrival is followed by a pass; then, in the
// order the jobs started, each job that ends before its limit ends and is
// followed by a pass, and a job that ended at its limit is followed by a
// pass only when none ran at t yet (one would see nothing new).
func (e *engine) perEvent(ctx context.Context, t int64) error {
	// 1. Every heap event at t, in heap order: ends in start order (end
	// events are pushed when a job starts). Ends at the limit are handled
	// now, early ends later.
	ends := e.endBuf[:0]
	dirty := false // something changed since the last pass
	for e.heap.len() > 0 && e.heap.top().t == t {
		ev := e.heap.pop()
		if ev.kind == evWake {
			dirty = true // the planner asked for a pass now
			continue
		}
		if ev.gen != e.js[ev.job].gen {
			continue // stale
		}
		early := ev.kind == evEnd && t < e.plannedEnd(ev.job)
		if ev.kind == evEnd {
			ends = append(ends, perEventEnd{ev: ev, early: early})
		}
		if !early {
			e.handle(ev)
			dirty = true
		}
	}
	// 2. Each arrival, then a pass.
	for e.next < len(e.trace) && e.trace[e.next].Submit == t {
		if err := e.arrive(int32(e.next), t); err != nil {
			return err
		}
		e.next++
		if err := e.plan(ctx, t); err != nil {
			return err
		}
		dirty = false
	}
	// 3. Each end in start order, then a pass if it changed anything.
	for _, end := range ends {
		if end.early {
			e.handle(end.ev)
			dirty = true
		}
		if dirty && len(e.lists.queued) > 0 {
			if err := e.plan(ctx, t); err != nil {
				return err
			}
			dirty = false
		}
	}
	if dirty && len(ends) == 0 && len(e.lists.queued) > 0 {
		// Only notices and checkpoints at t (pyss has none): one pass.
		if err := e.plan(ctx, t); err != nil {
			return err
		}
	}
	clear(ends)
	e.endBuf = ends[:0]
	return nil
}

// perEventEnd is a job's end at the current instant, in per-event cycles.
type perEventEnd struct {
	ev    event
	early bool // before its limit: its cards are held until it is handled
}

// maxReplans bounds the cycles at one instant that a planner can cause by
// preempting jobs without notice (each such cycle is followed by another).
const maxReplans = 1000

// plan runs a planning cycle at t, and another as long as the last one
// freed cards at once (a preemption without notice): a resource manager
// plans again when cards come free.
func (e *engine) plan(ctx context.Context, t int64) error {
	for n := 0; ; n++ {
		if n == maxReplans {
			return fmt.Errorf("sim: at %s: the planner preempted jobs without notice in %d cycles in a row", e.at(t).UTC().Format(time.RFC3339), n)
		}
		released, err := e.cycle(ctx, t)
		if err != nil || !released || len(e.lists.queued) == 0 {
			return err
		}
	}
}

// plannedEnd is when the planner expects a running job to end: its start
// plus the limit it was given.
func (e *engine) plannedEnd(ji int32) int64 {
	j := &e.js[ji]
	return j.segStart + j.restore + max(j.limit-j.done, 0)
}

func (e *engine) arrive(ji int32, t int64) error {
	tj := &e.trace[ji]
	if _, dup := e.lists.inQueue[tj.ID]; dup {
		return fmt.Errorf("sim: job %d: id %q is also a queued job's", ji, tj.ID)
	}
	if _, dup := e.lists.inRun[tj.ID]; dup {
		return fmt.Errorf("sim: job %d: id %q is also a running job's", ji, tj.ID)
	}
	spec := tj.Spec
	spec.ID = tj.ID
	spec.Submit = e.at(tj.Submit)
	if e.cfg.Ties == TiesArrival {
		if ji == 0 || e.trace[ji-1].Submit != tj.Submit {
			e.secFirst = ji
		}
		spec.Submit = spec.Submit.Add(time.Duration(ji - e.secFirst))
	}
	spec.TimeLimit = time.Duration(e.js[ji].limit) * time.Second
	e.js[ji].state = stQueued
	if spec.Cards <= e.cards.usable {
		e.meter.queuedFit++
	}
	e.lists.queued = append(e.lists.queued, spec)
	e.lists.qidx = append(e.lists.qidx, ji)
	e.lists.inQueue[tj.ID] = ji
	return nil
}

// requeue puts a preempted job back in the queue at its original submit time.
func (e *engine) requeue(ji int32, spec model.Job) {
	e.js[ji].state = stQueued
	sub := e.trace[ji].Submit
	pos, _ := slices.BinarySearchFunc(e.lists.qidx, ji, func(q, target int32) int {
		if s := e.trace[q].Submit; s != sub {
			if s < sub {
				return -1
			}
			return 1
		}
		return int(q - target)
	})
	if spec.Cards <= e.cards.usable {
		e.meter.queuedFit++
	}
	e.lists.queued = slices.Insert(e.lists.queued, pos, spec)
	e.lists.qidx = slices.Insert(e.lists.qidx, pos, ji)
	e.lists.inQueue[spec.ID] = ji
}

// handle executes one heap event.
func (e *engine) handle(ev event) {
	if ev.kind == evWake {
		return // the cycle at its time is the point
	}
	j := &e.js[ev.job]
	if ev.gen != j.gen {
		return // the job changed state since
	}
	switch ev.kind {
	case evEnd:
		e.finish(ev.job, ev.t)
	case evYield:
		e.yield(ev.job, ev.t)
	case evRelease:
		e.release(ev.job, ev.t)
	}
}

// segment returns the end of a run starting at t and whether the job is
// killed at its limit then.
func (e *engine) segment(j *job, t int64) (end int64, killed bool) {
	work := j.runtime - j.done
	budget := max(j.limit-j.done, 0)
	if !e.cfg.KeepOverrun && work > budget {
		return t + j.restore + budget, true
	}
	return t + j.restore + work, false
}

func (e *engine) freeCards(ji int32, t int64) {
	j := &e.js[ji]
	if j.lent {
		j.lent = false
		e.lent--
	}
	e.cards.free(j.cards)
	e.meter.acc.busyCardSeconds += float64(len(j.cards)) * float64(t-j.segStart)
	if e.recycler != nil {
		e.recycler.Recycle(j.cards)
	}
}

// finish ends a job's run at t: it completed, or was killed at its limit.
func (e *engine) finish(ji int32, t int64) {
	j := &e.js[ji]
	_, killed := e.segment(j, j.segStart)
	e.freeCards(ji, t)
	pos := e.lists.runPos(ji)
	r := e.lists.running[pos]
	e.lists.running = slices.Delete(e.lists.running, pos, pos+1)
	e.lists.ridx = slices.Delete(e.lists.ridx, pos, pos+1)
	delete(e.lists.inRun, r.Job.ID)
	j.state = stDone
	j.gen++
	res := &e.res[ji]
	res.End = t
	res.Run = j.done + (t - j.segStart - j.restore)
	res.Exit = model.ExitCompleted
	if killed {
		res.Exit = model.ExitKilledAtLimit
	}
	j.cards = nil
	if e.learner != nil {
		spec := r.Job
		e.learner.Observe(model.Event{
			Kind: model.EventFinished, JobID: spec.ID, Time: e.at(t), Job: &spec,
			Alloc: j.kind, Start: r.Start, Exit: res.Exit,
		})
	}
	if e.cfg.Progress != nil {
		e.meter.progress++
		if e.meter.progress >= 1024 {
			e.cfg.Progress(e.meter.progress)
			e.meter.progress = 0
		}
	}
}

// yield stops a preempted job's work at t: a suspended job checkpoints and
// frees its cards CheckpointCost later, keeping its progress; a requeued job
// frees them now and loses its progress.
func (e *engine) yield(ji int32, t int64) {
	j := &e.js[ji]
	j.gen++ // its end event is now stale
	cards := float64(len(j.cards))
	switch j.action {
	case model.PreemptSuspend:
		j.done += max(0, t-j.segStart-j.restore)
		e.meter.acc.lostCardSeconds += cards * float64(j.ckpt)
		if j.ckpt > 0 {
			e.heap.push(event{t: t + j.ckpt, job: ji, gen: j.gen, kind: evRelease})
			return
		}
	default:
		e.meter.acc.lostCardSeconds += cards * float64(t-j.segStart+j.done)
		j.done = 0
	}
	e.release(ji, t)
}

// release frees a preempted job's cards at t and puts it back in the queue.
func (e *engine) release(ji int32, t int64) {
	j := &e.js[ji]
	e.freeCards(ji, t)
	pos := e.lists.runPos(ji)
	r := e.lists.running[pos]
	if e.lists.snapLive {
		// A notice of 0 s inside a cycle: change the slices after the
		// Learner has seen the snapshot.
		e.lists.released = append(e.lists.released, ji)
	} else {
		e.dropRunning(ji, pos)
	}
	j.gen++
	j.cards = nil
	e.res[ji].Preemptions++
	e.meter.acc.preemptions++
	if e.learner != nil {
		spec := r.Job
		e.learner.Observe(model.Event{
			Kind: model.EventPreempted, JobID: spec.ID, Time: e.at(t), Job: &spec,
			Alloc: j.kind, Start: r.Start, Action: j.action,
		})
	}
}

// dropRunning removes a released job from the running list and requeues it.
func (e *engine) dropRunning(ji int32, pos int) {
	j := &e.js[ji]
	spec := e.lists.running[pos].Job
	e.lists.running = slices.Delete(e.lists.running, pos, pos+1)
	e.lists.ridx = slices.Delete(e.lists.ridx, pos, pos+1)
	delete(e.lists.inRun, spec.ID)
	spec.RequeueCount++
	j.restore = 0
	if j.action == model.PreemptSuspend {
		j.restore = j.ckpt
	}
	spec.TimeLimit = time.Duration(max(j.restore+j.limit-j.done, 1)) * time.Second
	e.requeue(ji, spec)
}
