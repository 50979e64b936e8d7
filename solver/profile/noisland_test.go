package profile

import (
	"slices"
	"testing"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/model/modeltest"
)

// TestNoIslandCardsByWindow: cards without an NVLink island (PCIe boxes,
// the openb trace's nodes) are interchangeable, so within a node the
// shortest windows go first, as on a node that is one island. (They were
// taken in card order: each such card is an island of its own, and
// islands were ordered by size and name.)
func TestNoIslandCardsByWindow(t *testing.T) {
	c := modeltest.Uniform(1, 16, 0)
	for i := range c.Nodes[0].Cards {
		c.Nodes[0].Cards[i].Island = ""
	}
	if err := c.Seal(); err != nil {
		t.Fatal(err)
	}
	lay := c.Layout()
	p := New(lay)
	if err := p.Reserve([]int{13, 14}, 200, 300); err != nil {
		t.Fatal(err)
	}
	cards, out := p.FitNow(50, Request{Cards: 3})
	if out != Fits {
		t.Fatalf("outcome %v", out)
	}
	if got, want := lay.Refs(cards), []model.CardRef{{Node: "n000", Index: 0}, {Node: "n000", Index: 13}, {Node: "n000", Index: 14}}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v: the cards claimed at 200 first, then the lowest index", got, want)
	}
}
