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
// decides the first job of EASY's order as the guarantee would, and no
// other: every other job is pending with the cut counted (the budget is a
// bound: a main pass of thousands of starts is cut too); a budget that
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
		if d.Stats.BudgetCut < len(s.Queued)-1 {
			t.Fatalf("budget out: %d of %d queued jobs cut, want all but the first at least", d.Stats.BudgetCut, len(s.Queued))
		}
		if len(d.Starts)+len(d.Reservations) > 1 {
			t.Fatalf("budget out: %d starts and %d reservations, want the first job's alone", len(d.Starts), len(d.Reservations))
		}
		if len(full.Preemptions) == 0 {
			// No yield was needed: the guarantee is EASY's plain decision,
			// so what the cut plan decided is the full plan's first regular
			// start or its head's reservation.
			for _, st := range d.Starts {
				if len(full.Starts) == 0 || full.Starts[0].JobID != st.JobID || st.Kind != model.Regular {
					t.Fatalf("budget out: started %s (%v), not the full plan's first start", st.JobID, st.Kind)
				}
			}
			for _, r := range d.Reservations {
				if len(full.Reservations) == 0 || full.Reservations[0].JobID != r.JobID {
					t.Fatalf("budget out: reserved for %s, not the full plan's head", r.JobID)
				}
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
