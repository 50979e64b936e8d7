package profile

import (
	"fmt"
	"slices"
	"testing"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/model/modeltest"
	"pgregory.net/rapid"
)

// randomCluster draws a small cluster: nodes of 1–8 cards, islands of 1, 2
// or the whole node, some nodes under switches, some cards unusable.
func randomCluster(t *rapid.T) *model.Cluster {
	n := rapid.IntRange(1, 6).Draw(t, "nodes")
	c := &model.Cluster{ID: "r", Domains: []model.Domain{{ID: "swA", Kind: model.DomainSwitch}, {ID: "swB", Kind: model.DomainSwitch}}}
	for i := range n {
		nd := model.Node{Name: fmt.Sprintf("n%d", i)}
		switch rapid.IntRange(0, 2).Draw(t, "sw") {
		case 0:
			nd.Domains = []string{"swA"}
		case 1:
			nd.Domains = []string{"swB"}
		}
		k := rapid.IntRange(1, 8).Draw(t, "cards")
		isl := rapid.IntRange(0, 2).Draw(t, "islands")
		for j := range k {
			cd := model.Card{Index: j, Model: rapid.SampledFrom([]string{"A", "B"}).Draw(t, "model")}
			switch isl {
			case 1:
				cd.Island = fmt.Sprintf("p%d", j/2)
			case 2:
				cd.Island = "all"
			}
			cd.Unhealthy = rapid.IntRange(0, 9).Draw(t, "unhealthy") == 0
			nd.Cards = append(nd.Cards, cd)
		}
		nd.Unschedulable = rapid.IntRange(0, 9).Draw(t, "unsched") == 0
		c.Nodes = append(c.Nodes, nd)
	}
	if err := c.Seal(); err != nil {
		t.Fatal(err)
	}
	return c
}

func randomRequest(t *rapid.T, label string) Request {
	r := Request{
		Cards:    rapid.IntRange(1, 12).Draw(t, label+".cards"),
		Topology: model.Topology(rapid.IntRange(0, 3).Draw(t, label+".topo")),
	}
	if (r.Topology == model.TopologyAny || r.Topology == model.TopologySameSwitch) && rapid.Bool().Draw(t, label+".pernode") {
		r.PerNode = rapid.SampledFrom([]int{1, 2, 4}).Draw(t, label+".per")
		r.Cards = r.PerNode * rapid.IntRange(1, 3).Draw(t, label+".nodes")
	}
	if rapid.IntRange(0, 4).Draw(t, label+".hasmodel") == 0 {
		r.Model = "A"
	}
	return r
}

// checkShape verifies cards satisfy the request's topology and are distinct.
func checkShape(t interface{ Fatalf(string, ...any) }, lay *model.Layout, req Request, cards []int) {
	if len(cards) != req.Cards {
		t.Fatalf("got %d cards, want %d", len(cards), req.Cards)
	}
	seen := map[int]bool{}
	perNode := map[int32]int{}
	islands := map[int32]bool{}
	groups := map[string]bool{}
	for _, c := range cards {
		if seen[c] {
			t.Fatalf("card %d twice", c)
		}
		seen[c] = true
		loc := lay.Cards[c]
		if !loc.Usable {
			t.Fatalf("card %d unusable", c)
		}
		if req.Model != "" && loc.Model != req.Model {
			t.Fatalf("card %d model %s, want %s", c, loc.Model, req.Model)
		}
		perNode[loc.Node]++
		islands[loc.Island] = true
		sw := lay.Nodes[loc.Node].Switch
		if sw >= 0 {
			groups[lay.Switches[sw]] = true
		} else {
			groups["node:"+lay.Nodes[loc.Node].Name] = true
		}
	}
	if req.PerNode > 0 {
		for n, k := range perNode {
			if k != req.PerNode {
				t.Fatalf("node %d holds %d cards, want %d per node", n, k, req.PerNode)
			}
		}
	}
	switch req.Topology {
	case model.TopologySameNode:
		if len(perNode) != 1 {
			t.Fatalf("same-node job on %d nodes", len(perNode))
		}
	case model.TopologySameIsland:
		if len(islands) != 1 {
			t.Fatalf("same-island job on %d islands", len(islands))
		}
	case model.TopologySameSwitch:
		if len(groups) != 1 {
			t.Fatalf("same-switch job under %d switches", len(groups))
		}
	}
}

