package server

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/huitian/huitian/client"
	"github.com/huitian/huitian/model"
	pb "github.com/huitian/huitian/proto/huitian/v1"
	"github.com/huitian/huitian/solver"
)

// TestTokensAreScopedToClusters: a token file maps tokens to the clusters
// they may use; a scoped token gets PermissionDenied for any other
// cluster and for /metrics, an all-clusters token gets everything. Before
// the fix, the file's first line was the only token and any holder could
// read and overwrite any cluster_id.
func TestTokensAreScopedToClusters(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokenFile, []byte("# operators\nall-token\n\n# team a\nteam-a-token a1 a2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ts := start(t, func(c *Config) { c.TokenFile = tokenFile })
	ctx := context.Background()
	teamA := ts.client(client.WithToken("team-a-token"))
	if _, err := teamA.Plan(ctx, connect.NewRequest(planRequest("a1", 2))); err != nil {
		t.Errorf("team a's token on its cluster a1: %v", err)
	}
	if _, err := teamA.GetStatus(ctx, connect.NewRequest(&pb.GetStatusRequest{ClusterId: "a1"})); err != nil {
		t.Errorf("team a's token, GetStatus(a1): %v", err)
	}
	for name, call := range map[string]func() error{
		"Plan": func() error {
			_, err := teamA.Plan(ctx, connect.NewRequest(planRequest("b1", 2)))
			return err
		},
		"ReportEvents": func() error {
			_, err := teamA.ReportEvents(ctx, connect.NewRequest(&pb.ReportEventsRequest{ClusterId: "b1", Events: []*pb.JobEvent{started("j", 0, false)}}))
			return err
		},
		"GetStatus": func() error {
			_, err := teamA.GetStatus(ctx, connect.NewRequest(&pb.GetStatusRequest{ClusterId: "b1"}))
			return err
		},
		"GetJobInsight": func() error {
			_, err := teamA.GetJobInsight(ctx, connect.NewRequest(&pb.GetJobInsightRequest{ClusterId: "b1", JobId: "j"}))
			return err
		},
	} {
		if err := call(); connect.CodeOf(err) != connect.CodePermissionDenied {
			t.Errorf("team a's token, %s on cluster b1: %v, want PermissionDenied", name, err)
		}
	}
	if _, err := ts.client(client.WithToken("all-token")).Plan(ctx, connect.NewRequest(planRequest("b1", 2))); err != nil {
		t.Errorf("the all-clusters token on b1: %v", err)
	}
	for tok, want := range map[string]int{"team-a-token": http.StatusForbidden, "all-token": http.StatusOK} {
		req, _ := http.NewRequest(http.MethodGet, ts.URL+"/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("/metrics with %s: %d, want %d", tok, resp.StatusCode, want)
		}
	}
}

// tuned is an EASY planner that reports a tuner, so that Plan sets the
// per-cluster gauges.
type tuned struct{ solver.Planner }

func (tuned) PlannerStatus() model.PlannerStatus {
	return model.PlannerStatus{Tuner: &model.TunerParams{MaxBackfillRuntime: time.Hour, ProtectFraction: 0.1, Epsilon: 0.05}}
}

// TestClusterLabelsAreBounded: only the first --max-cluster-labels
// clusters get per-cluster series; the rest are counted. Before the fix
// every cluster id became a label (300 Plans with 10 KB ids grew /metrics
// to 12 MB).
func TestClusterLabelsAreBounded(t *testing.T) {
	ts := start(t, func(c *Config) { c.MaxClusterLabels = 5 }, WithPlannerFactory(func(p model.Policy, depth int) (solver.Planner, error) {
		pl, err := solver.New(p, depth)
		return tuned{pl}, err
	}))
	for i := range 30 {
		if _, err := ts.client().Plan(context.Background(), connect.NewRequest(planRequest(fmt.Sprintf("cluster-%02d-%s", i, strings.Repeat("x", 200)), 2))); err != nil {
			t.Fatal(err)
		}
	}
	body, err := httpGet(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(body, "huitian_tuner_epsilon{"); n != 5 {
		t.Errorf("%d clusters with huitian_tuner_epsilon series, want 5", n)
	}
	if got := metricValue(t, ts, "huitian_cluster_series_dropped_total"); got != "25" {
		t.Errorf("huitian_cluster_series_dropped_total = %q, want 25", got)
	}
}
