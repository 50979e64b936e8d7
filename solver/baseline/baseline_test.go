package baseline

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/model/modeltest"
	"github.com/huitian/huitian/solver/profile"
)

// policies are every baseline policy.
var policies = []model.Policy{model.PolicyFCFS, model.PolicyEASY, model.PolicyConservative, model.PolicyEASYSJBF, model.PolicyHybridDepth}

// randomSnapshot draws a cluster of 8-card-or-smaller nodes under two
// switches, running jobs on random free cards, and a queue of mixed jobs.
func randomSnapshot(t *rapid.T) *model.Snapshot {
	nodes := rapid.IntRange(1, 6).Draw(t, "nodes")
	per := rapid.SampledFrom([]int{1, 2, 4, 8}).Draw(t, "perNode")
	c := modeltest.Uniform(nodes, per, rapid.IntRange(0, 4).Draw(t, "nodesPerSwitch"))
	now := modeltest.Epoch.Add(10 * time.Hour)
	s := &model.Snapshot{Now: now, Cluster: c}
	id := 0
	for _, n := range c.Nodes {
		for k := 0; k < len(n.Cards); {
			w := rapid.IntRange(1, len(n.Cards)-k).Draw(t, "width")
			if rapid.Bool().Draw(t, "busy") {
				j := modeltest.Job(fmt.Sprintf("r%d", id)).Cards(w).
					Limit(time.Duration(rapid.IntRange(1, 20).Draw(t, "rlimit")) * 10 * time.Minute).Build()
				start := now.Add(-time.Duration(rapid.IntRange(0, 100).Draw(t, "age")) * time.Minute)
				s.Running = append(s.Running, modeltest.Running(j, start, modeltest.Refs(n.Name, k, w)...))
				id++
			}
			k += w
		}
	}
	q := rapid.IntRange(0, 14).Draw(t, "queued")
	for i := range q {
		b := drawQueued(t, i, rapid.SampledFrom([]int{1, 1, 2, 3, 4, 8, 16}).Draw(t, "cards"))
		switch rapid.IntRange(0, 4).Draw(t, "topo") {
		case 1:
			b.Topology(model.TopologySameNode)
		case 2:
			b.Topology(model.TopologySameSwitch)
		case 3:
			b.Topology(model.TopologySameIsland)
		}
		s.Queued = append(s.Queued, b.Build())
	}
	if err := s.Validate(); err != nil {
		t.Fatalf("random snapshot invalid: %v", err)
	}
	return s
}

// drawQueued draws queued job i of the given cards: its limit, submit
// time, priority and backfill preference.
func drawQueued(t *rapid.T, i, cards int) *modeltest.JobBuilder {
	return modeltest.Job(fmt.Sprintf("q%d", i)).Cards(cards).
		Limit(time.Duration(rapid.IntRange(1, 30).Draw(t, "limit")) * 10 * time.Minute).
		SubmitAfter(time.Duration(rapid.IntRange(0, 500).Draw(t, "submit")) * time.Minute).
		Priority(rapid.SampledFrom([]int{0, 0, 0, 1}).Draw(t, "prio")).
		Backfill(model.BackfillPref(rapid.IntRange(0, 2).Draw(t, "pref")))
}

type interval struct {
	job        string
	start, end int64
}

