package sim

import (
	"context"
	"math"
	"os"
	"testing"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/sim/trace"
	"github.com/huitian/huitian/solver/baseline"
)

// kthPath is the KTH-SP2 log that predictsim's published results replay.
const kthPath = "../../shared/traces/swf-KTH-SP2/KTH-SP2-1996-2.1-cln.swf.gz"

func loadKTH(tb testing.TB) *trace.Trace {
	tb.Helper()
	if _, err := os.Stat(kthPath); err != nil {
		tb.Skipf("KTH-SP2 log not found at %s (it lives in the shared traces folder, see swf-KTH-SP2/SOURCE.txt): %v", kthPath, err)
	}
	tr, err := trace.Open(kthPath, "swf", trace.Options{Filter: trace.FilterStrong})
	if err != nil {
		tb.Fatal(err)
	}
	return tr
}

func runKTH(tb testing.TB, tr *trace.Trace, p model.Policy, est Estimates, cy Cycles) Summary {
	tb.Helper()
	params, ok := baseline.ForPolicy(p, 0)
	if !ok {
		tb.Fatalf("no baseline for %s", p)
	}
	c, err := Flat(tr.MaxCards)
	if err != nil {
		tb.Fatal(err)
	}
	res, err := Run(context.Background(), tr.Jobs, baseline.New(params), Config{Cluster: c, Estimates: est, Cycles: cy})
	if err != nil {
		tb.Fatal(err)
	}
	if res.Summary.Jobs != len(tr.Jobs) {
		tb.Fatalf("%d jobs finished, want %d", res.Summary.Jobs, len(tr.Jobs))
	}
	return res.Summary
}

// kthPublished are predictsim's averages over all 28,481 jobs
// (results-predictsim-easy/KTH-SP2.metrics.gz): rows
// easy_backfill_scheduler_None_None, easy_sjbf_scheduler_None_None and
// easy_prediction_backfill_scheduler_predictorclairvoyant_throw_an_error.
var kthPublished = []struct {
	name       string
	policy     model.Policy
	est        Estimates
	bsld, flow float64
	tol        float64 // allowed relative error of the bounded slowdown, default cycles
}{
	{"EASY, user estimates", model.PolicyEASY, EstimatesUser, 92.5765397336295, 15696.7981812436, 0.02},
	{"EASY-SJBF, user estimates", model.PolicyEASYSJBF, EstimatesUser, 69.4054005803035, 14764.0026684456, 0.03},
	{"EASY, exact estimates", model.PolicyEASY, EstimatesExact, 71.7223851124418, 15187.6077033812, 0.02},
}

// TestKTHPublished pins the replay of KTH-SP2 (strong filter, 100
// processors, flat cluster) against predictsim's published averages: within
// 2% (EASY) and 3% (EASY-SJBF) of the bounded slowdown with the default
// cycles, and exactly with CyclesPerEvent, which plans the way pyss does.
func TestKTHPublished(t *testing.T) {
	if testing.Short() {
		t.Skip("replays 28,481 jobs six times")
	}
	tr := loadKTH(t)
	if got, want := len(tr.Jobs), 28481; got != want {
		t.Fatalf("strong filter kept %d jobs, want %d", got, want)
	}
	for _, tc := range kthPublished {
		t.Run(tc.name+", per-time cycles", func(t *testing.T) {
			s := runKTH(t, tr, tc.policy, tc.est, CyclesPerTime)
			t.Logf("avg bsld %.4f (published %.4f, %+.3f%%), avg flow %.1f s (published %.1f, %+.3f%%), %d cycles",
				s.AvgBSLD, tc.bsld, 100*(s.AvgBSLD/tc.bsld-1), s.AvgFlow, tc.flow, 100*(s.AvgFlow/tc.flow-1), s.Cycles)
			if math.Abs(s.AvgBSLD/tc.bsld-1) > tc.tol {
				t.Errorf("avg bsld %.4f, published %.4f: off by more than %.0f%%", s.AvgBSLD, tc.bsld, 100*tc.tol)
			}
		})
		t.Run(tc.name+", per-event cycles", func(t *testing.T) {
			s := runKTH(t, tr, tc.policy, tc.est, CyclesPerEvent)
			t.Logf("avg bsld %.10g (published %.10g), avg flow %.10g s (published %.10g), %d cycles",
				s.AvgBSLD, tc.bsld, s.AvgFlow, tc.flow, s.Cycles)
			// The published figures went through R's text output: 15 digits.
			if math.Abs(s.AvgBSLD/tc.bsld-1) > 1e-12 || math.Abs(s.AvgFlow/tc.flow-1) > 1e-12 {
				t.Errorf("avg bsld %.15g, flow %.15g: want exactly the published %.15g, %.15g", s.AvgBSLD, s.AvgFlow, tc.bsld, tc.flow)
			}
		})
	}
}

// BenchmarkKTHEasy replays KTH-SP2 (28,481 jobs, 100 processors) under EASY
// with user estimates and the default cycles: one op is one full replay.
func BenchmarkKTHEasy(b *testing.B) {
	tr := loadKTH(b)
	params, _ := baseline.ForPolicy(model.PolicyEASY, 0)
	b.ReportAllocs()
	for b.Loop() {
		c, err := Flat(tr.MaxCards)
		if err != nil {
			b.Fatal(err)
		}
		res, err := Run(context.Background(), tr.Jobs, baseline.New(params), Config{Cluster: c})
		if err != nil {
			b.Fatal(err)
		}
		if res.Summary.Jobs != len(tr.Jobs) {
			b.Fatalf("%d jobs finished, want %d", res.Summary.Jobs, len(tr.Jobs))
		}
	}
}
