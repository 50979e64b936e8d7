package sim

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/sim/trace"
	"github.com/huitian/huitian/solver/baseline"
)

func fcfs() Planner {
	p, _ := baseline.ForPolicy(model.PolicyFCFS, 0)
	return baseline.New(p)
}

// pairedJobs: j1 holds 3 of 4 cards; j2 needs all 4 and waits for j1; j3
// fits in the fourth card and ends before j1 does: EASY backfills it at
// t=2, FCFS does not.
func pairedJobs() []trace.Job {
	return []trace.Job{
		tj("j1", 0, 100, 100, 3),
		tj("j2", 1, 50, 50, 4),
		tj("j3", 2, 10, 10, 1),
	}
}

func TestPairedLeadRunsAsAlone(t *testing.T) {
	alone := run(t, pairedJobs(), easy(), Config{Cluster: flat(t, 4)})
	p := &Paired{Lead: easy(), Shadow: fcfs()}
	paired := run(t, pairedJobs(), p, Config{Cluster: flat(t, 4)})
	if d := cmp.Diff(alone.Summary, paired.Summary); d != "" {
		t.Errorf("a shadow changed the lead's run (-alone +paired):\n%s", d)
	}
	st := p.Stats
	if st.Cycles != paired.Summary.Cycles {
		t.Errorf("paired %d cycles, the run %d", st.Cycles, paired.Summary.Cycles)
	}
	// At t=2 EASY starts j3 and FCFS starts nothing; at t=0 both start j1.
	if st.Differ != 1 || st.DifferJobs != 1 {
		t.Errorf("differ %d, differ jobs %d; want 1 and 1 (t=2)", st.Differ, st.DifferJobs)
	}
	if st.Lead.Starts != st.Shadow.Starts+1 || st.Lead.Cards != st.Shadow.Cards+1 {
		t.Errorf("lead %+v, shadow %+v: want one more start and card for the lead", st.Lead, st.Shadow)
	}
	if want := st.Shadow.Relief + 1.0/10; st.Lead.Relief < want-1e-12 || st.Lead.Relief > want+1e-12 {
		t.Errorf("lead relief %v, want the shadow's %v + 1/10 for j3", st.Lead.Relief, st.Shadow.Relief)
	}
}

func TestPairedSamePlannerNeverDiffers(t *testing.T) {
	tr, err := trace.Synth(trace.SynthOptions{Jobs: 300, Seed: 5, Cards: 16})
	if err != nil {
		t.Fatal(err)
	}
	p := &Paired{Lead: easy(), Shadow: easy()}
	run(t, tr.Jobs, p, Config{Cluster: flat(t, 16)})
	if p.Stats.Differ != 0 || p.Stats.Lead != p.Stats.Shadow || p.Stats.Cycles == 0 {
		t.Errorf("EASY paired with EASY: %+v; want no difference", p.Stats)
	}
}

// TestPairedLogsTheCyclesThatDiffer: the one cycle where the started jobs
// differ (t=2: EASY backfills j3, FCFS starts nothing) is logged with the
// job only the lead starts and each planner's first reservation: EASY's
// for j2 at t=100, when j1 ends; FCFS reserves nothing.
func TestPairedLogsTheCyclesThatDiffer(t *testing.T) {
	var log strings.Builder
	p := &Paired{Lead: easy(), Shadow: fcfs(), Log: &log}
	run(t, pairedJobs(), p, Config{Cluster: flat(t, 4)})
	at := DefaultEpoch.Add(2 * time.Second).Format(time.RFC3339)
	want := "cycle 3 at " + at + ": 2 queued, 1 running\n" +
		"  lead only: j3 backfill on 1 cards\n" +
		"  first reservation: lead j2 in 1m38s, shadow none\n"
	if got := log.String(); got != want {
		t.Errorf("log:\n%s\nwant:\n%s", got, want)
	}
}
