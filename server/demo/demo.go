// Package demo is a small resource manager that drives a planning service
// through its real RPC path: it submits a built-in workload, and as one more
// driver of the rm loop it starts what the plan starts, preempts what it
// preempts (a job keeps its cards until its notice runs out), finishes jobs
// when their (simulated) runtime is up, and reports every event. It exists
// so that `huitian serve --demo` shows, within its first minute, what
// backfill under huitian does: reservations kept, idle cards of every class
// lent, and backfill jobs suspended or requeued when a reserved job needs
// their cards. Each of those is told as it happens, one line each.
package demo

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/huitian/huitian/proto/huitian/v1"
	"github.com/huitian/huitian/proto/huitian/v1/huitianv1connect"
	"github.com/huitian/huitian/rm"
)

// Options tune the demo.
type Options struct {
	// Tick is the real time between cycles (default 1s).
	Tick time.Duration
	// Step is the simulated time one tick advances (default 5 minutes).
	Step time.Duration
	// Policy plans the cycles; unspecified takes the service's default.
	Policy pb.Policy
	// Log receives the loop's lines (slog.Default when nil).
	Log *slog.Logger
	// Out receives one line, in words, for each thing an operator would
	// want to see as it happens: a reservation made, a reserved job
	// starting, a backfill start and the idle capacity it uses, a
	// preemption with its notice, a job yielding. Nil: none.
	Out io.Writer
}

type running struct {
	rj      *pb.RunningJob
	runtime time.Duration
	// yieldAt is when the job gives its cards back, once a preemption's
	// notice runs out (zero: not told to yield); action is how.
	yieldAt time.Time
	action  pb.PreemptionAction
}

// RM is the demo resource manager: an rm.Driver whose cluster is plain
// data and whose clock advances Step per cycle.
type RM struct {
	loop *rm.Loop
	base *pb.Cluster
	opts Options

	mu      sync.Mutex // guards the fields below: the loop writes them, Now and Counts read them
	start   time.Time
	now     time.Time
	cycled  bool // a snapshot was taken: the next one advances the clock
	next    int  // jobs submitted so far
	queued  []*pb.JobSpec
	runtime map[string]time.Duration
	running map[string]*running
	tell    teller
}

// New returns a demo resource manager for the cluster, its clock at now,
// planning with the service behind c.
func New(c huitianv1connect.PlannerServiceClient, cluster *pb.Cluster, now time.Time, o Options) *RM {
	if o.Tick <= 0 {
		o.Tick = time.Second
	}
	if o.Step <= 0 {
		o.Step = 5 * time.Minute
	}
	d := &RM{base: cluster, opts: o, start: now, now: now, runtime: map[string]time.Duration{}, running: map[string]*running{},
		tell: newTeller(o.Out, o.Step)}
	var plan *pb.PlanOptions
	if o.Policy != pb.Policy_POLICY_UNSPECIFIED {
		plan = &pb.PlanOptions{Policy: o.Policy}
	}
	d.loop = rm.New(c, d, rm.Options{Interval: o.Tick, Plan: plan, Log: o.Log})
	return d
}

// Run runs a cycle every Tick until ctx is done. A failed cycle is logged
// and the next tick tries again.
//
// The demo replays the same simulated morning every time: a service whose
// store already holds the demo's cluster remembers the earlier run, learns
// from it, and so plans this one differently. Start on an empty store to
// see the first minute as the README shows it.
func (d *RM) Run(ctx context.Context) error { return d.loop.Run(ctx) }

// Step runs one cycle: submit, finish what is due, plan, act, report.
func (d *RM) Step(ctx context.Context) error {
	_, err := d.loop.Cycle(ctx)
	return err
}

// Snapshot advances the simulated clock by Step (from the second cycle on),
// submits the jobs of the workload that have arrived, gives back the cards
// of jobs whose preemption notice ran out, finishes running jobs whose time
// is up (killed at their limit if they run longer) and reports the progress
// of the others.
func (d *RM) Snapshot(context.Context) (*rm.Snapshot, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cycled {
		d.now = d.now.Add(d.opts.Step)
	}
	d.cycled = true
	d.tell.flush(&d.tell.before, nil) // lines of a cycle that failed before its plan
	d.tell.flush(&d.tell.held, nil)

	// 1. Submit what has arrived.
	for {
		a := arrivalOf(d.next)
		if d.start.Add(a.at).After(d.now) {
			break
		}
		d.next++
		id := JobID(d.next)
		d.queued = append(d.queued, &pb.JobSpec{
			Id: id, User: a.user, JobClass: a.class, Cards: a.cards, CardsPerNode: a.perNode, Topology: a.topology,
			Comm: a.comm, TimeLimit: durationpb.New(a.limit), Checkpointable: a.ckpt, Backfill: a.backfill,
			CheckpointCost: durationpb.New(2 * time.Minute), MaxPreemptionProbability: 0.2, SubmitTime: timestamppb.New(d.start.Add(a.at)),
		})
		d.runtime[id] = a.runtime
	}

	// 2. Yield, finish, or report progress.
	s := &rm.Snapshot{Now: d.now, Cluster: d.base}
	for _, id := range d.runningIDs() {
		r := d.running[id]
		startAt := r.rj.GetStartTime().AsTime()
		limit := r.rj.GetSpec().GetTimeLimit().AsDuration()
		end, exit := startAt.Add(r.runtime), pb.ExitState_EXIT_STATE_COMPLETED
		if r.runtime > limit {
			end, exit = startAt.Add(limit), pb.ExitState_EXIT_STATE_KILLED_AT_LIMIT
		}
		switch {
		case !r.yieldAt.IsZero() && !r.yieldAt.After(d.now) && r.yieldAt.Before(end):
			s.Events = append(s.Events, d.yield(id, r, r.yieldAt))
			continue
		case !end.After(d.now):
			s.Events = append(s.Events, &pb.JobEvent{JobId: id, Kind: pb.JobEventKind_JOB_EVENT_KIND_FINISHED, Time: timestamppb.New(end),
				Spec: r.rj.GetSpec(), Allocation: r.rj.GetKind(), StartTime: r.rj.GetStartTime(), Exit: exit})
			delete(d.running, id)
			continue
		}
		p := min(1, float64(d.now.Sub(startAt))/float64(r.runtime))
		r.rj.Progress = p
		s.Events = append(s.Events, &pb.JobEvent{JobId: id, Kind: pb.JobEventKind_JOB_EVENT_KIND_PROGRESS, Time: timestamppb.New(d.now), Progress: p})
		s.Running = append(s.Running, proto.CloneOf(r.rj))
	}
	s.Queued = slices.Clone(d.queued)
	return s, nil
}

