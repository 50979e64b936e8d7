package server

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/huitian/huitian/internal/wire"
	"github.com/huitian/huitian/model"
	pb "github.com/huitian/huitian/proto/huitian/v1"
	"github.com/huitian/huitian/solver"
)

// plannerKey names one planner of a cluster.
type plannerKey struct {
	policy model.Policy
	depth  int
}

// cluster is one cluster's live state.
type cluster struct {
	id string

	// mu guards planners and serializes the cluster's stored writes (events
	// and plan records) with their delivery to the planners, so that the
	// stored order is the order every Learner saw.
	mu       sync.Mutex
	planners map[plannerKey]solver.Planner
	// memory says how each Learner made in this process began (GetStatus);
	// never modified once stored.
	memory map[plannerKey]*pb.PlannerMemory

	last  atomic.Pointer[lastPlan] // replaced whole, never modified
	gen   atomic.Uint64            // bumped after every stored write; part of insight cache keys
	plans atomic.Int64             // plans made since start

	// sealed is the cluster as the last plan saw it, laid out; c.mu
	// guards it. A request whose cluster is the same plans on it, so that
	// what a planner keeps for a layout (the loaded profile, the running
	// jobs' resolved cards) carries over: a cycle then costs what changed.
	sealed *model.Cluster
}

// sameCluster returns the cluster a plan uses for the request's one: the
// one sealed before when they are the same machine, else the request's,
// kept for the next cycle. c.mu is held.
func (c *cluster) sameCluster(got *model.Cluster) *model.Cluster {
	if c.sealed != nil && c.sealed.Same(got) {
		return c.sealed
	}
	c.sealed = got
	return got
}

// lastPlan is what the cluster's last plan left for users: per-job
// insight and the status header. It is never modified once published;
// the sorted ids are computed on first use.
type lastPlan struct {
	header *pb.GetStatusResponse
	jobs   map[string]*pb.JobInsight
	cards  []*pb.CardStatus // GetStatus's cards; in memory only (nil after a restart until the next plan)

	order sync.Once
	ids   []string // jobs' keys in model.CompareIDs order, set by order
}

// sortedIDs returns the plan's job ids in model.CompareIDs order, the
// order ListJobs pages in. Callers must not modify the slice.
func (lp *lastPlan) sortedIDs() []string {
	lp.order.Do(func() {
		lp.ids = make([]string, 0, len(lp.jobs))
		for id := range lp.jobs {
			lp.ids = append(lp.ids, id)
		}
		slices.SortFunc(lp.ids, model.CompareIDs)
	})
	return lp.ids
}

// cluster returns the cluster's state, making it on first use.
func (s *Server) cluster(id string) *cluster {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.clusters[id]
	if !ok {
		c = &cluster{id: id, planners: map[plannerKey]solver.Planner{}, memory: map[plannerKey]*pb.PlannerMemory{}}
		s.clusters[id] = c
	}
	return c
}

// lookup returns the cluster's state if it has any.
func (s *Server) lookup(id string) (*cluster, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.clusters[id]
	return c, ok
}

// plannerLocked returns the cluster's planner for key, making it on first
// use; a new Learner first replays the cluster's stored events. c.mu is held.
func (s *Server) plannerLocked(c *cluster, key plannerKey) (solver.Planner, error) {
	if p, ok := c.planners[key]; ok {
		return p, nil
	}
	p, err := s.newPlanner(key.policy, key.depth)
	if err != nil {
		return nil, err
	}
	if l, ok := p.(solver.Learner); ok {
		start, err := s.restore(c, key, l)
		if err != nil {
			return nil, err
		}
		n, err := s.replay(c.id, start.after, key, l)
		if err != nil {
			return nil, err
		}
		if start.after > 0 {
			s.log.Info("planner restored from its saved memory and the log after it", "cluster", logID(c.id), "policy", key.policy.String(),
				"position", start.after, "entries", n)
		} else {
			s.log.Info("planner rebuilt from the event log", "cluster", logID(c.id), "policy", key.policy.String(), "events", n)
		}
		c.memory[key] = memoryProto(start, n, time.Now())
	}
	c.planners[key] = p
	return p, nil
}

