package sim

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/sim/trace"
)

func TestSizeClasses(t *testing.T) {
	for _, tc := range []struct {
		name         string
		usable, node int
		want         [NumClasses - 1]int
		labels       [NumClasses]string
	}{
		{"a flat machine of 64 cards: 1/16 and 1/4 of it", 64, 1, [3]int{1, 4, 16}, [4]string{"1", "2–4", "5–16", ">16"}},
		{"hgx:32: one node (8) is less than 1/16 (16)", 256, 8, [3]int{1, 16, 64}, [4]string{"1", "2–16", "17–64", ">64"}},
		{"hgx:2: a node is more than 1/4, class 2 is empty", 16, 8, [3]int{1, 8, 8}, [4]string{"1", "2–8", "none", ">8"}},
		{"one card", 1, 1, [3]int{1, 1, 1}, [4]string{"1", "none", "none", ">1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := NewSizeClasses(tc.usable, tc.node)
			if sc.Max != tc.want {
				t.Errorf("bounds %v, want %v", sc.Max, tc.want)
			}
			for i, l := range tc.labels {
				if got := sc.Label(i); got != l {
					t.Errorf("label %d %q, want %q", i, got, l)
				}
			}
		})
	}
	sc := NewSizeClasses(64, 1)
	for cards, want := range map[int]int{1: 0, 2: 1, 4: 1, 5: 2, 16: 2, 17: 3, 64: 3, 100: 3} {
		if got := sc.Of(cards); got != want {
			t.Errorf("Of(%d) = %d, want %d", cards, got, want)
		}
	}
	c, err := HGX(32)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Seal(); err != nil {
		t.Fatal(err)
	}
	if got := ClassesOf(c.Layout()); got.Max != [3]int{1, 16, 64} {
		t.Errorf("hgx:32 classes %v, want 1, 16, 64", got.Max)
	}
}

