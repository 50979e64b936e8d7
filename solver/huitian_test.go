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
	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/model/modeltest"
	"github.com/huitian/huitian/solver/clp"
	"github.com/huitian/huitian/solver/profile"
	"pgregory.net/rapid"
)

// randomWorld draws a snapshot with regular and backfill running jobs
// (some checkpointable, some protected) and a mixed queue, and a huitian
// planner that has learned from a random history (some of it marking a
// job's first reservation long ago, so that thresholds pass).
func randomWorld(t *rapid.T) (*model.Snapshot, *Huitian) {
	nodes := rapid.IntRange(1, 5).Draw(t, "nodes")
	per := rapid.SampledFrom([]int{1, 2, 4, 8}).Draw(t, "perNode")
	c := modeltest.Uniform(nodes, per, rapid.IntRange(0, 3).Draw(t, "nodesPerSwitch"))
	now := modeltest.Epoch.Add(100 * time.Hour)
	s := &model.Snapshot{Now: now, Cluster: c}
	users := []string{"ann", "bob", "cy"}
	id := 0
	for _, n := range c.Nodes {
		for k := 0; k < len(n.Cards); {
			w := rapid.IntRange(1, len(n.Cards)-k).Draw(t, "width")
			if rapid.IntRange(0, 2).Draw(t, "busy") > 0 {
				b := modeltest.Job(fmt.Sprintf("r%d", id)).Cards(w).User(rapid.SampledFrom(users).Draw(t, "ru")).
					Limit(time.Duration(rapid.IntRange(1, 30).Draw(t, "rlimit")) * 10 * time.Minute)
				if rapid.Bool().Draw(t, "rckpt") {
					b.Checkpoint(time.Duration(rapid.IntRange(0, 300).Draw(t, "rcost")) * time.Second)
				}
				j := b.Build()
				start := now.Add(-time.Duration(rapid.IntRange(0, 200).Draw(t, "age")) * time.Minute)
				r := modeltest.Running(j, start, modeltest.Refs(n.Name, k, w)...)
				if rapid.Bool().Draw(t, "rbackfill") {
					r.Kind = model.Backfill
					if rapid.Bool().Draw(t, "rprotected") {
						r.ProtectedUntil = now.Add(time.Duration(rapid.IntRange(1, 60).Draw(t, "prot")) * time.Minute)
					}
				}
				s.Running = append(s.Running, r)
				id++
			}
			k += w
		}
	}
	for i := range rapid.IntRange(0, 12).Draw(t, "queued") {
		b := modeltest.Job(fmt.Sprintf("q%d", i)).User(rapid.SampledFrom(users).Draw(t, "qu")).
			Cards(rapid.SampledFrom([]int{1, 1, 2, 4, 8, 16}).Draw(t, "cards")).
			Limit(time.Duration(rapid.IntRange(1, 30).Draw(t, "limit")) * 10 * time.Minute).
			SubmitAfter(time.Duration(rapid.IntRange(0, 5000).Draw(t, "submit")) * time.Minute).
			Backfill(model.BackfillPref(rapid.IntRange(0, 2).Draw(t, "pref"))).
			MaxRisk(rapid.SampledFrom([]float64{0, 0.01, 0.1, 0.5}).Draw(t, "maxrisk"))
		if rapid.Bool().Draw(t, "qckpt") {
			b.Checkpoint(time.Duration(rapid.IntRange(0, 300).Draw(t, "qcost")) * time.Second)
		}
		j := b.Build()
		j.RequeueCount = rapid.IntRange(0, 20).Draw(t, "requeues")
		s.Queued = append(s.Queued, j)
	}
	if err := s.Validate(); err != nil {
		t.Fatalf("random snapshot invalid: %v", err)
	}
	h := NewHuitianGreedy(DefaultConfig())
	if rapid.Bool().Draw(t, "lp") {
		h = NewHuitian(DefaultConfig(), clp.LP{})
	}
	randomMemory(t, h, s, users)
	return s, h
}

