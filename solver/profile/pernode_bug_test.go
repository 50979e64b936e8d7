package profile

import (
	"testing"

	"github.com/huitian/huitian/model"
)

// TestPerNodeEqualToCards is a failing case found by the simulator's
// decision check (sim: "3 cards on node a, the job asks for 4 per node"):
// a job with CardsPerNode == Cards and topology any asks for all its cards
// on one node, but RequestOf drops the per-node count when it equals Cards,
// and place() then spreads the job over nodes.
func TestPerNodeEqualToCards(t *testing.T) {
	c := &model.Cluster{ID: "c"}
	for _, n := range []string{"a", "b"} {
		nd := model.Node{Name: n}
		for i := range 4 {
			nd.Cards = append(nd.Cards, model.Card{Index: i})
		}
		c.Nodes = append(c.Nodes, nd)
	}
	if err := c.Seal(); err != nil {
		t.Fatal(err)
	}
	lay := c.Layout()
	p := New(lay)
	p.Hold(0, 100) // a/0 busy: node a has 3 free cards
	p.Hold(4, 100) // b/0 busy: node b has 3 free cards
	job := model.Job{ID: "j", Cards: 4, CardsPerNode: 4}
	cards, out := p.FitNow(10, RequestOf(&job))
	if out != Fits {
		return // no node has 4 free cards: not fitting is the right answer
	}
	for _, k := range cards {
		if lay.Cards[k].Node != lay.Cards[cards[0]].Node {
			t.Fatalf("RequestOf(%+v) = %+v; FitNow placed the job on %v: 4 cards per node, but on two nodes",
				job, RequestOf(&job), lay.Refs(cards))
		}
	}
}
