package rm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/huitian/huitian/client"
	pb "github.com/huitian/huitian/proto/huitian/v1"
	"github.com/huitian/huitian/proto/huitian/v1/huitianv1connect"
)

// Snapshot is what a resource manager sees at the start of a cycle.
type Snapshot struct {
	// Now is the resource manager's clock: huitian has none.
	Now time.Time
	// Cluster is every node and card, with a stable Cluster.Id.
	Cluster *pb.Cluster
	// Running are the jobs holding cards, with the kind and protection
	// huitian gave them when they started.
	Running []*pb.RunningJob
	// Queued is the whole queue, in any order.
	Queued []*pb.JobSpec
	// Events happened since the last snapshot (finished, progress, pods
	// running, a suspension carried out). The loop reports them before it
	// plans, so the plan learns from them.
	Events []*pb.JobEvent
}

// Driver is a resource manager as the loop sees it. Its methods are called
// from the loop's goroutine only, one at a time.
type Driver interface {
	// Snapshot returns the cluster as it is now.
	Snapshot(ctx context.Context) (*Snapshot, error)
	// Preempt makes a running job yield as p says (p.Action, p.Notice). It
	// returns the events that already happened (PREEMPTED when the job
	// yielded at once); a yield that takes the notice is reported by a
	// later Snapshot. An error skips this preemption in this cycle.
	Preempt(ctx context.Context, p *pb.Preemption, job *pb.RunningJob) ([]*pb.JobEvent, error)
	// Start starts a queued job now on exactly s.Cards. It returns the
	// events that already happened (STARTED when the job runs at once). An
	// error — the plan no longer matches the cluster, say — skips this
	// start; the next cycle plans again.
	Start(ctx context.Context, s *pb.Start, spec *pb.JobSpec) ([]*pb.JobEvent, error)
}

// Acknowledger is a Driver that wants to know which events the service
// acknowledged, so that it stops deriving them again (a driver that keeps its
// state in the cluster, not in memory, marks them there).
type Acknowledger interface {
	Acknowledged(ctx context.Context, events []*pb.JobEvent) error
}

// Informer is a Driver that shows users the plan: why a job waits, when it
// is expected to start, which jobs hold reservations.
type Informer interface {
	Inform(ctx context.Context, snap *Snapshot, plan *pb.PlanResponse) error
}

// Waker is a Driver that knows when something changed (a job submitted,
// one finished, cards given back): a value on Wakes asks for a cycle now,
// at least MinGap after the last one began. A resource manager that
// watches its cluster (Kubernetes informers) plans on its events then, not
// only on the interval.
type Waker interface {
	Wakes() <-chan struct{}
}

// Options tune a Loop.
type Options struct {
	// Interval is the longest time between cycle starts (default 10s). A
	// cycle comes sooner, no sooner than MinGap after the last one began,
	// when a plan asks for it (replan_by: a backfill job's protection or
	// window ends, a reservation comes within a job's notice), when the
	// notice of a preemption carried out runs out (its cards are back, and
	// the job they were freed for can start), or when a Waker driver says
	// something changed.
	Interval time.Duration
	// MinGap is the shortest time between cycle starts that replan_by, a
	// notice or a wake can ask for (default 1s; at most Interval).
	MinGap time.Duration
	// Plan is sent with every Plan request (policy, depth, time budget);
	// nil takes the service's defaults.
	Plan *pb.PlanOptions
	// Backoff retries ReportEvents (default client.DefaultBackoff, until
	// the cycle's context ends).
	Backoff client.Backoff
	// MaxEventsPerCall splits reports (default 1,000; the service takes
	// at most --max-events per call).
	MaxEventsPerCall int
	// Log gets a line per cycle (slog.Default when nil).
	Log *slog.Logger
}

// Loop runs cycles of a Driver against a planning service.
type Loop struct {
	c      huitianv1connect.PlannerServiceClient
	d      Driver
	o      Options
	log    *slog.Logger
	unsent []*pb.JobEvent // not yet acknowledged, sent first in the next cycle
	cid    string         // the cluster id of the unsent events
	// due are the times, on the snapshots' clock, when the notices of the
	// preemptions carried out run out, and which no snapshot has reached.
	due []time.Time
}

