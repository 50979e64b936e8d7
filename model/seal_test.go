package model

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

// TestSealEqualsReference: sealing was made cheaper (paths made only for
// a problem, a scan instead of a map on nodes of a few cards, no copy of
// cards already in index order); the layout and every problem reported are
// what the code before gave, over random clusters with nodes of 1–40
// cards, unsorted and duplicate indexes, named and unnamed islands, and
// NVLinks to missing peers. refValidate and refBuildLayout below are the
// code before (2c512ff), kept verbatim as the oracle: a later change to
// what sealing accepts or builds changes them too, or drops this test.
func TestSealEqualsReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := &Cluster{ID: "c", Domains: []Domain{{ID: "sw0", Kind: DomainSwitch}}}
		broken := rapid.Bool().Draw(t, "broken") // else only valid clusters
		for i := range rapid.IntRange(1, 6).Draw(t, "nodes") {
			n := Node{Name: fmt.Sprintf("n%d", i), Unschedulable: rapid.IntRange(0, 5).Draw(t, "unsched") == 0}
			if rapid.Bool().Draw(t, "sw") {
				n.Domains = []string{"sw0"}
			}
			if broken && rapid.IntRange(0, 20).Draw(t, "missingDomain") == 0 {
				n.Domains = append(n.Domains, "nowhere")
			}
			for j := range rapid.IntRange(0, 40).Draw(t, "cards") {
				cd := Card{Index: j, Model: "H100", Island: rapid.SampledFrom([]string{"", "a", "b"}).Draw(t, "island"),
					Unhealthy: rapid.IntRange(0, 5).Draw(t, "unhealthy") == 0}
				if broken {
					switch rapid.IntRange(0, 12).Draw(t, "index") {
					case 0:
						cd.Index = rapid.IntRange(-2, 45).Draw(t, "anyIndex")
					case 1:
						cd.MemBytes = -1
					}
				}
				if rapid.IntRange(0, 6).Draw(t, "nvl") == 0 {
					cd.NVLinks = []NVLink{{Peer: rapid.IntRange(-1, 45).Draw(t, "peer"), Links: rapid.IntRange(0, 2).Draw(t, "links")}}
					if !broken {
						cd.NVLinks[0] = NVLink{Peer: (j + 1) % 2, Links: 1}
					}
				}
				n.Cards = append(n.Cards, cd)
			}
			if !broken && len(n.Cards) == 1 {
				n.Cards[0].NVLinks = nil // its only peer would be itself
			}
			if rapid.Bool().Draw(t, "shuffle") {
				slices.Reverse(n.Cards)
			}
			c.Nodes = append(c.Nodes, n)
		}
		var got, want problems
		c.validate(&got, "cluster")
		c.refValidate(&want, "cluster")
		if diff := gocmp.Diff(want, got); diff != "" {
			t.Fatalf("problems differ (-before +now):\n%s", diff)
		}
		if len(got) > 0 {
			return
		}
		ref, lay := refBuildLayout(c), buildLayout(c)
		if diff := gocmp.Diff(ref, lay, gocmp.AllowUnexported(Layout{}),
			gocmp.FilterPath(func(p gocmp.Path) bool {
				s := p.String()
				return strings.HasSuffix(s, "UsableCards") || strings.HasSuffix(s, "MaxNodeUsable") || strings.HasSuffix(s, "refs")
			}, gocmp.Ignore())); diff != "" {
			t.Fatalf("layouts differ (-before +now):\n%s", diff)
		}
		// The references, made on first use: each card's, and its number by it.
		for id, r := range refRefs(c) {
			if got := lay.Ref(id); got != r {
				t.Fatalf("card %d: reference %v, want %v", id, got, r)
			}
			if got, ok := lay.CardID(r); !ok || got != id {
				t.Fatalf("card %v: number %d %v, want %d", r, got, ok, id)
			}
		}
	})
}

