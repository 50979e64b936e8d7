package kube

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	batchv1 "k8s.io/api/batch/v1"
	resourcev1 "k8s.io/api/resource/v1"

	pb "github.com/huitian/huitian/proto/huitian/v1"
)

// The label and annotations a user puts on a Job.
const (
	// LabelQueue marks a Job as huitian's: its value is the queue name.
	LabelQueue = "huitian.dev/queue"

	AnnUser           = "huitian.dev/user"                       // default: the namespace
	AnnClass          = "huitian.dev/class"                      // training, evaluation, …; default "batch"
	AnnCheckpointable = "huitian.dev/checkpointable"             // "true": can checkpoint and be suspended
	AnnCheckpointCost = "huitian.dev/checkpoint-cost"            // a Go duration: "2m"
	AnnBackfill       = "huitian.dev/backfill"                   // allow (default), opt-out, low-risk
	AnnMaxPreemptProb = "huitian.dev/max-preemption-probability" // [0,1], for low-risk
	AnnTopology       = "huitian.dev/topology"                   // any, same-node, same-nvlink-island, same-switch
	AnnComm           = "huitian.dev/comm"                       // none, low, high
	AnnPriority       = "huitian.dev/priority"                   // an integer
	AnnProgress       = "huitian.dev/progress"                   // set by the job itself: [0,1]
)

// The annotations the adapter writes: its state, kept on the Job.
const (
	AnnClaimTemplate  = "huitian.dev/claim-template"  // the user's claim template spec, as created (JSON)
	AnnCards          = "huitian.dev/cards"           // planned cards "node:0,1;node2:3"
	AnnAllocation     = "huitian.dev/allocation"      // regular or backfill
	AnnStartedAt      = "huitian.dev/started-at"      // when huitian started it (RFC 3339)
	AnnProtectedUntil = "huitian.dev/protected-until" // RFC 3339
	AnnRetention      = "huitian.dev/expected-retention"
	AnnPreemptProb    = "huitian.dev/preemption-probability"
	AnnPreemption     = "huitian.dev/preemption" // a notice in progress (JSON)
	AnnPreempted      = "huitian.dev/preempted"  // yielded, not yet acknowledged (JSON)
	AnnRequeueCount   = "huitian.dev/requeue-count"
	AnnReportedStart  = "huitian.dev/reported-start"    // the started-at the service acknowledged
	AnnReportedFinish = "huitian.dev/reported-finish"   // "true" once FINISHED is acknowledged
	AnnReportedProg   = "huitian.dev/reported-progress" // the progress the service acknowledged
	AnnWaiting        = "huitian.dev/waiting"           // why it waits, as last told
	AnnEstimatedStart = "huitian.dev/estimated-start"   // RFC 3339
	AnnInvalid        = "huitian.dev/invalid"           // why huitian cannot plan it, as last told

	// GatePlacement holds a multi-node job's pods until the adapter pins
	// each to its planned node.
	GatePlacement = "huitian.dev/placement"
	// LabelHostname pins a pod to a node.
	LabelHostname = "kubernetes.io/hostname"
)

// notice is a preemption in progress (AnnPreemption).
type notice struct {
	Action   string    `json:"action"` // SUSPEND or REQUEUE
	Deadline time.Time `json:"deadline"`
	For      string    `json:"for,omitempty"`
	Reason   string    `json:"reason,omitempty"`
}

// yielded is a preemption carried out (AnnPreempted).
type yielded struct {
	Action string    `json:"action"`
	Time   time.Time `json:"time"`
	Start  time.Time `json:"start"`
	Kind   string    `json:"kind"`
}

// claimRequest is the one device request of a Job's claim template.
type claimRequest struct {
	podClaim  string // the pod's claim name (template.spec.resourceClaims[i].name)
	template  string // the ResourceClaimTemplate's name
	spec      resourcev1.ResourceClaimTemplateSpec
	count     int64 // cards per pod
	class     string
	selectors []resourcev1.DeviceSelector // the user's own selectors, kept at admission
}

