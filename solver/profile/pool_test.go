package profile

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/model/modeltest"
)

// poolModel is a pool's state told the plain way: each busy group's
// usable cards and release, each claim, in seconds from now.
type poolModel struct {
	usable, free int
	groups       []struct{ n, end int64 }
	claims       []struct{ start, end, n int64 }
}

// avail is the cards free at t and not claimed.
func (m *poolModel) avail(t int64) int64 {
	n := int64(m.free)
	for _, g := range m.groups {
		if g.end <= t {
			n += g.n
		}
	}
	for _, c := range m.claims {
		if c.start <= t && t < c.end {
			n -= c.n
		}
	}
	return n
}

// earliest tries every second from after on: the first at which k cards
// are available for dur seconds. Past the last event nothing changes.
func (m *poolModel) earliest(after, dur int64, k int) (int64, bool) {
	last := after
	for _, g := range m.groups {
		last = max(last, g.end)
	}
	for _, c := range m.claims {
		last = max(last, c.end)
	}
	for t := after; t <= last; t++ {
		ok := true
		for s := t; s < t+dur && ok; s++ {
			ok = m.avail(s) >= int64(k)
		}
		if ok {
			return t, true
		}
	}
	return 0, false
}

// TestPoolAsCounted: over random sequences of holds, releases, starts,
// reservations and time moving on (with the starts undone, or taken up by
// jobs on their cards and the rest dropped), a Pool's answers — the cards free now,
// whether a job fits now, the earliest start of a reservation, a start's
// retention — are those of counting, second by second, what is free and
// what is claimed; its starts are on free usable cards.
func TestPoolAsCounted(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := modeltest.Uniform(rapid.SampledFrom([]int{1, 2, 5, 24, 63, 64, 65, 130}).Draw(t, "nodes"), 1, 0)
		for i := range c.Nodes {
			if i > 0 && rapid.IntRange(0, 5).Draw(t, "unhealthy") == 0 {
				c.Nodes[i].Cards[0].Unhealthy = true
			}
		}
		if err := c.Seal(); err != nil {
			t.Fatal(err)
		}
		lay := c.Layout()
		if !IsPool(lay) {
			t.Fatal("a flat machine is not a pool")
		}
		p := NewPool(lay)
		m := &poolModel{usable: lay.UsableCards, free: lay.UsableCards}
		busy := make([]bool, len(lay.Cards)) // held or started, usable or not
		type held struct {
			cards []int
			n     int64
			end   int64 // on the pool's clock
		}
		var groups []held
		var starts []held
		clock := int64(0)
		sync := func() {
			m.groups = m.groups[:0]
			for _, g := range append(append([]held(nil), groups...), starts...) {
				m.groups = append(m.groups, struct{ n, end int64 }{g.n, g.end - clock})
			}
		}
		usableOf := func(cards []int) int64 {
			n := int64(0)
			for _, k := range cards {
				if lay.Cards[k].Usable {
					n++
				}
			}
			return n
		}
		for step := range rapid.IntRange(1, 40).Draw(t, "steps") {
			switch rapid.IntRange(0, 6).Draw(t, "op") {
			case 0: // a running job on idle cards, usable or not
				var idle []int
				for k := range busy {
					if !busy[k] {
						idle = append(idle, k)
					}
				}
				if len(idle) == 0 {
					continue
				}
				cards := rapid.SliceOfNDistinct(rapid.SampledFrom(idle), 1, len(idle), rapid.ID[int]).Draw(t, "cards")
				if rapid.Bool().Draw(t, "run") {
					// A run of idle cards, usable or not, from one of
					// them on: held a word at a time when long.
					from := rapid.SampledFrom(idle).Draw(t, "from")
					cards = nil
					for c := from; c < len(busy) && !busy[c]; c++ {
						cards = append(cards, c)
					}
				}
				slices.Sort(cards) // a pool takes lists sorted (Hold)
				until := rapid.Int64Range(1, 60).Draw(t, "until")
				p.Hold(cards, until)
				for _, k := range cards {
					busy[k] = true
				}
				g := held{cards, usableOf(cards), until + clock}
				groups = append(groups, g)
				m.free -= int(g.n)
			case 1: // one ends
				if len(groups) == 0 {
					continue
				}
				i := rapid.IntRange(0, len(groups)-1).Draw(t, "ends")
				p.Release(groups[i].cards)
				for _, k := range groups[i].cards {
					busy[k] = false
				}
				m.free += int(groups[i].n)
				groups = append(groups[:i], groups[i+1:]...)
			case 2: // a start now, when it fits
				k := rapid.IntRange(1, lay.UsableCards).Draw(t, "k")
				dur := rapid.Int64Range(1, 60).Draw(t, "dur")
				sync()
				cards, out := p.FitNow(dur, Request{Cards: k})
				at, ok := m.earliest(0, dur, k)
				want := ok && at == 0
				if (out == Fits) != want {
					t.Fatalf("step %d: %d cards for %ds fit now: %v (%v), counted %v", step, k, dur, out == Fits, out, want)
				}
				if out == NoCards && m.free >= k || out == Claimed && m.free < k {
					t.Fatalf("step %d: %v with %d free for %d", step, out, m.free, k)
				}
				if !want {
					continue
				}
				// The shortest run of at least k free cards, the
				// lowest of those, when there is one.
				run, runLen, n := -1, 0, 0
				for c := 0; c <= len(busy); c++ {
					if c < len(busy) && !busy[c] && lay.Cards[c].Usable {
						n++
						continue
					}
					if n >= k && (run < 0 || n < runLen) {
						run, runLen = c-n, n
					}
					n = 0
				}
				if run >= 0 && (cards[0] != run || cards[k-1] != run+k-1) {
					t.Fatalf("step %d: %d cards on %v, want the run from %d (of %d)", step, k, cards, run, runLen)
				}
				for _, c := range cards {
					if busy[c] || !lay.Cards[c].Usable {
						t.Fatalf("step %d: start on card %d, busy or unusable", step, c)
					}
					busy[c] = true
				}
				if err := p.ReserveCount(cards, k, 0, dur); err != nil {
					t.Fatal(err)
				}
				starts = append(starts, held{cards, int64(k), dur + clock})
				m.free -= k
				sync()
				// Its retention: the first time from its end on at
				// which it would leave a claim short.
				keep := Forever
				for s := dur; s <= dur+200; s++ {
					if m.avail(s) < int64(k) {
						keep = s
						break
					}
				}
				if got := p.Retention(cards, dur); got != keep {
					t.Fatalf("step %d: retention of %d cards until %d: %d, counted %d", step, k, dur, got, keep)
				}
			case 3: // a reservation at the earliest start
				k := rapid.IntRange(1, lay.UsableCards+1).Draw(t, "k")
				dur := rapid.Int64Range(1, 60).Draw(t, "dur")
				after := rapid.Int64Range(1, 30).Draw(t, "after")
				sync()
				at, _, ok, _ := p.EarliestStartOr(after, dur, Request{Cards: k}, nil, nil)
				wat, wok := m.earliest(after, dur, k)
				if k > lay.UsableCards {
					wok = false
				}
				if ok != wok || ok && at != wat {
					t.Fatalf("step %d: earliest of %d cards for %ds after %d: %d %v, counted %d %v", step, k, dur, after, at, ok, wat, wok)
				}
				if !ok {
					continue
				}
				if err := p.ReserveCount(nil, k, at, at+dur); err != nil {
					t.Fatal(err)
				}
				m.claims = append(m.claims, struct{ start, end, n int64 }{at, at + dur, int64(k)})
			case 4: // the next cycle: starts and claims undone, time on
				dt := rapid.Int64Range(0, 40).Draw(t, "dt")
				p.Advance(dt)
				for _, g := range starts {
					for _, k := range g.cards {
						busy[k] = false
					}
					m.free += int(g.n)
				}
				starts, m.claims = starts[:0], m.claims[:0]
				clock += dt
				kept := groups[:0]
				for _, g := range groups {
					if g.end <= clock {
						for _, k := range g.cards {
							busy[k] = false
						}
						m.free += int(g.n)
						continue
					}
					kept = append(kept, g)
				}
				groups = kept
			case 6: // the next cycle, jobs on some starts: taken up where they are, the rest dropped
				dt := rapid.Int64Range(0, 40).Draw(t, "dt")
				p.AdvancePending(dt)
				clock += dt
				var again []held // taken up, but not where the start was
				for _, g := range starts {
					if !rapid.Bool().Draw(t, "taken up") {
						continue
					}
					until := rapid.Int64Range(1, 60).Draw(t, "until")
					cards := g.cards
					same := rapid.Bool().Draw(t, "same slice")
					if !same {
						cards = slices.Clone(cards) // a job's cards resolved anew: not known as the start
					}
					h := held{cards, g.n, until + clock}
					if got, want := p.TakeUp(cards, until), same && g.end > clock; got != want {
						t.Fatalf("step %d: take-up of the start on %v (ends %d, now %d, same slice %v): %v, want %v", step, g.cards, g.end, clock, same, got, want)
					} else if !got {
						again = append(again, h)
					}
					groups = append(groups, h)
				}
				p.DropStarts()
				for _, h := range again {
					p.Hold(h.cards, h.end-clock)
				}
				for i := range busy {
					busy[i] = false
				}
				m.free = lay.UsableCards
				starts, m.claims = starts[:0], m.claims[:0]
				kept := groups[:0]
				for _, g := range groups {
					if g.end <= clock {
						continue
					}
					for _, k := range g.cards {
						busy[k] = true
					}
					m.free -= int(g.n)
					kept = append(kept, g)
				}
				groups = kept
			case 5:
				if got := p.FreeCount(); got != m.free {
					t.Fatalf("step %d: %d free, counted %d", step, got, m.free)
				}
			}
		}
	})
}

