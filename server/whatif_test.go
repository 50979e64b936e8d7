package server

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/huitian/huitian/client"
	"github.com/huitian/huitian/model"
	pb "github.com/huitian/huitian/proto/huitian/v1"
	"github.com/huitian/huitian/proto/huitian/v1/huitianv1connect"
	"github.com/huitian/huitian/sim"
	"github.com/huitian/huitian/sim/trace"
	"github.com/huitian/huitian/solver"
)

// smallSWF is a dozen jobs on a 4-processor machine, busy enough that EASY
// backfills and FCFS does not.
const smallSWF = `; Version: 2.2
; Computer: test machine
; MaxJobs: 12
; MaxRecords: 12
; MaxProcs: 4
; MaxNodes: 4
    1     0  -1   100  2  -1 -1  2   200  -1 1  1  1 -1 1 -1 -1 -1
    2    10  -1   300  4  -1 -1  4   400  -1 1  2  1 -1 1 -1 -1 -1
    3    20  -1    50  1  -1 -1  1   100  -1 1  3  1 -1 1 -1 -1 -1
    4    30  -1   500  3  -1 -1  3   600  -1 1  1  1 -1 1 -1 -1 -1
    5    40  -1    20  1  -1 -1  1    60  -1 1  2  1 -1 1 -1 -1 -1
    6    50  -1   200  2  -1 -1  2   300  -1 1  3  1 -1 1 -1 -1 -1
    7    60  -1    80  1  -1 -1  1    90  -1 1  1  1 -1 1 -1 -1 -1
    8    70  -1  1000  4  -1 -1  4  1200  -1 1  2  1 -1 1 -1 -1 -1
    9    80  -1    30  1  -1 -1  1    50  -1 1  3  1 -1 1 -1 -1 -1
   10    90  -1   150  2  -1 -1  2   150  -1 1  1  1 -1 1 -1 -1 -1
   11   100  -1   400  1  -1 -1  1   500  -1 1  2  1 -1 1 -1 -1 -1
   12   110  -1    10  3  -1 -1  3    20  -1 1  3  1 -1 1 -1 -1 -1
`

// The policies the small trace is replayed under: the two baselines the
// issue names and both huitian planners (Learners, with backfill
// accounting), in an order that is not the enum's.
var smallPolicies = []pb.Policy{pb.Policy_POLICY_EASY, pb.Policy_POLICY_FCFS, pb.Policy_POLICY_HUITIAN_GREEDY, pb.Policy_POLICY_HUITIAN}

// bigSynth runs for a long while (tens of seconds under -race): an
// overloaded cluster with a long queue.
const (
	bigSynth   = "synth:jobs=20000,seed=1,load=2,cards=256"
	bigCluster = "hgx:32"
)

func uploadRequest(data []byte, policies ...pb.Policy) *pb.WhatIfRequest {
	return &pb.WhatIfRequest{
		Trace:    &pb.WhatIfRequest_TraceData{TraceData: data},
		Format:   pb.TraceFormat_TRACE_FORMAT_SWF,
		Cluster:  &pb.WhatIfRequest_ClusterPreset{ClusterPreset: "flat:4"},
		Policies: policies,
	}
}

// whatIfStream is what one call streamed.
type whatIfStream struct {
	progress   []*pb.WhatIfProgress
	comparison *pb.WhatIfComparison
}

// callWhatIf reads a whole stream and checks its shape: progress messages,
// then exactly one comparison, last.
func callWhatIf(t *testing.T, c huitianv1connect.PlannerServiceClient, req *pb.WhatIfRequest) (*whatIfStream, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	st, err := c.WhatIf(ctx, connect.NewRequest(req))
	if err != nil {
		return nil, err
	}
	defer st.Close()
	out := &whatIfStream{}
	for st.Receive() {
		msg := st.Msg()
		if out.comparison != nil {
			t.Fatalf("a message after the comparison: %v", msg)
		}
		switch r := msg.GetResult().(type) {
		case *pb.WhatIfResponse_Progress:
			out.progress = append(out.progress, r.Progress)
		case *pb.WhatIfResponse_Comparison:
			out.comparison = r.Comparison
		default:
			t.Fatalf("an empty message: %v", msg)
		}
	}
	if err := st.Err(); err != nil {
		return out, err
	}
	if out.comparison == nil {
		t.Fatal("the stream ended without a comparison")
	}
	return out, nil
}

