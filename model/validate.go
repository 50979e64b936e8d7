package model

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ErrInvalid is wrapped by every validation error.
var ErrInvalid = errors.New("model: invalid input")

// Problem is one thing wrong with an input, at a field path such as
// "running[3].cards[1]".
type Problem struct {
	Field   string
	Message string
}

func (p Problem) String() string { return p.Field + ": " + p.Message }

// ValidationError lists every problem found in one input.
type ValidationError struct {
	Problems []Problem
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	b.WriteString("invalid input: ")
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p.String())
	}
	return b.String()
}

func (e *ValidationError) Unwrap() error { return ErrInvalid }

type problems []Problem

func (v *problems) add(field, format string, args ...any) {
	*v = append(*v, Problem{Field: field, Message: fmt.Sprintf(format, args...)})
}

func (v problems) err() error {
	if len(v) == 0 {
		return nil
	}
	return &ValidationError{Problems: v}
}

func (c *Cluster) validate(v *problems, path string) {
	if c.ID == "" {
		v.add(path+".id", "must not be empty")
	}
	if len(c.Nodes) == 0 {
		v.add(path+".nodes", "a cluster needs at least one node")
	}
	domains := make(map[string]int, len(c.Domains))
	for i, d := range c.Domains {
		p := fmt.Sprintf("%s.domains[%d]", path, i)
		if d.ID == "" {
			v.add(p+".id", "must not be empty")
		} else if j, dup := domains[d.ID]; dup {
			v.add(p+".id", "duplicate of domains[%d]", j)
		} else {
			domains[d.ID] = i
		}
		if d.Kind < DomainSwitch || d.Kind > DomainPod {
			v.add(p+".kind", "must be switch, nvlink or pod")
		}
	}
	depth, cycle := domainDepths(c.Domains, domains)
	for i, d := range c.Domains {
		if d.Parent == "" {
			continue
		}
		p := fmt.Sprintf("%s.domains[%d].parent", path, i)
		switch _, ok := domains[d.Parent]; {
		case !ok:
			v.add(p, "domain %q does not exist", d.Parent)
		case cycle[i]:
			v.add(p, "domain %q is its own ancestor", d.ID)
		case depth[i] == MaxDomainDepth+1:
			v.add(p, "domain %q is %d levels deep; domain trees are at most %d levels deep", d.ID, depth[i], MaxDomainDepth)
		}
	}
	names := make(map[string]int, len(c.Nodes))
	var index map[int]int // for nodes of many cards
	for i, n := range c.Nodes {
		// Paths are made only for a problem: a valid cluster of 100,000
		// nodes made 200,000 of them (a fifth of sealing it).
		p := func() string { return fmt.Sprintf("%s.nodes[%d]", path, i) }
		if n.Name == "" {
			v.add(p()+".name", "must not be empty")
		} else if strings.Contains(n.Name, "/") {
			v.add(p()+".name", "must not contain '/'")
		} else if j, dup := names[n.Name]; dup {
			v.add(p()+".name", "duplicate of nodes[%d]", j)
		} else {
			names[n.Name] = i
		}
		if len(n.Domains) > MaxNodeDomains {
			v.add(p()+".domains", "the node names %d domains; at most %d", len(n.Domains), MaxNodeDomains)
		}
		for j, d := range n.Domains {
			if _, ok := domains[d]; !ok {
				v.add(fmt.Sprintf("%s.domains[%d]", p(), j), "domain %q does not exist", d)
			}
		}
		if len(n.Cards) == 0 {
			v.add(p()+".cards", "a node needs at least one card")
		}
		// cardAt says which earlier card of the node has an index: a scan
		// on a node of a few cards, a map on a larger one.
		if len(n.Cards) > 16 {
			if index == nil {
				index = map[int]int{}
			}
			clear(index)
		}
		cardAt := func(idx, before int) (int, bool) {
			if len(n.Cards) > 16 {
				k, ok := index[idx]
				return k, ok && k < before
			}
			for k := range n.Cards[:before] {
				if n.Cards[k].Index == idx && idx >= 0 {
					return k, true
				}
			}
			return 0, false
		}
		for j, cd := range n.Cards {
			cp := func() string { return fmt.Sprintf("%s.cards[%d]", p(), j) }
			if cd.Index < 0 {
				v.add(cp()+".index", "must be ≥ 0, got %d", cd.Index)
			} else if k, dup := cardAt(cd.Index, j); dup {
				v.add(cp()+".index", "card %d is also cards[%d]", cd.Index, k)
			} else if len(n.Cards) > 16 {
				index[cd.Index] = j
			}
			if cd.MemBytes < 0 {
				v.add(cp()+".memory_bytes", "must be ≥ 0")
			}
			if cd.NUMA < -1 {
				v.add(cp()+".numa_node", "must be ≥ -1")
			}
		}
		for j, cd := range n.Cards {
			for k, l := range cd.NVLinks {
				lp := func() string { return fmt.Sprintf("%s.cards[%d].nvlinks[%d]", p(), j, k) }
				if _, ok := cardAt(l.Peer, len(n.Cards)); !ok || l.Peer == cd.Index {
					v.add(lp()+".peer_index", "card %d is not another card of node %q", l.Peer, n.Name)
				}
				if l.Links < 1 {
					v.add(lp()+".links", "must be ≥ 1")
				}
			}
		}
	}
}

