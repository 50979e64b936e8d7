package profile

import (
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestAdvanceEqualsReload: a profile kept from cycle to cycle — planned on
// (starts now and reservations), then advanced by the time that passed
// (its starts kept) and set where jobs started, ended or passed their end
// and where a start was not taken up — is the profile a
// reset and a fresh load of the same busy times give: the same busy times
// and reservations, the same free list, index and event streams, and the
// same answers to FitNow (end-aligned or not) and EarliestStart.
func TestAdvanceEqualsReload(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		kept, fresh := twinProfiles(t)
		n := len(kept.Layout().Cards)
		// want is each card's busy time as the running jobs give it.
		want := make([]int64, n)
		for card := range n {
			if rapid.Bool().Draw(t, "busy") {
				want[card] = rapid.Int64Range(1, 60).Draw(t, "until")
				kept.Hold(card, want[card])
			}
		}
		for cycle := range rapid.IntRange(1, 5).Draw(t, "cycles") {
			if cycle > 0 {
				dt := rapid.Int64Range(0, 20).Draw(t, "dt")
				kept.Advance(dt) // the starts stay: set below like every card
				for card := range n {
					w := max(want[card]-dt, 0)
					switch rapid.IntRange(0, 5).Draw(t, "change") {
					case 0: // the job ended or started
						if w == 0 {
							w = rapid.Int64Range(1, 60).Draw(t, "until")
						} else {
							w = 0
						}
					case 1: // past its end: held for a grace
						if w == 0 && want[card] > 0 {
							w = 3
						}
					}
					want[card] = w
					if w != kept.Release(card) {
						kept.Set(card, w)
					}
				}
			}
			fresh.Reset()
			for card, w := range want {
				if w > 0 {
					fresh.Hold(card, w)
				}
			}
			compareProfiles(t, kept, fresh)
			// Plan on both alike.
			for range rapid.IntRange(0, 8).Draw(t, "ops") {
				req := randomRequest(t, "req")
				dur := rapid.Int64Range(1, 30).Draw(t, "dur")
				if rapid.Bool().Draw(t, "now") {
					a, oa := kept.FitNow(dur, req)
					b, ob := fresh.FitNow(dur, req)
					if oa != ob || !slices.Equal(a, b) {
						t.Fatalf("cycle %d: FitNow(%d, %v): kept %v %v, fresh %v %v", cycle, dur, req, a, oa, b, ob)
					}
					if oa == Fits {
						if err := kept.Reserve(a, 0, dur); err != nil {
							t.Fatal(err)
						}
						if err := fresh.Reserve(b, 0, dur); err != nil {
							t.Fatal(err)
						}
					}
					continue
				}
				at, a, ok := kept.EarliestStart(1, dur, req)
				bt, b, ok2 := fresh.EarliestStart(1, dur, req)
				if at != bt || ok != ok2 || !slices.Equal(a, b) {
					t.Fatalf("cycle %d: EarliestStart(%d, %v): kept %d %v %v, fresh %d %v %v", cycle, dur, req, at, a, ok, bt, b, ok2)
				}
				if ok {
					if err := kept.Reserve(a, at, at+dur); err != nil {
						t.Fatal(err)
					}
					if err := fresh.Reserve(b, bt, bt+dur); err != nil {
						t.Fatal(err)
					}
				}
			}
			if rapid.Bool().Draw(t, "check") {
				// Not always: a reservation made after the last sweep and
				// undone by the next Advance leaves its cards where the
				// streams have them, which the next patch must see.
				compareProfiles(t, kept, fresh)
			}
		}
	})
}

// twinProfiles draws a random cluster and two empty profiles of it, both
// placing end-aligned or neither.
func twinProfiles(t *rapid.T) (a, b *Profile) {
	lay := randomCluster(t).Layout()
	a, b = New(lay), New(lay)
	align := rapid.Bool().Draw(t, "align")
	a.SetAlignEnds(align)
	b.SetAlignEnds(align)
	return a, b
}

