package kube

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pb "github.com/huitian/huitian/proto/huitian/v1"
)

var t0 = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

// testJob is a Job of parallelism pods, each claiming cards from template tpl.
func testJob(name string, parallelism int32, ann map[string]string) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ml", Annotations: ann, CreationTimestamp: metav1.NewTime(t0),
			Labels: map[string]string{LabelQueue: "default"}},
		Spec: batchv1.JobSpec{
			Suspend: ptr(true), Parallelism: ptr(parallelism), ActiveDeadlineSeconds: ptr(int64(3600)),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				ResourceClaims: []corev1.PodResourceClaim{{Name: "gpus", ResourceClaimTemplateName: ptr(name + "-gpus")}},
			}},
		},
	}
}

func testClaim(count int64, selectors ...string) resourcev1.ResourceClaimTemplateSpec {
	ex := &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.nvidia.com", Count: count}
	for _, s := range selectors {
		ex.Selectors = append(ex.Selectors, resourcev1.DeviceSelector{CEL: &resourcev1.CELDeviceSelector{Expression: s}})
	}
	return resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
		Requests: []resourcev1.DeviceRequest{{Name: "gpus", Exactly: ex}}}}}
}

func TestJobSpec(t *testing.T) {
	cfg := Defaults()
	tests := []struct {
		name  string
		job   *batchv1.Job
		claim resourcev1.ResourceClaimTemplateSpec
		want  *pb.JobSpec
	}{{
		name:  "one pod of 4 cards is a same-node job; the claim's selector gives the model",
		job:   testJob("a", 1, nil),
		claim: testClaim(4, `device.attributes["gpu.nvidia.com"].productName == "H100-SXM5-80GB"`),
		want: &pb.JobSpec{Id: "ml/a", User: "ml", JobClass: "batch", Cards: 4, Topology: pb.Topology_TOPOLOGY_SAME_NODE,
			TimeLimit: durationpb.New(time.Hour), SubmitTime: timestamppb.New(t0), CardModel: "H100-SXM5-80GB",
			Backfill: pb.BackfillPreference_BACKFILL_PREFERENCE_ALLOW},
	}, {
		name: "two pods of 8 take 8 per node; the annotations give the rest",
		job: testJob("b", 2, map[string]string{AnnUser: "alice", AnnClass: "training", AnnCheckpointable: "true",
			AnnCheckpointCost: "2m", AnnBackfill: "low-risk", AnnMaxPreemptProb: "0.2", AnnTopology: "same-switch",
			AnnComm: "high", AnnPriority: "5", AnnRequeueCount: "1"}),
		claim: testClaim(8),
		want: &pb.JobSpec{Id: "ml/b", User: "alice", JobClass: "training", Cards: 16, CardsPerNode: 8,
			Topology: pb.Topology_TOPOLOGY_SAME_SWITCH, Comm: pb.Comm_COMM_HIGH, TimeLimit: durationpb.New(time.Hour),
			Checkpointable: true, CheckpointCost: durationpb.New(2 * time.Minute),
			Backfill: pb.BackfillPreference_BACKFILL_PREFERENCE_LOW_RISK_ONLY, MaxPreemptionProbability: 0.2,
			Priority: 5, RequeueCount: 1, SubmitTime: timestamppb.New(t0)},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cr, err := parseClaim("gpus", tt.job.Name+"-gpus", tt.claim)
			if err != nil {
				t.Fatal(err)
			}
			got, err := jobSpec(tt.job, cr, &cfg)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, protocmp.Transform()); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
		})
	}
}

func TestJobSpecNamesEveryBadField(t *testing.T) {
	cfg := Defaults()
	j := testJob("bad", 2, map[string]string{AnnCheckpointable: "maybe", AnnBackfill: "sometimes", AnnTopology: "same-node",
		AnnMaxPreemptProb: "2"})
	j.Spec.ActiveDeadlineSeconds = nil
	cr, err := parseClaim("gpus", "bad-gpus", testClaim(4))
	if err != nil {
		t.Fatal(err)
	}
	_, err = jobSpec(j, cr, &cfg)
	if !errors.Is(err, ErrInvalidJob) {
		t.Fatalf("error %v, want ErrInvalidJob", err)
	}
	for _, field := range []string{"spec.activeDeadlineSeconds", AnnCheckpointable, AnnBackfill, AnnTopology, AnnMaxPreemptProb} {
		if !strings.Contains(err.Error(), field) {
			t.Errorf("error %q does not name %s", err, field)
		}
	}
}

