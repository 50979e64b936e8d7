package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	pb "github.com/huitian/huitian/proto/huitian/v1"
	"github.com/huitian/huitian/rm"
)

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // maps of strings, numbers and API structs
	}
	return b
}

// Start admits a suspended Job on exactly the planned cards:
//  1. check the plan still matches: the Job is queued, every card exists
//     and no pod huitian does not manage holds it;
//  2. stash the user's claim template on the Job (once);
//  3. re-create the claim template with a CEL selector on the planned
//     cards' UUIDs (a template's spec is immutable);
//  4. clear status.startTime of a Job that ran before (its pod template
//     cannot change otherwise);
//  5. one patch: the pod template pinned to the node (or, across nodes,
//     gated until each pod is pinned), the plan's annotations, unsuspend.
//
// STARTED is reported by a later snapshot, when the pods run.
func (d *Driver) Start(ctx context.Context, st *pb.Start, spec *pb.JobSpec) ([]*pb.JobEvent, error) {
	// 1. The plan still matches.
	j, err := d.freshJob(ctx, st.GetJobId())
	if err != nil {
		return nil, err
	}
	if j.Spec.Suspend == nil || !*j.Spec.Suspend || j.Annotations[AnnCards] != "" {
		return nil, fmt.Errorf("%w: job %s is not queued", ErrPlanStale, jobID(j))
	}
	if done, _, _ := finished(j); done {
		return nil, fmt.Errorf("%w: job %s has finished", ErrPlanStale, jobID(j))
	}
	cr, err := d.claimOf(j)
	if err != nil {
		return nil, err
	}
	var uuids []string
	var indices []string
	for _, c := range st.GetCards() {
		k := d.inv.byRef[refKey(c.GetNode(), c.GetIndex())]
		switch {
		case k == nil:
			return nil, fmt.Errorf("%w: card %s/%d is gone", ErrPlanStale, c.GetNode(), c.GetIndex())
		case k.pb.GetUnhealthy():
			return nil, fmt.Errorf("%w: card %s/%d is held by a pod huitian does not manage", ErrPlanStale, c.GetNode(), c.GetIndex())
		}
		uuids = append(uuids, strconv.Quote(k.uuid))
		indices = append(indices, strconv.Itoa(int(c.GetIndex())))
		if k.uuid == "" {
			uuids = nil
		}
	}
	nodes := nodesOf(st.GetCards())
	for _, n := range nodes {
		if _, err := d.nodes.Get(n); err != nil {
			return nil, fmt.Errorf("%w: node %s: %w", ErrPlanStale, n, err)
		}
	}
	if per := len(st.GetCards()) / len(nodes); int64(per) != cr.count || per*len(nodes) != len(st.GetCards()) {
		return nil, fmt.Errorf("%w: plan gives job %s %d cards on %d nodes; its pods take %d each", ErrPlanStale, jobID(j), len(st.GetCards()), len(nodes), cr.count)
	}

	// 2. Stash the user's template before replacing it.
	if j.Annotations[AnnClaimTemplate] == "" {
		if err := d.patchJob(ctx, j, map[string]any{"metadata": map[string]any{"annotations": map[string]any{
			AnnClaimTemplate: string(mustJSON(cr.spec))}}}); err != nil {
			return nil, err
		}
	}

	// 3. The claim template, pinned to the planned cards.
	var sel string
	switch {
	case uuids != nil:
		sel = fmt.Sprintf("device.attributes[%q].%s in [%s]", d.cfg.Driver, lastPart(d.cfg.Attributes.UUID), strings.Join(uuids, ", "))
	case len(nodes) == 1:
		sel = fmt.Sprintf("device.attributes[%q].%s in [%s]", d.cfg.Driver, lastPart(d.cfg.Attributes.Index), strings.Join(indices, ", "))
	default:
		return nil, fmt.Errorf("%w: cards without a %q attribute cannot be pinned across nodes", ErrPlanStale, d.cfg.Attributes.UUID)
	}
	if err := d.pinTemplate(ctx, j, cr, sel); err != nil {
		return nil, err
	}

	// 4. A Job that ran before: clear status.startTime.
	if j.Status.StartTime != nil {
		out, err := d.cs.BatchV1().Jobs(j.Namespace).Patch(ctx, j.Name, types.MergePatchType,
			[]byte(`{"status":{"startTime":null}}`), metav1.PatchOptions{}, "status")
		if err != nil {
			return nil, fmt.Errorf("clear status.startTime of %s: %w", jobID(j), err)
		}
		d.wrote(out)
	}

	// 5. Pin, annotate, unsuspend: one patch.
	now := d.cfg.now()
	cards := encodeCards(st.GetCards())
	ann := map[string]any{
		AnnCards: cards, AnnAllocation: kindName(st.GetKind()), AnnStartedAt: formatTime(now),
		AnnRetention:   retention(st),
		AnnPreemptProb: strconv.FormatFloat(st.GetPreemptionProbability(), 'f', 3, 64),
		AnnWaiting:     nil, AnnEstimatedStart: nil, AnnPreemption: nil, AnnProtectedUntil: nil,
	}
	if st.GetProtectedUntil() != nil {
		ann[AnnProtectedUntil] = formatTime(st.GetProtectedUntil().AsTime())
	}
	podSpec := map[string]any{}
	if len(nodes) == 1 {
		podSpec["nodeSelector"] = map[string]any{LabelHostname: nodes[0]}
		podSpec["schedulingGates"] = otherGates(j)
	} else {
		podSpec["nodeSelector"] = map[string]any{LabelHostname: nil}
		podSpec["schedulingGates"] = append(otherGates(j), corev1.PodSchedulingGate{Name: GatePlacement})
	}
	patch := map[string]any{
		"metadata": map[string]any{"annotations": ann},
		"spec": map[string]any{
			"suspend": false,
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{LabelQueue: d.cfg.Queue}, "annotations": map[string]any{AnnCards: cards}},
				"spec":     podSpec,
			},
		},
	}
	if err := d.patchJob(ctx, j, patch); err != nil {
		return nil, err
	}
	msg := fmt.Sprintf("%s start on %s; expected retention %s, preemption probability %.3f",
		strings.ToUpper(kindName(st.GetKind())), cards, ann[AnnRetention], st.GetPreemptionProbability())
	if st.GetProtectedUntil() != nil && st.GetKind() == pb.AllocationKind_ALLOCATION_KIND_BACKFILL {
		msg += ", protected until " + st.GetProtectedUntil().AsTime().UTC().Format(time.RFC3339)
	}
	if r := st.GetReason(); r != "" {
		msg += "; " + r
	}
	d.event(ctx, j, corev1.EventTypeNormal, "Started", "Start", msg)
	d.condition(ctx, j, metav1.ConditionTrue, strings.ToUpper(kindName(st.GetKind())[:1])+kindName(st.GetKind())[1:], msg)
	return nil, nil
}

