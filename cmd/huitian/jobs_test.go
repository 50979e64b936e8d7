package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/huitian/huitian/client"
	pb "github.com/huitian/huitian/proto/huitian/v1"
	"github.com/huitian/huitian/server"
)

// servePlanned starts the planning service in this process on loopback
// (with the token file, if any), plans two cycles of the embedded example
// snapshot with EASY — 10:00, and 10:10 with the first cycle's starts
// running as it said — reports what happened, and returns the service's
// URL. EASY, not a huitian planner: these goldens are about what users
// read, and EASY's decisions on the example stay put while the huitian
// planners improve.
func servePlanned(t *testing.T, tokenFile string) string {
	t.Helper()
	cfg := server.Defaults()
	cfg.DataDir = t.TempDir()
	cfg.TokenFile = tokenFile
	srv, err := server.New(cfg, server.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln, server.ServeOptions{}) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	url := "http://" + ln.Addr().String()
	var opts []client.Option
	if tokenFile != "" {
		tok, err := firstToken(tokenFile)
		if err != nil {
			t.Fatal(err)
		}
		opts = append(opts, client.WithToken(tok))
	}
	c := client.New(url, opts...)

	// 1. The example at 10:00: llm-16 reserves, three jobs backfill.
	req := &pb.PlanRequest{}
	if err := protojson.Unmarshal(exampleSnapshot, req); err != nil {
		t.Fatal(err)
	}
	req.Options = &pb.PlanOptions{Policy: pb.Policy_POLICY_EASY}
	resp, err := c.Plan(ctx, connect.NewRequest(req))
	if err != nil {
		t.Fatal(err)
	}
	t0 := req.GetNow().AsTime()
	if len(resp.Msg.GetStarts()) == 0 || len(resp.Msg.GetReservations()) == 0 {
		t.Fatalf("fixture: the example's plan has no start or no reservation: %v", resp.Msg)
	}

	// 2. The resource manager starts them and reports it.
	var evs []*pb.JobEvent
	started := map[string]*pb.Start{}
	for _, st := range resp.Msg.GetStarts() {
		started[st.GetJobId()] = st
	}
	var queued []*pb.JobSpec
	for _, j := range req.GetQueued() {
		st, ok := started[j.GetId()]
		if !ok {
			queued = append(queued, j)
			continue
		}
		req.Running = append(req.Running, &pb.RunningJob{Spec: j, Cards: st.GetCards(), StartTime: timestamppb.New(t0),
			Kind: st.GetKind(), ProtectedUntil: st.GetProtectedUntil(), Progress: 0.25})
		evs = append(evs, &pb.JobEvent{JobId: j.GetId(), Kind: pb.JobEventKind_JOB_EVENT_KIND_STARTED, Time: timestamppb.New(t0),
			Spec: j, Allocation: st.GetKind()})
	}
	req.Queued = queued
	if _, err := c.ReportEvents(ctx, connect.NewRequest(&pb.ReportEventsRequest{ClusterId: "demo", Events: evs})); err != nil {
		t.Fatal(err)
	}

	// 3. The next cycle at 10:10, then sweep-1 ends at 10:12.
	req.Now = timestamppb.New(t0.Add(10 * time.Minute))
	if _, err := c.Plan(ctx, connect.NewRequest(req)); err != nil {
		t.Fatal(err)
	}
	sweep := started["sweep-1"]
	if sweep == nil {
		t.Fatalf("fixture: sweep-1 did not start in %v", resp.Msg)
	}
	var spec *pb.JobSpec
	for _, r := range req.GetRunning() {
		if r.GetSpec().GetId() == "sweep-1" {
			spec = r.GetSpec()
		}
	}
	fin := &pb.JobEvent{JobId: "sweep-1", Kind: pb.JobEventKind_JOB_EVENT_KIND_FINISHED, Time: timestamppb.New(t0.Add(12 * time.Minute)),
		StartTime: timestamppb.New(t0), Spec: spec, Allocation: sweep.GetKind(), Exit: pb.ExitState_EXIT_STATE_COMPLETED}
	if _, err := c.ReportEvents(ctx, connect.NewRequest(&pb.ReportEventsRequest{ClusterId: "demo", Events: []*pb.JobEvent{fin}})); err != nil {
		t.Fatal(err)
	}
	return url
}

// golden compares out with testdata/name, rewriting it under -update.
func golden(t *testing.T, name, out string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create)", err)
	}
	if out != string(want) {
		t.Errorf("%s changed; got:\n%s\nwant:\n%s", name, out, want)
	}
}

