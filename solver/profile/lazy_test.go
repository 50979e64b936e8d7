package profile

import (
	"math"
	"slices"
	"testing"

	"github.com/huitian/huitian/model/modeltest"

	"pgregory.net/rapid"
)

// TestLazySpansAnswerAsReserved: a profile that leaves the spans of cards
// busy now lazy and one that reserves every span at once, given the same
// holds, reservations (on busy cards and free ones, at any time), starts
// now, Sets and Advances, answer every query alike — Window, FreeOver,
// NextClaim, FitNow (end-aligned or not), EarliestStart — and hold the
// same state once the lazy spans are settled.
func TestLazySpansAnswerAsReserved(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		lazy, eager := twinProfiles(t)
		eager.noLazy = true
		n := len(lazy.Layout().Cards)
		for card := range n {
			if rapid.Bool().Draw(t, "busy") {
				u := rapid.Int64Range(1, 50).Draw(t, "until")
				lazy.Hold(card, u)
				eager.Hold(card, u)
			}
		}
		for op := range rapid.IntRange(1, 30).Draw(t, "ops") {
			switch rapid.IntRange(0, 7).Draw(t, "op") {
			case 0, 1: // a reservation where EarliestStart puts it
				req := randomRequest(t, "req")
				dur := rapid.Int64Range(1, 30).Draw(t, "dur")
				after := rapid.Int64Range(0, 40).Draw(t, "after")
				at, a, ok := lazy.EarliestStart(after, dur, req)
				bt, b, ok2 := eager.EarliestStart(after, dur, req)
				if at != bt || ok != ok2 || !slices.Equal(a, b) {
					t.Fatalf("op %d: EarliestStart(%d, %d, %v): lazy %d %v %v, eager %d %v %v", op, after, dur, req, at, a, ok, bt, b, ok2)
				}
				if ok {
					protect := rapid.Bool().Draw(t, "protect")
					reserve := func(p *Profile) error {
						if protect {
							return p.ReserveProtect(a, at, at+dur)
						}
						return p.Reserve(a, at, at+dur)
					}
					if err, err2 := reserve(lazy), reserve(eager); (err == nil) != (err2 == nil) {
						t.Fatalf("op %d: Reserve: lazy %v, eager %v", op, err, err2)
					}
				}
			case 2: // any cards over any interval: may overlap, and fail
				var cards []int
				for card := range n {
					if rapid.IntRange(0, 3).Draw(t, "pick") == 0 {
						cards = append(cards, card)
					}
				}
				start := rapid.Int64Range(0, 60).Draw(t, "start")
				end := start + rapid.Int64Range(1, 20).Draw(t, "len")
				err, err2 := lazy.Reserve(cards, start, end), eager.Reserve(cards, start, end)
				if (err == nil) != (err2 == nil) {
					t.Fatalf("op %d: Reserve(%v, %d, %d): lazy %v, eager %v", op, cards, start, end, err, err2)
				}
			case 3: // a start now
				req := randomRequest(t, "req")
				dur := rapid.Int64Range(1, 30).Draw(t, "dur")
				a, oa := lazy.FitNow(dur, req)
				b, ob := eager.FitNow(dur, req)
				if oa != ob || !slices.Equal(a, b) {
					t.Fatalf("op %d: FitNow(%d, %v): lazy %v %v, eager %v %v", op, dur, req, a, oa, b, ob)
				}
				if oa == Fits {
					if err, err2 := lazy.Reserve(a, 0, dur), eager.Reserve(b, 0, dur); err != nil || err2 != nil {
						t.Fatalf("op %d: start now: %v, %v", op, err, err2)
					}
				}
			case 4: // a card set: a job ended, started or moved
				card := rapid.IntRange(0, n-1).Draw(t, "card")
				u := rapid.Int64Range(0, 50).Draw(t, "until")
				lazy.Set(card, u)
				eager.Set(card, u)
			case 5:
				dt := rapid.Int64Range(0, 20).Draw(t, "dt")
				a, b := lazy.Advance(dt), eager.Advance(dt)
				if !slices.Equal(a, b) {
					t.Fatalf("op %d: Advance(%d) started %v, eager %v", op, dt, a, b)
				}
			default: // a card's answer to one query: the first to read it may be any
				card := rapid.IntRange(0, n-1).Draw(t, "card")
				at := rapid.Int64Range(0, 60).Draw(t, "at")
				end := at + rapid.Int64Range(1, 20).Draw(t, "len")
				query := rapid.IntRange(0, 3).Draw(t, "query")
				ask := func(p *Profile) any {
					switch query {
					case 0:
						return p.Window(card, at)
					case 1:
						return p.FreeOver(card, at, end)
					case 2:
						return p.NextClaim(card, at)
					default:
						return p.claimWindow(card)
					}
				}
				if got, want := ask(lazy), ask(eager); got != want {
					t.Fatalf("op %d: card %d, query %d at %d: lazy %v, eager %v", op, card, query, at, got, want)
				}
			}
		}
		lazy.settle()
		compareProfiles(t, lazy, eager)
	})
}

// TestLazyCardInTwoReservations: a busy card left lazy by two
// reservations is read with both, whichever query comes first.
func TestLazyCardInTwoReservations(t *testing.T) {
	lay := modeltest.Uniform(1, 2, 0).Layout()
	for _, query := range []string{"FreeOver", "Reserve", "Window", "NextClaim"} {
		p := New(lay)
		p.Hold(0, 5)
		p.Hold(1, 5)
		for _, iv := range [][2]int64{{10, 20}, {30, 40}} {
			if err := p.Reserve([]int{0, 1}, iv[0], iv[1]); err != nil {
				t.Fatal(err)
			}
		}
		if len(p.lazy) != 2 {
			t.Fatalf("%s: %d lazy reservations, want the two", query, len(p.lazy))
		}
		var got, want any
		switch query {
		case "FreeOver":
			got, want = p.FreeOver(0, 12, 15), false
		case "Reserve":
			got, want = p.Reserve([]int{1}, 12, 15) != nil, true
		case "Window":
			got, want = p.Window(0, 6), int64(4)
		case "NextClaim":
			got, want = p.NextClaim(0, 6), int64(10)
		}
		if got != want {
			t.Errorf("%s of the first reservation's time: %v, want %v", query, got, want)
		}
		if !p.FreeOver(1, 20, 30) || p.FreeOver(1, 35, 36) {
			t.Errorf("%s: FreeOver between and in the reservations wrong", query)
		}
	}
}

// TestLazyEpochWraps: past the last epoch the tags of earlier ones do
// not match the next (a card tagged in epoch 1 long ago would otherwise
// name a lazy reservation that is not there).
func TestLazyEpochWraps(t *testing.T) {
	lay := modeltest.Uniform(1, 2, 0).Layout()
	p := New(lay)
	p.Hold(0, 5)
	p.Hold(1, 5)
	if err := p.Reserve([]int{0}, 10, 20); err != nil { // card 0 tagged in epoch 1
		t.Fatal(err)
	}
	p.Advance(0)
	p.lazyEpoch = math.MaxUint32
	p.Advance(0) // wraps
	if err := p.Reserve([]int{1}, 10, 20); err != nil {
		t.Fatal(err)
	}
	if !p.FreeOver(0, 10, 20) {
		t.Error("card 0 reads a reservation of an epoch long gone")
	}
	if p.FreeOver(1, 12, 15) {
		t.Error("card 1 lost its lazy reservation")
	}
}