// TestPlanInvariants: for every baseline policy over random snapshots —
// no card in two places at once, topology honoured, regular starts in
// queue order, opted-out jobs never backfilled, and backfill never delays a
// reservation (with runtimes equal to limits).
func TestPlanInvariants(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := randomSnapshot(t)
		pol := rapid.SampledFrom(policies).Draw(t, "policy")
		params := drawLarge(t, pol)
		d, err := New(params).Plan(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		lay := s.Cluster.Layout()
		jobs := map[string]*model.Job{}
		for i := range s.Queued {
			jobs[s.Queued[i].ID] = &s.Queued[i]
		}
		// 1. Cards: running, starts and reservations never overlap in time.
		use := map[int][]interval{}
		claim := func(job string, refs []model.CardRef, start, end int64) {
			for _, r := range refs {
				c, ok := lay.CardID(r)
				if !ok {
					t.Fatalf("%s: unknown card %v", job, r)
				}
				for _, o := range use[c] {
					if start < o.end && o.start < end {
						t.Fatalf("card %v: %s [%d,%d) overlaps %s [%d,%d)", r, job, start, end, o.job, o.start, o.end)
					}
				}
				use[c] = append(use[c], interval{job, start, end})
			}
		}
		for _, r := range s.Running {
			end := Rel(s.Now, r.Start.Add(r.Job.TimeLimit))
			if end <= 0 {
				end = Seconds(model.DefaultOverrunGrace)
			}
			claim(r.Job.ID, r.Cards, 0, end)
		}
		started := map[string]bool{}
		for _, st := range d.Starts {
			j := jobs[st.JobID]
			if started[st.JobID] {
				t.Fatalf("%s started twice", st.JobID)
			}
			started[st.JobID] = true
			claim(st.JobID, st.Cards, 0, Seconds(j.TimeLimit))
			modeltest.CheckTopology(t, lay, j, st.Cards)
			if st.Kind == model.Backfill && j.Backfill == model.BackfillOptOut {
				t.Fatalf("opted-out %s started as backfill", j.ID)
			}
		}
		var counted []interval // reservations of a count (a pool's), by number of cards
		var countOf []int
		for _, r := range d.Reservations {
			j := jobs[r.JobID]
			st := Rel(s.Now, r.Start)
			if r.Count != j.Cards {
				t.Fatalf("%s reserves %d cards, want %d", j.ID, r.Count, j.Cards)
			}
			if len(r.Cards) == 0 {
				if !profile.IsPool(lay) {
					t.Fatalf("%s reserves a count of a cluster whose cards are not interchangeable", j.ID)
				}
				counted, countOf = append(counted, interval{j.ID, st, st + Seconds(j.TimeLimit)}), append(countOf, r.Count)
				continue
			}
			claim(r.JobID, r.Cards, st, st+Seconds(j.TimeLimit))
			modeltest.CheckTopology(t, lay, j, r.Cards)
		}
		// The cards in use and counted never outnumber the usable ones.
		for _, at := range counted {
			for _, x := range []int64{at.start, at.end - 1} {
				n := 0
				for _, ivs := range use {
					for _, o := range ivs {
						if o.start <= x && x < o.end {
							n++
						}
					}
				}
				for i, o := range counted {
					if o.start <= x && x < o.end {
						n += countOf[i]
					}
				}
				if n > lay.UsableCards {
					t.Fatalf("at %d, %d cards in use or reserved of %d usable", x, n, lay.UsableCards)
				}
			}
		}
		// An opted-out job's reservation starts no earlier than any
		// reservation of a job ahead of it.
		resAt := map[string]int64{}
		for _, r := range d.Reservations {
			resAt[r.JobID] = Rel(s.Now, r.Start)
		}
		latest := int64(-1)
		for _, k := range QueueOrder(s.Queued) {
			j := &s.Queued[k]
			at, ok := resAt[j.ID]
			if !ok {
				continue
			}
			if j.Backfill == model.BackfillOptOut && at < latest {
				t.Fatalf("opted-out %s reserved at %d, before a job ahead of it at %d", j.ID, at, latest)
			}
			latest = max(latest, at)
		}
		// 2. Regular starts are a prefix of the queue order (skipping jobs
		// that can never fit); after the first waiting job, only backfill.
		order := QueueOrder(s.Queued)
		waiting := false
		kind := map[string]model.AllocKind{}
		for _, st := range d.Starts {
			kind[st.JobID] = st.Kind
		}
		never := map[string]bool{}
		for _, p := range d.Pending {
			if p.Reason == model.PendingNeverFits {
				never[p.JobID] = true
			}
		}
		for _, k := range order {
			id := s.Queued[k].ID
			if never[id] {
				continue
			}
			k, ok := kind[id]
			switch {
			case !ok:
				waiting = true
			case waiting && k != model.Backfill:
				t.Fatalf("%s started regular after a waiting job", id)
			case !waiting && k != model.Regular:
				t.Fatalf("%s started backfill with no job waiting", id)
			}
		}
		if pol == model.PolicyFCFS {
			for _, st := range d.Starts {
				if st.Kind == model.Backfill {
					t.Fatalf("FCFS backfilled %s", st.JobID)
				}
			}
		}
		// 3. The first reservation is where it would be without any backfill:
		// recompute it on running jobs and regular starts only.
		if len(d.Reservations) > 0 {
			r := d.Reservations[0]
			prof, err := Load(s)
			if err != nil {
				t.Fatal(err)
			}
			for _, st := range d.Starts {
				if st.Kind != model.Regular {
					continue
				}
				ids := make([]int, len(st.Cards))
				for i, ref := range st.Cards {
					ids[i], _ = lay.CardID(ref)
				}
				if err := prof.Reserve(ids, 0, Seconds(jobs[st.JobID].TimeLimit)); err != nil {
					t.Fatal(err)
				}
			}
			j := jobs[r.JobID]
			want, _, ok := prof.EarliestStart(1, Seconds(j.TimeLimit), profile.RequestOf(j))
			if !ok || Rel(s.Now, r.Start) != want {
				t.Fatalf("head %s reserved at %d, without backfill it would be %d (ok=%v)", j.ID, Rel(s.Now, r.Start), want, ok)
			}
		}
		// 4. Every queued job is either started or pending, once.
		if len(d.Starts)+len(d.Pending) != len(s.Queued) {
			t.Fatalf("%d starts + %d pending != %d queued", len(d.Starts), len(d.Pending), len(s.Queued))
		}
	})
}