// randomMemory gives h a random history of users' finished jobs, marks
// some of s's queued jobs first reserved long ago (past the threshold),
// and some of its running backfill jobs admitted into a window, which has
// ended for some of them.
func randomMemory(t *rapid.T, h *Huitian, s *model.Snapshot, users []string) {
	for k := range rapid.IntRange(0, 60).Draw(t, "history") {
		lim := time.Duration(rapid.IntRange(1, 30).Draw(t, "hlimit")) * 10 * time.Minute
		j := modeltest.Job(fmt.Sprintf("h%d", k)).User(rapid.SampledFrom(users).Draw(t, "hu")).Limit(lim).Build()
		start := modeltest.Epoch.Add(time.Duration(k) * time.Minute)
		run := time.Duration(rapid.Float64Range(0.05, 1).Draw(t, "hratio") * float64(lim))
		observeFinished(h, j, start, run)
	}
	for _, j := range s.Queued {
		if rapid.IntRange(0, 3).Draw(t, "oldres") == 0 {
			h.mem.firstReserved[j.ID] = s.Now.Add(-2 * time.Hour)
		}
	}
	for _, r := range s.Running {
		if r.Kind == model.Backfill && rapid.IntRange(0, 2).Draw(t, "windowed") == 0 {
			h.mem.window[r.Job.ID] = s.Now.Add(time.Duration(rapid.IntRange(-60, 60).Draw(t, "windowEnd")) * time.Minute)
		}
	}
}

// TestHuitianInvariants: what the baseline property test checks — no card
// in two places at once, topology honoured — and the mechanisms' own rules:
// opted-out jobs never backfill; low-risk jobs never above their limit;
// regular and protected jobs never preempted; a job that cannot checkpoint
// only after the threshold, once its window ends within its notice, or,
// lent into a window, when the head it yields for then starts after the
// notice; every queued job
// accounted for once; and a reservation is never delayed by a backfill
// start except through a preemption the rules allow: a backfill start on
// a reservation's cards ends by its time limit before the reservation
// starts (EASY's rule), or can checkpoint (suspended with notice), or has a
// window that ends by then (requeued past it).
func TestHuitianInvariants(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s, h := randomWorld(t)
		d, err := h.Plan(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		lay := s.Cluster.Layout()
		jobs := map[string]*model.Job{}
		for i := range s.Queued {
			jobs[s.Queued[i].ID] = &s.Queued[i]
		}
		held := map[model.CardRef]string{}
		for _, r := range s.Running {
			for _, ref := range r.Cards {
				held[ref] = r.Job.ID
			}
		}
		started := map[string]bool{}
		for _, st := range d.Starts {
			j := jobs[st.JobID]
			if j == nil {
				t.Fatalf("started unknown job %s", st.JobID)
			}
			if started[j.ID] {
				t.Fatalf("%s started twice", j.ID)
			}
			started[j.ID] = true
			modeltest.CheckTopology(t, lay, j, st.Cards)
			for _, ref := range st.Cards {
				if other, ok := held[ref]; ok {
					t.Fatalf("%s started on %v, which %s holds", j.ID, ref, other)
				}
				held[ref] = j.ID
			}
			if st.Kind == model.Backfill && j.Backfill == model.BackfillOptOut {
				t.Fatalf("opted-out %s started as backfill", j.ID)
			}
			if st.Kind == model.Backfill && j.Backfill == model.BackfillLowRiskOnly && st.PreemptProb > j.MaxPreemptProb+1e-9 {
				t.Fatalf("low-risk %s started with probability %v above its limit %v", j.ID, st.PreemptProb, j.MaxPreemptProb)
			}
			if st.PreemptProb < 0 || st.PreemptProb > 1 {
				t.Fatalf("%s: probability %v", j.ID, st.PreemptProb)
			}
			if st.Kind == model.Backfill && !st.ProtectedUntil.After(s.Now) {
				t.Fatalf("backfill start %s without protection", j.ID)
			}
		}
		for _, r := range d.Reservations {
			j := jobs[r.JobID]
			cards := modeltest.ReservedCards(lay, &r)
			modeltest.CheckTopology(t, lay, j, cards)
			on := map[model.CardRef]bool{}
			for _, ref := range cards {
				on[ref] = true
			}
			for _, st := range d.Starts {
				b := jobs[st.JobID]
				if st.Kind != model.Backfill || !slices.ContainsFunc(st.Cards, func(c model.CardRef) bool { return on[c] }) {
					continue
				}
				byLimit := !s.Now.Add(b.TimeLimit).After(r.Start)
				windowed := !st.WindowEnd.IsZero() && !st.WindowEnd.After(r.Start)
				if !byLimit && !b.Checkpointable && !windowed {
					t.Fatalf("backfill %s on %s's cards ends by neither its limit nor a window before %v", b.ID, r.JobID, r.Start)
				}
			}
		}
		running := map[string]*model.Running{}
		for i := range s.Running {
			running[s.Running[i].Job.ID] = &s.Running[i]
		}
		for _, p := range d.Preemptions {
			r := running[p.JobID]
			if r == nil {
				t.Fatalf("preempted %s is not running", p.JobID)
			}
			if r.Kind != model.Backfill {
				t.Fatalf("regular job %s preempted", p.JobID)
			}
			if r.ProtectedUntil.After(s.Now) {
				t.Fatalf("protected job %s preempted", p.JobID)
			}
			switch {
			case r.Job.Checkpointable && p.Action != model.PreemptSuspend:
				t.Fatalf("checkpointable %s got %v", p.JobID, p.Action)
			case !r.Job.Checkpointable:
				first, ok := h.mem.firstReserved[p.ForJobID]
				past := ok && s.Now.Sub(first) > h.cfg.Preempt.Threshold
				w, windowed := h.mem.window[p.JobID]
				// Its notice is the margin: told once its window ends
				// within it (ending there, it would hold the head late).
				ending := windowed && !s.Now.Add(h.cfg.Preempt.Margin).Before(w)
				// Or it was lent into a window, and the head it yields
				// for starts once its notice runs out: only lent jobs
				// held it, and its idle cards outweighed their work.
				held := windowed && slices.ContainsFunc(d.Reservations, func(r model.Reservation) bool {
					return r.JobID == p.ForJobID && !r.Start.After(s.Now.Add(h.cfg.Preempt.Margin))
				})
				if p.Action != model.PreemptRequeue || !past && !ending && !held {
					t.Fatalf("%s (cannot checkpoint) preempted by %v for %s before the threshold and more than its notice inside its window", p.JobID, p.Action, p.ForJobID)
				}
			}
		}
		if len(d.Starts)+len(d.Pending) != len(s.Queued) {
			t.Fatalf("%d starts + %d pending != %d queued", len(d.Starts), len(d.Pending), len(s.Queued))
		}
	})
}

