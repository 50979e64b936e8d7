package profile

import (
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/model/modeltest"
)

// TestEarliestByDomainMatchesSweep: with no reservation on any card — a
// profile loaded, or one whose reservations Advance undid — the earliest
// start and its cards, and the earliest time alone, are the sweep's, for
// every request but one island's: one node, one switch (with a per-node
// count or without), any cards (with or without), of any card model, on
// random clusters with unusable cards and nodes under no switch. Random
// requests that never fit, or fit at after, are among them.
func TestEarliestByDomainMatchesSweep(t *testing.T) {
	answered := 0
	rapid.Check(t, func(t *rapid.T) {
		p := randomBusyProfile(t)
		if rapid.Bool().Draw(t, "undone") {
			// Reservations made, then undone by Advance (no time passes,
			// or some does).
			reserveRandomly(t, p)
			for _, c := range p.Advance(int64(rapid.IntRange(0, 20).Draw(t, "dt"))) {
				p.Set(int(c), 0) // the starts no job took up
			}
		}
		req := randomRequest(t, "req")
		if req.Topology == model.TopologySameIsland {
			req.Topology = model.TopologySameSwitch
		}
		after := int64(rapid.IntRange(0, 60).Draw(t, "after"))
		dur := int64(rapid.IntRange(1, 60).Draw(t, "dur"))
		_, _, _, handled := p.earliestByDomain(after, req, false)
		if !handled && !p.flatCount(req) {
			t.Fatalf("%v with no reservation (%d logged) not answered by domain", req, len(p.spanLog))
		}
		st, cards, ok := p.EarliestStart(after, dur, req)
		tm, tok := p.EarliestTime(after, dur, req)
		p.sweepAll = true
		wst, wcards, wok := p.EarliestStart(after, dur, req)
		p.sweepAll = false
		if ok != wok || st != wst || !slices.Equal(cards, wcards) || tok != wok || ok && tm != wst {
			t.Fatalf("%v after %d: by domain (%v, %d, %v; time %v %d) != sweep (%v, %d, %v)", req, after, ok, st, cards, tok, tm, wok, wst, wcards)
		}
		if ok && handled {
			answered++
		}
	})
	if answered == 0 {
		t.Fatal("no request answered by domain found a start: not a test of it")
	}
}

// TestEarliestByDomainLeavesReservationsToTheSweep: a reservation made
// since the last Reset or Advance leaves the request to the sweep, which
// reads its gaps.
func TestEarliestByDomainLeavesReservationsToTheSweep(t *testing.T) {
	p := New(modeltest.Uniform(2, 4, 0).Layout())
	if err := p.Reserve([]int{0, 1}, 10, 20); err != nil {
		t.Fatal(err)
	}
	if _, _, _, handled := p.earliestByDomain(0, Request{Cards: 2, Topology: model.TopologySameNode}, true); handled {
		t.Fatal("answered by domain with a reservation in the profile")
	}
	p.Advance(0)
	if _, _, _, handled := p.earliestByDomain(0, Request{Cards: 2, Topology: model.TopologySameNode}, true); !handled {
		t.Fatal("not answered by domain once Advance undid the reservation")
	}
}

// BenchmarkEarliestStartHead: EASY's head at 65,536 cards (8-card nodes
// under 32-node switches, every card busy until a time of its own) — a
// whole-switch gang, 256 cards, 8 a node — read by domain and swept, in
// the same run (compare the two as a ratio). The sweep's event streams
// are kept from one ask to the next: its best case, where a cycle patches
// or rebuilds them first. Both place among every card free by the start,
// most of what is left of by-domain's time.
func BenchmarkEarliestStartHead(b *testing.B) {
	lay := modeltest.Uniform(8192, 8, 32).Layout()
	req := Request{Cards: 256, PerNode: 8, Topology: model.TopologySameSwitch}
	for _, sweep := range []bool{false, true} {
		name := "by-domain"
		if sweep {
			name = "sweep"
		}
		b.Run(name, func(b *testing.B) {
			p := New(lay)
			x := uint64(1)
			for c := range lay.Cards {
				x = x*6364136223846793005 + 1442695040888963407
				p.Hold(c, int64(1+x>>40%86400))
			}
			p.sweepAll = sweep
			for b.Loop() {
				if _, _, ok := p.EarliestStart(1, 3600, req); !ok {
					b.Fatal("no start")
				}
			}
		})
	}
}