// New returns a loop that drives d against the service behind c.
func New(c huitianv1connect.PlannerServiceClient, d Driver, o Options) *Loop {
	if o.Interval <= 0 {
		o.Interval = 10 * time.Second
	}
	if o.MinGap <= 0 {
		o.MinGap = time.Second
	}
	o.MinGap = min(o.MinGap, o.Interval)
	if o.Backoff == (client.Backoff{}) {
		o.Backoff = client.DefaultBackoff
	}
	if o.MaxEventsPerCall <= 0 {
		o.MaxEventsPerCall = 1000
	}
	log := o.Log
	if log == nil {
		log = slog.Default()
	}
	return &Loop{c: c, d: d, o: o, log: log}
}

// Result is what one cycle did.
type Result struct {
	// Now is the snapshot's clock (zero when the cycle failed before it).
	Now time.Time
	// Plan is the service's answer (nil when the cycle failed before it).
	Plan *pb.PlanResponse
	// Started and Preempted count what the driver carried out.
	Started, Preempted int
	// Skipped are the planned actions the driver refused, by job id.
	Skipped map[string]error
	// Reported counts the events the service acknowledged this cycle.
	Reported int
	// Dropped counts events the service refused (a request that breaks a
	// rule gets the same answer every time, so it is logged and dropped
	// rather than blocking every later report).
	Dropped int
}

