package sim

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/sim/trace"
)

func TestRunTiny(t *testing.T) {
	type want struct{ Start, End int64 }
	for _, tc := range []struct {
		name  string
		cards int
		jobs  []trace.Job
		cfg   Config
		want  map[string]want
		exit  map[string]model.ExitState
	}{
		{
			name:  "a job past its limit is killed there",
			cards: 1,
			jobs:  []trace.Job{tj("1", 0, 100, 60, 1), tj("2", 0, 10, 20, 1)},
			want:  map[string]want{"1": {0, 60}, "2": {60, 70}},
			exit:  map[string]model.ExitState{"1": model.ExitKilledAtLimit, "2": model.ExitCompleted},
		},
		{
			name:  "with KeepOverrun it runs to its actual end",
			cards: 1,
			jobs:  []trace.Job{tj("1", 0, 100, 60, 1), tj("2", 0, 10, 20, 1)},
			cfg:   Config{KeepOverrun: true},
			want:  map[string]want{"1": {0, 100}, "2": {100, 110}},
			exit:  map[string]model.ExitState{"1": model.ExitCompleted},
		},
		{
			name:  "a completion frees its card for an arrival at the same instant",
			cards: 1,
			jobs:  []trace.Job{tj("1", 0, 10, 50, 1), tj("2", 10, 5, 5, 1)},
			want:  map[string]want{"1": {0, 10}, "2": {10, 15}},
		},
		{
			name:  "exact estimates let EASY backfill a job it would hold back",
			cards: 2,
			// 2 waits for both cards; 3 fits in the hole only if its limit
			// is its runtime (5 s), not its request (100 s).
			jobs: []trace.Job{tj("1", 0, 10, 10, 1), tj("2", 1, 10, 10, 2), tj("3", 2, 5, 100, 1)},
			cfg:  Config{Estimates: EstimatesExact},
			want: map[string]want{"1": {0, 10}, "2": {10, 20}, "3": {2, 7}},
		},
		{
			name:  "with user estimates the same job waits",
			cards: 2,
			jobs:  []trace.Job{tj("1", 0, 10, 10, 1), tj("2", 1, 10, 10, 2), tj("3", 2, 5, 100, 1)},
			want:  map[string]want{"1": {0, 10}, "2": {10, 20}, "3": {20, 25}},
		},
		{
			name:  "a job larger than the cluster never starts and blocks nothing",
			cards: 2,
			jobs:  []trace.Job{tj("big", 0, 10, 10, 3), tj("1", 1, 10, 10, 2)},
			want:  map[string]want{"big": {-1, -1}, "1": {1, 11}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Cluster = flat(t, tc.cards)
			res := run(t, tc.jobs, easy(), cfg)
			got := map[string]want{}
			for _, r := range res.Jobs {
				got[r.ID] = want{r.Start, r.End}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(start, end) per job (-want +got):\n%s", diff)
			}
			m := byID(res)
			for id, e := range tc.exit {
				if m[id].Exit != e {
					t.Errorf("job %s exit %s, want %s", id, m[id].Exit, e)
				}
			}
		})
	}
}

func TestCompletionsBeforeArrivals(t *testing.T) {
	// Job 1 ends at 10 exactly when job 2 arrives: the cycle at 10 must see
	// job 1 gone and job 2 queued, and only one cycle runs at 10.
	rec := &recorder{pl: easy()}
	run(t, []trace.Job{tj("1", 0, 10, 50, 1), tj("2", 10, 5, 5, 1)}, rec, Config{Cluster: flat(t, 1)})
	want := []string{
		"t=0 queued=1(1,50s) running=starts=1[p0/0]regular ",
		"t=10 queued=2(1,5s) running=starts=2[p0/0]regular ",
	}
	if diff := cmp.Diff(want, rec.lines); diff != "" {
		t.Errorf("cycles (-want +got):\n%s", diff)
	}
}