// MaxDomainDepth bounds a domain tree's levels (a switch in a pod in a
// spine is three); MaxNodeDomains bounds the domains one node names. Both
// keep the work per node of building a layout small.
const (
	MaxDomainDepth = 16
	MaxNodeDomains = 16
)

// domainDepths gives every domain its depth (a root is 1) and says which
// domains are on a parent cycle, in one pass over the domains: each chain
// is walked once, and a walk stops at a domain whose depth is known. A
// domain whose chain leads into a cycle or to a missing parent gets depth
// -1 or counts from the missing parent as a root (that parent is reported
// on its own).
func domainDepths(ds []Domain, index map[string]int) (depth []int, cycle []bool) {
	const onPath = -2
	depth = make([]int, len(ds))
	cycle = make([]bool, len(ds))
	pos := make([]int, len(ds))
	var chain []int
	for i := range ds {
		if depth[i] != 0 {
			continue
		}
		chain = chain[:0]
		base := 0
		for j := i; ; {
			if depth[j] > 0 || depth[j] == -1 {
				base = depth[j]
				break
			}
			if depth[j] == onPath {
				for _, m := range chain[pos[j]:] {
					cycle[m] = true
				}
				base = -1
				break
			}
			depth[j], pos[j] = onPath, len(chain)
			chain = append(chain, j)
			k, ok := index[ds[j].Parent]
			if ds[j].Parent == "" || !ok {
				break
			}
			j = k
		}
		for k := len(chain) - 1; k >= 0; k-- {
			if base < 0 {
				depth[chain[k]] = -1
				continue
			}
			base++
			depth[chain[k]] = base
		}
	}
	return depth, cycle
}

func (j *Job) validate(v *problems, at func() string) {
	if j.ID == "" {
		v.add(at()+".id", "must not be empty")
	}
	if j.Cards < 1 {
		v.add(at()+".cards", "must be ≥ 1, got %d", j.Cards)
	}
	switch {
	case j.CardsPerNode < 0:
		v.add(at()+".cards_per_node", "must be ≥ 0, got %d", j.CardsPerNode)
	case j.CardsPerNode > 0 && j.Cards > 0 && j.Cards%j.CardsPerNode != 0:
		v.add(at()+".cards_per_node", "%d does not divide cards %d", j.CardsPerNode, j.Cards)
	case j.CardsPerNode > 0 && j.CardsPerNode != j.Cards &&
		(j.Topology == TopologySameNode || j.Topology == TopologySameIsland):
		v.add(at()+".cards_per_node", "%d contradicts topology %s, which puts all %d cards on one node", j.CardsPerNode, j.Topology, j.Cards)
	}
	if j.Topology > TopologySameSwitch {
		v.add(at()+".topology", "unknown topology %d", j.Topology)
	}
	if j.Comm > CommHigh {
		v.add(at()+".comm", "unknown communication intensity %d", j.Comm)
	}
	if j.Backfill > BackfillLowRiskOnly {
		v.add(at()+".backfill", "unknown backfill preference %d", j.Backfill)
	}
	if j.TimeLimit <= 0 {
		v.add(at()+".time_limit", "must be > 0, got %v", j.TimeLimit)
	}
	if j.CheckpointCost < 0 {
		v.add(at()+".checkpoint_cost", "must be ≥ 0, got %v", j.CheckpointCost)
	}
	if !(j.MaxPreemptProb >= 0 && j.MaxPreemptProb <= 1) {
		v.add(at()+".max_preemption_probability", "must be in [0, 1], got %v", j.MaxPreemptProb)
	}
	if j.RequeueCount < 0 {
		v.add(at()+".requeue_count", "must be ≥ 0, got %d", j.RequeueCount)
	}
	if j.Submit.IsZero() {
		v.add(at()+".submit_time", "must be set")
	}
}