// randomBusyProfile draws a random cluster with random cards busy.
func randomBusyProfile(t *rapid.T) *Profile {
	c := randomCluster(t)
	lay := c.Layout()
	p := New(lay)
	for card := range lay.Cards {
		if rapid.Bool().Draw(t, "busy") {
			p.Hold(card, int64(rapid.IntRange(1, 50).Draw(t, "until")))
		}
	}
	return p
}

// reserveRandomly reserves up to four random requests where EarliestStart
// puts them.
func reserveRandomly(t *rapid.T, p *Profile) {
	for i := range rapid.IntRange(0, 4).Draw(t, "reservations") {
		req := randomRequest(t, fmt.Sprintf("res%d", i))
		dur := int64(rapid.IntRange(1, 40).Draw(t, "resdur"))
		if st, cards, ok := p.EarliestStart(int64(rapid.IntRange(0, 30).Draw(t, "after")), dur, req); ok {
			if err := p.Reserve(cards, st, st+dur); err != nil {
				t.Fatalf("reserve what EarliestStart found: %v", err)
			}
		}
	}
}

// TestEarliestStartMatchesBrute: the sweep and the exhaustive search agree
// on time and cards, over random clusters, busy cards and reservations.
func TestEarliestStartMatchesBrute(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := randomBusyProfile(t)
		lay := p.Layout()
		reserveRandomly(t, p)
		req := randomRequest(t, "req")
		after := int64(rapid.IntRange(0, 60).Draw(t, "after"))
		dur := int64(rapid.IntRange(1, 60).Draw(t, "dur"))
		st, cards, ok := p.EarliestStart(after, dur, req)
		bst, bcards, bok := p.EarliestStartBrute(after, dur, req)
		if tt, tok := p.EarliestTime(after, dur, req); tok != ok || tt != st {
			t.Fatalf("EarliestTime (%v, %d) != EarliestStart (%v, %d)", tok, tt, ok, st)
		}
		if ok != bok || st != bst || !slices.Equal(cards, bcards) {
			t.Fatalf("sweep (%v, %d, %v) != brute (%v, %d, %v)", ok, st, cards, bok, bst, bcards)
		}
		if ok {
			if st < after {
				t.Fatalf("start %d before after %d", st, after)
			}
			checkShape(t, lay, req, cards)
			for _, c := range cards {
				if !p.FreeOver(c, st, st+dur) {
					t.Fatalf("card %d not free over [%d,%d)", c, st, st+dur)
				}
			}
		}
		if ok != p.CanEverFit(req) && after == 0 {
			// With every busy span finite, a job that can ever fit fits eventually.
			t.Fatalf("EarliestStart ok=%v but CanEverFit=%v", ok, !ok)
		}
	})
}

// TestFitNowAgreesWithEarliestStart: FitNow finds cards exactly when the
// sweep says the job can start at 0, and they are free for the duration.
func TestFitNowAgreesWithEarliestStart(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := randomBusyProfile(t)
		lay := p.Layout()
		for i := range rapid.IntRange(0, 3).Draw(t, "reservations") {
			req := randomRequest(t, fmt.Sprintf("res%d", i))
			dur := int64(rapid.IntRange(1, 40).Draw(t, "resdur"))
			if st, cards, ok := p.EarliestStart(1, dur, req); ok {
				_ = p.Reserve(cards, st, st+dur)
			}
		}
		req := randomRequest(t, "req")
		dur := int64(rapid.IntRange(1, 60).Draw(t, "dur"))
		cards, out := p.FitNow(dur, req)
		st, _, ok := p.EarliestStart(0, dur, req)
		if (out == Fits) != (ok && st == 0) {
			t.Fatalf("FitNow %v but EarliestStart (%v, %d)", out, ok, st)
		}
		if out == Fits {
			checkShape(t, lay, req, cards)
			for _, c := range cards {
				if !p.FreeOver(c, 0, dur) {
					t.Fatalf("card %d not free over [0,%d)", c, dur)
				}
			}
		}
	})
}