// TestSameJobsByHand checks the size-class measures, the same-job
// comparison, the head delay and the lost share against figures worked
// out by hand.
func TestSameJobsByHand(t *testing.T) {
	sc := NewSizeClasses(64, 1) // 1 | 2–4 | 5–16 | >16
	// The policy's run and the reference's, job by job (same ids, order).
	run := &Result{Classes: sc, Jobs: []JobResult{
		{ID: "a", Submit: 0, Start: 10, End: 110, Run: 100, Cards: 1}, // wait 10, bsld 1.1
		{ID: "b", Submit: 0, Start: 0, End: 50, Run: 50, Cards: 1},    // wait 0, bsld 1
		{ID: "c", Submit: 0, Start: 100, End: 200, Run: 100, Cards: 6, Headed: true, // wait 100, bsld 2
			HeadPromise: 60, HeadStart: 100, HeadHeld: 30}, // head delay +40; 30 s held by lent jobs
		{ID: "d", Submit: 0, Start: 0, End: 1000, Run: 1000, Cards: 20, Preemptions: 2}, // wait 0, bsld 1
		{ID: "e", Submit: 0, Start: 40, End: 1040, Run: 1000, Cards: 20, Headed: true, // wait 40, bsld 1.04
			HeadPromise: 100, HeadStart: 40}, // head delay −60
		{ID: "f", Submit: 0, Start: -1, End: -1, Cards: 1, Headed: true, HeadPromise: 5, HeadStart: -1}, // never started
	}}
	ref := &Result{Classes: sc, Jobs: []JobResult{
		{ID: "a", Submit: 0, Start: 0, End: 100, Run: 100, Cards: 1},      // wait 0, bsld 1
		{ID: "b", Submit: 0, Start: 30, End: 80, Run: 50, Cards: 1},       // wait 30, bsld 1.6
		{ID: "c", Submit: 0, Start: 50, End: 150, Run: 100, Cards: 6},     // wait 50, bsld 1.5
		{ID: "d", Submit: 0, Start: 500, End: 1500, Run: 1000, Cards: 20}, // wait 500, bsld 1.5
		{ID: "e", Submit: 0, Start: -1, End: -1, Cards: 20},               // never finished: not a same job
		{ID: "f", Submit: 0, Start: 0, End: 10, Run: 10, Cards: 1},
	}}
	f := func(v float64) *float64 { return &v }
	got, err := CompareClasses(run, ref)
	if err != nil {
		t.Fatal(err)
	}
	want := []SameJobs{
		// waits 10, 0 against 0, 30: means 5 / 15; p95s (rank 0.95) 9.5 / 28.5.
		{Class: "1", Jobs: 2, MeanWait: 5, P95Wait: 9.5, MeanBSLD: 1.05, RefMeanWait: 15, RefP95Wait: 28.5, RefMeanBSLD: 1.3,
			MeanWaitRatio: f(5.0 / 15), P95WaitRatio: f(9.5 / 28.5), BSLDRatio: f(1.05 / 1.3)},
		{Class: "2–4"},
		{Class: "5–16", Jobs: 1, MeanWait: 100, P95Wait: 100, MeanBSLD: 2, RefMeanWait: 50, RefP95Wait: 50, RefMeanBSLD: 1.5,
			MeanWaitRatio: f(2), P95WaitRatio: f(2), BSLDRatio: f(2 / 1.5)},
		// Only d finished in both.
		{Class: ">16", Jobs: 1, MeanWait: 0, P95Wait: 0, MeanBSLD: 1, RefMeanWait: 500, RefP95Wait: 500, RefMeanBSLD: 1.5,
			MeanWaitRatio: f(0), P95WaitRatio: f(0), BSLDRatio: f(1 / 1.5)},
	}
	approx := cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-9 })
	if d := cmp.Diff(want, got, approx); d != "" {
		t.Errorf("same jobs (-want +got):\n%s", d)
	}
	// Against itself every ratio is 1, zero waits included.
	self, err := CompareClasses(run, run)
	if err != nil {
		t.Fatal(err)
	}
	if r := self[3].MeanWaitRatio; r == nil || *r != 1 {
		t.Errorf("a class against itself: mean wait ratio %v, want 1", r)
	}

	cs := classStats(run.Jobs, sc)
	wantCS := []ClassStats{
		{Class: "1", MinCards: 1, MaxCards: 1, Jobs: 2, MeanWait: 5, P95Wait: 9.5, MeanBSLD: 1.05},
		{Class: "2–4", MinCards: 2, MaxCards: 4},
		{Class: "5–16", MinCards: 5, MaxCards: 16, Jobs: 1, MeanWait: 100, P95Wait: 100, MeanBSLD: 2},
		// waits 0, 40: p95 at rank 0.95 is 38.
		{Class: ">16", MinCards: 17, MaxCards: 0, Jobs: 2, MeanWait: 20, P95Wait: 38, MeanBSLD: 1.02, Preemptions: 2},
	}
	if d := cmp.Diff(wantCS, cs, approx); d != "" {
		t.Errorf("class stats (-want +got):\n%s", d)
	}

	// Head delays +40 (c) and −60 (e); f never started.
	hd := headDelay(run.Jobs)
	if d := cmp.Diff(HeadDelay{Jobs: 2, Mean: -10, P95: 35, Max: 40, Held: 1, HeldMean: 30, HeldMax: 30}, hd, approx); d != "" {
		t.Errorf("head delay (-want +got):\n%s", d)
	}
	s := summarize(run.Jobs, 64, accum{busyCardSeconds: 1000, lostCardSeconds: 50}, 1)
	if s.LostShare == nil || *s.LostShare != 0.05 {
		t.Errorf("lost share %v, want 0.05", s.LostShare)
	}

	// Runs of other jobs or other clusters do not compare.
	other := &Result{Classes: NewSizeClasses(256, 8), Jobs: ref.Jobs}
	if _, err := CompareClasses(run, other); !errors.Is(err, ErrNotComparable) {
		t.Errorf("other classes: %v, want ErrNotComparable", err)
	}
	if _, err := CompareClasses(run, &Result{Classes: sc, Jobs: ref.Jobs[:2]}); !errors.Is(err, ErrNotComparable) {
		t.Errorf("other jobs: %v, want ErrNotComparable", err)
	}
}