func TestHuitianIsDeterministic(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s, h := randomWorld(t)
		a, err := h.Plan(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := h.Plan(context.Background(), s)
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Fatalf("two plans of one snapshot and memory differ")
		}
	})
}

// TestCachesFollowTheJobs: a planner that planned a snapshot, asked to
// plan it again with the same jobs (the same ids, cards and places) now
// of other users, decides what a planner with the same memory and no
// caches decides: the estimates it carries from cycle to cycle (running
// jobs' by their first card, queued jobs' by their place in the queue)
// follow the job's user, class and card count, not its id.
func TestCachesFollowTheJobs(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s, h := randomWorld(t)
		fresh := twin(t, h)
		if _, err := h.Plan(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		users := []string{"ann", "bob", "cy"}
		s2 := *s
		s2.Queued, s2.Running = slices.Clone(s.Queued), slices.Clone(s.Running)
		for i := range s2.Queued {
			s2.Queued[i].User = rapid.SampledFrom(users).Draw(t, "qu2")
		}
		for i := range s2.Running {
			s2.Running[i].Job.User = rapid.SampledFrom(users).Draw(t, "ru2")
		}
		planAsFresh(t, h, fresh, &s2, "")
	})
}

// TestOlderRunningEstimateRefreshed: a running job's distribution kept
// on its first card from an older cycle than the last is brought up to
// date, even when the history did not move since the last cycle: the
// jobs leave for a cycle, the history learns their users' runtimes, an
// empty cycle plans, and the same jobs on the same cards come back.
func TestOlderRunningEstimateRefreshed(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s, h := randomWorld(t)
		if len(s.Running) == 0 {
			t.Skip("no running job")
		}
		if _, err := h.Plan(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		// The running jobs' users turn out to run far shorter than their
		// limits: their estimates move.
		for n := range rapid.IntRange(5, 20).Draw(t, "learned") {
			j := s.Running[n%len(s.Running)].Job
			j.ID = fmt.Sprintf("past%d", n)
			start := s.Now.Add(-time.Hour)
			observeFinished(h, j, start, time.Duration(rapid.IntRange(1, 120).Draw(t, "run"))*time.Second)
		}
		empty := *s
		empty.Running = nil
		if _, err := h.Plan(context.Background(), &empty); err != nil {
			t.Fatal(err)
		}
		planAsFresh(t, h, twin(t, h), s, "the running jobs back after a cycle away: ")
	})
}

