package sim

import (
	"math"
	"testing"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/sim/trace"
)

func TestSummarizeByHand(t *testing.T) {
	jobs := []JobResult{
		// wait 0, flow 100, bsld 100/100 = 1
		{ID: "A", Submit: 0, Start: 0, End: 100, Run: 100, Cards: 1, Kind: model.Regular},
		// wait 10, flow 15, bsld 15/max(10, 5) = 1.5
		{ID: "B", Submit: 10, Start: 20, End: 25, Run: 5, Cards: 2, Kind: model.Backfill, Backfilled: true},
		// wait 80, flow 280, bsld 280/200 = 1.4
		{ID: "C", Submit: 20, Start: 100, End: 300, Run: 200, Cards: 1, Kind: model.Regular},
		// never started: not in the averages
		{ID: "D", Submit: 30, Start: -1, End: -1, Cards: 4},
		// wait 10, flow 50, bsld 50/30; preempted once
		{ID: "E", Submit: 40, Start: 50, End: 90, Run: 30, Cards: 1, Kind: model.Backfill, Backfilled: true, Preemptions: 1},
	}
	acc := accum{busyCardSeconds: 450, lostCardSeconds: 12, preemptions: 1, regularStarts: 2, backfillStarts: 3}
	s := summarize(jobs, 2, acc, 9)
	near := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if s.Jobs != 4 || s.NeverStarted != 1 || s.Cycles != 9 {
		t.Errorf("jobs %d, never started %d, cycles %d; want 4, 1, 9", s.Jobs, s.NeverStarted, s.Cycles)
	}
	near("avg wait", s.AvgWait, 25)       // (0+10+80+10)/4
	near("median wait", s.MedianWait, 10) // sorted 0 10 10 80
	near("p95 wait", s.P95Wait, 69.5)     // rank 2.85: 10 + 0.85×70
	near("avg flow", s.AvgFlow, 111.25)   // (100+15+280+50)/4
	near("avg bsld", s.AvgBSLD, (1+1.5+1.4+50.0/30)/4)
	near("utilization", s.Utilization, 0.75) // 450 / (2 cards × 300 s)
	if s.Makespan != 300 {
		t.Errorf("makespan %d, want 300", s.Makespan)
	}
	if s.BackfillCompletionRate == nil || *s.BackfillCompletionRate != 0.5 {
		t.Errorf("backfill completion rate %v, want 0.5 (B clean, E preempted)", s.BackfillCompletionRate)
	}
	if s.MainJobs != 2 || s.MainAvgWait == nil || *s.MainAvgWait != 40 {
		t.Errorf("main jobs %d, main avg wait %v; want 2 and 40", s.MainJobs, s.MainAvgWait)
	}
	if s.BackfillUtilization != nil {
		t.Errorf("backfill utilization %v, want nil until a planner accounts idle capacity", *s.BackfillUtilization)
	}
	if s.RegularStarts != 2 || s.BackfillStarts != 3 || s.Preemptions != 1 || s.LostCardSeconds != 12 {
		t.Errorf("starts %d/%d, preemptions %d, lost %v", s.RegularStarts, s.BackfillStarts, s.Preemptions, s.LostCardSeconds)
	}
}

func TestSummarizeEmpty(t *testing.T) {
	s := summarize(nil, 4, accum{}, 0)
	if s.Jobs != 0 || s.BackfillCompletionRate != nil || s.MainAvgWait != nil {
		t.Errorf("summary of nothing: %+v", s)
	}
}

func TestSeries(t *testing.T) {
	r := newSeriesRec(100)
	r.step(100, 2, 1)
	r.step(110, 4, 0)
	r.step(120, 0, 3)
	s := r.finish(4)
	if s.Width != 1 || len(s.Busy) != 20 || s.Start != 100 {
		t.Fatalf("width %d, %d buckets from %d; want 1, 20 from 100", s.Width, len(s.Busy), s.Start)
	}
	if s.Busy[0] != 2 || s.Busy[19] != 4 || s.Queue[0] != 1 || s.Queue[10] != 0 {
		t.Errorf("busy %v queue %v", s.Busy, s.Queue)
	}
	// A long run doubles the width and keeps the time-weighted mean.
	r = newSeriesRec(0)
	var integral float64
	last, v := int64(0), 0
	for k := int64(1); k <= 300; k++ {
		t := k * 37
		integral += float64(v) * float64(t-last)
		v = int(k % 5)
		r.step(t, v, 0)
		last = t
	}
	r.step(last+1, 0, 0)
	integral += float64(v)
	s = r.finish(1)
	if len(s.Busy) > maxBuckets {
		t.Fatalf("%d buckets, at most %d", len(s.Busy), maxBuckets)
	}
	var got float64
	for i, b := range s.Busy {
		w := float64(s.Width)
		if i == len(s.Busy)-1 {
			w = float64(last + 1 - (s.Start + int64(i)*s.Width))
		}
		got += b * w
	}
	if math.Abs(got-integral) > 1e-6 {
		t.Errorf("integral %v, want %v (width %d, %d buckets)", got, integral, s.Width, len(s.Busy))
	}
}

func TestBackfillUtilization(t *testing.T) {
	// The planner reports 4 idle / 1 backfill card at t=0 and 2 / 2 at
	// t=10; the run ends at 30: (1×10 + 2×20) / (4×10 + 2×20) = 50/80.
	stats := map[int64]model.Stats{0: {IdleCards: 4, BackfillCards: 1}, 10: {IdleCards: 2, BackfillCards: 2}}
	pl := planFunc(func(s *model.Snapshot) (*model.Decision, error) {
		d, err := easy().Plan(t.Context(), s)
		if err != nil {
			return nil, err
		}
		d.Stats = stats[sec(s.Now)]
		return d, nil
	})
	res := run(t, []trace.Job{tj("1", 0, 30, 30, 1), tj("2", 10, 5, 5, 1)}, pl, Config{Cluster: flat(t, 4)})
	if u := res.Summary.BackfillUtilization; u == nil || *u != 50.0/80 {
		t.Errorf("backfill utilization %v, want %v", u, 50.0/80)
	}
	// The baselines report no accounting: null.
	res = run(t, []trace.Job{tj("1", 0, 30, 30, 1)}, easy(), Config{Cluster: flat(t, 4)})
	if u := res.Summary.BackfillUtilization; u != nil {
		t.Errorf("backfill utilization %v without accounting, want nil", *u)
	}
}

// TestUtilizationWhileQueued: 1 holds one of two cards for 10 s while 2
// waits for both; then 2 runs alone with nobody waiting. 3 asks for more
// cards than there are: it waits forever but is no queue time.
func TestUtilizationWhileQueued(t *testing.T) {
	jobs := []trace.Job{tj("1", 0, 10, 10, 1), tj("2", 0, 10, 10, 2), tj("3", 0, 10, 10, 3)}
	s := run(t, jobs, easy(), Config{Cluster: flat(t, 2)}).Summary
	if s.UtilizationQueued == nil || *s.UtilizationQueued != 0.5 {
		t.Errorf("utilization while queued %v, want 0.5 (1 of 2 cards for the 10 s 2 waited)", s.UtilizationQueued)
	}
	if s.Utilization != 0.75 {
		t.Errorf("utilization %v, want 0.75 (30 of 40 card-seconds)", s.Utilization)
	}
	s = run(t, jobs[:1], easy(), Config{Cluster: flat(t, 2)}).Summary
	if s.UtilizationQueued != nil {
		t.Errorf("nobody waited, utilization while queued %v, want nil", *s.UtilizationQueued)
	}
}
