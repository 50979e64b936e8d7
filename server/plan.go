package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/huitian/huitian/internal/wire"
	"github.com/huitian/huitian/model"
	pb "github.com/huitian/huitian/proto/huitian/v1"
	"github.com/huitian/huitian/solver"
)

// statusReporter is implemented by a planner that keeps a tuner or measures
// backfill (the huitian planner). The baselines do not, and GetStatus and
// /metrics then leave those parts absent.
type statusReporter interface {
	PlannerStatus() model.PlannerStatus
}

// estimateExplainer is implemented by a planner that can say how it
// estimates a job's runtime (the huitian planner). GetJobInsight's
// estimate is empty for planners that do not.
type estimateExplainer interface {
	Estimate(j *model.Job) model.RuntimeEstimate
}

// errPanic marks a planner panic.
var errPanic = errors.New("server: planner panicked")

// Plan plans one cycle for the request's cluster.
func (s *Server) Plan(ctx context.Context, req *connect.Request[pb.PlanRequest]) (*connect.Response[pb.PlanResponse], error) {
	start := time.Now()
	// 1. Validate (contract and cross-field rules) and convert.
	snap, err := wire.Snapshot(req.Msg)
	if err != nil {
		return nil, fromModelError(err)
	}
	// 2. Resolve the policy and the time budget.
	if snap.Options.Policy == model.PolicyDefault {
		snap.Options.Policy = s.cfg.DefaultPolicy
	}
	// The default budget is the LP's: a planner without one (the
	// baselines) is not cut at it, so that its plan stays the same under
	// load, but it stops at the service's cap. A budget the request gives
	// binds every planner.
	limit := snap.Options.TimeBudget
	if snap.Options.TimeBudget == 0 {
		snap.Options.TimeBudget = s.cfg.DefaultTimeBudget
		limit = s.cfg.DefaultTimeBudget
		if !spendsBudget(snap.Options.Policy) {
			limit = s.cfg.MaxTimeBudget
		}
	}
	key := plannerKey{policy: snap.Options.Policy, depth: snap.Options.ReservationDepth}
	c := s.cluster(snap.Cluster.ID)

	// 3. Plan. A Learner holds the cluster's lock throughout, so that no
	// event reaches it mid-cycle; a stateless planner plans unlocked.
	c.mu.Lock()
	locked := true
	snap.Cluster = c.sameCluster(snap.Cluster)
	defer func() {
		if locked {
			c.mu.Unlock()
		}
	}()
	pl, err := s.plannerLocked(c, key)
	if err != nil {
		if errors.Is(err, solver.ErrUnimplemented) {
			return nil, connect.NewError(connect.CodeUnimplemented, err)
		}
		if errors.Is(err, ErrStoredData) {
			return nil, connect.NewError(connect.CodeDataLoss, err)
		}
		return nil, connect.NewError(connect.CodeInternal, fmt.Errorf("planner for %s: %w", key.policy, err))
	}
	learner, isLearner := pl.(solver.Learner)
	if !isLearner {
		c.mu.Unlock()
		locked = false
	}
	pctx, cancel := context.WithTimeout(ctx, limit)
	d, err := s.runPlanner(pctx, pl, snap)
	cancel()
	if !locked {
		c.mu.Lock()
		locked = true
	}
	if err != nil {
		if errors.Is(err, errPanic) {
			// The planner may be half-updated: drop it, so that the next
			// cycle builds a fresh one (replaying the event log).
			if c.planners[key] == pl {
				delete(c.planners, key)
			}
			s.met.panics.WithLabelValues(req.Spec().Procedure).Inc()
			s.log.Error("planner panicked", "cluster", logID(c.id), "policy", key.policy.String(), "request_id", requestID(ctx), "error", err.Error())
			return nil, connect.NewError(connect.CodeInternal, fmt.Errorf("internal error in the %s planner (request id %s)", key.policy, requestID(ctx)))
		}
		if ctx.Err() != nil {
			code := connect.CodeCanceled
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				code = connect.CodeDeadlineExceeded
			}
			return nil, connect.NewError(code, ctx.Err())
		}
		return nil, connect.NewError(connect.CodeInternal, fmt.Errorf("plan: %w", err))
	}
	d.Stats.SolveTime = time.Since(start)

	// 4. Build the answer and check that it can be sent: nothing changes
	// (no Learner told, no record stored) unless the answer goes out.
	resp := wire.Response(d)
	if err := wire.CheckResponse(resp); err != nil {
		return nil, connect.NewError(connect.CodeInternal, fmt.Errorf("the %s planner's decision cannot be encoded (request id %s): %w", key.policy, requestID(ctx), err))
	}
	if err := ctx.Err(); err != nil {
		code := connect.CodeCanceled
		if errors.Is(err, context.DeadlineExceeded) {
			code = connect.CodeDeadlineExceeded
		}
		return nil, connect.NewError(code, fmt.Errorf("the caller's deadline passed or it left before the plan was ready: %w", err))
	}
	var status *model.PlannerStatus
	if sr, ok := pl.(statusReporter); ok {
		st := sr.PlannerStatus()
		status = &st
	}
	lp := buildLastPlan(snap, d, pl, status, c.last.Load())
	var decided []byte
	if isLearner {
		decided, err = json.Marshal(&decidedRecord{Policy: key.policy, Depth: key.depth, Now: snap.Now, Options: snap.Options, Decision: *d})
		if err != nil {
			return nil, connect.NewError(connect.CodeInternal, fmt.Errorf("encode decision: %w", err))
		}
	}

	// 5. Record the plan, then tell a Learner what was decided. The record
	// is best-effort: when it cannot be stored (a full disk) the plan is
	// still answered, the Learner is not told (so that it stays what a
	// replay of the log rebuilds), and the failure is logged and counted.
	recorded := true
	if err := s.recordPlanLocked(c, lp, decided); err != nil {
		recorded = false
		s.storeFailed("put_plan", err)
		s.log.Error("plan answered but not recorded: GetJobInsight and the tuner miss it until the store takes writes again",
			"cluster", logID(c.id), "policy", key.policy.String(), "request_id", requestID(ctx), "error", err.Error())
	} else {
		s.storeOK()
		s.trimLocked(c, snap.Now)
	}
	if recorded && isLearner {
		if err := s.decide(c, key, learner, snap, d); err != nil {
			return nil, err
		}
		if c.plans.Load()%memoryEvery == 0 {
			s.saveMemoryLocked(c)
		}
		if sr, ok := pl.(statusReporter); ok {
			st := sr.PlannerStatus()
			status = &st
			header := proto.CloneOf(lp.header)
			header.Tuner, header.Measures = nil, nil
			statusProto(header, status)
			lp = &lastPlan{header: header, jobs: lp.jobs, cards: lp.cards}
		}
	}
	c.last.Store(lp)
	c.gen.Add(1)
	c.plans.Add(1)
	c.mu.Unlock()
	locked = false

	s.met.decided(c.id, key.policy, d, time.Since(start).Seconds())
	s.met.status(c.id, status)
	out := connect.NewResponse(resp)
	if !recorded {
		out.Header().Set(DegradedHeader, "plan not recorded: the store refused the write")
	}
	return out, nil
}