// TestDroppedEntriesRejoinTheCache: estimate entries a sweep dropped from
// the cache while running and queued jobs kept them are, once the history
// moves past them, computed once per user, class and card count and
// shared again through the cache, and the plan is a fresh planner's.
func TestDroppedEntriesRejoinTheCache(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s, h := randomWorld(t)
		if len(s.Running) == 0 {
			t.Skip("no running job")
		}
		if _, err := h.Plan(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		clear(h.est) // a sweep that dropped every entry the jobs keep
		// Every running job's user, class and card count learns enough
		// runtimes (the default MinSamples, 8) that no entry is current.
		for i := range s.Running {
			for n := range 9 {
				j := s.Running[i].Job
				j.ID = fmt.Sprintf("past%d.%d", i, n)
				start := s.Now.Add(-time.Hour)
				observeFinished(h, j, start, time.Duration(rapid.IntRange(1, 120).Draw(t, "run"))*time.Second)
			}
		}
		planAsFresh(t, h, twin(t, h), s, "after a sweep: ")
		for i := range s.Running {
			j := &s.Running[i].Job
			re := &h.runList[i]
			if want := h.est[estKey{j.User, j.Class, j.Cards}]; re.entry != want {
				t.Fatalf("running %s (%s, %s, %d cards) keeps entry %p, the cache holds %p", j.ID, j.User, j.Class, j.Cards, re.entry, want)
			}
		}
	})
}

// observeFinished tells h that job j, started at start, completed after
// run.
func observeFinished(h *Huitian, j model.Job, start time.Time, run time.Duration) {
	h.Observe(model.Event{Kind: model.EventFinished, JobID: j.ID, Job: &j, Start: start, Time: start.Add(run), Exit: model.ExitCompleted})
}

// planAsFresh plans s with h, which planned before, and with fresh, a
// twin with no caches, and fails unless they decide the same.
func planAsFresh(t *rapid.T, h, fresh *Huitian, s *model.Snapshot, what string) {
	planAlike(t, h, fresh, s, what+"the planner that planned before differs from a fresh one (-fresh +planned)")
}

// planAlike plans s with h and with ref and fails, saying what (the
// diff is -ref +h), unless they decide the same; it returns both
// decisions.
func planAlike(t *rapid.T, h, ref *Huitian, s *model.Snapshot, what string) (got, want *model.Decision) {
	got, err := h.Plan(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	want, err = ref.Plan(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("%s:\n%s", what, diff)
	}
	return got, want
}

// twin returns a planner of h's kind (greedy or LP) with h's memory and
// nothing else: no cache, no kept profile.
func twin(t *rapid.T, h *Huitian) *Huitian {
	mem, err := h.MarshalMemory()
	if err != nil {
		t.Fatal(err)
	}
	tw := NewHuitianGreedy(DefaultConfig())
	if h.lp != nil {
		tw = NewHuitian(DefaultConfig(), h.lp)
	}
	if err := tw.UnmarshalMemory(mem); err != nil {
		t.Fatal(err)
	}
	return tw
}

// TestQueueInAnyOrderKeepsEntries: a resource manager may list its queue
// in another order each cycle (from a hash map). Every job asked in the
// last cycle keeps its estimate entry, found by id once the in-order walk
// fails, and the plan is a fresh planner's.
func TestQueueInAnyOrderKeepsEntries(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s, h := randomWorld(t)
		// A queue deep enough that the walk gives up on the order.
		for i := range rapid.IntRange(3*maxMisses, 5*maxMisses).Draw(t, "more") {
			s.Queued = append(s.Queued, modeltest.Job(fmt.Sprintf("m%d", i)).User("ann").Cards(1).
				Limit(time.Duration(1+i%7)*10*time.Minute).Build())
		}
		if _, err := h.Plan(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		had := map[string]*estEntry{}
		for _, m := range h.memo {
			if m.entry != nil {
				had[m.id] = m.entry
			}
		}
		s2 := *s
		s2.Queued = slices.Clone(s.Queued)
		if rapid.Bool().Draw(t, "reverse") {
			// The walk's worst case: every entry is still found.
			slices.Reverse(s2.Queued)
			c, err := h.newCycle(context.Background(), &s2, nil, false)
			if err != nil {
				t.Fatal(err)
			}
			for k, m := range c.memo {
				if want := had[s2.Queued[k].ID]; m.entry != want {
					t.Fatalf("job %s of %d: entry %p after reversing, %p before", s2.Queued[k].ID, len(s2.Queued), m.entry, want)
				}
			}
		} else {
			s2.Queued = rapid.Permutation(s2.Queued).Draw(t, "order")
		}
		planAsFresh(t, h, twin(t, h), &s2, "reordered queue: ")
	})
}

