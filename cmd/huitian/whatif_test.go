package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/sim"
	"github.com/huitian/huitian/sim/trace"
	"github.com/huitian/huitian/solver"
)

func runCLI(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	root := newRootCmd()
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs(args)
	err = root.Execute()
	return out.String(), errb.String(), err
}

func TestWhatifJSON(t *testing.T) {
	dir := t.TempDir()
	jobs, rep := filepath.Join(dir, "jobs"), filepath.Join(dir, "report")
	out, stderr, err := runCLI(t, "whatif", "--trace", "synth:jobs=300,seed=2,cards=32", "--cluster", "hgx:4",
		"--policy", "easy,fcfs", "--json", "--jobs", jobs, "--report", rep)
	if err != nil {
		t.Fatalf("whatif: %v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "dropped: none") {
		t.Errorf("stderr does not report dropped records:\n%s", stderr)
	}
	var got struct {
		Trace struct {
			Jobs    int            `json:"jobs"`
			Dropped map[string]int `json:"dropped"`
		} `json:"trace"`
		Results []map[string]any `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, out)
	}
	if got.Trace.Jobs != 300 || got.Trace.Dropped == nil || len(got.Results) != 2 {
		t.Fatalf("trace %+v, %d results", got.Trace, len(got.Results))
	}
	for _, key := range []string{"policy", "estimates", "jobs", "avg_wait_s", "p95_wait_s", "avg_bsld", "avg_flow_s",
		"utilization", "makespan_s", "backfill_starts", "backfill_completion_rate", "backfill_utilization",
		"main_wait_delta_s", "preemptions", "lost_share", "head_delay", "classes"} {
		if _, ok := got.Results[0][key]; !ok {
			t.Errorf("result has no %q", key)
		}
	}
	easy, fcfs := got.Results[0], got.Results[1]
	if easy["policy"] != "easy" || easy["main_wait_delta_s"] != 0.0 || easy["backfill_utilization"] != nil {
		t.Errorf("easy: %v", easy)
	}
	if fcfs["backfill_completion_rate"] != nil || fcfs["backfill_starts"] != 0.0 {
		t.Errorf("fcfs backfills nothing, so its completion rate is null: %v", fcfs)
	}
	f, err := os.Open(filepath.Join(jobs, "easy.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 301 || strings.Join(rows[0], ",") != "id,submit,start,end,cards,kind,preemptions" {
		t.Errorf("easy.csv: %d rows, header %v", len(rows), rows[0])
	}
	var classes []struct {
		Class       string
		Jobs        int
		VsReference *struct {
			Jobs          int
			MeanWaitRatio *float64 `json:"mean_wait_ratio"`
		} `json:"vs_reference"`
	}
	b, _ := json.Marshal(easy["classes"])
	if err := json.Unmarshal(b, &classes); err != nil || len(classes) != 4 {
		t.Fatalf("easy's classes %s: %v; want four", b, err)
	}
	jobsInClasses := 0
	for _, c := range classes {
		jobsInClasses += c.Jobs
		if v := c.VsReference; v == nil || v.Jobs != c.Jobs || (c.Jobs > 0 && (v.MeanWaitRatio == nil || *v.MeanWaitRatio != 1)) {
			t.Errorf("easy's class %s against itself: %+v", c.Class, v)
		}
	}
	if jobsInClasses != 300 {
		t.Errorf("classes hold %d jobs, want 300", jobsInClasses)
	}
	for _, name := range []string{"report.md", "utilization.svg", "queue.svg", "wait-cdf.svg", "class-wait-cdf.svg", "class-wait.svg", "class-p95-wait.svg",
		"utilization.png", "queue.png", "wait-cdf.png", "class-wait-cdf.png", "class-wait.png", "class-p95-wait.png"} {
		path := filepath.Join(rep, name)
		if st, err := os.Stat(path); err != nil || st.Size() == 0 {
			t.Errorf("report file %s: %v", name, err)
		}
		if !strings.Contains(stderr, path) {
			t.Errorf("stderr does not say where it wrote %s:\n%s", name, stderr)
		}
	}
	if f, err := os.Open(filepath.Join(rep, "queue.png")); err == nil {
		if _, err := png.Decode(f); err != nil {
			t.Errorf("queue.png: %v", err)
		}
		f.Close()
	}
}

func TestWhatifBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"whatif"},
		{"whatif", "--trace", "synth:jobs=10", "--policy", "nope"},
		{"whatif", "--trace", "synth:jobs=10", "--policy", "easy,easy"},
		{"whatif", "--trace", "synth:jobs=10", "--estimates", "psychic"},
		{"whatif", "--trace", "synth:jobs=10", "--cluster", "torus:2"},
		{"whatif", "--trace", "synth:jobs=10", "--cycles", "sometimes"},
		{"whatif", "--trace", "synth:jobs=10", "--interval", "1500ms"},
		{"whatif", "--trace", filepath.Join(t.TempDir(), "missing.swf")},
		{"whatif", "--trace", "trace.bin"},
		{"whatif", "--trace", "synth:jobs=10", "--pair", "easy"},
		{"whatif", "--trace", "synth:jobs=10", "--pair", "easy,fcfs,hybrid"},
		{"whatif", "--trace", "synth:jobs=10", "--pair", "easy,fcfs", "--policy", "easy"},
		{"whatif", "--trace", "synth:jobs=10", "--pair", "easy,fcfs", "--jobs", t.TempDir()},
		{"whatif", "--trace", "synth:jobs=10", "--policy", "easy", "--pair-log", filepath.Join(t.TempDir(), "log")},
		{"whatif", "--trace", "synth:jobs=10", "--policy", "easy,fcfs", "--replicas", "1"},
		{"whatif", "--trace", "synth:jobs=10", "--policy", "easy,fcfs", "--replicas", "-3"},
		{"whatif", "--trace", "synth:jobs=10", "--policy", "easy", "--replicas", "3"},
		{"whatif", "--trace", "synth:jobs=10", "--policy", "fcfs,conservative", "--replicas", "3"},
		{"whatif", "--trace", "synth:jobs=10", "--policy", "easy,fcfs", "--replicas", "3", "--shard", "0/2"},
		{"whatif", "--trace", "synth:jobs=10", "--policy", "easy,fcfs", "--replicas", "3", "--report", t.TempDir()},
		{"whatif", "--suite", "--replicas", "1"},
	} {
		wantUsageError(t, args...)
	}
}

// wantUsageError runs the command line and fails unless it exits with
// status 2 (bad flags or input).
func wantUsageError(t *testing.T, args ...string) {
	t.Helper()
	_, _, err := runCLI(t, args...)
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 2 {
		t.Errorf("%q: error %v, want exit status 2", strings.Join(args, " "), err)
	}
}

// TestWhatifPair: --pair runs the lead alone as far as the results go
// (its row equals a --policy run's) and counts the shadow's differences.
func TestWhatifPair(t *testing.T) {
	args := []string{"whatif", "--trace", "synth:jobs=300,seed=2,cards=32", "--cluster", "hgx:4", "--json"}
	logPath := filepath.Join(t.TempDir(), "pair.log")
	out, stderr, err := runCLI(t, append(args, "--pair", "easy,fcfs", "--pair-log", logPath)...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var paired struct {
		Lead, Shadow string
		Paired       struct {
			Cycles, Differ int
			DifferJobs     int `json:"differ_jobs"`
			Lead, Shadow   struct{ Starts int }
		}
		Run map[string]any `json:"lead_run"`
	}
	if err := json.Unmarshal([]byte(out), &paired); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	out, stderr, err = runCLI(t, append(args, "--policy", "easy")...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var alone struct{ Results []map[string]any }
	if err := json.Unmarshal([]byte(out), &alone); err != nil {
		t.Fatal(err)
	}
	if len(alone.Results) == 1 {
		// Against itself there; no reference in a pair.
		delete(alone.Results[0], "main_wait_delta_s")
		delete(paired.Run, "main_wait_delta_s")
		for _, c := range alone.Results[0]["classes"].([]any) {
			c.(map[string]any)["vs_reference"] = nil
		}
	}
	if len(alone.Results) != 1 || !reflect.DeepEqual(alone.Results[0], paired.Run) {
		t.Errorf("EASY alone %v, leading a pair %v: want the same", alone.Results, paired.Run)
	}
	p := paired.Paired
	if paired.Lead != "easy" || paired.Shadow != "fcfs" || p.Cycles == 0 || p.Differ == 0 || p.Lead.Starts <= p.Shadow.Starts {
		t.Errorf("paired %+v: want EASY leading, FCFS differing in some cycles and starting fewer jobs", paired)
	}
	// --pair-log: a block for each cycle whose started jobs differ.
	log, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if n, want := strings.Count(string(log), "\ncycle ")+b2i(strings.HasPrefix(string(log), "cycle ")), p.DifferJobs; n != want || n == 0 {
		t.Errorf("--pair-log has %d cycles, the counts %d differing in their started jobs:\n%s", n, want, log)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestWhatifTableAsReport: the console shows report.md's tables, with the
// same columns and cells (durations in min/h as Duration writes them).
func TestWhatifTableAsReport(t *testing.T) {
	rep := filepath.Join(t.TempDir(), "report")
	out, stderr, err := runCLI(t, "whatif", "--trace", "synth:jobs=200,seed=2,cards=32", "--cluster", "hgx:4",
		"--policy", "easy,fcfs", "--report", rep)
	if err != nil {
		t.Fatalf("whatif: %v\n%s", err, stderr)
	}
	md, err := os.ReadFile(filepath.Join(rep, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	console := strings.Join(strings.Fields(out), " ")
	rows := 0
	for line := range strings.Lines(string(md)) {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "| ") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if want := strings.Join(strings.Fields(strings.Join(cells, " ")), " "); !strings.Contains(console, want) {
			t.Errorf("report.md's row %q is not on the console:\n%s", line, out)
		}
		rows++
	}
	if rows < 3+2+2*3 {
		t.Errorf("report.md has only %d table rows:\n%s", rows, md)
	}
}

// TestWhatifControlPolicy: the suite's control runs on its own as a
// policy, EASY planning every queued job's limit a minute longer.
func TestWhatifControlPolicy(t *testing.T) {
	runs, err := parsePolicies("easy,"+suiteControl, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || runs[1].name != suiteControl || runs[1].policy != model.PolicyEASY || runs[1].pad != suiteControlPad || runs[0].pad != 0 {
		t.Fatalf("parsed %+v", runs)
	}
	out, stderr, err := runCLI(t, "whatif", "--trace", "synth:jobs=200,seed=3,cards=32", "--cluster", "hgx:4",
		"--policy", "easy,"+suiteControl, "--json")
	if err != nil {
		t.Fatalf("whatif: %v\n%s", err, stderr)
	}
	var got struct {
		Results []struct{ Policy string } `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got.Results) != 2 || got.Results[1].Policy != suiteControl {
		t.Fatalf("results %+v: %v", got.Results, err)
	}
}

// TestWhatifPlacementSuffix: +aligned and +bestfit turn end-aligned
// placement on or off against a policy's default — the huitian planners
// align, the baselines do not — so easy+bestfit is easy and
// huitian-greedy+aligned is huitian-greedy, result for result, and
// easy+aligned is another run.
func TestWhatifPlacementSuffix(t *testing.T) {
	runs, err := parsePolicies("easy+aligned,huitian-greedy+bestfit,hybrid-4+aligned,easy,easy+1m+aligned", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 5 || runs[0].policy != model.PolicyEASY || runs[0].place == nil || !*runs[0].place ||
		runs[1].policy != model.PolicyHuitianGreedy || runs[1].place == nil || *runs[1].place ||
		runs[2].policy != model.PolicyHybridDepth || runs[2].depth != 4 || runs[2].place == nil || !*runs[2].place ||
		runs[3].place != nil ||
		runs[4].policy != model.PolicyEASY || runs[4].pad != suiteControlPad || runs[4].place == nil || !*runs[4].place {
		t.Fatalf("parsed %+v", runs)
	}
	if _, err := parsePolicies("easy+tight", 0); err == nil || !strings.Contains(err.Error(), "+aligned") {
		t.Errorf("easy+tight: %v, want an unknown policy naming the suffixes", err)
	}
	if _, err := parsePolicies("hybrid", -3); err == nil || !strings.Contains(err.Error(), "--depth -3") {
		t.Errorf("--depth -3: %v, want it refused (it was hybrid's default)", err)
	}
	r := whatifResults(t, 5, "--trace", "synth:jobs=4000,seed=3,load=0.9", "--cluster", "hgx:8",
		"--policy", "easy,easy+bestfit,easy+aligned,huitian-greedy,huitian-greedy+aligned")
	same := func(a, b int) bool { return r[a].sameRun(r[b]) }
	if !same(0, 1) || !same(3, 4) {
		t.Errorf("a suffix that names the default changed the run: %+v", r)
	}
	if same(0, 2) {
		t.Errorf("easy+aligned placed as easy does: %+v", r)
	}
}

// TestWhatifOneNodeSuffix: +onenode (solver.Config.OneNodeGangs) and
// +nosat (no saturation threshold) go with the huitian planners only, in
// any order with a placement suffix. On
// KTH-SP2's first 2,000 jobs on 128 processors huitian-greedy lends
// multi-processor jobs beyond EASY and so runs apart from EASY; lending
// one node's cards only, on single-card nodes, it lends to one-processor
// jobs alone and runs as EASY does. (On 80 processors the queue is too
// deep to lend beyond EASY: Config.SaturatedBacklog.)
func TestWhatifOneNodeSuffix(t *testing.T) {
	runs, err := parsePolicies("huitian-greedy+onenode,huitian+bestfit+onenode,huitian+onenode+aligned,huitian", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 4 || !runs[0].ablation.OneNodeGangs || runs[0].place != nil ||
		!runs[1].ablation.OneNodeGangs || runs[1].place == nil || *runs[1].place || runs[1].policy != model.PolicyHuitian ||
		!runs[2].ablation.OneNodeGangs || runs[2].place == nil || !*runs[2].place || runs[3].ablation != (solver.Ablation{}) {
		t.Fatalf("parsed %+v", runs)
	}
	if runs, err := parsePolicies("huitian-greedy+nosat+onenode,huitian+bestfit+nosat", 0); err != nil || len(runs) != 2 ||
		runs[0].ablation != (solver.Ablation{OneNodeGangs: true, NoSaturation: true}) ||
		runs[1].ablation != (solver.Ablation{NoSaturation: true}) || runs[1].place == nil || *runs[1].place {
		t.Fatalf("parsed %+v: %v", runs, err)
	}
	for _, bad := range []string{"easy+onenode", "conservative+nosat", "huitian+onenode+onenode", "huitian+nosat+nosat", "huitian+aligned+bestfit"} {
		if _, err := parsePolicies(bad, 0); err == nil {
			t.Errorf("%s: parsed, want an error", bad)
		}
	}
	dir, err := tracesDir(suiteDefaultTraces)
	if err != nil {
		t.Skipf("the shared traces are not here (%v)", err)
	}
	head := kthHead(t, dir, 2000)
	r := whatifResults(t, 3, "--trace", head, "--filter", "strong", "--cluster", "flat:128",
		"--policy", "easy,huitian-greedy,huitian-greedy+onenode")
	same := func(a, b int) bool { return r[a].sameRun(r[b]) }
	if same(0, 1) {
		t.Errorf("huitian-greedy ran as EASY on KTH-SP2's first 2,000 jobs: %+v", r)
	}
	if !same(0, 2) {
		t.Errorf("huitian-greedy+onenode did not run as EASY: %+v", r)
	}
	// HPC2N's first 3,145 jobs at load 1.2 are saturated throughout:
	// huitian-greedy lends nothing beyond EASY and runs as EASY does;
	// +nosat lends.
	r = whatifResults(t, 3, "--trace", filepath.Join(dir, "swf-HPC2N-first3171", "hpc2n.swf.gz"),
		"--load", "1.2", "--policy", "easy,huitian-greedy,huitian-greedy+nosat")
	if !same(0, 1) || same(0, 2) {
		t.Errorf("HPC2N at load 1.2: want huitian-greedy as EASY and +nosat apart: %+v", r)
	}
}

// TestWhatifUsersDrop: --users drop replays a trace as a log without user
// ids. On KTH-SP2's first 2,000 jobs on 128 processors huitian-greedy lends
// beyond EASY on its users' own histories (TestWhatifOneNodeSuffix); with
// the ids dropped every job falls back to the history of all users, whose
// error is too high to lend on, and it runs as EASY does.
func TestWhatifUsersDrop(t *testing.T) {
	dir, err := tracesDir(suiteDefaultTraces)
	if err != nil {
		t.Skipf("the shared traces are not here (%v)", err)
	}
	head := kthHead(t, dir, 2000)
	args := []string{"whatif", "--trace", head, "--filter", "strong", "--cluster", "flat:128", "--policy", "easy,huitian-greedy", "--json"}
	for _, users := range []string{"keep", "drop"} {
		out, stderr, err := runCLI(t, append(args, "--users", users)...)
		if err != nil {
			t.Fatalf("--users %s: %v\n%s", users, err, stderr)
		}
		var got struct {
			Trace struct {
				UsersDropped bool     `json:"users_dropped"`
				Notes        []string `json:"notes"`
			} `json:"trace"`
			Results []whatifResult `json:"results"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil || len(got.Results) != 2 {
			t.Fatalf("--users %s: results %+v: %v", users, got.Results, err)
		}
		drop := users == "drop"
		if got.Trace.UsersDropped != drop || slices.Contains(got.Trace.Notes, "user ids dropped: 2000 of 2000 jobs had one") != drop {
			t.Errorf("--users %s: trace says users_dropped %v, notes %q", users, got.Trace.UsersDropped, got.Trace.Notes)
		}
		if said := strings.Contains(stderr, "user ids dropped"); said != drop {
			t.Errorf("--users %s: stderr says the ids were dropped: %v\n%s", users, said, stderr)
		}
		if same := got.Results[0].sameRun(got.Results[1]); same != drop {
			t.Errorf("--users %s: huitian-greedy ran as EASY: %v, want %v (%+v)", users, same, drop, got.Results)
		}
	}
	_, _, err = runCLI(t, append(args, "--users", "none")...)
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), "--users") {
		t.Errorf("--users none: %v, want exit status 2 naming --users", err)
	}
}

// TestWhatifPairSuffixes: --pair makes each planner as --policy does,
// with its name's suffixes. EASY aligned places some starts on other
// cards than EASY does on the same states (synth seed 1 on hgx:4); with
// the suffix ignored the two planners were one and never differed.
// EASY with best fit is EASY.
func TestWhatifPairSuffixes(t *testing.T) {
	differ := func(pair string) int {
		t.Helper()
		out, stderr, err := runCLI(t, "whatif", "--trace", "synth:jobs=400,seed=1,cards=32", "--cluster", "hgx:4", "--pair", pair, "--json")
		if err != nil {
			t.Fatalf("--pair %s: %v\n%s", pair, err, stderr)
		}
		var got struct {
			Paired sim.PairedStats `json:"paired"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil || got.Paired.Cycles == 0 {
			t.Fatalf("--pair %s: %+v: %v", pair, got, err)
		}
		return got.Paired.Differ
	}
	if n := differ("easy,easy+aligned"); n == 0 {
		t.Errorf("--pair easy,easy+aligned: no cycle differs: the shadow ran without its suffix")
	}
	if n := differ("easy,easy+bestfit"); n != 0 {
		t.Errorf("--pair easy,easy+bestfit: %d cycles differ, want none (EASY places by best fit)", n)
	}
}

// whatifResult is one policy's figures in whatif's JSON, as the tests
// compare them.
type whatifResult struct {
	Policy  string  `json:"policy"`
	AvgWait float64 `json:"avg_wait_s"`
	P95Wait float64 `json:"p95_wait_s"`
	AvgBSLD float64 `json:"avg_bsld"`
}

// sameRun: two runs whose average wait and bounded slowdown agree to the
// last digit planned alike.
func (a whatifResult) sameRun(b whatifResult) bool {
	return a.AvgWait == b.AvgWait && a.AvgBSLD == b.AvgBSLD
}

// whatifResults runs whatif args --json and returns its n results, one
// per policy in order, failing the test otherwise.
func whatifResults(t *testing.T, n int, args ...string) []whatifResult {
	t.Helper()
	out, stderr, err := runCLI(t, append(append([]string{"whatif"}, args...), "--json")...)
	if err != nil {
		t.Fatalf("whatif: %v\n%s", err, stderr)
	}
	var got struct {
		Results []whatifResult `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got.Results) != n {
		t.Fatalf("results %+v: %v", got.Results, err)
	}
	return got.Results
}

// kthHead writes KTH-SP2's header and first n records (the traces folder
// dir's) into a temporary file and returns its path.
func kthHead(t *testing.T, dir string, n int) string {
	t.Helper()
	head := filepath.Join(t.TempDir(), fmt.Sprintf("kth%d.swf", n))
	if err := os.WriteFile(head, swfHead(t, filepath.Join(dir, "swf-KTH-SP2", "KTH-SP2-1996-2.1-cln.swf.gz"), n), 0o644); err != nil {
		t.Fatal(err)
	}
	return head
}

// swfHead returns a gzipped SWF file's header and its first n records.
func swfHead(t *testing.T, path string, n int) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	sc := bufio.NewScanner(zr)
	for sc.Scan() && n > 0 {
		line := sc.Text()
		if !strings.HasPrefix(strings.TrimSpace(line), ";") {
			n--
		}
		out.WriteString(line + "\n")
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// TestWhatifReplicas: --replicas compares each policy with the reference
// replica by replica; the first replica is the trace itself, so its
// ratios are those of a plain run's same jobs, and the mean and standard
// error are those of the listed values.
func TestWhatifReplicas(t *testing.T) {
	args := []string{"whatif", "--trace", "synth:jobs=400,seed=3,load=1.1,cards=32", "--cluster", "hgx:4", "--policy", "easy,fcfs"}
	out, stderr, err := runCLI(t, append(args, "--replicas", "4", "--json")...)
	if err != nil {
		t.Fatalf("whatif --replicas: %v\n%s", err, stderr)
	}
	var got replicaOutput
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, out)
	}
	if got.Replicas != 4 || got.Reference != "easy" || len(got.Policies) != 1 || got.Policies[0].Policy != "fcfs" {
		t.Fatalf("replicas %d, reference %q, policies %+v", got.Replicas, got.Reference, got.Policies)
	}
	one := whatifResults(t, 2, args[1:]...)
	easy, fcfs := one[0], one[1]
	want := map[string]float64{"avg wait": fcfs.AvgWait / easy.AvgWait, "p95 wait": fcfs.P95Wait / easy.P95Wait, "avg bsld": fcfs.AvgBSLD / easy.AvgBSLD}
	differ := false
	for _, m := range got.Policies[0].Measures {
		if len(m.Values) != m.Replicas || m.Replicas != 4 {
			t.Fatalf("%s: %d values over %d replicas, want 4", m.Measure, len(m.Values), m.Replicas)
		}
		if w, ok := want[m.Measure]; ok && m.Values[0] != w {
			t.Errorf("%s: the trace's own replica reads %v, a plain run %v", m.Measure, m.Values[0], w)
		}
		mean, lo, hi := 0.0, m.Values[0], m.Values[0]
		for _, v := range m.Values {
			mean += v / 4
			lo, hi = min(lo, v), max(hi, v)
			differ = differ || v != m.Values[0]
		}
		if m.Mean == nil || m.StdErr == nil || m.Min == nil || m.Max == nil {
			t.Fatalf("%s: mean, standard error or range missing over %d replicas", m.Measure, m.Replicas)
		}
		if math.Abs(mean-*m.Mean) > 1e-12 || lo != *m.Min || hi != *m.Max || !(*m.StdErr >= 0) {
			t.Errorf("%s: mean %v ± %v [%v, %v] of %v", m.Measure, *m.Mean, *m.StdErr, *m.Min, *m.Max, m.Values)
		}
	}
	if !differ {
		t.Error("every replica read the same: were they replicas?")
	}
	table, _, err := runCLI(t, append(args, "--replicas", "2")...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table, "2 replicas of synth:") || !strings.Contains(table, "fcfs") || !strings.Contains(table, "p95 wait") {
		t.Errorf("table:\n%s", table)
	}
	if got.PerturbedShare != sim.PerturbShare || got.PerturbedMostS != sim.PerturbMost {
		t.Errorf("default replicas moved %v of the jobs by up to %d s, want %v and %d", got.PerturbedShare, got.PerturbedMostS, sim.PerturbShare, sim.PerturbMost)
	}
	// Replicas that depart further: another spread, and the output says how far.
	far, stderr, err := runCLI(t, append(args, "--replicas", "4", "--replica-share", "0.3", "--replica-delay", "1h", "--json")...)
	if err != nil {
		t.Fatalf("whatif --replica-share: %v\n%s", err, stderr)
	}
	var gotFar replicaOutput
	if err := json.Unmarshal([]byte(far), &gotFar); err != nil {
		t.Fatal(err)
	}
	if gotFar.PerturbedShare != 0.3 || gotFar.PerturbedMostS != 3600 {
		t.Errorf("replicas moved %v of the jobs by up to %d s, want 0.3 and 3600", gotFar.PerturbedShare, gotFar.PerturbedMostS)
	}
	if v0, v := got.Policies[0].Measures[0].Values, gotFar.Policies[0].Measures[0].Values; v0[0] != v[0] || slices.Equal(v0, v) {
		t.Errorf("%s: default replicas %v, further ones %v: want the same trace's own run and other replicas", got.Policies[0].Measures[0].Measure, v0, v)
	}
	for _, bad := range [][]string{
		{"--replica-share", "0.3"},                       // without --replicas
		{"--replicas", "2", "--replica-share", "0"},      // no job moves
		{"--replicas", "2", "--replica-share", "1.5"},    // more than all
		{"--replicas", "2", "--replica-delay", "1500ms"}, // not whole seconds
		{"--replicas", "2", "--replica-delay", "0s"},
	} {
		_, stderr, err := runCLI(t, append(args, bad...)...)
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(stderr+err.Error(), "--replica-") {
			t.Errorf("%v: %v (%s), want exit 2 naming the flag", bad, err, stderr)
		}
	}
}

// TestReplicaMeasureUndefined: a measure no replica defines (the
// reference's figure 0 in each) is null, and the JSON still encodes; one
// replica gives a mean and no standard error.
func TestReplicaMeasureUndefined(t *testing.T) {
	none := summarizeRatios("p95 wait", nil)
	if none.Replicas != 0 || none.Mean != nil || none.StdErr != nil || none.Min != nil || none.Max != nil {
		t.Fatalf("no replica: %+v", none)
	}
	b, err := json.Marshal(none)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"measure":"p95 wait","replicas":0,"mean":null,"std_error":null,"min":null,"max":null,"values":[]}`; string(b) != want {
		t.Errorf("JSON %s, want %s", b, want)
	}
	one := summarizeRatios("avg wait", []float64{1.25})
	if one.Mean == nil || *one.Mean != 1.25 || one.StdErr != nil || *one.Min != 1.25 || *one.Max != 1.25 {
		t.Errorf("one replica: %+v", one)
	}
	var run, ref sim.Summary // nothing waited in either run: the ratios are 1
	for _, m := range replicaRatios(run, ref, nil) {
		if m.ratio == nil || *m.ratio != 1 {
			t.Errorf("%s: %v, want 1 when both are 0", m.name, m.ratio)
		}
	}
}

// TestWhatifLoad: --load sizes the cluster as the suite does, so that one
// of its rows can be replayed (and replicated) from the command line: the
// cluster named and the results are those of --cluster with that size.
func TestWhatifLoad(t *testing.T) {
	var b strings.Builder
	b.WriteString("; MaxProcs: 64\n")
	for i := range 120 {
		procs := 1 + (i*7)%16
		run := 600 + (i*131)%5400
		// id submit wait run procs cpu mem reqprocs reqtime reqmem status user group app queue partition prev think
		fmt.Fprintf(&b, "%d %d -1 %d %d -1 -1 %d %d -1 1 %d 1 -1 1 -1 -1 -1\n", i+1, i*300, run, procs, procs, 2*run, 1+i%5)
	}
	path := filepath.Join(t.TempDir(), "small.swf")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	tr, err := trace.Open(path, "swf", trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cluster, _, scale := loadWorkload(tr.Jobs, 0.9)
	if scale != 1 {
		t.Fatalf("the test trace needs its submits scaled (%v): pick another", scale)
	}
	out, stderr, err := runCLI(t, "whatif", "--trace", path, "--load", "0.9", "--policy", "easy,huitian-greedy", "--json")
	if err != nil {
		t.Fatalf("whatif --load: %v\n%s", err, stderr)
	}
	want, _, err := runCLI(t, "whatif", "--trace", path, "--cluster", cluster, "--policy", "easy,huitian-greedy", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var got, ref struct {
		Cluster struct{ Spec string } `json:"cluster"`
		Results json.RawMessage       `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(want), &ref); err != nil {
		t.Fatal(err)
	}
	if got.Cluster.Spec != cluster || !bytes.Equal(got.Results, ref.Results) {
		t.Errorf("--load 0.9 ran on %q, want %q, with the same results as --cluster %s", got.Cluster.Spec, cluster, cluster)
	}
	for _, args := range [][]string{
		{"whatif", "--trace", path, "--load", "0.9", "--cluster", "flat:64"},
		{"whatif", "--trace", path, "--load", "-1"},
		{"whatif", "--trace", "synth:jobs=10", "--load", "0.9"},
	} {
		wantUsageError(t, args...)
	}
}

// TestBenchRefusesBadSizes: a size bench cannot build is refused with
// exit status 2 naming the flag (a negative --cards panicked building a
// cluster of no node).
func TestBenchRefusesBadSizes(t *testing.T) {
	for _, tc := range []struct{ cards, queued, want string }{
		{"-5", "1", "--cards -5"},
		{"0", "1", "--cards 0"},
		{"99999999999", "1", "--cards 99999999999"},
		{"8", "-3", "--queued -3"},
	} {
		_, _, err := runCLI(t, "bench", "--cards="+tc.cards, "--queued="+tc.queued, "--cycles=1", "--policy=easy")
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("bench --cards=%s --queued=%s: error %v, want exit status 2 naming %q", tc.cards, tc.queued, err, tc.want)
		}
	}
}
