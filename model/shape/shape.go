package shape

import (
	"fmt"
	"reflect"
	"strconv"

	"github.com/huitian/huitian/model"
)

// Uniform describes a uniform cluster.
type Uniform struct {
	ID                  string
	Nodes, CardsPerNode int
	// NodesPerSwitch puts consecutive nodes under leaf switches of this
	// many nodes (the last one may have fewer); 0: no switches.
	NodesPerSwitch int
	// Spine, when set, is the ID of a switch that every leaf switch hangs
	// under (listed first).
	Spine string
	// NodeName names node i of Nodes; SwitchName leaf switch i.
	NodeName, SwitchName Names
	// Card is every card (its model, memory, island, NUMA node); Index is
	// set per card.
	Card model.Card
	// CardsPerNUMA, when > 0, puts card k in NUMA node k / CardsPerNUMA
	// instead of Card.NUMA.
	CardsPerNUMA int
	// UUID, when set, is the format of card k of node i's UUID, given
	// (i, k): "GPU-%03d-%d".
	UUID string
}

// Names names the i-th of count things: Prefix, then i in decimal padded
// with zeros to Digits digits, or to the digits of count-1 when Digits is 0.
type Names struct {
	Prefix string
	Digits int
}

func (n Names) name(i, count int) string {
	d := n.Digits
	if d == 0 {
		d = len(strconv.Itoa(max(count-1, 0)))
	}
	return fmt.Sprintf("%s%0*d", n.Prefix, d, i)
}

// all names every one of count things, name(i, count) for each i, cut
// from one string when they are all as wide (a flat machine's 93,312 node
// names were as many formatted strings).
func (n Names) all(count int) []string {
	d := n.Digits
	widest := len(strconv.Itoa(max(count-1, 0)))
	if d == 0 {
		d = widest
	}
	out := make([]string, count)
	if widest > d {
		for i := range out {
			out[i] = n.name(i, count)
		}
		return out
	}
	w := len(n.Prefix) + d
	buf := make([]byte, 0, w*count)
	var num [20]byte
	for i := range count {
		buf = append(buf, n.Prefix...)
		digits := strconv.AppendInt(num[:0], int64(i), 10)
		for range d - len(digits) {
			buf = append(buf, '0')
		}
		buf = append(buf, digits...)
	}
	all := string(buf)
	for i := range out {
		out[i] = all[i*w : (i+1)*w]
	}
	return out
}

// Cluster builds the cluster, not sealed.
func (u Uniform) Cluster() *model.Cluster {
	c := &model.Cluster{ID: u.ID}
	if u.Nodes > 0 {
		c.Nodes = make([]model.Node, u.Nodes)
	}
	var leaves []string
	if k := u.NodesPerSwitch; k > 0 {
		n := (u.Nodes + k - 1) / k
		if u.Spine != "" {
			c.Domains = append(c.Domains, model.Domain{ID: u.Spine, Kind: model.DomainSwitch})
		}
		for l := range n {
			id := u.SwitchName.name(l, n)
			c.Domains = append(c.Domains, model.Domain{ID: id, Kind: model.DomainSwitch, Parent: u.Spine})
			leaves = append(leaves, id)
		}
	}
	names := u.NodeName.all(u.Nodes)
	cards := make([]model.Card, u.Nodes*u.CardsPerNode) // one array, a slice a node
	// Written in place, and the template's references only where it has
	// any: a flat 93,312-node machine's structs copied whole were a third
	// of building it (their pointers written behind the collector's
	// barrier).
	t := u.Card
	plain := reflect.DeepEqual(t, model.Card{Index: t.Index, MemBytes: t.MemBytes, NUMA: t.NUMA, Unhealthy: t.Unhealthy})
	for i := range c.Nodes {
		nd := &c.Nodes[i]
		nd.Name, nd.Cards = names[i], cards[i*u.CardsPerNode:(i+1)*u.CardsPerNode:(i+1)*u.CardsPerNode]
		if leaves != nil {
			nd.Domains = []string{leaves[i/u.NodesPerSwitch]}
		}
		for k := range nd.Cards {
			cd := &nd.Cards[k]
			if plain {
				cd.MemBytes, cd.NUMA, cd.Unhealthy = t.MemBytes, t.NUMA, t.Unhealthy
			} else {
				*cd = t
			}
			cd.Index = k
			if u.CardsPerNUMA > 0 {
				cd.NUMA = k / u.CardsPerNUMA
			}
			if u.UUID != "" {
				cd.UUID = fmt.Sprintf(u.UUID, i, k)
			}
		}
	}
	return c
}
