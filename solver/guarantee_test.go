package solver

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/model/modeltest"
	"github.com/huitian/huitian/solver/baseline"
	"github.com/huitian/huitian/solver/clp"
	"github.com/huitian/huitian/solver/estimate"
	"github.com/huitian/huitian/solver/tune"
)

// TestEveryEASYStartIsKept: whatever huitian adds, every job EASY starts in
// a snapshot starts on the same cards with the same kind, and every
// reservation is EASY's (job, cards, start). Checked over random worlds
// (history, windows, thresholds); before huitian planned on EASY's decision
// its reservations sat at a predicted start and its starts differed.
func TestEveryEASYStartIsKept(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s, h := randomWorld(t)
		h.cfg.ExpansionOrder = rapid.Bool().Draw(t, "lxf")
		d, err := h.Plan(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		// Compare only where nothing could yield (see TestReservationsAreEASYs).
		if len(h.mem.window) > 0 || len(h.mem.firstReserved) > 0 {
			return
		}
		for _, r := range s.Running {
			if r.Kind == model.Backfill && r.Job.Checkpointable {
				return
			}
		}
		// Card by card, as huitian's own EASY walk plans.
		easy, err := (&baseline.Planner{P: h.easyParams(s), PerCard: true}).Plan(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		if h.cfg.ExpansionOrder {
			return // EASY's backfill order differs below saturation; the reservations still agree
		}
		for _, e := range easy.Starts {
			i := slices.IndexFunc(d.Starts, func(st model.Start) bool { return st.JobID == e.JobID })
			if i < 0 {
				t.Fatalf("EASY starts %s, huitian does not", e.JobID)
			}
			if !slices.Equal(d.Starts[i].Cards, e.Cards) || d.Starts[i].Kind != e.Kind {
				t.Fatalf("%s: huitian %v %v, EASY %v %v", e.JobID, d.Starts[i].Cards, d.Starts[i].Kind, e.Cards, e.Kind)
			}
		}
	})
}

// TestReservationsAreEASYs: when no running job could be made to yield
// (none checkpointable, no window, no threshold passed), huitian reserves
// what EASY reserves (with the large jobs' reservations, easyParams), on
// the same cards from the same start, whatever order its own backfill
// takes.
func TestReservationsAreEASYs(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s, h := randomWorld(t)
		clear(h.mem.window)
		clear(h.mem.firstReserved)
		for _, r := range s.Running {
			if r.Kind == model.Backfill && r.Job.Checkpointable {
				return
			}
		}
		d, err := h.Plan(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		// Card by card, as huitian's own EASY walk plans.
		easy, err := (&baseline.Planner{P: h.easyParams(s), PerCard: true}).Plan(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		if len(easy.Reservations) != len(d.Reservations) {
			t.Fatalf("EASY reserves %d, huitian %d", len(easy.Reservations), len(d.Reservations))
		}
		for k, e := range easy.Reservations {
			g := d.Reservations[k]
			if cards := modeltest.ReservedCards(s.Cluster.Layout(), &g); g.JobID != e.JobID || !slices.Equal(cards, e.Cards) || !g.Start.Equal(e.Start) {
				t.Fatalf("reservation %d: huitian %s %v %v, EASY %s %v %v", k, g.JobID, cards, g.Start, e.JobID, e.Cards, e.Start)
			}
		}
	})
}

// windowWorld: one 4-card node. A 4-card job waits for it; a regular job
// holds cards 0–2 and is past its limit (it ends within the grace), and a
// backfill job admitted into a window holds card 3; it has run an hour
// and has limit.
func windowWorld(windowEnd, limit time.Duration) (*model.Snapshot, *Huitian) {
	c := modeltest.Uniform(1, 4, 0)
	now := modeltest.Epoch.Add(10 * time.Hour)
	main := modeltest.Job("main").Cards(3).Limit(time.Hour).Build()
	bf := modeltest.Job("bf").Cards(1).Limit(limit).Build()
	r1 := modeltest.Running(main, now.Add(-2*time.Hour), modeltest.Refs("n000", 0, 3)...)
	r2 := modeltest.Running(bf, now.Add(-time.Hour), modeltest.Ref("n000", 3))
	r2.Kind = model.Backfill
	head := modeltest.Job("head").Cards(4).Limit(time.Hour).SubmitAfter(time.Hour).Build()
	s := &model.Snapshot{Now: now, Cluster: c, Running: []model.Running{r1, r2}, Queued: []model.Job{head}}
	h := NewHuitianGreedy(DefaultConfig())
	h.mem.window["bf"] = now.Add(windowEnd)
	return s, h
}

// TestOverranWindowIsRequeued: a job that cannot checkpoint, past the
// window it was admitted into, is requeued at once when it alone keeps the
// head from starting — without waiting for the 30-minute threshold; within
// its window it is left alone when it is expected to end there. (Before, it
// held the head until the threshold passed, however long it ran.) One that
// is expected to outlive its window (no history: it runs to its limit) is
// requeued now, before the window's end would requeue it with 20 minutes
// more work lost and the head held for them (lentCost).
func TestOverranWindowIsRequeued(t *testing.T) {
	for _, tc := range []struct {
		name      string
		windowEnd time.Duration
		limit     time.Duration
		want      bool
	}{
		{"window ended 5 minutes ago: requeued", -5 * time.Minute, 3 * time.Hour, true},
		{"window ends in 20 minutes, the limit too: left alone", 20 * time.Minute, 80 * time.Minute, false},
		{"window ends in 20 minutes, the limit 2 h later: requeued now", 20 * time.Minute, 3 * time.Hour, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, h := windowWorld(tc.windowEnd, tc.limit)
			if err := s.Validate(); err != nil {
				t.Fatal(err)
			}
			d, err := h.Plan(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			got := slices.ContainsFunc(d.Preemptions, func(p model.Preemption) bool {
				return p.JobID == "bf" && p.Action == model.PreemptRequeue && p.ForJobID == "head"
			})
			if got != tc.want {
				t.Fatalf("requeue of bf: %v, want %v (preemptions %+v, reservations %+v)", got, tc.want, d.Preemptions, d.Reservations)
			}
			if len(d.Reservations) != 1 {
				t.Fatalf("reservations %+v", d.Reservations)
			}
			// EASY plans as if the windowed job ends at its window: the head
			// is reserved within the grace when it overran, not at bf's limit.
			at := d.Reservations[0].Start.Sub(s.Now)
			if tc.want && at > 2*time.Minute {
				t.Fatalf("head reserved in %v, want within the grace", at)
			}
			if !tc.want && at > 25*time.Minute {
				t.Fatalf("head reserved in %v, want by bf's window end", at)
			}
		})
	}
}

