package baseline

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/model/modeltest"
	"github.com/huitian/huitian/solver/profile"
)

// randomPoolSnapshot draws a flat machine (one card a node, no switch:
// profile.IsPool), some of its nodes unschedulable, running jobs on
// random nodes, and a queue of jobs mostly of any topology.
func randomPoolSnapshot(t *rapid.T) *model.Snapshot {
	// Now and then more than a word of bits' worth.
	c := modeltest.Uniform(rapid.SampledFrom([]int{rapid.IntRange(1, 40).Draw(t, "nodes"), rapid.IntRange(60, 150).Draw(t, "many")}).Draw(t, "size"), 1, 0)
	for i := range c.Nodes {
		if i > 0 && rapid.IntRange(0, 9).Draw(t, "unschedulable") == 0 {
			c.Nodes[i].Unschedulable = true
		}
	}
	now := modeltest.Epoch.Add(10 * time.Hour)
	s := &model.Snapshot{Now: now, Cluster: c}
	free := rapid.Permutation(c.Nodes).Draw(t, "order")
	for id := 0; len(free) > 0 && rapid.IntRange(0, 3).Draw(t, "more") > 0; id++ {
		w := rapid.IntRange(1, len(free)).Draw(t, "width")
		var refs []model.CardRef
		for _, n := range free[:w] {
			refs = append(refs, modeltest.Ref(n.Name, 0))
		}
		free = free[w:]
		j := modeltest.Job(fmt.Sprintf("r%d", id)).Cards(w).
			Limit(time.Duration(rapid.IntRange(1, 20).Draw(t, "rlimit")) * 10 * time.Minute).Build()
		start := now.Add(-time.Duration(rapid.IntRange(0, 250).Draw(t, "age")) * time.Minute)
		s.Running = append(s.Running, modeltest.Running(j, start, refs...))
	}
	for i := range rapid.IntRange(0, 14).Draw(t, "queued") {
		k := rapid.IntRange(1, len(c.Nodes)+1).Draw(t, "cards")
		b := drawQueued(t, i, k)
		switch rapid.IntRange(0, 9).Draw(t, "topo") {
		case 1:
			b.Topology(model.TopologySameNode)
		case 2:
			b.Topology(model.TopologySameSwitch)
		case 3:
			b.PerNode(1 + (k+1)%2) // 2 on an even count
		case 4:
			b.Model(rapid.SampledFrom([]string{"H100", "A100", "A100|H100"}).Draw(t, "model"))
		}
		s.Queued = append(s.Queued, b.Build())
	}
	if err := s.Validate(); err != nil {
		t.Fatalf("random snapshot invalid: %v", err)
	}
	return s
}

// withoutCards is a decision as far as a plan on counts must agree with
// one card by card: every start's and reservation's cards dropped (their
// number kept), with what follows from which cards a start took (its
// expected retention, and so its fragment class).
func withoutCards(d *model.Decision) *model.Decision {
	o := *d
	o.Starts = slices.Clone(d.Starts)
	for i := range o.Starts {
		st := &o.Starts[i]
		st.JobID = fmt.Sprintf("%s on %d cards", st.JobID, st.CardCount())
		st.Cards, st.CardNumbers, st.ExpectedRetention, st.Unbounded, st.Fragment = nil, nil, 0, false, 0
	}
	o.Reservations = slices.Clone(d.Reservations)
	for i := range o.Reservations {
		o.Reservations[i].Cards = nil
	}
	return &o
}

// onePromise are the baseline policies that reserve for one job at most.
var onePromise = []model.Policy{model.PolicyFCFS, model.PolicyEASY, model.PolicyEASYSJBF}

