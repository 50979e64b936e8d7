package bench

import (
	"context"
	"fmt"
	"testing"

	"github.com/huitian/huitian/model"
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
