package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/solver/baseline"
)

// BenchmarkPlan sweeps cluster size × queue depth for each policy. Each
// sub-benchmark first checks that the plan is a real decision (jobs start,
// the head gets a reservation), then times it.
func BenchmarkPlan(b *testing.B) {
	hist := History(2000, 7)
	for _, cards := range []int{1024, 8192, 65536} {
		for _, queued := range []int{1000, 5000} {
			s := Snapshot(cards, queued, 1)
			for _, p := range Policies {
				b.Run(fmt.Sprintf("%s/cards=%d/queued=%d", p, cards, queued), func(b *testing.B) {
					pl, err := NewPlanner(p, hist)
					if err != nil {
						b.Fatal(err)
					}
					d, err := pl.Plan(context.Background(), s)
					if err != nil {
						b.Fatal(err)
					}
					if len(d.Starts) == 0 || len(d.Reservations) == 0 || d.Starts[0].Kind != model.Backfill {
						b.Fatalf("not a real decision: %d starts, %d reservations", len(d.Starts), len(d.Reservations))
					}
					b.ReportAllocs()
					b.ResetTimer()
					for b.Loop() {
						if _, err := pl.Plan(context.Background(), s); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}

func TestSnapshotIsValid(t *testing.T) {
	for _, cards := range []int{1024, 8192} {
		s := Snapshot(cards, 1000, 1)
		if err := s.Validate(); err != nil {
			t.Fatalf("%d cards: %v", cards, err)
		}
		busy := 0
		for _, r := range s.Running {
			busy += len(r.Cards)
		}
		if busy != cards/4 {
			t.Fatalf("%d cards: %d busy, want %d", cards, busy, cards/4)
		}
	}
}

// BenchmarkCycles plans consecutive cycles of a sequence (bench.Sequence)
// under the 50 ms budget with each policy, EASY first, and reports each
// policy's p50 and p99 over the cycles, its p99 as a ratio to EASY's in
// the same run, and the share of plans the budget cut short. One
// iteration is 20 measured cycles after 2 of warm-up.
func BenchmarkCycles(b *testing.B) {
	hist := History(2000, 7)
	for _, size := range []struct{ cards, queued int }{{8192, 5000}, {65536, 5000}, {65536, 20000}} {
		easy := 0.0
		for _, p := range []model.Policy{model.PolicyEASY, model.PolicyConservative, model.PolicyHuitianGreedy, model.PolicyHuitian} {
			b.Run(fmt.Sprintf("%s/cards=%d/queued=%d", p, size.cards, size.queued), func(b *testing.B) {
				var res SeqResult
				for b.Loop() {
					pl, err := NewPlanner(p, hist)
					if err != nil {
						b.Fatal(err)
					}
					q := NewSequence(size.cards, size.queued, 1, 30*time.Second).Reuse()
					if res, err = MeasureSequence(context.Background(), pl, q, 2, 20, 50*time.Millisecond, time.Now); err != nil {
						b.Fatal(err)
					}
					if res.Starts == 0 {
						b.Fatal("not a real sequence: nothing started")
					}
				}
				if p == model.PolicyEASY {
					easy = res.P99ms
				}
				b.ReportMetric(res.P50ms, "p50-ms")
				b.ReportMetric(res.P99ms, "p99-ms")
				if easy > 0 {
					b.ReportMetric(res.P99ms/easy, "p99-×easy")
				}
				b.ReportMetric(float64(res.BudgetCuts)/float64(res.Cycles), "cut-share")
			})
		}
	}
}

// BenchmarkKeptProfile plans the same 20 consecutive cycles of a sequence
// (no budget) with a baseline planner that keeps its profile from cycle to
// cycle and with one that loads it anew every cycle: the two decide the
// same (TestIncrementalEqualsFromScratch), so the sequences are the same
// and the ratio of the two times is what keeping the profile saves. Only
// the plans are timed.
func BenchmarkKeptProfile(b *testing.B) {
	for _, cards := range []int{8192, 65536} {
		for _, p := range []model.Policy{model.PolicyEASY, model.PolicyConservative} {
			if p == model.PolicyConservative && cards > 8192 {
				continue // seconds a plan without a budget
			}
			for _, scratch := range []bool{false, true} {
				name := "kept"
				if scratch {
					name = "scratch"
				}
				b.Run(fmt.Sprintf("%s/cards=%d/queued=5000/%s", p, cards, name), func(b *testing.B) {
					params, _ := baseline.ForPolicy(p, 0)
					b.StopTimer()
					for range b.N {
						pl := baseline.New(params)
						pl.FromScratch = scratch
						q := NewSequence(cards, 5000, 1, 30*time.Second)
						for n := range 22 {
							s := q.Snapshot()
							if n >= 2 {
								b.StartTimer()
							}
							d, err := pl.Plan(context.Background(), s)
							b.StopTimer()
							if err != nil {
								b.Fatal(err)
							}
							q.Advance(d)
						}
					}
				})
			}
		}
	}
}

// TestSummarizeMediansOverRounds: a hand-computed case. Three rounds of
// EASY and huitian at one size and one of EASY at another: medians of
// odd and even counts, the spread, the sums, and the groups in the order
// they first appear.
func TestSummarizeMediansOverRounds(t *testing.T) {
	row := func(pol string, cards int, p50, p99, maxMs, ratio float64, late, cuts, fb int) SeqResult {
		// The last snapshot's queue moves by a job or two from round to
		// round; the depth asked for does not.
		return SeqResult{Result: Result{Policy: pol, Cards: cards, Queued: 100 + int(p50)%3, P50ms: p50, P99ms: p99, RatioToEASY: ratio, Fallbacks: fb},
			Cycles: 10, MaxMs: maxMs, Late: late, BudgetCuts: cuts, Depth: 100}
	}
	got := Summarize([]SeqResult{
		row("easy", 64, 1, 10, 12, 1, 0, 0, 0),
		row("huitian", 64, 3, 40, 50, 4, 1, 2, 2),
		row("easy", 64, 2, 20, 21, 1, 0, 0, 0),
		row("huitian", 64, 5, 30, 33, 1.5, 0, 1, 1),
		row("easy", 128, 7, 70, 70, 1, 0, 0, 0),
		row("easy", 64, 4, 15, 16, 1, 0, 0, 0),
		row("huitian", 64, 4, 60, 61, 4, 2, 0, 0),
	})
	want := []SeqSummary{
		{Policy: "easy", Cards: 64, Queued: 100, Rounds: 3, P50ms: 2, P99ms: 15, P99Min: 10, P99Max: 20, MaxMs: 21,
			RatioToEASY: 1, RatioMin: 1, RatioMax: 1, Cycles: 30},
		{Policy: "huitian", Cards: 64, Queued: 100, Rounds: 3, P50ms: 4, P99ms: 40, P99Min: 30, P99Max: 60, MaxMs: 61,
			RatioToEASY: 4, RatioMin: 1.5, RatioMax: 4, Late: 3, BudgetCuts: 3, Fallbacks: 3, Cycles: 30},
		{Policy: "easy", Cards: 128, Queued: 100, Rounds: 1, P50ms: 7, P99ms: 70, P99Min: 70, P99Max: 70, MaxMs: 70,
			RatioToEASY: 1, RatioMin: 1, RatioMax: 1, Cycles: 10},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Summarize (-want +got):\n%s", diff)
	}
	if m := median([]float64{4, 1, 3, 2}); m != 2.5 {
		t.Fatalf("median of 1–4 = %v, want 2.5", m)
	}
	if s := Summarize([]SeqResult{row("huitian", 64, 1, 1, 1, 0, 0, 0, 0)}); s[0].RatioToEASY != 0 || s[0].RatioMin != 0 {
		t.Fatalf("no EASY measured: ratio %v (min %v), want 0", s[0].RatioToEASY, s[0].RatioMin)
	}
}
