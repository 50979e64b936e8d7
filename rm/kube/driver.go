package kube

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	resourcelisters "k8s.io/client-go/listers/resource/v1"
	"k8s.io/client-go/tools/cache"

	pb "github.com/huitian/huitian/proto/huitian/v1"
	"github.com/huitian/huitian/rm"
)

// Driver is the Kubernetes rm.Driver. The loop calls it from one goroutine;
// its informers run their own.
type Driver struct {
	cfg      Config
	cs       kubernetes.Interface
	log      *slog.Logger
	instance string

	nodes     corelisters.NodeLister
	rslices   resourcelisters.ResourceSliceLister
	claims    resourcelisters.ResourceClaimLister
	templates resourcelisters.ResourceClaimTemplateLister
	jobs      batchlisters.JobLister
	pods      corelisters.PodLister
	jobStore  cache.Store

	mu      sync.Mutex        // guards written
	written map[string]uint64 // job id → resourceVersion of the adapter's last write

	inv *inventory // the last snapshot's cards, for Start's checks

	wake chan struct{} // rm.Waker: the informers' changes the loop plans on
}

var (
	_ rm.Driver       = (*Driver)(nil)
	_ rm.Acknowledger = (*Driver)(nil)
	_ rm.Informer     = (*Driver)(nil)
	_ rm.Waker        = (*Driver)(nil)
)

// New starts the informers and waits for their caches. They stop when ctx ends.
func New(ctx context.Context, cs kubernetes.Interface, cfg Config, log *slog.Logger) (*Driver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	host, _ := os.Hostname()
	d := &Driver{cfg: cfg, cs: cs, log: log, instance: host, written: map[string]uint64{}, wake: make(chan struct{}, 1)}
	all := informers.NewSharedInformerFactory(cs, 0)
	queue := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(cfg.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = LabelQueue + "=" + cfg.Queue }))
	ns := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(cfg.Namespace))
	d.nodes = all.Core().V1().Nodes().Lister()
	d.rslices = all.Resource().V1().ResourceSlices().Lister()
	d.claims = all.Resource().V1().ResourceClaims().Lister()
	d.templates = ns.Resource().V1().ResourceClaimTemplates().Lister()
	ji := queue.Batch().V1().Jobs()
	d.jobs = ji.Lister()
	d.jobStore = ji.Informer().GetStore()
	pi := queue.Core().V1().Pods()
	d.pods = pi.Lister()
	if _, err := ji.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { d.poke() }, // submitted
		UpdateFunc: func(o, n any) { d.pokeIf(jobEnded(o, n)) },
		DeleteFunc: func(any) { d.poke() },
	}); err != nil {
		return nil, fmt.Errorf("kube: watch Jobs: %w", err)
	}
	if _, err := pi.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) { // a started job's pods, to place
			p, ok := o.(*corev1.Pod)
			d.pokeIf(ok && waitsForPlacement(p))
		},
		UpdateFunc: func(o, n any) { d.pokeIf(podEnded(o, n)) },
		DeleteFunc: func(any) { d.poke() }, // suspended, or gone: its cards are back
	}); err != nil {
		return nil, fmt.Errorf("kube: watch Pods: %w", err)
	}
	for _, f := range []informers.SharedInformerFactory{all, queue, ns} {
		f.Start(ctx.Done())
	}
	for _, f := range []informers.SharedInformerFactory{all, queue, ns} {
		for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
			if !ok {
				return nil, fmt.Errorf("kube: the %v cache did not sync", typ)
			}
		}
	}
	return d, nil
}

// Wakes is rm.Waker's: a Job submitted, finished or deleted, a started
// job's pods created (their placement is due) and a pod finished or
// deleted (its cards are back) each ask the loop for a cycle. The
// adapter's own writes (a start, a suspension) ask for none by
// themselves.
func (d *Driver) Wakes() <-chan struct{} { return d.wake }

// poke asks for a cycle; one asked and not yet taken is enough.
func (d *Driver) poke() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

func (d *Driver) pokeIf(b bool) {
	if b {
		d.poke()
	}
}

// jobEnded says whether a Job's update is its end (Complete or Failed).
func jobEnded(o, n any) bool {
	a, ok1 := o.(*batchv1.Job)
	b, ok2 := n.(*batchv1.Job)
	if !ok1 || !ok2 {
		return false
	}
	was, _, _ := finished(a)
	is, _, _ := finished(b)
	return !was && is
}

