package model

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"
)

// TestCardIDNearEqualsCardID: whatever the guess, CardIDNear answers what
// the map does, for cards that exist and for references to none.
func TestCardIDNearEqualsCardID(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := &Cluster{ID: "c"}
		for i := range rapid.IntRange(1, 8).Draw(t, "nodes") {
			nd := Node{Name: fmt.Sprintf("n%d", i)}
			for j := range rapid.IntRange(1, 4).Draw(t, "cards") {
				nd.Cards = append(nd.Cards, Card{Index: j})
			}
			c.Nodes = append(c.Nodes, nd)
		}
		if err := c.Seal(); err != nil {
			t.Fatal(err)
		}
		lay := c.Layout()
		for range 20 {
			ref := CardRef{
				Node:  fmt.Sprintf("n%d", rapid.IntRange(0, 9).Draw(t, "node")),
				Index: rapid.IntRange(-1, 4).Draw(t, "index"),
			}
			guess := rapid.IntRange(-1, len(lay.Cards)+1).Draw(t, "guess")
			wantID, wantOK := lay.CardID(ref)
			if id, ok := lay.CardIDNear(ref, guess); id != wantID || ok != wantOK {
				t.Fatalf("CardIDNear(%v, %d) = %d, %v; CardID %d, %v", ref, guess, id, ok, wantID, wantOK)
			}
		}
	})
}