// TestReplanByWithinTheMargin: a job that cannot checkpoint, admitted
// into a window, is requeued for the head once the head's reservation is
// within the margin (its notice), if it overran its window or its window
// ends within its notice; so a decision asks for a cycle then, and that
// cycle tells the job, with a notice that runs out at the reservation.
// Before, a job whose window ended 71 s before the reservation was told
// when some other event brought a cycle, 56 s before it, and the head
// started 4 s past its promise (KTH-SP2 at load 0.9); and a job whose
// window ended at the reservation was told only once past it, and the
// head started a notice (60 s) late (three times on KTH-SP2 at 0.7).
func TestReplanByWithinTheMargin(t *testing.T) {
	c := modeltest.Uniform(1, 4, 0)
	now := modeltest.Epoch.Add(10 * time.Hour)
	cfg := DefaultConfig()
	promise := now.Add(71 * time.Second)
	for _, tc := range []struct {
		name      string
		windowEnd time.Time
	}{
		{"the window ended 10 s ago", now.Add(-10 * time.Second)},
		{"the window ends at the reservation", promise},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// main ends by its limit at the promise; bf, which cannot
			// checkpoint, holds card 3 in its window.
			main := modeltest.Job("main").Cards(3).Limit(time.Hour).Build()
			bf := modeltest.Job("bf").Cards(1).Limit(3 * time.Hour).Build()
			head := modeltest.Job("head").Cards(4).Limit(time.Hour).SubmitAfter(time.Hour).Build()
			at := func(now time.Time) *model.Snapshot {
				r1 := modeltest.Running(main, promise.Add(-time.Hour), modeltest.Refs("n000", 0, 3)...)
				r2 := modeltest.Running(bf, modeltest.Epoch.Add(9*time.Hour), modeltest.Ref("n000", 3))
				r2.Kind = model.Backfill
				return &model.Snapshot{Now: now, Cluster: c, Running: []model.Running{r1, r2}, Queued: []model.Job{head}}
			}
			h := NewHuitianGreedy(cfg)
			h.mem.window["bf"] = tc.windowEnd
			s := at(now)
			if err := s.Validate(); err != nil {
				t.Fatal(err)
			}
			d, err := h.Plan(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Reservations) != 1 || !d.Reservations[0].Start.Equal(promise) || len(d.Preemptions) != 0 {
				t.Fatalf("reservations %+v, preemptions %+v; want the head at %v and no preemption yet", d.Reservations, d.Preemptions, promise)
			}
			if want := promise.Add(-cfg.Preempt.Margin); !d.ReplanBy.Equal(want) {
				t.Fatalf("ReplanBy %v, want %v: the reservation within the margin", d.ReplanBy, want)
			}
			s = at(d.ReplanBy)
			d, err = h.Plan(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Preemptions) != 1 || d.Preemptions[0].JobID != "bf" || d.Preemptions[0].Action != model.PreemptRequeue ||
				!s.Now.Add(d.Preemptions[0].Notice).Equal(promise) {
				t.Fatalf("preemptions %+v, want bf requeued with a notice that runs out at %v", d.Preemptions, promise)
			}
		})
	}
}

// saturationWorld: one node of 4 cards, 3 held by a regular job for
// at most another hour (its user's jobs run to their limits); a 4-card head waits for them. A 1-card job of a user whose
// jobs run a tenth of their 4-hour limit could use the free card before
// the head (by its estimate, not by its limit). fillers more 4-card jobs of
// 24 h wait behind.
func saturationWorld(fillers int) (*model.Snapshot, *Huitian) {
	return lendingWorld(fillers, 2*time.Hour)
}

// lendingWorld is saturationWorld with the jobs of main's user running
// mainRuns each.
func lendingWorld(fillers int, mainRuns time.Duration) (*model.Snapshot, *Huitian) {
	c := modeltest.Uniform(1, 4, 0)
	now := modeltest.Epoch.Add(100 * time.Hour)
	main := modeltest.Job("main").Cards(3).Limit(2 * time.Hour).Build()
	r := modeltest.Running(main, now.Add(-time.Hour), modeltest.Refs("n000", 0, 3)...)
	s := &model.Snapshot{Now: now, Cluster: c, Running: []model.Running{r}}
	s.Queued = append(s.Queued, modeltest.Job("head").Cards(4).Limit(time.Hour).SubmitAfter(time.Hour).Build())
	s.Queued = append(s.Queued, modeltest.Job("short").User("ann").Cards(1).Limit(4*time.Hour).SubmitAfter(2*time.Hour).Build())
	for i := range fillers {
		s.Queued = append(s.Queued, modeltest.Job(fmt.Sprintf("fill%d", i)).Cards(4).Limit(24*time.Hour).SubmitAfter(3*time.Hour).Build())
	}
	h := NewHuitianGreedy(DefaultConfig())
	for k := range 20 {
		j := modeltest.Job(fmt.Sprintf("h%d", k)).User("ann").Cards(1).Limit(4 * time.Hour).Build()
		start := modeltest.Epoch.Add(time.Duration(k) * time.Hour)
		observeFinished(h, j, start, 20*time.Minute)
		// main's user's jobs run to their limits: the head's start is
		// known, an hour away.
		observeFinished(h, modeltest.Job(fmt.Sprintf("m%d", k)).Cards(3).Limit(2*time.Hour).Build(), start, mainRuns)
	}
	return s, h
}

// TestNoLendingBeyondEASYWhenSaturated: the short job is lent the free card
// on its estimate while the queue is light; when the queued work would keep
// the whole cluster busy for more than SaturatedBacklog (default 8 h), it
// waits, and the plan is EASY's.
func TestNoLendingBeyondEASYWhenSaturated(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fillers int
		mid     time.Duration // the limit of one more 4-card job behind, if any
		backlog time.Duration // Config.SaturatedBacklog, if not the default
		lent    bool
	}{
		{"light queue: lent on its estimate", 0, 0, 0, true},
		{"12 h of queued work on 4 cards: waits", 0, 10 * time.Hour, 0, false},
		{"12 h of queued work, saturated past 24 h: lent", 0, 10 * time.Hour, 24 * time.Hour, true},
		{"72 h of queued work on 4 cards: waits", 3, 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, h := saturationWorld(tc.fillers)
			if tc.mid > 0 {
				s.Queued = append(s.Queued, modeltest.Job("mid").Cards(4).Limit(tc.mid).SubmitAfter(3*time.Hour).Build())
			}
			if tc.backlog > 0 {
				h.cfg.SaturatedBacklog = tc.backlog
			}
			if err := s.Validate(); err != nil {
				t.Fatal(err)
			}
			d, err := h.Plan(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			lent := slices.ContainsFunc(d.Starts, func(st model.Start) bool { return st.JobID == "short" })
			if lent != tc.lent {
				t.Fatalf("short started: %v, want %v (starts %+v, pending %+v)", lent, tc.lent, d.Starts, d.Pending)
			}
			if !tc.lent {
				i := slices.IndexFunc(d.Pending, func(p model.Pending) bool { return p.JobID == "short" })
				if i < 0 || !strings.Contains(d.Pending[i].Message, "saturated") {
					t.Fatalf("short's pending entry %+v does not say the queue is saturated", d.Pending)
				}
			}
		})
	}
}

// TestNoLendingBeforeAJobItsHistoryCannotExplain: main has run an hour,
// past every one of its user's jobs (10 minutes each): it may end at any
// time in the hour its limit leaves, and the head start then, not only in
// an hour. The short job (20 minutes) is not lent the free card: it would
// hold the head past EASY's start whenever main ends within 20 minutes.
// (Taken to run to its limit, main made the head's start certain and the
// short job's risk nil: on NASA-iPSC a 16-card job 80 s from its end held
// a 32-card head a minute past EASY's start, and four jobs behind it.)
func TestNoLendingBeforeAJobItsHistoryCannotExplain(t *testing.T) {
	s, h := lendingWorld(0, 10*time.Minute)
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	d, err := h.Plan(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Starts) != 0 {
		t.Fatalf("starts %+v, want none", d.Starts)
	}
	i := slices.IndexFunc(d.Pending, func(p model.Pending) bool { return p.JobID == "short" })
	if i < 0 || d.Pending[i].Reason != model.PendingPriority || !strings.Contains(d.Pending[i].Message, "preemption probability") {
		t.Fatalf("short's pending entry %+v, want held back by its preemption probability", d.Pending)
	}
	j := slices.IndexFunc(d.Pending, func(p model.Pending) bool { return p.JobID == "head" })
	if want := s.Now.Add(48 * time.Minute); j < 0 || !d.Pending[j].EstimatedStart.Equal(want) {
		t.Fatalf("head's pending entry %+v, want expected at %v (the 0.8 quantile of main's last hour)", d.Pending, want)
	}
}

