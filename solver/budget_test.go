package solver

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/model/modeltest"
	"github.com/huitian/huitian/solver/baseline"
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
		// A budget that does not run out decides as no budget: the
		// guarantee's share of it (Config.GuaranteeShare) cuts nothing.
		hour, cancelHour := context.WithTimeout(context.Background(), time.Hour)
		defer cancelHour()
		ample, err := h.Plan(hour, s)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(full, ample, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("an hour's budget decides otherwise than none (-none +hour):\n%s", diff)
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

// TestSoonerDeadline: the guarantee's context ends at its share of the
// time left, keeps the parent's cancellation, and is the parent itself
// without a deadline, with a share of 1 or past the deadline.
func TestSoonerDeadline(t *testing.T) {
	bg := context.Background()
	if got := sooner(bg, 0.6); got != bg {
		t.Fatalf("no deadline: got a new context")
	}
	far, cancel := context.WithTimeout(bg, time.Hour)
	defer cancel()
	if got := sooner(far, 1); got != far {
		t.Fatalf("share 1: got a new context")
	}
	past, cancelPast := context.WithDeadline(bg, time.Unix(0, 0))
	defer cancelPast()
	if got := sooner(past, 0.6); got != past {
		t.Fatalf("past the deadline: got a new context")
	}
	before := time.Now()
	got := sooner(far, 0.6)
	after := time.Now()
	dl, ok := got.Deadline()
	parent, _ := far.Deadline()
	if !ok {
		t.Fatal("share 0.6: no deadline")
	}
	// 0.6 of the hour left from a moment between before and after.
	lo := before.Add(36 * time.Minute).Add(-time.Second)
	hi := after.Add(36 * time.Minute).Add(time.Second)
	if dl.Before(lo) || dl.After(hi) || !dl.Before(parent) {
		t.Fatalf("share 0.6 of an hour: deadline %v, want within [%v, %v] and before %v", dl, lo, hi, parent)
	}
	if err := baseline.Done(got); err != nil {
		t.Fatalf("share 0.6 of an hour: Done %v", err)
	}
	cancel()
	if err := got.Err(); !errors.Is(err, context.Canceled) {
		t.Fatalf("parent cancelled: Err %v, want context.Canceled", err)
	}
	// A deadline a share makes pass already is past for baseline.Done.
	short, cancelShort := context.WithTimeout(bg, 20*time.Millisecond)
	defer cancelShort()
	cut := sooner(short, 1e-9)
	if err := baseline.Done(cut); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a share of nothing: Done %v, want DeadlineExceeded", err)
	}
}