// TestHeadDelayEASY: 1 holds 3 of 4 cards with a limit of 100 s but ends
// at 50; 2 (4 cards) is the head from t=1, promised 100, and starts at 50
// (delay −50); then 3 is the head, promised 60 (2's limit) and starts at
// 60 (delay 0). 4 backfills and is never the head.
func TestHeadDelayEASY(t *testing.T) {
	jobs := []trace.Job{tj("1", 0, 50, 100, 3), tj("2", 1, 10, 10, 4), tj("3", 2, 30, 30, 2), tj("4", 3, 20, 20, 1)}
	res := run(t, jobs, easy(), Config{Cluster: flat(t, 4)})
	r := byID(res)
	type head struct {
		Headed             bool
		Promise, HeadStart int64
	}
	got := map[string]head{}
	for id, j := range r {
		got[id] = head{j.Headed, j.HeadPromise, j.HeadStart}
	}
	want := map[string]head{"1": {false, 0, -1}, "2": {true, 100, 50}, "3": {true, 60, 60}, "4": {false, 0, -1}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("heads (-want +got):\n%s", d)
	}
	if d := cmp.Diff(HeadDelay{Jobs: 2, Mean: -25, P95: -2.5, Max: 0}, res.Summary.HeadDelay); d != "" {
		t.Errorf("head delay (-want +got):\n%s", d)
	}

	// With exact estimates 2 is promised 50; a planner that promises it 30
	// instead: the delay is the broken promise.
	late := planFunc(func(s *model.Snapshot) (*model.Decision, error) {
		d, err := easy().Plan(t.Context(), s)
		if err == nil && sec(s.Now) == 1 && len(d.Reservations) > 0 {
			d.Reservations[0].Start = d.Reservations[0].Start.Add(-20 * time.Second)
		}
		return d, err
	})
	res = run(t, jobs[:2], late, Config{Cluster: flat(t, 4), Estimates: EstimatesExact})
	if h := res.Summary.HeadDelay; h.Jobs != 1 || h.Max != 20 {
		t.Errorf("head delay %+v, want one head 20 s late (promised 30, started at 50)", h)
	}
}

// statusPlanner is EASY with a tuner that reports cycle n's parameters:
// from the second cycle on, a completion rate, a lost share and the hold.
type statusPlanner struct {
	Planner
	n int
}

func (p *statusPlanner) Plan(ctx context.Context, s *model.Snapshot) (*model.Decision, error) {
	p.n++
	return p.Planner.Plan(ctx, s)
}

func (p *statusPlanner) PlannerStatus() model.PlannerStatus {
	rate, lost := math.NaN(), math.NaN()
	if p.n > 1 {
		rate, lost = 0.5, 0.02
	}
	return model.PlannerStatus{
		Tuner:    &model.TunerParams{MaxBackfillRuntime: time.Duration(p.n) * time.Hour, ProtectFraction: 0.1 * float64(p.n), Epsilon: 0.05, HoldPreemption: p.n > 1},
		Measures: &model.BackfillMeasures{CompletionRate: rate, LostShare: lost},
	}
}

