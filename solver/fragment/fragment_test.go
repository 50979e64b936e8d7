package fragment

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/model/modeltest"
	"github.com/huitian/huitian/solver/profile"
)

func TestClassify(t *testing.T) {
	c := modeltest.Uniform(4, 4, 0)
	if err := c.Seal(); err != nil {
		t.Fatal(err)
	}
	p := profile.New(c.Layout())
	// n000: 2 busy until 50, 2 free → intra-node leftovers.
	p.Hold(0, 50)
	p.Hold(1, 50)
	// n001: 3 busy until 50, 1 free → a cross-node single.
	p.Hold(4, 50)
	p.Hold(5, 50)
	p.Hold(6, 50)
	// n002: idle → free. n003: idle but a reservation claims 2 cards at 100
	// → those 2 temporal, the other 2 free.
	if err := p.Reserve([]int{12, 13}, 100, 200); err != nil {
		t.Fatal(err)
	}
	// A reservation on n000's busy cards after their release: temporal
	// fragments from 50 to 80 that nobody holds yet.
	if err := p.Reserve([]int{0, 1}, 80, 90); err != nil {
		t.Fatal(err)
	}
	got := Classify(p, 1000, 2)
	want := []model.FragmentClass{
		0, 0, model.FragmentIntraNode, model.FragmentIntraNode,
		0, 0, 0, model.FragmentCrossNode,
		model.FragmentFree, model.FragmentFree, model.FragmentFree, model.FragmentFree,
		model.FragmentTemporal, model.FragmentTemporal, model.FragmentFree, model.FragmentFree,
	}
	if diff := cmp.Diff(want, got.Of); diff != "" {
		t.Errorf("classes (-want +got):\n%s", diff)
	}
	wantInv := []model.FragmentSummary{
		{Class: model.FragmentFree, Cards: 6, Nodes: 2, CardSeconds: 6000},
		{Class: model.FragmentIntraNode, Cards: 2, Nodes: 1, CardSeconds: 2000},
		{Class: model.FragmentCrossNode, Cards: 1, Nodes: 1, CardSeconds: 1000},
		{Class: model.FragmentTemporal, Cards: 4, Nodes: 2, CardSeconds: 2*100 + 2*30},
	}
	if diff := cmp.Diff(wantInv, got.Inventory); diff != "" {
		t.Errorf("inventory (-want +got):\n%s", diff)
	}
	if d := (&Classes{}).Dominant([]int{12, 13, 14}); d != model.FragmentUnspecified {
		t.Errorf("nothing classified: dominant %v, want unspecified", d)
	}
	if d := got.Dominant([]int{12, 13, 14}); d != model.FragmentTemporal {
		t.Errorf("dominant = %v, want temporal", d)
	}
}

// TestClassifyOneCardNodes: nodes of one card (a flat machine's), taken
// apart from the general pass, are labelled and counted as the general
// rule labels any node's cards — here a reference written out per node —
// among nodes of several cards, busy, free, reserved and unusable cards.
func TestClassifyOneCardNodes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := &model.Cluster{ID: "mixed"}
		for i := range rapid.IntRange(1, 12).Draw(t, "nodes") {
			n := model.Node{Name: fmt.Sprintf("n%02d", i)}
			for k := range rapid.SampledFrom([]int{1, 1, 2, 4}).Draw(t, "cards") {
				n.Cards = append(n.Cards, model.Card{Index: k, Unhealthy: rapid.IntRange(0, 7).Draw(t, "unhealthy") == 0})
			}
			c.Nodes = append(c.Nodes, n)
		}
		if err := c.Seal(); err != nil {
			t.Fatal(err)
		}
		lay := c.Layout()
		p := profile.New(lay)
		for card := range lay.Cards {
			if rapid.Bool().Draw(t, "busy") {
				p.Hold(card, rapid.Int64Range(1, 50).Draw(t, "until"))
			}
		}
		for card := range lay.Cards {
			if rapid.IntRange(0, 3).Draw(t, "reserved") == 0 {
				at := rapid.Int64Range(1, 80).Draw(t, "at")
				_ = p.Reserve([]int{card}, at, at+rapid.Int64Range(1, 30).Draw(t, "len")) // overlaps refused
			}
		}
		horizon := rapid.Int64Range(10, 100).Draw(t, "horizon")
		smallest := rapid.IntRange(0, 4).Draw(t, "smallest")
		got := ClassifyInto(p, horizon, smallest, nil)

		// The reference: every node by the general rule.
		want := make([]model.FragmentClass, len(lay.Cards))
		type sum struct {
			cards int
			secs  float64
			nodes map[int]bool
		}
		sums := map[model.FragmentClass]*sum{}
		add := func(cl model.FragmentClass, node int, secs int64) {
			if sums[cl] == nil {
				sums[cl] = &sum{nodes: map[int]bool{}}
			}
			sums[cl].cards++
			sums[cl].secs += float64(secs)
			sums[cl].nodes[node] = true
		}
		for ni, n := range lay.Nodes {
			free, busy := 0, 0
			for card := n.First; card < n.First+n.Len; card++ {
				if p.FreeNow(card) {
					free++
				} else if lay.Cards[card].Usable {
					busy++
				}
			}
			for card := n.First; card < n.First+n.Len; card++ {
				switch {
				case !lay.Cards[card].Usable:
				case !p.FreeNow(card):
					rel := p.Release(card)
					if claim := p.NextClaim(card, rel); claim != profile.Forever && claim > rel && rel < horizon {
						add(model.FragmentTemporal, ni, min(claim, horizon)-rel)
					}
				default:
					w := p.Window(card, 0)
					cl := model.FragmentFree
					switch {
					case w != profile.Forever:
						cl = model.FragmentTemporal
					case free < max(smallest, 2):
						cl = model.FragmentCrossNode
					case busy > 0:
						cl = model.FragmentIntraNode
					}
					want[card] = cl
					add(cl, ni, min(w, horizon))
				}
			}
		}
		if diff := cmp.Diff(want, got.Of); diff != "" {
			t.Fatalf("labels differ (-reference +got):\n%s", diff)
		}
		var inv []model.FragmentSummary
		for _, cl := range []model.FragmentClass{model.FragmentFree, model.FragmentIntraNode, model.FragmentCrossNode, model.FragmentTemporal} {
			if s := sums[cl]; s != nil {
				inv = append(inv, model.FragmentSummary{Class: cl, Cards: s.cards, Nodes: len(s.nodes), CardSeconds: s.secs})
			}
		}
		if diff := cmp.Diff(inv, got.Inventory); diff != "" {
			t.Fatalf("inventory differs (-reference +got):\n%s", diff)
		}
	})
}
