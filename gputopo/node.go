package gputopo

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"

	huitianv1 "github.com/huitian/huitian/proto/huitian/v1"
)

// ErrMIGEnabled is returned by Topology.Node when a card has MIG enabled:
// huitian plans whole cards, and a MIG card is not one.
var ErrMIGEnabled = errors.New("gputopo: MIG is enabled")

// Node returns the topology as the API's Node: one Card per GPU with its
// NVLink peers and island, no domains (those come from the cluster's
// network, not from the node), schedulable and healthy. It refuses, with
// ErrMIGEnabled, a node on which any card has MIG enabled.
func (t *Topology) Node() (*huitianv1.Node, error) {
	if t.Name == "" {
		return nil, errors.New("gputopo: the node has no name")
	}
	if mig := t.MIGCards(); len(mig) > 0 {
		var disable []string
		for _, i := range mig {
			disable = append(disable, fmt.Sprintf("nvidia-smi -i %d -mig 0", i))
		}
		return nil, fmt.Errorf("%w on %s of node %s: huitian plans whole cards; turn MIG off (%s, then reset the GPU) or leave the node out",
			ErrMIGEnabled, cardList(mig), t.Name, strings.Join(disable, "; "))
	}
	n := &huitianv1.Node{Name: t.Name}
	for _, c := range t.Cards {
		if c.Index < 0 || c.Index > math.MaxInt32 || c.NUMANode > math.MaxInt32 {
			return nil, fmt.Errorf("gputopo: GPU%d: index or NUMA node out of range", c.Index)
		}
		pc := &huitianv1.Card{
			Index:        int32(c.Index),
			Uuid:         c.UUID,
			Model:        c.Model,
			MemoryBytes:  c.MemBytes,
			NumaNode:     int32(max(c.NUMANode, -1)),
			PciBusId:     c.PCIBusID,
			NvlinkIsland: c.Island,
		}
		for _, l := range c.NVLinks {
			pc.Nvlinks = append(pc.Nvlinks, &huitianv1.NvLink{PeerIndex: int32(l.Peer), Links: int32(min(l.Links, math.MaxInt32))})
		}
		n.Cards = append(n.Cards, pc)
	}
	return n, nil
}

// MarshalNode writes n as multi-line protojson with every field present (so
// that it reads as a template to paste into a Cluster), indented by two
// spaces. The layout is canonical: protojson's own spacing varies between
// builds on purpose, so MarshalNode re-indents it.
func MarshalNode(n *huitianv1.Node) ([]byte, error) {
	raw, err := protojson.MarshalOptions{EmitDefaultValues: true}.Marshal(n)
	if err != nil {
		return nil, fmt.Errorf("gputopo: encode node: %w", err)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, raw, "", "  "); err != nil {
		return nil, fmt.Errorf("gputopo: indent node: %w", err)
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}
