package slurm

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/huitian/huitian/proto/huitian/v1"
	"github.com/huitian/huitian/rm"
)

// Start starts a held job on the planned nodes:
//  1. check the plan still matches: the job is held and not started, the
//     nodes exist with those GPUs free of jobs huitian does not manage, and
//     the plan gives every node the job's GPUs per node;
//  2. one update: the node list, the begin time cleared (a requeued job
//     waits out Slurm's credential lifetime otherwise), the AdminComment
//     with huitian's words and the plan;
//  3. release it.
//
// STARTED is reported by a later snapshot, once Slurm runs it and the
// driver has read back the GPUs Slurm gave.
func (d *Driver) Start(ctx context.Context, s *pb.Start, spec *pb.JobSpec) ([]*pb.JobEvent, error) {
	// 1. The plan still matches.
	j, _, st, err := d.fresh(ctx, s.GetJobId())
	if err != nil {
		return nil, err
	}
	if baseState(j.State) != "PENDING" || st.Planned != nil || j.Priority != 0 {
		return nil, fmt.Errorf("%w: job %d is not held in the queue (%s)", ErrPlanStale, j.ID, j.State)
	}
	plan := allocsOf(s.GetCards())
	if len(plan) == 0 {
		return nil, fmt.Errorf("%w: the plan gives job %d no GPU", ErrPlanStale, j.ID)
	}
	per := int(spec.GetCards()) / max(len(plan), 1)
	if len(plan) != max(j.NodeCount, 1) {
		return nil, fmt.Errorf("%w: plan puts job %d on %d nodes, it asks for %d", ErrPlanStale, j.ID, len(plan), max(j.NodeCount, 1))
	}
	var names []string
	for _, a := range plan {
		n := d.nodes[a.Node]
		if n == nil {
			return nil, fmt.Errorf("%w: node %s is not in partition %s", ErrPlanStale, a.Node, d.cfg.Partition)
		}
		if len(a.GPUs) != per {
			return nil, fmt.Errorf("%w: plan gives job %d %d GPUs on %s, it takes %d per node", ErrPlanStale, j.ID, len(a.GPUs), a.Node, per)
		}
		for _, i := range a.GPUs {
			if i >= len(n.Cards) {
				return nil, fmt.Errorf("%w: GPU %s/%d does not exist", ErrPlanStale, a.Node, i)
			}
			if d.held[cardKey(a.Node, i)] {
				return nil, fmt.Errorf("%w: GPU %s/%d is held by a job huitian does not manage", ErrPlanStale, a.Node, i)
			}
		}
		names = append(names, a.Node)
	}

	// 2. Plan, words and begin time in one update.
	now := d.cfg.now()
	submit := st.Submit
	if submit == 0 {
		submit = j.SubmitTime
	}
	nst := state{Kind: kindCode(s.GetKind()), Planned: plan, StartedAt: now.Unix(), Submit: submit, Restarts: j.Restarts}
	if s.GetProtectedUntil() != nil {
		nst.Protected = s.GetProtectedUntil().AsTime().Unix()
	}
	if err := d.update(ctx, s.GetJobId(), "NodeList="+strings.Join(names, ","), "StartTime=now",
		"AdminComment="+adminComment(startWords(s, plan), nst)); err != nil {
		return nil, err
	}
	// 3. Release.
	if _, err := d.run(ctx, "scontrol", "release", s.GetJobId()); err != nil {
		return nil, err
	}
	return nil, nil
}

// startWords is what a started job's owner reads: "huitian: BACKFILL,
// keeps its GPUs ~2h10m, 4% preemption risk, protected until …; planned
// GPUs n1:0,1".
func startWords(s *pb.Start, plan []Alloc) string {
	kind := "REGULAR"
	if s.GetKind() == pb.AllocationKind_ALLOCATION_KIND_BACKFILL {
		kind = "BACKFILL"
	}
	w := "huitian: " + kind + ", keeps its GPUs "
	if r := s.GetExpectedRetention().AsDuration(); r > 0 {
		w += "~" + human(r)
	} else {
		w += "until done"
	}
	if kind == "BACKFILL" {
		w += fmt.Sprintf(", %d%% preemption risk", int(math.Round(100*s.GetPreemptionProbability())))
		if p := s.GetProtectedUntil(); p != nil {
			w += ", protected until " + clock(p.AsTime())
		}
	}
	return w + "; planned GPUs " + encodeAllocs(plan)
}