// TestLendingBeyondEASYInQueueOrder: one card is free until the head's
// reservation an hour away (the job holding its other cards runs to its
// limit, as its user's always do); two 1-card jobs with 4-hour limits could use
// it on their estimates (not on their limits): ann's, submitted first,
// runs 20 minutes, bob's 10. By default the card goes to ann's, the job
// that waited longer; shortest first (EASY++'s order) to bob's.
func TestLendingBeyondEASYInQueueOrder(t *testing.T) {
	for _, tc := range []struct {
		name          string
		shortestFirst bool
		lent          string
	}{
		{"queue order (default)", false, "ann1"},
		{"shortest first", true, "bob1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := modeltest.Uniform(1, 4, 0)
			now := modeltest.Epoch.Add(100 * time.Hour)
			main := modeltest.Job("main").Cards(3).Limit(2 * time.Hour).Build()
			s := &model.Snapshot{Now: now, Cluster: c, Running: []model.Running{
				modeltest.Running(main, now.Add(-time.Hour), modeltest.Refs("n000", 0, 3)...)}}
			s.Queued = []model.Job{
				modeltest.Job("head").Cards(4).Limit(time.Hour).SubmitAfter(time.Hour).Build(),
				modeltest.Job("ann1").User("ann").Cards(1).Limit(4 * time.Hour).SubmitAfter(2 * time.Hour).Build(),
				modeltest.Job("bob1").User("bob").Cards(1).Limit(4 * time.Hour).SubmitAfter(3 * time.Hour).Build(),
			}
			cfg := DefaultConfig()
			if cfg.ShortestFirst {
				t.Fatal("DefaultConfig lends shortest first, want queue order")
			}
			cfg.ShortestFirst = tc.shortestFirst
			h := NewHuitianGreedy(cfg)
			for k := range 20 {
				start := modeltest.Epoch.Add(time.Duration(k) * time.Hour)
				// main's user's jobs run to their limits: the head's start
				// is known, an hour away.
				observeFinished(h, modeltest.Job(fmt.Sprintf("m%d", k)).Cards(3).Limit(2*time.Hour).Build(), start, 2*time.Hour)
				observeFinished(h, modeltest.Job(fmt.Sprintf("a%d", k)).User("ann").Cards(1).Limit(4*time.Hour).Build(), start, 20*time.Minute)
				observeFinished(h, modeltest.Job(fmt.Sprintf("b%d", k)).User("bob").Cards(1).Limit(4*time.Hour).Build(), start, 10*time.Minute)
			}
			if err := s.Validate(); err != nil {
				t.Fatal(err)
			}
			d, err := h.Plan(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			var started []string
			for _, st := range d.Starts {
				started = append(started, st.JobID)
			}
			if !slices.Equal(started, []string{tc.lent}) {
				t.Fatalf("started %v, want [%s] (pending %+v)", started, tc.lent, d.Pending)
			}
		})
	}
}

