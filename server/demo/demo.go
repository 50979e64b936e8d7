// Package demo is a small resource manager that drives a planning service
// through its real RPC path: it submits a built-in workload, and as one more
// driver of the rm loop it starts what the plan starts, preempts what it
// preempts, finishes jobs when their (simulated) runtime is up, and reports
// every event. It exists so that `huitian serve --demo` shows live metrics,
// status and job insight.
package demo

import (
	"context"
	"fmt"
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
	// Log receives a line per cycle (slog.Default when nil).
	Log *slog.Logger
}

// template is one kind of job in the workload.
type template struct {
	class    string
	user     string
	cards    int32
	perNode  int32
	topology pb.Topology
	comm     pb.Comm
	limit    time.Duration
	runtime  time.Duration // what it really runs
	ckpt     bool
	backfill pb.BackfillPreference
}

// workload is submitted in this order, one job per tick, round and round.
var workload = []template{
	{"training", "alice", 16, 8, pb.Topology_TOPOLOGY_SAME_SWITCH, pb.Comm_COMM_HIGH, 4 * time.Hour, 150 * time.Minute, true, pb.BackfillPreference_BACKFILL_PREFERENCE_OPT_OUT},
	{"evaluation", "bob", 1, 0, pb.Topology_TOPOLOGY_ANY, pb.Comm_COMM_NONE, time.Hour, 15 * time.Minute, false, pb.BackfillPreference_BACKFILL_PREFERENCE_ALLOW},
	{"preprocessing", "carol", 2, 0, pb.Topology_TOPOLOGY_SAME_NODE, pb.Comm_COMM_LOW, 90 * time.Minute, 35 * time.Minute, false, pb.BackfillPreference_BACKFILL_PREFERENCE_ALLOW},
	{"search", "dave", 4, 4, pb.Topology_TOPOLOGY_SAME_NODE, pb.Comm_COMM_LOW, 2 * time.Hour, 50 * time.Minute, true, pb.BackfillPreference_BACKFILL_PREFERENCE_LOW_RISK_ONLY},
	{"training", "erin", 8, 8, pb.Topology_TOPOLOGY_SAME_NVLINK_ISLAND, pb.Comm_COMM_HIGH, 3 * time.Hour, 100 * time.Minute, true, pb.BackfillPreference_BACKFILL_PREFERENCE_ALLOW},
	{"evaluation", "bob", 1, 0, pb.Topology_TOPOLOGY_ANY, pb.Comm_COMM_NONE, 30 * time.Minute, 40 * time.Minute, false, pb.BackfillPreference_BACKFILL_PREFERENCE_ALLOW},
	{"training", "alice", 24, 8, pb.Topology_TOPOLOGY_ANY, pb.Comm_COMM_HIGH, 6 * time.Hour, 200 * time.Minute, true, pb.BackfillPreference_BACKFILL_PREFERENCE_ALLOW},
	{"search", "dave", 2, 0, pb.Topology_TOPOLOGY_ANY, pb.Comm_COMM_NONE, time.Hour, 20 * time.Minute, false, pb.BackfillPreference_BACKFILL_PREFERENCE_ALLOW},
}

// FirstJobID is the id of the demo's first job (a 16-card training job).
const FirstJobID = "demo-0001"

type running struct {
	rj      *pb.RunningJob
	runtime time.Duration
}

// RM is the demo resource manager: an rm.Driver whose cluster is plain
// data and whose clock advances Step per cycle.
type RM struct {
	loop *rm.Loop
	base *pb.Cluster
	opts Options

	mu      sync.Mutex // guards the fields below: the loop writes them, Now and Counts read them
	now     time.Time
	cycled  bool // a snapshot was taken: the next one advances the clock
	next    int
	queued  []*pb.JobSpec
	runtime map[string]time.Duration
	running map[string]*running
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
	d := &RM{base: cluster, opts: o, now: now, runtime: map[string]time.Duration{}, running: map[string]*running{}}
	var plan *pb.PlanOptions
	if o.Policy != pb.Policy_POLICY_UNSPECIFIED {
		plan = &pb.PlanOptions{Policy: o.Policy}
	}
	d.loop = rm.New(c, d, rm.Options{Interval: o.Tick, Plan: plan, Log: o.Log})
	return d
}

