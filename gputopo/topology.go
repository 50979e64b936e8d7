package gputopo

import "fmt"

// Level is how far apart two cards sit on the PCIe and CPU fabric, from the
// closest (one board) to the farthest (across CPU sockets). It is what NVML's
// DeviceGetTopologyCommonAncestor reports; nvidia-smi prints it as PIX, PXB,
// PHB, NODE or SYS.
type Level uint8

const (
	// LevelUnknown: NVML could not say, or nvidia-smi showed an NVLink
	// instead (it prints NV# in place of the PCIe level).
	LevelUnknown Level = iota
	// LevelBoard: both cards on one board (a dual-GPU card).
	LevelBoard
	// LevelSingleSwitch (PIX): at most one PCIe switch between the cards.
	LevelSingleSwitch
	// LevelMultiSwitch (PXB): several PCIe switches, no host bridge.
	LevelMultiSwitch
	// LevelHostBridge (PHB): through a PCIe host bridge (the CPU).
	LevelHostBridge
	// LevelNUMANode (NODE): between host bridges within one NUMA node.
	LevelNUMANode
	// LevelSystem (SYS): across the interconnect between NUMA nodes.
	LevelSystem
)

var levelLabels = [...]string{"N/A", "BRD", "PIX", "PXB", "PHB", "NODE", "SYS"}

// String returns the label nvidia-smi uses for the level ("PIX", "SYS", …);
// "BRD" for LevelBoard, which nvidia-smi has no label for, and "N/A" for
// LevelUnknown.
func (l Level) String() string {
	if int(l) < len(levelLabels) {
		return levelLabels[l]
	}
	return fmt.Sprintf("Level(%d)", uint8(l))
}

// P2PStatus is whether two cards can read each other's memory directly
// (NVML's DeviceGetP2PStatus for reads).
type P2PStatus uint8

const (
	P2PUnknown              P2PStatus = iota // NVML did not say
	P2POK                                    // supported
	P2PChipsetNotSupported                   // CNS
	P2PGPUNotSupported                       // GNS
	P2PTopologyNotSupported                  // TNS
	P2PDisabledByRegkey                      // DIS
	P2PNotSupported                          // NS
)

var p2pLabels = [...]string{"U", "OK", "CNS", "GNS", "TNS", "DIS", "NS"}

// String returns the code `nvidia-smi topo -p2p r` uses ("OK", "CNS", …),
// and "DIS" for P2P disabled by a registry key.
func (s P2PStatus) String() string {
	if int(s) < len(p2pLabels) {
		return p2pLabels[s]
	}
	return fmt.Sprintf("P2PStatus(%d)", uint8(s))
}

// Topology is one node's GPUs and how they connect.
type Topology struct {
	// Name is the node's name as the API names it.
	Name string
	// Source says where the topology came from: "nvml" or "nvidia-smi".
	Source string
	// Cards, by Index.
	Cards []Card
	// Pairs[a][b] describes cards Cards[a] and Cards[b] (positions, not
	// indexes); it is symmetric, and Pairs[a][a] is the zero Pair.
	Pairs [][]Pair
	// Islands are the NVLink islands, every card in exactly one, in the order
	// of their lowest card index.
	Islands []Group
	// PCIe are the groups of two or more cards behind one PCIe switch (or on
	// one board), in the order of their lowest card index.
	PCIe []Group
}

// Card is one GPU of the node.
type Card struct {
	// Index is the NVML (and CUDA, with PCI bus order) device index.
	Index int
	// UUID is NVML's "GPU-…" id; empty when the source does not give it.
	UUID string
	// Model is NVML's product name (for example "NVIDIA A100-SXM4-40GB").
	Model string
	// MemBytes is the card's total memory; 0 when unknown.
	MemBytes int64
	// PCIBusID is the card's PCI address as "DDDD:BB:DD.F" in upper-case hex;
	// empty when unknown.
	PCIBusID string
	// NUMANode is the CPU NUMA node closest to the card; -1 when unknown.
	NUMANode int
	// NVLinks are the card's NVLink peers on this node by peer index, with
	// links through an NVSwitch counted as min(own, peer's) switch links.
	NVLinks []NVLink
	// SwitchLinks is how many of the card's active NVLinks end at an NVSwitch.
	SwitchLinks int
	// Island is the name of the card's NVLink island.
	Island string
	// PCIeGroup is the name of the card's PCIe switch group; empty when the
	// card shares no PCIe switch with another card.
	PCIeGroup string
	// MIG is the card's MIG mode.
	MIG MIGMode
}