// Validate checks a snapshot and returns every problem at once as a
// *ValidationError (which wraps ErrInvalid), or nil. It seals the cluster
// when the cluster is valid. A job that can never fit is not an error: the
// planner reports it as pending with PendingNeverFits.
func (s *Snapshot) Validate() error {
	var v problems
	if s.Now.IsZero() {
		v.add("now", "must be set")
	}
	if s.Cluster == nil {
		v.add("cluster", "must be set")
		return v.err()
	}
	var cv problems
	s.Cluster.validate(&cv, "cluster")
	v = append(v, cv...)
	if len(cv) == 0 {
		s.Cluster.lay = buildLayout(s.Cluster)
	}
	o := s.Options
	if o.Policy > PolicyHuitianGreedy {
		v.add("options.policy", "unknown policy %d", o.Policy)
	}
	if o.ReservationDepth < 0 {
		v.add("options.reservation_depth", "must be ≥ 0, got %d", o.ReservationDepth)
	}
	if o.TimeBudget < 0 {
		v.add("options.time_budget", "must be ≥ 0, got %v", o.TimeBudget)
	}
	if o.OverrunGrace < 0 {
		v.add("options.overrun_grace", "must be ≥ 0, got %v", o.OverrunGrace)
	}

	// Field paths are built only for a problem, and a card is found by its
	// number in the layout: a valid request of 65,536 cards and 20,000
	// jobs used to cost a formatted path and a map entry per card.
	ids := make(map[string]int, len(s.Running)+len(s.Queued)) // running i, queued -1-i
	idPath := func(k int) string {
		if k >= 0 {
			return "running[" + strconv.Itoa(k) + "]"
		}
		return "queued[" + strconv.Itoa(-1-k) + "]"
	}
	var heldBy []int32 // by card number: the running job holding it, plus one
	var heldRef map[CardRef]int
	if len(cv) == 0 {
		heldBy = make([]int32, len(s.Cluster.lay.Cards))
	} else {
		heldRef = map[CardRef]int{}
	}
	for i, r := range s.Running {
		p := func() string { return idPath(i) }
		r.Job.validate(&v, func() string { return p() + ".spec" })
		if r.Job.ID != "" {
			if other, dup := ids[r.Job.ID]; dup {
				v.add(p()+".spec.id", "duplicate of %s", idPath(other))
			} else {
				ids[r.Job.ID] = i
			}
		}
		if len(r.Cards) == 0 {
			v.add(p()+".cards", "a running job holds at least one card")
		} else if r.Job.Cards >= 1 && len(r.Cards) != r.Job.Cards {
			v.add(p()+".cards", "holds %d cards for a job of %d", len(r.Cards), r.Job.Cards)
		}
		for j, ref := range r.Cards {
			cp := func() string { return p() + ".cards[" + strconv.Itoa(j) + "]" }
			if heldBy != nil {
				c, ok := s.Cluster.lay.CardID(ref)
				if !ok {
					v.add(cp(), "card %s does not exist", ref)
					continue
				}
				if k := heldBy[c]; k > 0 {
					v.add(cp(), "card %s already held by running[%d]", ref, k-1)
				} else {
					heldBy[c] = int32(i + 1)
				}
				continue
			}
			if k, dup := heldRef[ref]; dup {
				v.add(cp(), "card %s already held by running[%d]", ref, k)
			} else {
				heldRef[ref] = i
			}
		}
		if r.Start.IsZero() {
			v.add(p()+".start_time", "must be set")
		} else if !s.Now.IsZero() && r.Start.After(s.Now) {
			v.add(p()+".start_time", "%s is after now %s", r.Start.Format("2006-01-02T15:04:05Z07:00"), s.Now.Format("2006-01-02T15:04:05Z07:00"))
		}
		if !(r.Progress >= 0 && r.Progress <= 1) || math.IsNaN(r.Progress) {
			v.add(p()+".progress", "must be in [0, 1], got %v", r.Progress)
		}
		if r.Kind > Backfill {
			v.add(p()+".kind", "unknown allocation kind %d", r.Kind)
		}
	}
	for i := range s.Queued {
		j := &s.Queued[i]
		p := func() string { return idPath(-1 - i) }
		j.validate(&v, p)
		if j.ID != "" {
			if other, dup := ids[j.ID]; dup {
				v.add(p()+".id", "duplicate of %s", idPath(other))
			} else {
				ids[j.ID] = -1 - i
			}
		}
	}
	return v.err()
}