// DegradedHeader is set on a Plan answer that the service could not
// record (the store refused the write): the plan is valid, but
// GetJobInsight and the tuner do not know it.
const DegradedHeader = "Huitian-Degraded"

// decide tells a Learner the decision, recovering a panic: the planner is
// then dropped, to be rebuilt from the log. c.mu is held.
func (s *Server) decide(c *cluster, key plannerKey, l solver.Learner, snap *model.Snapshot, d *model.Decision) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if c.planners[key] == solver.Planner(l) {
				delete(c.planners, key)
			}
			s.log.Error("planner panicked taking its decision; dropped, to be rebuilt from the event log",
				"cluster", logID(c.id), "policy", key.policy.String(), "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			err = connect.NewError(connect.CodeInternal, fmt.Errorf("internal error in the %s planner", key.policy))
		}
	}()
	l.Decided(snap, d)
	return nil
}

// usesLP says whether a policy's planner spends its time budget on an LP
// (and falls back to its greedy pass when the budget runs out).
func spendsBudget(p model.Policy) bool {
	return p == model.PolicyHuitian || p == model.PolicyHuitianGreedy
}

// runPlanner calls the planner, turning a panic into an error that wraps
// errPanic and carries the stack.
func (s *Server) runPlanner(ctx context.Context, pl solver.Planner, snap *model.Snapshot) (d *model.Decision, err error) {
	defer func() {
		if r := recover(); r != nil {
			d, err = nil, fmt.Errorf("%w: %v\n%s", errPanic, r, debug.Stack())
		}
	}()
	d, err = pl.Plan(ctx, snap)
	if err == nil && d == nil {
		err = errors.New("planner returned no decision")
	}
	return d, err
}