// human writes a duration as people do: 45s, 12m, 2h10m.
func human(d time.Duration) string {
	switch {
	case d < time.Minute:
		return strconv.Itoa(int(d.Round(time.Second)/time.Second)) + "s"
	case d < time.Hour:
		return strconv.Itoa(int(d.Round(time.Minute)/time.Minute)) + "m"
	}
	d = d.Round(time.Minute)
	h, m := int(d/time.Hour), int(d%time.Hour/time.Minute)
	if m == 0 {
		return strconv.Itoa(h) + "h"
	}
	return fmt.Sprintf("%dh%dm", h, m)
}

// clock writes a time as Slurm does (local time, seconds).
func clock(t time.Time) string { return t.Local().Format("2006-01-02T15:04:05") }

// Preempt makes a running job yield. SUSPEND with a notice: `scancel
// --signal=USR1 --full` ("checkpoint now"), the deadline in its
// AdminComment; the snapshot that finds the deadline passed, or the job
// ended, requeues it held. REQUEUE, or no notice: requeue it held at once.
// Slurm's own suspend is never used: a suspended job keeps its GPUs.
func (d *Driver) Preempt(ctx context.Context, p *pb.Preemption, _ *pb.RunningJob) ([]*pb.JobEvent, error) {
	j, words, st, err := d.fresh(ctx, p.GetJobId())
	if err != nil {
		return nil, err
	}
	bs := baseState(j.State)
	if st.Planned == nil || bs == "PENDING" {
		return nil, fmt.Errorf("%w: job %d is not running on a huitian start (%s)", ErrPlanStale, j.ID, j.State)
	}
	spec, _ := jobSpec(j, &st)
	now := d.cfg.now()
	if p.GetAction() == pb.PreemptionAction_PREEMPTION_ACTION_SUSPEND && p.GetNotice().AsDuration() > 0 {
		if st.Notice > 0 {
			return nil, nil // already under notice: the deadline stands
		}
		// The notice is recorded before the signal: a job that saves and
		// exits on USR1 at once is finished before a later update could
		// land (Slurm refuses to update a finished job), and without the
		// notice the driver would read its end as a completion, not as a
		// checkpoint to requeue (seen in the e2e on a loaded machine).
		st.Notice = now.Add(p.GetNotice().AsDuration()).Unix()
		w := fmt.Sprintf("huitian: SUSPEND notice: checkpoint now (USR1 sent); the GPUs are taken back at %s for job %s",
			clock(time.Unix(st.Notice, 0)), p.GetForJobId())
		if r := p.GetReason(); r != "" {
			w += "; " + r
		}
		if err := d.update(ctx, p.GetJobId(), "AdminComment="+adminComment(w, st)); err != nil {
			return nil, err
		}
		if _, err := d.run(ctx, "scancel", "--signal=USR1", "--full", p.GetJobId()); err != nil {
			// The notice stands: the GPUs are taken back when it runs out.
			return nil, fmt.Errorf("job %s under notice until %s, but USR1 was not delivered: %w", p.GetJobId(), clock(time.Unix(st.Notice, 0)), err)
		}
		return nil, nil
	}
	action := "Q"
	if p.GetAction() == pb.PreemptionAction_PREEMPTION_ACTION_SUSPEND {
		action = "S"
	}
	e, err := d.requeueNow(ctx, j, words, st, spec, action, now)
	if err != nil {
		return nil, err
	}
	return []*pb.JobEvent{e}, nil
}