// TestJobSpecRefusesWhatWouldWrap: numbers past what the contract's
// fields hold are refused, naming the field, instead of sent wrapped
// around (65,536 pods of 65,536 cards were 0 cards; 2³² + 1 cards a pod
// were 1) — and a probability that is not a number is no probability.
func TestJobSpecRefusesWhatWouldWrap(t *testing.T) {
	cfg := Defaults()
	for _, tc := range []struct {
		name     string
		par      int32
		count    int64
		deadline int64
		ann      map[string]string
		field    string
	}{
		{"cards × parallelism past int32", 65536, 65536, 3600, nil, "spec.parallelism"},
		{"a pod's cards past int32", 1, 1<<32 + 1, 3600, nil, "claim template"},
		{"a negative count", 1, -15, 3600, nil, "claim template"},
		{"a limit no duration holds", 1, 8, 1 << 40, nil, "spec.activeDeadlineSeconds"},
		{"NaN probability", 1, 8, 3600, map[string]string{AnnMaxPreemptProb: "NaN"}, AnnMaxPreemptProb},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := testJob("w", tc.par, tc.ann)
			j.Spec.ActiveDeadlineSeconds = &tc.deadline
			cr, err := parseClaim("gpus", "w-gpus", testClaim(tc.count))
			if err != nil {
				t.Fatal(err)
			}
			spec, err := jobSpec(j, cr, &cfg)
			if !errors.Is(err, ErrInvalidJob) || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("spec %v, error %v: want ErrInvalidJob naming %s", spec, err, tc.field)
			}
		})
	}
}

func TestParseClaimRefusesWhatCannotBePinned(t *testing.T) {
	all := testClaim(0)
	all.Spec.Devices.Requests[0].Exactly.AllocationMode = resourcev1.DeviceAllocationModeAll
	two := testClaim(1)
	two.Spec.Devices.Requests = append(two.Spec.Devices.Requests, two.Spec.Devices.Requests[0])
	for name, spec := range map[string]resourcev1.ResourceClaimTemplateSpec{"allocationMode All": all, "two requests": two} {
		if _, err := parseClaim("gpus", "t", spec); !errors.Is(err, ErrInvalidJob) {
			t.Errorf("%s: error %v, want ErrInvalidJob", name, err)
		}
	}
}

func TestCardsRoundTrip(t *testing.T) {
	cards := []*pb.CardRef{{Node: "n2", Index: 3}, {Node: "n1", Index: 5}, {Node: "n1", Index: 0}}
	s := encodeCards(cards)
	if s != "n1:0,5;n2:3" {
		t.Fatalf("encodeCards = %q", s)
	}
	back, err := DecodeCards(s)
	if err != nil {
		t.Fatal(err)
	}
	if got := encodeCards(back); got != s {
		t.Errorf("round trip %q → %q", s, got)
	}
	for _, bad := range []string{"", "n1", "n1:", "n1:a", "n1:-1", "n1:2147483648", "n1:4294967297"} {
		if _, err := DecodeCards(bad); err == nil {
			t.Errorf("DecodeCards(%q) accepted", bad)
		}
	}
}

func testNode(name string, cordoned bool) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"rack": "r1"}},
		Spec:   corev1.NodeSpec{Unschedulable: cordoned},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
}

// TestSliceRoundTrip: a node published by SliceFor reads back the same
// through buildInventory, which is how huitian topo and huitian kube agree.
func TestSliceRoundTrip(t *testing.T) {
	cfg := Defaults()
	cfg.Driver = "gpu.huitian.dev"
	cfg.SwitchLabel = "rack"
	node := &pb.Node{Name: "gpu-1"}
	for i := range 8 {
		node.Cards = append(node.Cards, &pb.Card{Index: int32(i), Uuid: "GPU-1-" + string(rune('a'+i)), Model: "H100",
			MemoryBytes: 80 << 30, NvlinkIsland: []string{"nvl-a", "nvl-b"}[i/4], NumaNode: -1})
	}
	other := SliceFor(&pb.Node{Name: "gone", Cards: []*pb.Card{{Index: 0}}}, cfg.Driver, cfg.Attributes)
	foreign := SliceFor(node, "gpu.nvidia.com", cfg.Attributes)
	inv := buildInventory(&cfg, []*corev1.Node{testNode("gpu-1", true)},
		[]*resourcev1.ResourceSlice{SliceFor(node, cfg.Driver, cfg.Attributes), other, foreign})
	want := &pb.Cluster{Id: "kubernetes", Nodes: []*pb.Node{{Name: "gpu-1", Cards: node.Cards, Domains: []string{"switch/r1"}, Unschedulable: true}},
		Domains: []*pb.Domain{{Id: "switch/r1", Kind: pb.DomainKind_DOMAIN_KIND_SWITCH}}}
	if diff := cmp.Diff(want, inv.cluster, protocmp.Transform()); diff != "" {
		t.Errorf("cluster (-want +got):\n%s", diff)
	}
	if len(inv.problems) != 1 || !strings.Contains(inv.problems[0], "gone") {
		t.Errorf("problems %q, want the slice of the missing node", inv.problems)
	}
	if c := inv.byDevice["gpu-1/gpu-5"]; c == nil || c.uuid != "GPU-1-f" || c.pb.GetIndex() != 5 {
		t.Errorf("device gpu-1/gpu-5 → %+v", c)
	}
}