func (c *Cluster) refValidate(v *problems, path string) {
	if c.ID == "" {
		v.add(path+".id", "must not be empty")
	}
	if len(c.Nodes) == 0 {
		v.add(path+".nodes", "a cluster needs at least one node")
	}
	domains := make(map[string]int, len(c.Domains))
	for i, d := range c.Domains {
		p := fmt.Sprintf("%s.domains[%d]", path, i)
		if d.ID == "" {
			v.add(p+".id", "must not be empty")
		} else if j, dup := domains[d.ID]; dup {
			v.add(p+".id", "duplicate of domains[%d]", j)
		} else {
			domains[d.ID] = i
		}
		if d.Kind < DomainSwitch || d.Kind > DomainPod {
			v.add(p+".kind", "must be switch, nvlink or pod")
		}
	}
	depth, cycle := domainDepths(c.Domains, domains)
	for i, d := range c.Domains {
		if d.Parent == "" {
			continue
		}
		p := fmt.Sprintf("%s.domains[%d].parent", path, i)
		switch _, ok := domains[d.Parent]; {
		case !ok:
			v.add(p, "domain %q does not exist", d.Parent)
		case cycle[i]:
			v.add(p, "domain %q is its own ancestor", d.ID)
		case depth[i] == MaxDomainDepth+1:
			v.add(p, "domain %q is %d levels deep; domain trees are at most %d levels deep", d.ID, depth[i], MaxDomainDepth)
		}
	}
	names := make(map[string]int, len(c.Nodes))
	for i, n := range c.Nodes {
		p := fmt.Sprintf("%s.nodes[%d]", path, i)
		if n.Name == "" {
			v.add(p+".name", "must not be empty")
		} else if strings.Contains(n.Name, "/") {
			v.add(p+".name", "must not contain '/'")
		} else if j, dup := names[n.Name]; dup {
			v.add(p+".name", "duplicate of nodes[%d]", j)
		} else {
			names[n.Name] = i
		}
		if len(n.Domains) > MaxNodeDomains {
			v.add(p+".domains", "the node names %d domains; at most %d", len(n.Domains), MaxNodeDomains)
		}
		for j, d := range n.Domains {
			if _, ok := domains[d]; !ok {
				v.add(fmt.Sprintf("%s.domains[%d]", p, j), "domain %q does not exist", d)
			}
		}
		if len(n.Cards) == 0 {
			v.add(p+".cards", "a node needs at least one card")
		}
		index := make(map[int]int, len(n.Cards))
		for j, cd := range n.Cards {
			cp := fmt.Sprintf("%s.cards[%d]", p, j)
			if cd.Index < 0 {
				v.add(cp+".index", "must be ≥ 0, got %d", cd.Index)
			} else if k, dup := index[cd.Index]; dup {
				v.add(cp+".index", "card %d is also cards[%d]", cd.Index, k)
			} else {
				index[cd.Index] = j
			}
			if cd.MemBytes < 0 {
				v.add(cp+".memory_bytes", "must be ≥ 0")
			}
			if cd.NUMA < -1 {
				v.add(cp+".numa_node", "must be ≥ -1")
			}
		}
		for j, cd := range n.Cards {
			for k, l := range cd.NVLinks {
				lp := fmt.Sprintf("%s.cards[%d].nvlinks[%d]", p, j, k)
				if _, ok := index[l.Peer]; !ok || l.Peer == cd.Index {
					v.add(lp+".peer_index", "card %d is not another card of node %q", l.Peer, n.Name)
				}
				if l.Links < 1 {
					v.add(lp+".links", "must be ≥ 1")
				}
			}
		}
	}
}

// refRefs is each card's reference in layout order: node by node, by
// card index within a node.
func refRefs(c *Cluster) []CardRef {
	var out []CardRef
	for _, n := range c.Nodes {
		cards := slices.Clone(n.Cards)
		slices.SortFunc(cards, func(a, b Card) int { return cmp.Compare(a.Index, b.Index) })
		for _, cd := range cards {
			out = append(out, CardRef{Node: n.Name, Index: cd.Index})
		}
	}
	return out
}

