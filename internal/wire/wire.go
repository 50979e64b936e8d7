// Package wire converts between the API's wire types (proto/huitian/v1)
// and the model, once, at the edge: requests are validated against the
// contract's protovalidate rules and the model's cross-field rules, and
// every problem is reported with its field path.
package wire

import (
	"errors"
	"math"
	"time"

	"buf.build/go/protovalidate"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/huitian/huitian/model"
	pb "github.com/huitian/huitian/proto/huitian/v1"
)

// Problems runs the contract's protovalidate rules on a message, then the
// edge's own rules (Edge: ids, timestamps, durations), and returns their
// violations as model problems, at most one per field.
func Problems(m proto.Message) ([]model.Problem, error) {
	var out []model.Problem
	err := protovalidate.Validate(m)
	var verr *protovalidate.ValidationError
	switch {
	case err == nil:
	case errors.As(err, &verr):
		out = make([]model.Problem, 0, len(verr.Violations))
		for _, v := range verr.Violations {
			out = append(out, model.Problem{
				Field:   protovalidate.FieldPathString(v.Proto.GetField()),
				Message: v.Proto.GetMessage(),
			})
		}
	default:
		return nil, err
	}
	edge := Edge(m)
	if len(edge) == 0 {
		return out, nil
	}
	seen := make(map[string]bool, len(out))
	for _, p := range out {
		seen[p.Field] = true
	}
	for _, p := range edge {
		if !seen[p.Field] {
			seen[p.Field] = true
			out = append(out, p)
		}
	}
	return out, nil
}

// WithModelProblems returns the contract's problems (Problems) followed
// by those of the model's check (err, a *model.ValidationError, or nil)
// on fields the contract's do not name. An error that is not a
// validation error is returned as it is.
func WithModelProblems(probs []model.Problem, err error) ([]model.Problem, error) {
	if err == nil {
		return probs, nil
	}
	var mv *model.ValidationError
	if !errors.As(err, &mv) {
		return nil, err
	}
	seen := make(map[string]bool, len(probs))
	for _, p := range probs {
		seen[p.Field] = true
	}
	for _, p := range mv.Problems {
		if !seen[p.Field] {
			probs = append(probs, p)
		}
	}
	return probs, nil
}

// Snapshot validates a PlanRequest and converts it. Invalid input gives a
// *model.ValidationError (wrapping model.ErrInvalid) with every problem:
// the contract's first, then the model's cross-field ones on other fields.
func Snapshot(req *pb.PlanRequest) (*model.Snapshot, error) {
	probs, err := Problems(req)
	if err != nil {
		return nil, err
	}
	s := &model.Snapshot{
		Now:     ts(req.GetNow()),
		Cluster: Cluster(req.GetCluster()),
		Options: Options(req.GetOptions()),
	}
	if req.GetCluster() == nil {
		s.Cluster = nil
	}
	for _, r := range req.GetRunning() {
		s.Running = append(s.Running, Running(r))
	}
	for _, j := range req.GetQueued() {
		s.Queued = append(s.Queued, Job(j))
	}
	if probs, err = WithModelProblems(probs, s.Validate()); err != nil {
		return nil, err
	}
	if len(probs) > 0 {
		return nil, &model.ValidationError{Problems: probs}
	}
	return s, nil
}

func ts(t *timestamppb.Timestamp) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.AsTime()
}

func dur(d *durationpb.Duration) time.Duration {
	if d == nil {
		return 0
	}
	return d.AsDuration()
}

// Cluster converts a cluster.
func Cluster(c *pb.Cluster) *model.Cluster {
	out := &model.Cluster{ID: c.GetId()}
	for _, d := range c.GetDomains() {
		out.Domains = append(out.Domains, model.Domain{ID: d.GetId(), Kind: model.DomainKind(d.GetKind()), Parent: d.GetParent()})
	}
	for _, n := range c.GetNodes() {
		out.Nodes = append(out.Nodes, Node(n))
	}
	return out
}

