package kube

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"

	pb "github.com/huitian/huitian/proto/huitian/v1"
)

// card is one GPU as a ResourceSlice lists it.
type card struct {
	node   string
	pool   string
	device string
	uuid   string
	pb     *pb.Card
}

// inventory is the cluster's cards, from nodes and ResourceSlices.
type inventory struct {
	cluster  *pb.Cluster
	byDevice map[string]*card // "pool/device"
	byRef    map[string]*card // "node/index"
	problems []string         // devices left out, and why
}

func refKey(node string, index int32) string { return fmt.Sprintf("%s/%d", node, index) }

func deviceKey(pool, device string) string { return pool + "/" + device }

// attr finds a device attribute by bare or driver-qualified name.
func attr(d *resourcev1.Device, driver, name string) (resourcev1.DeviceAttribute, bool) {
	if name == "" {
		return resourcev1.DeviceAttribute{}, false
	}
	if v, ok := d.Attributes[resourcev1.QualifiedName(name)]; ok {
		return v, true
	}
	if !strings.Contains(name, "/") {
		v, ok := d.Attributes[resourcev1.QualifiedName(driver+"/"+name)]
		return v, ok
	}
	return resourcev1.DeviceAttribute{}, false
}

func capacity(d *resourcev1.Device, driver, name string) (int64, bool) {
	if name == "" {
		return 0, false
	}
	for _, k := range []string{name, driver + "/" + name} {
		if v, ok := d.Capacity[resourcev1.QualifiedName(k)]; ok {
			return v.Value.Value(), true
		}
	}
	return 0, false
}

// buildInventory turns nodes and the driver's ResourceSlices into a
// Cluster. Only slices of cfg.Driver bound to an existing node count;
// cordoned or not-ready nodes are unschedulable; the node label
// cfg.SwitchLabel names switch domains.
func buildInventory(cfg *Config, nodes []*corev1.Node, rs []*resourcev1.ResourceSlice) *inventory {
	inv := &inventory{cluster: &pb.Cluster{Id: cfg.ClusterID}, byDevice: map[string]*card{}, byRef: map[string]*card{}}
	byNode := map[string]*corev1.Node{}
	for _, n := range nodes {
		byNode[n.Name] = n
	}
	cards := map[string][]*card{}
	// Slices of a pool's newest generation only: older ones are being replaced.
	gen := map[string]int64{}
	for _, s := range rs {
		if s.Spec.Driver == cfg.Driver {
			gen[s.Spec.Pool.Name] = max(gen[s.Spec.Pool.Name], s.Spec.Pool.Generation)
		}
	}
	slices.SortFunc(rs, func(a, b *resourcev1.ResourceSlice) int { return cmp.Compare(a.Name, b.Name) })
	for _, s := range rs {
		if s.Spec.Driver != cfg.Driver || s.Spec.NodeName == nil || s.Spec.Pool.Generation != gen[s.Spec.Pool.Name] {
			continue
		}
		node := *s.Spec.NodeName
		if byNode[node] == nil {
			inv.problems = append(inv.problems, fmt.Sprintf("slice %s: node %s does not exist", s.Name, node))
			continue
		}
		for i := range s.Spec.Devices {
			d := &s.Spec.Devices[i]
			idx, ok := attr(d, cfg.Driver, cfg.Attributes.Index)
			if !ok || idx.IntValue == nil || *idx.IntValue < 0 || *idx.IntValue > math.MaxInt32 {
				inv.problems = append(inv.problems, fmt.Sprintf("slice %s device %s: no int attribute %q from 0 to %d", s.Name, d.Name, cfg.Attributes.Index, math.MaxInt32))
				continue
			}
			c := &card{node: node, pool: s.Spec.Pool.Name, device: d.Name,
				pb: &pb.Card{Index: int32(*idx.IntValue), NumaNode: -1}}
			if v, ok := attr(d, cfg.Driver, cfg.Attributes.UUID); ok && v.StringValue != nil {
				c.uuid, c.pb.Uuid = *v.StringValue, *v.StringValue
			}
			if v, ok := attr(d, cfg.Driver, cfg.Attributes.Model); ok && v.StringValue != nil {
				c.pb.Model = *v.StringValue
			}
			if v, ok := attr(d, cfg.Driver, cfg.Attributes.Island); ok && v.StringValue != nil {
				c.pb.NvlinkIsland = *v.StringValue
			}
			if m, ok := capacity(d, cfg.Driver, cfg.Attributes.Memory); ok {
				c.pb.MemoryBytes = m
			}
			if _, dup := inv.byRef[refKey(node, c.pb.Index)]; dup {
				inv.problems = append(inv.problems, fmt.Sprintf("slice %s device %s: index %d twice on node %s", s.Name, d.Name, c.pb.Index, node))
				continue
			}
			inv.byRef[refKey(node, c.pb.Index)] = c
			inv.byDevice[deviceKey(c.pool, c.device)] = c
			cards[node] = append(cards[node], c)
		}
	}
	names := make([]string, 0, len(cards))
	for n := range cards {
		names = append(names, n)
	}
	slices.Sort(names)
	domains := map[string]bool{}
	for _, name := range names {
		n := byNode[name]
		pn := &pb.Node{Name: name, Unschedulable: n.Spec.Unschedulable || !ready(n)}
		cs := cards[name]
		slices.SortFunc(cs, func(a, b *card) int { return cmp.Compare(a.pb.Index, b.pb.Index) })
		for _, c := range cs {
			pn.Cards = append(pn.Cards, c.pb)
		}
		sw := "cluster"
		if cfg.SwitchLabel != "" && n.Labels[cfg.SwitchLabel] != "" {
			sw = n.Labels[cfg.SwitchLabel]
		}
		pn.Domains = []string{"switch/" + sw}
		domains[sw] = true
		inv.cluster.Nodes = append(inv.cluster.Nodes, pn)
	}
	sws := make([]string, 0, len(domains))
	for d := range domains {
		sws = append(sws, d)
	}
	slices.Sort(sws)
	for _, d := range sws {
		inv.cluster.Domains = append(inv.cluster.Domains, &pb.Domain{Id: "switch/" + d, Kind: pb.DomainKind_DOMAIN_KIND_SWITCH})
	}
	return inv
}

func ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// allocated returns the cards a claim holds.
func (inv *inventory) allocated(c *resourcev1.ResourceClaim, driver string) []*card {
	if c.Status.Allocation == nil {
		return nil
	}
	var out []*card
	for _, r := range c.Status.Allocation.Devices.Results {
		if r.Driver != driver {
			continue
		}
		if k := inv.byDevice[deviceKey(r.Pool, r.Device)]; k != nil {
			out = append(out, k)
		}
	}
	return out
}
