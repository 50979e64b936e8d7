package sim

import (
	"context"
	"testing"
	"time"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/sim/trace"
	"github.com/huitian/huitian/solver"
)

// BenchmarkFlatRatio is issue 15's flat-machine target as a benchmark:
// per policy, the replay of KTH-SP2's first 10,000 jobs (strong filter)
// with every job's processors ×933 on a flat 93,312-card machine, against
// the replay of the whole of KTH-SP2 on its own 100 processors, both in
// the same iteration; "ratio" is the first's time over the second's
// (target ≤ 2). One iteration is both replays: run it with
// -benchtime=1x (`make bench-flat`), huitian-greedy's flat replay takes
// most of a minute.
func BenchmarkFlatRatio(b *testing.B) {
	kth := loadKTH(b)
	const scale, jobs = 933, 10000 // 100 processors ×933 fit 93,312
	wide := make([]trace.Job, min(jobs, len(kth.Jobs)))
	copy(wide, kth.Jobs)
	for i := range wide {
		wide[i].Spec.Cards *= scale
	}
	for _, p := range []model.Policy{model.PolicyEASY, model.PolicyHuitianGreedy} {
		b.Run(p.String(), func(b *testing.B) {
			replay := func(jobs []trace.Job, cards int) time.Duration {
				t0 := time.Now() // the cluster's build counts: 93,312 nodes
				c, err := Flat(cards)
				if err != nil {
					b.Fatal(err)
				}
				pl, err := solver.New(p, 0)
				if err != nil {
					b.Fatal(err)
				}
				res, err := Run(context.Background(), jobs, pl, Config{Cluster: c})
				if err != nil {
					b.Fatal(err)
				}
				if res.Summary.Jobs != len(jobs) {
					b.Fatalf("%d jobs finished, want %d", res.Summary.Jobs, len(jobs))
				}
				return time.Since(t0)
			}
			var small, flat time.Duration
			for b.Loop() {
				small += replay(kth.Jobs, kth.MaxCards)
				flat += replay(wide, 93312)
			}
			b.ReportMetric(small.Seconds()/float64(b.N), "kth-s/op")
			b.ReportMetric(flat.Seconds()/float64(b.N), "flat-s/op")
			b.ReportMetric(flat.Seconds()/small.Seconds(), "ratio")
		})
	}
}