// podEnded says whether a pod's update is its end (Succeeded or Failed).
func podEnded(o, n any) bool {
	a, ok1 := o.(*corev1.Pod)
	b, ok2 := n.(*corev1.Pod)
	return ok1 && ok2 && !podDone(a) && podDone(b)
}

func podDone(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// waitsForPlacement says whether a pod waits for the adapter to place it
// (it carries GatePlacement).
func waitsForPlacement(p *corev1.Pod) bool {
	return slices.ContainsFunc(p.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool { return g.Name == GatePlacement })
}

// wrote records the resourceVersion of the adapter's own write to a Job.
func (d *Driver) wrote(j *batchv1.Job) {
	rv, err := strconv.ParseUint(j.ResourceVersion, 10, 64)
	if err != nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.written[jobID(j)] = max(d.written[jobID(j)], rv)
}

// catchUp waits (up to cfg.CatchUp) until the Job cache shows the adapter's
// own writes, so that a snapshot never plans from a view older than what
// the adapter itself did (a Job started a cycle ago shown as still queued).
func (d *Driver) catchUp(ctx context.Context) {
	deadline := time.Now().Add(d.cfg.CatchUp)
	for {
		d.mu.Lock()
		behind := 0
		for id, rv := range d.written {
			obj, ok, _ := d.jobStore.GetByKey(id)
			if !ok {
				delete(d.written, id)
				continue
			}
			got, err := strconv.ParseUint(obj.(*batchv1.Job).ResourceVersion, 10, 64)
			if err != nil || got >= rv {
				delete(d.written, id)
				continue
			}
			behind++
		}
		d.mu.Unlock()
		if behind == 0 || time.Now().After(deadline) {
			if behind > 0 {
				d.log.Warn("job cache behind the adapter's own writes; planning anyway", "jobs", behind)
			}
			return
		}
		t := time.NewTimer(50 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// Snapshot reads the cluster from the informers: cards from the driver's
// ResourceSlices (cards held by claims of pods huitian does not manage are
// left out as unhealthy), running and queued Jobs from the queue. It also
// carries out what is due: a suspension whose notice ran out, the placement
// of a multi-node job's gated pods.
func (d *Driver) Snapshot(ctx context.Context) (*rm.Snapshot, error) {
	d.catchUp(ctx)
	now := d.cfg.now()
	nodes, err := d.nodes.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	rs, err := d.rslices.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	inv := buildInventory(&d.cfg, nodes, rs)
	for _, p := range inv.problems {
		d.log.Debug("card left out", "problem", p)
	}
	if len(inv.cluster.Nodes) == 0 {
		return nil, fmt.Errorf("kube: no node has a ResourceSlice of driver %s", d.cfg.Driver)
	}
	d.markExternal(inv)
	d.inv = inv

	jobs, err := d.jobs.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	slices.SortFunc(jobs, submitOrder)
	s := &rm.Snapshot{Now: now, Cluster: inv.cluster}
	for _, j := range jobs {
		if j.Labels[LabelQueue] != d.cfg.Queue {
			continue
		}
		d.observe(ctx, j, now, s)
	}
	return s, nil
}

// submitOrder lists Jobs as Slurm lists its queue, in submit order (the
// creation time a Job's spec submits at; its id among those created in the
// same second): the planners order the queue by priority and submit time,
// and one listed so but for a few jobs costs them a merge, not a sort of
// the whole queue (by name it was a sort every cycle).
func submitOrder(a, b *batchv1.Job) int {
	if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
		return c
	}
	return strings.Compare(jobID(a), jobID(b))
}

// markExternal leaves out cards held by claims of pods that are not pods of
// managed Jobs: huitian cannot plan what it does not know.
func (d *Driver) markExternal(inv *inventory) {
	claims, err := d.claims.List(labels.Everything())
	if err != nil {
		return
	}
	for _, c := range claims {
		if d.managedClaim(c) {
			continue
		}
		for _, k := range inv.allocated(c, d.cfg.Driver) {
			k.pb.Unhealthy = true
		}
	}
}

// managedClaim reports whether a claim belongs to a pod of a managed Job.
func (d *Driver) managedClaim(c *resourcev1.ResourceClaim) bool {
	for _, o := range c.OwnerReferences {
		if o.Kind != "Pod" {
			continue
		}
		if p, err := d.pods.Pods(c.Namespace).Get(o.Name); err == nil && p.UID == o.UID {
			return true
		}
	}
	return false
}

// observe adds one managed Job to the snapshot and derives its events.
func (d *Driver) observe(ctx context.Context, j *batchv1.Job, now time.Time, s *rm.Snapshot) {
	a := j.Annotations
	spec, specErr := d.specOf(j)
	if y, ok := decodeJSON[yielded](a[AnnPreempted]); ok {
		s.Events = append(s.Events, &pb.JobEvent{JobId: jobID(j), Kind: pb.JobEventKind_JOB_EVENT_KIND_PREEMPTED,
			Time: timestamppb.New(y.Time), Spec: spec, Allocation: kindOf(y.Kind), StartTime: timestamppb.New(y.Start),
			Action: actionOf(y.Action)})
	}
	startedAt, started := parseTime(a[AnnStartedAt])
	if done, exit, at := finished(j); done {
		if started && a[AnnReportedFinish] != "true" {
			if a[AnnReportedStart] != a[AnnStartedAt] {
				s.Events = append(s.Events, d.startedEvent(j, spec, startedAt))
			}
			s.Events = append(s.Events, &pb.JobEvent{JobId: jobID(j), Kind: pb.JobEventKind_JOB_EVENT_KIND_FINISHED,
				Time: timestamppb.New(at), Spec: spec, Allocation: kindOf(a[AnnAllocation]), StartTime: timestamppb.New(startedAt), Exit: exit})
		}
		return
	}
	if specErr != nil {
		d.invalid(ctx, j, specErr)
		return
	}
	suspended := j.Spec.Suspend != nil && *j.Spec.Suspend
	switch {
	case !suspended && a[AnnCards] != "" && started:
		cards, err := DecodeCards(a[AnnCards])
		if err != nil {
			d.log.Warn("bad cards annotation", "job", jobID(j), "error", err)
			return
		}
		if n, ok := decodeJSON[notice](a[AnnPreemption]); ok && !now.Before(n.Deadline) {
			if e, err := d.suspendNow(ctx, j, spec, n.Action, now); err != nil {
				d.log.Warn("suspend at the end of the notice", "job", jobID(j), "error", err)
			} else {
				s.Events = append(s.Events, e)
				return
			}
		}
		pods := d.podsOf(j)
		if a[AnnReportedStart] != a[AnnStartedAt] && running(pods) >= parallelism(j) {
			s.Events = append(s.Events, d.startedEvent(j, spec, startedAt))
		}
		rj := &pb.RunningJob{Spec: spec, Cards: cards, StartTime: timestamppb.New(startedAt), Kind: kindOf(a[AnnAllocation])}
		if t, ok := parseTime(a[AnnProtectedUntil]); ok {
			rj.ProtectedUntil = timestamppb.New(t)
		}
		if p, err := strconv.ParseFloat(a[AnnProgress], 64); err == nil && p >= 0 && p <= 1 {
			rj.Progress = p
			if rp, err := strconv.ParseFloat(a[AnnReportedProg], 64); err != nil || rp != p {
				s.Events = append(s.Events, &pb.JobEvent{JobId: jobID(j), Kind: pb.JobEventKind_JOB_EVENT_KIND_PROGRESS,
					Time: timestamppb.New(now), Progress: p})
			}
		}
		d.place(ctx, j, cards, pods)
		s.Running = append(s.Running, rj)
	case suspended:
		s.Queued = append(s.Queued, spec)
	default:
		// Running, but not started by huitian (someone unsuspended it): its
		// claims hold cards that markExternal does not know to be planned.
		// It is not huitian's to plan; its pods' cards stay counted as
		// held by the planner only through their claims.
		d.log.Debug("managed job running without a huitian start; left alone", "job", jobID(j))
	}
}

func (d *Driver) startedEvent(j *batchv1.Job, spec *pb.JobSpec, at time.Time) *pb.JobEvent {
	return &pb.JobEvent{JobId: jobID(j), Kind: pb.JobEventKind_JOB_EVENT_KIND_STARTED, Time: timestamppb.New(at),
		Spec: spec, Allocation: kindOf(j.Annotations[AnnAllocation])}
}

func actionOf(s string) pb.PreemptionAction {
	if s == "REQUEUE" {
		return pb.PreemptionAction_PREEMPTION_ACTION_REQUEUE
	}
	return pb.PreemptionAction_PREEMPTION_ACTION_SUSPEND
}

func parallelism(j *batchv1.Job) int {
	p := 1
	if j.Spec.Parallelism != nil {
		p = int(*j.Spec.Parallelism)
	}
	if j.Spec.Completions != nil {
		p = min(p, int(*j.Spec.Completions))
	}
	return max(p, 1)
}

func running(pods []*corev1.Pod) int {
	n := 0
	for _, p := range pods {
		if p.Status.Phase == corev1.PodRunning || p.Status.Phase == corev1.PodSucceeded {
			n++
		}
	}
	return n
}

// podsOf lists the Job's pods (controller-uid label), by name.
func (d *Driver) podsOf(j *batchv1.Job) []*corev1.Pod {
	sel := labels.SelectorFromSet(labels.Set{batchv1.ControllerUidLabel: string(j.UID)})
	pods, _ := d.pods.Pods(j.Namespace).List(sel)
	slices.SortFunc(pods, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return pods
}

// specOf reads the Job's JobSpec, from the claim template as the user
// created it (stashed on the Job at its first start) or as it is now.
func (d *Driver) specOf(j *batchv1.Job) (*pb.JobSpec, error) {
	cr, err := d.claimOf(j)
	if err != nil {
		return nil, err
	}
	return jobSpec(j, cr, &d.cfg)
}

func (d *Driver) claimOf(j *batchv1.Job) (*claimRequest, error) {
	podClaim, name, err := claimTemplateName(j)
	if err != nil {
		return nil, err
	}
	if st, ok := decodeJSON[resourcev1.ResourceClaimTemplateSpec](j.Annotations[AnnClaimTemplate]); ok {
		return parseClaim(podClaim, name, *st)
	}
	t, err := d.templates.ResourceClaimTemplates(j.Namespace).Get(name)
	if err != nil {
		return nil, fmt.Errorf("%w: claim template %s: %w", ErrInvalidJob, name, err)
	}
	return parseClaim(podClaim, name, t.Spec)
}

// invalid tells the Job's owner, once per reason, why huitian cannot plan it.
func (d *Driver) invalid(ctx context.Context, j *batchv1.Job, err error) {
	msg := err.Error()
	if j.Annotations[AnnInvalid] == msg {
		return
	}
	d.log.Info("job cannot be planned", "job", jobID(j), "error", err)
	if d.patchJob(ctx, j, map[string]any{"metadata": map[string]any{"annotations": map[string]any{AnnInvalid: msg}}}) == nil {
		d.event(ctx, j, corev1.EventTypeWarning, "Invalid", "Plan", msg)
	}
}

// patchJob merge-patches a Job and records the write.
func (d *Driver) patchJob(ctx context.Context, j *batchv1.Job, patch map[string]any) error {
	out, err := d.cs.BatchV1().Jobs(j.Namespace).Patch(ctx, j.Name, types.MergePatchType, mustJSON(patch), metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("patch job %s: %w", jobID(j), err)
	}
	d.wrote(out)
	return nil
}

// freshJob reads a managed Job from the API server, not the cache: an
// action must not be taken twice on a stale view.
func (d *Driver) freshJob(ctx context.Context, id string) (*batchv1.Job, error) {
	ns, name, ok := splitID(id)
	if !ok {
		return nil, fmt.Errorf("kube: job id %q is not namespace/name", id)
	}
	j, err := d.cs.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	if j.Labels[LabelQueue] != d.cfg.Queue {
		return nil, fmt.Errorf("kube: job %s is not in queue %s", id, d.cfg.Queue)
	}
	return j, nil
}

// ErrPlanStale means a planned action no longer matches the cluster; the
// job is skipped this cycle and planned again.
var ErrPlanStale = errors.New("kube: plan no longer matches the cluster")

// Acknowledged marks acknowledged events on their Jobs, so that the next
// snapshot does not derive them again.
func (d *Driver) Acknowledged(ctx context.Context, evs []*pb.JobEvent) error {
	by := map[string]map[string]any{}
	for _, e := range evs {
		ann := by[e.GetJobId()]
		if ann == nil {
			ann = map[string]any{}
			by[e.GetJobId()] = ann
		}
		switch e.GetKind() {
		case pb.JobEventKind_JOB_EVENT_KIND_STARTED:
			ann[AnnReportedStart] = formatTime(e.GetTime().AsTime())
		case pb.JobEventKind_JOB_EVENT_KIND_FINISHED:
			ann[AnnReportedFinish] = "true"
		case pb.JobEventKind_JOB_EVENT_KIND_PROGRESS:
			ann[AnnReportedProg] = strconv.FormatFloat(e.GetProgress(), 'f', -1, 64)
		case pb.JobEventKind_JOB_EVENT_KIND_PREEMPTED:
			ann[AnnPreempted] = nil
		}
	}
	var errs []error
	for _, id := range slices.Sorted(maps.Keys(by)) {
		ns, name, _ := splitID(id)
		j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		if err := d.patchJob(ctx, j, map[string]any{"metadata": map[string]any{"annotations": by[id]}}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