// TestLazyClaimAsNamed: an exact pool that leaves its claims unread
// (SetLazyClaims) claims what one that names them claims — the same
// groups and bound — and, asked later (ClaimCards), after jobs ended and
// time moved on, names the cards the other named when it claimed them.
func TestLazyClaimAsNamed(t *testing.T) {
	unread := 0
	rapid.Check(t, func(t *rapid.T) {
		c := modeltest.Uniform(rapid.SampledFrom([]int{3, 40, 64, 65, 130}).Draw(t, "nodes"), 1, 0)
		for i := range c.Nodes {
			if i > 0 && rapid.IntRange(0, 7).Draw(t, "unhealthy") == 0 {
				c.Nodes[i].Cards[0].Unhealthy = true
			}
		}
		if err := c.Seal(); err != nil {
			t.Fatal(err)
		}
		lay := c.Layout()
		if !IsPool(lay) || !RankedByCard(lay) {
			t.Fatal("a flat machine is not a ranked pool")
		}
		named, lazy := NewPool(lay), NewPool(lay)
		named.SetExact(true)
		lazy.SetExact(true)
		lazy.SetLazyClaims(true)
		var held [][]int
		for range rapid.IntRange(1, 12).Draw(t, "cycles") {
			// Jobs on free cards, in runs and not, until a few.
			for range rapid.IntRange(0, 4).Draw(t, "jobs") {
				var free []int
				for k := range lay.Cards {
					if named.FreeBits()[k>>6]&(1<<(k&63)) != 0 || !lay.Cards[k].Usable && !slices.ContainsFunc(held, func(h []int) bool { return slices.Contains(h, k) }) {
						free = append(free, k)
					}
				}
				if len(free) == 0 {
					break
				}
				cards := rapid.SliceOfNDistinct(rapid.SampledFrom(free), 1, len(free), rapid.ID[int]).Draw(t, "cards")
				slices.Sort(cards)
				until := rapid.Int64Range(1, 50).Draw(t, "until")
				named.Hold(cards, until)
				lazy.Hold(cards, until)
				held = append(held, cards)
			}
			k := rapid.IntRange(1, max(lay.UsableCards, 1)).Draw(t, "k")
			dur := rapid.Int64Range(1, 30).Draw(t, "dur")
			req := Request{Cards: k}
			at, want, ok, _ := named.EarliestStartOr(1, dur, req, nil, nil)
			lat, got, lok, _ := lazy.EarliestStartOr(1, dur, req, nil, nil)
			if ok != lok || at != lat {
				t.Fatalf("earliest start %d %v, lazily %d %v", at, ok, lat, lok)
			}
			if !ok {
				continue
			}
			if got != nil && !slices.Equal(got, want) {
				t.Fatalf("a lazy pool named %v, the other %v", got, want)
			}
			if got == nil {
				unread++
			}
			if err := named.ReserveCount(want, k, at, at+dur); err != nil {
				t.Fatal(err)
			}
			if err := lazy.ReserveCount(got, k, at, at+dur); err != nil {
				t.Fatal(err)
			}
			ng, nok := named.ClaimGroups()
			lg, lok2 := lazy.ClaimGroups()
			if nok != lok2 || named.ClaimBound() != lazy.ClaimBound() || !cmp.Equal(ng, lg) {
				t.Fatalf("claims differ: groups %v %v bound %d, lazily %v %v bound %d", ng, nok, named.ClaimBound(), lg, lok2, lazy.ClaimBound())
			}
			// The next cycle: some jobs end, time moves on; then the
			// lazy pool is asked for the last claim's cards.
			for i := 0; i < len(held); i++ {
				if rapid.IntRange(0, 2).Draw(t, "ends") == 0 {
					named.Release(held[i])
					lazy.Release(held[i])
					held = slices.Delete(held, i, i+1)
					i--
				}
			}
			dt := rapid.Int64Range(0, 20).Draw(t, "dt")
			named.Advance(dt)
			lazy.Advance(dt)
			if rest := lazy.ClaimCards(); !slices.Equal(rest, want) {
				t.Fatalf("asked later, a lazy pool names %v, the other named %v", rest, want)
			}
		}
	})
	if unread == 0 {
		t.Fatal("no claim left unread: not a test of it")
	}
}