// requeueNow requeues a job held (`scontrol requeuehold`: it frees the
// GPUs and waits, held, at its place) and records the preemption in its
// AdminComment until the service acknowledges it.
func (d *Driver) requeueNow(ctx context.Context, j *Job, _ string, st state, spec *pb.JobSpec, action string, now time.Time) (*pb.JobEvent, error) {
	id := strconv.FormatInt(j.ID, 10)
	if _, err := d.run(ctx, "scontrol", "requeuehold", id); err != nil {
		return nil, err
	}
	start := j.StartTime
	if start <= 0 || start > now.Unix() {
		start = st.StartedAt
	}
	y := &yield{Action: action, Time: now.Unix(), Start: start, Kind: st.Kind}
	nst := state{Submit: st.Submit, Yield: y}
	if nst.Submit == 0 {
		nst.Submit = j.SubmitTime
	}
	name := map[string]string{"S": "SUSPEND", "Q": "REQUEUE"}[action]
	w := fmt.Sprintf("huitian: preempted (%s) at %s; back in the queue at its place", name, clock(now))
	if err := d.update(ctx, id, "AdminComment="+adminComment(w, nst)); err != nil {
		// The requeue happened: the next snapshot sees the restart count
		// grown and records it then.
		d.log.Warn("record a preemption", "job", id, "error", err)
	}
	if spec != nil {
		spec.RequeueCount = int32(min(j.Restarts+1, 1<<20))
	}
	return &pb.JobEvent{JobId: id, Kind: pb.JobEventKind_JOB_EVENT_KIND_PREEMPTED, Time: timestamppb.New(time.Unix(y.Time, 0)), Spec: spec,
		Allocation: kindOf(y.Kind), StartTime: timestamppb.New(time.Unix(y.Start, 0)), Action: actionOf(action)}, nil
}

// EstimateSlack is how far a waiting job's estimated start may move before
// the driver writes its AdminComment again: a write per waiting job per
// cycle would load slurmctld.
const EstimateSlack = 30 * time.Second

// Inform tells each waiting job why it waits and when it is expected to
// start, in its AdminComment (`scontrol show job`, `squeue -O
// AdminComment`), when the reason changes or the estimate moves.
func (d *Driver) Inform(ctx context.Context, snap *rm.Snapshot, plan *pb.PlanResponse) error {
	type why struct {
		code, text string
		at         *timestamppb.Timestamp
	}
	waits := map[string]why{}
	for _, r := range plan.GetReservations() {
		gpus := "GPUs " + encodeAllocs(allocsOf(r.GetCards()))
		if len(r.GetCards()) == 0 { // a flat cluster's: a count
			gpus = fmt.Sprintf("%d GPUs", r.GetCount())
		}
		waits[r.GetJobId()] = why{"reserved", fmt.Sprintf("reserved %s (confidence %.2f)", gpus, r.GetConfidence()), r.GetStartTime()}
	}
	for _, p := range plan.GetPending() {
		w, reserved := waits[p.GetJobId()]
		if !reserved {
			w.code = strings.ToLower(strings.TrimPrefix(p.GetReason().String(), "PENDING_REASON_"))
			w.text = w.code + ": " + p.GetMessage()
		}
		if w.at == nil {
			w.at = p.GetEstimatedStart()
		}
		waits[p.GetJobId()] = w
	}
	ids := make([]string, 0, len(snap.Queued))
	for _, q := range snap.Queued {
		ids = append(ids, q.GetId())
	}
	slices.Sort(ids)
	var errs []error
	for _, id := range ids {
		w, ok := waits[id]
		if !ok {
			continue
		}
		j := d.jobs[id]
		if j == nil {
			continue
		}
		_, st, err := splitAdmin(j.AdminComment)
		if err != nil || st.Planned != nil {
			continue
		}
		est := int64(0)
		if w.at != nil {
			est = w.at.AsTime().Unix()
		}
		moved := (est == 0) != (st.Estimate == 0) || time.Duration(abs(est-st.Estimate))*time.Second >= EstimateSlack
		if w.code == st.Waiting && !moved {
			continue
		}
		st.Waiting, st.Estimate = w.code, est
		text := "huitian: waiting — " + w.text
		if est > 0 {
			text += "; estimated start " + clock(time.Unix(est, 0))
		}
		if err := d.update(ctx, id, "AdminComment="+adminComment(text, st)); err != nil {
			if errs = append(errs, err); len(errs) == 3 {
				return fmt.Errorf("%w (and the rest of this cycle's jobs left)", joinErrs(errs))
			}
		}
	}
	return joinErrs(errs)
}

func abs(x int64) int64 { return max(x, -x) }
