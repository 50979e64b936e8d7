package fragment

import (
	"testing"

	"github.com/google/go-cmp/cmp"

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
	if d := got.Dominant([]int{12, 13, 14}); d != model.FragmentTemporal {
		t.Errorf("dominant = %v, want temporal", d)
	}
}