// recordPlanLocked stores the plan record (and a Learner's decision, to
// replay its Decided call after a restart). c.mu is held.
func (s *Server) recordPlanLocked(c *cluster, lp *lastPlan, decided []byte) error {
	rec, err := encodePlan(lp)
	if err != nil {
		return fmt.Errorf("encode plan: %w", err)
	}
	return s.store.PutPlan(c.id, rec, decided)
}

// buildLastPlan turns a snapshot and its decision into per-job insight: the
// running jobs as the snapshot has them, then the queue as the decision
// places it. prev is the cluster's previous plan (nil: none): a running
// backfill job keeps the preemption probability and fragment class its
// start was planned with, which no later snapshot carries.
func buildLastPlan(snap *model.Snapshot, d *model.Decision, pl solver.Planner, status *model.PlannerStatus, prev *lastPlan) *lastPlan {
	now := timestamppb.New(snap.Now)
	jobs := make(map[string]*pb.JobInsight, len(snap.Running)+len(snap.Queued))
	get := func(id string) *pb.JobInsight {
		in, ok := jobs[id]
		if !ok {
			in = &pb.JobInsight{JobId: id, PlanTime: now}
			jobs[id] = in
		}
		return in
	}
	// A running backfill job keeps its cards until the first reservation
	// that claims one of them (ties: the reservation of the smaller job id).
	type claimant struct {
		start time.Time
		job   string
	}
	claim := map[model.CardRef]claimant{}
	for _, r := range d.Reservations {
		cards := r.Cards
		if len(cards) == 0 && len(r.CardNumbers) > 0 {
			// A count, waiting for these cards (huitian on a pool).
			cards = snap.Cluster.Layout().Refs(r.CardNumbers)
		}
		for _, c := range cards {
			if t, ok := claim[c]; !ok || r.Start.Before(t.start) || r.Start.Equal(t.start) && model.CompareIDs(r.JobID, t.job) < 0 {
				claim[c] = claimant{r.Start, r.JobID}
			}
		}
	}
	firstClaim := func(cards []model.CardRef) (claimant, bool) {
		var first claimant
		found := false
		for _, c := range cards {
			if t, ok := claim[c]; ok && (!found || t.start.Before(first.start) || t.start.Equal(first.start) && model.CompareIDs(t.job, first.job) < 0) {
				first, found = t, true
			}
		}
		return first, found
	}
	for _, r := range snap.Running {
		in := get(r.Job.ID)
		describe(in, &r.Job)
		in.State = pb.JobState_JOB_STATE_RUNNING
		in.Kind = wire.AllocKindProto(r.Kind)
		in.Cards = wire.CardRefs(r.Cards)
		in.StartTime = wire.TimeOrNil(r.Start)
		in.Progress = r.Progress
		if r.ProtectedUntil.After(snap.Now) {
			in.ProtectedUntil = timestamppb.New(r.ProtectedUntil)
		}
		in.Message = "running on " + r.Kind.String() + " resources"
		if r.Kind == model.Backfill {
			if first, ok := firstClaim(r.Cards); ok {
				in.ExpectedRetention = durationpb.New(max(first.start.Sub(snap.Now), 0))
				in.ClaimedBy = first.job
			} else {
				in.RetentionUnbounded = true
			}
			if prev != nil {
				if p, ok := prev.jobs[r.Job.ID]; ok && p.GetKind() == pb.AllocationKind_ALLOCATION_KIND_BACKFILL {
					in.PreemptionProbability = p.GetPreemptionProbability()
					in.Fragment = p.GetFragment()
				}
			}
		}
	}
	for i := range snap.Queued {
		j := &snap.Queued[i]
		in := get(j.ID)
		describe(in, j)
		in.State = pb.JobState_JOB_STATE_PENDING
		in.Kind = pb.AllocationKind_ALLOCATION_KIND_UNSPECIFIED
	}
	for i, p := range d.Pending {
		in := get(p.JobID)
		in.QueuePosition = int32(i + 1)
		in.PendingReason = pb.PendingReason(p.Reason)
		in.Message = p.Message
		in.EstimatedStart = wire.TimeOrNil(p.EstimatedStart)
	}
	for _, r := range d.Reservations {
		in := get(r.JobID)
		in.State = pb.JobState_JOB_STATE_RESERVED
		in.Cards = wire.CardRefs(r.Cards)
		in.EstimatedStart = timestamppb.New(r.Start)
		in.ReservationConfidence = wire.Probability(r.Confidence)
		if in.Message == "" {
			in.Message = fmt.Sprintf("holds a reservation from %s (confidence %.2f)", r.Start.UTC().Format(time.RFC3339), r.Confidence)
		}
		if in.PendingReason == pb.PendingReason_PENDING_REASON_UNSPECIFIED {
			in.PendingReason = pb.PendingReason_PENDING_REASON_RESERVED
		}
	}
	for _, st := range d.Starts {
		in := get(st.JobID)
		in.State = pb.JobState_JOB_STATE_STARTING
		in.Kind = wire.AllocKindProto(st.Kind)
		in.Cards = wire.CardRefs(st.Cards)
		in.PreemptionProbability = wire.Probability(st.PreemptProb)
		in.ProtectedUntil = wire.TimeOrNil(st.ProtectedUntil)
		in.Fragment = pb.FragmentClass(st.Fragment)
		in.Message = st.Reason
		in.PendingReason = pb.PendingReason_PENDING_REASON_UNSPECIFIED
		in.EstimatedStart = now
		in.ExpectedRetention, in.RetentionUnbounded, in.ClaimedBy = nil, false, ""
		in.ReservationConfidence = 0
		if !st.Unbounded {
			in.ExpectedRetention = durationpb.New(st.ExpectedRetention)
			if first, ok := firstClaim(st.Cards); ok && st.Kind == model.Backfill {
				in.ClaimedBy = first.job
			}
		} else if st.Kind == model.Backfill {
			in.RetentionUnbounded = true
		}
	}
	for _, p := range d.Preemptions {
		in := get(p.JobID)
		in.Message = fmt.Sprintf("must yield its cards (%s, notice %s) for %s: %s", p.Action, p.Notice, p.ForJobID, p.Reason)
	}
	if ex, ok := pl.(estimateExplainer); ok {
		explain := func(j *model.Job) {
			e := ex.Estimate(j)
			get(j.ID).Estimate = &pb.RuntimeEstimate{Source: e.Source, HistorySize: int32(e.Samples), Quantile: e.Quantile, Unreliable: e.Unreliable}
		}
		for i := range snap.Running {
			explain(&snap.Running[i].Job)
		}
		for i := range snap.Queued {
			explain(&snap.Queued[i])
		}
	}
	header := &pb.GetStatusResponse{
		ClusterId:            snap.Cluster.ID,
		LastPolicy:           wire.PolicyProto(snap.Options.Policy),
		LastPlanTime:         now,
		LastStats:            wire.Response(&model.Decision{Stats: d.Stats}).GetStats(),
		LastReservationDepth: int32(snap.Options.ReservationDepth),
		Fragments:            fragments(d),
	}
	if status != nil {
		statusProto(header, status)
	}
	return &lastPlan{header: header, jobs: jobs, cards: cardStatus(snap.Cluster, d.Idle)}
}

