package profile

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/huitian/huitian/model"
	"pgregory.net/rapid"
)

// Differential tests of the shortcuts a big flat machine takes, each
// against the one-by-one version it replaces.

// TestCountingSortEqualsSort: the event streams sorted by counting
// release times give slices.Sort's order, with few distinct times
// (counted) and with many (sorted), on fresh and on reused buffers.
func TestCountingSortEqualsSort(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 300).Draw(t, "cards")
		times := rapid.Int64Range(1, 60).Draw(t, "times")
		var base []baseEvent
		var gaps []gap
		for c := range n {
			if rapid.Bool().Draw(t, "reserved") {
				// A card's gaps in time order, the last maybe open.
				at := rapid.Int64Range(0, times).Draw(t, "rel") * 10
				for range rapid.IntRange(1, 3).Draw(t, "gaps") {
					end := at + rapid.Int64Range(1, times).Draw(t, "len")*10
					if rapid.IntRange(0, 3).Draw(t, "open") == 0 {
						end = Forever
					}
					gaps = append(gaps, gap{start: at, end: end, card: int32(c)})
					if end == Forever {
						break
					}
					at = end + rapid.Int64Range(1, times).Draw(t, "busy")*10
				}
				continue
			}
			base = append(base, packBase(rapid.Int64Range(0, times).Draw(t, "t")*1000, c))
		}
		var sc countingScratch
		var spareB []baseEvent
		var spareG []gap
		for round := range 2 { // the second on the buffers the first left
			wantB := slices.Clone(base)
			slices.Sort(wantB)
			var gotB []baseEvent
			gotB, spareB = countingSort(slices.Clone(base), spareB, &sc, baseEvent.t, func(a, b baseEvent) int { return cmp.Compare(a, b) })
			if !slices.Equal(gotB, wantB) {
				t.Fatalf("round %d: base %v sorted to %v, want %v", round, base, gotB, wantB)
			}
			for _, order := range []struct {
				key func(gap) int64
				cmp func(a, b gap) int
			}{{gapStart, byStart}, {gapEnd, byEnd}} {
				want := slices.Clone(gaps)
				slices.SortFunc(want, order.cmp)
				var got []gap
				got, spareG = countingSort(slices.Clone(gaps), spareG, &sc, order.key, order.cmp)
				if !slices.Equal(got, want) {
					t.Fatalf("round %d: gaps %v sorted to %v, want %v", round, gaps, got, want)
				}
			}
		}
	})
}

// TestNthSmallestEqualsSort: the quickselect answers what a sort does,
// duplicates included.
func TestNthSmallestEqualsSort(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a := rapid.SliceOfN(rapid.Int64Range(-40, 40), 1, 200).Draw(t, "a")
		if rapid.Bool().Draw(t, "sorted") {
			slices.Sort(a)
		}
		k := rapid.IntRange(1, len(a)).Draw(t, "k")
		want := slices.Sorted(slices.Values(a))[k-1]
		b := slices.Clone(a)
		if got := nthSmallest(b, k); got != want {
			t.Fatalf("nthSmallest(%v, %d) = %d, want %d", a, k, got, want)
		}
		slices.Sort(b)
		if !slices.Equal(b, slices.Sorted(slices.Values(a))) {
			t.Fatalf("nthSmallest lost elements of %v: %v", a, b)
		}
	})
}

func flatCluster(t *rapid.T) *model.Cluster { return flatClusterNamed(t, true) }

