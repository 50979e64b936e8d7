package sim

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/sim/trace"
)

func synthJobs(t testing.TB, n int) []trace.Job {
	t.Helper()
	tr, err := trace.Synth(trace.SynthOptions{Jobs: n, Seed: 7, Load: 1.2, Cards: 32})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Jobs
}

func hgx(t testing.TB, nodes int) *model.Cluster {
	t.Helper()
	c, err := HGX(nodes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestLearnerSeesEventsInTimeOrder(t *testing.T) {
	jobs := synthJobs(t, 400)
	byID := map[string]*trace.Job{}
	for i := range jobs {
		byID[jobs[i].ID] = &jobs[i]
	}
	var (
		last     time.Time
		started  = map[string]time.Time{}
		finished = map[string]bool{}
		events   int
		decided  int
		plans    int
	)
	check := func(now time.Time, what string) {
		if now.Before(last) {
			t.Fatalf("%s at %s after something at %s", what, now, last)
		}
		last = now
	}
	pl := &learner{
		Planner: planFunc(func(s *model.Snapshot) (*model.Decision, error) {
			plans++
			check(s.Now, "a cycle")
			for _, r := range s.Running {
				tj := byID[r.Job.ID]
				if end := sec(r.Start) + min(tj.Runtime, tj.Limit); end <= sec(s.Now) {
					t.Fatalf("at %d s the snapshot shows %s running; it ended at %d s", sec(s.Now), r.Job.ID, end)
				}
				if r.Job.TimeLimit != time.Duration(tj.Limit)*time.Second {
					t.Fatalf("running %s has limit %v, the trace's is %d s", r.Job.ID, r.Job.TimeLimit, tj.Limit)
				}
			}
			for _, q := range s.Queued {
				if q.TimeLimit != time.Duration(byID[q.ID].Limit)*time.Second || sec(q.Submit) > sec(s.Now) {
					t.Fatalf("queued %s: limit %v, submit %s at now %s", q.ID, q.TimeLimit, q.Submit, s.Now)
				}
			}
			return easy().Plan(t.Context(), s)
		}),
		observe: func(e model.Event) {
			events++
			check(e.Time, "event "+e.Kind.String()+" of "+e.JobID)
			tj := byID[e.JobID]
			if e.Job == nil || e.Job.ID != e.JobID || e.Job.TimeLimit != time.Duration(tj.Limit)*time.Second {
				t.Fatalf("event %s of %s carries spec %+v", e.Kind, e.JobID, e.Job)
			}
			switch e.Kind {
			case model.EventStarted:
				started[e.JobID] = e.Time
			case model.EventFinished:
				if finished[e.JobID] {
					t.Fatalf("%s finished twice", e.JobID)
				}
				finished[e.JobID] = true
				run := sec(e.Time) - sec(started[e.JobID])
				if want := min(tj.Runtime, tj.Limit); run != want || !e.Start.Equal(started[e.JobID]) {
					t.Fatalf("%s finished after %d s (start %s), want %d s (start %s)", e.JobID, run, e.Start, want, started[e.JobID])
				}
				wantExit := model.ExitCompleted
				if tj.Runtime > tj.Limit {
					wantExit = model.ExitKilledAtLimit
				}
				if e.Exit != wantExit {
					t.Fatalf("%s exit %s, want %s", e.JobID, e.Exit, wantExit)
				}
			default:
				t.Fatalf("unexpected event %s", e.Kind)
			}
		},
		decided: func(s *model.Snapshot, d *model.Decision) {
			decided++
			check(s.Now, "Decided")
			for _, st := range d.Starts {
				if !started[st.JobID].Equal(s.Now) {
					t.Fatalf("Decided for a start of %s before its Started event", st.JobID)
				}
			}
		},
	}
	res := run(t, jobs, pl, Config{Cluster: hgx(t, 4)})
	if decided != plans || decided != res.Summary.Cycles {
		t.Errorf("%d Decided calls, %d plans, %d cycles: want all equal", decided, plans, res.Summary.Cycles)
	}
	if len(finished) != len(jobs) || events != 2*len(jobs) {
		t.Errorf("%d jobs finished, %d events; want %d and %d", len(finished), events, len(jobs), 2*len(jobs))
	}
}

// TestNoLookAhead changes every job submitted after T (their runtimes,
// sizes, limits and ids, shuffled among them) and checks that every cycle up
// to T saw and decided exactly the same.
func TestNoLookAhead(t *testing.T) {
	jobs := synthJobs(t, 400)
	T := jobs[200].Submit
	cut := slices.IndexFunc(jobs, func(j trace.Job) bool { return j.Submit > T })
	future := slices.Clone(jobs)
	r := rand.New(rand.NewPCG(1, 2))
	tail := future[cut:]
	r.Shuffle(len(tail), func(i, k int) {
		tail[i].ID, tail[k].ID = tail[k].ID, tail[i].ID
		tail[i].Runtime, tail[k].Runtime = tail[k].Runtime, tail[i].Runtime
		tail[i].Limit, tail[k].Limit = tail[k].Limit, tail[i].Limit
		tail[i].Spec, tail[k].Spec = tail[k].Spec, tail[i].Spec
	})
	for i := range tail {
		tail[i].Runtime = tail[i].Runtime*3 + 1
		tail[i].ID += "-changed"
		tail[i].Spec.ID = tail[i].ID
	}
	before := func(in []trace.Job) []string {
		rec := &recorder{pl: easy()}
		run(t, in, rec, Config{Cluster: hgx(t, 4)})
		var out []string
		for i, l := range rec.lines {
			if rec.times[i] <= T {
				out = append(out, l)
			}
		}
		return out
	}
	a, b := before(jobs), before(future)
	if len(a) < 100 {
		t.Fatalf("only %d cycles before T: the test needs more", len(a))
	}
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("cycles up to T=%d s differ when only later jobs change (-original +changed):\n%s", T, diff)
	}
}
