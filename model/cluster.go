package model

import "fmt"

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

// Layout returns the cluster's dense layout: the sealed one, or a new one
// built for this call when the cluster was not sealed.
func (c *Cluster) Layout() *Layout {
	if c.lay != nil {
		return c.lay
	}
	return buildLayout(c)
}
