package profile

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestPatchedEventsEqualRebuilt: the event streams patched after
// reservations (and after the profile is reset, held and reserved again,
// as a planner reusing it cycle after cycle does) are exactly the streams
// a rebuild gives, and every query on them answers the same.
func TestPatchedEventsEqualRebuilt(t *testing.T) {
	patched := 0
	rapid.Check(t, func(t *rapid.T) {
		c := randomCluster(t)
		p := New(c.Layout())
		cards := len(c.Layout().Cards)
		for cycle := range rapid.IntRange(1, 3).Draw(t, "cycles") {
			if cycle > 0 {
				p.Reset()
			}
			for card := range cards {
				if rapid.Bool().Draw(t, "busy") {
					p.Hold(card, rapid.Int64Range(1, 50).Draw(t, "until"))
				}
			}
			for range rapid.IntRange(0, 12).Draw(t, "ops") {
				req := randomRequest(t, "req")
				dur := rapid.Int64Range(1, 30).Draw(t, "dur")
				if rapid.Bool().Draw(t, "now") {
					if got, out := p.FitNow(dur, req); out == Fits {
						if err := p.Reserve(got, 0, dur); err != nil {
							t.Fatal(err)
						}
					}
				} else if at, rc, ok := p.EarliestStart(1, dur, req); ok {
					if err := p.Reserve(rc, at, at+dur); err != nil {
						t.Fatal(err)
					}
				}
				if p.evValid && p.baseGen != p.gen && p.base != nil {
					patched++
				}
				base, in, out := p.events()
				base, in, out = slices.Clone(base), slices.Clone(in), slices.Clone(out)
				p.evValid = false
				p.baseGen--
				b2, in2, out2 := p.events()
				if !slices.Equal(base, b2) || !slices.Equal(in, in2) || !slices.Equal(out, out2) {
					t.Fatalf("patched streams differ from rebuilt ones:\nbase %v\n  vs %v\nin %v\n  vs %v\nout %v\n  vs %v", base, b2, in, in2, out, out2)
				}
			}
		}
	})
	if patched == 0 {
		t.Fatal("no stream was patched: not a test of patching")
	}
	t.Logf("%d patched streams checked", patched)
}