// TestPlanDoesNotModifySnapshot: planning is a pure query.
func TestPlanIsDeterministic(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := randomSnapshot(t)
		params, _ := ForPolicy(model.PolicyConservative, 0)
		a, err := New(params).Plan(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		b, err := New(params).Plan(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Fatalf("two plans of one snapshot differ:\n%v\n%v", a, b)
		}
	})
}

// drawLarge returns the parameters of a baseline policy (depth 2 for
// hybrid), with reservations for large jobs (LargeDepth) drawn for those
// that backfill after a reservation.
func drawLarge(t *rapid.T, pol model.Policy) Params {
	params, _ := ForPolicy(pol, 2)
	if params.Backfill && params.Depth > 0 && rapid.Bool().Draw(t, "large") {
		params.LargeDepth = rapid.IntRange(1, 2).Draw(t, "largeDepth")
		above := rapid.IntRange(1, 8).Draw(t, "largeAbove")
		params.Large = func(j *model.Job) bool { return j.Cards > above }
	}
	return params
}

// drawPrepared draws a snapshot, a planner of a baseline policy and what
// a caller prepares, the running jobs' cards resolved or not.
func drawPrepared(t *rapid.T) (*model.Snapshot, *Planner, Prepared) {
	s := randomSnapshot(t)
	params := drawLarge(t, rapid.SampledFrom(policies).Draw(t, "policy"))
	prep := Prepared{Order: QueueOrder(s.Queued)}
	if rapid.Bool().Draw(t, "resolved") {
		var ids CardIDs
		var err error
		if prep.Cards, err = ids.Resolve(s); err != nil {
			t.Fatal(err)
		}
	}
	return s, New(params), prep
}

