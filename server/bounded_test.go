package server

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"

	pb "github.com/huitian/huitian/proto/huitian/v1"
)

// TestDomainTreesAreBounded: a cluster's domains are capped in number
// (--max-domains), in depth and per node, each violation InvalidArgument
// naming its field. Before the fix, a 5,000-deep chain was validated (in
// quadratic time: 0.63 s; 100,000 domains kept a core busy for minutes)
// and planned.
func TestDomainTreesAreBounded(t *testing.T) {
	ts := start(t, func(c *Config) { c.MaxDomains = 6000 })
	ctx := context.Background()
	chain := func(n int) *pb.PlanRequest {
		req := planRequest("c1", 2)
		req.Cluster.Domains = nil
		for i := range n {
			d := &pb.Domain{Id: fmt.Sprintf("d%d", i), Kind: pb.DomainKind_DOMAIN_KIND_SWITCH}
			if i > 0 {
				d.Parent = fmt.Sprintf("d%d", i-1)
			}
			req.Cluster.Domains = append(req.Cluster.Domains, d)
		}
		for _, n := range req.Cluster.Nodes {
			n.Domains = []string{fmt.Sprintf("d%d", len(req.Cluster.Domains)-1)}
		}
		return req
	}
	for _, c := range []struct {
		name  string
		req   *pb.PlanRequest
		field string
	}{
		{"a 5,000-deep chain", chain(5000), "cluster.domains[16].parent"},
		{"more domains than --max-domains", chain(6001), "cluster.domains"},
		{"a node in 17 domains", func() *pb.PlanRequest {
			r := chain(17)
			r.Cluster.Nodes[0].Domains = nil
			for _, d := range r.Cluster.Domains {
				r.Cluster.Nodes[0].Domains = append(r.Cluster.Nodes[0].Domains, d.Id)
			}
			return r
		}(), "cluster.nodes[0].domains"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ts.client().Plan(ctx, connect.NewRequest(c.req))
			if connect.CodeOf(err) != connect.CodeInvalidArgument || !slices.Contains(fieldViolations(t, err), c.field) {
				t.Errorf("got %v, want InvalidArgument naming %s", err, c.field)
			}
		})
	}
	if _, err := ts.client().Plan(ctx, connect.NewRequest(chain(16))); err != nil {
		t.Errorf("a 16-deep chain: %v, want a plan", err)
	}
}

// TestEveryPolicyStopsAtItsBudget: a plan whose time budget runs out
// answers the decision so far with stats.fallback set, the jobs not
// considered pending. Before the fix, the baselines ignored their context
// (conservative on one node of 65,536 cards planned for minutes, after the
// caller had left) and fallback stayed false.
func TestEveryPolicyStopsAtItsBudget(t *testing.T) {
	ts := start(t, nil)
	for _, p := range []pb.Policy{pb.Policy_POLICY_EASY, pb.Policy_POLICY_CONSERVATIVE, pb.Policy_POLICY_FCFS, pb.Policy_POLICY_EASY_SJBF, pb.Policy_POLICY_HYBRID_DEPTH} {
		t.Run(p.String(), func(t *testing.T) {
			req := planRequest("c-"+p.String(), 4)
			for i := range 50 {
				req.Queued = append(req.Queued, job(fmt.Sprintf("extra-%02d", i), 1+i%4, time.Hour, time.Minute))
			}
			// A budget of 1 ns has run out before the planner looks at the
			// first job, whatever the machine's speed.
			req.Options = &pb.PlanOptions{Policy: p, TimeBudget: durationpb.New(time.Nanosecond)}
			resp, err := ts.client().Plan(context.Background(), connect.NewRequest(req))
			if err != nil {
				t.Fatalf("Plan: %v", err)
			}
			if !resp.Msg.GetStats().GetFallback() || len(resp.Msg.GetPending()) != len(req.Queued) {
				t.Errorf("fallback %v, %d of %d pending; want fallback and every job pending",
					resp.Msg.GetStats().GetFallback(), len(resp.Msg.GetPending()), len(req.Queued))
			}
		})
	}
}
