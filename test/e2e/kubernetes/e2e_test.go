package kubernetes

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/huitian/huitian/client"
	pb "github.com/huitian/huitian/proto/huitian/v1"
	"github.com/huitian/huitian/rm/kube"
	"github.com/huitian/huitian/test/e2e/e2etest"
)

const (
	ns       = "e2e"
	interval = 2 * time.Second
)

// env is what scripts/e2e-kubernetes.sh hands the test.
type env struct {
	runDir, admin, adapter, huitian, huitianRace, kubectl string
}

func getenv(t *testing.T) env {
	e := env{os.Getenv("E2E_RUN_DIR"), os.Getenv("E2E_ADMIN_KUBECONFIG"), os.Getenv("E2E_ADAPTER_KUBECONFIG"),
		os.Getenv("E2E_HUITIAN"), os.Getenv("E2E_HUITIAN_RACE"), os.Getenv("E2E_KUBECTL")}
	if e.huitianRace == "" {
		e.huitianRace = e.huitian
	}
	if e.admin == "" || e.adapter == "" || e.huitian == "" {
		t.Skip("the Kubernetes end-to-end test runs under `make e2e-kubernetes`, which starts the cluster")
	}
	return e
}

// workJob is one Job of the workload.
type workJob struct {
	name    string
	pods    int32
	perPod  int64
	runtime time.Duration // kwok's completion delay
	limit   time.Duration // activeDeadlineSeconds
	ann     map[string]string
}

// create submits a Job; with a selector, it is a Job huitian does not
// manage (no queue label, not suspended) whose claim selects by it.
func create(ctx context.Context, t *testing.T, cs kubernetes.Interface, w workJob, selector ...string) {
	t.Helper()
	cel := `device.attributes["gpu.huitian.dev"].productName == "H100-SXM5-80GB"`
	if len(selector) > 0 {
		cel = selector[0]
	}
	tpl := &resourcev1.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: w.name + "-gpus", Namespace: ns},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
			Requests: []resourcev1.DeviceRequest{{Name: "gpus", Exactly: &resourcev1.ExactDeviceRequest{
				DeviceClassName: "gpu.huitian.dev", Count: w.perPod,
				Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{
					Expression: cel}}},
			}}}}}},
	}
	if _, err := cs.ResourceV1().ResourceClaimTemplates(ns).Create(ctx, tpl, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create template of %s: %v", w.name, err)
	}
	rt := fmt.Sprintf("%ds", int(w.runtime.Seconds()))
	deadline := int64(w.limit.Seconds())
	suspend := len(selector) == 0
	labels := map[string]string{kube.LabelQueue: "default"}
	if !suspend {
		labels = nil
	}
	mode := batchv1.NonIndexedCompletion
	if w.pods > 1 {
		mode = batchv1.IndexedCompletion
	}
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: w.name, Namespace: ns, Labels: labels, Annotations: w.ann},
		Spec: batchv1.JobSpec{
			Suspend: &suspend, Parallelism: &w.pods, Completions: &w.pods, CompletionMode: &mode,
			ActiveDeadlineSeconds: &deadline, BackoffLimit: ptr(int32(0)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
					"pod-create.stage.kwok.x-k8s.io/delay": "1s", "pod-create.stage.kwok.x-k8s.io/jitter-delay": "1s",
					"pod-ready.stage.kwok.x-k8s.io/delay": "1s", "pod-ready.stage.kwok.x-k8s.io/jitter-delay": "1s",
					"pod-complete.stage.kwok.x-k8s.io/delay": rt, "pod-complete.stage.kwok.x-k8s.io/jitter-delay": rt,
				}},
				Spec: corev1.PodSpec{
					RestartPolicy:  corev1.RestartPolicyNever,
					Containers:     []corev1.Container{{Name: "main", Image: "busybox", Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpus"}}}}},
					ResourceClaims: []corev1.PodResourceClaim{{Name: "gpus", ResourceClaimTemplateName: ptr(w.name + "-gpus")}},
				},
			},
		},
	}
	if _, err := cs.BatchV1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create job %s: %v", w.name, err)
	}
}

