package server

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"connectrpc.com/connect"

	pb "github.com/huitian/huitian/proto/huitian/v1"
)

// TestInsightKeysDoNotCollide: two clusters' jobs never share an insight
// cache entry. Before the fix the key joined cluster id, job id and
// generation with NUL bytes, so cluster "a" with job "b\x000" and cluster
// "a\x00b" with job "0" shared a key, and GetJobInsight("a\x00b", "0")
// answered the other cluster's job. Now such ids are refused at the edge,
// and the key is unambiguous for any ids.
func TestInsightKeysDoNotCollide(t *testing.T) {
	ts := start(t, nil)
	ctx := context.Background()
	plan := func(cluster, jobID string) error {
		req := planRequest(cluster, 2)
		req.Queued[1].Id = jobID
		_, err := ts.client().Plan(ctx, connect.NewRequest(req))
		return err
	}
	errA, errB := plan("a", "b\x000"), plan("a\x00b", "0")
	if errA == nil && errB == nil {
		in, err := ts.client().GetJobInsight(ctx, connect.NewRequest(&pb.GetJobInsightRequest{ClusterId: "a\x00b", JobId: "0"}))
		if err == nil && in.Msg.GetInsight().GetJobId() != "0" {
			t.Fatalf("GetJobInsight(a\\x00b, 0) answered job %q of another cluster", in.Msg.GetInsight().GetJobId())
		}
	}
	for _, err := range []error{errA, errB} {
		if connect.CodeOf(err) != connect.CodeInvalidArgument {
			t.Errorf("Plan with a NUL in an id: %v, want InvalidArgument", err)
		}
	}

	seen := map[string][2]string{}
	ids := []string{"", "a", "b", "ab", "a:b", "1:a", "a#1", "#", "1", "a1", "1#1"}
	for _, c := range ids {
		for _, j := range ids {
			for _, gen := range []uint64{1, 11} {
				k := insightKey(c, j, gen)
				if prev, dup := seen[k]; dup {
					t.Errorf("insightKey(%q, %q, %d) = %q, also for %q", c, j, gen, k, prev)
				}
				seen[k] = [2]string{c, j + fmt.Sprint("@", gen)}
			}
		}
	}
}

// TestInsightForUnknownClusterCreatesNothing: GetJobInsight for a cluster
// never planned and without events is NotFound and leaves nothing behind.
// Before the fix, every such call made cluster state (4,000 calls with
// 64 KiB ids took the server from 34 to 538 MB), after which GetStatus
// answered 200 for those ids, and full ids were logged.
func TestInsightForUnknownClusterCreatesNothing(t *testing.T) {
	var logs strings.Builder
	ts := start(t, nil, WithLogger(newTestLogger(&logs)))
	ctx := context.Background()
	long := strings.Repeat("x", 250)
	for i := range 50 {
		id := fmt.Sprintf("%s-%02d", long[:200], i)
		_, err := ts.client().GetJobInsight(ctx, connect.NewRequest(&pb.GetJobInsightRequest{ClusterId: id, JobId: "j"}))
		if connect.CodeOf(err) != connect.CodeNotFound {
			t.Fatalf("GetJobInsight(never planned): %v, want NotFound", err)
		}
		if _, err := ts.client().GetStatus(ctx, connect.NewRequest(&pb.GetStatusRequest{ClusterId: id})); connect.CodeOf(err) != connect.CodeNotFound {
			t.Fatalf("GetStatus after GetJobInsight: %v, want NotFound", err)
		}
	}
	ts.mu.Lock()
	n := len(ts.clusters)
	ts.mu.Unlock()
	if n != 0 {
		t.Errorf("%d clusters made by GetJobInsight calls, want 0", n)
	}
	if strings.Contains(logs.String(), long[:200]) {
		t.Errorf("a full 200-byte id reached the log:\n%.500s", logs.String())
	}
	// A cluster known only by its events (after a restart, say) answers.
	report(t, ts, "events-only", started("j1", 0, false))
	if _, err := ts.client().GetJobInsight(ctx, connect.NewRequest(&pb.GetJobInsightRequest{ClusterId: "events-only", JobId: "j1"})); err != nil {
		t.Errorf("GetJobInsight for a cluster with events: %v", err)
	}
}