// TestTunerSeries: the tuner's parameters after each cycle hold until the
// next one (the preemption hold as 0 or 1); the completion rate and the
// lost share are NaN while unknown; the series survive JSON, NaN as null.
func TestTunerSeries(t *testing.T) {
	// Cycles at 0 and 10 (arrivals); the run ends at 20.
	jobs := []trace.Job{tj("1", 0, 20, 20, 1), tj("2", 10, 5, 5, 1)}
	res := run(t, jobs, &statusPlanner{Planner: easy()}, Config{Cluster: flat(t, 4), Series: true})
	ts := res.Series.Tuner
	if ts == nil {
		t.Fatal("no tuner series from a planner that reports one")
	}
	if n := len(ts.MaxBackfillRuntime); n != len(res.Series.Busy) || n != 20 {
		t.Fatalf("%d tuner buckets, %d busy; want 20 of each", n, len(res.Series.Busy))
	}
	if ts.MaxBackfillRuntime[0] != 3600 || ts.MaxBackfillRuntime[15] != 7200 || ts.ProtectFraction[15] != 0.2 || ts.Epsilon[3] != 0.05 {
		t.Errorf("runtime %v, protection %v", ts.MaxBackfillRuntime, ts.ProtectFraction)
	}
	if !math.IsNaN(ts.CompletionRate[5]) || ts.CompletionRate[12] != 0.5 {
		t.Errorf("completion %v: want NaN before the second cycle, 0.5 after", ts.CompletionRate)
	}
	if len(ts.HoldPreemption) != 20 || ts.HoldPreemption[5] != 0 || ts.HoldPreemption[12] != 1 {
		t.Errorf("hold %v: want 0 before the second cycle, 1 after", ts.HoldPreemption)
	}
	if len(ts.LostShare) != 20 || !math.IsNaN(ts.LostShare[5]) || ts.LostShare[12] != 0.02 {
		t.Errorf("lost share %v: want NaN before the second cycle, 0.02 after", ts.LostShare)
	}
	b, err := json.Marshal(ts)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"hold_preemption":[0,`, `"lost_share":[null,`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("JSON lacks %s: %s", key, b)
		}
	}
	var back TunerSeries
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(*ts, back, cmpopts.EquateNaNs()); diff != "" {
		t.Errorf("tuner series through JSON (-want +got):\n%s", diff)
	}
	res = run(t, jobs, easy(), Config{Cluster: flat(t, 4), Series: true})
	if res.Series.Tuner != nil {
		t.Error("a tuner series from a baseline")
	}
}

// TestHeadHeldByLent: on flat:2, r (1 card, limit 100) runs 0–50 on p0;
// head (2 cards, from 1) is reserved on p0 and p1 from 100; l (1 card,
// from 2, runs 80) is started on p1. When r ends at 50 the head's cards
// are free but for l's. Lent into a window, l holds the head 50–82: 32 s.
// Started as plain backfill (no window), or as a regular job, it holds
// nothing the measure counts.
func TestHeadHeldByLent(t *testing.T) {
	jobs := []trace.Job{tj("r", 0, 50, 100, 1), tj("head", 1, 10, 10, 2), tj("l", 2, 80, 200, 1)}
	for _, tc := range []struct {
		name   string
		kind   model.AllocKind
		window bool
		want   HeadDelay
	}{
		{"lent into a window", model.Backfill, true, HeadDelay{Jobs: 1, Mean: -18, P95: -18, Max: -18, Held: 1, HeldMean: 32, HeldMax: 32}},
		{"plain backfill", model.Backfill, false, HeadDelay{Jobs: 1, Mean: -18, P95: -18, Max: -18}},
		{"regular", model.Regular, false, HeadDelay{Jobs: 1, Mean: -18, P95: -18, Max: -18}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			at := func(s int64) time.Time { return DefaultEpoch.Add(time.Duration(s) * time.Second) }
			pl := planFunc(func(s *model.Snapshot) (*model.Decision, error) {
				d := &model.Decision{}
				free := map[string]bool{"p0": true, "p1": true}
				for _, r := range s.Running {
					free[r.Cards[0].Node] = false
				}
				for _, j := range s.Queued {
					switch {
					case j.ID == "r" && free["p0"]:
						d.Starts = append(d.Starts, model.Start{JobID: "r", Cards: []model.CardRef{{Node: "p0"}}, Kind: model.Regular})
						free["p0"] = false
					case j.ID == "head" && free["p0"] && free["p1"]:
						d.Starts = append(d.Starts, model.Start{JobID: "head", Cards: []model.CardRef{{Node: "p0"}, {Node: "p1"}}, Kind: model.Regular})
						free["p0"], free["p1"] = false, false
					case j.ID == "head":
						d.Reservations = append(d.Reservations, model.Reservation{JobID: "head", Cards: []model.CardRef{{Node: "p0"}, {Node: "p1"}}, Start: at(100)})
					case j.ID == "l" && free["p1"]:
						st := model.Start{JobID: "l", Cards: []model.CardRef{{Node: "p1"}}, Kind: tc.kind}
						if tc.kind == model.Backfill {
							st.ProtectedUntil = at(sec(s.Now) + 10)
						}
						if tc.window {
							st.WindowEnd = at(100)
						}
						d.Starts = append(d.Starts, st)
						free["p1"] = false
					}
				}
				return d, nil
			})
			res := run(t, jobs, pl, Config{Cluster: flat(t, 2)})
			if got := byID(res)["head"]; got.Start != 82 {
				t.Fatalf("head started at %d, want 82 (when l ends)", got.Start)
			}
			if d := cmp.Diff(tc.want, res.Summary.HeadDelay); d != "" {
				t.Errorf("head delay (-want +got):\n%s", d)
			}
		})
	}
}
