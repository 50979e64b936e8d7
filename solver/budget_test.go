package solver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/model/modeltest"
	"github.com/huitian/huitian/solver/baseline"
	"github.com/huitian/huitian/solver/clp"
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

// lpReady readies a cycle of h on s for the backfill beyond EASY, as Plan
// does, and returns it with its candidates.
func lpReady(t *testing.T, h *Huitian, s *model.Snapshot) (*cycle, []int) {
	t.Helper()
	c, cands, err := h.toBackfill(context.Background(), s, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	return c, cands
}

// TestLPBuildStopsAtTheBudget: the LP's build — the window levels, the
// candidates read, each candidate's options — looks at the time budget as
// it goes, so that a build begun just before the deadline does not answer
// long after it (at 65,536 cards and 20,000 queued, 5–20 ms). Whichever
// look first finds the budget spent, in the build or in the solver, the
// LP places nothing, says so (fallback) and hands every candidate back in
// queue order to the greedy pass, which cuts them; with the budget spent
// at no look it places what it places with no budget at all. The world:
// 32 cards free for 10 hours, then reserved for a 128-card head; 600
// one-card jobs whose 20-hour limits keep EASY from them but whose
// history says they run half an hour — more candidates than the build
// reads between two looks.
func TestLPBuildStopsAtTheBudget(t *testing.T) {
	now := modeltest.Epoch.Add(100 * time.Hour)
	cl := modeltest.Uniform(16, 8, 0)
	s := &model.Snapshot{Now: now, Cluster: cl}
	for n := range 12 {
		j := modeltest.Job(fmt.Sprintf("r%d", n)).Cards(8).User("bob").Limit(11 * time.Hour).Build()
		s.Running = append(s.Running, modeltest.Running(j, now.Add(-time.Hour), modeltest.Refs(cl.Nodes[n].Name, 0, 8)...))
	}
	s.Queued = append(s.Queued, modeltest.Job("big").Cards(128).User("bob").Limit(time.Hour).SubmitAfter(0).Build())
	for i := range 600 {
		s.Queued = append(s.Queued, modeltest.Job(fmt.Sprintf("q%03d", i)).Cards(1).User("ann").
			Limit(20*time.Hour).SubmitAfter(time.Duration(1+i)*time.Second).Build())
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	h := NewHuitian(DefaultConfig(), clp.LP{})
	for k := range 40 {
		j := modeltest.Job(fmt.Sprintf("h%d", k)).User("ann").Limit(20 * time.Hour).Build()
		observeFinished(h, j, modeltest.Epoch.Add(time.Duration(k)*time.Hour), 30*time.Minute-time.Duration(k)*time.Second)
	}

	c, cands := lpReady(t, h, s)
	if len(cands) < 2*lpCheckEvery {
		t.Fatalf("%d candidates, want at least %d for the build to look more than once", len(cands), 2*lpCheckEvery)
	}
	counter := &modeltest.Countdown{Context: context.Background(), Left: 1 << 30}
	wantRest, fallback := c.placeLP(counter, slices.Clone(cands))
	looks := 1<<30 - counter.Left
	if fallback || c.d.Stats.LPRows == 0 || len(wantRest) == len(cands) {
		t.Fatalf("with no budget: fallback %v, %d LP rows, %d of %d candidates left: want the LP to place some", fallback, c.d.Stats.LPRows, len(wantRest), len(cands))
	}
	wantStarts := len(c.d.Starts)
	// Once for the levels, once for the 256 candidates read (the LP's
	// MaxCandidates), once per candidate's options, and the solver's.
	if want := 2 + c.d.Stats.Candidates; looks < want {
		t.Fatalf("the LP looked at the budget %d times, want at least %d", looks, want)
	}
	for _, left := range []int{0, 1, 2, 3, looks / 2, looks - 2, looks - 1, looks} {
		c, cands := lpReady(t, h, s)
		before := len(c.d.Starts)
		rest, fallback := c.placeLP(&modeltest.Countdown{Context: context.Background(), Left: left}, slices.Clone(cands))
		if left == looks {
			if fallback || len(rest) != len(wantRest) || len(c.d.Starts) != wantStarts {
				t.Fatalf("budget spent at no look: fallback %v, %d left, %d starts; want %d left and %d starts as with no budget", fallback, len(rest), len(c.d.Starts), len(wantRest), wantStarts)
			}
			continue
		}
		if !fallback || !slices.Equal(rest, cands) || len(c.d.Starts) != before {
			t.Fatalf("budget spent at look %d of %d: fallback %v, %d of %d candidates back (in order: %v), %d starts made; want fallback, all back in order, none made",
				left+1, looks, fallback, len(rest), len(cands), slices.Equal(rest, cands), len(c.d.Starts)-before)
		}
	}
}