// TestSurvivalCountsEarlierWindows: a reservation's risk budget starts from
// the windowed jobs already on its cards — P(none of them still runs at
// the claim) — and only those: a regular job, a checkpointable windowed
// job and a job without a window do not count. (Before, every cycle
// started each reservation at survive = 1, so the ε bound held per cycle,
// not over the reservation's life.)
func TestSurvivalCountsEarlierWindows(t *testing.T) {
	c := modeltest.Uniform(1, 5, 0)
	now := modeltest.Epoch.Add(100 * time.Hour)
	mk := func(id string, card int, ckpt bool, kind model.AllocKind) model.Running {
		b := modeltest.Job(id).User("ann").Limit(2 * time.Hour)
		if ckpt {
			b.Checkpoint(time.Minute)
		}
		r := modeltest.Running(b.Build(), now.Add(-10*time.Minute), modeltest.Ref("n000", card))
		r.Kind = kind
		return r
	}
	s := &model.Snapshot{Now: now, Cluster: c, Running: []model.Running{
		mk("w1", 0, false, model.Backfill), // windowed, cannot checkpoint: counts
		mk("w2", 1, false, model.Backfill), // windowed, cannot checkpoint: counts
		mk("ck", 2, true, model.Backfill),  // windowed but checkpointable: yields instead
		mk("bf", 3, false, model.Backfill), // no window
		mk("rg", 4, false, model.Regular),
	}}
	h := NewHuitianGreedy(DefaultConfig())
	for k := range 20 {
		j := modeltest.Job(fmt.Sprintf("h%d", k)).User("ann").Limit(2 * time.Hour).Build()
		start := modeltest.Epoch.Add(time.Duration(k) * time.Hour)
		run := time.Duration(10+5*k) * time.Minute
		observeFinished(h, j, start, run)
	}
	for _, id := range []string{"w1", "w2", "ck"} {
		h.mem.window[id] = now.Add(30 * time.Minute)
	}
	s.Options.OverrunGrace = time.Minute
	cy, err := h.newCycle(context.Background(), s, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := cy.load(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	const at = 40 * 60
	cards := []int{0, 1, 2, 3, 4}
	rem0, _ := cy.runningRem(0)
	rem1, _ := cy.runningRem(1)
	want := rem0.CDF(at) * rem1.CDF(at)
	got := cy.survival(cards, at)
	if want >= 1 || want <= 0 {
		t.Fatalf("the history should leave the windowed jobs a chance of running at %d s (P(done) product %v)", at, want)
	}
	if math.Abs(got-want) > 1e-12 {
		t.Fatalf("survival %v, want %v (w1 and w2 only)", got, want)
	}
	if other := cy.survival([]int{2, 3, 4}, at); other != 1 {
		t.Fatalf("survival on the cards of ck, bf and rg is %v, want 1", other)
	}
}

// TestHoldPreemptionWhenLostIsHigh: a checkpointable backfill job holds
// half of the node the head needs until its limit, 9 h away; suspending
// it starts the head when the regular job ends, in 8 minutes. The planner makes
// it yield, and the decision's lost card-seconds (its checkpoint written
// and read back) are counted; with lost work above LostTarget of busy
// card-seconds the tuner holds preemption, and the head waits for EASY's
// start.
func TestHoldPreemptionWhenLostIsHigh(t *testing.T) {
	world := func() (*model.Snapshot, *Huitian) {
		c := modeltest.Uniform(1, 4, 0)
		now := modeltest.Epoch.Add(100 * time.Hour)
		main := modeltest.Job("main").Cards(2).Limit(time.Hour + 8*time.Minute).Build()
		bf := modeltest.Job("bf").Cards(2).Limit(10 * time.Hour).Checkpoint(5 * time.Minute).Build()
		rb := modeltest.Running(bf, now.Add(-time.Hour), modeltest.Refs("n000", 2, 2)...)
		rb.Kind = model.Backfill
		s := &model.Snapshot{Now: now, Cluster: c, Running: []model.Running{
			modeltest.Running(main, now.Add(-time.Hour), modeltest.Refs("n000", 0, 2)...), rb,
		}}
		s.Queued = []model.Job{modeltest.Job("head").Cards(4).Limit(time.Hour).SubmitAfter(time.Hour).Build()}
		return s, NewHuitianGreedy(DefaultConfig())
	}
	s, h := world()
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	d, err := h.Plan(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Preemptions) != 1 || d.Preemptions[0].JobID != "bf" || d.Preemptions[0].Action != model.PreemptSuspend {
		t.Fatalf("preemptions %+v, want bf suspended for the head (reservations %+v, pending %+v)", d.Preemptions, d.Reservations, d.Pending)
	}
	// 2 cards × (5 min written + 5 min read back).
	if got := lostTo(s, d); got != 2*600 {
		t.Errorf("lost %v card-s, want 1200", got)
	}
	// A requeue loses the run so far and the notice: 2 cards × (1 h + 30 s).
	rq := &model.Decision{Preemptions: []model.Preemption{{JobID: "bf", Action: model.PreemptRequeue, Notice: 30 * time.Second}}}
	if got := lostTo(s, rq); got != 2*3630 {
		t.Errorf("requeue lost %v card-s, want 7260", got)
	}
	// A job not running loses nothing; the others are found whatever
	// the order.
	both := &model.Decision{Preemptions: []model.Preemption{
		{JobID: "gone", Action: model.PreemptRequeue}, rq.Preemptions[0], {JobID: "main", Action: model.PreemptRequeue},
	}}
	if got := lostTo(s, both); got != 2*3630+2*3600 {
		t.Errorf("lost %v card-s for gone, and bf and main requeued, want 14460", got)
	}

	s, h = world()
	// 1,200 card-s lost over 100,000 busy: 1.2%, above the 1% target.
	h.mem.tuner.Work(100000, 1200)
	h.mem.tuner.Backfill(h.cfg.Tune, false, s.Now)
	if !h.mem.tuner.Params.HoldPreemption {
		t.Fatalf("lost share %v: preemption not held", h.mem.tuner.Measures().LostShare)
	}
	d, err = h.Plan(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Preemptions) != 0 {
		t.Fatalf("preemptions %+v while held", d.Preemptions)
	}
	if len(d.Reservations) != 1 || d.Reservations[0].Start.Sub(s.Now) != 9*time.Hour {
		t.Fatalf("reservations %+v, want the head at bf's limit, 9 h from now", d.Reservations)
	}
}

// TestLargeJobReserved: behind the head, the first large gang waiting
// (whole nodes, more than Layout.LargeAbove cards) gets its own reservation
// (Config.LargeDepth), so backfill leaves it its nodes; a large job that
// takes any cards does not. Only the head's reservation is remembered as a
// promise (the preemption threshold and the tuner's main wait count from
// it).
func TestLargeJobReserved(t *testing.T) {
	now := modeltest.Epoch.Add(time.Hour)
	r := modeltest.Job("r").Cards(16).Limit(100 * time.Minute).Build()
	world := func(gang bool) *model.Snapshot {
		large := modeltest.Job("large").Cards(32).Limit(500 * time.Minute).SubmitAfter(time.Minute)
		if gang {
			large.PerNode(8)
		}
		return &model.Snapshot{Now: now, Cluster: modeltest.Uniform(4, 8, 0),
			Running: []model.Running{modeltest.Running(r, now.Add(-time.Minute), append(modeltest.Refs("n000", 0, 8), modeltest.Refs("n001", 0, 8)...)...)},
			Queued: []model.Job{
				modeltest.Job("head").Cards(24).PerNode(8).Limit(1000 * time.Minute).Build(),
				large.Build(),
				modeltest.Job("s8").Cards(8).Limit(10000 * time.Minute).SubmitAfter(2 * time.Minute).Build(),
			}}
	}
	for _, tc := range []struct {
		depth        int
		gang         bool
		want, starts []string
	}{
		{0, true, []string{"head"}, []string{"s8"}},
		{1, true, []string{"head", "large"}, nil},
		{1, false, []string{"head"}, []string{"s8"}},
	} {
		cfg := DefaultConfig()
		cfg.LargeDepth = tc.depth
		h := NewHuitianGreedy(cfg)
		s := world(tc.gang)
		d, err := h.Plan(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		var reserved, started []string
		for _, r := range d.Reservations {
			reserved = append(reserved, r.JobID)
		}
		for _, st := range d.Starts {
			started = append(started, st.JobID)
		}
		if !slices.Equal(reserved, tc.want) || !slices.Equal(started, tc.starts) {
			t.Fatalf("LargeDepth %d, gang %v: reservations %v, starts %v; want %v, %v", tc.depth, tc.gang, reserved, started, tc.want, tc.starts)
		}
		h.Decided(s, d)
		if _, ok := h.mem.firstReserved["large"]; ok {
			t.Fatalf("LargeDepth %d: the large job's reservation is remembered as a head's promise", tc.depth)
		}
		if got, ok := h.mem.firstReserved["head"]; !ok || !got.Equal(d.Reservations[0].Start) {
			t.Fatalf("LargeDepth %d: the head's first reservation is %v (%v), want %v", tc.depth, got, ok, d.Reservations[0].Start)
		}
	}
}

// TestReplanBy: a decision asks to be planned again at the first moment a
// backfill job could be told to yield for the head without anything else
// happening: its protection ending, the reservation coming within its
// notice plus the lookahead, the head passing the requeue threshold.
// Without a backfill job running or a reservation, it asks nothing.
func TestReplanBy(t *testing.T) {
	now := modeltest.Epoch.Add(time.Hour)
	reg := modeltest.Job("reg").Cards(4).Limit(60 * time.Minute).Build()
	bf := modeltest.Job("bf").Cards(2).Limit(120 * time.Minute).Checkpoint(3 * time.Minute).Build()
	head := modeltest.Job("head").Cards(8).Limit(60 * time.Minute).Build()
	world := func(protected time.Duration, backfill bool, queued ...model.Job) *model.Snapshot {
		s := &model.Snapshot{Now: now, Cluster: modeltest.Uniform(1, 8, 0), Queued: queued,
			Running: []model.Running{modeltest.Running(reg, now.Add(-10*time.Minute), modeltest.Refs("n000", 0, 4)...)}}
		if backfill {
			r := modeltest.Running(bf, now.Add(-10*time.Minute), modeltest.Refs("n000", 4, 2)...)
			r.Kind = model.Backfill
			if protected > 0 {
				r.ProtectedUntil = now.Add(protected)
			}
			s.Running = append(s.Running, r)
		}
		return s
	}
	cfg := DefaultConfig().Preempt
	// The head is reserved from reg's end (now+50 min), with bf told to
	// suspend for it: told at its notice (3 min + margin) plus the
	// lookahead before that.
	told := now.Add(50*time.Minute - 3*time.Minute - cfg.Margin - cfg.Lookahead)
	for _, tc := range []struct {
		name string
		s    *model.Snapshot
		want time.Time
	}{
		{"protection ends first", world(5*time.Minute, true, head), now.Add(5 * time.Minute)},
		{"the notice before the reservation", world(0, true, head), told},
		{"no backfill running", world(0, false, head), time.Time{}},
		{"no reservation", world(0, true), time.Time{}},
	} {
		h := NewHuitianGreedy(DefaultConfig())
		d, err := h.Plan(context.Background(), tc.s)
		if err != nil {
			t.Fatal(err)
		}
		if !d.ReplanBy.Equal(tc.want) {
			t.Errorf("%s: ReplanBy %v, want %v (reservations %+v)", tc.name, d.ReplanBy, tc.want, d.Reservations)
		}
	}
}

// TestToldToYieldStaysGone: a backfill job told to yield is planned gone
// when its notice runs out in the cycles after, until it has yielded, even
// when this cycle would not preempt (the tuner holds preemption): the
// head keeps the start it was given, not the job's limit.
func TestToldToYieldStaysGone(t *testing.T) {
	now := modeltest.Epoch.Add(time.Hour)
	reg := modeltest.Job("reg").Cards(6).Limit(15 * time.Minute).Build()
	bf := modeltest.Job("bf").Cards(2).Limit(110 * time.Minute).Checkpoint(3 * time.Minute).Build()
	head := modeltest.Job("head").Cards(8).Limit(60 * time.Minute).Build()
	at := func(now time.Time) *model.Snapshot {
		r := modeltest.Running(bf, modeltest.Epoch.Add(50*time.Minute), modeltest.Refs("n000", 6, 2)...)
		r.Kind = model.Backfill
		return &model.Snapshot{Now: now, Cluster: modeltest.Uniform(1, 8, 0), Queued: []model.Job{head},
			Running: []model.Running{modeltest.Running(reg, modeltest.Epoch.Add(50*time.Minute), modeltest.Refs("n000", 0, 6)...), r}}
	}
	for _, told := range []bool{true, false} {
		h := NewHuitianGreedy(DefaultConfig())
		s := at(now)
		d, err := h.Plan(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Preemptions) != 1 || d.Preemptions[0].JobID != "bf" || len(d.Reservations) == 0 || !d.Reservations[0].Start.Equal(now.Add(5*time.Minute)) {
			t.Fatalf("first cycle: preemptions %+v, reservations %+v; want bf told to yield for head at +5 min", d.Preemptions, d.Reservations)
		}
		if told {
			h.Decided(s, d)
		}
		h.mem.tuner.Params.HoldPreemption = true
		d, err = h.Plan(context.Background(), at(now.Add(time.Minute)))
		if err != nil {
			t.Fatal(err)
		}
		want := now.Add(5 * time.Minute)
		if !told {
			want = modeltest.Epoch.Add(160 * time.Minute) // bf's limit: nothing told it
		}
		if len(d.Reservations) == 0 || !d.Reservations[0].Start.Equal(want) {
			t.Errorf("told=%v: a minute later the head is reserved %+v, want from %v", told, d.Reservations, want)
		}
		if told && len(d.Preemptions) > 0 {
			t.Errorf("bf was told again: %+v", d.Preemptions)
		}
	}
}

// TestYieldedForStaysBehind: a job that yielded its cards for the head
// does not start ahead of it on them when it comes back to the queue,
// though it was submitted first.
func TestYieldedForStaysBehind(t *testing.T) {
	now := modeltest.Epoch.Add(time.Hour)
	back := modeltest.Job("back").Cards(4).Limit(60 * time.Minute).SubmitAfter(0).Build()
	back.RequeueCount = 1
	head := modeltest.Job("head").Cards(8).Limit(60 * time.Minute).SubmitAfter(time.Minute).Build()
	for _, yielded := range []bool{true, false} {
		h := NewHuitianGreedy(DefaultConfig())
		if yielded {
			h.mem.yieldedFor["back"] = "head"
		}
		d, err := h.Plan(context.Background(), &model.Snapshot{Now: now, Cluster: modeltest.Uniform(1, 8, 0), Queued: []model.Job{back, head}})
		if err != nil {
			t.Fatal(err)
		}
		started := startedIDs(d)
		want := []string{"head"}
		if !yielded {
			want = []string{"back"} // first in the queue, as any job
		}
		if !slices.Equal(started, want) {
			t.Errorf("yielded=%v: started %v, want %v", yielded, started, want)
		}
	}
}

// TestMembershipFollowsMemory: one planner, the same snapshot, while
// the memory learns and forgets that a job yielded for the head, that it
// was preempted, and that the head holds a promise. A queued job's
// membership is read once and carried between cycles (tagsOf); each plan
// must see the memory as it is then, not as an earlier cycle read it.
func TestMembershipFollowsMemory(t *testing.T) {
	now := modeltest.Epoch.Add(time.Hour)
	back := modeltest.Job("back").Cards(4).Limit(60 * time.Minute).SubmitAfter(0).Build()
	back.RequeueCount = 1
	head := modeltest.Job("head").Cards(8).Limit(60 * time.Minute).SubmitAfter(time.Minute).Build()
	s := &model.Snapshot{Now: now, Cluster: modeltest.Uniform(1, 8, 0), Queued: []model.Job{back, head}}
	h := NewHuitianGreedy(DefaultConfig())
	promise := func() { h.Decided(s, &model.Decision{Reservations: []model.Reservation{{JobID: "head", Start: now}}}) }
	for _, step := range []struct {
		name  string
		learn func()
		want  string
	}{
		// A job not queued yielded for another: the queued jobs'
		// membership is read from the first plan on.
		{"nothing of these two known", func() {
			h.Decided(s, &model.Decision{Preemptions: []model.Preemption{{JobID: "gone", Action: model.PreemptRequeue, ForJobID: "other"}}})
		}, "back"},
		{"back yielded for head", func() {
			h.Decided(s, &model.Decision{Preemptions: []model.Preemption{{JobID: "back", Action: model.PreemptRequeue, ForJobID: "head"}}})
		}, "head"},
		{"head started elsewhere", func() {
			h.Observe(model.Event{Kind: model.EventStarted, JobID: "head", Time: now, Alloc: model.Backfill})
		}, "back"},
		{"back preempted", func() { h.Observe(model.Event{Kind: model.EventPreempted, JobID: "back", Time: now}) }, "back"},
		{"head promised", promise, "head"},
		{"head's promise gone with its start", func() {
			h.Observe(model.Event{Kind: model.EventStarted, JobID: "head", Time: now, Alloc: model.Backfill})
		}, "back"},
		{"head promised again", promise, "head"},
		{"back finished", func() { h.Observe(model.Event{Kind: model.EventFinished, JobID: "back", Time: now}) }, "back"},
		{"back preempted again", func() { h.Observe(model.Event{Kind: model.EventPreempted, JobID: "back", Time: now}) }, "head"},
		{"head finished", func() { h.Observe(model.Event{Kind: model.EventFinished, JobID: "head", Time: now}) }, "back"},
	} {
		step.learn()
		d, err := h.Plan(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		started := startedIDs(d)
		if !slices.Equal(started, []string{step.want}) {
			t.Errorf("%s: started %v, want [%s]", step.name, started, step.want)
		}
	}
}

// TestMembershipCarriedAcrossCycles: while the memory's maps stay as
// they are, a queued job's membership is carried from cycle to cycle
// (matchQueued's tagged jobs), through arrivals ahead of and behind it, and
// through a queue sent in another order (found by id): back, which yielded
// for head, stays behind it in every cycle.
func TestMembershipCarriedAcrossCycles(t *testing.T) {
	now := modeltest.Epoch.Add(time.Hour)
	back := modeltest.Job("back").Cards(4).Limit(60 * time.Minute).SubmitAfter(0).Build()
	back.RequeueCount = 1
	head := modeltest.Job("head").Cards(8).Limit(60 * time.Minute).SubmitAfter(time.Minute).Build()
	h := NewHuitianGreedy(DefaultConfig())
	h.mem.yieldedFor["back"] = "head"
	var others []model.Job
	for cycle := range 4 {
		// Jobs wider than the cluster, submitted later: they never start.
		for k := range 40 {
			others = append(others, modeltest.Job(fmt.Sprintf("w%d-%d", cycle, k)).Cards(16).Limit(time.Hour).SubmitAfter(time.Hour).Build())
		}
		q := append([]model.Job{back}, others...)
		q = append(q, head)
		if cycle%2 == 1 {
			slices.Reverse(q) // another order: past 32 misses, by id
		}
		s := &model.Snapshot{Now: now, Cluster: modeltest.Uniform(1, 8, 0), Queued: q}
		d, err := h.Plan(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		if started := startedIDs(d); !slices.Equal(started, []string{"head"}) {
			t.Fatalf("cycle %d: started %v, want [head]", cycle, started)
		}
	}
}

// endingJobWorld is one node of 8 cards an hour into the epoch: a
// regular job (6 cards, ending in 5 minutes by its limit) and ann's
// checkpointable backfill job bf (2 cards, 100 minutes left of its limit)
// hold it, and an 8-card head waits.
func endingJobWorld() *model.Snapshot {
	reg := modeltest.Job("reg").Cards(6).Limit(15 * time.Minute).Build()
	bf := modeltest.Job("bf").User("ann").Cards(2).Limit(110 * time.Minute).Checkpoint(3 * time.Minute).Build()
	head := modeltest.Job("head").Cards(8).Limit(60 * time.Minute).Build()
	r := modeltest.Running(bf, modeltest.Epoch.Add(50*time.Minute), modeltest.Refs("n000", 6, 2)...)
	r.Kind = model.Backfill
	return &model.Snapshot{Now: modeltest.Epoch.Add(time.Hour), Cluster: modeltest.Uniform(1, 8, 0), Queued: []model.Job{head},
		Running: []model.Running{modeltest.Running(reg, modeltest.Epoch.Add(50*time.Minute), modeltest.Refs("n000", 0, 6)...), r}}
}

// observeRuns gives h a history of 20 finished jobs of user's like bf
// (2 cards, 110-minute limit), each run taking run plus 0–4 minutes.
func observeRuns(h *Huitian, user string, run time.Duration) {
	for k := range 20 {
		j := modeltest.Job(fmt.Sprintf("h%d", k)).User(user).Cards(2).Limit(110 * time.Minute).Build()
		start := modeltest.Epoch.Add(time.Duration(k-40) * time.Hour)
		took := run + time.Duration(k%5)*time.Minute
		observeFinished(h, j, start, took)
	}
}

// TestEndingJobNotToldToYield: a backfill job whose history says it is
// about to end is not suspended for the head, though by the limits the
// head would start 95 minutes earlier: the median of its remaining time
// is within MinGain, so its yield would gain the head less than that.
// Other users' history does not count: the job is then taken at its limit.
func TestEndingJobNotToldToYield(t *testing.T) {
	s := endingJobWorld()
	for _, tc := range []struct {
		user string // whose jobs the history holds
		run  time.Duration
		told bool
	}{
		{"ann", 12 * time.Minute, false},
		{"ann", 100 * time.Minute, true},
		{"bob", 12 * time.Minute, true}, // not ann's own: bf is taken at its limit
	} {
		run := tc.run
		h := NewHuitianGreedy(DefaultConfig())
		observeRuns(h, tc.user, run)
		d, err := h.Plan(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		told := len(d.Preemptions) == 1 && d.Preemptions[0].JobID == "bf"
		if told != tc.told {
			t.Errorf("%s's jobs run %v: bf told to yield %v (preemptions %+v), want %v", tc.user, run, told, d.Preemptions, tc.told)
		}
	}
}

// TestFreeBoundChangesNothing: the guarantee skips a try when too few
// cards can be free by the last start it would accept, or too few on one
// node (on enough nodes), or under one switch, for a head that needs them
// so (mayBeFree); over random worlds it decides exactly what planning
// every try decides.
func TestFreeBoundChangesNothing(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s, h := randomWorld(t)
		per := len(s.Cluster.Nodes[0].Cards)
		for i := range s.Queued {
			j := &s.Queued[i]
			switch rapid.IntRange(0, 4).Draw(t, "shape") {
			case 1:
				if j.Cards <= per {
					j.Topology = model.TopologySameNode
				}
			case 2:
				if p := rapid.SampledFrom([]int{1, 2, 4, 8}).Draw(t, "per"); p <= per && j.Cards%p == 0 {
					j.CardsPerNode = p
				}
			case 3:
				j.Topology = model.TopologySameSwitch
				if p := rapid.SampledFrom([]int{0, 1, 2, 4, 8}).Draw(t, "switchPer"); p <= per && j.Cards%max(p, 1) == 0 {
					j.CardsPerNode = p
				}
			case 4:
				if j.Cards <= per {
					j.Topology = model.TopologySameIsland
				}
			}
		}
		every := twin(t, h)
		every.noFreeBound = true
		planAlike(t, h, every, s, "with the bound the plan differs (-every try +bound)")
	})
}

// TestWaitingForTheTryChangesNothing: the guarantee stops EASY's plan
// after its main pass when a try passes its gate, and walks the rest only
// when no try is kept; over random worlds, reservation depths (0: the
// head is a large gang reserved after the main pass) and with every try
// planned or only those the bounds let through, over a few cycles, it
// decides exactly what walking EASY's whole plan first decides.
func TestWaitingForTheTryChangesNothing(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s, h := randomWorld(t)
		// Gangs of whole nodes: large ones are reserved after the main
		// pass (Config.LargeDepth).
		per := len(s.Cluster.Nodes[0].Cards)
		for i := range s.Queued {
			if j := &s.Queued[i]; j.Cards > per && j.Cards%per == 0 && rapid.Bool().Draw(t, "gang") {
				j.CardsPerNode = per
			}
		}
		first := twin(t, h)
		first.fullFirst = true
		depth := rapid.IntRange(0, 2).Draw(t, "depth")
		every := rapid.Bool().Draw(t, "everyTry")
		for _, p := range []*Huitian{h, first} {
			p.cfg.Depth = depth
			p.noFreeBound = every
		}
		for cycle := range rapid.IntRange(1, 3).Draw(t, "cycles") {
			got, want := planAlike(t, h, first, s, fmt.Sprintf("cycle %d: waiting for the try the plan differs (-whole plan first +waiting)", cycle))
			h.Decided(s, got)
			first.Decided(s, want)
			next := *s
			next.Now = s.Now.Add(time.Duration(rapid.IntRange(1, 30).Draw(t, "step")) * time.Minute)
			s = &next
		}
	})
}

// TestPreemptedStaysBehindPromisedHead: a job back in the queue after a
// preemption (suspended for an earlier head, which has started since)
// does not start ahead of the head now holding a promise, though it was
// submitted first; without the promise, or never preempted, it is the
// first job of the queue as any other.
func TestPreemptedStaysBehindPromisedHead(t *testing.T) {
	now := modeltest.Epoch.Add(time.Hour)
	back := modeltest.Job("back").Cards(4).Limit(60 * time.Minute).SubmitAfter(0).Build()
	back.RequeueCount = 1
	head := modeltest.Job("head").Cards(8).Limit(60 * time.Minute).SubmitAfter(time.Minute).Build()
	for _, tc := range []struct {
		preempted, promised bool
		want                string
	}{
		{true, true, "head"},
		{true, false, "back"},
		{false, true, "back"},
	} {
		h := NewHuitianGreedy(DefaultConfig())
		if tc.preempted {
			h.mem.preempted["back"] = true
		}
		if tc.promised {
			h.mem.firstReserved["head"] = now
		}
		d, err := h.Plan(context.Background(), &model.Snapshot{Now: now, Cluster: modeltest.Uniform(1, 8, 0), Queued: []model.Job{back, head}})
		if err != nil {
			t.Fatal(err)
		}
		started := startedIDs(d)
		if !slices.Equal(started, []string{tc.want}) {
			t.Errorf("preempted %v, promised %v: started %v, want %s", tc.preempted, tc.promised, started, tc.want)
		}
	}
}

// TestPromiseKeptWhenJobEndsSoon: a backfill job whose history says it
// ends within MinGain is not told to yield for a head that holds no
// promise (TestEndingJobNotToldToYield), but it is once the head was
// promised a start that EASY alone would now miss: the promise was made
// with the job yielding, and without it the head would wait for the
// job's limit.
func TestPromiseKeptWhenJobEndsSoon(t *testing.T) {
	s := endingJobWorld()
	for _, promised := range []bool{false, true} {
		h := NewHuitianGreedy(DefaultConfig())
		observeRuns(h, "ann", 12*time.Minute) // bf's kind of job ends within MinGain
		promise := s.Now.Add(5 * time.Minute)
		if promised {
			h.mem.firstReserved["head"] = promise
		}
		d, err := h.Plan(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		told := len(d.Preemptions) == 1 && d.Preemptions[0].JobID == "bf"
		if told != promised {
			t.Errorf("promised %v: bf told to yield %v (preemptions %+v)", promised, told, d.Preemptions)
		}
		if promised && (len(d.Reservations) == 0 || d.Reservations[0].Start.After(promise)) {
			t.Errorf("the head's reservation %+v misses its promise %v", d.Reservations, promise)
		}
	}
}

// startedIDs lists the jobs a decision starts, in its order.
func startedIDs(d *model.Decision) []string {
	var ids []string
	for _, st := range d.Starts {
		ids = append(ids, st.JobID)
	}
	return ids
}

// TestGangsLentOneNode: with Config.OneNodeGangs, a job that communicates
// is lent one node's cards beyond EASY, never cards spread over nodes; a
// job that communicates little may spread, and without the option any may. Two 4-card nodes, both
// mostly busy for another hour, when an 8-card head is reserved; a 2-card
// job with a 4-hour limit that its history says runs 10 minutes can only
// be lent on its estimate (EASY's backfill, on the limit, cannot start it).
func TestGangsLentOneNode(t *testing.T) {
	for _, tc := range []struct {
		name   string
		busy1  int // cards busy on n001 (n000 has 3): 3 leaves one free card per node
		job    *modeltest.JobBuilder
		spread bool
		want   []model.CardRef // nil: not lent
		reason model.PendingReason
	}{
		{"talks, free cards on two nodes: not lent", 3, modeltest.Job("g").Comm(model.CommHigh), false, nil, model.PendingTopology},
		{"talks, spread by default: lent on two nodes", 3, modeltest.Job("g").Comm(model.CommHigh), true,
			[]model.CardRef{modeltest.Ref("n000", 3), modeltest.Ref("n001", 3)}, 0},
		{"talks little: lent on two nodes", 3, modeltest.Job("g").Comm(model.CommLow), false,
			[]model.CardRef{modeltest.Ref("n000", 3), modeltest.Ref("n001", 3)}, 0},
		{"talks, one card a node asked: not lent", 2, modeltest.Job("g").Comm(model.CommHigh).PerNode(1), false, nil, model.PendingPolicy},
		{"talks, two free cards on one node: lent there", 2, modeltest.Job("g").Comm(model.CommHigh), false,
			modeltest.Refs("n001", 2, 2), 0},
	} {
		for _, lp := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/lp=%v", tc.name, lp), func(t *testing.T) {
				c := modeltest.Uniform(2, 4, 0)
				now := modeltest.Epoch.Add(100 * time.Hour)
				m0 := modeltest.Job("m0").Cards(3).Limit(2 * time.Hour).Build()
				m1 := modeltest.Job("m1").Cards(tc.busy1).Limit(2 * time.Hour).Build()
				s := &model.Snapshot{Now: now, Cluster: c, Running: []model.Running{
					modeltest.Running(m0, now.Add(-time.Hour), modeltest.Refs("n000", 0, 3)...),
					modeltest.Running(m1, now.Add(-time.Hour), modeltest.Refs("n001", 0, tc.busy1)...)}}
				g := tc.job.User("ann").Cards(2).Limit(4 * time.Hour).SubmitAfter(2 * time.Hour).Build()
				s.Queued = []model.Job{
					modeltest.Job("head").Cards(8).Limit(time.Hour).SubmitAfter(time.Hour).Build(), g}
				cfg := DefaultConfig()
				if cfg.OneNodeGangs {
					t.Fatal("DefaultConfig keeps gangs on one node")
				}
				cfg.OneNodeGangs = !tc.spread
				h := NewHuitianGreedy(cfg)
				if lp {
					h = NewHuitian(cfg, clp.LP{})
				}
				for k := range 20 {
					past := g
					past.ID = fmt.Sprintf("a%d", k)
					observeFinished(h, past, modeltest.Epoch.Add(time.Duration(k)*time.Hour), 10*time.Minute)
				}
				if err := s.Validate(); err != nil {
					t.Fatal(err)
				}
				d, err := h.Plan(context.Background(), s)
				if err != nil {
					t.Fatal(err)
				}
				i := slices.IndexFunc(d.Starts, func(st model.Start) bool { return st.JobID == "g" })
				if tc.want == nil {
					if i >= 0 {
						t.Fatalf("g lent %v, want it to wait", d.Starts[i].Cards)
					}
					p := slices.IndexFunc(d.Pending, func(p model.Pending) bool { return p.JobID == "g" })
					if p < 0 || d.Pending[p].Reason != tc.reason {
						t.Fatalf("g's pending entry: want reason %v, got %+v", tc.reason, d.Pending)
					}
					return
				}
				if i < 0 {
					t.Fatalf("g not lent, want it on %v (pending %+v)", tc.want, d.Pending)
				}
				if st := d.Starts[i]; st.Kind != model.Backfill || !slices.Equal(st.Cards, tc.want) {
					t.Fatalf("g started %v on %v, want backfill on %v", st.Kind, st.Cards, tc.want)
				}
			})
		}
	}
}