// TestMainIsPlansMainPass: Main decides what Plan's main pass does — the
// same starts first and the same reservations — and the rest of Plan's
// starts are backfill.
func TestMainIsPlansMainPass(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s, pl, prep := drawPrepared(t)
		full, err := pl.PlanPrepared(context.Background(), s, prep)
		if err != nil {
			t.Fatal(err)
		}
		m, err := pl.Main(context.Background(), s, prep)
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Starts) > len(full.Starts) {
			t.Fatalf("Main started %d jobs, Plan %d", len(m.Starts), len(full.Starts))
		}
		if diff := cmp.Diff(full.Starts[:len(m.Starts)], m.Starts, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("Main's starts are not Plan's first ones (-plan +main):\n%s", diff)
		}
		// The large jobs' reservations follow the main pass's.
		if len(m.Reservations) > len(full.Reservations) {
			t.Fatalf("Main reserved for %d jobs, Plan %d", len(m.Reservations), len(full.Reservations))
		}
		if diff := cmp.Diff(full.Reservations[:len(m.Reservations)], m.Reservations, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("reservations differ (-plan +main):\n%s", diff)
		}
		if extra := len(full.Reservations) - len(m.Reservations); extra > pl.P.LargeDepth {
			t.Fatalf("Plan reserved for %d jobs beyond the main pass, want at most LargeDepth %d", extra, pl.P.LargeDepth)
		}
		for _, st := range full.Starts[len(m.Starts):] {
			if st.Kind != model.Backfill {
				t.Fatalf("%s started after the main pass as %v, want backfill", st.JobID, st.Kind)
			}
		}
	})
}

// TestMainThenIsMainThenPlanBrief: MainThen asks more about Main's
// decision and its brief, and returns them when more says no, or
// PlanBrief's decision and brief when it says yes.
func TestMainThenIsMainThenPlanBrief(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s, pl, prep := drawPrepared(t)
		m, err := pl.Main(context.Background(), s, prep)
		if err != nil {
			t.Fatal(err)
		}
		brief, b, err := pl.PlanBrief(context.Background(), s, prep)
		if err != nil {
			t.Fatal(err)
		}
		goOn := rapid.Bool().Draw(t, "more")
		asked := 0
		var mainBrief Brief
		d, gb, full, err := pl.MainThen(context.Background(), s, prep, func(main *model.Decision, mb Brief) bool {
			asked++
			if diff := cmp.Diff(m, main, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("more was given another decision than Main's (-main +given):\n%s", diff)
			}
			checkBriefOf(t, s, main, mb)
			mainBrief = Brief{Waiting: mb.Waiting, Starts: slices.Clone(mb.Starts), Reservations: slices.Clone(mb.Reservations),
				Large: mb.Large, StartCards: slices.Clone(mb.StartCards), ReservationCards: slices.Clone(mb.ReservationCards)}
			return goOn
		})
		if err != nil {
			t.Fatal(err)
		}
		if asked != 1 || full != goOn {
			t.Fatalf("more asked %d times, full %v, want once and %v", asked, full, goOn)
		}
		want, wantBrief := m, mainBrief
		if goOn {
			want, wantBrief = brief, b
		}
		if diff := cmp.Diff(want, d, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("MainThen (more %v) decided otherwise (-want +got):\n%s", goOn, diff)
		}
		if diff := cmp.Diff(wantBrief, gb, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("MainThen (more %v): brief differs (-want +got):\n%s", goOn, diff)
		}
	})
}

// checkBriefOf checks that b names the jobs and cards of d's starts and
// reservations, in their order, and that no reservation of the main pass
// is a large job's.
func checkBriefOf(t *rapid.T, s *model.Snapshot, d *model.Decision, b Brief) {
	lay := s.Cluster.Layout()
	if len(b.Starts) != len(d.Starts) || len(b.StartCards) != len(d.Starts) ||
		len(b.Reservations) != len(d.Reservations) || len(b.ReservationCards) != len(d.Reservations) || b.Large != 0 {
		t.Fatalf("brief lists %d/%d starts and %d/%d reservations (%d large), the decision %d and %d",
			len(b.Starts), len(b.StartCards), len(b.Reservations), len(b.ReservationCards), b.Large, len(d.Starts), len(d.Reservations))
	}
	for k, st := range d.Starts {
		if s.Queued[b.Starts[k]].ID != st.JobID || !slices.Equal(lay.Refs(b.StartCards[k]), st.Cards) {
			t.Fatalf("brief's start %d is queued[%d] on %v, the decision's %s on %v", k, b.Starts[k], b.StartCards[k], st.JobID, st.Cards)
		}
	}
	for k, r := range d.Reservations {
		if s.Queued[b.Reservations[k]].ID != r.JobID || !slices.Equal(lay.Refs(b.ReservationCards[k]), r.Cards) {
			t.Fatalf("brief's reservation %d is queued[%d] on %v, the decision's %s on %v", k, b.Reservations[k], b.ReservationCards[k], r.JobID, r.Cards)
		}
	}
}