// TestPoolPlansAsPerCard: on flat machines, over long random sequences of
// cycles, a planner on counts (profile.Pool, kept from cycle to cycle)
// starts the same jobs, reserves for the same jobs at the same times and
// says the same of every waiting job as one card by card, for every
// baseline policy; its starts are on free cards, and its reservations
// name their count alone.
func TestPoolPlansAsPerCard(t *testing.T) {
	pooled := 0
	rapid.Check(t, func(t *rapid.T) {
		s := randomPoolSnapshot(t)
		if err := s.Cluster.Seal(); err != nil {
			t.Fatal(err)
		}
		if !profile.IsPool(s.Cluster.Layout()) {
			t.Fatal("a flat machine is not a pool")
		}
		params, _ := ForPolicy(rapid.SampledFrom(onePromise).Draw(t, "policy"), 0)
		pool, cards := New(params), &Planner{P: params, PerCard: true}
		arrived := 0
		for cycle := range rapid.IntRange(1, 25).Draw(t, "cycles") {
			got, err := pool.Plan(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			want, err := cards.Plan(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(withoutCards(want), withoutCards(got)); diff != "" {
				t.Fatalf("cycle %d: the plan on counts differs from the one card by card (-cards +counts):\n%s", cycle, diff)
			}
			for _, r := range got.Reservations {
				if len(r.Cards) > 0 {
					t.Fatalf("cycle %d: %s's reservation names cards", cycle, r.JobID)
				}
				pooled++
			}
			// The next cycle takes up the plan on counts' starts: its
			// cards must be free.
			s = nextCycle(t, s, got, &arrived)
		}
	})
	if pooled == 0 {
		t.Fatal("no reservation on counts: not a test of them")
	}
}

// TestExactPoolPlansAsPerCard: a planner that plans an exact pool
// (Planner.Exact: profile.Pool.SetExact) makes every decision of one card
// by card, cards and all — the starts' cards, each reservation's, and the
// brief's card numbers — over long random sequences of cycles on flat
// machines whose node names order the cards, for the policies that
// reserve for one job at most, and with large jobs' reservations beyond
// the head (which it plans card by card).
func TestExactPoolPlansAsPerCard(t *testing.T) {
	named := 0
	rapid.Check(t, func(t *rapid.T) {
		s := randomPoolSnapshot(t)
		if err := s.Cluster.Seal(); err != nil {
			t.Fatal(err)
		}
		if !profile.RankedByCard(s.Cluster.Layout()) {
			t.Fatal("a flat machine's node names do not order its cards")
		}
		params, _ := ForPolicy(rapid.SampledFrom(onePromise).Draw(t, "policy"), 0)
		if rapid.Bool().Draw(t, "large") {
			params.LargeDepth = 1
			params.Large = func(j *model.Job) bool { return j.Topology != model.TopologyAny }
		}
		exact, cards := &Planner{P: params, Exact: true}, &Planner{P: params, PerCard: true}
		arrived := 0
		for cycle := range rapid.IntRange(1, 25).Draw(t, "cycles") {
			got, gb, err := exact.PlanBrief(context.Background(), s, Prepared{Order: QueueOrder(s.Queued)})
			if err != nil {
				t.Fatal(err)
			}
			want, wb, err := cards.PlanBrief(context.Background(), s, Prepared{Order: QueueOrder(s.Queued)})
			if err != nil {
				t.Fatal(err)
			}
			lay := s.Cluster.Layout()
			for _, r := range got.Reservations {
				if named, counted := len(r.Cards) == r.Count && r.CardNumbers == nil, r.Cards == nil && len(r.CardNumbers) == r.Count; !named && !counted {
					t.Fatalf("cycle %d: %s's reservation names %d cards and %d numbers for %d", cycle, r.JobID, len(r.Cards), len(r.CardNumbers), r.Count)
				}
			}
			if diff := cmp.Diff(want, modeltest.Named(lay, got)); diff != "" {
				t.Fatalf("cycle %d: the plan on an exact pool differs from the one card by card (-cards +exact):\n%s", cycle, diff)
			}
			if wb.Pool != nil {
				t.Fatalf("cycle %d: a plan card by card names a pool", cycle)
			}
			if gb.Pool != nil && len(gb.ReservationCards) > 0 {
				checkClaimGroups(t, gb.Pool, gb.ReservationCards[0])
			}
			gb.Pool = nil // the exact pool planned on, when it did
			if diff := cmp.Diff(wb, gb); diff != "" {
				t.Fatalf("cycle %d: the brief on an exact pool differs from the one card by card (-cards +exact):\n%s", cycle, diff)
			}
			full, err := exact.Plan(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			wantFull, err := cards.Plan(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(wantFull, modeltest.Named(lay, full)); diff != "" {
				t.Fatalf("cycle %d: the whole plan on an exact pool differs from the one card by card (-cards +exact):\n%s", cycle, diff)
			}
			named += len(got.Reservations)
			s = nextCycle(t, s, got, &arrived)
		}
	})
	if named == 0 {
		t.Fatal("no reservation named its cards: not a test of them")
	}
}

// checkClaimGroups checks an exact pool's claim's groups against its cards
// (sorted): every card of the claim not free now is in one group, each
// group has cards in the claim, and its least card there is Least.
func checkClaimGroups(t *rapid.T, p *profile.Pool, cards []int) {
	groups, ok := p.ClaimGroups()
	if !ok {
		t.Fatal("an exact pool's claim names no groups")
	}
	free := p.FreeBits()
	in := map[int]bool{}
	for _, c := range cards {
		in[c] = true
	}
	of := map[int]int{}
	for gi, g := range groups {
		least := -1
		for _, c := range g.Cards {
			if !in[c] {
				continue
			}
			if _, dup := of[c]; dup {
				t.Fatalf("card %d in two of the claim's groups", c)
			}
			of[c] = gi
			if least < 0 || c < least {
				least = c // a running job's cards come in any order
			}
		}
		if least < 0 || least != g.Least {
			t.Fatalf("claim group %d (%v): least card in the claim %d, Least %d", gi, g.Cards, least, g.Least)
		}
	}
	for _, c := range cards {
		if _, held := of[c]; !held && free[c>>6]&(1<<(c&63)) == 0 {
			t.Fatalf("card %d of the claim %v is busy and in none of its groups %v (free %b)", c, cards, groups, free)
		}
	}
}
