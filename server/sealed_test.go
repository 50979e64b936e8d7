package server

import (
	"context"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/solver"
)

// seeing records the cluster every plan was given.
type seeing struct {
	solver.Planner
	mu   sync.Mutex
	seen []*model.Cluster
}

func (p *seeing) Plan(ctx context.Context, s *model.Snapshot) (*model.Decision, error) {
	p.mu.Lock()
	p.seen = append(p.seen, s.Cluster)
	p.mu.Unlock()
	return p.Planner.Plan(ctx, s)
}

// TestPlansKeepTheSealedCluster: cycle after cycle on the same machine, a
// planner is given the cluster the first cycle sealed (so what it keeps
// for a layout carries over); a changed machine (a card turned unhealthy)
// is sealed anew and kept from then on; another cluster id has its own.
func TestPlansKeepTheSealedCluster(t *testing.T) {
	rec := &seeing{}
	ts := start(t, nil, WithPlannerFactory(func(p model.Policy, depth int) (solver.Planner, error) {
		pl, err := solver.New(p, depth)
		rec.Planner = pl
		return rec, err
	}))
	plan := func(id string, at time.Duration, unhealthy bool) *model.Cluster {
		t.Helper()
		req := planRequest(id, 4)
		req.Now = timestampAt(at)
		req.Cluster.Nodes[3].Cards[7].Unhealthy = unhealthy
		if _, err := ts.client().Plan(context.Background(), connect.NewRequest(req)); err != nil {
			t.Fatal(err)
		}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return rec.seen[len(rec.seen)-1]
	}
	first := plan("a", 0, false)
	if again := plan("a", time.Minute, false); again != first {
		t.Error("the same cluster a minute later was not the one sealed before")
	}
	changed := plan("a", 2*time.Minute, true)
	if changed == first {
		t.Fatal("a changed cluster planned on the old one")
	}
	if !changed.Nodes[3].Cards[7].Unhealthy {
		t.Fatal("the changed cluster lost its change")
	}
	if again := plan("a", 3*time.Minute, true); again != changed {
		t.Error("the changed cluster was not kept for the next cycle")
	}
	if other := plan("b", 3*time.Minute, true); other == changed {
		t.Error("another cluster id planned on cluster a's")
	}
}