// TestWindowUseCountsProtectAsUnclaimed: the LP's node preference counts
// a card claimed only by a large job's protecting reservation as it
// counts a card no reservation claims (2), not as a temporal fragment
// (W/(W+τ)), as the greedy pass's placement does (claimWindow).
func TestWindowUseCountsProtectAsUnclaimed(t *testing.T) {
	lv := &levels{t: []int64{100, profile.Forever}, res: []int{0, -1}, avail: [][]int{{2, 0}, {0, 2}}}
	const tau = 100
	for _, protect := range []bool{false, true} {
		lv.protect = []bool{protect, false}
		got, free := lv.windowUse(0, 0, 2, tau), lv.windowUse(1, 0, 2, tau)
		want := 2 * 100.0 / (100 + tau)
		if protect {
			want = free
		}
		if got != want || free != 4 {
			t.Errorf("protect %v: claimed node %v, unclaimed %v; want %v and 4", protect, got, free, want)
		}
	}
}

// TestRunningWithoutCardsIsAnError: a running job that holds no card
// (model.Snapshot.Validate refuses it) is an error naming it, not a plan
// and not a crash.
func TestRunningWithoutCardsIsAnError(t *testing.T) {
	now := modeltest.Epoch.Add(time.Hour)
	j := modeltest.Job("r").Cards(1).Limit(time.Hour).Build()
	s := &model.Snapshot{Now: now, Cluster: modeltest.Uniform(1, 8, 0),
		Running: []model.Running{modeltest.Running(j, now.Add(-time.Minute))}}
	_, err := NewHuitianGreedy(DefaultConfig()).Plan(context.Background(), s)
	if !errors.Is(err, model.ErrInvalid) || !strings.Contains(err.Error(), "running[0].cards") {
		t.Fatalf("plan of a running job without cards: %v, want an invalid-input error naming running[0].cards", err)
	}
}

