package gputopo

import (
	"flag"
	"os"
	"slices"
	"strings"
	"testing"

	"buf.build/go/protovalidate"
	"google.golang.org/protobuf/encoding/protojson"

	huitianv1 "github.com/huitian/huitian/proto/huitian/v1"
)

// Flags of TestDeviceJSON, which devicecheck.sh runs on a GPU machine:
//
//	go test ./gputopo -run '^TestDeviceJSON$' -args -json node.json -cards 1 -smi smi.txt
var (
	deviceJSON  = flag.String("json", "", "`FILE` with the output of huitian topo --json to check against the API contract")
	deviceCards = flag.Int("cards", 0, "how many GPUs the machine has (nvidia-smi -L); 0: do not check the count")
	deviceSMI   = flag.String("smi", "", "`FILE` with nvidia-smi topo -m from the same machine, whose islands and NUMA nodes must agree")
)

// TestDeviceJSON checks what `huitian topo --json` printed on a real GPU
// machine: a valid huitian.v1.Node under protovalidate, every card with a
// UUID, a model, memory and a PCI bus id, NVLinks that agree from both ends,
// and, given -smi, the same islands and NUMA nodes as nvidia-smi's matrix.
func TestDeviceJSON(t *testing.T) {
	if *deviceJSON == "" {
		t.Skip("no -json FILE: gputopo/devicecheck.sh runs this check on a GPU machine")
	}
	b, err := os.ReadFile(*deviceJSON)
	if err != nil {
		t.Fatal(err)
	}
	var n huitianv1.Node
	if err := protojson.Unmarshal(b, &n); err != nil {
		t.Fatalf("%s is not a huitian.v1.Node in protojson: %v", *deviceJSON, err)
	}
	t.Logf("checked: %s decodes as a huitian.v1.Node (%d cards)", *deviceJSON, len(n.Cards))
	if err := protovalidate.Validate(&n); err != nil {
		t.Fatalf("the node breaks the API contract: %v", err)
	}
	t.Log("checked: the node passes protovalidate")
	if *deviceCards > 0 {
		if len(n.Cards) != *deviceCards {
			t.Errorf("%d cards, the machine has %d", len(n.Cards), *deviceCards)
		} else {
			t.Logf("checked: %d cards, as nvidia-smi -L lists", len(n.Cards))
		}
	}

	island := map[int32]string{}
	links := map[[2]int32]int32{}
	var pairs [][2]int32
	for i, c := range n.Cards {
		if c.Index != int32(i) {
			t.Errorf("card %d has index %d", i, c.Index)
		}
		if !strings.HasPrefix(c.Uuid, "GPU-") || c.Model == "" || c.MemoryBytes <= 0 || c.PciBusId == "" || c.NvlinkIsland == "" {
			t.Errorf("GPU%d lacks a fact: uuid %q, model %q, memory %d, pci %q, island %q",
				c.Index, c.Uuid, c.Model, c.MemoryBytes, c.PciBusId, c.NvlinkIsland)
		}
		island[c.Index] = c.NvlinkIsland
		for _, l := range c.Nvlinks {
			k := [2]int32{c.Index, l.PeerIndex}
			links[k] = l.Links
			pairs = append(pairs, k)
		}
		t.Logf("checked: GPU%d %s %s, %d MiB, %s, NUMA %d, island %s, %d NVLink peers",
			c.Index, c.Uuid, c.Model, c.MemoryBytes>>20, c.PciBusId, c.NumaNode, c.NvlinkIsland, len(c.Nvlinks))
	}
	for _, k := range pairs {
		if back := links[[2]int32{k[1], k[0]}]; back != links[k] {
			t.Errorf("GPU%d→GPU%d has %d links, GPU%d→GPU%d %d", k[0], k[1], links[k], k[1], k[0], back)
		}
		if peer, ok := island[k[1]]; !ok || peer != island[k[0]] {
			t.Errorf("GPU%d links to GPU%d outside its island", k[0], k[1])
		}
	}
	t.Log("checked: NVLinks agree from both ends and stay inside islands")

	if *deviceSMI == "" {
		return
	}
	f, err := os.Open(*deviceSMI)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	smi, err := ParseSMI(f, n.Name)
	if err != nil {
		t.Fatalf("nvidia-smi topo -m does not parse: %v", err)
	}
	if len(smi.Cards) != len(n.Cards) {
		t.Fatalf("nvidia-smi shows %d GPUs, NVML %d", len(smi.Cards), len(n.Cards))
	}
	for a, c := range smi.Cards {
		nc := n.Cards[a] // same length, checked above
		if c.Index != int(nc.Index) {
			t.Errorf("nvidia-smi's GPU%d is NVML's GPU%d", c.Index, nc.Index)
		}
		if c.NUMANode >= 0 && nc.NumaNode >= 0 && int32(c.NUMANode) != nc.NumaNode {
			t.Errorf("GPU%d: NUMA node %d from NVML, %d from nvidia-smi", c.Index, nc.NumaNode, c.NUMANode)
		}
	}
	nvmlIslands := map[string][]int{}
	for _, c := range n.Cards {
		nvmlIslands[c.NvlinkIsland] = append(nvmlIslands[c.NvlinkIsland], int(c.Index))
	}
	for _, g := range smi.Islands {
		if got := nvmlIslands[island[int32(g.Cards[0])]]; !slices.Equal(got, g.Cards) {
			t.Errorf("nvidia-smi island %v, NVML island %v", g.Cards, got)
		}
	}
	t.Logf("checked: nvidia-smi topo -m parses to the same %d islands and NUMA nodes", len(smi.Islands))
}