// directRun replays a trace with sim.Run, as `huitian whatif` does.
func directRun(t *testing.T, tr *trace.Trace, cluster string, p pb.Policy) *sim.Result {
	t.Helper()
	mp := map[pb.Policy]model.Policy{
		pb.Policy_POLICY_FCFS: model.PolicyFCFS, pb.Policy_POLICY_EASY: model.PolicyEASY,
		pb.Policy_POLICY_HUITIAN: model.PolicyHuitian, pb.Policy_POLICY_HUITIAN_GREEDY: model.PolicyHuitianGreedy,
	}[p]
	pl, err := solver.New(mp, 0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := sim.ParseCluster(cluster, tr.MaxCards)
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(context.Background(), tr.Jobs, pl, sim.Config{Cluster: c, Options: model.Options{Policy: mp}})
	if err != nil {
		t.Fatalf("sim.Run %s: %v", p, err)
	}
	return res
}

func readSmall(t *testing.T) *trace.Trace {
	t.Helper()
	tr, err := trace.ReadSWF(strings.NewReader(smallSWF), trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Jobs) != 12 {
		t.Fatalf("the small trace has %d jobs, want 12", len(tr.Jobs))
	}
	return tr
}

// checkSummary compares one policy's result with a direct run's summary:
// counts and ratios exactly, seconds to the nanosecond.
func checkSummary(t *testing.T, got *pb.PolicyResult, want sim.Summary) {
	t.Helper()
	checkResult(t, got, want, true)
}

// checkResult is checkSummary, with the main-job fields checked only when
// main is set (the CLI's JSON has the delta, not the main jobs' wait).
func checkResult(t *testing.T, got *pb.PolicyResult, want sim.Summary, main bool) {
	t.Helper()
	p := got.GetPolicy()
	secs := func(name string, d interface{ AsDuration() time.Duration }, want float64) {
		if d == nil {
			t.Errorf("%s %s: absent", p, name)
			return
		}
		if g := d.AsDuration().Seconds(); math.Abs(g-want) > 2e-9 {
			t.Errorf("%s %s = %v s, want %v s", p, name, g, want)
		}
	}
	// A rate with nothing to measure is absent, never 0.
	present := func(name string, got *wrapperspb.DoubleValue, want *float64) {
		switch {
		case (got == nil) != (want == nil):
			t.Errorf("%s %s = %v, want %v (presence differs)", p, name, got, want)
		case got != nil && got.GetValue() != *want:
			t.Errorf("%s %s = %v, want %v", p, name, got.GetValue(), *want)
		}
	}
	present("backfill_completion_rate", got.BackfillCompletionRate, want.BackfillCompletionRate)
	present("backfill_utilization", got.BackfillUtilization, want.BackfillUtilization)
	present("utilization_while_queued", got.UtilizationWhileQueued, want.UtilizationQueued)
	if main {
		switch {
		case (got.GetMainMeanWait() == nil) != (want.MainAvgWait == nil):
			t.Errorf("%s main_mean_wait = %v, want %v (presence differs)", p, got.GetMainMeanWait(), want.MainAvgWait)
		case want.MainAvgWait != nil:
			secs("main_mean_wait", got.GetMainMeanWait(), *want.MainAvgWait)
		}
	}
	secs("median_wait", got.GetMedianWait(), want.MedianWait)
	secs("mean_flow", got.GetMeanFlow(), want.AvgFlow)
	type count struct {
		name      string
		got, want int64
	}
	counts := []count{
		{"never_started", got.GetNeverStarted(), int64(want.NeverStarted)},
		{"regular_starts", got.GetRegularStarts(), int64(want.RegularStarts)},
		{"cycles", got.GetCycles(), int64(want.Cycles)},
	}
	if main {
		counts = append(counts, count{"main_jobs", got.GetMainJobs(), int64(want.MainJobs)})
	}
	for _, f := range counts {
		if f.got != f.want {
			t.Errorf("%s %s = %d, want %d", p, f.name, f.got, f.want)
		}
	}
	if got.GetLostCardSeconds() != want.LostCardSeconds {
		t.Errorf("%s lost_card_seconds = %v, want %v", p, got.GetLostCardSeconds(), want.LostCardSeconds)
	}
	if got.GetJobs() != int64(want.Jobs) {
		t.Errorf("%s jobs = %d, want %d", p, got.GetJobs(), want.Jobs)
	}
	secs("makespan", got.GetMakespan(), float64(want.Makespan))
	secs("mean_wait", got.GetMeanWait(), want.AvgWait)
	secs("p95_wait", got.GetP95Wait(), want.P95Wait)
	for _, f := range []struct {
		name      string
		got, want float64
	}{
		{"mean_bounded_slowdown", got.GetMeanBoundedSlowdown(), want.AvgBSLD},
		{"utilization", got.GetUtilization(), want.Utilization},
	} {
		if f.got != f.want {
			t.Errorf("%s %s = %v, want %v", p, f.name, f.got, f.want)
		}
	}
	if got.GetBackfillStarts() != int64(want.BackfillStarts) {
		t.Errorf("%s backfill_starts = %d, want %d", p, got.GetBackfillStarts(), want.BackfillStarts)
	}
	if n := got.GetSuspensions() + got.GetRequeues(); n != int64(want.Preemptions) {
		t.Errorf("%s suspensions + requeues = %d, want %d preemptions", p, n, want.Preemptions)
	}
	if d := got.GetMeanCycleTime(); d == nil || d.AsDuration() < 0 {
		t.Errorf("%s mean_cycle_time = %v, want a duration ≥ 0", p, d)
	}
}

// checkClasses compares one policy's size classes, head delay and lost
// share with a run's summary and its same-job comparison with the
// reference (nil: the RPC must have none).
func checkClasses(t *testing.T, got *pb.PolicyResult, want sim.Summary, same []sim.SameJobs) {
	t.Helper()
	p := got.GetPolicy()
	secs := func(name string, d interface{ AsDuration() time.Duration }, want float64) {
		t.Helper()
		if g := d.AsDuration().Seconds(); math.Abs(g-want) > 2e-9 {
			t.Errorf("%s %s = %v s, want %v s", p, name, g, want)
		}
	}
	ratio := func(name string, got *wrapperspb.DoubleValue, want *float64) {
		t.Helper()
		switch {
		case (got == nil) != (want == nil):
			t.Errorf("%s %s = %v, want %v (presence differs)", p, name, got, want)
		case got != nil && math.Abs(got.GetValue()-*want) > 1e-12:
			t.Errorf("%s %s = %v, want %v", p, name, got.GetValue(), *want)
		}
	}
	ratio("lost_share", got.GetLostShare(), want.LostShare)
	hd := got.GetHeadDelay()
	if hd.GetJobs() != int64(want.HeadDelay.Jobs) {
		t.Errorf("%s head_delay.jobs = %d, want %d", p, hd.GetJobs(), want.HeadDelay.Jobs)
	}
	secs("head_delay.mean", hd.GetMean(), want.HeadDelay.Mean)
	secs("head_delay.p95", hd.GetP95(), want.HeadDelay.P95)
	secs("head_delay.max", hd.GetMax(), want.HeadDelay.Max)
	if hd.GetHeld() != int64(want.HeadDelay.Held) {
		t.Errorf("%s head_delay.held = %d, want %d", p, hd.GetHeld(), want.HeadDelay.Held)
	}
	secs("head_delay.held_mean", hd.GetHeldMean(), want.HeadDelay.HeldMean)
	secs("head_delay.held_max", hd.GetHeldMax(), want.HeadDelay.HeldMax)
	cs := got.GetSizeClasses()
	if len(cs) != len(want.Classes) || len(cs) != sim.NumClasses {
		t.Fatalf("%s: %d size classes, want %d", p, len(cs), len(want.Classes))
	}
	for i, c := range cs {
		w := want.Classes[i]
		if c.GetClass() != w.Class || int(c.GetMinCards()) != w.MinCards || int(c.GetMaxCards()) != w.MaxCards ||
			c.GetJobs() != int64(w.Jobs) || c.GetPreemptions() != int64(w.Preemptions) || math.Abs(c.GetMeanBoundedSlowdown()-w.MeanBSLD) > 1e-12 {
			t.Errorf("%s class %d = %v, want %+v", p, i, c, w)
		}
		secs("class mean_wait", c.GetMeanWait(), w.MeanWait)
		secs("class p95_wait", c.GetP95Wait(), w.P95Wait)
		v := c.GetVsReference()
		if same == nil {
			if v != nil {
				t.Errorf("%s class %s: vs_reference %v without a reference", p, w.Class, v)
			}
			continue
		}
		sj := same[i]
		if v == nil || v.GetJobs() != int64(sj.Jobs) {
			t.Errorf("%s class %s: vs_reference %v, want %d jobs", p, w.Class, v, sj.Jobs)
			continue
		}
		secs("same mean_wait", v.GetMeanWait(), sj.MeanWait)
		secs("same reference_p95_wait", v.GetReferenceP95Wait(), sj.RefP95Wait)
		ratio("mean_wait_ratio", v.GetMeanWaitRatio(), sj.MeanWaitRatio)
		ratio("p95_wait_ratio", v.GetP95WaitRatio(), sj.P95WaitRatio)
		ratio("bounded_slowdown_ratio", v.GetBoundedSlowdownRatio(), sj.BSLDRatio)
	}
}

// checkProgress checks each policy's progress: nondecreasing, out of the
// trace's jobs, and ending with every job done at the last job's end.
func checkProgress(t *testing.T, st *whatIfStream, policies []pb.Policy, jobs int64, results map[pb.Policy]*sim.Result) {
	t.Helper()
	for _, p := range policies {
		var last *pb.WhatIfProgress
		for _, pr := range st.progress {
			if pr.GetPolicy() != p {
				continue
			}
			if pr.GetJobsTotal() != jobs {
				t.Errorf("%s progress: jobs_total %d, want %d", p, pr.GetJobsTotal(), jobs)
			}
			if last != nil && (pr.GetJobsDone() < last.GetJobsDone() || pr.GetSimulatedTime().AsTime().Before(last.GetSimulatedTime().AsTime())) {
				t.Errorf("%s progress went back: %v after %v", p, pr, last)
			}
			last = pr
		}
		if last == nil {
			t.Errorf("%s: no progress message", p)
			continue
		}
		if last.GetJobsDone() != jobs {
			t.Errorf("%s: last progress has %d jobs done, want %d", p, last.GetJobsDone(), jobs)
		}
		if res := results[p]; res != nil {
			var end int64
			for _, j := range res.Jobs {
				end = max(end, j.End)
			}
			if want := sim.DefaultEpoch.Add(time.Duration(end) * time.Second); !last.GetSimulatedTime().AsTime().Equal(want) {
				t.Errorf("%s: last progress at %v, want the last job's end %v", p, last.GetSimulatedTime().AsTime(), want)
			}
		}
	}
}

func TestWhatIfUploadedSWFEqualsSimRun(t *testing.T) {
	ts := start(t, nil)
	tr := readSmall(t)
	want := map[pb.Policy]*sim.Result{}
	for _, p := range smallPolicies {
		want[p] = directRun(t, tr, "flat:4", p)
	}
	if want[pb.Policy_POLICY_EASY].Summary.BackfillStarts == 0 || want[pb.Policy_POLICY_FCFS].Summary.AvgWait == want[pb.Policy_POLICY_EASY].Summary.AvgWait {
		t.Fatal("the small trace does not tell EASY from FCFS")
	}
	for _, proto := range []struct {
		name string
		p    client.Protocol
	}{{"connect", client.Connect}, {"grpc", client.GRPC}, {"grpc-web", client.GRPCWeb}} {
		t.Run(proto.name, func(t *testing.T) {
			st, err := callWhatIf(t, ts.client(client.WithProtocol(proto.p)), uploadRequest([]byte(smallSWF), smallPolicies...))
			if err != nil {
				t.Fatalf("WhatIf: %v", err)
			}
			checkProgress(t, st, smallPolicies, 12, want)
			results := st.comparison.GetResults()
			if len(results) != len(smallPolicies) {
				t.Fatalf("%d results, want %d", len(results), len(smallPolicies))
			}
			for i, p := range smallPolicies {
				if results[i].GetPolicy() != p {
					t.Errorf("result %d is %s, want %s (request order)", i, results[i].GetPolicy(), p)
				}
				checkSummary(t, results[i], want[p].Summary)
				same, err := sim.CompareClasses(want[p], want[pb.Policy_POLICY_EASY])
				if err != nil {
					t.Fatal(err)
				}
				checkClasses(t, results[i], want[p].Summary, same)
			}
			if r := st.comparison.GetReference(); r != pb.Policy_POLICY_EASY {
				t.Errorf("reference %s, want EASY when unset", r)
			}
		})
	}
	// Another reference; a reference not replayed leaves the comparisons out.
	req := uploadRequest([]byte(smallSWF), smallPolicies...)
	req.Reference = pb.Policy_POLICY_HUITIAN
	st, err := callWhatIf(t, ts.client(), req)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range smallPolicies {
		same, err := sim.CompareClasses(want[p], want[pb.Policy_POLICY_HUITIAN])
		if err != nil {
			t.Fatal(err)
		}
		checkClasses(t, st.comparison.GetResults()[i], want[p].Summary, same)
	}
	req = uploadRequest([]byte(smallSWF), pb.Policy_POLICY_FCFS)
	st, err = callWhatIf(t, ts.client(), req)
	if err != nil {
		t.Fatal(err)
	}
	if r := st.comparison.GetReference(); r != pb.Policy_POLICY_UNSPECIFIED {
		t.Errorf("reference %s, want unset: EASY was not replayed", r)
	}
	checkClasses(t, st.comparison.GetResults()[0], want[pb.Policy_POLICY_FCFS].Summary, nil)
}

// TestWhatIfEqualsCLI compares the RPC with `huitian whatif --json` on the
// same file: every number the contract carries.
func TestWhatIfEqualsCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cmd/huitian")
	}
	bin := huitianBinary(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "small.swf")
	if err := os.WriteFile(path, []byte(smallSWF), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "whatif", "--trace", path, "--cluster", "flat:4", "--policy", "easy,fcfs,huitian-greedy,huitian", "--json").Output()
	if err != nil {
		t.Fatalf("huitian whatif: %v", err)
	}
	var cli struct {
		Results []struct {
			Policy                 string        `json:"policy"`
			Jobs                   int64         `json:"jobs"`
			AvgWait                float64       `json:"avg_wait_s"`
			P95Wait                float64       `json:"p95_wait_s"`
			MedianWait             float64       `json:"median_wait_s"`
			AvgFlow                float64       `json:"avg_flow_s"`
			NeverStarted           int           `json:"never_started"`
			RegularStarts          int           `json:"regular_starts"`
			LostCardSeconds        float64       `json:"lost_card_seconds"`
			Cycles                 int           `json:"cycles"`
			MainWaitDelta          *float64      `json:"main_wait_delta_s"`
			AvgBSLD                float64       `json:"avg_bsld"`
			Utilization            float64       `json:"utilization"`
			UtilizationQueued      *float64      `json:"utilization_while_queued"`
			Makespan               int64         `json:"makespan_s"`
			BackfillStarts         int64         `json:"backfill_starts"`
			BackfillCompletionRate *float64      `json:"backfill_completion_rate"`
			BackfillUtilization    *float64      `json:"backfill_utilization"`
			Preemptions            int           `json:"preemptions"`
			LostShare              *float64      `json:"lost_share"`
			HeadDelay              sim.HeadDelay `json:"head_delay"`
			Classes                []struct {
				sim.ClassStats
				VsReference *sim.SameJobs `json:"vs_reference"`
			} `json:"classes"`
		} `json:"results"`
	}
	if err := json.Unmarshal(out, &cli); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	st, err := callWhatIf(t, start(t, nil).client(), uploadRequest([]byte(smallSWF), smallPolicies...))
	if err != nil {
		t.Fatal(err)
	}
	if len(cli.Results) != len(st.comparison.GetResults()) {
		t.Fatalf("CLI has %d results, the RPC %d", len(cli.Results), len(st.comparison.GetResults()))
	}
	for i, r := range cli.Results {
		got := st.comparison.GetResults()[i]
		if want := "POLICY_" + strings.ToUpper(strings.ReplaceAll(r.Policy, "-", "_")); got.GetPolicy().String() != want {
			t.Fatalf("result %d: RPC %s, CLI %s", i, got.GetPolicy(), r.Policy)
		}
		checkResult(t, got, sim.Summary{
			Jobs: int(r.Jobs), AvgWait: r.AvgWait, P95Wait: r.P95Wait, AvgBSLD: r.AvgBSLD, Utilization: r.Utilization,
			Makespan: r.Makespan, BackfillStarts: int(r.BackfillStarts), BackfillCompletionRate: r.BackfillCompletionRate,
			BackfillUtilization: r.BackfillUtilization, Preemptions: r.Preemptions,
			MedianWait: r.MedianWait, AvgFlow: r.AvgFlow, NeverStarted: r.NeverStarted, RegularStarts: r.RegularStarts,
			LostCardSeconds: r.LostCardSeconds, Cycles: r.Cycles, UtilizationQueued: r.UtilizationQueued,
		}, false)
		sum := sim.Summary{LostShare: r.LostShare, HeadDelay: r.HeadDelay}
		var same []sim.SameJobs
		for _, c := range r.Classes {
			sum.Classes = append(sum.Classes, c.ClassStats)
			same = append(same, *c.VsReference)
		}
		checkClasses(t, got, sum, same)
		// The CLI's main-wait delta is against EASY (the first policy):
		// the RPC's main-job waits give the same difference.
		ref, mine := st.comparison.GetResults()[0].GetMainMeanWait(), got.GetMainMeanWait()
		switch {
		case r.MainWaitDelta == nil:
			if ref != nil && mine != nil {
				t.Errorf("%s: the CLI has no main-wait delta, the RPC has main waits %v and %v", r.Policy, ref, mine)
			}
		case ref == nil || mine == nil:
			t.Errorf("%s: the CLI's main-wait delta is %v s, the RPC lacks a main wait", r.Policy, *r.MainWaitDelta)
		default:
			if d := (mine.AsDuration() - ref.AsDuration()).Seconds(); math.Abs(d-*r.MainWaitDelta) > 1e-6 {
				t.Errorf("%s: main-wait delta from the RPC %v s, the CLI %v s", r.Policy, d, *r.MainWaitDelta)
			}
		}
	}
}