// compareProfiles fails unless a and b hold the same state, as every
// query sees it.
func compareProfiles(t *rapid.T, a, b *Profile) {
	a.settle()
	b.settle()
	if !slices.Equal(a.rel, b.rel) {
		t.Fatalf("busy times differ:\nkept  %v\nfresh %v", a.rel, b.rel)
	}
	for c := range a.spans {
		if !slices.Equal(a.spans[c], b.spans[c]) {
			t.Fatalf("card %d: reservations %v, fresh %v", c, a.spans[c], b.spans[c])
		}
	}
	if !slices.Equal(a.FreeCards(), b.FreeCards()) {
		t.Fatalf("free cards %v, fresh %v", a.FreeCards(), b.FreeCards())
	}
	for _, p := range []*Profile{a, b} {
		// FreeCount is what the planners count idle cards by.
		if p.FreeCount() != len(p.FreeCards()) {
			t.Fatalf("FreeCount %d, FreeCards %v", p.FreeCount(), p.FreeCards())
		}
	}
	checkFreeLists(t, a)
	a.fresh()
	b.fresh()
	if a.ix.total != b.ix.total || !slices.Equal(a.ix.cnt, b.ix.cnt) || !slices.Equal(a.ix.dirty, b.ix.dirty) ||
		fmt.Sprint(a.ix.bucket) != fmt.Sprint(b.ix.bucket) {
		t.Fatalf("index differs: total %d cnt %v dirty %v, fresh %d %v %v", a.ix.total, a.ix.cnt, a.ix.dirty, b.ix.total, b.ix.cnt, b.ix.dirty)
	}
	ab, ai, ao := a.events()
	bb, bi, bo := b.events()
	// Base events on each profile's clock, read from now.
	ab, bb = fromNow(a, ab), fromNow(b, bb)
	if !slices.Equal(ab, bb) || !slices.Equal(ai, bi) || !slices.Equal(ao, bo) {
		t.Fatalf("event streams differ:\nbase %v\n  vs %v\nin %v\n  vs %v\nout %v\n  vs %v", ab, bb, ai, bi, ao, bo)
	}
}

// TestHoldAllIsHold: holding a job's cards in one pass leaves the profile
// one Hold per card leaves — busy times, index, free list, events and the
// answers to FitNow — over overlapping jobs, later and earlier times,
// cards with reservations, and a fresh or a reset profile.
func TestHoldAllIsHold(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		lay := randomCluster(t).Layout()
		all, one := New(lay), New(lay)
		if rapid.Bool().Draw(t, "reset") {
			all.Reset()
			one.Reset()
		}
		n := len(lay.Cards)
		for range rapid.IntRange(0, 2).Draw(t, "reservations") {
			req := randomRequest(t, "resreq")
			dur := rapid.Int64Range(1, 30).Draw(t, "resdur")
			if at, rc, ok := all.EarliestStart(rapid.Int64Range(0, 20).Draw(t, "after"), dur, req); ok {
				if err := all.Reserve(rc, at, at+dur); err != nil {
					t.Fatal(err)
				}
				if err := one.Reserve(rc, at, at+dur); err != nil {
					t.Fatal(err)
				}
			}
		}
		if rapid.Bool().Draw(t, "listed") { // a free list to bring up to date
			all.FreeCards()
			one.FreeCards()
		}
		for range rapid.IntRange(1, 6).Draw(t, "jobs") {
			var cards []int
			for c := range n {
				if rapid.IntRange(0, 2).Draw(t, "card") == 0 {
					cards = append(cards, c)
				}
			}
			until := rapid.Int64Range(1, 60).Draw(t, "until")
			gen := all.gen
			changes := slices.ContainsFunc(cards, func(c int) bool { return all.Release(c) < until })
			all.HoldAll(cards, until)
			for _, c := range cards {
				one.Hold(c, until)
			}
			if changes == (all.gen == gen) {
				t.Fatalf("HoldAll changed busy times: %v; the state version moved from %d to %d", changes, gen, all.gen)
			}
		}
		compareProfiles(t, all, one)
		req := randomRequest(t, "req")
		dur := rapid.Int64Range(1, 30).Draw(t, "dur")
		a, oa := all.FitNow(dur, req)
		b, ob := one.FitNow(dur, req)
		if oa != ob || !slices.Equal(a, b) {
			t.Fatalf("FitNow(%d, %v): HoldAll %v %v, Hold %v %v", dur, req, a, oa, b, ob)
		}
	})
}

// fromNow is a profile's base events with their times from now (baseT):
// a fresh profile's clock and an advanced one's differ.
func fromNow(p *Profile, base []baseEvent) []baseEvent {
	out := make([]baseEvent, len(base))
	for i, e := range base {
		out[i] = packBase(p.baseT(e), int(e.card()))
	}
	return out
}