// TestByPositionIsAStableSort: ByPosition orders as a stable sort by
// position does, repeated positions included.
func TestByPositionIsAStableSort(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 30).Draw(t, "n")
		pos := rapid.SliceOf(rapid.IntRange(0, n-1)).Draw(t, "pos")
		items := make([]int, len(pos))
		for i := range items {
			items[i] = i
		}
		want := slices.Clone(items)
		slices.SortStableFunc(want, func(a, b int) int { return pos[a] - pos[b] })
		if got := ByPosition(items, pos, n); !slices.Equal(got, want) {
			t.Fatalf("ByPosition(%v) = %v, want %v", pos, got, want)
		}
	})
}

// TestPlanBriefIsPlanWithoutPending: PlanBrief decides what PlanPrepared
// does, lists no pending job, and names as waiting the first pending job
// of PlanPrepared's that does not say it never fits.
func TestPlanBriefIsPlanWithoutPending(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s, pl, prep := drawPrepared(t)
		full, err := pl.PlanPrepared(context.Background(), s, prep)
		if err != nil {
			t.Fatal(err)
		}
		brief, b, err := pl.PlanBrief(context.Background(), s, prep)
		if err != nil {
			t.Fatal(err)
		}
		waiting := b.Waiting
		want := ""
		for _, p := range full.Pending {
			if p.Reason != model.PendingNeverFits {
				want = p.JobID
				break
			}
		}
		if waiting != want {
			t.Fatalf("waiting %q, want %q", waiting, want)
		}
		if len(brief.Pending) != 0 {
			t.Fatalf("PlanBrief listed %d pending jobs", len(brief.Pending))
		}
		if len(b.Starts) != len(brief.Starts) || len(b.Reservations) != len(brief.Reservations) ||
			len(b.StartCards) != len(brief.Starts) || len(b.ReservationCards) != len(brief.Reservations) {
			t.Fatalf("Brief indexes %d starts and %d reservations (cards of %d and %d) of %d and %d",
				len(b.Starts), len(b.Reservations), len(b.StartCards), len(b.ReservationCards), len(brief.Starts), len(brief.Reservations))
		}
		lay := s.Cluster.Layout()
		for i, k := range b.Starts {
			if s.Queued[k].ID != brief.Starts[i].JobID {
				t.Fatalf("Brief.Starts[%d] is queued %d (%s), the start is %s", i, k, s.Queued[k].ID, brief.Starts[i].JobID)
			}
			if got := lay.Refs(b.StartCards[i]); !slices.Equal(got, brief.Starts[i].Cards) {
				t.Fatalf("Brief.StartCards[%d] names %v, the start %v", i, got, brief.Starts[i].Cards)
			}
		}
		for i, k := range b.Reservations {
			if s.Queued[k].ID != brief.Reservations[i].JobID {
				t.Fatalf("Brief.Reservations[%d] is queued %d (%s), the reservation is %s", i, k, s.Queued[k].ID, brief.Reservations[i].JobID)
			}
			if got := lay.Refs(b.ReservationCards[i]); !slices.Equal(got, brief.Reservations[i].Cards) {
				t.Fatalf("Brief.ReservationCards[%d] names %v, the reservation %v", i, got, brief.Reservations[i].Cards)
			}
		}
		full.Pending = nil
		if diff := cmp.Diff(full, brief, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("PlanBrief differs from PlanPrepared (-full +brief):\n%s", diff)
		}
	})
}