func ptr[T any](v T) *T { return &v }

// watcher records what the cluster did, from informers.
type watcher struct {
	mu         sync.Mutex
	holder     map[string]string   // "node/gpu-i" → claim holding it now
	violations []string            // double holds, allocations off plan
	claimed    map[string][]string // "job|plan" → devices its claims got
	checked    int                 // allocations compared with the plan
	jobs       map[string]*batchv1.Job
	started    map[string]time.Time // a job's first started-at
	admissions []admission          // every start huitian carried out
	external   []hold               // cards held by pods huitian does not manage
	// pods is every pod seen, kept after it is deleted: a claim's update
	// can be handled after its pod is gone (a suspended Job's pods are
	// deleted), and its plan is still checked.
	pods map[string]*corev1.Pod
}

// admission is one start of a managed Job.
type admission struct {
	job   string
	cards string
	at    time.Time
}

// hold is a card held by a claim of a pod huitian does not manage.
type hold struct {
	card     string // "node/gpu-i"
	claim    string
	from, to time.Time // to is zero while it holds
}

func newWatcher() *watcher {
	return &watcher{holder: map[string]string{}, claimed: map[string][]string{}, jobs: map[string]*batchv1.Job{},
		started: map[string]time.Time{}, pods: map[string]*corev1.Pod{}}
}

func (w *watcher) claim(cs kubernetes.Interface, c *resourcev1.ResourceClaim, deleted bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	key := c.Namespace + "/" + c.Name
	for dev, h := range w.holder {
		if h == key {
			delete(w.holder, dev)
		}
	}
	for i := range w.external {
		if w.external[i].claim == key && w.external[i].to.IsZero() {
			w.external[i].to = time.Now()
		}
	}
	if deleted || c.Status.Allocation == nil {
		return
	}
	var devs []string
	for _, r := range c.Status.Allocation.Devices.Results {
		d := r.Pool + "/" + r.Device
		if h, ok := w.holder[d]; ok {
			w.violations = append(w.violations, fmt.Sprintf("card %s held by claims %s and %s", d, h, key))
		}
		w.holder[d] = key
		devs = append(devs, d)
	}
	// Compare with the plan the claim's pod was created from: the pod as
	// last seen, or as the API server has it when its informer is behind.
	var pod *corev1.Pod
	for _, o := range c.OwnerReferences {
		if o.Kind == "Pod" {
			if p, ok := w.pods[o.Name]; ok {
				pod = p
			} else if p, err := cs.CoreV1().Pods(c.Namespace).Get(context.Background(), o.Name, metav1.GetOptions{}); err == nil {
				pod = p
			}
		}
	}
	if pod == nil {
		w.violations = append(w.violations, fmt.Sprintf("claim %s: allocated, owner pod not found", key))
		return
	}
	if pod.Labels[kube.LabelQueue] == "" {
		for _, d := range devs {
			w.external = append(w.external, hold{card: d, claim: key, from: time.Now()})
		}
		return
	}
	plan := pod.Annotations[kube.AnnCards]
	cards, err := kube.DecodeCards(plan)
	if err != nil {
		w.violations = append(w.violations, fmt.Sprintf("claim %s: pod %s has no plan (%v)", key, pod.Name, err))
		return
	}
	planned := map[string]bool{}
	for _, c := range cards {
		planned[fmt.Sprintf("%s/gpu-%d", c.GetNode(), c.GetIndex())] = true
	}
	for _, d := range devs {
		if !planned[d] {
			w.violations = append(w.violations, fmt.Sprintf("claim %s of pod %s: card %s not in the plan %s", key, pod.Name, d, plan))
		}
	}
	w.checked++
	jk := pod.Labels[batchv1.JobNameLabel] + "|" + plan
	for _, d := range devs {
		if !slices.Contains(w.claimed[jk], d) {
			w.claimed[jk] = append(w.claimed[jk], d)
		}
	}
}

