// Package demo is a small resource manager that drives a planning service
// through its real RPC path: it submits a built-in workload, plans every
// tick, starts what the plan starts, preempts what it preempts, finishes
// jobs when their (simulated) runtime is up, and reports every event. It
// exists so that `huitian serve --demo` shows live metrics, status and job
// insight.
package demo

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/huitian/huitian/proto/huitian/v1"
	"github.com/huitian/huitian/proto/huitian/v1/huitianv1connect"
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

// RM is the demo resource manager's state: plain data advanced by Step.
type RM struct {
	c       huitianv1connect.PlannerServiceClient
	base    *pb.Cluster
	opts    Options
	now     time.Time
	next    int
	queued  []*pb.JobSpec
	runtime map[string]time.Duration
	running map[string]*running
	log     *slog.Logger
}

// New returns a demo resource manager for the cluster, its clock at now.
func New(c huitianv1connect.PlannerServiceClient, cluster *pb.Cluster, now time.Time, o Options) *RM {
	if o.Tick <= 0 {
		o.Tick = time.Second
	}
	if o.Step <= 0 {
		o.Step = 5 * time.Minute
	}
	log := o.Log
	if log == nil {
		log = slog.Default()
	}
	return &RM{c: c, base: cluster, opts: o, now: now, runtime: map[string]time.Duration{}, running: map[string]*running{}, log: log}
}