// TestLargeJobKeepsItsCards: EASY reserves for the head alone, so a small
// long job backfills onto cards a large job behind it will need and holds
// it back long after the head ran; with LargeDepth the large job gets its
// own reservation after the head's, and only what leaves it whole starts.
func TestLargeJobKeepsItsCards(t *testing.T) {
	now := modeltest.Epoch.Add(time.Hour)
	s := &model.Snapshot{Now: now, Cluster: modeltest.Uniform(4, 8, 0)}
	r := modeltest.Job("r").Cards(16).Limit(100 * time.Minute).Build()
	s.Running = []model.Running{modeltest.Running(r, now, append(modeltest.Refs("n000", 0, 8), modeltest.Refs("n001", 0, 8)...)...)}
	s.Queued = []model.Job{
		modeltest.Job("head").Cards(24).Limit(1000 * time.Minute).SubmitAfter(1 * time.Minute).Build(),
		modeltest.Job("large").Cards(28).Limit(500 * time.Minute).SubmitAfter(2 * time.Minute).Build(),
		modeltest.Job("s8").Cards(8).Limit(10000 * time.Minute).SubmitAfter(3 * time.Minute).Build(),
		modeltest.Job("s4").Cards(4).Limit(10000 * time.Minute).SubmitAfter(4 * time.Minute).Build(),
	}
	plan := func(p Params) (d *model.Decision, starts, reserved []string) {
		t.Helper()
		d, err := New(p).Plan(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range d.Starts {
			starts = append(starts, st.JobID)
		}
		for _, r := range d.Reservations {
			reserved = append(reserved, r.JobID)
		}
		return d, starts, reserved
	}
	// EASY: the head holds 24 cards from when r ends; s8 takes the other
	// 8, so the large job, once the head has run, finds 24 of its 28.
	easy, _ := ForPolicy(model.PolicyEASY, 0)
	if _, starts, reserved := plan(easy); !slices.Equal(starts, []string{"s8"}) || !slices.Equal(reserved, []string{"head"}) {
		t.Fatalf("EASY: starts %v, reservations %v; want s8 started, head reserved", starts, reserved)
	}
	large := easy
	above := 8
	large.LargeDepth, large.Large = 1, func(j *model.Job) bool { return j.Cards > above }
	d, starts, reserved := plan(large)
	if !slices.Equal(starts, []string{"s4"}) || !slices.Equal(reserved, []string{"head", "large"}) {
		t.Fatalf("LargeDepth 1: starts %v, reservations %v; want s4 alone started, head and large reserved", starts, reserved)
	}
	if got, want := d.Reservations[1].Start, now.Add(1100*time.Minute); !got.Equal(want) {
		t.Fatalf("large reserved from %v, want %v (when the head ends)", got, want)
	}
	// Not large: EASY's decision.
	above = 28
	if _, starts, reserved := plan(large); !slices.Equal(starts, []string{"s8"}) || !slices.Equal(reserved, []string{"head"}) {
		t.Fatalf("LargeAbove 28: starts %v, reservations %v; want EASY's", starts, reserved)
	}
}

// TestHeldUntilAsTimes: HeldUntil's arithmetic on durations gives what
// the times give (start plus limit, less now, rounded up), for jobs
// started before and after now, past their limits and not, with limits
// up to the longest duration.
func TestHeldUntilAsTimes(t *testing.T) {
	now := time.Date(2026, 12, 4, 6, 0, 0, 0, time.UTC)
	rnd := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		start := now.Add(time.Duration(rnd.Int64N(int64(100*24*time.Hour))) - 90*24*time.Hour + time.Duration(rnd.IntN(1e9)))
		limit := time.Duration(rnd.Int64N(int64(30 * 24 * time.Hour)))
		if rnd.IntN(20) == 0 {
			limit = time.Duration(math.MaxInt64 - rnd.Int64N(1e12))
		}
		want := Rel(now, start.Add(limit))
		if want <= 0 {
			want = 60
		}
		if got := HeldUntil(now, start, limit, 60); got != want {
			t.Fatalf("HeldUntil(start %v, limit %v) = %d, want %d", start, limit, got, want)
		}
	}
}