// retention says how long a start is expected to keep its cards; the
// planner leaves it at zero for a job it expects to keep them until done.
func retention(st *pb.Start) string {
	if d := st.GetExpectedRetention().AsDuration(); d > 0 {
		return d.Round(time.Second).String()
	}
	return "until done"
}

// otherGates are the pod template's scheduling gates that are not huitian's.
func otherGates(j *batchv1.Job) []corev1.PodSchedulingGate {
	out := []corev1.PodSchedulingGate{}
	for _, g := range j.Spec.Template.Spec.SchedulingGates {
		if g.Name != GatePlacement {
			out = append(out, g)
		}
	}
	return out
}

// pinTemplate deletes the Job's claim template and creates it again with
// the user's request and selectors plus sel.
func (d *Driver) pinTemplate(ctx context.Context, j *batchv1.Job, cr *claimRequest, sel string) error {
	api := d.cs.ResourceV1().ResourceClaimTemplates(j.Namespace)
	if err := api.Delete(ctx, cr.template, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete claim template %s/%s: %w", j.Namespace, cr.template, err)
	}
	spec := *cr.spec.DeepCopy()
	ex := spec.Spec.Devices.Requests[0].Exactly
	if ex.DeviceClassName == "" {
		ex.DeviceClassName = d.cfg.DeviceClass
	}
	ex.AllocationMode = resourcev1.DeviceAllocationModeExactCount
	ex.Count = cr.count
	ex.Selectors = append(slices.Clone(cr.selectors), resourcev1.DeviceSelector{CEL: &resourcev1.CELDeviceSelector{Expression: sel}})
	t := &resourcev1.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: cr.template, Namespace: j.Namespace, Labels: map[string]string{LabelQueue: d.cfg.Queue},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: j.Name, UID: j.UID}}},
		Spec: spec,
	}
	if _, err := api.Create(ctx, t, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create claim template %s/%s: %w", j.Namespace, cr.template, err)
	}
	return nil
}