func (w *watcher) pod(p *corev1.Pod) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pods[p.Name] = p
}

func (w *watcher) job(j *batchv1.Job) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.jobs[j.Name] = j
	if at, err := time.Parse(time.RFC3339Nano, j.Annotations[kube.AnnStartedAt]); err == nil {
		if _, seen := w.started[j.Name]; !seen {
			w.started[j.Name] = at
		}
		if !slices.ContainsFunc(w.admissions, func(a admission) bool { return a.job == j.Name && a.at.Equal(at) }) {
			w.admissions = append(w.admissions, admission{j.Name, j.Annotations[kube.AnnCards], at})
		}
	}
}

func (w *watcher) get(name string) *batchv1.Job {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.jobs[name]
}

func describe(t *testing.T, e env, name, file string) string {
	out, err := exec.Command(e.kubectl, "--kubeconfig", e.admin, "-n", ns, "describe", "job", name).CombinedOutput()
	if err != nil {
		t.Logf("kubectl describe job %s: %v", name, err)
	}
	os.WriteFile(filepath.Join(e.runDir, file), out, 0o644)
	return string(out)
}

// restartAPIServer kills kube-apiserver (SIGKILL: a crash; its state is in
// etcd) and starts it again with the same flags, through the script that
// started it.
func restartAPIServer(t *testing.T, e env, cs kubernetes.Interface) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(e.runDir, "apiserver.pid"))
	if err != nil {
		t.Fatalf("kube-apiserver pid: %v", err)
	}
	var pid int
	fmt.Sscan(string(b), &pid)
	syscall.Kill(pid, syscall.SIGKILL)
	e2etest.WaitFor(t, "kube-apiserver to exit", time.Minute, 200*time.Millisecond, func() bool {
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		return err != nil || strings.Contains(string(st), ") Z ") // gone, or a zombie its parent has not reaped
	})
	if out, err := exec.Command(filepath.Join(e.runDir, "apiserver.sh")).CombinedOutput(); err != nil {
		t.Fatalf("start kube-apiserver: %v: %s", err, out)
	}
	e2etest.WaitFor(t, "kube-apiserver to be ready", 2*time.Minute, 200*time.Millisecond, func() bool {
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(context.Background())
		return err == nil && string(body) == "ok"
	})
	t.Logf("kube-apiserver restarted")
}

func hasCond(j *batchv1.Job, typ batchv1.JobConditionType) bool {
	return slices.ContainsFunc(j.Status.Conditions, func(c batchv1.JobCondition) bool { return c.Type == typ && c.Status == corev1.ConditionTrue })
}