func TestBestFit(t *testing.T) {
	c := modeltest.Uniform(3, 8, 0)
	if err := c.Seal(); err != nil {
		t.Fatal(err)
	}
	lay := c.Layout()
	p := New(lay)
	// n000: 6 busy (2 free), n001: 4 busy (4 free), n002: all free.
	for i := 0; i < 6; i++ {
		p.Hold(i, 100)
	}
	for i := 8; i < 12; i++ {
		p.Hold(i, 100)
	}
	tests := []struct {
		name string
		req  Request
		want []model.CardRef
	}{
		{"two cards go to the node with two free", Request{Cards: 2, Topology: model.TopologySameNode}, modeltest.Refs("n000", 6, 2)},
		{"three cards go to the node with four free", Request{Cards: 3}, modeltest.Refs("n001", 4, 3)},
		{"eight cards need the empty node", Request{Cards: 8, Topology: model.TopologySameNode}, modeltest.Refs("n002", 0, 8)},
		{"ten cards spread over the fewest nodes, the rest by best fit", Request{Cards: 10}, append(modeltest.Refs("n000", 6, 2), modeltest.Refs("n002", 0, 8)...)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cards, out := p.FitNow(50, tc.req)
			if out != Fits {
				t.Fatalf("outcome %v", out)
			}
			if got := lay.Refs(cards); !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestFastFitMatchesScan: the node index picks exactly the cards a scan of
// every free card picks (an allow filter that accepts everything forces
// the scan).
func TestFastFitMatchesScan(t *testing.T) {
	all := func(int) bool { return true }
	rapid.Check(t, func(t *rapid.T) {
		p := randomBusyProfile(t)
		p.SetAlignEnds(rapid.Bool().Draw(t, "align"))
		for i := range rapid.IntRange(0, 3).Draw(t, "reservations") {
			req := randomRequest(t, fmt.Sprintf("res%d", i))
			dur := int64(rapid.IntRange(1, 40).Draw(t, "resdur"))
			if st, cards, ok := p.EarliestStart(1, dur, req); ok {
				if rapid.Bool().Draw(t, "protect") {
					_ = p.ReserveProtect(cards, st, st+dur)
				} else {
					_ = p.Reserve(cards, st, st+dur)
				}
			}
		}
		for i := range rapid.IntRange(1, 6).Draw(t, "jobs") {
			req := randomRequest(t, fmt.Sprintf("job%d", i))
			dur := int64(rapid.IntRange(1, 60).Draw(t, "dur"))
			fast, fo := p.FitNow(dur, req)
			slow, so := p.FitNowWhere(dur, req, all)
			if fo != so || !slices.Equal(fast, slow) {
				t.Fatalf("index: %v %v, scan: %v %v", fo, fast, so, slow)
			}
			if fo == Fits && rapid.Bool().Draw(t, "start") {
				if err := p.Reserve(fast, 0, dur); err != nil {
					t.Fatal(err)
				}
			}
			if fo == Fits && rapid.Bool().Draw(t, "later") {
				if st, cards, ok := p.EarliestStart(1, dur, req); ok {
					_ = p.Reserve(cards, st, st+dur)
				}
			}
			checkFreeLists(t, p)
		}
	})
}

// checkFreeLists: the kept free list, less its stale entries, equals a
// rebuild.
func checkFreeLists(t *rapid.T, p *Profile) {
	if p.freeDirty {
		return
	}
	var kept []int
	for _, c := range p.free {
		if p.FreeNow(c) {
			kept = append(kept, c)
		}
	}
	p.freeDirty = true
	p.refreshFree()
	if !slices.Equal(kept, p.free) {
		t.Fatalf("kept free %v, rebuilt %v", kept, p.free)
	}
}

// randomShapes draws the few request shapes a cache test asks again and
// again.
func randomShapes(t *rapid.T) []Request {
	shapes := make([]Request, rapid.IntRange(1, 3).Draw(t, "shapes"))
	for i := range shapes {
		shapes[i] = randomRequest(t, fmt.Sprintf("shape%d", i))
	}
	return shapes
}

// TestFitNowFailureCache: FitNow answering from a remembered failure gives
// what a fresh search gives, over random sequences of the same few shapes
// asked with various durations between starts and reservations — a
// failure for want of cards or of the shape answering shorter jobs too.
func TestFitNowFailureCache(t *testing.T) {
	hits, shorter := 0, 0
	rapid.Check(t, func(t *rapid.T) {
		p := randomBusyProfile(t)
		shapes := randomShapes(t)
		type asked struct{ gen, dur int64 }
		failed := map[Request]asked{} // the shortest failed ask of each shape, at its state
		for range rapid.IntRange(1, 30).Draw(t, "asks") {
			req := rapid.SampledFrom(shapes).Draw(t, "req")
			dur := int64(rapid.IntRange(1, 60).Draw(t, "dur"))
			if f, ok := p.failureOf(req); ok && f.gen == p.gen && dur >= f.dur {
				hits++
				if a, ok := failed[req]; ok && a.gen == p.gen && dur < a.dur {
					shorter++
				}
			}
			got, out := p.FitNow(dur, req)
			want, wout := p.fitNow(dur, req, nil)
			if out != wout || !slices.Equal(got, want) {
				t.Fatalf("FitNow(%d, %v) = %v %v, a fresh search %v %v", dur, req, out, got, wout, want)
			}
			if a, ok := failed[req]; out != Fits && (!ok || a.gen != p.gen || dur < a.dur) {
				failed[req] = asked{p.gen, dur}
			}
			switch rapid.IntRange(0, 3).Draw(t, "then") {
			case 0:
				if out == Fits {
					if err := p.Reserve(got, 0, dur); err != nil {
						t.Fatal(err)
					}
				}
			case 1:
				if st, cards, ok := p.EarliestStart(1, dur, req); ok {
					_ = p.Reserve(cards, st, st+dur)
				}
			}
		}
	})
	if hits == 0 || shorter == 0 {
		t.Fatalf("%d asks answered from a remembered failure, %d of them shorter than it: the test checks nothing", hits, shorter)
	}
}

// TestEarliestStartOrStops: the sweep asks its stop function once before
// it builds the event streams and once every stopEvery events; it gives up
// at the first true answer, and with none it answers as EarliestStart.
func TestEarliestStartOrStops(t *testing.T) {
	lay := modeltest.Uniform(4096, 1, 0).Layout()
	p := New(lay)
	p.sweepAll = true // the sweep itself, not earliestFlat's shortcut
	for c := range lay.Cards {
		p.Hold(c, int64(c+1)) // 4,096 distinct release times
	}
	req := Request{Cards: 4000}
	wantT, wantCards, wantOK := p.EarliestStart(1, 60, req)
	if !wantOK {
		t.Fatal("no start for 4,000 cards of 4,096")
	}
	asks := 0
	never := func() bool { asks++; return false }
	gotT, gotCards, ok, stopped := p.EarliestStartOr(1, 60, req, never, nil)
	if stopped || !ok || gotT != wantT || !slices.Equal(gotCards, wantCards) {
		t.Fatalf("never stopped: %d %v %v %v, want %d %v", gotT, len(gotCards), ok, stopped, wantT, len(wantCards))
	}
	// One before the streams, then one per stopEvery of the ~4,000 events
	// up to the start.
	if asks < 1+3 {
		t.Fatalf("asked %d times, want one before the streams and one per %d events", asks, stopEvery)
	}
	for _, at := range []int{1, 2, asks} {
		n := 0
		_, cards, ok, stopped := p.EarliestStartOr(1, 60, req, func() bool { n++; return n == at }, nil)
		if !stopped || ok || cards != nil || n != at {
			t.Fatalf("stop at ask %d: stopped %v ok %v after %d asks", at, stopped, ok, n)
		}
		// EarliestTimeOr (huitian's estimated starts) stops alike.
		n = 0
		if st, ok, stopped := p.EarliestTimeOr(1, 60, req, func() bool { n++; return n == at }); !stopped || ok || st != 0 || n != at {
			t.Fatalf("time, stop at ask %d: %d, stopped %v ok %v after %d asks", at, st, stopped, ok, n)
		}
	}
	if st, ok, stopped := p.EarliestTimeOr(1, 60, req, func() bool { return false }); stopped || !ok || st != wantT {
		t.Fatalf("time, never stopped: %d %v %v, want %d", st, ok, stopped, wantT)
	}
}

// TestEarliestTimeMonotoneInDuration: for one request and one earliest
// allowed start, a longer runtime never starts sooner, and never before
// after; a job that never fits for a runtime never fits for a longer one.
// huitian's estimated starts answer runtimes between two asked from them.
func TestEarliestTimeMonotoneInDuration(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := randomBusyProfile(t)
		reserveRandomly(t, p)
		req := randomRequest(t, "req")
		after := int64(rapid.IntRange(0, 60).Draw(t, "after"))
		last, lastOK := after, true
		for dur := int64(1); dur <= 80; dur++ {
			st, ok := p.EarliestTime(after, dur, req)
			if ok && !lastOK {
				t.Fatalf("dur %d starts at %d, a shorter one never", dur, st)
			}
			if ok && st < last {
				t.Fatalf("dur %d starts at %d, before a shorter one's %d (after %d)", dur, st, last, after)
			}
			last, lastOK = st, ok
		}
	})
}

// TestCanEverFitCacheAgrees: a profile that answered many requests (its
// caches, dense and mapped, filled) answers each as a new profile of the
// same cluster does.
func TestCanEverFitCacheAgrees(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := randomCluster(t)
		lay := c.Layout()
		kept := New(lay)
		for i := range rapid.IntRange(1, 40).Draw(t, "asks") {
			req := randomRequest(t, fmt.Sprintf("req%d", i))
			if got, want := kept.CanEverFit(req), New(lay).CanEverFit(req); got != want {
				t.Fatalf("ask %d, %v: the kept profile says %v, a new one %v", i, req, got, want)
			}
		}
	})
}

