package solver

import (
	"context"
	"fmt"
	"slices"
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

// flatWorld draws a flat machine whose node names order its cards (a
// pool the guarantee plans on counts: baseline.Planner.Exact), regular
// and backfill jobs running on random nodes, a queue of jobs of any size,
// and a huitian planner with a random history.
func flatWorld(t *rapid.T) (*model.Snapshot, *Huitian) {
	// Now and then more than a word of bits' worth.
	c := modeltest.Uniform(rapid.SampledFrom([]int{rapid.IntRange(2, 40).Draw(t, "nodes"), rapid.IntRange(60, 150).Draw(t, "many")}).Draw(t, "size"), 1, 0)
	now := modeltest.Epoch.Add(100 * time.Hour)
	s := &model.Snapshot{Now: now, Cluster: c}
	users := []string{"ann", "bob", "cy"}
	free := rapid.Permutation(c.Nodes).Draw(t, "order")
	for id := 0; len(free) > 0 && rapid.IntRange(0, 4).Draw(t, "more") > 0; id++ {
		w := rapid.IntRange(1, len(free)).Draw(t, "width")
		var refs []model.CardRef
		for _, n := range free[:w] {
			refs = append(refs, modeltest.Ref(n.Name, 0))
		}
		free = free[w:]
		b := modeltest.Job(fmt.Sprintf("r%d", id)).Cards(w).User(rapid.SampledFrom(users).Draw(t, "ru")).
			Limit(time.Duration(rapid.IntRange(1, 30).Draw(t, "rlimit")) * 10 * time.Minute)
		if rapid.Bool().Draw(t, "rckpt") {
			b.Checkpoint(time.Duration(rapid.IntRange(0, 300).Draw(t, "rcost")) * time.Second)
		}
		j := b.Build()
		start := now.Add(-time.Duration(rapid.IntRange(0, 200).Draw(t, "age")) * time.Minute)
		r := modeltest.Running(j, start, refs...)
		if rapid.Bool().Draw(t, "rbackfill") {
			r.Kind = model.Backfill
		}
		s.Running = append(s.Running, r)
	}
	for i := range rapid.IntRange(0, 12).Draw(t, "queued") {
		b := modeltest.Job(fmt.Sprintf("q%d", i)).User(rapid.SampledFrom(users).Draw(t, "qu")).
			Cards(rapid.IntRange(1, len(c.Nodes)).Draw(t, "cards")).
			Limit(time.Duration(rapid.IntRange(1, 30).Draw(t, "limit")) * 10 * time.Minute).
			SubmitAfter(time.Duration(rapid.IntRange(0, 5000).Draw(t, "submit")) * time.Minute).
			Backfill(model.BackfillPref(rapid.IntRange(0, 2).Draw(t, "pref"))).
			MaxRisk(rapid.SampledFrom([]float64{0, 0.01, 0.1, 0.5}).Draw(t, "maxrisk"))
		if rapid.Bool().Draw(t, "qckpt") {
			b.Checkpoint(time.Duration(rapid.IntRange(0, 300).Draw(t, "qcost")) * time.Second)
		}
		switch rapid.IntRange(0, 19).Draw(t, "shape") {
		case 0:
			b.Model(rapid.SampledFrom([]string{"H100", "A100"}).Draw(t, "model"))
		case 1:
			b.Topology(model.TopologySameNode)
		}
		s.Queued = append(s.Queued, b.Build())
	}
	if err := s.Validate(); err != nil {
		t.Fatalf("random snapshot invalid: %v", err)
	}
	h := NewHuitianGreedy(DefaultConfig())
	randomMemory(t, h, s, users)
	return s, h
}

// nextFlatCycle is the snapshot after d: time moved on, some running jobs
// ended (and every preempted one), every start taken up.
func nextFlatCycle(t *rapid.T, s *model.Snapshot, d *model.Decision) *model.Snapshot {
	n := &model.Snapshot{Cluster: s.Cluster, Options: s.Options, Now: s.Now.Add(time.Duration(rapid.IntRange(1, 3600).Draw(t, "dt")) * time.Second)}
	for _, r := range s.Running {
		preempted := slices.ContainsFunc(d.Preemptions, func(p model.Preemption) bool { return p.JobID == r.Job.ID })
		if preempted || rapid.IntRange(0, 2).Draw(t, "ended") == 0 {
			continue
		}
		n.Running = append(n.Running, r)
	}
	started := map[string]bool{}
	for _, st := range d.Starts {
		i := slices.IndexFunc(s.Queued, func(j model.Job) bool { return j.ID == st.JobID })
		n.Running = append(n.Running, model.Running{Job: s.Queued[i], Cards: st.Cards, Start: s.Now, Kind: st.Kind, ProtectedUntil: st.ProtectedUntil})
		started[st.JobID] = true
	}
	for _, j := range s.Queued {
		if !started[j.ID] {
			n.Queued = append(n.Queued, j)
		}
	}
	if err := n.Validate(); err != nil {
		t.Fatalf("next snapshot invalid: %v", err)
	}
	return n
}

// TestGuaranteeOnAnExactPoolAsPerCard: on flat machines whose node names
// order the cards, huitian's guarantee plans EASY on an exact pool
// (baseline.Planner.Exact); a twin whose guarantee plans card by card
// decides the same, cards and all, cycle after cycle.
func TestGuaranteeOnAnExactPoolAsPerCard(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s, h := flatWorld(t)
		ref := twin(t, h)
		ref.core = &baseline.Planner{PerCard: true}
		lay := s.Cluster.Layout()
		for cycle := range rapid.IntRange(1, 8).Draw(t, "cycles") {
			got, err := h.Plan(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			want, err := ref.Plan(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			// A reservation names its cards (planned card by card), or
			// its count and the numbers of the cards it waits for: those
			// card by card names.
			for _, r := range got.Reservations {
				if named, counted := len(r.Cards) == r.Count && r.CardNumbers == nil, r.Cards == nil && len(r.CardNumbers) == r.Count; !named && !counted {
					t.Fatalf("cycle %d: %s's reservation names %d cards and %d numbers for %d", cycle, r.JobID, len(r.Cards), len(r.CardNumbers), r.Count)
				}
			}
			if diff := cmp.Diff(want, modeltest.Named(lay, got), cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("cycle %d: the guarantee on an exact pool differs from card by card (-cards +exact):\n%s", cycle, diff)
			}
			s = nextFlatCycle(t, s, got)
		}
	})
}

// TestFlatPredictionAsPerCard: on flat machines whose node names order the
// cards, a brief greedy plan predicts on the guarantee's free cards and
// its reservation's groups (flatPred); a twin that predicts card by card
// (the Profile) decides the same, cards and all, cycle after cycle.
func TestFlatPredictionAsPerCard(t *testing.T) {
	flat := 0
	rapid.Check(t, func(t *rapid.T) {
		s, h := flatWorld(t)
		s.Options.Brief = true
		ref := twin(t, h)
		ref.perCardPrediction = true
		for cycle := range rapid.IntRange(1, 8).Draw(t, "cycles") {
			d, _ := planAlike(t, h, ref, s, fmt.Sprintf("cycle %d: the flat prediction differs from the card-by-card one (-cards +flat)", cycle))
			if h.cyc.flat != nil && len(d.Reservations) > 0 {
				flat++
			}
			s = nextFlatCycle(t, s, d)
		}
	})
	if flat == 0 {
		t.Fatal("no cycle predicted a reservation on a flat machine: not a test of it")
	}
}

// TestLazyClaimsAsNamed: a planner given the running jobs' cards by
// number (PlanCards: the simulator) leaves a flat machine's head
// reservation's numbers unread (baseline.Prepared.LazyClaims) and names
// them when asked (ReservationNumbers); its decisions, with the numbers
// asked for, are a twin's that plans from references (Plan), whose
// reservations name them at once, cycle after cycle, greedy and LP. The
// running jobs' cards are handed back as the simulator does: a start's
// own slice for as long as the job runs.
func TestLazyClaimsAsNamed(t *testing.T) {
	lazy := 0
	rapid.Check(t, func(t *rapid.T) {
		s, h := flatWorld(t)
		if rapid.Bool().Draw(t, "lp") {
			h = NewHuitian(DefaultConfig(), clp.LP{})
			randomMemory(t, h, s, []string{"ann", "bob", "cy"})
		}
		s.Options.Brief = rapid.Bool().Draw(t, "brief")
		ref := twin(t, h)
		lay := s.Cluster.Layout()
		var ids baseline.CardIDs
		held := map[string][]int{} // each running job's cards, as the simulator hands them back
		for cycle := range rapid.IntRange(1, 8).Draw(t, "cycles") {
			cards := make([][]int, len(s.Running))
			for i, r := range s.Running {
				if cards[i] = held[r.Job.ID]; cards[i] == nil {
					one := *s
					one.Running = s.Running[i : i+1]
					res, err := ids.Resolve(&one)
					if err != nil {
						t.Fatal(err)
					}
					cards[i] = slices.Clone(res[0])
					held[r.Job.ID] = cards[i]
				}
			}
			got, err := h.PlanCards(context.Background(), s, cards)
			if err != nil {
				t.Fatal(err)
			}
			want, err := ref.Plan(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			named := *got
			named.Starts = slices.Clone(got.Starts)
			for i := range named.Starts {
				st := &named.Starts[i]
				if st.Cards != nil {
					t.Fatalf("cycle %d: %s's start by PlanCards names references", cycle, st.JobID)
				}
				st.Cards = lay.Refs(st.CardNumbers)
			}
			named.Reservations = slices.Clone(got.Reservations)
			for k := range named.Reservations {
				r := &named.Reservations[k]
				if r.Cards == nil && r.CardNumbers == nil {
					lazy++
					if r.CardNumbers = h.ReservationNumbers(k); len(r.CardNumbers) != r.Count {
						t.Fatalf("cycle %d: %s's reservation of %d names %d numbers when asked", cycle, r.JobID, r.Count, len(r.CardNumbers))
					}
				}
			}
			if diff := cmp.Diff(want, &named, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("cycle %d: planned by number, the claim read when asked, differs from planned by reference (-references +numbers):\n%s", cycle, diff)
			}
			for _, st := range got.Starts {
				held[st.JobID] = st.CardNumbers
			}
			s = nextFlatCycle(t, s, want)
		}
	})
	if lazy == 0 {
		t.Fatal("no reservation left its numbers unread: not a test of it")
	}
}