// yield takes a running job's cards back at t and puts it back in the
// queue: a suspended job resumes from its checkpoint later (what it has
// done is kept), a requeued one starts over with its requeue count raised
// (the service compensates it with priority). d.mu is held.
func (d *RM) yield(id string, r *running, t time.Time) *pb.JobEvent {
	delete(d.running, id)
	spec := proto.CloneOf(r.rj.GetSpec())
	if r.action == pb.PreemptionAction_PREEMPTION_ACTION_REQUEUE {
		spec.RequeueCount++
	} else if left := r.runtime - t.Sub(r.rj.GetStartTime().AsTime()); left > 0 {
		d.runtime[id] = left
	}
	d.queued = append(d.queued, spec)
	d.tell.yielded(t, spec, r)
	return &pb.JobEvent{JobId: id, Kind: pb.JobEventKind_JOB_EVENT_KIND_PREEMPTED, Time: timestamppb.New(t),
		Spec: spec, Allocation: r.rj.GetKind(), StartTime: r.rj.GetStartTime(), Action: r.action}
}

// Preempt tells the job to yield: it keeps its cards until the notice runs
// out (checkpointing, for a SUSPEND), then gives them back and returns to
// the queue; without a notice it yields at once. A job already told keeps
// the earlier deadline.
func (d *RM) Preempt(_ context.Context, p *pb.Preemption, _ *pb.RunningJob) ([]*pb.JobEvent, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	r, ok := d.running[p.GetJobId()]
	if !ok {
		return nil, fmt.Errorf("demo: %s is not running", p.GetJobId())
	}
	at := d.now.Add(p.GetNotice().AsDuration())
	if !r.yieldAt.IsZero() && !at.Before(r.yieldAt) {
		return nil, nil // already told: its deadline stands
	}
	r.yieldAt, r.action = at, p.GetAction()
	d.tell.preempted(d.now, p, r, d.queuedSpec(p.GetForJobId()))
	if at.After(d.now) {
		return nil, nil
	}
	return []*pb.JobEvent{d.yield(p.GetJobId(), r, d.now)}, nil
}

// Start runs the job on the planned cards from now.
func (d *RM) Start(_ context.Context, st *pb.Start, spec *pb.JobSpec) ([]*pb.JobEvent, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	i := slices.IndexFunc(d.queued, func(j *pb.JobSpec) bool { return j.GetId() == st.GetJobId() })
	if i < 0 {
		return nil, fmt.Errorf("demo: %s is not queued", st.GetJobId())
	}
	d.queued = slices.Delete(d.queued, i, i+1)
	d.running[st.GetJobId()] = &running{
		rj: &pb.RunningJob{Spec: spec, Cards: st.GetCards(), StartTime: timestamppb.New(d.now), Kind: st.GetKind(),
			ProtectedUntil: st.GetProtectedUntil()},
		runtime: d.runtime[st.GetJobId()],
	}
	d.tell.started(d.now, st, spec)
	return []*pb.JobEvent{{JobId: st.GetJobId(), Kind: pb.JobEventKind_JOB_EVENT_KIND_STARTED, Time: timestamppb.New(d.now),
		Spec: spec, Allocation: st.GetKind()}}, nil
}

// Inform reads the plan's reservations, to tell when one is made and
// whether its job starts on time.
func (d *RM) Inform(_ context.Context, snap *rm.Snapshot, plan *pb.PlanResponse) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.tell.planned(snap.Now, plan, d.queuedSpec)
	return nil
}

func (d *RM) queuedSpec(id string) *pb.JobSpec {
	for _, q := range d.queued {
		if q.GetId() == id {
			return q
		}
	}
	return nil
}

func (d *RM) runningIDs() []string {
	ids := make([]string, 0, len(d.running))
	for id := range d.running {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Now is the demo's simulated clock.
func (d *RM) Now() time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.now
}

// Counts says how many jobs run and wait.
func (d *RM) Counts() (running, queued int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.running), len(d.queued)
}