// flatClusterNamed is a flat machine of up to 60 one-card nodes, some
// cards unhealthy, named out of card order when shuffled.
func flatClusterNamed(t *rapid.T, shuffled bool) *model.Cluster {
	n := rapid.IntRange(1, 60).Draw(t, "nodes")
	c := &model.Cluster{ID: "flat"}
	names := make([]int, n)
	for i := range names {
		names[i] = i
	}
	if shuffled {
		// Names out of card order, so that name rank and card number differ.
		names = rapid.Permutation(names).Draw(t, "names")
	}
	for i := range n {
		nd := model.Node{Name: fmt.Sprintf("n%03d", names[i]), Cards: []model.Card{{Index: 0}}}
		nd.Cards[0].Unhealthy = rapid.IntRange(0, 9).Draw(t, "unhealthy") == 0
		c.Nodes = append(c.Nodes, nd)
	}
	if err := c.Seal(); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestPlaceFlatEqualsGeneral: on one-card nodes the flat placement picks
// the cards the general one does.
func TestPlaceFlatEqualsGeneral(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := New(flatCluster(t).Layout())
		var cands []int
		for c := range p.Layout().Cards {
			if rapid.Bool().Draw(t, "cand") {
				cands = append(cands, c)
				p.sc.key[c] = rapid.Int64Range(-5, 5).Draw(t, "key")
			}
		}
		if len(cands) == 0 {
			return
		}
		k := rapid.IntRange(1, len(cands)).Draw(t, "k")
		req := Request{Cards: k}
		want := p.placeGeneral(req, slices.Clone(cands))
		got := p.place(req, slices.Clone(cands))
		if !slices.Equal(got, want) {
			t.Fatalf("placeFlat(%d of %v) = %v, placeGeneral %v", k, cands, got, want)
		}
	})
}

// TestEarliestStartFlatMatchesBrute: on a flat machine (the by-count
// sweep, the counted base events, the flat placement) the sweep and the
// exhaustive search agree, over busy cards and reservations.
func TestEarliestStartFlatMatchesBrute(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		lay := flatCluster(t).Layout()
		p := New(lay)
		for cycle := range rapid.IntRange(1, 2).Draw(t, "cycles") {
			if cycle > 0 {
				p.Reset()
			}
			for card := range lay.Cards {
				if rapid.Bool().Draw(t, "busy") {
					p.Hold(card, rapid.Int64Range(1, 8).Draw(t, "until")*10)
				}
			}
			for range rapid.IntRange(0, 3).Draw(t, "reservations") {
				k := rapid.IntRange(1, len(lay.Cards)).Draw(t, "rescards")
				dur := rapid.Int64Range(1, 40).Draw(t, "resdur")
				if st, cards, ok := p.EarliestStart(rapid.Int64Range(0, 30).Draw(t, "after"), dur, Request{Cards: k}); ok {
					if err := p.Reserve(cards, st, st+dur); err != nil {
						t.Fatalf("reserve what EarliestStart found: %v", err)
					}
				}
			}
			req := Request{Cards: rapid.IntRange(1, len(lay.Cards)).Draw(t, "cards")}
			after := rapid.Int64Range(0, 60).Draw(t, "after")
			dur := rapid.Int64Range(1, 60).Draw(t, "dur")
			st, cards, ok := p.EarliestStart(after, dur, req)
			bst, bcards, bok := p.EarliestStartBrute(after, dur, req)
			if ok != bok || st != bst || !slices.Equal(cards, bcards) {
				t.Fatalf("sweep (%v, %d, %v) != brute (%v, %d, %v)", ok, st, cards, bok, bst, bcards)
			}
		}
	})
}