func TestKubernetes(t *testing.T) {
	e := getenv(t)
	rc, err := clientcmd.BuildConfigFromFlags("", e.admin)
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(rc)
	ctx := t.Context()

	// 1. huitian serve and huitian kube (under the ServiceAccount's RBAC).
	serve := &e2etest.Proc{T: t, Name: "huitian serve", Log: filepath.Join(e.runDir, "serve.log"),
		Args: []string{e.huitian, "serve", "--listen", "127.0.0.1:0", "--data", filepath.Join(e.runDir, "huitian-data"), "--default-policy", "huitian"}}
	serve.Start()
	t.Cleanup(func() {
		if err := serve.Stop(); err != nil {
			t.Errorf("huitian serve: %v", err)
		}
	})
	url := e2etest.ServeURL(t, serve)
	c := client.New(url)
	insight := func(name string) (*pb.JobInsight, error) {
		in, err := c.GetJobInsight(context.Background(), connect.NewRequest(&pb.GetJobInsightRequest{ClusterId: "kubernetes", JobId: ns + "/" + name}))
		if err != nil {
			return nil, err
		}
		return in.Msg.GetInsight(), nil
	}
	adapter := &e2etest.Proc{T: t, Name: "huitian kube", Log: filepath.Join(e.runDir, "kube.log"),
		Args: []string{e.huitianRace, "kube", "--kubeconfig", e.adapter, "--server", url, "--dra-driver", "gpu.huitian.dev",
			"--device-class", "gpu.huitian.dev", "--switch-label", "rack", "--interval", interval.String(),
			"--policy", "huitian", "--log-level", "debug"}}
	adapter.Start()
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(adapter.Log)
			lines := strings.Split(string(b), "\n")
			t.Logf("last lines of %s:\n%s", adapter.Log, strings.Join(lines[max(0, len(lines)-60):], "\n"))
		}
	})
	t.Cleanup(func() {
		if err := adapter.Stop(); err != nil {
			t.Errorf("huitian kube: %v", err)
		}
	})

	// 2. Watch claims and jobs.
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w := newWatcher()
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	f.Resource().V1().ResourceClaims().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { w.claim(cs, o.(*resourcev1.ResourceClaim), false) },
		UpdateFunc: func(_, o any) { w.claim(cs, o.(*resourcev1.ResourceClaim), false) },
		DeleteFunc: func(o any) {
			// A claim deleted while the watch was down (the test restarts
			// the apiserver) comes back as a tombstone: dropping it left
			// its cards held, and the next claim on them a false double.
			if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = t.Obj
			}
			if c, ok := o.(*resourcev1.ResourceClaim); ok {
				w.claim(cs, c, true)
			}
		},
	})
	f.Batch().V1().Jobs().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { w.job(o.(*batchv1.Job)) },
		UpdateFunc: func(_, o any) { w.job(o.(*batchv1.Job)) },
	})
	f.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { w.pod(o.(*corev1.Pod)) },
		UpdateFunc: func(_, o any) { w.pod(o.(*corev1.Pod)) },
	})
	wctx, wstop := context.WithCancel(ctx)
	defer wstop()
	f.Start(wctx.Done())
	f.WaitForCacheSync(wctx.Done())

	// 3. Phase 1: three nodes held (one briefly), a 16-card job that must
	// wait for a reservation, and a checkpointable 8-card job backfilled on
	// the fourth node (its limit fits before the reservation), so that when
	// the short holder ends early, the 16-card job's reservation comes due
	// on the checkpointable job's cards and it is suspended. The planner
	// preempts only for a gain of more than 10 minutes and protects a
	// backfill job for 10-20% of its estimated runtime, so these run on
	// minutes, not seconds.
	ckpt := map[string]string{kube.AnnCheckpointable: "true", kube.AnnCheckpointCost: "5s", kube.AnnUser: "carol", kube.AnnClass: "search"}
	long := map[string]string{kube.AnnUser: "alice", kube.AnnClass: "training"}
	phase1 := []workJob{
		{name: "p1-a-hold-short", pods: 1, perPod: 8, runtime: 15 * time.Second, limit: 30 * time.Minute, ann: long},
		{name: "p1-b-hold-long", pods: 1, perPod: 8, runtime: 5 * time.Minute, limit: time.Hour, ann: long},
		{name: "p1-c-hold-long", pods: 1, perPod: 8, runtime: 5 * time.Minute, limit: time.Hour, ann: long},
		{name: "p1-d-big16", pods: 2, perPod: 8, runtime: 30 * time.Second, limit: 10 * time.Minute,
			ann: map[string]string{kube.AnnUser: "bob", kube.AnnClass: "training", kube.AnnBackfill: "opt-out"}},
		{name: "p1-e-ckpt", pods: 1, perPod: 8, runtime: 4 * time.Minute, limit: 15 * time.Minute, ann: ckpt},
	}
	for _, j := range phase1 {
		create(ctx, t, cs, j)
	}
	e2etest.WaitFor(t, "the 16-card job to wait with an estimated start", 3*time.Minute, 200*time.Millisecond, func() bool {
		j := w.get("p1-d-big16")
		return j != nil && j.Annotations[kube.AnnWaiting] != "" && j.Annotations[kube.AnnEstimatedStart] != ""
	})
	t.Logf("a waiting job:\n%s", describe(t, e, "p1-d-big16", "describe-waiting.txt"))
	e2etest.WaitFor(t, "the checkpointable job to start as backfill", 3*time.Minute, 200*time.Millisecond, func() bool {
		j := w.get("p1-e-ckpt")
		return j != nil && j.Annotations[kube.AnnAllocation] == "backfill"
	})
	t.Logf("a backfill job:\n%s", describe(t, e, "p1-e-ckpt", "describe-backfill.txt"))
	// The service's reservation for it, as last planned before it started.
	var bigEst time.Time
	e2etest.WaitFor(t, "the 16-card job to start", 15*time.Minute, 200*time.Millisecond, func() bool {
		if w.get("p1-d-big16").Annotations[kube.AnnStartedAt] != "" {
			return true
		}
		if in, err := insight("p1-d-big16"); err == nil && in.GetState() == pb.JobState_JOB_STATE_RESERVED {
			bigEst = in.GetEstimatedStart().AsTime()
		}
		return false
	})

	t.Logf("the preempted job:\n%s", describe(t, e, "p1-e-ckpt", "describe-preempted.txt"))

	// A Job huitian does not manage (no queue label, not suspended) holds
	// card 0 of gpu-2 for a while: huitian must neither touch it nor plan
	// that card while it is held.
	unmanaged := workJob{name: "x-unmanaged", pods: 1, perPod: 1, runtime: 90 * time.Second, limit: time.Hour}
	create(ctx, t, cs, unmanaged, `device.attributes["gpu.huitian.dev"].uuid == "GPU-2-0"`)

	// 4. Phase 2: the rest of the workload, 1 to 16 cards; the adapter is
	// restarted while it runs.
	sizes := []struct {
		pods   int32
		perPod int64
	}{{1, 1}, {1, 2}, {1, 1}, {1, 4}, {2, 2}, {1, 8}, {1, 1}, {2, 4}, {1, 2}, {1, 3}, {2, 8}, {1, 1}}
	var phase2 []workJob
	for i := range 56 {
		s := sizes[i%len(sizes)]
		rt := time.Duration(4+(i*7)%13) * time.Second
		ann := map[string]string{kube.AnnUser: []string{"alice", "bob", "dave", "erin"}[i%4], kube.AnnClass: []string{"evaluation", "preprocessing", "training"}[i%3]}
		if i%5 == 0 {
			ann[kube.AnnCheckpointable], ann[kube.AnnCheckpointCost] = "true", "2s"
		}
		phase2 = append(phase2, workJob{name: fmt.Sprintf("p2-%02d", i), pods: s.pods, perPod: s.perPod, runtime: rt, limit: 3*rt + 20*time.Second, ann: ann})
	}
	for i, j := range phase2 {
		create(ctx, t, cs, j)
		switch i {
		case 20:
			if err := adapter.Stop(); err != nil {
				t.Errorf("stop huitian kube: %v", err)
			}
			adapter.Start()
		case 40:
			restartAPIServer(t, e, cs)
		}
	}
	all := append(slices.Clone(phase1), phase2...)
	e2etest.WaitFor(t, "the unmanaged job to complete", 10*time.Minute, 200*time.Millisecond, func() bool {
		j := w.get(unmanaged.name)
		return j != nil && hasCond(j, batchv1.JobComplete)
	})

	// 5. Every Job completes.
	e2etest.WaitFor(t, "every job to complete", 20*time.Minute, 200*time.Millisecond, func() bool {
		for _, j := range all {
			got := w.get(j.name)
			if got == nil || !hasCond(got, batchv1.JobComplete) {
				if got != nil && hasCond(got, batchv1.JobFailed) {
					t.Fatalf("job %s failed: %v", j.name, got.Status.Conditions)
				}
				return false
			}
		}
		return true
	})

	// 6. The checks.
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, v := range w.violations {
		t.Errorf("%s", v)
	}
	if w.checked == 0 {
		t.Errorf("no claim allocation was seen")
	}
	// Every admission's claims together got exactly the planned cards.
	for jk, devs := range w.claimed {
		_, plan, _ := strings.Cut(jk, "|")
		cards, _ := kube.DecodeCards(plan)
		if len(devs) != len(cards) {
			t.Errorf("%s: claims got %d cards %v, the plan has %d", jk, len(devs), devs, len(cards))
		}
	}
	t.Logf("%d claim allocations checked against the plan, %d admissions", w.checked, len(w.claimed))

	// The Job huitian does not manage: untouched, and its card not planned
	// while it held it (a plan made before the adapter could see the hold,
	// a cycle and its catch-up, is allowed: the scheduler makes it wait).
	for k := range w.jobs[unmanaged.name].Annotations {
		if strings.HasPrefix(k, "huitian.dev/") {
			t.Errorf("the unmanaged job got annotation %s", k)
		}
	}
	if len(w.external) == 0 {
		t.Errorf("the unmanaged job's claim was never seen allocated")
	}
	for _, h := range w.external {
		for _, a := range w.admissions {
			cards, _ := kube.DecodeCards(a.cards)
			on := slices.ContainsFunc(cards, func(c *pb.CardRef) bool { return fmt.Sprintf("%s/gpu-%d", c.GetNode(), c.GetIndex()) == h.card })
			if on && a.at.After(h.from.Add(2*interval+2*time.Second)) && (h.to.IsZero() || a.at.Before(h.to)) {
				t.Errorf("%s admitted on %s at %s while the unmanaged claim %s held it (from %s to %s)",
					a.job, h.card, a.at.Format(time.TimeOnly), h.claim, h.from.Format(time.TimeOnly), h.to.Format(time.TimeOnly))
			}
		}
	}
	t.Logf("unmanaged holds: %d; admissions: %d", len(w.external), len(w.admissions))

	// The 16-card job started no later than its reservation plus one cycle.
	est, started := bigEst, w.started["p1-d-big16"]
	if est.IsZero() || started.After(est.Add(interval+time.Second)) {
		t.Errorf("16-card job started at %s, its last estimated start was %s (one cycle is %s)", started, est, interval)
	}
	t.Logf("16-card job: reserved from %s (last plan before its start), started %s", est.Format(time.TimeOnly), started.Format(time.TimeOnly))

	// A SUSPEND preemption happened, and its job completed (checked above).
	evs, err := cs.EventsV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	starts, suspends := map[string]int{}, map[string]int{}
	for _, ev := range evs.Items {
		switch {
		case ev.Reason == "Started":
			starts[ev.Regarding.Name]++
		case ev.Reason == "Preempted":
			if strings.HasPrefix(ev.Note, "SUSPEND") {
				suspends[ev.Regarding.Name]++
			}
			starts[ev.Regarding.Name]-- // a preempted job is admitted once more
		}
	}
	if len(suspends) == 0 {
		t.Errorf("no SUSPEND preemption happened")
	}
	t.Logf("suspended: %v", suspends)
	// No job was started twice for one admission (the restart included).
	for _, j := range all {
		if starts[j.name] != 1 {
			t.Errorf("job %s: %d Started events beyond its preemptions, want 1", j.name, starts[j.name])
		}
	}

	// The service learned every FINISHED (the adapter reports a finish on
	// the cycle after it sees it).
	w.mu.Unlock()
	e2etest.WaitFor(t, "the service to learn every finish", 2*time.Minute, 200*time.Millisecond, func() bool {
		for _, j := range all {
			if in, err := insight(j.name); err != nil || in.GetState() != pb.JobState_JOB_STATE_FINISHED {
				return false
			}
		}
		return true
	})
	w.mu.Lock()
	for _, j := range all {
		if in, _ := insight(j.name); in.GetExit() != pb.ExitState_EXIT_STATE_COMPLETED {
			t.Errorf("service says %s ended %v, want completed", j.name, in.GetExit())
		}
	}
}