// encodePlan writes the header, then every job's insight in id order, each
// size-delimited.
func encodePlan(lp *lastPlan) ([]byte, error) {
	var b bytes.Buffer
	mo := protodelim.MarshalOptions{MarshalOptions: proto.MarshalOptions{Deterministic: true}}
	if _, err := mo.MarshalTo(&b, lp.header); err != nil {
		return nil, err
	}
	for _, id := range lp.sortedIDs() {
		if _, err := mo.MarshalTo(&b, lp.jobs[id]); err != nil {
			return nil, err
		}
	}
	return b.Bytes(), nil
}

func decodePlan(rec []byte) (*lastPlan, error) {
	r := bytes.NewReader(rec)
	// No message in the record is longer than the record: a damaged
	// length prefix is an error, not an allocation of what it claims
	// (unbounded, a prefix near 2^63 panicked the server as it loaded
	// its store; FuzzDecodePlan).
	uo := protodelim.UnmarshalOptions{MaxSize: int64(len(rec))}
	lp := &lastPlan{header: &pb.GetStatusResponse{}, jobs: map[string]*pb.JobInsight{}}
	if err := uo.UnmarshalFrom(r, lp.header); err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	for {
		in := &pb.JobInsight{}
		err := uo.UnmarshalFrom(r, in)
		if errors.Is(err, io.EOF) {
			return lp, nil
		}
		if err != nil {
			return nil, fmt.Errorf("job %d: %w", len(lp.jobs), err)
		}
		lp.jobs[in.GetJobId()] = in
	}
}

// describe copies what the job asked for into its insight.
func describe(in *pb.JobInsight, j *model.Job) {
	in.User, in.JobClass, in.RequestedCards = j.User, j.Class, int32(j.Cards)
}