func TestCyclesPerEvent(t *testing.T) {
	// At 10, job 1 ends early (limit 50) while job 2 arrives: pyss plans
	// for the arrival first, with job 1 still holding its card until 50.
	rec := &recorder{pl: easy()}
	run(t, []trace.Job{tj("1", 0, 10, 50, 1), tj("2", 10, 5, 5, 1)}, rec, Config{Cluster: flat(t, 1), Cycles: CyclesPerEvent})
	want := []string{
		"t=0 queued=1(1,50s) running=starts=1[p0/0]regular ",
		"t=10 queued=2(1,5s) running=1@0 starts=",
		"t=10 queued=2(1,5s) running=starts=2[p0/0]regular ",
	}
	if diff := cmp.Diff(want, rec.lines); diff != "" {
		t.Errorf("cycles (-want +got):\n%s", diff)
	}
}

func TestInterval(t *testing.T) {
	// A planner that holds job 1 back before t=25 while job long runs:
	// ticks every 10 s from the first submit give it cycles at 0, 10, 20,
	// 30, and stop once nothing runs, nothing is queued and nothing arrives.
	var times []int64
	lazy := planFunc(func(s *model.Snapshot) (*model.Decision, error) {
		times = append(times, sec(s.Now))
		d, err := easy().Plan(t.Context(), s)
		if err != nil || sec(s.Now) >= 25 {
			return d, err
		}
		var keep []model.Start
		for _, st := range d.Starts {
			if st.JobID != "1" {
				keep = append(keep, st)
			}
		}
		d.Starts = keep
		return d, nil
	})
	jobs := []trace.Job{tj("long", 0, 40, 40, 1), tj("1", 0, 5, 5, 1)}
	res := run(t, jobs, lazy, Config{Cluster: flat(t, 2), Interval: 10 * time.Second})
	if diff := cmp.Diff([]int64{0, 10, 20, 30}, times); diff != "" {
		t.Errorf("cycle times (-want +got):\n%s", diff)
	}
	if r := byID(res)["1"]; r.Start != 30 || r.End != 35 {
		t.Errorf("job 1 ran %d–%d, want 30–35", r.Start, r.End)
	}
}

func TestCyclesInterval(t *testing.T) {
	// Cycles only on 10-second ticks from the first submit: job 2 arrives
	// at 3 and waits for the tick at 10; job 1's card frees at 12 and job 3
	// (arriving at 11) takes it at the tick at 20, not at 12.
	var times []int64
	pl := planFunc(func(s *model.Snapshot) (*model.Decision, error) {
		times = append(times, sec(s.Now))
		return easy().Plan(t.Context(), s)
	})
	jobs := []trace.Job{tj("1", 0, 12, 20, 1), tj("2", 3, 30, 30, 1), tj("3", 11, 5, 5, 1)}
	res := run(t, jobs, pl, Config{Cluster: flat(t, 2), Interval: 10 * time.Second, Cycles: CyclesInterval})
	if diff := cmp.Diff([]int64{0, 10, 20}, times); diff != "" {
		t.Errorf("cycle times (-want +got):\n%s", diff)
	}
	got := byID(res)
	for id, want := range map[string]int64{"1": 0, "2": 10, "3": 20} {
		if got[id].Start != want {
			t.Errorf("job %s started at %d, want %d", id, got[id].Start, want)
		}
	}
	if _, err := Run(t.Context(), jobs, easy(), Config{Cluster: flat(t, 2), Cycles: CyclesInterval}); err == nil {
		t.Error("interval cycles without an interval: no error")
	}
}

func TestConfigErrors(t *testing.T) {
	jobs := []trace.Job{tj("1", 5, 5, 5, 1), tj("2", 0, 5, 5, 1)}
	for _, tc := range []struct {
		name string
		jobs []trace.Job
		cfg  Config
	}{
		{"no cluster", jobs[:1], Config{}},
		{"unsorted jobs", jobs, Config{Cluster: flat(t, 1)}},
		{"fractional interval", jobs[:1], Config{Cluster: flat(t, 1), Interval: 1500 * time.Millisecond}},
		{"no limit", []trace.Job{tj("1", 0, 5, 0, 1)}, Config{Cluster: flat(t, 1)}},
		{"duplicate live ids", []trace.Job{tj("1", 0, 5, 5, 1), tj("1", 1, 5, 5, 1)}, Config{Cluster: flat(t, 1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Run(t.Context(), tc.jobs, easy(), tc.cfg); err == nil {
				t.Error("no error")
			}
		})
	}
}