// ErrInvalidJob is wrapped by every reason a Job cannot be planned.
var ErrInvalidJob = errors.New("kube: job cannot be planned")

// jobID is the id huitian knows a Job by.
func jobID(j *batchv1.Job) string { return j.Namespace + "/" + j.Name }

// splitID is jobID's inverse.
func splitID(id string) (ns, name string, ok bool) { return strings.Cut(id, "/") }

// claimTemplateName returns the pod template's claim that names a
// ResourceClaimTemplate: the Job's GPUs.
func claimTemplateName(j *batchv1.Job) (podClaim, template string, err error) {
	var found []string
	for _, c := range j.Spec.Template.Spec.ResourceClaims {
		if c.ResourceClaimTemplateName != nil {
			podClaim, template = c.Name, *c.ResourceClaimTemplateName
			found = append(found, c.Name)
		}
	}
	switch len(found) {
	case 0:
		return "", "", fmt.Errorf("%w: spec.template.spec.resourceClaims names no resourceClaimTemplateName", ErrInvalidJob)
	case 1:
		return podClaim, template, nil
	}
	return "", "", fmt.Errorf("%w: spec.template.spec.resourceClaims names %d templates (%s), want one", ErrInvalidJob, len(found), strings.Join(found, ", "))
}

// parseClaim reads the user's claim template spec: one ExactCount request.
func parseClaim(podClaim, template string, spec resourcev1.ResourceClaimTemplateSpec) (*claimRequest, error) {
	reqs := spec.Spec.Devices.Requests
	if len(reqs) != 1 || reqs[0].Exactly == nil {
		return nil, fmt.Errorf("%w: claim template %s: want exactly one request with exactly: {count}", ErrInvalidJob, template)
	}
	ex := reqs[0].Exactly
	if ex.AllocationMode != "" && ex.AllocationMode != resourcev1.DeviceAllocationModeExactCount {
		return nil, fmt.Errorf("%w: claim template %s: allocationMode %s, want ExactCount", ErrInvalidJob, template, ex.AllocationMode)
	}
	count := ex.Count
	if count == 0 {
		count = 1
	}
	return &claimRequest{podClaim: podClaim, template: template, spec: spec, count: count, class: ex.DeviceClassName,
		selectors: slices.Clone(ex.Selectors)}, nil
}

// modelOf finds `…["driver"].<model> == "X"` (or the bare attribute) in the
// user's selectors: the card model the job asks for.
func modelOf(sel []resourcev1.DeviceSelector, attr string) string {
	if attr == "" {
		return ""
	}
	re := regexp.MustCompile(`\.` + regexp.QuoteMeta(lastPart(attr)) + `\s*==\s*"([^"]*)"`)
	for _, s := range sel {
		if s.CEL == nil {
			continue
		}
		if m := re.FindStringSubmatch(s.CEL.Expression); m != nil {
			return m[1]
		}
	}
	return ""
}

func lastPart(attr string) string {
	if i := strings.LastIndexByte(attr, '/'); i >= 0 {
		return attr[i+1:]
	}
	return attr
}

// requeuesOf is the requeue count the adapter keeps on a Job
// (AnnRequeueCount): 0 when missing, bad or negative, and at most 2²⁰,
// so that counting one more never wraps around.
func requeuesOf(a map[string]string) int32 {
	n, err := strconv.ParseInt(a[AnnRequeueCount], 10, 32)
	if err != nil || n < 0 {
		return 0
	}
	return int32(min(n, 1<<20))
}

// maxLimitSeconds is the longest time limit a time.Duration holds, in
// whole seconds.
const maxLimitSeconds = int64(math.MaxInt64 / int64(time.Second))

