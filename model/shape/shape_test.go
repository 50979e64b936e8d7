package shape

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/huitian/huitian/model"
)

func TestUniform(t *testing.T) {
	for _, tc := range []struct {
		name string
		u    Uniform
		// want: the node names, their switches, and the domains in order
		nodes, switches []string
		domains         []model.Domain
	}{
		{
			name:     "names padded to the last index, leaf switches under a spine",
			u:        Uniform{ID: "a", Nodes: 11, CardsPerNode: 2, NodesPerSwitch: 10, Spine: "spine", NodeName: Names{Prefix: "n"}, SwitchName: Names{Prefix: "leaf"}},
			nodes:    []string{"n00", "n01", "n02", "n03", "n04", "n05", "n06", "n07", "n08", "n09", "n10"},
			switches: []string{"leaf0", "leaf0", "leaf0", "leaf0", "leaf0", "leaf0", "leaf0", "leaf0", "leaf0", "leaf0", "leaf1"},
			domains: []model.Domain{{ID: "spine", Kind: model.DomainSwitch}, {ID: "leaf0", Kind: model.DomainSwitch, Parent: "spine"},
				{ID: "leaf1", Kind: model.DomainSwitch, Parent: "spine"}},
		},
		{
			name:     "fixed digits, no spine",
			u:        Uniform{ID: "b", Nodes: 3, CardsPerNode: 1, NodesPerSwitch: 2, NodeName: Names{Prefix: "node", Digits: 5}, SwitchName: Names{Prefix: "sw", Digits: 3}},
			nodes:    []string{"node00000", "node00001", "node00002"},
			switches: []string{"sw000", "sw000", "sw001"},
			domains:  []model.Domain{{ID: "sw000", Kind: model.DomainSwitch}, {ID: "sw001", Kind: model.DomainSwitch}},
		},
		{
			name:     "no switches",
			u:        Uniform{ID: "c", Nodes: 2, CardsPerNode: 1, NodeName: Names{Prefix: "p"}},
			nodes:    []string{"p0", "p1"},
			switches: []string{"", ""},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.u.Cluster()
			var nodes, switches []string
			for _, n := range c.Nodes {
				nodes = append(nodes, n.Name)
				sw := ""
				if len(n.Domains) > 0 {
					sw = n.Domains[0]
				}
				switches = append(switches, sw)
				if len(n.Cards) != tc.u.CardsPerNode {
					t.Errorf("%s: %d cards, want %d", n.Name, len(n.Cards), tc.u.CardsPerNode)
				}
			}
			if d := cmp.Diff(tc.nodes, nodes); d != "" {
				t.Errorf("nodes (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.switches, switches); d != "" {
				t.Errorf("switches (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.domains, c.Domains); d != "" {
				t.Errorf("domains (-want +got):\n%s", d)
			}
			if err := c.Seal(); err != nil {
				t.Errorf("seal: %v", err)
			}
		})
	}
}

func TestUniformCards(t *testing.T) {
	c := Uniform{ID: "hgx", Nodes: 2, CardsPerNode: 8, NodeName: Names{Prefix: "h"},
		Card: model.Card{Model: "H100", MemBytes: 80 << 30, Island: "nvswitch", NUMA: -1}, CardsPerNUMA: 4, UUID: "GPU-%d-%d"}.Cluster()
	got := c.Nodes[1].Cards[5]
	want := model.Card{Index: 5, UUID: "GPU-1-5", Model: "H100", MemBytes: 80 << 30, Island: "nvswitch", NUMA: 1}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("card h1/5 (-want +got):\n%s", d)
	}
	c = Uniform{ID: "x", Nodes: 1, CardsPerNode: 2, NodeName: Names{Prefix: "h"}, Card: model.Card{NUMA: -1}}.Cluster()
	if c.Nodes[0].Cards[1].NUMA != -1 {
		t.Errorf("without CardsPerNUMA every card keeps Card.NUMA: %+v", c.Nodes[0].Cards[1])
	}
	// A template of numbers alone (written field by field) and one with
	// references (copied whole): every card is the template, numbered.
	for _, tmpl := range []model.Card{{MemBytes: 5, NUMA: 3, Unhealthy: true}, {MemBytes: 5, PCIBusID: "0000:01:00.0", NVLinks: []model.NVLink{}}} {
		c = Uniform{ID: "x", Nodes: 3, CardsPerNode: 2, NodeName: Names{Prefix: "h"}, Card: tmpl}.Cluster()
		for i, nd := range c.Nodes {
			for k, got := range nd.Cards {
				want := tmpl
				want.Index = k
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("template %+v: card %d/%d (-want +got):\n%s", tmpl, i, k, d)
				}
			}
		}
	}
}

// TestNamesAll: all names every thing as name does, one by one: padded to
// the count's digits, to more, and past too few.
func TestNamesAll(t *testing.T) {
	for _, n := range []Names{{Prefix: "p"}, {Prefix: "node-", Digits: 5}, {Prefix: "n", Digits: 1}, {}} {
		for _, count := range []int{0, 1, 9, 10, 11, 101, 1000} {
			got := n.all(count)
			if len(got) != count {
				t.Fatalf("%+v, %d: %d names", n, count, len(got))
			}
			for i, name := range got {
				if want := n.name(i, count); name != want {
					t.Fatalf("%+v, %d: name %d is %q, want %q", n, count, i, name, want)
				}
			}
		}
	}
}