// TestIsPool: one usable card a node, one model, no switch.
func TestIsPool(t *testing.T) {
	seal := func(c *model.Cluster) *model.Layout {
		t.Helper()
		if err := c.Seal(); err != nil {
			t.Fatal(err)
		}
		return c.Layout()
	}
	if !IsPool(seal(modeltest.Uniform(4, 1, 0))) {
		t.Error("flat machine: not a pool")
	}
	if IsPool(seal(modeltest.Uniform(4, 2, 0))) {
		t.Error("two cards a node: a pool")
	}
	if IsPool(seal(modeltest.Uniform(4, 1, 2))) {
		t.Error("nodes under switches: a pool")
	}
	mixed := modeltest.Uniform(4, 1, 0)
	mixed.Nodes[1].Cards[0].Model = "A100"
	if IsPool(seal(mixed)) {
		t.Error("two card models: a pool")
	}
	mixed.Nodes[1].Unschedulable = true
	if !IsPool(seal(mixed)) {
		t.Error("the other model unusable: not a pool")
	}
	none := modeltest.Uniform(1, 1, 0)
	none.Nodes[0].Unschedulable = true
	if IsPool(seal(none)) {
		t.Error("no usable card: a pool")
	}
}

// TestLowestFree: the k lowest-numbered free cards from a card on, over
// free sets of long runs, scattered cards and both: a slice of the
// layout's own numbers exactly when they are consecutive, else a list of
// its own (of exactly k, or from spares of its size class), and fewer
// free than counted panics.
func TestLowestFree(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 700).Draw(t, "cards")
		c := modeltest.Uniform(n, 1, 0)
		if err := c.Seal(); err != nil {
			t.Fatal(err)
		}
		lay := c.Layout()
		free := make([]uint64, (n+63)/64)
		for range rapid.IntRange(0, 6).Draw(t, "runs") {
			first := rapid.IntRange(0, n-1).Draw(t, "first")
			for id := first; id < min(n, first+rapid.IntRange(1, 300).Draw(t, "len")); id++ {
				free[id>>6] |= 1 << (id & 63)
			}
		}
		for range rapid.IntRange(0, 20).Draw(t, "scattered") {
			id := rapid.IntRange(0, n-1).Draw(t, "card")
			free[id>>6] |= 1 << (id & 63)
		}
		from := rapid.IntRange(0, n-1).Draw(t, "from")
		var want []int
		for id := from; id < n; id++ {
			if free[id>>6]&(1<<(id&63)) != 0 {
				want = append(want, id)
			}
		}
		k := rapid.IntRange(1, len(want)+1).Draw(t, "k")
		if k > len(want) {
			defer func() {
				if recover() == nil {
					t.Fatalf("%d cards asked of %d free: no panic", k, len(want))
				}
			}()
		}
		// Spares, or none; with spares, a list handed back and made ready
		// holding numbers that must all be overwritten.
		var sp *Spares
		if rapid.Bool().Draw(t, "spares") {
			sp = &Spares{}
			sp.Retire(make([]int, 1))
			old := make([]int, 1<<rapid.IntRange(0, 10).Draw(t, "class"))
			for i := range old {
				old[i] = -1
			}
			sp.Retire(old)
			sp.Ready()
		}
		got := LowestFree(lay, free, k, from, sp)
		want = want[:k]
		if !slices.Equal(got, want) {
			t.Fatalf("LowestFree(%d from %d) = %v, want %v", k, from, got, want)
		}
		run := want[k-1]-want[0] == k-1
		if lay.RunAt(got) != run {
			t.Fatalf("LowestFree(%d from %d): a slice of the layout's numbers %v, consecutive %v", k, from, lay.RunAt(got), run)
		}
		switch c := cap(got); {
		case run:
		case sp == nil && c != k:
			t.Fatalf("LowestFree(%d): capacity %d", k, c)
		case sp != nil && (c < k || c >= 2*k && c > 1 || c&(c-1) != 0):
			t.Fatalf("LowestFree(%d) with spares: capacity %d, want the power of two from k to 2k", k, c)
		}
	})
}