// jobSpec turns a managed Job and its claim request into huitian's JobSpec,
// naming the field of every problem.
func jobSpec(j *batchv1.Job, cr *claimRequest, cfg *Config) (*pb.JobSpec, error) {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	a := j.Annotations
	par := int32(1)
	if j.Spec.Parallelism != nil {
		par = *j.Spec.Parallelism
	}
	if par < 1 {
		bad("spec.parallelism: must be ≥ 1, got %d", par)
	}
	// The cards, counted where they cannot wrap around: a count or a
	// product past int32 is refused, not sent as another number.
	cards := int64(0)
	switch {
	case cr.count < 1:
		bad("claim template %s: count %d, want at least 1", cr.template, cr.count)
	case cr.count > math.MaxInt32/int64(max(par, 1)):
		bad("claim template %s: %d cards × spec.parallelism %d is more than %d cards", cr.template, cr.count, par, math.MaxInt32)
	default:
		cards = cr.count * int64(par)
	}
	s := &pb.JobSpec{
		Id: jobID(j), User: j.Namespace, JobClass: "batch", Cards: int32(cards),
		SubmitTime: timestamppb.New(j.CreationTimestamp.Time), Topology: pb.Topology_TOPOLOGY_ANY,
		Backfill:  pb.BackfillPreference_BACKFILL_PREFERENCE_ALLOW,
		CardModel: modelOf(cr.selectors, cfg.Attributes.Model),
	}
	switch ds := j.Spec.ActiveDeadlineSeconds; {
	case ds == nil || *ds <= 0:
		bad("spec.activeDeadlineSeconds: required, it is the job's time limit")
	case *ds > maxLimitSeconds:
		bad("spec.activeDeadlineSeconds: %d s, want at most %d (a time limit of about 290 years)", *ds, maxLimitSeconds)
	default:
		s.TimeLimit = durationpb.New(time.Duration(*ds) * time.Second)
	}
	if v := a[AnnUser]; v != "" {
		s.User = v
	}
	if v := a[AnnClass]; v != "" {
		s.JobClass = v
	}
	if v, ok := a[AnnCheckpointable]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			bad("annotation %s: want true or false, got %q", AnnCheckpointable, v)
		}
		s.Checkpointable = b
	}
	if v, ok := a[AnnCheckpointCost]; ok {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			bad("annotation %s: want a duration ≥ 0 such as 2m, got %q", AnnCheckpointCost, v)
		}
		s.CheckpointCost = durationpb.New(d)
	}
	if v, ok := a[AnnBackfill]; ok {
		switch v {
		case "allow":
		case "opt-out":
			s.Backfill = pb.BackfillPreference_BACKFILL_PREFERENCE_OPT_OUT
		case "low-risk":
			s.Backfill = pb.BackfillPreference_BACKFILL_PREFERENCE_LOW_RISK_ONLY
		default:
			bad("annotation %s: want allow, opt-out or low-risk, got %q", AnnBackfill, v)
		}
	}
	if v, ok := a[AnnMaxPreemptProb]; ok {
		p, err := strconv.ParseFloat(v, 64)
		if err != nil || !(p >= 0 && p <= 1) { // NaN too
			bad("annotation %s: want a number in [0, 1], got %q", AnnMaxPreemptProb, v)
		}
		s.MaxPreemptionProbability = p
	}
	if v, ok := a[AnnTopology]; ok {
		t, ok := map[string]pb.Topology{"any": pb.Topology_TOPOLOGY_ANY, "same-node": pb.Topology_TOPOLOGY_SAME_NODE,
			"same-nvlink-island": pb.Topology_TOPOLOGY_SAME_NVLINK_ISLAND, "same-switch": pb.Topology_TOPOLOGY_SAME_SWITCH}[v]
		if !ok {
			bad("annotation %s: want any, same-node, same-nvlink-island or same-switch, got %q", AnnTopology, v)
		}
		s.Topology = t
	}
	if v, ok := a[AnnComm]; ok {
		c, ok := map[string]pb.Comm{"none": pb.Comm_COMM_NONE, "low": pb.Comm_COMM_LOW, "high": pb.Comm_COMM_HIGH}[v]
		if !ok {
			bad("annotation %s: want none, low or high, got %q", AnnComm, v)
		}
		s.Comm = c
	}
	if v, ok := a[AnnPriority]; ok {
		p, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			bad("annotation %s: want an integer, got %q", AnnPriority, v)
		}
		s.Priority = int32(p)
	}
	s.RequeueCount = requeuesOf(a)
	// A pod's claim is allocated on the pod's node: one pod is one node, and
	// several pods take their count on each node they use.
	if par == 1 {
		if s.Topology == pb.Topology_TOPOLOGY_ANY || s.Topology == pb.Topology_TOPOLOGY_SAME_SWITCH {
			s.Topology = pb.Topology_TOPOLOGY_SAME_NODE
		}
	} else {
		s.CardsPerNode = int32(min(cr.count, math.MaxInt32)) // refused above when it does not fit
		if s.Topology == pb.Topology_TOPOLOGY_SAME_NODE || s.Topology == pb.Topology_TOPOLOGY_SAME_NVLINK_ISLAND {
			bad("annotation %s: %s cannot hold %d pods of %d cards each, one node per pod", AnnTopology, a[AnnTopology], par, cr.count)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidJob, err)
	}
	return s, nil
}

