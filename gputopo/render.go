package gputopo

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// legend explains the matrix cells, in nvidia-smi's words where it has them.
const legend = `Legend:
  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)
  PIX  = Connection traversing at most a single PCIe bridge
  BRD  = Both GPUs on one board
  NV#  = Connection traversing a bonded set of # NVLinks (through NVSwitches where the island says so)
  N/A  = Not known
  Island = NVLink island (cards connected by NVLink); NUMA = closest CPU NUMA node (-1: not known)
  PCIe = group of cards behind one PCIe switch (-: shares none)
`

// cell is what the matrix shows for cards a and b (positions).
func (t *Topology) cell(a, b int) string {
	if a == b {
		return "X"
	}
	p := t.Pairs[a][b]
	if p.Links > 0 {
		return "NV" + strconv.Itoa(p.Links)
	}
	return p.Level.String()
}

// WriteText writes the readable view: a matrix like `nvidia-smi topo -m`
// with island, NUMA and PCIe group columns, then the cards, the islands, the
// PCIe groups, a P2P matrix when NVML refused P2P between some cards, the
// MIG state and a legend.
func (t *Topology) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Node %s: %s (from %s)\n\n", t.Name, plural(len(t.Cards), "GPU"), t.Source)

	// 1. The matrix.
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, c := range t.Cards {
		fmt.Fprintf(tw, "\tGPU%d", c.Index)
	}
	fmt.Fprint(tw, "\tIsland\tNUMA\tPCIe\n")
	for a, c := range t.Cards {
		fmt.Fprintf(tw, "GPU%d", c.Index)
		for bb := range t.Cards {
			fmt.Fprintf(tw, "\t%s", t.cell(a, bb))
		}
		fmt.Fprintf(tw, "\t%s\t%d\t%s\n", c.Island, c.NUMANode, orDash(c.PCIeGroup))
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	// 2. The cards, when the source says more than their index.
	if t.knowsCards() {
		if err := t.writeCards(&b); err != nil {
			return err
		}
	}

	// 3. Islands and PCIe groups.
	b.WriteString("\nNVLink islands:\n")
	for _, g := range t.Islands {
		how := "NVLink"
		switch {
		case len(g.Cards) == 1:
			how = "no NVLink"
		case g.NVSwitch:
			how = "NVSwitch"
		}
		fmt.Fprintf(&b, "  %s  %s  (%s)\n", g.Name, cardList(g.Cards), how)
	}
	if len(t.PCIe) > 0 {
		b.WriteString("\nPCIe switch groups:\n")
		for _, g := range t.PCIe {
			fmt.Fprintf(&b, "  %s  %s\n", g.Name, cardList(g.Cards))
		}
	}

	// 4. P2P reads, when NVML said no to some, and MIG.
	if t.someP2PRefused() {
		b.WriteString("\nP2P read (OK; CNS/GNS/TNS = chipset/GPU/topology not supported; NS = not supported; DIS = disabled; U = unknown):\n")
		tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		for _, c := range t.Cards {
			fmt.Fprintf(tw, "\tGPU%d", c.Index)
		}
		fmt.Fprint(tw, "\n")
		for a, c := range t.Cards {
			fmt.Fprintf(tw, "GPU%d", c.Index)
			for bb := range t.Cards {
				s := "X"
				if a != bb {
					s = t.Pairs[a][bb].P2P.String()
				}
				fmt.Fprintf(tw, "\t%s", s)
			}
			fmt.Fprint(tw, "\n")
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if mig := t.MIGCards(); len(mig) > 0 {
		fmt.Fprintf(&b, "\nMIG is enabled on %s: huitian plans whole cards and will not describe this node until MIG is off.\n", cardList(mig))
	}
	b.WriteString("\n" + legend)
	_, err := io.WriteString(w, b.String())
	return err
}

func (t *Topology) someP2PRefused() bool {
	for a := range t.Pairs {
		for b, p := range t.Pairs[a] {
			if a != b && p.P2P != P2PUnknown && p.P2P != P2POK {
				return true
			}
		}
	}
	return false
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func migText(m MIGMode) string {
	switch {
	case !m.Capable:
		return "-"
	case m.Enabled && m.Pending:
		return "MIG on"
	case m.Enabled:
		return "MIG on (off after reset)"
	case m.Pending:
		return "MIG off (on after reset)"
	}
	return "MIG off"
}

// cardList writes card indexes as "GPU0-GPU3, GPU6", folding runs.
func cardList(idx []int) string {
	var parts []string
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && idx[j+1] == idx[j]+1 {
			j++
		}
		if j-i >= 2 {
			parts = append(parts, fmt.Sprintf("GPU%d-GPU%d", idx[i], idx[j]))
		} else {
			for k := i; k <= j; k++ {
				parts = append(parts, fmt.Sprintf("GPU%d", idx[k]))
			}
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

// knowsCards reports whether any card has more than its index to show.
func (t *Topology) knowsCards() bool {
	for _, c := range t.Cards {
		if c.UUID != "" || c.Model != "" || c.MemBytes > 0 || c.PCIBusID != "" || c.MIG.Capable {
			return true
		}
	}
	return false
}

// writeCards lists each card's UUID, model, memory, PCI bus id and MIG mode.
func (t *Topology) writeCards(b *strings.Builder) error {
	b.WriteString("\nCards:\n")
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	for _, c := range t.Cards {
		mem := "-"
		if c.MemBytes > 0 {
			mem = fmt.Sprintf("%.0f GiB", float64(c.MemBytes)/(1<<30))
		}
		fmt.Fprintf(tw, "  GPU%d\t%s\t%s\t%s\t%s\t%s\n", c.Index, orDash(c.UUID), orDash(c.Model), mem, orDash(c.PCIBusID), migText(c.MIG))
	}
	return tw.Flush()
}
