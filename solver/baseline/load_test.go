package baseline

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/model/modeltest"
)

// TestKeptProfilePlansAsFromScratch: over long random sequences of
// cycles — time passing by whole seconds (and now and then by a fraction,
// not at all, or backwards), some of each plan's starts taken up, running
// jobs ending, passing their limits or given longer ones, new jobs
// arriving, running jobs giving back cards — a planner that keeps its profile from cycle to cycle decides
// exactly what one loading every cycle anew decides, for every baseline
// policy, with the running jobs' cards resolved by the planner or by a
// caller, in any of its slots, with what-ifs (some running jobs ending
// sooner) planned in other slots between its cycles.
func TestKeptProfilePlansAsFromScratch(t *testing.T) {
	kept := 0
	rapid.Check(t, func(t *rapid.T) {
		s := randomSnapshot(t)
		if err := s.Cluster.Seal(); err != nil { // one layout for every cycle
			t.Fatal(err)
		}
		params := drawLarge(t, rapid.SampledFrom(policies).Draw(t, "policy"))
		inc, scratch := New(params), New(params)
		scratch.FromScratch = true
		var ids CardIDs // a caller's, kept like the planner's
		callerIDs := rapid.IntRange(0, 2).Draw(t, "callerIDs")
		arrived := 0
		for cycle := range rapid.IntRange(1, 25).Draw(t, "cycles") {
			prep := Prepared{Order: QueueOrder(s.Queued), Slot: rapid.IntRange(0, Slots-1).Draw(t, "slot")}
			switch callerIDs {
			case 1:
				var err error
				if prep.Cards, err = ids.Resolve(s); err != nil {
					t.Fatal(err)
				}
			case 2: // new slices every cycle: every job looks changed
				var fresh CardIDs
				var err error
				if prep.Cards, err = fresh.Resolve(s); err != nil {
					t.Fatal(err)
				}
			}
			got, err := inc.PlanPrepared(context.Background(), s, prep)
			if err != nil {
				t.Fatal(err)
			}
			want, err := scratch.PlanPrepared(context.Background(), s, Prepared{Order: prep.Order})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("cycle %d: the kept profile's plan differs from a fresh load's (-fresh +kept):\n%s", cycle, diff)
			}
			if cycle > 0 {
				kept++
			}
			if rapid.Bool().Draw(t, "whatIf") {
				// Some running jobs end sooner, planned in a slot of
				// its own (or the same one).
				until := HeldUntils(s, nil)
				for i := range until {
					if rapid.IntRange(0, 2).Draw(t, "sooner") == 0 {
						until[i] = rapid.Int64Range(1, until[i]).Draw(t, "until")
					}
				}
				alt := Prepared{Order: prep.Order, Until: until, Slot: rapid.IntRange(0, Slots-1).Draw(t, "whatIfSlot")}
				got, err := inc.PlanPrepared(context.Background(), s, alt)
				if err != nil {
					t.Fatal(err)
				}
				alt.Slot = 0
				want, err := scratch.PlanPrepared(context.Background(), s, alt)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Fatalf("cycle %d: a what-if's plan on a kept profile differs from a fresh load's (-fresh +kept):\n%s", cycle, diff)
				}
			}
			s = nextCycle(t, s, got, &arrived)
		}
	})
	if kept == 0 {
		t.Fatal("no cycle planned on a kept profile")
	}
}