// finished reports whether the Job has ended, and how.
func finished(j *batchv1.Job) (bool, pb.ExitState, time.Time) {
	for _, c := range j.Status.Conditions {
		if c.Status != "True" {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return true, pb.ExitState_EXIT_STATE_COMPLETED, c.LastTransitionTime.Time
		case batchv1.JobFailed:
			if c.Reason == batchv1.JobReasonDeadlineExceeded {
				return true, pb.ExitState_EXIT_STATE_KILLED_AT_LIMIT, c.LastTransitionTime.Time
			}
			return true, pb.ExitState_EXIT_STATE_FAILED, c.LastTransitionTime.Time
		}
	}
	return false, 0, time.Time{}
}

// encodeCards writes cards as "node:0,1;node2:3", nodes and indices sorted.
func encodeCards(cards []*pb.CardRef) string {
	by := map[string][]int{}
	for _, c := range cards {
		by[c.GetNode()] = append(by[c.GetNode()], int(c.GetIndex()))
	}
	nodes := make([]string, 0, len(by))
	for n := range by {
		nodes = append(nodes, n)
	}
	slices.Sort(nodes)
	var b strings.Builder
	for i, n := range nodes {
		if i > 0 {
			b.WriteByte(';')
		}
		idx := by[n]
		slices.Sort(idx)
		b.WriteString(n)
		b.WriteByte(':')
		for k, x := range idx {
			if k > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(x))
		}
	}
	return b.String()
}

// DecodeCards reads what encodeCards wrote (the AnnCards annotation).
func DecodeCards(s string) ([]*pb.CardRef, error) {
	var out []*pb.CardRef
	for part := range strings.SplitSeq(s, ";") {
		node, list, ok := strings.Cut(part, ":")
		if !ok || node == "" || list == "" {
			return nil, fmt.Errorf("cards %q: want node:i,j;node2:k", s)
		}
		for x := range strings.SplitSeq(list, ",") {
			i, err := strconv.ParseInt(x, 10, 32)
			if err != nil || i < 0 {
				return nil, fmt.Errorf("cards %q: bad index %q, want 0 to %d", s, x, math.MaxInt32)
			}
			out = append(out, &pb.CardRef{Node: node, Index: int32(i)})
		}
	}
	return out, nil
}

func nodesOf(cards []*pb.CardRef) []string {
	var nodes []string
	for _, c := range cards {
		if !slices.Contains(nodes, c.GetNode()) {
			nodes = append(nodes, c.GetNode())
		}
	}
	slices.Sort(nodes)
	return nodes
}

func decodeJSON[T any](s string) (*T, bool) {
	if s == "" {
		return nil, false
	}
	var v T
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil, false
	}
	return &v, true
}

func encodeJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // plain structs of strings and times
	}
	return string(b)
}

func kindName(k pb.AllocationKind) string {
	if k == pb.AllocationKind_ALLOCATION_KIND_BACKFILL {
		return "backfill"
	}
	return "regular"
}

func kindOf(s string) pb.AllocationKind {
	if s == "backfill" {
		return pb.AllocationKind_ALLOCATION_KIND_BACKFILL
	}
	return pb.AllocationKind_ALLOCATION_KIND_REGULAR
}

func parseTime(s string) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil
}

func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
