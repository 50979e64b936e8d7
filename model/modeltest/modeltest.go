// Package modeltest builds model values for tests: small fluent builders
// for jobs and clusters.
package modeltest

import (
	"slices"
	"time"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/model/shape"
)

// Epoch is the time builders use as their reference "now".
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// JobBuilder builds a model.Job.
type JobBuilder struct{ j model.Job }

// Job starts a 1-card job of one hour submitted at Epoch.
func Job(id string) *JobBuilder {
	return &JobBuilder{j: model.Job{ID: id, User: "u", Cards: 1, TimeLimit: time.Hour, Submit: Epoch}}
}

func (b *JobBuilder) Cards(n int) *JobBuilder                   { b.j.Cards = n; return b }
func (b *JobBuilder) PerNode(n int) *JobBuilder                 { b.j.CardsPerNode = n; return b }
func (b *JobBuilder) Limit(d time.Duration) *JobBuilder         { b.j.TimeLimit = d; return b }
func (b *JobBuilder) Topology(t model.Topology) *JobBuilder     { b.j.Topology = t; return b }
func (b *JobBuilder) Submit(t time.Time) *JobBuilder            { b.j.Submit = t; return b }
func (b *JobBuilder) SubmitAfter(d time.Duration) *JobBuilder   { b.j.Submit = Epoch.Add(d); return b }
func (b *JobBuilder) User(u string) *JobBuilder                 { b.j.User = u; return b }
func (b *JobBuilder) Class(c string) *JobBuilder                { b.j.Class = c; return b }
func (b *JobBuilder) Comm(c model.Comm) *JobBuilder             { b.j.Comm = c; return b }
func (b *JobBuilder) Backfill(p model.BackfillPref) *JobBuilder { b.j.Backfill = p; return b }
func (b *JobBuilder) MaxRisk(p float64) *JobBuilder             { b.j.MaxPreemptProb = p; return b }
func (b *JobBuilder) Priority(p int) *JobBuilder                { b.j.Priority = p; return b }
func (b *JobBuilder) Model(m string) *JobBuilder                { b.j.CardModel = m; return b }
func (b *JobBuilder) Checkpoint(cost time.Duration) *JobBuilder {
	b.j.Checkpointable = true
	b.j.CheckpointCost = cost
	return b
}

// Build returns the job.
func (b *JobBuilder) Build() model.Job { return b.j }

// HGX returns a cluster of n nodes "n000"… with 8 cards each on one NVSwitch
// island, under leaf switches of 32 nodes "sw00"….
func HGX(n int) *model.Cluster {
	return Uniform(n, 8, 32)
}

// Uniform returns a cluster of n nodes with perNode cards each, all in one
// island per node, under leaf switches of nodesPerSwitch nodes (none when 0).
func Uniform(n, perNode, nodesPerSwitch int) *model.Cluster {
	return shape.Uniform{
		ID: "test", Nodes: n, CardsPerNode: perNode, NodesPerSwitch: nodesPerSwitch,
		NodeName: shape.Names{Prefix: "n", Digits: 3}, SwitchName: shape.Names{Prefix: "sw", Digits: 2},
		Card: model.Card{Model: "H100", MemBytes: 80 << 30, Island: "nvl0"},
		UUID: "GPU-%03d-%d",
	}.Cluster()
}

// Running returns a running job on the given cards, started at start.
func Running(j model.Job, start time.Time, cards ...model.CardRef) model.Running {
	return model.Running{Job: j, Cards: cards, Start: start}
}

// Ref names a card.
func Ref(node string, index int) model.CardRef { return model.CardRef{Node: node, Index: index} }

// Refs names cards first..first+n-1 of a node.
func Refs(node string, first, n int) []model.CardRef {
	out := make([]model.CardRef, n)
	for i := range out {
		out[i] = model.CardRef{Node: node, Index: first + i}
	}
	return out
}

// Fataler is what CheckTopology needs of a test (testing.T, rapid.T).
type Fataler interface {
	Fatalf(format string, args ...any)
}

// CheckTopology fails t unless refs are j's card count and meet its
// topology constraint (one node for same-node and same-island, one leaf
// switch for same-switch).
func CheckTopology(t Fataler, lay *model.Layout, j *model.Job, refs []model.CardRef) {
	if len(refs) != j.Cards {
		t.Fatalf("%s: %d cards, want %d", j.ID, len(refs), j.Cards)
	}
	nodes := map[string]int{}
	sw := map[string]bool{}
	for _, r := range refs {
		nodes[r.Node]++
		c, _ := lay.CardID(r)
		n := lay.Nodes[lay.Cards[c].Node]
		if n.Switch >= 0 {
			sw[lay.Switches[n.Switch]] = true
		} else {
			sw["node:"+n.Name] = true
		}
	}
	switch j.Topology {
	case model.TopologySameNode, model.TopologySameIsland:
		if len(nodes) != 1 {
			t.Fatalf("%s (%s) on %d nodes", j.ID, j.Topology, len(nodes))
		}
	case model.TopologySameSwitch:
		if len(sw) != 1 {
			t.Fatalf("%s (same-switch) under %d switches", j.ID, len(sw))
		}
	}
}

// ReservedCards are the cards a reservation names, or for one that names
// its count alone the cards its planner waited for (CardNumbers), by
// reference.
func ReservedCards(lay *model.Layout, r *model.Reservation) []model.CardRef {
	if len(r.Cards) == 0 && len(r.CardNumbers) > 0 {
		return lay.Refs(r.CardNumbers)
	}
	return r.Cards
}

// Named is d with every reservation naming its cards (ReservedCards), no
// numbers: the decision as a planner that named them would make it.
func Named(lay *model.Layout, d *model.Decision) *model.Decision {
	o := *d
	o.Reservations = slices.Clone(d.Reservations)
	for i := range o.Reservations {
		r := &o.Reservations[i]
		r.Cards, r.CardNumbers = ReservedCards(lay, r), nil
	}
	return &o
}