func refBuildLayout(c *Cluster) *Layout {
	l := &Layout{numbers: []int{}}
	kind := make(map[string]DomainKind, len(c.Domains))
	parentOf := make(map[string]string, len(c.Domains))
	for _, d := range c.Domains {
		kind[d.ID] = d.Kind
		parentOf[d.ID] = d.Parent
	}
	switchIdx := map[string]int32{}
	leaf := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		leaf[i] = leafSwitch(n.Domains, kind, parentOf)
		if leaf[i] != "" {
			switchIdx[leaf[i]] = 0
		}
	}
	for id := range switchIdx {
		l.Switches = append(l.Switches, id)
	}
	slices.Sort(l.Switches)
	for i, id := range l.Switches {
		switchIdx[id] = int32(i)
	}
	for ni, n := range c.Nodes {
		sw := int32(-1)
		if leaf[ni] != "" {
			sw = switchIdx[leaf[ni]]
		}
		cards := slices.Clone(n.Cards)
		slices.SortFunc(cards, func(a, b Card) int { return cmp.Compare(a.Index, b.Index) })
		l.Nodes = append(l.Nodes, NodeLoc{Name: n.Name, First: len(l.Cards), Len: len(cards), Switch: sw})
		islands := map[string]int32{}
		for _, cd := range cards {
			isl := int32(len(l.Islands))
			if cd.Island == "" {
				l.Islands = append(l.Islands, IslandLoc{Node: int32(ni)})
			} else if got, ok := islands[cd.Island]; ok {
				isl = got
			} else {
				islands[cd.Island] = isl
				l.Islands = append(l.Islands, IslandLoc{Node: int32(ni), Name: cd.Island})
			}
			l.numbers = append(l.numbers, len(l.Cards))
			l.Cards = append(l.Cards, CardLoc{
				Node:   int32(ni),
				Island: isl,
				Index:  int32(cd.Index),
				Usable: !cd.Unhealthy && !n.Unschedulable,
				Model:  cd.Model,
			})
		}
	}
	return l
}

// TestRefsView: consecutive card numbers in order are the layout's own
// references, which ViewAt recognises; any other list, and a copy of a
// view, is converted and is not a view.
func TestRefsView(t *testing.T) {
	c := &Cluster{ID: "c"}
	for i := range 4 {
		c.Nodes = append(c.Nodes, Node{Name: fmt.Sprintf("n%d", i), Cards: []Card{{Index: 0, Model: "H100"}, {Index: 1, Model: "H100"}}})
	}
	if err := c.Seal(); err != nil {
		t.Fatal(err)
	}
	lay := c.Layout()
	for _, tc := range []struct {
		ids  []int
		view bool
	}{{[]int{2, 3, 4}, true}, {[]int{7}, true}, {[]int{2, 4}, false}, {[]int{3, 2, 4}, false}, {[]int{1, 2, 2, 3}, false}} {
		refs := lay.RefsView(tc.ids)
		if diff := gocmp.Diff(lay.Refs(tc.ids), refs); diff != "" {
			t.Errorf("%v: RefsView differs from Refs (-Refs +view):\n%s", tc.ids, diff)
		}
		first, ok := lay.ViewAt(refs)
		if ok != tc.view || ok && first != tc.ids[0] {
			t.Errorf("%v: ViewAt %d %v, want a view %v", tc.ids, first, ok, tc.view)
		}
		if _, ok := lay.ViewAt(slices.Clone(refs)); ok {
			t.Errorf("%v: a copy is a view", tc.ids)
		}
		if tc.view {
			run := lay.Run(tc.ids[0], len(tc.ids))
			if !slices.Equal(run, tc.ids) {
				t.Errorf("%v: Run gives %v", tc.ids, run)
			}
			// A run is known as one without reading it; a copy of it,
			// or the numbers themselves, are read.
			if !lay.RunAt(run) || lay.RunAt(tc.ids) || !lay.RunAt(run[len(run)-1:]) {
				t.Errorf("%v: RunAt %v on the run, %v on the list", tc.ids, lay.RunAt(run), lay.RunAt(tc.ids))
			}
		}
		var runs [][2]int
		for first, end := range lay.Runs(tc.ids) {
			runs = append(runs, [2]int{first, end})
		}
		if tc.view && !slices.Equal(runs, [][2]int{{tc.ids[0], tc.ids[0] + len(tc.ids)}}) {
			t.Errorf("%v: Runs gives %v", tc.ids, runs)
		}
	}
	if lay.RunAt(nil) || lay.RunAt([]int{-1}) {
		t.Error("RunAt: an empty list or an unknown number is a run of the layout's")
	}
}