// Node converts a node.
func Node(n *pb.Node) model.Node {
	nd := model.Node{Name: n.GetName(), Domains: n.GetDomains(), Unschedulable: n.GetUnschedulable()}
	for _, c := range n.GetCards() {
		cd := model.Card{
			Index: int(c.GetIndex()), UUID: c.GetUuid(), Model: c.GetModel(), MemBytes: c.GetMemoryBytes(),
			NUMA: int(c.GetNumaNode()), PCIBusID: c.GetPciBusId(), Island: c.GetNvlinkIsland(), Unhealthy: c.GetUnhealthy(),
		}
		for _, l := range c.GetNvlinks() {
			cd.NVLinks = append(cd.NVLinks, model.NVLink{Peer: int(l.GetPeerIndex()), Links: int(l.GetLinks())})
		}
		nd.Cards = append(nd.Cards, cd)
	}
	return nd
}

// Job converts a job specification. Unspecified enums take their documented
// defaults: topology ANY, communication NONE, backfill ALLOW.
func Job(j *pb.JobSpec) model.Job {
	out := model.Job{
		ID: j.GetId(), User: j.GetUser(), Class: j.GetJobClass(), Cards: int(j.GetCards()),
		CardsPerNode: int(j.GetCardsPerNode()), TimeLimit: dur(j.GetTimeLimit()),
		Checkpointable: j.GetCheckpointable(), CheckpointCost: dur(j.GetCheckpointCost()),
		MaxPreemptProb: j.GetMaxPreemptionProbability(), Priority: int(j.GetPriority()),
		Submit: ts(j.GetSubmitTime()), RequeueCount: int(j.GetRequeueCount()), CardModel: j.GetCardModel(),
	}
	switch j.GetTopology() {
	case pb.Topology_TOPOLOGY_SAME_NODE:
		out.Topology = model.TopologySameNode
	case pb.Topology_TOPOLOGY_SAME_NVLINK_ISLAND:
		out.Topology = model.TopologySameIsland
	case pb.Topology_TOPOLOGY_SAME_SWITCH:
		out.Topology = model.TopologySameSwitch
	}
	switch j.GetComm() {
	case pb.Comm_COMM_LOW:
		out.Comm = model.CommLow
	case pb.Comm_COMM_HIGH:
		out.Comm = model.CommHigh
	}
	switch j.GetBackfill() {
	case pb.BackfillPreference_BACKFILL_PREFERENCE_OPT_OUT:
		out.Backfill = model.BackfillOptOut
	case pb.BackfillPreference_BACKFILL_PREFERENCE_LOW_RISK_ONLY:
		out.Backfill = model.BackfillLowRiskOnly
	}
	return out
}

// Running converts a running job.
func Running(r *pb.RunningJob) model.Running {
	out := model.Running{
		Job: Job(r.GetSpec()), Start: ts(r.GetStartTime()), Progress: r.GetProgress(),
		ProtectedUntil: ts(r.GetProtectedUntil()),
	}
	if r.GetKind() == pb.AllocationKind_ALLOCATION_KIND_BACKFILL {
		out.Kind = model.Backfill
	}
	for _, c := range r.GetCards() {
		out.Cards = append(out.Cards, model.CardRef{Node: c.GetNode(), Index: int(c.GetIndex())})
	}
	return out
}

var policies = map[pb.Policy]model.Policy{
	pb.Policy_POLICY_FCFS:           model.PolicyFCFS,
	pb.Policy_POLICY_EASY:           model.PolicyEASY,
	pb.Policy_POLICY_CONSERVATIVE:   model.PolicyConservative,
	pb.Policy_POLICY_EASY_SJBF:      model.PolicyEASYSJBF,
	pb.Policy_POLICY_HYBRID_DEPTH:   model.PolicyHybridDepth,
	pb.Policy_POLICY_HUITIAN:        model.PolicyHuitian,
	pb.Policy_POLICY_HUITIAN_GREEDY: model.PolicyHuitianGreedy,
}