// TestAblate: an ablation sets the huitian planner's configuration and is
// an error on a planner that lends nothing beyond EASY; none is no change.
func TestAblate(t *testing.T) {
	h := NewHuitianGreedy(DefaultConfig())
	if err := Ablate(h, Ablation{OneNodeGangs: true, NoSaturation: true}); err != nil {
		t.Fatal(err)
	}
	if !h.cfg.OneNodeGangs || h.cfg.SaturatedBacklog < 100*365*24*time.Hour {
		t.Errorf("ablated config %+v", h.cfg)
	}
	easy, err := New(model.PolicyEASY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := Ablate(easy, Ablation{}); err != nil {
		t.Errorf("no ablation on EASY: %v", err)
	}
	if err := Ablate(easy, Ablation{NoSaturation: true}); err == nil {
		t.Error("an ablation on EASY: no error")
	}
}

// TestProtectionAndNoticeFitBeforeTheClaim: a backfill job on cards a
// reservation claims at t is admitted only if, running on, it can yield
// by t: its protection (f × its median) and then its notice (checkpoint
// cost plus the margin; the margin alone when it cannot checkpoint) end
// by t. With the protection alone, a job admitted 75 s before the claim,
// protected 13 s with a notice of 131 s, held the head 25 s past its
// promise.
func TestProtectionAndNoticeFitBeforeTheClaim(t *testing.T) {
	cfg := DefaultConfig()
	c := &cycle{h: NewHuitianGreedy(cfg), params: tune.Params{ProtectFraction: 0.1}}
	d := estimate.Point(600) // protected 60 s
	margin := int64(cfg.Preempt.Margin.Seconds())
	ckpt := modeltest.Job("ckpt").Cards(1).Limit(time.Hour).Checkpoint(71 * time.Second).Build()
	plain := modeltest.Job("plain").Cards(1).Limit(time.Hour).Build()
	for _, tc := range []struct {
		j    model.Job
		need int64 // the earliest claim it fits before
	}{
		{ckpt, 60 + 71 + margin},
		{plain, 60 + margin},
	} {
		if c.protectionFits(&tc.j, d, tc.need-1) {
			t.Errorf("%s: fits a claim at %d s, want one at %d s or later (protection, then the notice)", tc.j.ID, tc.need-1, tc.need)
		}
		if !c.protectionFits(&tc.j, d, tc.need) {
			t.Errorf("%s: does not fit a claim at %d s (protection 60 s, then the notice)", tc.j.ID, tc.need)
		}
	}
}

// TestLentJobsYieldWhenTheHeadsIdleCardsOutweighTheirWork: the head (4
// cards) could start now but for bf, which cannot checkpoint and was lent
// cards in a window that ends at the head's promise. bf is requeued now,
// with the margin as its notice, when the card-time the head's other cards
// would stand idle until bf is expected to end (by the window's end)
// exceeds the card-time bf has run, and that wait is more than the margin
// (1 min, the requeue's own notice); else it runs on in its window.
func TestLentJobsYieldWhenTheHeadsIdleCardsOutweighTheirWork(t *testing.T) {
	c := modeltest.Uniform(1, 4, 0)
	now := modeltest.Epoch.Add(10 * time.Hour)
	cfg := DefaultConfig()
	for _, tc := range []struct {
		name    string
		cards   int           // bf's, from card 3 down
		ran     time.Duration // bf's time run
		limit   time.Duration // bf's limit
		window  time.Duration // from now
		requeue bool
	}{
		{"1 card run 1 h, window 2 h: 3 cards idle 2 h outweigh it", 1, time.Hour, 3 * time.Hour, 2 * time.Hour, true},
		{"1 card run 7 h, window 2 h: its work outweighs 3 cards idle 2 h", 1, 7 * time.Hour, 9 * time.Hour, 2 * time.Hour, false},
		{"3 cards run 1 h, window 2 h: its work outweighs 1 card idle 2 h", 3, time.Hour, 3 * time.Hour, 2 * time.Hour, false},
		{"1 card run 7 h, limit 12 h, window 2 h: it outlives its window and loses its work there", 1, 7 * time.Hour, 12 * time.Hour, 2 * time.Hour, true},
		{"3 cards run 1 h, limit 6 h, window 2 h: they outlive their window", 3, time.Hour, 6 * time.Hour, 2 * time.Hour, true},
		{"1 card run 1 min, window 20 min: the head waits for it", 1, time.Minute, 3 * time.Hour, 20 * time.Minute, true},
		{"1 card run 1 min, window 9 min: the head would wait for it past the margin", 1, time.Minute, 3 * time.Hour, 9 * time.Minute, true},
		{"1 card run 1 min, window 100 s: within twice the margin", 1, time.Minute, 3 * time.Hour, 100 * time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bf := modeltest.Job("bf").Cards(tc.cards).Limit(tc.limit).Build()
			head := modeltest.Job("head").Cards(4).Limit(time.Hour).SubmitAfter(time.Hour).Build()
			refs := make([]model.CardRef, tc.cards)
			for k := range refs {
				refs[k] = modeltest.Ref("n000", 3-k)
			}
			r := modeltest.Running(bf, now.Add(-tc.ran), refs...)
			r.Kind = model.Backfill
			s := &model.Snapshot{Now: now, Cluster: c, Running: []model.Running{r}, Queued: []model.Job{head}}
			if err := s.Validate(); err != nil {
				t.Fatal(err)
			}
			h := NewHuitianGreedy(cfg)
			h.mem.window["bf"] = now.Add(tc.window)
			d, err := h.Plan(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.requeue {
				if len(d.Preemptions) != 0 || len(d.Reservations) != 1 || !d.Reservations[0].Start.Equal(now.Add(tc.window)) {
					t.Fatalf("preemptions %+v, reservations %+v; want none, and the head at the window's end", d.Preemptions, d.Reservations)
				}
				return
			}
			if len(d.Preemptions) != 1 || d.Preemptions[0].JobID != "bf" || d.Preemptions[0].Action != model.PreemptRequeue ||
				d.Preemptions[0].Notice != cfg.Preempt.Margin || d.Preemptions[0].ForJobID != "head" {
				t.Fatalf("preemptions %+v; want bf requeued for head with the margin as notice", d.Preemptions)
			}
			if len(d.Reservations) != 1 || d.Reservations[0].Start.After(now.Add(cfg.Preempt.Margin)) {
				t.Fatalf("reservations %+v; want the head once bf's notice runs out", d.Reservations)
			}
		})
	}
}

// TestHeldTryAsksForACycleWhenTheHeadsOtherCardsComeFree: a lent job
// holds one of the head's four cards, and a regular job two more until its
// limit, 5 minutes from now. The requeue is worth making (three cards idle
// for two hours against an hour's work on one) but would not start the
// head within the margin yet: nothing is told now, and the decision asks
// for a cycle a margin before the regular job's limit. That cycle
// requeues the lent job with the margin as notice, so that the head starts
// as the regular job's cards come free, not a notice later.
func TestHeldTryAsksForACycleWhenTheHeadsOtherCardsComeFree(t *testing.T) {
	c := modeltest.Uniform(1, 4, 0)
	now := modeltest.Epoch.Add(10 * time.Hour)
	cfg := DefaultConfig()
	main := modeltest.Job("main").Cards(2).Limit(time.Hour).Build()
	bf := modeltest.Job("bf").Cards(1).Limit(3 * time.Hour).Build()
	head := modeltest.Job("head").Cards(4).Limit(time.Hour).SubmitAfter(time.Hour).Build()
	rMain := modeltest.Running(main, now.Add(-55*time.Minute), modeltest.Refs("n000", 0, 2)...)
	rBF := modeltest.Running(bf, now.Add(-time.Hour), modeltest.Ref("n000", 3))
	rBF.Kind = model.Backfill
	h := NewHuitianGreedy(cfg)
	h.mem.window["bf"] = now.Add(2 * time.Hour)
	plan := func(at time.Time) *model.Decision {
		t.Helper()
		s := &model.Snapshot{Now: at, Cluster: c, Running: []model.Running{rMain, rBF}, Queued: []model.Job{head}}
		if err := s.Validate(); err != nil {
			t.Fatal(err)
		}
		d, err := h.Plan(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	d := plan(now)
	if len(d.Preemptions) != 0 {
		t.Fatalf("preemptions %+v; want none while main holds its cards past the margin", d.Preemptions)
	}
	wake := now.Add(5*time.Minute - cfg.Preempt.Margin)
	if !d.ReplanBy.Equal(wake) {
		t.Fatalf("replan by %v, want %v: a margin before main's limit", d.ReplanBy, wake)
	}
	d = plan(wake)
	if len(d.Preemptions) != 1 || d.Preemptions[0].JobID != "bf" || d.Preemptions[0].Action != model.PreemptRequeue ||
		d.Preemptions[0].Notice != cfg.Preempt.Margin {
		t.Fatalf("preemptions %+v; want bf requeued with the margin as notice", d.Preemptions)
	}
	if len(d.Reservations) != 1 || !d.Reservations[0].Start.Equal(now.Add(5*time.Minute)) {
		t.Fatalf("reservations %+v; want the head at main's limit", d.Reservations)
	}
}