// TestJobsAndJobGolden: huitian jobs (with and without filters, as a
// table and as JSON) and huitian job (every state the fixture has, in
// words and as JSON) against a real service that planned the example,
// through the RPC client.
func TestJobsAndJobGolden(t *testing.T) {
	url := servePlanned(t, "")
	base := []string{"--server", url, "--cluster", "demo", "--tz", "UTC"}
	for _, c := range []struct {
		golden string
		args   []string
	}{
		{"jobs.golden", []string{"jobs"}},
		{"jobs-running-backfill.golden", []string{"jobs", "--state", "running", "--kind", "backfill"}},
		{"jobs-erin-queued.golden", []string{"jobs", "--user", "erin", "--state", "queued"}},
		{"jobs-search-finished.golden", []string{"jobs", "--class", "search", "--state", "finished,pending"}},
		{"jobs-nobody.golden", []string{"jobs", "--user", "nobody"}},
		{"jobs-reserved.json.golden", []string{"jobs", "--state", "reserved", "--json"}},
		{"job-eval-1.golden", []string{"job", "eval-1"}},
		{"job-hpo-2.golden", []string{"job", "hpo-2"}},
		{"job-train-a.golden", []string{"job", "train-a"}},
		{"job-llm-16.golden", []string{"job", "llm-16"}},
		{"job-finetune-4.golden", []string{"job", "finetune-4"}},
		{"job-pretrain-64.golden", []string{"job", "pretrain-64"}},
		{"job-sweep-1.golden", []string{"job", "sweep-1"}},
		{"job-eval-1.json.golden", []string{"job", "eval-1", "--json"}},
	} {
		t.Run(c.golden, func(t *testing.T) {
			out, stderr, err := run(t, "", append(c.args, base...)...)
			if err != nil {
				t.Fatalf("huitian %v: %v\n%s", c.args, err, stderr)
			}
			golden(t, c.golden, out)
		})
	}
}

// TestJobsAndJobErrors: bad flags exit 2 naming the flag; an unknown job
// or cluster, and a service that wants a token, are errors that say so.
func TestJobsAndJobErrors(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("# users\ns3cret demo\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	url := servePlanned(t, tokens)
	base := []string{"--server", url, "--tz", "UTC", "--token-file", tokens}
	for _, c := range []struct {
		name string
		args []string
		code int    // exit status, 0: any error
		want string // in the error
	}{
		{"no cluster", []string{"jobs", "--server", url}, 2, "--cluster"},
		{"unknown state", append([]string{"jobs", "--cluster", "demo", "--state", "runing"}, base...), 2, `unknown state "runing"`},
		{"unknown kind", append([]string{"jobs", "--cluster", "demo", "--kind", "spot"}, base...), 2, "--kind"},
		{"unknown zone", append([]string{"jobs", "--cluster", "demo"}, append(base, "--tz", "Mars/Olympus")...), 2, "--tz"},
		{"unknown job", append([]string{"job", "nope", "--cluster", "demo"}, base...), 0, "not_found"},
		{"another cluster", append([]string{"jobs", "--cluster", "other"}, base...), 0, "permission_denied"},
		{"no token", []string{"jobs", "--cluster", "demo", "--server", url}, 0, "unauthenticated"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, _, err := run(t, "", c.args...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("huitian %v: %v, want an error with %q", c.args, err, c.want)
			}
			var ee *exitError
			if c.code != 0 && (!errors.As(err, &ee) || ee.code != c.code) {
				t.Errorf("huitian %v: %v, want exit status %d", c.args, err, c.code)
			}
			if out != "" {
				t.Errorf("stdout not empty: %q", out)
			}
		})
	}
	// With the token, it lists.
	out, _, err := run(t, "", append([]string{"jobs", "--cluster", "demo", "--state", "reserved"}, base...)...)
	if err != nil || !strings.Contains(out, "llm-16") {
		t.Errorf("with the token: %v\n%s", err, out)
	}
}

