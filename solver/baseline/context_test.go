package baseline

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/model/modeltest"
)

// bigQueue is a 4×8-card cluster, half busy, with a queue of n jobs.
func bigQueue(t *testing.T, n int) *model.Snapshot {
	t.Helper()
	c := modeltest.Uniform(4, 8, 0)
	now := modeltest.Epoch.Add(10 * time.Hour)
	s := &model.Snapshot{Now: now, Cluster: c}
	for i := range 2 {
		j := modeltest.Job(fmt.Sprintf("r%d", i)).Cards(8).Limit(time.Hour).Build()
		s.Running = append(s.Running, modeltest.Running(j, now.Add(-time.Minute), modeltest.Refs(c.Nodes[i].Name, 0, 8)...))
	}
	for i := range n {
		s.Queued = append(s.Queued, modeltest.Job(fmt.Sprintf("q%03d", i)).Cards(1+i%16).Limit(time.Duration(1+i%5)*time.Hour).Build())
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestPlanStopsWhenTheContextIsDone: a plan whose budget has run out
// stops, with every job not considered pending and the stats saying the
// plan fell back; a cancelled plan returns the context's error. Before
// the fix, Plan ignored its context and walked the whole queue (issue 12
// item 3: conservative on one node of 65,536 cards ran for minutes after
// its caller left).
func TestPlanStopsWhenTheContextIsDone(t *testing.T) {
	s := bigQueue(t, 200)
	for _, p := range []model.Policy{model.PolicyEASY, model.PolicyConservative, model.PolicyHybridDepth, model.PolicyEASYSJBF, model.PolicyFCFS} {
		params, ok := ForPolicy(p, 3)
		if !ok {
			t.Fatalf("no params for %s", p)
		}
		t.Run(p.String(), func(t *testing.T) {
			expired, cancel := context.WithDeadline(context.Background(), time.Unix(0, 0))
			defer cancel()
			d, err := New(params).Plan(expired, s)
			if err != nil {
				t.Fatalf("budget out: %v, want the decision so far", err)
			}
			if !d.Stats.Fallback || len(d.Starts)+len(d.Reservations) != 0 || len(d.Pending) != len(s.Queued) {
				t.Errorf("budget out before the first job: fallback %v, %d starts, %d reservations, %d of %d pending; want fallback and all pending",
					d.Stats.Fallback, len(d.Starts), len(d.Reservations), len(d.Pending), len(s.Queued))
			}
			cancelled, cancel2 := context.WithCancel(context.Background())
			cancel2()
			if _, err := New(params).Plan(cancelled, s); !errors.Is(err, context.Canceled) {
				t.Errorf("cancelled: %v, want context.Canceled", err)
			}
			full, err := New(params).Plan(context.Background(), s)
			if err != nil || full.Stats.Fallback {
				t.Errorf("without a deadline: %v, fallback %v", err, full.Stats.Fallback)
			}
		})
	}
}
