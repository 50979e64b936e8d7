package sim

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/huitian/huitian/internal/wire"
	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/model/shape"
	pb "github.com/huitian/huitian/proto/huitian/v1"
	"github.com/huitian/huitian/sim/trace"
)

// ErrClusterSpec is wrapped by ParseCluster's errors about the spec itself.
var ErrClusterSpec = errors.New("sim: cluster spec")

// HGX cluster shape: cards per node and nodes per leaf switch.
const (
	hgxCardsPerNode = 8
	hgxLeafNodes    = 32
	hgxCardMemBytes = 80 << 30
)

// MaxSpecCards bounds the size of a generated cluster (flat:N, hgx:N, an
// openb node list), and of huitian bench's.
const MaxSpecCards = 1 << 22

// ClusterSpecs describes the specs ParseCluster reads, for help texts.
const ClusterSpecs = `flat (the trace's machine size), flat:N (N single-card nodes), ` +
	`hgx:N (N nodes × 8 cards, one NVSwitch island per node, leaf switches of 32 nodes), ` +
	`openb:FILE (an openb node list), file:PATH or PATH.json (a huitian.v1.Cluster in protojson)`

// ParseCluster builds and seals the cluster a spec names:
//
//	flat        single-card nodes, as many as the trace's machine (maxCards)
//	flat:N      N single-card nodes, no topology: for CPU SWF traces, one
//	            card per processor, as the published SWF results assume
//	hgx:N       N nodes × 8 cards, each node one NVSwitch island, leaf
//	            switches of 32 nodes under one spine
//	openb:FILE  the GPU nodes of an openb (or 2026 spot trace) node list
//	file:PATH   a huitian.v1.Cluster in protojson; so is any PATH ending .json
//
// An invalid cluster file gives a *model.ValidationError listing every
// problem with its field path.
func ParseCluster(spec string, maxCards int) (*model.Cluster, error) {
	kind, arg, _ := strings.Cut(spec, ":")
	var (
		c   *model.Cluster
		err error
	)
	switch {
	case kind == "flat" && arg == "" && !strings.Contains(spec, ":"):
		if maxCards <= 0 {
			return nil, fmt.Errorf("%w %q: the trace states no machine size; give flat:N", ErrClusterSpec, spec)
		}
		c, err = Flat(maxCards)
	case kind == "flat":
		var n int
		if n, err = specCount(spec, arg); err == nil {
			c, err = Flat(n)
		}
	case kind == "hgx":
		var n int
		if n, err = specCount(spec, arg); err == nil {
			c, err = HGX(n)
		}
	case kind == "openb":
		if arg == "" {
			return nil, fmt.Errorf("%w %q: want openb:FILE", ErrClusterSpec, spec)
		}
		c, err = openbCluster(arg)
	case kind == "file":
		c, err = clusterFile(arg)
	case strings.HasSuffix(spec, ".json"):
		c, err = clusterFile(spec)
	default:
		return nil, fmt.Errorf("%w %q: want %s", ErrClusterSpec, spec, ClusterSpecs)
	}
	if err != nil {
		return nil, err
	}
	if err := c.Seal(); err != nil {
		return nil, fmt.Errorf("sim: cluster %s: %w", spec, err)
	}
	return c, nil
}

func specCount(spec, arg string) (int, error) {
	n, err := strconv.Atoi(arg)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%w %q: %q is not a positive count", ErrClusterSpec, spec, arg)
	}
	return n, nil
}

// Flat returns n single-card nodes, p0…p(n-1) zero-padded, with no
// topology: a machine of n interchangeable processors.
func Flat(n int) (*model.Cluster, error) {
	if n < 1 || n > MaxSpecCards {
		return nil, fmt.Errorf("%w: flat:%d: want 1 … %d cards", ErrClusterSpec, n, MaxSpecCards)
	}
	return shape.Uniform{ID: "flat-" + strconv.Itoa(n), Nodes: n, CardsPerNode: 1, NodeName: shape.Names{Prefix: "p"}}.Cluster(), nil
}

// HGX returns n HGX-style nodes of 8 cards, all of a node's cards in one
// NVSwitch island, nodes grouped 32 to a leaf switch under one spine.
func HGX(n int) (*model.Cluster, error) {
	if n < 1 || n > MaxSpecCards/hgxCardsPerNode { // not n×8: it wrapped past 2^60 nodes
		return nil, fmt.Errorf("%w: hgx:%d: want 1 … %d nodes", ErrClusterSpec, n, MaxSpecCards/hgxCardsPerNode)
	}
	return shape.Uniform{
		ID: "hgx-" + strconv.Itoa(n), Nodes: n, CardsPerNode: hgxCardsPerNode,
		NodesPerSwitch: hgxLeafNodes, Spine: "spine",
		NodeName: shape.Names{Prefix: "hgx"}, SwitchName: shape.Names{Prefix: "leaf"},
		Card:         model.Card{Model: "H100", MemBytes: hgxCardMemBytes, Island: "nvswitch"},
		CardsPerNUMA: 4,
	}.Cluster(), nil
}

// openbCluster builds a cluster from a node list: one node per GPU node,
// cards of its model, no NVLink or switch topology (the list gives none).
func openbCluster(path string) (*model.Cluster, error) {
	nl, err := trace.OpenNodes(path)
	if err != nil {
		return nil, err
	}
	if len(nl.Nodes) == 0 {
		return nil, fmt.Errorf("%w: %s: no GPU nodes", ErrClusterSpec, path)
	}
	c := &model.Cluster{ID: "openb", Nodes: make([]model.Node, len(nl.Nodes))}
	total := 0
	for i, n := range nl.Nodes {
		total += n.Cards
		if total > MaxSpecCards {
			return nil, fmt.Errorf("%w: %s: more than %d cards", ErrClusterSpec, path, MaxSpecCards)
		}
		cards := make([]model.Card, n.Cards)
		for k := range cards {
			cards[k] = model.Card{Index: k, Model: n.Model}
		}
		c.Nodes[i] = model.Node{Name: n.Name, Cards: cards}
	}
	return c, nil
}

// clusterFile reads a huitian.v1.Cluster in protojson and converts it,
// reporting the contract's and the model's problems with field paths.
func clusterFile(path string) (*model.Cluster, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("sim: cluster: %w", err)
	}
	msg := &pb.Cluster{}
	if err := protojson.Unmarshal(raw, msg); err != nil {
		return nil, fmt.Errorf("sim: cluster %s: %w", path, err)
	}
	probs, err := wire.Problems(msg)
	if err != nil {
		return nil, fmt.Errorf("sim: cluster %s: %w", path, err)
	}
	for i := range probs {
		probs[i].Field = "cluster." + probs[i].Field
	}
	c := wire.Cluster(msg)
	if probs, err = wire.WithModelProblems(probs, c.Seal()); err != nil {
		return nil, fmt.Errorf("sim: cluster %s: %w", path, err)
	}
	if len(probs) > 0 {
		return nil, fmt.Errorf("sim: cluster %s: %w", path, &model.ValidationError{Problems: probs})
	}
	return c, nil
}
