package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"buf.build/go/protovalidate"
	"connectrpc.com/connect"

	pb "github.com/huitian/huitian/proto/huitian/v1"
)

func insightOf(t *testing.T, ts *testServer, cluster, job string) *pb.JobInsight {
	t.Helper()
	resp, err := ts.client().GetJobInsight(context.Background(), connect.NewRequest(&pb.GetJobInsightRequest{ClusterId: cluster, JobId: job}))
	if err != nil {
		t.Fatalf("GetJobInsight(%s): %v", job, err)
	}
	if err := protovalidate.Validate(resp.Msg); err != nil {
		t.Errorf("GetJobInsight(%s) breaks the contract: %v", job, err)
	}
	return resp.Msg.GetInsight()
}

func TestJobInsightFollowsPlanThenEvents(t *testing.T) {
	ts := start(t, nil)
	ctx := context.Background()
	resp, err := ts.client().Plan(ctx, connect.NewRequest(planRequest("c1", 4)))
	if err != nil {
		t.Fatal(err)
	}
	// The plan: "big" reserves, "short" backfills, "run-000" runs.
	if got := insightOf(t, ts, "c1", "big"); got.State != pb.JobState_JOB_STATE_RESERVED || got.EstimatedStart == nil || len(got.Cards) == 0 {
		t.Errorf("big: %v, want RESERVED with cards and an estimated start", got)
	}
	st := resp.Msg.GetStarts()[0]
	got := insightOf(t, ts, "c1", st.GetJobId())
	if got.State != pb.JobState_JOB_STATE_STARTING || got.Kind != st.GetKind() || len(got.Cards) != len(st.GetCards()) || got.Message == "" {
		t.Errorf("%s: %v, want STARTING as the plan says (%v)", st.GetJobId(), got, st)
	}
	if got.Estimate != nil {
		t.Errorf("EASY explains no estimate, got %v", got.Estimate)
	}
	if got := insightOf(t, ts, "c1", "run-000"); got.State != pb.JobState_JOB_STATE_RUNNING || len(got.Cards) != 8 {
		t.Errorf("run-000: %v, want RUNNING on 8 cards", got)
	}
	// Read twice: the second is a cache hit. Ristretto applies a Set
	// asynchronously; Wait flushes it so the second read can see it.
	ts.cache.Wait()
	insightOf(t, ts, "c1", "run-000")
	if ts.cache.Metrics.Hits() == 0 {
		t.Errorf("no insight cache hit after reading the same job twice with no write between")
	}

	// Events move the state, whatever order they arrive in.
	id := st.GetJobId()
	report(t, ts, "c1", finished(id, 0, 20*time.Minute))
	if got := insightOf(t, ts, "c1", id); got.State != pb.JobState_JOB_STATE_FINISHED || got.Exit != pb.ExitState_EXIT_STATE_COMPLETED {
		t.Errorf("%s after finishing: %v, want FINISHED COMPLETED", id, got)
	}
	report(t, ts, "c1", started(id, 0, true))
	if got := insightOf(t, ts, "c1", id); got.State != pb.JobState_JOB_STATE_FINISHED {
		t.Errorf("%s after a late start event: %v, want still FINISHED", id, got)
	}
	report(t, ts, "c1", &pb.JobEvent{JobId: "run-000", Kind: pb.JobEventKind_JOB_EVENT_KIND_PREEMPTED, Time: timestampAt(time.Minute),
		Action: pb.PreemptionAction_PREEMPTION_ACTION_SUSPEND})
	if got := insightOf(t, ts, "c1", "run-000"); got.State != pb.JobState_JOB_STATE_SUSPENDED {
		t.Errorf("run-000 after a suspend: %v, want SUSPENDED", got)
	}

	// Unknown jobs and clusters are NotFound; a restart keeps the insight.
	for _, q := range [][2]string{{"c1", "nope"}, {"nowhere", "big"}} {
		_, err := ts.client().GetJobInsight(ctx, connect.NewRequest(&pb.GetJobInsightRequest{ClusterId: q[0], JobId: q[1]}))
		if connect.CodeOf(err) != connect.CodeNotFound {
			t.Errorf("%v: got %v, want NotFound", q, err)
		}
	}
	if err := ts.stop(); err != nil {
		t.Fatal(err)
	}
	ts2 := startAt(t, ts.cfg)
	if got := insightOf(t, ts2, "c1", "big"); got.State != pb.JobState_JOB_STATE_RESERVED {
		t.Errorf("big after a restart: %v, want RESERVED", got)
	}
	if got := insightOf(t, ts2, "c1", id); got.State != pb.JobState_JOB_STATE_FINISHED {
		t.Errorf("%s after a restart: %v, want FINISHED", id, got)
	}
}