// Run runs a cycle every Tick until ctx is done. A failed cycle is logged
// and the next tick tries again.
func (d *RM) Run(ctx context.Context) error { return d.loop.Run(ctx) }

// Step runs one cycle: submit, finish what is due, plan, act, report.
func (d *RM) Step(ctx context.Context) error {
	_, err := d.loop.Cycle(ctx)
	return err
}

// Snapshot advances the simulated clock by Step (from the second cycle on),
// submits the next job of the workload, finishes running jobs whose time is
// up (killed at their limit if they run longer) and reports the progress of
// the others.
func (d *RM) Snapshot(context.Context) (*rm.Snapshot, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cycled {
		d.now = d.now.Add(d.opts.Step)
	}
	d.cycled = true

	// 1. Submit the next job of the workload.
	tp := workload[d.next%len(workload)]
	d.next++
	id := fmt.Sprintf("demo-%04d", d.next)
	d.queued = append(d.queued, &pb.JobSpec{
		Id: id, User: tp.user, JobClass: tp.class, Cards: tp.cards, CardsPerNode: tp.perNode, Topology: tp.topology,
		Comm: tp.comm, TimeLimit: durationpb.New(tp.limit), Checkpointable: tp.ckpt, Backfill: tp.backfill,
		CheckpointCost: durationpb.New(2 * time.Minute), MaxPreemptionProbability: 0.2, SubmitTime: timestamppb.New(d.now),
	})
	d.runtime[id] = tp.runtime

	// 2. Finish what is due; report the progress of the others.
	s := &rm.Snapshot{Now: d.now, Cluster: d.base, Queued: slices.Clone(d.queued)}
	for _, id := range d.runningIDs() {
		r := d.running[id]
		startAt := r.rj.GetStartTime().AsTime()
		limit := r.rj.GetSpec().GetTimeLimit().AsDuration()
		end, exit := startAt.Add(r.runtime), pb.ExitState_EXIT_STATE_COMPLETED
		if r.runtime > limit {
			end, exit = startAt.Add(limit), pb.ExitState_EXIT_STATE_KILLED_AT_LIMIT
		}
		if !end.After(d.now) {
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
	return s, nil
}

// Preempt makes the job yield at once and requeues it (with its requeue
// count raised for a REQUEUE): the demo has no checkpoint to wait for.
func (d *RM) Preempt(_ context.Context, p *pb.Preemption, _ *pb.RunningJob) ([]*pb.JobEvent, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	r, ok := d.running[p.GetJobId()]
	if !ok {
		return nil, fmt.Errorf("demo: %s is not running", p.GetJobId())
	}
	delete(d.running, p.GetJobId())
	spec := proto.CloneOf(r.rj.GetSpec())
	if p.GetAction() == pb.PreemptionAction_PREEMPTION_ACTION_REQUEUE {
		spec.RequeueCount++
	}
	d.queued = append(d.queued, spec)
	return []*pb.JobEvent{{JobId: p.GetJobId(), Kind: pb.JobEventKind_JOB_EVENT_KIND_PREEMPTED, Time: timestamppb.New(d.now),
		Spec: spec, Allocation: r.rj.GetKind(), StartTime: r.rj.GetStartTime(), Action: p.GetAction()}}, nil
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
	return []*pb.JobEvent{{JobId: st.GetJobId(), Kind: pb.JobEventKind_JOB_EVENT_KIND_STARTED, Time: timestamppb.New(d.now),
		Spec: spec, Allocation: st.GetKind()}}, nil
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
