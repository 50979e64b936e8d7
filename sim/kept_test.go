package sim

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/sim/trace"
	"github.com/huitian/huitian/solver/baseline"
)

// TestKeptProfileReplaysAsFromScratch: a replayed trace — a slice of
// KTH-SP2 on its own machine, in both cycle modes, and synthetic GPU jobs
// on HGX nodes — gives every job the same start under each baseline
// policy whether the planner keeps its profile from cycle to cycle or
// loads it anew every cycle.
func TestKeptProfileReplaysAsFromScratch(t *testing.T) {
	type workload struct {
		name    string
		jobs    []trace.Job
		cluster func() *model.Cluster
		cycles  Cycles
	}
	// The replays have no goroutines of their own: under the race
	// detector (make test's race pass, ten times slower) a short
	// synthetic one is enough.
	n := 1500
	if raceDetector {
		n = 300
	}
	syn, err := trace.Synth(trace.SynthOptions{Jobs: n, Seed: 4, Load: 1.1, Cards: 128})
	if err != nil {
		t.Fatal(err)
	}
	hgx := func() *model.Cluster {
		c, err := HGX(16)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	works := []workload{{"synth on hgx:16", syn.Jobs, hgx, CyclesPerTime}}
	if !testing.Short() && !raceDetector {
		kth := loadKTH(t)
		flat := func() *model.Cluster {
			c, err := Flat(kth.MaxCards)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		jobs := kth.Jobs[:3000]
		works = append(works, workload{"KTH-SP2 per time", jobs, flat, CyclesPerTime}, workload{"KTH-SP2 per event", jobs, flat, CyclesPerEvent})
	}
	for _, w := range works {
		for _, p := range []model.Policy{model.PolicyFCFS, model.PolicyEASY, model.PolicyConservative, model.PolicyEASYSJBF, model.PolicyHybridDepth} {
			params, _ := baseline.ForPolicy(p, 0)
			replay := func(scratch bool) []JobResult {
				pl := baseline.New(params)
				pl.FromScratch = scratch
				res, err := Run(context.Background(), w.jobs, pl, Config{Cluster: w.cluster(), Estimates: EstimatesUser, Cycles: w.cycles})
				if err != nil {
					t.Fatal(err)
				}
				return res.Jobs
			}
			if diff := cmp.Diff(replay(true), replay(false)); diff != "" {
				t.Errorf("%s under %s: kept profile differs from a fresh load every cycle (-fresh +kept):\n%s", w.name, p, diff)
			}
		}
	}
}

// TestPoolReplaysAsPerCard: on KTH-SP2's flat machine (one processor a
// node: profile.IsPool), in both cycle modes, the baseline policies that
// reserve for one job at most give every job the same start planned on
// counts (profile.Pool) as card by card. Conservative and hybrid depth
// do not: card by card their later reservations are pinned to the cards
// the earlier ones took, and a job may wait for one card free over its
// whole limit where the counts have one free at every moment of it (the
// counts are the textbook's profile, as pyss's).
func TestPoolReplaysAsPerCard(t *testing.T) {
	if testing.Short() || raceDetector {
		t.Skip("a KTH-SP2 replay")
	}
	kth := loadKTH(t)
	jobs := kth.Jobs[:3000]
	for _, cy := range []Cycles{CyclesPerTime, CyclesPerEvent} {
		for _, p := range []model.Policy{model.PolicyFCFS, model.PolicyEASY, model.PolicyEASYSJBF} {
			params, _ := baseline.ForPolicy(p, 0)
			replay := func(perCard bool) []JobResult {
				c, err := Flat(kth.MaxCards)
				if err != nil {
					t.Fatal(err)
				}
				res, err := Run(context.Background(), jobs, &baseline.Planner{P: params, PerCard: perCard}, Config{Cluster: c, Estimates: EstimatesUser, Cycles: cy})
				if err != nil {
					t.Fatal(err)
				}
				return res.Jobs
			}
			if diff := cmp.Diff(replay(true), replay(false)); diff != "" {
				t.Errorf("%s, cycles %v: on counts differs from card by card (-cards +counts):\n%s", p, cy, diff)
			}
		}
	}
}