// TestVersion: --version and version print the module version and the
// commit as the build recorded them.
func TestVersion(t *testing.T) {
	out, _, err := run(t, "", "--version")
	if err != nil {
		t.Fatal(err)
	}
	if want := "huitian " + version() + "\n"; out != want {
		t.Errorf("--version: %q, want %q", out, want)
	}
	if out2, _, _ := run(t, "", "version"); out2 != out {
		t.Errorf("version: %q, --version: %q", out2, out)
	}
	for _, c := range []struct {
		name     string
		mod      string
		settings []debug.BuildSetting
		want     string
	}{
		{"stamped", "v0.0.0-20261201140211-17a5e0a50f84+dirty", []debug.BuildSetting{
			{Key: "vcs.revision", Value: "17a5e0a50f849a8ce44c6cb688ce6291ac7e81ff"}, {Key: "vcs.time", Value: "2026-12-01T14:02:11Z"}, {Key: "vcs.modified", Value: "true"}},
			"v0.0.0-20261201140211-17a5e0a50f84+dirty, commit 17a5e0a50f849a8ce44c6cb688ce6291ac7e81ff (2026-12-01T14:02:11Z), modified, go1.26"},
		{"a release", "v1.2.3", []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "false"}},
			"v1.2.3, commit abc, go1.26"},
	} {
		if got := versionLine(c.mod, c.settings, "go1.26"); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	if got := versionLine("", nil, "go1.26"); !strings.HasPrefix(got, "(devel), commit ") {
		t.Errorf("unstamped: %q, want (devel) and what is known of the commit", got)
	}
}

// TestJobSentence: the one-line terms of a job, in the words users read,
// for figures the example's planner does not produce (a risky backfill).
func TestJobSentence(t *testing.T) {
	day := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	ts := func(h, m int) *timestamppb.Timestamp {
		return timestamppb.New(day.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute))
	}
	at := func(t *timestamppb.Timestamp) string { return clock(t, ts(10, 50), time.UTC) }
	risky := &pb.JobInsight{JobId: "eval-7", State: pb.JobState_JOB_STATE_RUNNING, Kind: pb.AllocationKind_ALLOCATION_KIND_BACKFILL,
		Cards: []*pb.CardRef{{Node: "gpu-b", Index: 2}, {Node: "gpu-b", Index: 3}}, StartTime: ts(10, 42), ProtectedUntil: ts(11, 12),
		ExpectedRetention: durationpb.New(2*time.Hour + 10*time.Minute), PreemptionProbability: 0.04, ClaimedBy: "llm-16"}
	claimer := &pb.JobInsight{JobId: "llm-16", State: pb.JobState_JOB_STATE_RESERVED, RequestedCards: 16, EstimatedStart: ts(13, 5)}
	for _, c := range []struct {
		name    string
		in      *pb.JobInsight
		claimer *pb.JobInsight
		want    string
	}{
		{"risky backfill", risky, claimer,
			"backfill on gpu-b cards 2–3 since 10:42; protected until 11:12; expected to keep its cards 2 h 10 min; 4% chance of preemption (a 16-card job, llm-16, is reserved from 13:05)"},
		{"the claimer unknown", risky, nil,
			"backfill on gpu-b cards 2–3 since 10:42; protected until 11:12; expected to keep its cards 2 h 10 min; 4% chance of preemption (llm-16 holds a reservation on its cards)"},
		{"starting, unbounded, on two nodes", &pb.JobInsight{State: pb.JobState_JOB_STATE_STARTING, Kind: pb.AllocationKind_ALLOCATION_KIND_BACKFILL,
			Cards: []*pb.CardRef{{Node: "gpu-a", Index: 7}, {Node: "gpu-c", Index: 0}, {Node: "gpu-c", Index: 4}}, RetentionUnbounded: true, PreemptionProbability: 0.0004},
			nil, "starting now as backfill on gpu-a card 7 + gpu-c cards 0, 4; keeps its cards until it ends; <0.1% chance of preemption"},
		{"suspended", &pb.JobInsight{State: pb.JobState_JOB_STATE_SUSPENDED, EventTime: ts(12, 0)}, nil,
			"suspended (checkpointed) at 12:00; waits to resume"},
		{"requeued the next day", &pb.JobInsight{State: pb.JobState_JOB_STATE_REQUEUED, EventTime: timestamppb.New(day.Add(26 * time.Hour))}, nil,
			"preempted and requeued at Mon 30 Nov 02:00; it starts over"},
	} {
		if got := sentence(c.in, c.claimer, at); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
	for d, want := range map[time.Duration]string{
		45 * time.Second: "45 s", 50 * time.Minute: "50 min", 2*time.Hour + 10*time.Minute: "2 h 10 min", 2 * time.Hour: "2 h",
		59*time.Minute + 50*time.Second: "1 h", 3*24*time.Hour + 4*time.Hour: "3 d 4 h",
	} {
		if got := durationWords(d); got != want {
			t.Errorf("durationWords(%s) = %q, want %q", d, got, want)
		}
	}
}