// Run runs a cycle at once and then every Interval until ctx is done, or
// sooner when a plan asks for it (its replan_by, measured on the
// snapshot's clock from the snapshot), a preemption's notice runs out, or
// a Waker driver says something changed: at least MinGap after the last
// cycle began. A failed cycle is logged and the next one tries again;
// events not yet acknowledged are kept and sent first. It returns nil when
// ctx ends.
func (l *Loop) Run(ctx context.Context) error {
	t := time.NewTimer(l.o.Interval) // Reset after each cycle (no stale fire: Go 1.23's timers)
	defer t.Stop()
	var wakes <-chan struct{}
	if w, ok := l.d.(Waker); ok {
		wakes = w.Wakes()
	}
	for {
		began := time.Now()
		res, err := l.Cycle(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			l.log.Warn("resource-manager cycle failed", "error", err)
		}
		t.Reset(time.Until(began.Add(l.wait(res))))
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			continue
		case <-wakes:
		}
		// Something changed: plan now, but not sooner than MinGap after
		// this cycle began (wait is never shorter than that).
		t.Reset(time.Until(began.Add(l.o.MinGap)))
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// wait is the time from the start of the cycle that gave res to the start
// of the next: Interval, or less when a notice runs out or the plan asks
// for a cycle sooner (at least MinGap). Both are on the snapshot's clock,
// measured from the snapshot, which the cycle took as it began.
func (l *Loop) wait(res *Result) time.Duration {
	wait := l.o.Interval
	if res.Now.IsZero() {
		return wait // no snapshot: nothing asked
	}
	sooner := func(t time.Time) { wait = min(wait, max(t.Sub(res.Now), l.o.MinGap)) }
	for _, t := range l.due {
		sooner(t)
	}
	if by := res.Plan.GetReplanBy(); by != nil {
		sooner(by.AsTime())
	}
	if wait < l.o.Interval {
		l.log.Debug("next cycle sooner", "in", wait, "replan_by", res.Plan.GetReplanBy().AsTime(),
			"replan_asked", res.Plan.GetReplanBy() != nil, "notices_due", len(l.due))
	}
	return wait
}

// ErrUnknownJob means the plan named a job the snapshot did not have.
var ErrUnknownJob = errors.New("rm: plan names a job not in the snapshot")

// Cycle runs one cycle: snapshot, report what happened, plan, preempt,
// start, report again, inform users.
func (l *Loop) Cycle(ctx context.Context) (*Result, error) {
	res := &Result{Skipped: map[string]error{}}

	// 1. Snapshot, and report what happened since the last one before
	// planning, so the plan learns from it.
	snap, err := l.d.Snapshot(ctx)
	if err != nil {
		return res, fmt.Errorf("snapshot: %w", err)
	}
	res.Now = snap.Now
	l.due = slices.DeleteFunc(l.due, func(t time.Time) bool { return !t.After(snap.Now) })
	cid := snap.Cluster.GetId()
	if err := l.report(ctx, res, cid, snap.Events); err != nil {
		return res, err
	}

	// 2. Plan.
	req := &pb.PlanRequest{Now: timestamppb.New(snap.Now), Cluster: snap.Cluster, Running: snap.Running, Queued: snap.Queued,
		Options: l.o.Plan}
	resp, err := l.c.Plan(ctx, connect.NewRequest(req))
	if err != nil {
		return res, fmt.Errorf("plan at %s: %w", snap.Now.Format(time.RFC3339), err)
	}
	plan := resp.Msg
	res.Plan = plan

	// 3. Preemptions first: cards must be on their way back before anything
	// is started on them.
	running := make(map[string]*pb.RunningJob, len(snap.Running))
	for _, r := range snap.Running {
		running[r.GetSpec().GetId()] = r
	}
	var evs []*pb.JobEvent
	for _, p := range plan.GetPreemptions() {
		r, ok := running[p.GetJobId()]
		if !ok {
			res.Skipped[p.GetJobId()] = ErrUnknownJob
			continue
		}
		e, err := l.d.Preempt(ctx, p, r)
		if err != nil {
			res.Skipped[p.GetJobId()] = err
			l.log.Warn("preemption skipped", "job", p.GetJobId(), "action", p.GetAction(), "error", err)
			continue
		}
		res.Preempted++
		l.due = append(l.due, snap.Now.Add(p.GetNotice().AsDuration()))
		evs = append(evs, e...)
	}

	// 4. Starts, on exactly the planned cards.
	queued := make(map[string]*pb.JobSpec, len(snap.Queued))
	for _, q := range snap.Queued {
		queued[q.GetId()] = q
	}
	for _, s := range plan.GetStarts() {
		spec, ok := queued[s.GetJobId()]
		if !ok {
			res.Skipped[s.GetJobId()] = ErrUnknownJob
			continue
		}
		e, err := l.d.Start(ctx, s, spec)
		if err != nil {
			res.Skipped[s.GetJobId()] = err
			l.log.Warn("start skipped", "job", s.GetJobId(), "error", err)
			continue
		}
		res.Started++
		evs = append(evs, e...)
	}

	// 5. Report what the actions did.
	if err := l.report(ctx, res, cid, evs); err != nil {
		return res, err
	}

	// 6. Tell users.
	if in, ok := l.d.(Informer); ok {
		if err := in.Inform(ctx, snap, plan); err != nil {
			l.log.Warn("inform users", "error", err)
		}
	}
	l.log.Debug("resource-manager cycle", "now", snap.Now, "running", len(snap.Running), "queued", len(snap.Queued),
		"started", res.Started, "preempted", res.Preempted, "skipped", len(res.Skipped), "reported", res.Reported)
	return res, nil
}

// report sends the events left from earlier cycles and evs, in batches,
// each retried until acknowledged. What is not acknowledged when ctx ends
// is kept for the next cycle.
func (l *Loop) report(ctx context.Context, res *Result, cid string, evs []*pb.JobEvent) error {
	if cid != l.cid && len(l.unsent) > 0 {
		// The driver renamed its cluster: the old events belong to the old id.
		if err := l.flush(ctx, res, l.cid); err != nil {
			return err
		}
	}
	l.cid = cid
	l.unsent = append(l.unsent, evs...)
	return l.flush(ctx, res, cid)
}

func (l *Loop) flush(ctx context.Context, res *Result, cid string) error {
	for len(l.unsent) > 0 {
		batch := l.unsent[:min(len(l.unsent), l.o.MaxEventsPerCall)]
		_, err := client.ReportEvents(ctx, l.c, &pb.ReportEventsRequest{ClusterId: cid, Events: batch}, l.o.Backoff)
		switch {
		case err == nil:
			res.Reported += len(batch)
			if a, ok := l.d.(Acknowledger); ok {
				if err := a.Acknowledged(ctx, batch); err != nil {
					l.log.Warn("mark events acknowledged", "error", err)
				}
			}
		case ctx.Err() == nil && !client.Retryable(err):
			res.Dropped += len(batch)
			l.log.Error("the service refused events; dropped", "cluster", cid, "events", len(batch), "error", err)
		default:
			return err
		}
		l.unsent = l.unsent[len(batch):]
	}
	l.unsent = nil
	return nil
}

// Unsent is how many events wait for the service's acknowledgement.
func (l *Loop) Unsent() int { return len(l.unsent) }