// TestSliceIndexPastInt32IsAProblem: a device whose index attribute no
// card index holds is a problem of the inventory, not a card whose index
// wrapped around onto another's (2³² + 3 was card 3).
func TestSliceIndexPastInt32IsAProblem(t *testing.T) {
	cfg := Defaults()
	cfg.Driver = "gpu.huitian.dev"
	sl := SliceFor(&pb.Node{Name: "gpu-1", Cards: []*pb.Card{{Index: 0}, {Index: 1}}}, cfg.Driver, cfg.Attributes)
	far := int64(1<<32 + 3)
	sl.Spec.Devices[1].Attributes[resourcev1.QualifiedName(cfg.Attributes.Index)] = resourcev1.DeviceAttribute{IntValue: &far}
	inv := buildInventory(&cfg, []*corev1.Node{testNode("gpu-1", false)}, []*resourcev1.ResourceSlice{sl})
	if len(inv.problems) != 1 || !strings.Contains(inv.problems[0], "gpu-1") || !strings.Contains(inv.problems[0], cfg.Attributes.Index) {
		t.Errorf("problems %q, want the device whose index is past int32", inv.problems)
	}
	if n := inv.cluster.GetNodes(); len(n) != 1 || len(n[0].GetCards()) != 1 || n[0].GetCards()[0].GetIndex() != 0 {
		t.Errorf("cluster %v, want gpu-1 with card 0 alone", inv.cluster)
	}
}

func TestRetention(t *testing.T) {
	if got := retention(&pb.Start{ExpectedRetention: durationpb.New(90 * time.Minute)}); got != "1h30m0s" {
		t.Errorf("retention of 90 min = %q", got)
	}
	if got := retention(&pb.Start{}); got != "until done" {
		t.Errorf("retention without a figure = %q, want until done", got)
	}
}

// TestJobsListedInSubmitOrder: the snapshot lists Jobs by creation time,
// then by id among those created in the same second, whatever their names.
func TestJobsListedInSubmitOrder(t *testing.T) {
	at := func(name, ns string, sec int) *batchv1.Job {
		j := testJob(name, 1, nil)
		j.Namespace = ns
		j.CreationTimestamp = metav1.NewTime(t0.Add(time.Duration(sec) * time.Second))
		return j
	}
	jobs := []*batchv1.Job{at("a", "ml", 30), at("z", "ml", 10), at("m", "ml", 20), at("b", "ml", 10), at("c", "cv", 10)}
	slices.SortFunc(jobs, submitOrder)
	var got []string
	for _, j := range jobs {
		got = append(got, jobID(j))
	}
	want := []string{"cv/c", "ml/b", "ml/z", "ml/m", "ml/a"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("listing (-want +got):\n%s", diff)
	}
}

// TestWhatWakesTheLoop: the informer changes the loop plans on — a Job's
// end, a pod's end, a pod waiting for its placement — and not the others
// (a Job's own update, a pod that starts running).
func TestWhatWakesTheLoop(t *testing.T) {
	running := testJob("a", 1, nil)
	done := testJob("a", 1, nil)
	done.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
	failed := testJob("a", 1, nil)
	failed.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue}}
	pending := testJob("a", 1, nil)
	pending.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionFalse}}
	for _, tc := range []struct {
		name string
		o, n *batchv1.Job
		want bool
	}{
		{"completes", running, done, true},
		{"fails", running, failed, true},
		{"stays done", done, done, false},
		{"updated, not done", running, pending, false},
	} {
		if got := jobEnded(tc.o, tc.n); got != tc.want {
			t.Errorf("job %s: jobEnded %v, want %v", tc.name, got, tc.want)
		}
	}
	pod := func(phase corev1.PodPhase, gates ...string) *corev1.Pod {
		p := &corev1.Pod{Status: corev1.PodStatus{Phase: phase}}
		for _, g := range gates {
			p.Spec.SchedulingGates = append(p.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: g})
		}
		return p
	}
	for _, tc := range []struct {
		name string
		o, n *corev1.Pod
		want bool
	}{
		{"succeeds", pod(corev1.PodRunning), pod(corev1.PodSucceeded), true},
		{"fails", pod(corev1.PodRunning), pod(corev1.PodFailed), true},
		{"starts running", pod(corev1.PodPending), pod(corev1.PodRunning), false},
		{"stays failed", pod(corev1.PodFailed), pod(corev1.PodFailed), false},
	} {
		if got := podEnded(tc.o, tc.n); got != tc.want {
			t.Errorf("pod %s: podEnded %v, want %v", tc.name, got, tc.want)
		}
	}
	if !waitsForPlacement(pod(corev1.PodPending, "other", GatePlacement)) || waitsForPlacement(pod(corev1.PodPending, "other")) {
		t.Errorf("waitsForPlacement: a pod with the placement gate, and only such a pod, waits for its placement")
	}
	if jobEnded(running, pod(corev1.PodSucceeded)) || podEnded(running, done) {
		t.Errorf("an object of another kind (a tombstone) is no end")
	}
}
