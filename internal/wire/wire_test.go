package wire

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/huitian/huitian/model"
	pb "github.com/huitian/huitian/proto/huitian/v1"
	"github.com/huitian/huitian/solver"
)

func example(t testing.TB) *pb.PlanRequest {
	raw, err := os.ReadFile("../../cmd/huitian/examples/snapshot.json")
	if err != nil {
		t.Fatal(err)
	}
	req := &pb.PlanRequest{}
	if err := protojson.Unmarshal(raw, req); err != nil {
		t.Fatal(err)
	}
	return req
}

// TestEveryProblemNamed: one request with many problems reports all of
// them, each at its field path.
func TestEveryProblemNamed(t *testing.T) {
	req := example(t)
	req.Queued[0].Cards = 0                               // contract
	req.Queued[1].Id = "train-a"                          // duplicate of a running job
	req.Running[1].Cards[0].Node = "gpu-z"                // no such card
	req.Running[2].Cards[1] = req.Running[0].Cards[0]     // held twice
	req.Queued[2].CardsPerNode = 3                        // does not divide 4
	req.Queued[3].MaxPreemptionProbability = 1.5          // contract
	req.Running[3].StartTime = req.Now                    // fine
	req.Cluster.Nodes[1].Name = req.Cluster.Nodes[0].Name // duplicate node
	_, err := Snapshot(req)
	var verr *model.ValidationError
	if !errors.As(err, &verr) || !errors.Is(err, model.ErrInvalid) {
		t.Fatalf("got %v, want a validation error", err)
	}
	want := []string{
		"queued[0].cards",
		"queued[1].id: duplicate of running[0]",
		"running[2].cards[1]: card gpu-a/0 already held by running[0]",
		"queued[2].cards_per_node",
		"queued[3].max_preemption_probability",
		"cluster.nodes[1].name: duplicate of nodes[0]",
	}
	got := err.Error()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("missing %q in:\n%s", w, got)
		}
	}
}

func TestUnknownCard(t *testing.T) {
	req := example(t)
	req.Running[1].Cards[0].Node = "gpu-z"
	_, err := Snapshot(req)
	if err == nil || !strings.Contains(err.Error(), "running[1].cards[0]: card gpu-z/0 does not exist") {
		t.Fatalf("got %v", err)
	}
}

func TestEnumsMapByName(t *testing.T) {
	for v, name := range pb.FragmentClass_name {
		if strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(name, "FRAGMENT_CLASS_"), "_", "-")) != model.FragmentClass(v).String() {
			t.Errorf("fragment %d: %s vs %s", v, name, model.FragmentClass(v))
		}
	}
	for v, name := range pb.PendingReason_name {
		if strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(name, "PENDING_REASON_"), "_", "-")) != model.PendingReason(v).String() {
			t.Errorf("pending %d: %s vs %s", v, name, model.PendingReason(v))
		}
	}
	for v, name := range pb.PreemptionAction_name {
		if strings.ToLower(strings.TrimPrefix(name, "PREEMPTION_ACTION_")) != model.PreemptAction(v).String() {
			t.Errorf("action %d: %s vs %s", v, name, model.PreemptAction(v))
		}
	}
	for v, name := range pb.DomainKind_name {
		if strings.ToLower(strings.TrimPrefix(name, "DOMAIN_KIND_")) != model.DomainKind(v).String() {
			t.Errorf("domain %d: %s vs %s", v, name, model.DomainKind(v))
		}
	}
}

// FuzzSnapshot: any bytes either fail to decode, fail validation with
// problems, or plan without error under every policy — never a panic.
func FuzzSnapshot(f *testing.F) {
	raw, err := os.ReadFile("../../cmd/huitian/examples/snapshot.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(raw)
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"now":"2026-01-01T00:00:00Z","cluster":{"id":"c","nodes":[{"name":"n","cards":[{"index":0}]}]},"queued":[{"id":"j","cards":1,"timeLimit":"60s","submitTime":"2026-01-01T00:00:00Z"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		req := &pb.PlanRequest{}
		if protojson.Unmarshal(data, req) != nil {
			return
		}
		s, err := Snapshot(req)
		if err != nil {
			var verr *model.ValidationError
			if !errors.As(err, &verr) || len(verr.Problems) == 0 {
				t.Fatalf("error without problems: %v", err)
			}
			return
		}
		if len(s.Cluster.Nodes) > 64 || len(s.Queued) > 64 {
			return // keep each input fast
		}
		for _, p := range []model.Policy{model.PolicyEASY, model.PolicyConservative, model.PolicyHuitianGreedy} {
			pl, err := solver.New(p, 2)
			if err != nil {
				t.Fatal(err)
			}
			d, err := pl.Plan(context.Background(), s)
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			_ = Response(d)
		}
	})
}