func gz(t *testing.T, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestWhatIfTracePathUnderData(t *testing.T) {
	ts := start(t, nil)
	dir := filepath.Join(ts.cfg.DataDir, TracesDir, "kth")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "small.swf.gz"), gz(t, []byte(smallSWF)), 0o644); err != nil {
		t.Fatal(err)
	}
	// A link that stays inside the folder is fine.
	if err := os.Symlink("kth/small.swf.gz", filepath.Join(ts.cfg.DataDir, TracesDir, "latest.swf.gz")); err != nil {
		t.Fatal(err)
	}
	tr := readSmall(t)
	policies := []pb.Policy{pb.Policy_POLICY_EASY, pb.Policy_POLICY_FCFS}
	for _, path := range []string{"kth/small.swf.gz", "latest.swf.gz", "kth/../kth/small.swf.gz"} {
		req := uploadRequest(nil, policies...)
		req.Trace = &pb.WhatIfRequest_TracePath{TracePath: path}
		st, err := callWhatIf(t, ts.client(), req)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for i, p := range policies {
			checkSummary(t, st.comparison.GetResults()[i], directRun(t, tr, "flat:4", p).Summary)
		}
	}
}

// wantInvalid checks that err is InvalidArgument naming field (and, when
// given, saying something).
func wantInvalid(t *testing.T, err error, field, says string) {
	t.Helper()
	if connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Fatalf("got %v, want InvalidArgument", err)
	}
	t.Log(err)
	if fields := fieldViolations(t, err); !slices.Contains(fields, field) {
		t.Errorf("fields %v, want %s (error: %v)", fields, field, err)
	}
	if says != "" && !strings.Contains(err.Error(), says) {
		t.Errorf("error %q does not say %q", err, says)
	}
}