// TestFitNowAnyAfterTaking: FitNowAny, which answers from a failure noted
// before later starts, holds and reservations, gives what a fresh search
// gives, over random sequences that also free cards (Set, Advance, Reset).
func TestFitNowAnyAfterTaking(t *testing.T) {
	older := 0
	rapid.Check(t, func(t *rapid.T) {
		p := randomBusyProfile(t)
		shapes := randomShapes(t)
		for range rapid.IntRange(1, 40).Draw(t, "asks") {
			req := rapid.SampledFrom(shapes).Draw(t, "req")
			dur := int64(rapid.IntRange(1, 60).Draw(t, "dur"))
			if f, ok := p.failureOf(req); ok && f.grew == p.grew && f.gen != p.gen && dur >= f.dur {
				older++
			}
			want, wout := p.fitNow(dur, req, nil)
			got, fits := p.FitNowAny(dur, req)
			if fits != (wout == Fits) || !slices.Equal(got, want) {
				t.Fatalf("FitNowAny(%d, %v) = %v %v, a fresh search %v %v", dur, req, fits, got, wout, want)
			}
			card := rapid.IntRange(0, len(p.rel)-1).Draw(t, "card")
			switch rapid.IntRange(0, 7).Draw(t, "then") {
			case 0, 1:
				if fits {
					if err := p.Reserve(got, 0, dur); err != nil {
						t.Fatal(err)
					}
				}
			case 2:
				if st, cards, ok := p.EarliestStart(1, dur, req); ok {
					_ = p.Reserve(cards, st, st+dur)
				}
			case 3:
				p.Hold(card, int64(rapid.IntRange(1, 50).Draw(t, "until")))
			case 4:
				p.Set(card, int64(rapid.IntRange(0, 50).Draw(t, "set")))
			case 5:
				p.Advance(int64(rapid.IntRange(0, 20).Draw(t, "dt")))
			case 6:
				if rapid.IntRange(0, 9).Draw(t, "reset") == 0 {
					p.Reset()
				}
			}
		}
	})
	if older == 0 {
		t.Fatal("no ask was answered from a failure of an older state: the test checks nothing")
	}
}