// NVLink is a card's NVLink connection to one peer card.
type NVLink struct {
	Peer  int // the peer card's Index
	Links int
}

// MIGMode is a card's Multi-Instance GPU mode.
type MIGMode struct {
	Capable bool // the card supports MIG
	Enabled bool // MIG is on now
	Pending bool // MIG will be on after the next GPU reset
}

// Pair is how two cards connect.
type Pair struct {
	// Level is the PCIe common-ancestor level.
	Level Level
	// Links counts the NVLinks between the two cards: direct links plus, when
	// both reach an NVSwitch, the smaller of their switch link counts.
	Links int
	// ViaSwitch is true when some of those links go through an NVSwitch.
	ViaSwitch bool
	// P2P is the peer-to-peer read status.
	P2P P2PStatus
}

// Group is a named set of cards.
type Group struct {
	Name  string
	Cards []int // card indexes, ascending
	// NVSwitch is true for an NVLink island whose links go through NVSwitches.
	NVSwitch bool
}

// newTopology returns a topology with n cards and an n×n pair matrix.
func newTopology(node, source string, n int) *Topology {
	t := &Topology{Name: node, Source: source, Cards: make([]Card, n), Pairs: make([][]Pair, n)}
	cells := make([]Pair, n*n)
	for a := range t.Pairs {
		t.Pairs[a] = cells[a*n : (a+1)*n : (a+1)*n]
	}
	return t
}

// derive fills what follows from Cards and Pairs: each card's NVLinks, the
// NVLink islands and the PCIe switch groups. Cards must be sorted by Index.
func (t *Topology) derive() {
	n := len(t.Cards)
	// 1. Per-card NVLink peers, from the pair matrix.
	for a := range t.Cards {
		t.Cards[a].NVLinks = nil
		for b := range n {
			if p := t.Pairs[a][b]; a != b && p.Links > 0 {
				t.Cards[a].NVLinks = append(t.Cards[a].NVLinks, NVLink{Peer: t.Cards[b].Index, Links: p.Links})
			}
		}
	}
	// 2. NVLink islands: connected components over pairs with links.
	islands := t.components(func(p Pair) bool { return p.Links > 0 })
	t.Islands = t.Islands[:0]
	for i, members := range islands {
		g := Group{Name: fmt.Sprintf("nvl%d", i)}
		for _, a := range members {
			t.Cards[a].Island = g.Name
			g.Cards = append(g.Cards, t.Cards[a].Index)
			for _, b := range members {
				if t.Pairs[a][b].ViaSwitch {
					g.NVSwitch = true
				}
			}
		}
		t.Islands = append(t.Islands, g)
	}
	// 3. PCIe switch groups: cards at most one switch (or one board) apart.
	t.PCIe = t.PCIe[:0]
	for a := range t.Cards {
		t.Cards[a].PCIeGroup = ""
	}
	for _, members := range t.components(func(p Pair) bool {
		return p.Level == LevelBoard || p.Level == LevelSingleSwitch
	}) {
		if len(members) < 2 {
			continue
		}
		g := Group{Name: fmt.Sprintf("pcie%d", len(t.PCIe))}
		for _, a := range members {
			t.Cards[a].PCIeGroup = g.Name
			g.Cards = append(g.Cards, t.Cards[a].Index)
		}
		t.PCIe = append(t.PCIe, g)
	}
}

// components returns the connected components of the graph whose edges are
// the pairs for which linked is true, as ascending card positions, in the
// order of their lowest position.
func (t *Topology) components(linked func(Pair) bool) [][]int {
	n := len(t.Cards)
	root := make([]int, n)
	for a := range root {
		root[a] = a
	}
	find := func(a int) int {
		for root[a] != a {
			root[a] = root[root[a]]
			a = root[a]
		}
		return a
	}
	for a := range n {
		for b := a + 1; b < n; b++ {
			if linked(t.Pairs[a][b]) {
				ra, rb := find(a), find(b)
				// Keep the lowest position as the root, so that components
				// come out ordered by their lowest member.
				if ra < rb {
					root[rb] = ra
				} else if rb < ra {
					root[ra] = rb
				}
			}
		}
	}
	var out [][]int
	slot := make(map[int]int, n)
	for a := range n {
		r := find(a)
		i, ok := slot[r]
		if !ok {
			i = len(out)
			slot[r] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], a)
	}
	return out
}

// MIGCards returns the indexes of the cards with MIG enabled now.
func (t *Topology) MIGCards() []int {
	var out []int
	for _, c := range t.Cards {
		if c.MIG.Enabled {
			out = append(out, c.Index)
		}
	}
	return out
}