func TestWhatIfTracePathEscapingDataIsInvalid(t *testing.T) {
	ts := start(t, nil)
	traces := filepath.Join(ts.cfg.DataDir, TracesDir)
	if err := os.MkdirAll(traces, 0o755); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "secret.swf")
	if err := os.WriteFile(outside, []byte(smallSWF), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(traces, "out.swf")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(outside), filepath.Join(traces, "outdir")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../huitian.db", filepath.Join(traces, "db.swf")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(traces, "adir"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, says string }{
		{"../huitian.db", "not a path inside"},
		{"kth/../../huitian.db", "not a path inside"},
		{outside, "not a path inside"},
		{"out.swf", "escapes"},
		{"outdir/secret.swf", "escapes"},
		{"db.swf", "escapes"},
		{"missing.swf", "no such file"},
		{"adir", "not a regular file"},
	} {
		t.Run(c.path, func(t *testing.T) {
			req := uploadRequest(nil, pb.Policy_POLICY_EASY)
			req.Trace = &pb.WhatIfRequest_TracePath{TracePath: c.path}
			_, err := callWhatIf(t, ts.client(), req)
			wantInvalid(t, err, "trace_path", c.says)
			if leak := strings.ReplaceAll(err.Error(), c.path, ""); strings.Contains(leak, ts.cfg.DataDir) || strings.Contains(leak, filepath.Dir(outside)) {
				t.Errorf("the error names a server folder: %v", err)
			}
		})
	}
	t.Run("no trace folder", func(t *testing.T) {
		ts := start(t, nil)
		req := uploadRequest(nil, pb.Policy_POLICY_EASY)
		req.Trace = &pb.WhatIfRequest_TracePath{TracePath: "small.swf"}
		_, err := callWhatIf(t, ts.client(), req)
		wantInvalid(t, err, "trace_path", "no trace folder")
	})
}

