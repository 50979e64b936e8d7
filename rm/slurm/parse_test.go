package slurm

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func read(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSlurmParseNodesCaptured(t *testing.T) {
	nodes, err := ParseNodes(read(t, "scontrol-show-node.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 4 {
		t.Fatalf("got %d nodes, want 4", len(nodes))
	}
	n1, n4 := nodes[0], nodes[3]
	if n1.Name != "n1" || n1.GPUCount() != 8 || n1.GPUs[3].Type != "c3" || n1.Unavailable() || !cmp.Equal(n1.Partitions, []string{"huitian"}) {
		t.Errorf("n1 = %+v", n1)
	}
	if n4.Name != "n4" || !n4.Unavailable() || !strings.Contains(n4.Reason, "maintenance window") {
		t.Errorf("n4 (drained) = %+v, want unavailable with its reason", n4)
	}
	// The OS value holds spaces and '#': one field.
	fs := ParseShow(strings.Split(string(read(t, "scontrol-show-node.txt")), "\n")[0])
	if os, _ := get(fs, "OS"); !strings.Contains(os, "SMP PREEMPT_DYNAMIC") {
		t.Errorf("OS = %q", os)
	}
	if _, err := ParseNodes(read(t, "scontrol-show-node-d.txt")); err != nil {
		t.Errorf("-d output: %v", err)
	}
}

func TestSlurmParseJobDetailCaptured(t *testing.T) {
	for _, tc := range []struct {
		file, name, state string
		want              []Alloc
	}{
		{"scontrol-show-job-d-multi.txt", "multi", "RUNNING", []Alloc{{"n1", []int{0, 4}}, {"n2", []int{0, 1}}}},
		{"scontrol-show-job-d-typed.txt", "t11", "RUNNING", []Alloc{{"n3", []int{6}}}},
		{"scontrol-show-job-d-nogpu.txt", "t12", "RUNNING", []Alloc{{"n2", nil}}},
		{"scontrol-show-job-d-failed.txt", "odd name= x", "FAILED", []Alloc{{"n2", nil}}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			state, got, err := ParseJobDetail(strings.TrimSpace(string(read(t, tc.file))), tc.name)
			if err != nil {
				t.Fatal(err)
			}
			if state != tc.state {
				t.Errorf("state %q, want %q", state, tc.state)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("allocs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSlurmParseJobDetailRefusesAShiftingName(t *testing.T) {
	name := "x JOB_GRES=gpu:8 Nodes=n1 GRES=gpu:8(IDX:0-7) MinCPUsNode=1"
	line := "JobId=9 JobName=" + name + " UserId=root(0) JobState=RUNNING JOB_GRES=gpu:1 Nodes=n2 GRES=gpu:1(IDX:3) MinCPUsNode=1 Comment=Nodes=n3 GRES=gpu:1(IDX:5)"
	_, got, err := ParseJobDetail(line, name)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]Alloc{{"n2", []int{3}}}, got); diff != "" {
		t.Errorf("a name and a comment forging GPUs (-want +got):\n%s", diff)
	}
	if _, _, err := ParseJobDetail(line, "y"); !errors.Is(err, ErrParse) {
		t.Errorf("another name: got %v, want ErrParse", err)
	}
}

func TestSlurmParseQueueCaptured(t *testing.T) {
	jobs, err := ParseQueue(read(t, "squeue.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 14 {
		t.Fatalf("got %d jobs, want 14", len(jobs))
	}
	j13 := jobs[12]
	if j13.ID != 13 || j13.State != "RUNNING" || j13.NodeCount != 2 || *j13.TimeLimit != 3 || !strings.Contains(j13.Comment, "checkpointable=true") {
		t.Errorf("job 13 = %+v", j13)
	}
	as, err := j13.Allocs()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]Alloc{{"n1", []int{0, 4}}, {"n2", []int{0, 1}}}, as); diff != "" {
		t.Errorf("job 13 allocs (-want +got):\n%s", diff)
	}
	spec, err := jobSpec(&j13, &state{})
	if err != nil {
		t.Fatal(err)
	}
	if spec.GetCards() != 4 || spec.GetCardsPerNode() != 2 || !spec.GetCheckpointable() || spec.GetCheckpointCost().AsDuration().Seconds() != 10 ||
		spec.GetUser() != "alice" || spec.GetJobClass() != "training" || spec.GetTimeLimit().AsDuration().Minutes() != 3 {
		t.Errorf("job 13 spec = %v", spec)
	}
}

// TestSlurmParseJobStates: the watch's squeue, as Slurm 22.05 prints it
// (a pending array on one line, a flag in place of the state), and what
// is refused with the line it is on.
func TestSlurmParseJobStates(t *testing.T) {
	got, err := ParseJobStates(read(t, "squeue-states.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want := []JobState{{"1", "PENDING"}, {"2", "PENDING"}, {"3_1", "RUNNING"}, {"3_2", "RUNNING"}, {"3_3", "RUNNING"}, {"3_4", "RUNNING"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("captured (-want +got):\n%s", diff)
	}
	got, err = ParseJobStates([]byte("  3_[1-4]   PENDING  \n\n2 COMPLETING\n7 running+requeued\n"))
	want = []JobState{{"3_[1-4]", "PENDING"}, {"2", "COMPLETING"}, {"7", "RUNNING"}}
	if diff := cmp.Diff(want, got); err != nil || diff != "" {
		t.Errorf("spaced, flagged: %v (-want +got):\n%s", err, diff)
	}
	if got, err := ParseJobStates(nil); err != nil || len(got) != 0 {
		t.Errorf("no jobs: %v, %v", got, err)
	}
	for _, tc := range []struct{ what, in, want string }{
		{"a header (no --noheader)", "JOBID STATE\n1 PENDING\n", "line 1"},
		{"a third column", "1 PENDING\n2 RUNNING huitian\n", "line 2"},
		{"no state", "1 PENDING\n\n3\n", "line 3"},
		{"a state that is no word", "1 PEND1NG\n", "not a job state"},
		{"only flags", "1 +\n", "not a job state"},
	} {
		if _, err := ParseJobStates([]byte(tc.in)); !errors.Is(err, ErrParse) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want ErrParse with %q", tc.what, err, tc.want)
		}
	}
}

func TestSlurmParseErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"gres count", "gpu:x:y", "count"},
		{"gres paren", "gpu:2(IDX:0", "unclosed"},
		{"index range", "3-1", "bad range"},
		{"hostlist bracket", "n[1-2", "unclosed"},
		{"hostlist range", "n[5-2]", "bad range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			switch {
			case strings.HasPrefix(tc.name, "gres"):
				_, err = ParseGres(tc.in)
			case strings.HasPrefix(tc.name, "index"):
				_, err = ParseIdx(tc.in)
			default:
				_, err = ExpandHostlist(tc.in)
			}
			if err == nil || !errors.Is(err, ErrParse) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%q: got %v, want ErrParse with %q", tc.in, err, tc.want)
			}
		})
	}
	if _, err := ParseQueue([]byte(`{"jobs": 3}`)); err == nil {
		t.Errorf("squeue with jobs=3: no error")
	}
	if _, err := ParseQueue([]byte(`{"errors": [{"error": "x"}], "jobs": []}`)); err == nil {
		t.Errorf("squeue reporting errors: no error")
	}
}