// TestEarliestFlatEqualsSweep: with no reservation on a flat machine,
// earliestFlat answers what the sweep over every event answers — the
// start, and the cards — over busy times with many ties, free cards,
// unusable cards, and starts raised to after.
func TestEarliestFlatEqualsSweep(t *testing.T) {
	short := 0
	rapid.Check(t, func(t *rapid.T) {
		// Names in card order too: the cards of one release time are
		// then taken by card.
		lay := flatClusterNamed(t, rapid.Bool().Draw(t, "shuffled")).Layout()
		p := New(lay)
		for card := range lay.Cards {
			if rapid.Bool().Draw(t, "busy") {
				p.Hold(card, rapid.Int64Range(1, 6).Draw(t, "until")*10)
			}
		}
		req := Request{Cards: rapid.IntRange(1, len(lay.Cards)+1).Draw(t, "cards")}
		after := rapid.Int64Range(0, 70).Draw(t, "after")
		dur := rapid.Int64Range(1, 60).Draw(t, "dur")
		if !p.flatCount(req) {
			t.Fatalf("%v on a flat machine is not counted", req)
		}
		st, cards, ok := p.EarliestStart(after, dur, req)
		tm, tok := p.EarliestTime(after, dur, req)
		// Given the last cycle's cards, the shortcut returns them
		// when they are its answer, and a new list otherwise.
		var last []int
		switch rapid.IntRange(0, 2).Draw(t, "last") {
		case 1:
			last = slices.Clone(cards)
		case 2:
			last = rapid.SliceOfN(rapid.IntRange(0, len(lay.Cards)-1), 0, len(lay.Cards)).Draw(t, "other")
			slices.Sort(last)
		}
		kept := slices.Clone(last)
		ost, ocards, ook, _ := p.EarliestStartOr(after, dur, req, nil, last)
		if ook != ok || ost != st || !slices.Equal(ocards, cards) || !slices.Equal(last, kept) {
			t.Fatalf("EarliestStartOr given %v: (%v, %d, %v), EarliestStart (%v, %d, %v); last now %v", kept, ook, ost, ocards, ok, st, cards, last)
		}
		if reused := len(ocards) > 0 && len(last) > 0 && &ocards[0] == &last[0]; reused != (ok && len(cards) > 0 && slices.Equal(last, cards)) {
			t.Fatalf("EarliestStartOr given %v returned it: %v; its answer %v", last, reused, cards)
		}
		p.sweepAll = true
		wst, wcards, wok := p.EarliestStart(after, dur, req)
		if ok != wok || st != wst || !slices.Equal(cards, wcards) || tok != wok || ok && tm != wst {
			t.Fatalf("earliestFlat (%v, %d, %v; time %d) != sweep (%v, %d, %v)", ok, st, cards, tm, wok, wst, wcards)
		}
		if ok {
			short++
		}
	})
	if short == 0 {
		t.Fatal("no job fitted: not a test of the shortcut")
	}
}

// TestRadixByTimeEqualsSort: base events of times over several bytes (a
// day's seconds and beyond), each time's in card order, sort by their
// time's bytes to slices.Sort's order, on reused buffers; negative times
// too (sorted by comparison).
func TestRadixByTimeEqualsSort(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 400).Draw(t, "cards")
		span := rapid.SampledFrom([]int64{1, 200, 70_000, 1 << 40}).Draw(t, "span")
		lo := int64(0)
		if rapid.IntRange(0, 4).Draw(t, "negative") == 0 {
			lo = -span
		}
		base := make([]baseEvent, n)
		for c := range base {
			base[c] = packBase(rapid.Int64Range(lo, span).Draw(t, "t"), c)
		}
		var spare []baseEvent
		for round := range 2 {
			want := slices.Clone(base)
			slices.Sort(want)
			var got []baseEvent
			got, spare = radixByTime(slices.Clone(base), spare)
			if !slices.Equal(got, want) {
				t.Fatalf("round %d: %v sorted to %v, want %v", round, base, got, want)
			}
		}
	})
}

