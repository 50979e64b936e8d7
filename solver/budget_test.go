package solver

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/model/modeltest"
)

// checkComplete fails unless every queued job is started or pending once,
// no card is started twice, and a cut says so in the stats.
func checkComplete(t *rapid.T, s *model.Snapshot, d *model.Decision) {
	seen := map[string]bool{}
	cards := map[model.CardRef]bool{}
	for _, st := range d.Starts {
		if seen[st.JobID] {
			t.Fatalf("%s started twice", st.JobID)
		}
		seen[st.JobID] = true
		for _, c := range st.Cards {
			if cards[c] {
				t.Fatalf("card %s started twice", c)
			}
			cards[c] = true
		}
	}
	cut := 0
	for _, p := range d.Pending {
		if seen[p.JobID] {
			t.Fatalf("%s started and pending", p.JobID)
		}
		seen[p.JobID] = true
		if strings.Contains(p.Message, "time budget") {
			cut++
		}
	}
	if len(seen) != len(s.Queued) {
		t.Fatalf("%d of %d queued jobs accounted for", len(seen), len(s.Queued))
	}
	if cut != d.Stats.BudgetCut || cut > 0 && !d.Stats.Fallback {
		t.Fatalf("%d pending say the budget cut them, stats say %d (fallback %v)", cut, d.Stats.BudgetCut, d.Stats.Fallback)
	}
}

// TestHuitianPastTheBudget: a plan whose budget ran out before it began
// still returns EASY's main pass and the head's reservation (the
// guarantee), every other job pending with the cut counted; a budget that
// runs out at any point gives a complete decision; a cancelled plan
// returns the context's error.
func TestHuitianPastTheBudget(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s, h := randomWorld(t)
		full, err := h.Plan(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		expired, cancel := context.WithDeadline(context.Background(), time.Unix(0, 0))
		defer cancel()
		d, err := h.Plan(expired, s)
		if err != nil {
			t.Fatalf("budget out: %v, want the guarantee", err)
		}
		checkComplete(t, s, d)
		if len(full.Reservations) > 0 && len(d.Reservations) == 0 {
			t.Fatalf("budget out: no reservation, the full plan reserves for %s", full.Reservations[0].JobID)
		}
		if len(full.Preemptions) == 0 {
			// No yield was needed: the guarantee is EASY's plain decision,
			// so the main pass is the full plan's.
			regular := func(d *model.Decision) []string {
				var ids []string
				for _, st := range d.Starts {
					if st.Kind == model.Regular {
						ids = append(ids, st.JobID)
					}
				}
				return ids
			}
			if a, b := strings.Join(regular(full), ","), strings.Join(regular(d), ","); a != b {
				t.Fatalf("budget out: main pass %s, full plan's %s", b, a)
			}
		}
		n := rapid.IntRange(0, 3*len(s.Queued)+10).Draw(t, "checks")
		d, err = h.Plan(&modeltest.Countdown{Context: context.Background(), Left: n}, s)
		if err != nil {
			t.Fatalf("budget out after %d checks: %v", n, err)
		}
		checkComplete(t, s, d)
		cctx, cancel2 := context.WithCancel(context.Background())
		cancel2()
		if _, err := h.Plan(cctx, s); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled: %v, want context.Canceled", err)
		}
	})
}