// place pins each gated pod of a multi-node Job to a planned node no other
// live pod of the Job uses (pod index i to the i-th node for an Indexed
// Job), and lifts its gate.
func (d *Driver) place(ctx context.Context, j *batchv1.Job, cards []*pb.CardRef, pods []*corev1.Pod) {
	nodes := nodesOf(cards)
	if len(nodes) < 2 {
		return
	}
	used := map[string]bool{}
	var gated []*corev1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp != nil || podDone(p) {
			continue
		}
		if waitsForPlacement(p) {
			gated = append(gated, p)
			continue
		}
		if n := p.Spec.NodeSelector[LabelHostname]; n != "" {
			used[n] = true
		} else if p.Spec.NodeName != "" {
			used[p.Spec.NodeName] = true
		}
	}
	for _, p := range gated {
		node := ""
		if i, err := strconv.Atoi(p.Annotations[batchv1.JobCompletionIndexAnnotation]); err == nil && i < len(nodes) && !used[nodes[i]] {
			node = nodes[i]
		}
		for _, n := range nodes {
			if node == "" && !used[n] {
				node = n
			}
		}
		if node == "" {
			d.log.Warn("more pods than planned nodes; pod stays gated", "job", jobID(j), "pod", p.Name)
			continue
		}
		var gates []corev1.PodSchedulingGate
		for _, g := range p.Spec.SchedulingGates {
			if g.Name != GatePlacement {
				gates = append(gates, g)
			}
		}
		patch := []map[string]any{
			{"op": "add", "path": "/spec/nodeSelector", "value": mergeMap(p.Spec.NodeSelector, LabelHostname, node)},
			{"op": "replace", "path": "/spec/schedulingGates", "value": gates},
		}
		if gates == nil {
			patch[1] = map[string]any{"op": "remove", "path": "/spec/schedulingGates"}
		}
		if _, err := d.cs.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.JSONPatchType, mustJSON(patch), metav1.PatchOptions{}); err != nil {
			d.log.Warn("place pod", "job", jobID(j), "pod", p.Name, "node", node, "error", err)
			continue
		}
		used[node] = true
	}
}

func mergeMap(m map[string]string, k, v string) map[string]string {
	out := map[string]string{}
	for a, b := range m {
		out[a] = b
	}
	out[k] = v
	return out
}

// Preempt makes a running Job yield. SUSPEND with a notice: an annotation
// and an Event with the deadline (the job's code watches the annotation, or
// gets SIGTERM with terminationGracePeriodSeconds ≥ the notice when it is
// suspended); the snapshot that finds the deadline passed suspends it.
// REQUEUE, or no notice: suspend at once. The Job keeps its place in the
// queue (its creation time is its submit time).
func (d *Driver) Preempt(ctx context.Context, p *pb.Preemption, _ *pb.RunningJob) ([]*pb.JobEvent, error) {
	j, err := d.freshJob(ctx, p.GetJobId())
	if err != nil {
		return nil, err
	}
	if j.Spec.Suspend != nil && *j.Spec.Suspend || j.Annotations[AnnCards] == "" {
		return nil, fmt.Errorf("%w: job %s is not running", ErrPlanStale, jobID(j))
	}
	spec, err := d.specOf(j)
	if err != nil {
		return nil, err
	}
	action := "SUSPEND"
	if p.GetAction() == pb.PreemptionAction_PREEMPTION_ACTION_REQUEUE {
		action = "REQUEUE"
	}
	now := d.cfg.now()
	if action == "SUSPEND" && p.GetNotice().AsDuration() > 0 {
		if _, ok := decodeJSON[notice](j.Annotations[AnnPreemption]); ok {
			return nil, nil // already under notice: the deadline stands
		}
		n := notice{Action: action, Deadline: now.Add(p.GetNotice().AsDuration()), For: p.GetForJobId(), Reason: p.GetReason()}
		if err := d.patchJob(ctx, j, map[string]any{"metadata": map[string]any{"annotations": map[string]any{AnnPreemption: encodeJSON(n)}}}); err != nil {
			return nil, err
		}
		msg := fmt.Sprintf("SUSPEND: checkpoint and release the cards by %s (notice %s) for %s; %s",
			n.Deadline.UTC().Format(time.RFC3339), p.GetNotice().AsDuration().Round(time.Second), p.GetForJobId(), p.GetReason())
		d.event(ctx, j, corev1.EventTypeWarning, "Preempting", "Preempt", msg)
		d.condition(ctx, j, metav1.ConditionTrue, "Preempting", msg)
		return nil, nil
	}
	e, err := d.suspendNow(ctx, j, spec, action, now)
	if err != nil {
		return nil, err
	}
	return []*pb.JobEvent{e}, nil
}