// Run steps every Tick until ctx is done. A failed step is logged and the
// next tick tries again.
func (rm *RM) Run(ctx context.Context) error {
	t := time.NewTicker(rm.opts.Tick)
	defer t.Stop()
	for {
		if err := rm.Step(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			rm.log.Warn("demo cycle failed", "error", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Step runs one cycle: submit, finish what is due, plan, act, report.
func (rm *RM) Step(ctx context.Context) error {
	// 1. Submit the next job of the workload.
	tp := workload[rm.next%len(workload)]
	rm.next++
	id := fmt.Sprintf("demo-%04d", rm.next)
	rm.queued = append(rm.queued, &pb.JobSpec{
		Id: id, User: tp.user, JobClass: tp.class, Cards: tp.cards, CardsPerNode: tp.perNode, Topology: tp.topology,
		Comm: tp.comm, TimeLimit: durationpb.New(tp.limit), Checkpointable: tp.ckpt, Backfill: tp.backfill,
		CheckpointCost: durationpb.New(2 * time.Minute), MaxPreemptionProbability: 0.2, SubmitTime: timestamppb.New(rm.now),
	})
	rm.runtime[id] = tp.runtime

	// 2. Finish running jobs whose time is up (killed at their limit if
	// they run longer), and report progress of the others.
	var evs []*pb.JobEvent
	for _, id := range rm.runningIDs() {
		r := rm.running[id]
		startAt := r.rj.GetStartTime().AsTime()
		limit := r.rj.GetSpec().GetTimeLimit().AsDuration()
		end, exit := startAt.Add(r.runtime), pb.ExitState_EXIT_STATE_COMPLETED
		if r.runtime > limit {
			end, exit = startAt.Add(limit), pb.ExitState_EXIT_STATE_KILLED_AT_LIMIT
		}
		if !end.After(rm.now) {
			evs = append(evs, &pb.JobEvent{JobId: id, Kind: pb.JobEventKind_JOB_EVENT_KIND_FINISHED, Time: timestamppb.New(end),
				Spec: r.rj.GetSpec(), Allocation: r.rj.GetKind(), StartTime: r.rj.GetStartTime(), Exit: exit})
			delete(rm.running, id)
			continue
		}
		p := min(1, float64(rm.now.Sub(startAt))/float64(r.runtime))
		r.rj.Progress = p
		evs = append(evs, &pb.JobEvent{JobId: id, Kind: pb.JobEventKind_JOB_EVENT_KIND_PROGRESS, Time: timestamppb.New(rm.now), Progress: p})
	}
	if err := rm.report(ctx, evs); err != nil {
		return err
	}

	// 3. Plan.
	req := &pb.PlanRequest{Now: timestamppb.New(rm.now), Cluster: rm.base, Queued: rm.queued,
		Options: &pb.PlanOptions{Policy: rm.opts.Policy}}
	for _, id := range rm.runningIDs() {
		req.Running = append(req.Running, rm.running[id].rj)
	}
	resp, err := rm.c.Plan(ctx, connect.NewRequest(req))
	if err != nil {
		return fmt.Errorf("plan at %s: %w", rm.now.Format(time.RFC3339), err)
	}

	// 4. Act: preempt, then start; report both.
	evs = evs[:0]
	for _, p := range resp.Msg.GetPreemptions() {
		r, ok := rm.running[p.GetJobId()]
		if !ok {
			continue
		}
		delete(rm.running, p.GetJobId())
		spec := proto.CloneOf(r.rj.GetSpec())
		if p.GetAction() == pb.PreemptionAction_PREEMPTION_ACTION_REQUEUE {
			spec.RequeueCount++
		}
		rm.queued = append(rm.queued, spec)
		evs = append(evs, &pb.JobEvent{JobId: p.GetJobId(), Kind: pb.JobEventKind_JOB_EVENT_KIND_PREEMPTED, Time: timestamppb.New(rm.now),
			Spec: spec, Allocation: r.rj.GetKind(), StartTime: r.rj.GetStartTime(), Action: p.GetAction()})
	}
	byID := map[string]*pb.JobSpec{}
	for _, j := range rm.queued {
		byID[j.GetId()] = j
	}
	startedIDs := map[string]bool{}
	for _, st := range resp.Msg.GetStarts() {
		spec, ok := byID[st.GetJobId()]
		if !ok {
			continue
		}
		startedIDs[st.GetJobId()] = true
		rm.running[st.GetJobId()] = &running{
			rj: &pb.RunningJob{Spec: spec, Cards: st.GetCards(), StartTime: timestamppb.New(rm.now), Kind: st.GetKind(),
				ProtectedUntil: st.GetProtectedUntil()},
			runtime: rm.runtime[st.GetJobId()],
		}
		evs = append(evs, &pb.JobEvent{JobId: st.GetJobId(), Kind: pb.JobEventKind_JOB_EVENT_KIND_STARTED, Time: timestamppb.New(rm.now),
			Spec: spec, Allocation: st.GetKind()})
	}
	rm.queued = slices.DeleteFunc(rm.queued, func(j *pb.JobSpec) bool { return startedIDs[j.GetId()] })
	if err := rm.report(ctx, evs); err != nil {
		return err
	}
	rm.log.Debug("demo cycle", "now", rm.now, "running", len(rm.running), "queued", len(rm.queued),
		"started", len(resp.Msg.GetStarts()), "preempted", len(resp.Msg.GetPreemptions()))

	// 5. Advance the simulated clock.
	rm.now = rm.now.Add(rm.opts.Step)
	return nil
}

func (rm *RM) report(ctx context.Context, evs []*pb.JobEvent) error {
	if len(evs) == 0 {
		return nil
	}
	_, err := rm.c.ReportEvents(ctx, connect.NewRequest(&pb.ReportEventsRequest{ClusterId: rm.base.GetId(), Events: evs}))
	if err != nil {
		return fmt.Errorf("report events at %s: %w", rm.now.Format(time.RFC3339), err)
	}
	return nil
}

func (rm *RM) runningIDs() []string {
	ids := make([]string, 0, len(rm.running))
	for id := range rm.running {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Now is the demo's simulated clock.
func (rm *RM) Now() time.Time { return rm.now }

// Counts says how many jobs run and wait.
func (rm *RM) Counts() (running, queued int) { return len(rm.running), len(rm.queued) }