func TestWhatIfBadInput(t *testing.T) {
	ts := start(t, func(c *Config) {
		c.MaxJobs = 10
		c.MaxCards = 1024
		c.MaxRequestBytes = 64 << 10
	})
	small := []byte(smallSWF)
	bomb := gz(t, bytes.Repeat([]byte("; padding comment line\n"), 10000)) // 230 kB unpacked
	for _, c := range []struct {
		name        string
		mutate      func(r *pb.WhatIfRequest)
		field, says string
	}{
		{"unknown policy", func(r *pb.WhatIfRequest) { r.Policies = []pb.Policy{pb.Policy_POLICY_EASY, 42} }, "policies[1]", ""},
		{"no policy", func(r *pb.WhatIfRequest) { r.Policies = nil }, "policies", ""},
		{"repeated policy", func(r *pb.WhatIfRequest) { r.Policies = []pb.Policy{pb.Policy_POLICY_EASY, pb.Policy_POLICY_EASY} }, "policies", ""},
		{"no format", func(r *pb.WhatIfRequest) { r.Format = pb.TraceFormat_TRACE_FORMAT_UNSPECIFIED }, "format", ""},
		{"synth format for a file", func(r *pb.WhatIfRequest) { r.Format = pb.TraceFormat_TRACE_FORMAT_SYNTH }, "format", "synth_spec"},
		{"synth spec as swf", func(r *pb.WhatIfRequest) {
			r.Trace = &pb.WhatIfRequest_SynthSpec{SynthSpec: "synth:jobs=5"}
		}, "format", "TRACE_FORMAT_SYNTH"},
		{"bad synth spec", func(r *pb.WhatIfRequest) {
			r.Trace, r.Format = &pb.WhatIfRequest_SynthSpec{SynthSpec: "synth:jobs=5,colour=red"}, pb.TraceFormat_TRACE_FORMAT_SYNTH
		}, "synth_spec", "unknown key"},
		{"synth over the job cap", func(r *pb.WhatIfRequest) {
			r.Trace, r.Format = &pb.WhatIfRequest_SynthSpec{SynthSpec: "synth:jobs=100000000"}, pb.TraceFormat_TRACE_FORMAT_SYNTH
		}, "synth_spec", "--max-jobs"},
		{"garbage trace", func(r *pb.WhatIfRequest) { r.Trace = &pb.WhatIfRequest_TraceData{TraceData: []byte("1 2 three\n")} }, "trace_data", "line 1"},
		{"empty trace", func(r *pb.WhatIfRequest) { r.Trace = &pb.WhatIfRequest_TraceData{TraceData: []byte("; nothing\n")} }, "trace_data", "no jobs"},
		{"broken gzip", func(r *pb.WhatIfRequest) { r.Trace = &pb.WhatIfRequest_TraceData{TraceData: gz(t, small)[:40]} }, "trace_data", ""},
		{"gzip past the request cap", func(r *pb.WhatIfRequest) { r.Trace = &pb.WhatIfRequest_TraceData{TraceData: bomb} }, "trace_data", "--max-request-bytes"},
		{"trace over the job cap", func(r *pb.WhatIfRequest) { r.MaxJobs = 0 }, "trace_data", "--max-jobs"},
		{"cluster file", func(r *pb.WhatIfRequest) {
			r.Cluster = &pb.WhatIfRequest_ClusterPreset{ClusterPreset: "file:/etc/passwd"}
		}, "cluster_preset", "not read"},
		{"bad preset", func(r *pb.WhatIfRequest) { r.Cluster = &pb.WhatIfRequest_ClusterPreset{ClusterPreset: "flat:zero"} }, "cluster_preset", "positive"},
		{"preset over the card cap", func(r *pb.WhatIfRequest) {
			r.Cluster = &pb.WhatIfRequest_ClusterPreset{ClusterPreset: "hgx:9223372036854775807"}
		}, "cluster_preset", "--max-cards"},
		{"shape over the card cap", func(r *pb.WhatIfRequest) {
			r.Cluster = &pb.WhatIfRequest_Shape{Shape: &pb.ClusterShape{Nodes: 1 << 20, CardsPerNode: 8}}
		}, "cluster", "--max-cards"},
		{"invalid cluster", func(r *pb.WhatIfRequest) {
			r.Cluster = &pb.WhatIfRequest_ClusterSpec{ClusterSpec: &pb.Cluster{Id: "c", Nodes: []*pb.Node{
				{Name: "n0", Cards: cards(2)}, {Name: "n0", Cards: cards(2)},
			}}}
		}, "cluster_spec.nodes[1].name", ""},
		{"no cluster", func(r *pb.WhatIfRequest) { r.Cluster = nil }, "cluster", ""},
		{"options.policy", func(r *pb.WhatIfRequest) { r.Options = &pb.PlanOptions{Policy: pb.Policy_POLICY_EASY} }, "options.policy", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := uploadRequest(small, pb.Policy_POLICY_EASY)
			req.MaxJobs = 10 // under the cap, so that each case meets its own problem
			c.mutate(req)
			_, err := callWhatIf(t, ts.client(), req)
			wantInvalid(t, err, c.field, c.says)
		})
	}
	t.Run("max_jobs brings the trace under the cap", func(t *testing.T) {
		req := uploadRequest(small, pb.Policy_POLICY_EASY)
		req.MaxJobs = 5
		st, err := callWhatIf(t, ts.client(), req)
		if err != nil {
			t.Fatal(err)
		}
		tr := readSmall(t)
		tr.Jobs = tr.Jobs[:5]
		checkSummary(t, st.comparison.GetResults()[0], directRun(t, tr, "flat:4", pb.Policy_POLICY_EASY).Summary)
	})
	t.Run("shape and cluster_spec replay", func(t *testing.T) {
		for name, set := range map[string]func(r *pb.WhatIfRequest){
			"shape": func(r *pb.WhatIfRequest) {
				r.Cluster = &pb.WhatIfRequest_Shape{Shape: &pb.ClusterShape{Nodes: 2, CardsPerNode: 2}}
			},
			"cluster_spec": func(r *pb.WhatIfRequest) {
				r.Cluster = &pb.WhatIfRequest_ClusterSpec{ClusterSpec: &pb.Cluster{Id: "c", Nodes: []*pb.Node{{Name: "a", Cards: cards(4)}}}}
			},
		} {
			req := uploadRequest(small, pb.Policy_POLICY_EASY, pb.Policy_POLICY_HUITIAN)
			set(req)
			req.MaxJobs = 10
			st, err := callWhatIf(t, ts.client(), req)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			for _, r := range st.comparison.GetResults() {
				if r.GetJobs() != 10 {
					t.Errorf("%s %s: %d jobs, want 10", name, r.GetPolicy(), r.GetJobs())
				}
			}
		}
	})
}

