package model

import (
	"fmt"
	"slices"
)

// DomainKind is what a topology domain above the node is.
type DomainKind uint8

const (
	DomainUnspecified DomainKind = iota
	// DomainSwitch is a network switch; the lowest one a node names is its leaf.
	DomainSwitch
	// DomainNVLink is a multi-node NVLink domain (for example an NVL72 rack).
	DomainNVLink
	// DomainPod is a group of switches.
	DomainPod
)

var domainKindNames = [...]string{"unspecified", "switch", "nvlink", "pod"}

func (k DomainKind) String() string {
	if int(k) < len(domainKindNames) {
		return domainKindNames[k]
	}
	return "domain(?)"
}

// Domain is an interconnect domain above the node.
type Domain struct {
	ID     string
	Kind   DomainKind
	Parent string // "" for a root
}

// NVLink is a card's NVLink connection to a peer card on the same node.
type NVLink struct {
	Peer  int // the peer card's index
	Links int
}

// Card is one accelerator as NVML describes it.
type Card struct {
	Index     int
	UUID      string
	Model     string
	MemBytes  int64
	NUMA      int
	PCIBusID  string
	NVLinks   []NVLink
	Island    string // NVLink island within the node; "" means the card is its own island
	Unhealthy bool
}

// Node is a machine with cards.
type Node struct {
	Name          string
	Cards         []Card
	Domains       []string // ids of the domains the node belongs to
	Unschedulable bool
}

// Cluster is the whole machine the planner plans for.
//
// A Cluster is treated as immutable once Seal has been called: Seal validates
// it and builds the dense Layout the planner works on, once, so that a
// simulator can plan thousands of cycles on one cluster.
type Cluster struct {
	ID      string
	Nodes   []Node
	Domains []Domain

	lay *Layout
}

// CardRef names a card by node name and card index.
type CardRef struct {
	Node  string
	Index int
}

func (r CardRef) String() string { return fmt.Sprintf("%s/%d", r.Node, r.Index) }

// Seal validates the cluster and caches its layout. It returns the problems
// found, every one of them, as a *ValidationError.
func (c *Cluster) Seal() error {
	var v problems
	c.validate(&v, "cluster")
	if err := v.err(); err != nil {
		return err
	}
	c.lay = buildLayout(c)
	return nil
}

// Sealed says whether Seal has validated the cluster and laid it out.
func (c *Cluster) Sealed() bool { return c.lay != nil }

// Layout returns the cluster's dense layout: the sealed one, or a new one
// built for this call when the cluster was not sealed.
func (c *Cluster) Layout() *Layout {
	if c.lay != nil {
		return c.lay
	}
	return buildLayout(c)
}

// Same reports whether two clusters describe the same machine, field by
// field: a service that gets the same cluster cycle after cycle plans on
// the one it sealed first, so that what its planners keep for a layout
// (a loaded profile, resolved cards) carries from one cycle to the next.
func (c *Cluster) Same(o *Cluster) bool {
	if c == o {
		return true
	}
	if c == nil || o == nil || c.ID != o.ID || !slices.Equal(c.Domains, o.Domains) || len(c.Nodes) != len(o.Nodes) {
		return false
	}
	for i := range c.Nodes {
		a, b := &c.Nodes[i], &o.Nodes[i]
		if a.Name != b.Name || a.Unschedulable != b.Unschedulable || !slices.Equal(a.Domains, b.Domains) || len(a.Cards) != len(b.Cards) {
			return false
		}
		for k := range a.Cards {
			x, y := &a.Cards[k], &b.Cards[k]
			if x.Index != y.Index || x.UUID != y.UUID || x.Model != y.Model || x.MemBytes != y.MemBytes || x.NUMA != y.NUMA ||
				x.PCIBusID != y.PCIBusID || x.Island != y.Island || x.Unhealthy != y.Unhealthy || !slices.Equal(x.NVLinks, y.NVLinks) {
				return false
			}
		}
	}
	return true
}