// TestProtectDrawsNoBackfill: a reservation claims a whole free node
// later; a one-card job goes to that node first when the reservation is
// the head's (Reserve: temporal fragments first), and to the best fit of
// the unclaimed cards when it only protects a large job
// (ReserveProtect), leaving the node whole; either way no job runs into
// the reservation.
func TestProtectDrawsNoBackfill(t *testing.T) {
	lay := modeltest.Uniform(2, 8, 0).Layout()
	one := Request{Cards: 1, Topology: model.TopologyAny}
	for _, protect := range []bool{false, true} {
		p := New(lay)
		for c := 8; c < 12; c++ { // n001 half busy
			p.Hold(c, 500)
		}
		node0 := []int{0, 1, 2, 3, 4, 5, 6, 7}
		reserve := p.Reserve
		if protect {
			reserve = p.ReserveProtect
		}
		if err := reserve(node0, 1000, 2000); err != nil {
			t.Fatal(err)
		}
		cards, out := p.FitNow(100, one)
		if out != Fits {
			t.Fatalf("protect %v: %v", protect, out)
		}
		if want := lay.Cards[cards[0]].Node; protect && want != 1 || !protect && want != 0 {
			t.Fatalf("protect %v: the job went to node %d", protect, want)
		}
		// Too long for node 0's window either way: only node 1 holds it.
		long, _ := p.FitNow(1500, Request{Cards: 5, Topology: model.TopologySameNode})
		if long != nil {
			t.Fatalf("protect %v: a 5-card job of 1500 s placed on %v, into the reservation", protect, long)
		}
	}
}