// rpcLog sends the records of failed calls to a channel.
type rpcLog struct {
	slog.Handler
	failed chan slog.Record
}

func (h *rpcLog) Enabled(context.Context, slog.Level) bool { return true }

func (h *rpcLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "rpc failed" {
		select {
		case h.failed <- r:
		default:
		}
	}
	return nil
}

func attr(r slog.Record, key string) string {
	v := ""
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == key {
			v = a.Value.String()
			return false
		}
		return true
	})
	return v
}

// TestWhatIfCancelStopsTheReplay cancels a long replay after its first
// progress message: the handler must return Canceled promptly (the server
// logs the call's end) and leave no goroutine behind.
func TestWhatIfCancelStopsTheReplay(t *testing.T) {
	log := &rpcLog{Handler: slog.DiscardHandler, failed: make(chan slog.Record, 16)}
	ts := start(t, nil, WithLogger(slog.New(log)))
	c := ts.client()
	// Warm up: the connection and its goroutines exist before the count.
	if _, err := callWhatIf(t, c, uploadRequest([]byte(smallSWF), pb.Policy_POLICY_EASY)); err != nil {
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := c.WhatIf(ctx, connect.NewRequest(&pb.WhatIfRequest{
		Trace:    &pb.WhatIfRequest_SynthSpec{SynthSpec: bigSynth},
		Format:   pb.TraceFormat_TRACE_FORMAT_SYNTH,
		Cluster:  &pb.WhatIfRequest_ClusterPreset{ClusterPreset: bigCluster},
		Policies: []pb.Policy{pb.Policy_POLICY_EASY, pb.Policy_POLICY_CONSERVATIVE},
	}))
	if err != nil {
		t.Fatal(err)
	}
	if !st.Receive() {
		t.Fatalf("no first message: %v", st.Err())
	}
	first := st.Msg().GetProgress()
	if first == nil || first.GetJobsTotal() != 20000 || first.GetJobsDone() >= first.GetJobsTotal() {
		t.Fatalf("first message %v, want progress part way", st.Msg())
	}
	cancel()
	cancelled := time.Now()
	for st.Receive() {
		if st.Msg().GetComparison() != nil {
			t.Fatal("the replay finished before the cancel reached it: make bigSynth bigger")
		}
	}
	st.Close()

	select {
	case r := <-log.failed:
		if p, code := attr(r, "procedure"), attr(r, "code"); p != huitianv1connect.PlannerServiceWhatIfProcedure || code != connect.CodeCanceled.String() {
			t.Fatalf("the server logged %s ending with %s, want WhatIf with %s", p, code, connect.CodeCanceled)
		}
		if took := time.Since(cancelled); took > 15*time.Second {
			t.Errorf("the handler returned %v after the cancel", took)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the handler did not return within 30 s of the cancel")
	}
	// The handler waits for its replays, so they are gone; what is left is
	// the stream's own goroutines unwinding.
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, %d before the call:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		runtime.Gosched()
	}
}

// TestWhatIfCancelLeavesNoGoroutine cancels the handler itself from its
// first progress message inside a synctest bubble: synctest.Test fails if
// a goroutine the call started is left blocked at the end.
func TestWhatIfCancelLeavesNoGoroutine(t *testing.T) {
	cfg := Defaults()
	cfg.DataDir = t.TempDir()
	s, err := New(cfg, WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	req := &pb.WhatIfRequest{
		Trace:    &pb.WhatIfRequest_SynthSpec{SynthSpec: bigSynth},
		Format:   pb.TraceFormat_TRACE_FORMAT_SYNTH,
		Cluster:  &pb.WhatIfRequest_ClusterPreset{ClusterPreset: bigCluster},
		Policies: []pb.Policy{pb.Policy_POLICY_EASY, pb.Policy_POLICY_FCFS, pb.Policy_POLICY_CONSERVATIVE, pb.Policy_POLICY_HUITIAN_GREEDY},
	}
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var msgs []*pb.WhatIfResponse
		err := s.whatIf(ctx, req, func(m *pb.WhatIfResponse) error {
			msgs = append(msgs, m)
			cancel()
			return nil
		})
		if connect.CodeOf(err) != connect.CodeCanceled {
			t.Fatalf("got %v, want Canceled", err)
		}
		if len(msgs) == 0 || msgs[0].GetProgress() == nil {
			t.Fatalf("messages %v, want progress first", msgs)
		}
		for _, m := range msgs {
			if m.GetComparison() != nil {
				t.Fatal("a comparison after the cancel")
			}
		}
		// Returning from here, synctest.Test waits for every goroutine the
		// call started, and fails if one is left blocked.
	})
}

// TestWhatIfPlannerPanicIsInternal: a planner that panics in a replay
// goroutine (where connect's recovery does not reach) gives Internal, and
// the server lives on.
func TestWhatIfPlannerPanicIsInternal(t *testing.T) {
	ts := start(t, nil, WithPlannerFactory(func(p model.Policy, depth int) (solver.Planner, error) {
		if p == model.PolicyFCFS {
			return alwaysPanics{}, nil
		}
		return solver.New(p, depth)
	}))
	_, err := callWhatIf(t, ts.client(), uploadRequest([]byte(smallSWF), pb.Policy_POLICY_EASY, pb.Policy_POLICY_FCFS))
	if connect.CodeOf(err) != connect.CodeInternal || !strings.Contains(err.Error(), "POLICY_FCFS") {
		t.Fatalf("got %v, want Internal naming POLICY_FCFS", err)
	}
	if _, err := callWhatIf(t, ts.client(), uploadRequest([]byte(smallSWF), pb.Policy_POLICY_EASY)); err != nil {
		t.Fatalf("after the panic: %v", err)
	}
}

type alwaysPanics struct{}

func (alwaysPanics) Plan(context.Context, *model.Snapshot) (*model.Decision, error) {
	panic(errors.New("boom"))
}