// suspendNow suspends a running Job in one patch that also records the
// preemption (AnnPreempted, until acknowledged) and drops the plan.
func (d *Driver) suspendNow(ctx context.Context, j *batchv1.Job, spec *pb.JobSpec, action string, now time.Time) (*pb.JobEvent, error) {
	start, _ := parseTime(j.Annotations[AnnStartedAt])
	y := yielded{Action: action, Time: now, Start: start, Kind: j.Annotations[AnnAllocation]}
	ann := map[string]any{AnnPreempted: encodeJSON(y), AnnPreemption: nil, AnnCards: nil, AnnStartedAt: nil,
		AnnReportedStart: nil, AnnProtectedUntil: nil, AnnReportedProg: nil}
	if action == "REQUEUE" {
		n := requeuesOf(j.Annotations) + 1
		ann[AnnRequeueCount] = strconv.Itoa(int(n))
		if spec != nil {
			spec.RequeueCount = n
		}
	}
	if err := d.patchJob(ctx, j, map[string]any{"metadata": map[string]any{"annotations": ann}, "spec": map[string]any{"suspend": true}}); err != nil {
		return nil, err
	}
	msg := fmt.Sprintf("%s: suspended; back in the queue at its place", action)
	d.event(ctx, j, corev1.EventTypeWarning, "Preempted", "Preempt", msg)
	d.condition(ctx, j, metav1.ConditionFalse, "Preempted", msg)
	return &pb.JobEvent{JobId: jobID(j), Kind: pb.JobEventKind_JOB_EVENT_KIND_PREEMPTED, Time: timestamppb.New(now), Spec: spec,
		Allocation: kindOf(y.Kind), StartTime: timestamppb.New(start), Action: actionOf(action)}, nil
}

// Inform tells each waiting Job why it waits and when it is expected to
// start: an Event and the condition when the reason changes, the
// annotations always.
func (d *Driver) Inform(ctx context.Context, snap *rm.Snapshot, plan *pb.PlanResponse) error {
	type why struct {
		text string
		at   *timestamppb.Timestamp
	}
	// The text has no times in it (the estimated start is an annotation of
	// its own), so that a reservation that moves with the clock does not
	// make an Event every cycle.
	waits := map[string]why{}
	for _, r := range plan.GetReservations() {
		cards := "cards " + encodeCards(r.GetCards())
		if len(r.GetCards()) == 0 { // a flat cluster's: a count
			cards = fmt.Sprintf("%d cards", r.GetCount())
		}
		waits[r.GetJobId()] = why{fmt.Sprintf("reserved: %s (confidence %.2f)", cards, r.GetConfidence()), r.GetStartTime()}
	}
	for _, p := range plan.GetPending() {
		w, reserved := waits[p.GetJobId()]
		if !reserved {
			w.text = strings.ToLower(strings.TrimPrefix(p.GetReason().String(), "PENDING_REASON_")) + ": " + p.GetMessage()
		}
		if w.at == nil {
			w.at = p.GetEstimatedStart()
		}
		waits[p.GetJobId()] = w
	}
	var errs []error
	for _, q := range snap.Queued {
		w, ok := waits[q.GetId()]
		if !ok {
			continue
		}
		ns, name, _ := splitID(q.GetId())
		j, err := d.jobs.Jobs(ns).Get(name)
		if err != nil {
			continue
		}
		ann := map[string]any{}
		est := ""
		if w.at != nil {
			est = formatTime(w.at.AsTime().Truncate(time.Second))
		}
		if old, ok := parseTime(j.Annotations[AnnEstimatedStart]); est != "" && (!ok || absDur(old.Sub(w.at.AsTime())) >= EstimateSlack) {
			ann[AnnEstimatedStart] = est
		}
		changed := j.Annotations[AnnWaiting] != w.text
		if changed {
			ann[AnnWaiting] = w.text
		}
		if len(ann) == 0 {
			continue
		}
		if err := d.patchJob(ctx, j, map[string]any{"metadata": map[string]any{"annotations": ann}}); err != nil {
			if errs = append(errs, err); len(errs) == 3 {
				return fmt.Errorf("%w (and the rest of this cycle's jobs left)", errors.Join(errs...))
			}
			continue
		}
		if changed {
			msg := w.text
			if est != "" {
				msg += "; estimated start " + est
			}
			d.event(ctx, j, corev1.EventTypeNormal, "Waiting", "Plan", msg)
			d.condition(ctx, j, metav1.ConditionFalse, "Waiting", msg)
		}
	}
	return errors.Join(errs...)
}