// TestFitFlatEqualsFitAmong: on a flat machine, FitNow's answer from the
// index (fitFlat) is the one the pass over every free card gives — the
// cards and the outcome — over busy cards, reservations that claim free
// cards (some past clampKey's range), reservations that only protect,
// starts now, and jobs that need the claimed cards, the clean ones or
// both, asked again after more reservations and starts.
func TestFitFlatEqualsFitAmong(t *testing.T) {
	var fits, claimedOnly, refused int
	rapid.Check(t, func(t *rapid.T) {
		lay := flatClusterNamed(t, false).Layout()
		p := New(lay)
		if !p.cardRanked {
			t.Fatal("a flat machine named in card order is not card-ranked")
		}
		if rapid.Bool().Draw(t, "reset") {
			p.Reset() // a stale index, rebuilt on use
		}
		for card := range lay.Cards {
			if rapid.IntRange(0, 2).Draw(t, "busy") == 0 {
				p.Hold(card, rapid.Int64Range(1, 6).Draw(t, "until")*10)
			}
		}
		if rapid.Bool().Draw(t, "listed") {
			p.refreshFree() // starts below leave stale entries in the list
		}
		// Rounds of reservations and starts, each asked after: fitFlat's
		// list of dirty cards is kept while no card's spans change.
		for range rapid.IntRange(1, 3).Draw(t, "rounds") {
			for range rapid.IntRange(0, 4).Draw(t, "reservations") {
				var cards []int
				start := rapid.SampledFrom([]int64{0, 5, 20, 40, 1 << 38}).Draw(t, "start")
				end := start + rapid.Int64Range(1, 30).Draw(t, "len")
				for c := range lay.Cards {
					if p.FreeOver(c, start, end) && rapid.Bool().Draw(t, "take") {
						cards = append(cards, c)
					}
				}
				if len(cards) == 0 {
					continue
				}
				reserve := p.Reserve
				if rapid.IntRange(0, 3).Draw(t, "protect") == 0 {
					reserve = p.ReserveProtect
				}
				if err := reserve(cards, start, end); err != nil {
					t.Fatalf("reserve free cards: %v", err)
				}
			}
			// Several jobs asked in a row, as the backfill walk asks
			// them between two starts (fitFlat reads the list once).
			for range rapid.IntRange(1, 3).Draw(t, "asks") {
				req := Request{Cards: rapid.IntRange(2, len(lay.Cards)+1).Draw(t, "cards")}
				dur := rapid.SampledFrom([]int64{1, 4, 10, 30, 1 << 40}).Draw(t, "dur")
				if p.ix.total < req.Cards {
					continue // fitNow answers NoCards before either
				}
				got, gout, _ := p.fitFlat(dur, req.Cards)
				p.refreshFree()
				want, wout := p.fitAmong(dur, req, p.free, nil)
				if gout != wout || !slices.Equal(got, want) {
					t.Fatalf("fitFlat(%d, %d) = %v %v, fitAmong %v %v", dur, req.Cards, got, gout, want, wout)
				}
				switch {
				case gout != Fits:
					refused++
				case p.claimWindow(got[0]) != Forever && p.claimWindow(got[len(got)-1]) != Forever:
					claimedOnly++
				default:
					fits++
				}
			}
		}
	})
	if fits == 0 || claimedOnly == 0 || refused == 0 {
		t.Fatalf("cases: %d fitted, %d on claimed cards, %d refused: not a test of every branch", fits, claimedOnly, refused)
	}
}

// TestReservePickedChecksAfterAChange: Reserve takes the flat sweep's
// cards without asking each (picked) only while nothing changed since
// the sweep and from its start on; a card held since, or a start before
// the sweep's, is refused as ever.
func TestReservePickedChecksAfterAChange(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		lay := flatClusterNamed(t, false).Layout()
		p := New(lay)
		for card := range lay.Cards {
			if rapid.Bool().Draw(t, "busy") {
				p.Hold(card, rapid.Int64Range(1, 6).Draw(t, "until")*10)
			}
		}
		req := Request{Cards: rapid.IntRange(1, len(lay.Cards)).Draw(t, "cards")}
		st, cards, ok, _ := p.EarliestStartOr(1, 30, req, nil, nil)
		if !ok {
			return
		}
		switch rapid.IntRange(0, 2).Draw(t, "case") {
		case 0: // unchanged: reserved
			if err := p.Reserve(cards, st, st+30); err != nil {
				t.Fatalf("the sweep's cards from %d: %v", st, err)
			}
		case 1: // one of them held past the start since: refused
			c := cards[rapid.IntRange(0, len(cards)-1).Draw(t, "held")]
			p.Hold(c, st+1)
			if err := p.Reserve(cards, st, st+30); !errors.Is(err, ErrOverlap) {
				t.Fatalf("card %d held to %d, reserved from %d: got %v, want ErrOverlap", c, st+1, st, err)
			}
		case 2: // from before the start: refused when a card is busy then
			busy := slices.ContainsFunc(cards, func(c int) bool { return p.Release(c) > st-1 })
			err := p.Reserve(cards, st-1, st+30)
			if busy != errors.Is(err, ErrOverlap) || !busy && err != nil {
				t.Fatalf("reserved from %d, before the sweep's %d (a card busy then: %v): %v", st-1, st, busy, err)
			}
		}
	})
}