// Policy converts a policy; unspecified maps to model.PolicyDefault.
func Policy(p pb.Policy) model.Policy { return policies[p] }

// PolicyProto converts a model policy back.
func PolicyProto(p model.Policy) pb.Policy {
	for k, v := range policies {
		if v == p {
			return k
		}
	}
	return pb.Policy_POLICY_UNSPECIFIED
}

// Options converts plan options.
func Options(o *pb.PlanOptions) model.Options {
	return model.Options{
		Policy: Policy(o.GetPolicy()), ReservationDepth: int(o.GetReservationDepth()),
		TimeBudget: dur(o.GetTimeBudget()), OverrunGrace: dur(o.GetOverrunGrace()),
	}
}

// CardRefs converts card references.
func CardRefs(rs []model.CardRef) []*pb.CardRef {
	out := make([]*pb.CardRef, len(rs))
	for i, r := range rs {
		out[i] = &pb.CardRef{Node: r.Node, Index: int32(r.Index)}
	}
	return out
}

// TimeOrNil converts a time, the zero time to none.
func TimeOrNil(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

// Response converts a decision.
func Response(d *model.Decision) *pb.PlanResponse {
	out := &pb.PlanResponse{ReplanBy: TimeOrNil(d.ReplanBy), Stats: &pb.SolverStats{
		Solver: d.Stats.Solver, LpBound: d.Stats.LPBound, Objective: d.Stats.Objective, Gap: d.Stats.Gap,
		SolveTime: durationpb.New(d.Stats.SolveTime), Fallback: d.Stats.Fallback,
		Candidates: int32(d.Stats.Candidates), LpRows: int32(d.Stats.LPRows), LpCols: int32(d.Stats.LPCols),
	}}
	for _, s := range d.Starts {
		st := &pb.Start{
			JobId: s.JobID, Cards: CardRefs(s.Cards), Kind: AllocKindProto(s.Kind),
			PreemptionProbability: Probability(s.PreemptProb), ProtectedUntil: TimeOrNil(s.ProtectedUntil),
			Fragment: pb.FragmentClass(s.Fragment), Reason: s.Reason,
		}
		if !s.Unbounded {
			st.ExpectedRetention = durationpb.New(s.ExpectedRetention)
		}
		out.Starts = append(out.Starts, st)
	}
	for _, r := range d.Reservations {
		out.Reservations = append(out.Reservations, &pb.Reservation{
			JobId: r.JobID, Cards: CardRefs(r.Cards), StartTime: timestamppb.New(r.Start), Confidence: r.Confidence,
			Count: int32(r.Count),
		})
	}
	for _, p := range d.Preemptions {
		out.Preemptions = append(out.Preemptions, &pb.Preemption{
			JobId: p.JobID, Action: pb.PreemptionAction(p.Action), Notice: durationpb.New(p.Notice),
			Reason: p.Reason, ForJobId: p.ForJobID,
		})
	}
	for _, p := range d.Pending {
		out.Pending = append(out.Pending, &pb.Pending{
			JobId: p.JobID, Reason: pb.PendingReason(p.Reason), Message: p.Message, EstimatedStart: TimeOrNil(p.EstimatedStart),
		})
	}
	return out
}

// Probability rounds a probability for people and the wire: 6 decimal
// places, so that a sum's rounding error (3.55e-17) reads 0.
func Probability(p float64) float64 { return math.Round(p*1e6) / 1e6 }

// AllocKindProto converts an allocation kind.
func AllocKindProto(k model.AllocKind) pb.AllocationKind {
	if k == model.Backfill {
		return pb.AllocationKind_ALLOCATION_KIND_BACKFILL
	}
	return pb.AllocationKind_ALLOCATION_KIND_REGULAR
}