func TestSlurmGresIndexListWithCommas(t *testing.T) {
	// Seen from Slurm 22.05: a job given GPUs 0, 4 and 5 of a node.
	got, err := ParseGres("gpu:3(IDX:0,4-5)")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]Gres{{Name: "gpu", Count: 3, Idx: []int{0, 4, 5}}}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestSlurmHostlist(t *testing.T) {
	got, err := ExpandHostlist("n[1-3,5],gpu07,a[08-10]b")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"n1", "n2", "n3", "n5", "gpu07", "a08b", "a09b", "a10b"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestSlurmJobSpecErrorsNameTheOption(t *testing.T) {
	lim := int64(5)
	for _, tc := range []struct {
		name string
		job  Job
		want []string
	}{
		{"no time", Job{ID: 1, TresPerNode: "gres:gpu:1", NodeCount: 1}, []string{"--time"}},
		{"no gpus", Job{ID: 2, TimeLimit: &lim, NodeCount: 1}, []string{"--gres"}},
		{"gpus per job", Job{ID: 3, TimeLimit: &lim, TresPerJob: "gres:gpu:4", TresPerNode: "gres:gpu:1"}, []string{"--gpus"}},
		{"bad options", Job{ID: 4, TimeLimit: &lim, TresPerNode: "gres:gpu:1", Comment: "mine huitian: checkpointable=maybe backfill=sometimes colour=red max-preemption-probability=2"},
			[]string{"checkpointable", "backfill", "colour", "max-preemption-probability"}},
		{"topology across nodes", Job{ID: 5, TimeLimit: &lim, TresPerNode: "gres:gpu:2", NodeCount: 2, Comment: "huitian: topology=same-node"}, []string{"topology"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := jobSpec(&tc.job, &state{})
			if err == nil || !errors.Is(err, ErrInvalidJob) {
				t.Fatalf("got %v, want ErrInvalidJob", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}

func TestSlurmStateRoundTrip(t *testing.T) {
	st := state{Kind: "B", Planned: []Alloc{{"n1", []int{0, 1}}, {"n2", []int{3}}}, Got: []Alloc{{"n1", []int{2, 3}}, {"n2", []int{3}}},
		StartedAt: 100, Protected: 160, Submit: 90, Restarts: 1, Notice: 200, Yield: &yield{"S", 210, 100, "B"}, Estimate: 300, Waiting: "reserved",
		Extra: [][2]string{{"z", "later"}}}
	admin := adminComment("huitian: BACKFILL, keeps its GPUs ~2h10m {braces}\nnewline", st)
	if strings.ContainsAny(admin, "\n") {
		t.Errorf("newline kept: %q", admin)
	}
	words, got, err := splitAdmin(admin)
	if err != nil {
		t.Fatal(err)
	}
	if words != "huitian: BACKFILL, keeps its GPUs ~2h10m -braces- newline" {
		t.Errorf("words %q", words)
	}
	if diff := cmp.Diff(st, got, cmp.AllowUnexported(state{}, yield{})); diff != "" {
		t.Errorf("state (-want +got):\n%s", diff)
	}
	if _, _, err := splitAdmin("huitian: x {hx k=Z c=n1 y=1,2}"); err == nil {
		t.Errorf("bad state: no error")
	}
}
