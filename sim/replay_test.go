package sim

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/sim/trace"
	"github.com/huitian/huitian/solver/baseline"
)

func replayOf(name string, jobs []trace.Job, pl func() (Planner, error)) Replay {
	return Replay{Name: name, Jobs: jobs, NewPlanner: pl,
		NewCluster: func() (*model.Cluster, error) { return Flat(4) }}
}

// TestRunAllEqualsRun: each replay's result is what Run gives alone, in
// the order given, whatever the number of workers.
func TestRunAllEqualsRun(t *testing.T) {
	jobs := []trace.Job{tj("1", 0, 50, 100, 3), tj("2", 1, 10, 10, 4), tj("3", 2, 30, 30, 2), tj("4", 3, 20, 20, 1)}
	fcfs := func() (Planner, error) {
		p, _ := baseline.ForPolicy(model.PolicyFCFS, 0)
		return baseline.New(p), nil
	}
	for _, workers := range []int{1, 3} {
		var done []string
		rs := []Replay{replayOf("easy", jobs, func() (Planner, error) { return easy(), nil }), replayOf("fcfs", jobs, fcfs)}
		for i := range rs {
			rs[i].Done = func(*Result) { done = append(done, rs[i].Name) }
		}
		if workers > 1 {
			rs[0].Done, rs[1].Done = nil, nil // Done runs on the replays' goroutines
		}
		got, err := RunAll(context.Background(), rs, workers)
		if err != nil {
			t.Fatal(err)
		}
		pf, _ := fcfs()
		for i, pl := range []Planner{easy(), pf} {
			want := run(t, jobs, pl, Config{Cluster: flat(t, 4)})
			if d := cmp.Diff(want.Summary, got[i].Summary); d != "" {
				t.Errorf("workers %d, replay %d (-Run +RunAll):\n%s", workers, i, d)
			}
			if got[i].Wall <= 0 {
				t.Errorf("replay %d: no wall time", i)
			}
		}
		if workers == 1 && len(done) != 2 {
			t.Errorf("done called for %v, want both", done)
		}
	}
}

// TestRunAllFails: a replay whose planner panics or fails stops the run
// with a *ReplayError naming it; the panic is recovered.
func TestRunAllFails(t *testing.T) {
	jobs := []trace.Job{tj("1", 0, 50, 100, 3)}
	panics := planFunc(func(*model.Snapshot) (*model.Decision, error) { panic("boom") })
	_, err := RunAll(context.Background(), []Replay{
		replayOf("easy", jobs, func() (Planner, error) { return easy(), nil }),
		replayOf("bad", jobs, func() (Planner, error) { return panics, nil }),
	}, 2)
	var re *ReplayError
	if !errors.As(err, &re) || re.Index != 1 || re.Name != "bad" || re.Panic != "boom" || len(re.Stack) == 0 {
		t.Fatalf("error %v (%#v), want a recovered panic of replay 1", err, re)
	}
	noPlanner := errors.New("no planner today")
	_, err = RunAll(context.Background(), []Replay{replayOf("x", jobs, func() (Planner, error) { return nil, noPlanner })}, 0)
	if !errors.As(err, &re) || !errors.Is(err, noPlanner) || re.Panic != nil {
		t.Errorf("error %v, want the planner's error in a ReplayError", err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	stop := errors.New("stop")
	cancel(stop)
	if _, err := RunAll(ctx, []Replay{replayOf("easy", jobs, func() (Planner, error) { return easy(), nil })}, 1); !errors.Is(err, stop) {
		t.Errorf("cancelled: %v, want the context's cause", err)
	}
}