// TestSpares: lists are made of exactly k until one is handed back; a
// list handed back is lent only once made ready, to a count of its size
// class alone (a capacity of 1<<c holds counts from
// 1<<(c-1)+1 to 1<<c), once; a list whose capacity is no power of two is
// kept in the class of the largest one it holds; without spares a list is
// made of exactly k.
func TestSpares(t *testing.T) {
	var sp Spares
	if a := sp.take(100); cap(a) != 100 {
		t.Fatalf("take(100) before any list was handed back: cap %d, want 100", cap(a))
	}
	sp.Retire(make([]int, 1))
	a := sp.take(100)
	if len(a) != 100 || cap(a) != 128 {
		t.Fatalf("take(100): len %d cap %d, want 100 and 128", len(a), cap(a))
	}
	sp.Retire(a)
	odd := make([]int, 100) // capacity 100: class 64
	sp.Retire(odd)
	if b := sp.take(100); &b[0] == &a[0] {
		t.Fatal("a list handed back was lent before Ready")
	}
	sp.Ready()
	if b := sp.take(64); &b[0] == &a[0] || &b[0] != &odd[0] {
		t.Fatal("take(64): not the list of capacity 100 (class 64)")
	}
	if b := sp.take(129); &b[0] == &a[0] {
		t.Fatal("a list of capacity 128 lent for 129 cards")
	}
	b := sp.take(65)
	if &b[0] != &a[0] || len(b) != 65 {
		t.Fatalf("take(65) after Ready: not the list handed back (len %d)", len(b))
	}
	if c := sp.take(65); &c[0] == &a[0] {
		t.Fatal("a list lent twice")
	}
	var none *Spares
	if d := none.take(100); len(d) != 100 || cap(d) != 100 {
		t.Fatalf("nil spares: len %d cap %d, want 100 and 100", len(d), cap(d))
	}
}