// nextCycle draws the snapshot after s, whose plan was d.
func nextCycle(t *rapid.T, s *model.Snapshot, d *model.Decision, arrived *int) *model.Snapshot {
	n := &model.Snapshot{Cluster: s.Cluster, Options: s.Options}
	switch rapid.IntRange(0, 9).Draw(t, "step") {
	case 0:
		n.Now = s.Now
	case 1:
		n.Now = s.Now.Add(time.Duration(rapid.IntRange(1, 999).Draw(t, "ms")) * time.Millisecond)
	case 2:
		n.Now = s.Now.Add(-time.Duration(rapid.IntRange(1, 120).Draw(t, "back")) * time.Second)
	default:
		n.Now = s.Now.Add(time.Duration(rapid.IntRange(1, 7200).Draw(t, "dt")) * time.Second)
	}
	for _, r := range s.Running {
		switch rapid.IntRange(0, 5).Draw(t, "running") {
		case 0: // ended
			continue
		case 1: // given a longer limit
			r.Job.TimeLimit += time.Duration(rapid.IntRange(1, 60).Draw(t, "more")) * time.Minute
		case 2: // shrunk: it gave back a card, same id
			if len(r.Cards) > 1 {
				r.Cards = slices.Clone(r.Cards[:len(r.Cards)-1])
				r.Job.Cards--
			}
		}
		if r.Start.After(n.Now) { // time went back: a resource manager's clock, stepped
			r.Start = n.Now
		}
		n.Running = append(n.Running, r)
	}
	started := map[string]bool{}
	for _, st := range d.Starts {
		if !rapid.Bool().Draw(t, "taken") {
			continue
		}
		i := slices.IndexFunc(s.Queued, func(j model.Job) bool { return j.ID == st.JobID })
		n.Running = append(n.Running, model.Running{Job: s.Queued[i], Cards: st.Cards, Start: earlier(s.Now, n.Now), Kind: st.Kind})
		started[st.JobID] = true
	}
	for _, j := range s.Queued {
		if !started[j.ID] {
			n.Queued = append(n.Queued, j)
		}
	}
	for range rapid.IntRange(0, 3).Draw(t, "arrivals") {
		*arrived++
		n.Queued = append(n.Queued, modeltest.Job(fmt.Sprintf("a%d", *arrived)).
			Cards(rapid.SampledFrom([]int{1, 1, 2, 4, 8}).Draw(t, "cards")).
			Limit(time.Duration(rapid.IntRange(1, 30).Draw(t, "limit"))*10*time.Minute).
			Build())
	}
	// Validate a copy: validating lays the cluster out anew, and a
	// planner keeps its profile for one layout.
	v, c := *n, *n.Cluster
	v.Cluster = &c
	if err := v.Validate(); err != nil {
		t.Fatalf("next snapshot invalid: %v", err)
	}
	return n
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// TestSlotOutOfRange: a slot the planner does not keep is an error naming
// the field, not a crash.
func TestSlotOutOfRange(t *testing.T) {
	s := &model.Snapshot{Cluster: modeltest.Uniform(1, 8, 0), Now: time.Unix(1e9, 0)}
	for _, slot := range []int{-1, Slots} {
		_, err := New(Params{Name: "easy", Backfill: true}).PlanPrepared(context.Background(), s, Prepared{Slot: slot})
		if err == nil || !strings.Contains(err.Error(), "Prepared.Slot") {
			t.Errorf("slot %d: got %v, want an error naming Prepared.Slot", slot, err)
		}
	}
}

// TestHeadRefsAsFresh: a head reserved on many cards (headRefs) cycle
// after cycle — its cards the same, or moved as jobs end, start and
// arrive — is reserved on the cards a planner that never planned before
// names, for every baseline policy; and the references are handed out
// again when the cards are the same (whichever job they are for), on
// machines of 8-card nodes and on flat ones (one-card nodes, where the
// sweep hands back the last head's card numbers themselves). What a plan
// handed out is never changed by a later one.
func TestHeadRefsAsFresh(t *testing.T) {
	shared := map[bool]int{}
	rapid.Check(t, func(t *rapid.T) {
		flat := rapid.Bool().Draw(t, "flat")
		var c *model.Cluster
		if flat {
			c = modeltest.Uniform(rapid.IntRange(headMin+8, 2*headMin).Draw(t, "nodes"), 1, 0)
		} else {
			c = modeltest.Uniform(rapid.IntRange(9, 16).Draw(t, "nodes"), 8, rapid.IntRange(0, 4).Draw(t, "nodesPerSwitch"))
		}
		if err := c.Seal(); err != nil {
			t.Fatal(err)
		}
		now := modeltest.Epoch.Add(10 * time.Hour)
		s := &model.Snapshot{Now: now, Cluster: c}
		rlimit := func() time.Duration { return time.Duration(rapid.IntRange(1, 20).Draw(t, "rlimit")) * 10 * time.Minute }
		if flat {
			// Jobs of 1–8 one-card nodes each, some nodes free.
			for i := 0; i < len(c.Nodes); {
				w := min(rapid.IntRange(1, 8).Draw(t, "width"), len(c.Nodes)-i)
				if rapid.Bool().Draw(t, "busy") {
					var refs []model.CardRef
					for _, n := range c.Nodes[i : i+w] {
						refs = append(refs, modeltest.Ref(n.Name, 0))
					}
					j := modeltest.Job(fmt.Sprintf("r%d", i)).Cards(w).Limit(rlimit()).Build()
					s.Running = append(s.Running, modeltest.Running(j, now, refs...))
				}
				i += w
			}
		} else {
			for i, n := range c.Nodes {
				if w := rapid.IntRange(0, 8).Draw(t, "busy"); w > 0 {
					j := modeltest.Job(fmt.Sprintf("r%d", i)).Cards(w).Limit(rlimit()).Build()
					s.Running = append(s.Running, modeltest.Running(j, now, modeltest.Refs(n.Name, 0, w)...))
				}
			}
		}
		s.Queued = append(s.Queued, modeltest.Job("head").Cards(rapid.IntRange(headMin, len(c.Layout().Cards)).Draw(t, "headCards")).
			Limit(time.Duration(rapid.IntRange(1, 30).Draw(t, "headLimit"))*10*time.Minute).Build())
		for i := range rapid.IntRange(0, 6).Draw(t, "queued") {
			s.Queued = append(s.Queued, modeltest.Job(fmt.Sprintf("q%d", i)).Cards(rapid.SampledFrom([]int{1, 2, 4, 8, 16}).Draw(t, "cards")).
				Limit(time.Duration(rapid.IntRange(1, 30).Draw(t, "limit"))*10*time.Minute).Build())
		}
		if err := s.Validate(); err != nil {
			t.Fatal(err)
		}
		params := drawLarge(t, rapid.SampledFrom(policies).Draw(t, "policy"))
		// Card by card: a flat machine is otherwise planned on counts,
		// whose reservations name no cards.
		inc := &Planner{P: params, PerCard: true}
		var last []model.CardRef
		var made, kept []*model.Decision // every plan, and a copy of it
		arrived := 0
		for cycle := range rapid.IntRange(1, 8).Draw(t, "cycles") {
			got, err := inc.Plan(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			made, kept = append(made, got), append(kept, deepCopy(got))
			want, err := (&Planner{P: params, PerCard: true}).Plan(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("cycle %d: the plan differs from a new planner's (-new +kept):\n%s", cycle, diff)
			}
			if len(got.Reservations) > 0 {
				cur := got.Reservations[0].Cards
				if len(cur) >= headMin && len(last) > 0 && &cur[0] == &last[0] {
					shared[flat]++
				}
				last = cur
			}
			s = nextCycle(t, s, got, &arrived)
		}
		for i := range made {
			if diff := cmp.Diff(kept[i], made[i]); diff != "" {
				t.Fatalf("cycle %d's plan changed since it was handed out (-then +now):\n%s", i, diff)
			}
		}
	})
	if shared[false] == 0 || shared[true] == 0 {
		t.Fatalf("head's references handed out again %d times on 8-card nodes, %d on flat machines: not a test of headRefs", shared[false], shared[true])
	}
}

// deepCopy returns a copy of d that shares no slice with it.
func deepCopy(d *model.Decision) *model.Decision {
	c := *d
	c.Starts = slices.Clone(d.Starts)
	for i := range c.Starts {
		c.Starts[i].Cards = slices.Clone(d.Starts[i].Cards)
	}
	c.Reservations = slices.Clone(d.Reservations)
	for i := range c.Reservations {
		c.Reservations[i].Cards = slices.Clone(d.Reservations[i].Cards)
	}
	c.Preemptions, c.Pending = slices.Clone(d.Preemptions), slices.Clone(d.Pending)
	c.Fragments, c.Idle = slices.Clone(d.Fragments), slices.Clone(d.Idle)
	return &c
}