func absDur(d time.Duration) time.Duration { return max(d, -d) }

// EstimateSlack is how far a waiting Job's estimated start may move before
// the adapter writes the annotation again: estimates move with the clock,
// and a write per waiting Job per cycle would load the API server.
// GetJobInsight has the exact figure.
const EstimateSlack = 30 * time.Second

// ConditionType is the Job condition huitian keeps: True while it runs on
// cards huitian gave it (reason Regular or Backfill), False while it waits
// or after a preemption.
const ConditionType batchv1.JobConditionType = "HuitianScheduled"

// event records an events.k8s.io/v1 Event about the Job (kubectl describe
// shows it). A failure is logged: users' views never block the cycle.
func (d *Driver) event(ctx context.Context, j *batchv1.Job, typ, reason, action, note string) {
	now := d.cfg.now()
	if len(note) > 1000 {
		note = note[:1000]
	}
	ev := &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", j.Name, now.UnixNano()), Namespace: j.Namespace},
		EventTime:           metav1.NewMicroTime(now),
		ReportingController: "huitian.dev/kube",
		ReportingInstance:   "huitian-kube-" + d.instance,
		Action:              action,
		Reason:              reason,
		Regarding:           corev1.ObjectReference{APIVersion: "batch/v1", Kind: "Job", Namespace: j.Namespace, Name: j.Name, UID: j.UID},
		Note:                note,
		Type:                typ,
	}
	if _, err := d.cs.EventsV1().Events(j.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		d.log.Warn("record event", "job", jobID(j), "reason", reason, "error", err)
	}
}

// condition sets huitian's condition on the Job's status (read, modify,
// update; a conflict is left for the next change).
func (d *Driver) condition(ctx context.Context, j *batchv1.Job, status metav1.ConditionStatus, reason, msg string) {
	api := d.cs.BatchV1().Jobs(j.Namespace)
	cur, err := api.Get(ctx, j.Name, metav1.GetOptions{})
	if err != nil {
		return
	}
	now := metav1.NewTime(d.cfg.now())
	c := batchv1.JobCondition{Type: ConditionType, Status: corev1.ConditionStatus(status), Reason: reason, Message: msg,
		LastProbeTime: now, LastTransitionTime: now}
	i := slices.IndexFunc(cur.Status.Conditions, func(c batchv1.JobCondition) bool { return c.Type == ConditionType })
	if i < 0 {
		cur.Status.Conditions = append(cur.Status.Conditions, c)
	} else {
		if cur.Status.Conditions[i].Status == c.Status {
			c.LastTransitionTime = cur.Status.Conditions[i].LastTransitionTime
		}
		cur.Status.Conditions[i] = c
	}
	out, err := api.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
	if err != nil {
		d.log.Debug("set condition", "job", jobID(j), "error", err)
		return
	}
	d.wrote(out)
}