// TestProtectedCardsPlaceAsUnclaimed: jobs short enough to end before any
// protecting reservation (ReserveProtect) are placed exactly as they are
// in the same profile without those reservations, by the index and by
// the scan: such a reservation only keeps longer jobs off its cards.
func TestProtectedCardsPlaceAsUnclaimed(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := randomCluster(t)
		lay := c.Layout()
		with, without := New(lay), New(lay)
		for card := range lay.Cards {
			if rapid.Bool().Draw(t, "busy") {
				until := int64(rapid.IntRange(1, 50).Draw(t, "until"))
				with.Hold(card, until)
				without.Hold(card, until)
			}
		}
		first := Forever
		for i := range rapid.IntRange(0, 4).Draw(t, "reservations") {
			req := randomRequest(t, fmt.Sprintf("res%d", i))
			dur := int64(rapid.IntRange(1, 40).Draw(t, "resdur"))
			st, cards, ok := with.EarliestStart(int64(rapid.IntRange(1, 60).Draw(t, "after")), dur, req)
			if !ok {
				continue
			}
			if rapid.Bool().Draw(t, "protect") {
				if err := with.ReserveProtect(cards, st, st+dur); err != nil {
					t.Fatal(err)
				}
				first = min(first, st)
				continue
			}
			if err := with.Reserve(cards, st, st+dur); err != nil {
				t.Fatal(err)
			}
			if err := without.Reserve(cards, st, st+dur); err != nil {
				t.Fatal(err)
			}
		}
		all := func(int) bool { return true }
		for i := range rapid.IntRange(1, 6).Draw(t, "jobs") {
			req := randomRequest(t, fmt.Sprintf("job%d", i))
			dur := int64(rapid.IntRange(1, int(min(first, 80))).Draw(t, "dur"))
			got, gout := with.FitNow(dur, req)
			want, wout := without.FitNow(dur, req)
			if gout != wout || !slices.Equal(got, want) {
				t.Fatalf("job %d (%v, %d s): with protecting reservations %v %v, without %v %v", i, req, dur, gout, got, wout, want)
			}
			scan, _ := with.FitNowWhere(dur, req, all)
			if !slices.Equal(scan, want) {
				t.Fatalf("job %d: the scan placed %v, without protecting reservations %v", i, scan, want)
			}
			if gout == Fits {
				if err := with.Reserve(got, 0, dur); err != nil {
					t.Fatal(err)
				}
				if err := without.Reserve(got, 0, dur); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
}

// TestAlignEndsGathersLongJobs, by hand: three 8-card nodes, n000 with one
// card busy until 1000, n001 with six busy until 50, n002 empty. Best fit
// puts every one-card job on n001 (two free cards). Aligned, a job of
// 900 s goes to n000, whose busy time it does not extend, rather than keep
// n001 busy 850 s longer; a job of 40 s extends neither and goes by best
// fit to n001; a job of 2000 s extends n000 least (by 1000 s); a 4-card
// job of 900 s fits in n000 and n002 only, and takes n000. The index
// (FitNow) and the scan agree on each.
func TestAlignEndsGathersLongJobs(t *testing.T) {
	lay := modeltest.Uniform(3, 8, 0).Layout()
	load := func(align bool) *Profile {
		p := New(lay)
		p.SetAlignEnds(align)
		p.Hold(0, 1000)
		for c := 8; c < 14; c++ {
			p.Hold(c, 50)
		}
		return p
	}
	one := Request{Cards: 1, Topology: model.TopologyAny}
	four := Request{Cards: 4, Topology: model.TopologySameNode}
	all := func(int) bool { return true }
	for _, tc := range []struct {
		align bool
		dur   int64
		req   Request
		node  int32
	}{
		{false, 900, one, 1},
		{false, 2000, one, 1},
		{false, 900, four, 0}, // n000: 7 free, n002: 8
		{true, 900, one, 0},
		{true, 40, one, 1},
		{true, 2000, one, 0},
		{true, 900, four, 0},
		{true, 40, four, 0}, // no extension on n000; n002's is 40 s
	} {
		p := load(tc.align)
		fast, fo := p.FitNow(tc.dur, tc.req)
		slow, so := p.FitNowWhere(tc.dur, tc.req, all)
		if fo != Fits || so != Fits || !slices.Equal(fast, slow) {
			t.Fatalf("align %v, %d s %v: index %v %v, scan %v %v", tc.align, tc.dur, tc.req, fast, fo, slow, so)
		}
		if got := lay.Cards[fast[0]].Node; got != tc.node {
			t.Errorf("align %v, %d s %v: node %d, want %d", tc.align, tc.dur, tc.req, got, tc.node)
		}
	}
}