// replay feeds a new Learner the cluster's stored log after position after
// (0: all of it) in stored order: every event, and the decisions this
// planner (key) made.
func (s *Server) replay(cluster string, after uint64, key plannerKey, l solver.Learner) (n int, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: replaying cluster %q's log into a new planner panicked at entry %d (%v): "+
				"run `huitian store check` on the store", ErrStoredData, logID(cluster), n, r)
		}
	}()
	err = s.store.Replay(cluster, after, func(tag byte, raw []byte) error {
		n++
		switch tag {
		case tagEvent:
			ev, err := readEvent(raw)
			if err != nil {
				return fmt.Errorf("%w: cluster %q, log entry %d: %v: run `huitian store check` on the store", ErrStoredData, logID(cluster), n, err)
			}
			l.Observe(ev)
		case tagDecided:
			var rec decidedRecord
			if err := json.Unmarshal(raw, &rec); err != nil {
				return fmt.Errorf("%w: cluster %q, stored decision (entry %d): %v", ErrStoredData, logID(cluster), n, err)
			}
			if rec.Policy == key.policy && rec.Depth == key.depth {
				l.Decided(rec.snapshot(cluster), &rec.Decision)
			}
		default:
			return fmt.Errorf("%w: cluster %q, log entry %d: unknown tag %q", ErrStoredData, logID(cluster), n, tag)
		}
		return nil
	})
	return n, err
}

// readEvent decodes a stored event and checks it as ReportEvents checked it
// on the way in: bytes flipped on disk give an error, not a Learner fed
// garbage.
func readEvent(raw []byte) (model.Event, error) {
	ev := &pb.JobEvent{}
	if err := proto.Unmarshal(raw, ev); err != nil {
		return model.Event{}, fmt.Errorf("stored event: %w", err)
	}
	evs, err := wire.Events(&pb.ReportEventsRequest{ClusterId: "stored", Events: []*pb.JobEvent{ev}})
	if err != nil {
		return model.Event{}, fmt.Errorf("stored event: %w", err)
	}
	return evs[0], nil
}

// decidedRecord is what the log keeps of a Learner's decision, to replay
// its Decided call: the snapshot's time and options (not its jobs) and the
// whole decision.
type decidedRecord struct {
	Policy   model.Policy   `json:"policy"`
	Depth    int            `json:"depth"`
	Now      time.Time      `json:"now"`
	Options  model.Options  `json:"options"`
	Decision model.Decision `json:"decision"`
}

func (r *decidedRecord) snapshot(cluster string) *model.Snapshot {
	return &model.Snapshot{Now: r.Now, Cluster: &model.Cluster{ID: cluster}, Options: r.Options}
}

// learnersLocked returns the cluster's Learners in a fixed order. c.mu is held.
func (c *cluster) learnersLocked() []solver.Learner {
	keys := make([]plannerKey, 0, len(c.planners))
	for k := range c.planners {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b plannerKey) int {
		if a.policy != b.policy {
			return int(a.policy) - int(b.policy)
		}
		return a.depth - b.depth
	})
	var out []solver.Learner
	for _, k := range keys {
		if l, ok := c.planners[k].(solver.Learner); ok {
			out = append(out, l)
		}
	}
	return out
}

// loadPlans restores every stored cluster's last plan.
func (s *Server) loadPlans() error {
	recs, err := s.store.Plans()
	if err != nil {
		return fmt.Errorf("load plans: %w", err)
	}
	for id, rec := range recs {
		lp, err := decodePlan(rec)
		if err != nil {
			return fmt.Errorf("cluster %q: stored plan: %w", id, err)
		}
		s.cluster(id).last.Store(lp)
	}
	return nil
}