func TestStatusReportsOnlyWhatThePlannerHas(t *testing.T) {
	ts := start(t, nil)
	ctx := context.Background()
	_, err := ts.client().GetStatus(ctx, connect.NewRequest(&pb.GetStatusRequest{ClusterId: "c1"}))
	if connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("status of an unknown cluster: got %v, want NotFound", err)
	}
	if _, err := ts.client().Plan(ctx, connect.NewRequest(planRequest("c1", 2))); err != nil {
		t.Fatal(err)
	}
	report(t, ts, "c1", started("a", 0, false))
	resp, err := ts.client().GetStatus(ctx, connect.NewRequest(&pb.GetStatusRequest{ClusterId: "c1"}))
	if err != nil {
		t.Fatal(err)
	}
	st := resp.Msg
	if st.Plans != 1 || st.Events != 1 || st.GetLastStats().GetSolver() != "easy" || st.LastPolicy != pb.Policy_POLICY_EASY || st.LastPlanTime == nil {
		t.Errorf("status %v: want 1 plan, 1 event, easy stats", st)
	}
	if st.Tuner != nil || st.Measures != nil || len(st.Fragments) != 0 {
		t.Errorf("EASY has no tuner, measures or fragments; status says %v %v %v", st.Tuner, st.Measures, st.Fragments)
	}
	if err := protovalidate.Validate(st); err != nil {
		t.Errorf("status breaks the contract: %v", err)
	}
	body := metricsText(t, ts)
	for _, absent := range []string{"huitian_tuner_epsilon{", "huitian_backfill_completion_rate{", "huitian_lp_gap{"} {
		if strings.Contains(body, absent) {
			t.Errorf("/metrics has %s for a planner that reports none", absent)
		}
	}
	for _, present := range []string{`huitian_decisions_total{kind="reservation",policy="easy"} 1`, "huitian_plan_duration_seconds_count{policy=\"easy\"} 1",
		`huitian_events_total{kind="started",result="accepted"} 1`, "huitian_insight_cache_hit_ratio"} {
		if !strings.Contains(body, present) {
			t.Errorf("/metrics lacks %s", present)
		}
	}

	// A planner with a tuner (huitian) fills them, and the contract holds
	// (absent rates stay absent).
	req := planRequest("c2", 2)
	req.Options = &pb.PlanOptions{Policy: pb.Policy_POLICY_HUITIAN_GREEDY}
	if _, err := ts.client().Plan(ctx, connect.NewRequest(req)); err != nil {
		t.Skipf("huitian-greedy: %v", err)
	}
	resp, err = ts.client().GetStatus(ctx, connect.NewRequest(&pb.GetStatusRequest{ClusterId: "c2"}))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Msg.Tuner == nil || resp.Msg.Measures == nil {
		t.Errorf("huitian-greedy status lacks the tuner or the measures: %v", resp.Msg)
	}
	if resp.Msg.GetMeasures().GetCompletionRate() != nil {
		t.Errorf("no backfill job has ended, yet the completion rate is %v", resp.Msg.GetMeasures().GetCompletionRate())
	}
	if err := protovalidate.Validate(resp.Msg); err != nil {
		t.Errorf("status breaks the contract: %v", err)
	}
	if body := metricsText(t, ts); !strings.Contains(body, `huitian_tuner_epsilon{cluster="c2"}`) ||
		!strings.Contains(body, `huitian_tuner_hold_preemption{cluster="c2"} 0`) {
		t.Errorf("/metrics lacks the tuner's epsilon or its preemption hold (0) for c2")
	}
}

func metricsText(t *testing.T, ts *testServer) string {
	t.Helper()
	resp, err := httpGet(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	return resp
}