// TestRunningListFollowsTheJobs: the running jobs' distributions kept in
// the last cycle's order (Huitian.runList) follow the jobs whatever the
// resource manager does between cycles: it lists them in another order
// (pairs swapped, or shuffled), ends some, starts others on the cards of
// those that ended (a new job on an old job's first card) and on free
// ones, while the history moves or not, and a cycle may be cancelled
// anywhere, in the middle of its running jobs too (more of them than
// cancelEvery). Each plan is a fresh planner's.
func TestRunningListFollowsTheJobs(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		users := []string{"ann", "bob", "cy"}
		nodes := rapid.IntRange(2, 40).Draw(t, "nodes")
		if rapid.Bool().Draw(t, "deep") {
			// More running jobs than cancelEvery: a cancellation may come
			// in the middle of them.
			nodes = rapid.IntRange(180, 320).Draw(t, "deepNodes")
		}
		c := modeltest.Uniform(nodes, 8, 0)
		now := modeltest.Epoch.Add(100 * time.Hour)
		s := &model.Snapshot{Now: now, Cluster: c}
		id := 0
		job := func() model.Job {
			id++
			return modeltest.Job(fmt.Sprintf("r%d", id)).Cards(1).User(rapid.SampledFrom(users).Draw(t, "user")).
				Limit(time.Duration(rapid.IntRange(1, 6).Draw(t, "limit")) * 20 * time.Minute).Build()
		}
		for _, n := range c.Nodes {
			for k := range n.Cards {
				if rapid.IntRange(0, 3).Draw(t, "busy") > 0 {
					start := now.Add(-time.Duration(rapid.IntRange(0, 100).Draw(t, "age")) * time.Minute)
					s.Running = append(s.Running, modeltest.Running(job(), start, modeltest.Refs(n.Name, k, 1)...))
				}
			}
		}
		for i := range rapid.IntRange(0, 6).Draw(t, "queued") {
			s.Queued = append(s.Queued, modeltest.Job(fmt.Sprintf("q%d", i)).User(rapid.SampledFrom(users).Draw(t, "qu")).
				Cards(rapid.SampledFrom([]int{1, 2, 8, 16}).Draw(t, "cards")).Limit(time.Hour).Build())
		}
		h := NewHuitianGreedy(DefaultConfig())
		learn := func(n int) {
			for k := range n {
				j := modeltest.Job(fmt.Sprintf("h%d.%d", id, k)).User(rapid.SampledFrom(users).Draw(t, "hu")).Limit(time.Hour).Build()
				observeFinished(h, j, s.Now.Add(-time.Hour), time.Duration(rapid.IntRange(1, 60).Draw(t, "run"))*time.Minute)
			}
		}
		learn(rapid.IntRange(0, 30).Draw(t, "history"))
		if _, err := h.Plan(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		for range rapid.IntRange(1, 4).Draw(t, "cycles") {
			next := *s
			next.Now = s.Now.Add(time.Duration(rapid.IntRange(1, 120).Draw(t, "step")) * time.Second)
			run := slices.Clone(s.Running)
			switch rapid.IntRange(0, 2).Draw(t, "order") {
			case 1: // a few pairs swapped
				for range rapid.IntRange(1, 5).Draw(t, "swaps") {
					a, b := rapid.IntRange(0, len(run)-1).Draw(t, "a"), rapid.IntRange(0, len(run)-1).Draw(t, "b")
					run[a], run[b] = run[b], run[a]
				}
			case 2: // any order
				run = rapid.Permutation(run).Draw(t, "perm")
			}
			kept := run[:0]
			for _, r := range run {
				switch rapid.IntRange(0, 9).Draw(t, "fate") {
				case 0: // ended
				case 1: // ended, and another job started on its card
					kept = append(kept, modeltest.Running(job(), next.Now, r.Cards...))
				default:
					kept = append(kept, r)
				}
			}
			// Jobs start on cards that were free.
			held := map[model.CardRef]bool{}
			for _, r := range s.Running {
				held[r.Cards[0]] = true
			}
			for _, n := range c.Nodes {
				for k := range n.Cards {
					if ref := modeltest.Refs(n.Name, k, 1); !held[ref[0]] && rapid.IntRange(0, 3).Draw(t, "starts") == 0 {
						kept = append(kept, modeltest.Running(job(), next.Now, ref...))
					}
				}
			}
			next.Running = kept
			if rapid.Bool().Draw(t, "moved") {
				learn(rapid.IntRange(1, 10).Draw(t, "learned"))
			}
			if rapid.Bool().Draw(t, "cancel") {
				n := rapid.IntRange(0, 3).Draw(t, "checks")
				if _, err := h.Plan(&modeltest.Countdown{Context: context.Background(), Left: n, Fail: context.Canceled}, &next); err != nil && !errors.Is(err, context.Canceled) {
					t.Fatalf("cancelled after %d checks: %v", n, err)
				}
				if rapid.Bool().Draw(t, "movedAgain") {
					learn(rapid.IntRange(1, 10).Draw(t, "learnedAgain"))
				}
			}
			fresh := twin(t, h)
			planAsFresh(t, h, fresh, &next, "")
			// Every running job's distribution, not only those the plan
			// turned on, is the one a fresh planner computes.
			for i, r := range next.Running {
				if got, want := h.runVals[i], fresh.runVals[i]; got != want {
					t.Fatalf("running %s (%s, limit %s): kept distribution %v, a fresh planner's %v", r.Job.ID, r.Job.User, r.Job.TimeLimit, got.dist, want.dist)
				}
			}
			s = &next
		}
	})
}
