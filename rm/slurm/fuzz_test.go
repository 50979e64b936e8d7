package slurm

import (
	"os"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/huitian/huitian/internal/wire"
)

// Every parser of Slurm's output takes any bytes without a panic, and what
// it accepts is consistent.

func seedFiles(f *testing.F, names ...string) {
	for _, n := range names {
		b, err := os.ReadFile("testdata/" + n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
}

func FuzzParseNodes(f *testing.F) {
	seedFiles(f, "scontrol-show-node.txt", "scontrol-show-node-d.txt")
	f.Add("NodeName=x Gres=gpu:a:2(S:0),gpu:3 State=IDLE+DRAIN Partitions=a,b")
	f.Fuzz(func(t *testing.T, s string) {
		nodes, _ := ParseNodes([]byte(s))
		for _, n := range nodes {
			if n.Name == "" || n.GPUCount() < 0 || n.GPUCount() > maxIndex {
				t.Fatalf("accepted node %+v", n)
			}
			n.Unavailable()
		}
	})
}

func FuzzParseJobDetail(f *testing.F) {
	seedFiles(f, "scontrol-show-job-d-multi.txt", "scontrol-show-job-d-typed.txt", "scontrol-show-job-d-failed.txt", "scontrol-show-job-d-nogpu.txt")
	f.Fuzz(func(t *testing.T, s string) {
		name, _, _ := strings.Cut(strings.TrimPrefix(s[strings.Index(s, "JobName=")+1:], "obName="), " ")
		_, allocs, err := ParseJobDetail(s, name)
		if err != nil {
			return
		}
		for _, a := range allocs {
			for _, g := range a.GPUs {
				if g < 0 || g > maxIndex {
					t.Fatalf("index %d accepted", g)
				}
			}
		}
	})
}

func FuzzParseQueue(f *testing.F) {
	seedFiles(f, "squeue.json")
	f.Add(`{"jobs":[{"job_id":1,"nodes":"n[1-2]","gres_detail":["gpu:1(IDX:0)","gpu:1(IDX:7)"],"tres_per_node":"gres:gpu:1","time_limit":5}]}`)
	f.Add(`{"jobs":[{"job_id":2,"node_count":2,"tres_per_node":"gres:gpu:4","time_limit":90,"comment":"huitian: class=training checkpointable=true checkpoint-cost=2m backfill=low-risk max-preemption-probability=0.2 topology=same-switch comm=high priority=3"}]}`)
	f.Fuzz(func(t *testing.T, s string) {
		jobs, err := ParseQueue([]byte(s))
		if err != nil {
			return
		}
		for i := range jobs {
			jobs[i].Allocs()
			spec, err := jobSpec(&jobs[i], &state{})
			if err != nil {
				continue
			}
			if spec.GetCards() < 1 || spec.GetTimeLimit().AsDuration() <= 0 {
				t.Fatalf("accepted spec %v", spec)
			}
			// What the driver accepts, the service accepts: the
			// contract's rules.
			probs, err := wire.Problems(spec)
			if err != nil {
				t.Fatal(err)
			}
			if len(probs) > 0 {
				t.Fatalf("accepted %v, which the service refuses: %v", spec, probs)
			}
		}
	})
}

func FuzzParseJobStates(f *testing.F) {
	seedFiles(f, "squeue-states.txt")
	f.Add("3_[1-4] PENDING\n2 COMPLETING\n1 REQUEUE_HOLD\n")
	f.Add("JOBID STATE\n7 running+requeued\n")
	f.Fuzz(func(t *testing.T, s string) {
		jobs, err := ParseJobStates([]byte(s))
		if err != nil {
			return
		}
		// What it accepts is a job id and a state word, and reads the same
		// when printed as squeue prints it.
		var b strings.Builder
		for _, j := range jobs {
			if j.ID == "" || j.ID[0] < '0' || j.ID[0] > '9' || strings.ContainsFunc(j.ID, unicode.IsSpace) ||
				j.State == "" || strings.ContainsFunc(j.State, func(r rune) bool { return (r < 'A' || r > 'Z') && r != '_' }) {
				t.Fatalf("accepted %+v", j)
			}
			b.WriteString(j.ID + " " + j.State + "\n")
		}
		again, err := ParseJobStates([]byte(b.String()))
		if err != nil || !slices.Equal(again, jobs) {
			t.Fatalf("%q read back as %v, %v; want %v", b.String(), again, err, jobs)
		}
	})
}

func FuzzHostlist(f *testing.F) {
	for _, s := range []string{"n[1-3,5],gpu07", "a[08-10]b[1-2]", "n1", "(null)", "x[", "x[9999999999]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		hosts, err := ExpandHostlist(s)
		if err == nil && len(hosts) > maxIndex {
			t.Fatalf("%d hosts", len(hosts))
		}
	})
}

func FuzzParseGres(f *testing.F) {
	for _, s := range []string{"gpu:8", "gpu:a100:4(S:0),gpu:a100:4(S:1)", "gpu:c0:1(IDX:0),gpu:c1:0(IDX:)", "gres:gpu:2", "gpu:2(IDX:0-1,5)", "(null)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		gs, err := ParseGres(s)
		if err != nil {
			return
		}
		for _, g := range gs {
			if g.Count < 0 || len(g.Idx) > maxIndex {
				t.Fatalf("accepted %+v", g)
			}
		}
	})
}

func FuzzAdminComment(f *testing.F) {
	f.Add("huitian: BACKFILL {hx k=B c=n1:0,1;n2:3 g=n1:0,1;n2:3 t=1 p=2 s=3 r=1 n=4 y=S,5,1,B e=6 w=reserved }")
	f.Add("plain words")
	f.Fuzz(func(t *testing.T, s string) {
		words, st, err := splitAdmin(s)
		if err != nil {
			return
		}
		// What the driver writes back reads the same.
		w2, st2, err := splitAdmin(adminComment(words, st))
		if err != nil {
			t.Fatalf("re-read %q: %v", adminComment(words, st), err)
		}
		if strings.ContainsAny(w2, "\n{}") || encodeAllocs(st2.Planned) != encodeAllocs(st.Planned) || st2.Notice != st.Notice {
			t.Fatalf("round trip of %q changed it", s)
		}
	})
}
