package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/sim"
	"github.com/huitian/huitian/sim/trace"
)

// The robustness suite (`huitian whatif --suite`): every SWF trace in the
// traces folder, the Philly VC trace and synthetic GPU workloads over
// several seeds, each at several loads, replayed under the reference
// policy and the huitian planners, each row checked against the targets
// of "do no harm" (issue 10):
//
//	(a) the largest size class's mean and p95 wait, on the same jobs, at
//	    most the reference's × 1.02;
//	(b) the average bounded slowdown at most the reference's;
//	(c) the backfill completion rate at least 0.95;
//	(d) lost card-seconds at most 1% of busy card-seconds.
//
// It is a benchmark, not a timed test: nothing in it depends on how long a
// replay takes.
const (
	suiteSlack      = 1.02 // (a)
	suiteCompletion = 0.95 // (c)
	suiteLost       = 0.01 // (d)

	suiteDefaultTraces   = "../shared/traces"
	suiteDefaultPolicies = "easy,huitian-greedy,huitian"
	suitePhilly          = "philly-vc103959-elasticflow/philly_103959.csv"
	// Synthetic workloads run on hgx:32 (256 cards).
	suiteSynthNodes = 32

	// suiteControl names the control run: EASY planning with every queued
	// job's time limit suiteControlPad longer. Nothing about the policy
	// changes, so where the control misses a target against EASY, the
	// target measures the chaos of one run (one different start moves
	// everything after it), not harm: the noise floor of that row.
	suiteControl    = "easy+1m"
	suiteControlPad = time.Minute
)

// suiteFlags select what the suite runs.
type suiteFlags struct {
	on                 bool
	traces             string
	only, loads, seeds string
	jobs, synthJobs    int
	workers            int
	control            bool
}

// suiteOnlyFlags are the flags addSuiteFlags adds besides --suite: a
// replay without --suite refuses them.
var suiteOnlyFlags = []string{"traces", "suite-traces", "suite-loads", "suite-seeds", "suite-jobs", "suite-synth-jobs", "suite-workers", "suite-control"}

func addSuiteFlags(fl interface {
	BoolVar(*bool, string, bool, string)
	StringVar(*string, string, string, string)
	IntVar(*int, string, int, string)
}, s *suiteFlags) {
	fl.BoolVar(&s.on, "suite", false, "run the robustness suite instead of one trace: every SWF trace in --traces, the Philly VC trace and synthetic workloads, at several loads, with pass/fail against the targets")
	fl.StringVar(&s.traces, "traces", suiteDefaultTraces, "--suite: the traces folder; a relative path is taken from the current directory, else from the repository root above it")
	fl.StringVar(&s.only, "suite-traces", "", "--suite: comma-separated workloads to run, each a substring of a trace's path, \"philly\" or \"synth\" (the synthetic workloads only) (default: all)")
	fl.StringVar(&s.loads, "suite-loads", "0.7,0.9,1.2", "--suite: offered loads: traces run on a cluster sized to this share of their offered work, synth at load=")
	fl.StringVar(&s.seeds, "suite-seeds", "1-8", "--suite: synthetic seeds, as a list (1,2,5) or a range (1-8)")
	fl.IntVar(&s.jobs, "suite-jobs", 0, "--suite: replay at most this many jobs of each trace (its first ones); 0: all")
	fl.IntVar(&s.synthJobs, "suite-synth-jobs", 20000, "--suite: jobs per synthetic workload")
	fl.IntVar(&s.workers, "suite-workers", 0, "--suite: replays at once (0: GOMAXPROCS)")
	fl.BoolVar(&s.control, "suite-control", true, "--suite: also replay the control "+suiteControl+" (EASY planning with every queued job's limit one minute longer) and check it as a policy: the noise floor of each row; its rows do not fail the suite")
}

// suiteWorkload is one workload of the suite at one load.
type suiteWorkload struct {
	name    string // trace path relative to the traces folder, or synth:…
	load    float64
	cluster string // flat:N or hgx:N
	// compress is the factor the submit times were scaled by to reach the
	// load (1: not scaled).
	compress float64
	tr       *trace.Trace
}

// suiteWorkloadInfo is what a suite row says of its workload: the same in
// every shard of the suite, and what the merge writes the rows from.
type suiteWorkloadInfo struct {
	Name     string  `json:"name"`
	Load     float64 `json:"load"`
	Cluster  string  `json:"cluster"`
	Compress float64 `json:"submit_scale"`
	Jobs     int     `json:"jobs"`
}

func (wl *suiteWorkload) info() suiteWorkloadInfo {
	return suiteWorkloadInfo{Name: wl.name, Load: wl.load, Cluster: wl.cluster, Compress: wl.compress, Jobs: len(wl.tr.Jobs)}
}

// suiteSweep is what the suite's output says besides its results.
type suiteSweep struct {
	Reference   string              `json:"reference"`
	Estimates   string              `json:"estimates"`
	KillAtLimit bool                `json:"kill_at_limit"`
	Policies    []string            `json:"policies"`
	Workloads   []suiteWorkloadInfo `json:"workloads"`
	// Depth changes the runs without showing in the rows.
	Depth int `json:"depth"`
	// Replicas is how many replicas of each workload were replayed
	// (--replicas: the workload and Replicas−1 copies with sim.Perturb's
	// seeds 1…); 0 is the workload alone. The results list each workload's
	// replicas in turn. PerturbedShare and PerturbedMostS are how far the
	// copies depart from the workload (--replica-share, --replica-delay).
	Replicas       int     `json:"replicas,omitempty"`
	PerturbedShare float64 `json:"perturbed_share,omitempty"`
	PerturbedMostS int64   `json:"perturbed_most_s,omitempty"`
	// UsersDropped says every workload's user ids were dropped (--users
	// drop).
	UsersDropped bool `json:"users_dropped,omitempty"`
	// Cycles says when the planner was called, where not the default (one
	// cycle per event time, queue ties by id).
	Cycles *suiteCycles `json:"cycles,omitempty"`
}

// suiteCycles is a suite's --cycles, --interval and --ties.
type suiteCycles struct {
	Cycles    string `json:"cycles"`
	IntervalS int64  `json:"interval_s"`
	Ties      string `json:"ties"`
}

// String says it in the table's words.
func (c *suiteCycles) String() string {
	s := "cycles " + c.Cycles
	switch {
	case c.Cycles == sim.CyclesInterval.String():
		s = fmt.Sprintf("cycles only every %d s", c.IntervalS)
	case c.Cycles == sim.CyclesLoop.String():
		s = fmt.Sprintf("cycles every %d s and when a plan asks or a preempted job's cards come back (huitian's loop)", c.IntervalS)
	case c.IntervalS > 0:
		s += fmt.Sprintf(", and every %d s", c.IntervalS)
	}
	return s + ", queue ties by " + c.Ties
}

// replicasOf is how many runs of each workload a sweep holds.
func (sw *suiteSweep) replicasOf() int { return max(sw.Replicas, 1) }

// suiteRow is one policy on one workload, checked against the reference.
type suiteRow struct {
	Workload string  `json:"workload"`
	Load     float64 `json:"load"`
	Cluster  string  `json:"cluster"`
	// SubmitScale is the factor the trace's submit times were scaled by to
	// reach the load on a cluster no smaller than its largest job (1: none).
	SubmitScale float64 `json:"submit_scale"`
	Jobs        int     `json:"jobs"`
	Policy      string  `json:"policy"`
	// Class is the largest size class with jobs that finished under both.
	Class           string   `json:"largest_class"`
	ClassJobs       int      `json:"largest_class_jobs"`
	MeanWaitRatio   *float64 `json:"largest_mean_wait_ratio"`
	P95WaitRatio    *float64 `json:"largest_p95_wait_ratio"`
	AvgBSLD         float64  `json:"avg_bsld"`
	RefAvgBSLD      float64  `json:"reference_avg_bsld"`
	CompletionRate  *float64 `json:"backfill_completion_rate"`
	LostShare       *float64 `json:"lost_share"`
	Preemptions     int      `json:"preemptions"`
	LargestWait     bool     `json:"a_largest_class_wait"`
	Slowdown        bool     `json:"b_slowdown"`
	Completion      bool     `json:"c_completion"`
	Lost            bool     `json:"d_lost"`
	Pass            bool     `json:"pass"`
	RefMeanWait     float64  `json:"largest_reference_mean_wait_s"`
	MeanWait        float64  `json:"largest_mean_wait_s"`
	RefP95Wait      float64  `json:"largest_reference_p95_wait_s"`
	P95Wait         float64  `json:"largest_p95_wait_s"`
	ReferencePolicy string   `json:"reference"`
	NeverStarted    int      `json:"never_started"`
	RefNeverStarted int      `json:"reference_never_started"`
	BackfillStarts  int      `json:"backfill_starts"`
	HeadDelayP95    float64  `json:"head_delay_p95_s"`
	RefHeadDelayP95 float64  `json:"reference_head_delay_p95_s"`
	HeadDelayMax    float64  `json:"head_delay_max_s"`
	HeadHeld        int      `json:"head_held"`
	HeadHeldMax     float64  `json:"head_held_max_s"`
	Utilization     float64  `json:"utilization"`
	RefUtilization  float64  `json:"reference_utilization"`
	CyclesReplayed  int      `json:"cycles"`
	// Control marks the control run's row (suiteControl): checked as the
	// others are, never failing the suite.
	Control bool `json:"control,omitempty"`
	// Replicated is the row over the workload's replicas (--replicas);
	// the figures above and the verdict are its own run's.
	Replicated *suiteReplicated `json:"replicated,omitempty"`
}

// suiteReplicated is a row's targets (a) and (b) over replicas of its
// workload: each ratio to the reference on the same jobs of the same
// replica, as mean ± standard error over the replicas, and whether the
// miss is beyond chance — the mean less t standard errors still above the
// target, t Student's 97.5% quantile with one degree of freedom fewer than
// the replicas (2.78 for 5, 2.06 for 27): a one-sided test at 2.5%. One
// run of a loaded trace moves by several percent from one different start
// (the control shows how far); over replicas a miss that chance explains
// reads within that bound of the target.
type suiteReplicated struct {
	Replicas      int            `json:"replicas"`
	MeanWaitRatio replicaMeasure `json:"largest_mean_wait_ratio"`
	P95WaitRatio  replicaMeasure `json:"largest_p95_wait_ratio"`
	BSLDRatio     replicaMeasure `json:"avg_bsld_ratio"`
	// LargestWait and Slowdown say (a) and (b) hold over the replicas:
	// missed by no more than chance.
	LargestWait bool `json:"a_largest_class_wait"`
	Slowdown    bool `json:"b_slowdown"`
}

// replicated sums up a row's runs on every replica of its workload.
func replicated(rows []suiteRow) *suiteReplicated {
	var mean, p95, bsld []float64
	for _, r := range rows {
		if r.MeanWaitRatio != nil {
			mean = append(mean, *r.MeanWaitRatio)
		}
		if r.P95WaitRatio != nil {
			p95 = append(p95, *r.P95WaitRatio)
		}
		if v := sim.Ratio(r.AvgBSLD, r.RefAvgBSLD); v != nil {
			bsld = append(bsld, *v)
		}
	}
	out := &suiteReplicated{
		Replicas:      len(rows),
		MeanWaitRatio: summarizeRatios("largest class mean wait", mean),
		P95WaitRatio:  summarizeRatios("largest class p95 wait", p95),
		BSLDRatio:     summarizeRatios("avg bsld", bsld),
	}
	out.LargestWait = withinChance(out.MeanWaitRatio, suiteSlack) && withinChance(out.P95WaitRatio, suiteSlack)
	out.Slowdown = withinChance(out.BSLDRatio, 1)
	return out
}

// withinChance says a ratio's mean over replicas, less chanceT standard
// errors, is at most target: a ratio no replica defines, or one replica
// alone (no standard error), is within.
func withinChance(m replicaMeasure, target float64) bool {
	if m.StdErr == nil {
		return true
	}
	return atMost(*m.Mean-chanceT(m.Replicas)**m.StdErr, target)
}

// chanceT is Student's t quantile at 97.5% for the mean of n values.
func chanceT(n int) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(n - 1)}.Quantile(0.975)
}

func runSuite(cmd *cobra.Command, f *whatifFlags, shard sim.Shard) error {
	stderr := cmd.ErrOrStderr()
	// 1. Flags: every problem exits with status 2.
	s := &f.suite
	for _, other := range []string{"trace", "pair", "pair-log", "jobs", "report", "cluster", "load", "format", "filter"} {
		if cmd.Flags().Changed(other) {
			return exitWith(2, fmt.Errorf("--suite: --%s is for a single replay; the suite picks its traces and clusters", other))
		}
	}
	policies := suiteDefaultPolicies
	if cmd.Flags().Changed("policy") {
		policies = f.policies
	}
	runs, err := parsePolicies(policies, f.depth)
	if err != nil {
		return exitWith(2, err)
	}
	if s.control {
		runs = append(runs, policyRun{name: suiteControl, policy: model.PolicyEASY, pad: suiteControlPad})
	}
	ref := slices.IndexFunc(runs, func(pr policyRun) bool { return pr.name == f.reference })
	if ref < 0 {
		return exitWith(2, fmt.Errorf("--reference: %s is not among the suite's policies (%s)", f.reference, policies))
	}
	cfg, err := f.simConfig()
	if err != nil {
		return exitWith(2, err)
	}
	loads, err := parseLoads(s.loads)
	if err != nil {
		return exitWith(2, err)
	}
	seeds, err := parseSeeds(s.seeds)
	if err != nil {
		return exitWith(2, err)
	}
	switch {
	case s.jobs < 0:
		return exitWith(2, fmt.Errorf("--suite-jobs: %d: want ≥ 0", s.jobs))
	case s.synthJobs < 1:
		return exitWith(2, fmt.Errorf("--suite-synth-jobs: %d: want ≥ 1", s.synthJobs))
	case s.workers < 0:
		return exitWith(2, fmt.Errorf("--suite-workers: %d: want ≥ 0", s.workers))
	}
	dir, err := tracesDir(s.traces)
	if err != nil {
		return exitWith(2, err)
	}

	// 2. The workloads, each at every load.
	wls, err := suiteWorkloads(dir, s, loads, seeds, f.dropIDs, stderr)
	if err != nil {
		return exitWith(2, err)
	}
	if len(wls) == 0 {
		return exitWith(2, fmt.Errorf("--suite-traces: %q selects no workload in %s", s.only, dir))
	}

	// 3. Every (workload, replica, policy) replay through sim.Sweep; with
	// --shard, only the shard's.
	reps := max(f.replicas, 1)
	ws := make([]sim.WhatIf, len(wls)*reps)
	for w, wl := range wls {
		for r := range reps {
			i := w*reps + r
			ws[i] = sim.WhatIf{
				Jobs:       sim.Perturb(wl.tr.Jobs, uint64(r), f.perturbation()),
				NewCluster: func() (*model.Cluster, error) { return sim.ParseCluster(wl.cluster, wl.tr.MaxCards) },
				Config:     cfg,
			}
			for _, pr := range runs {
				ws[i].Policies = append(ws[i].Policies, simPolicy(pr))
			}
		}
	}
	total := 0
	for k := range sim.Runs(ws) {
		if shard.Has(k) {
			total++
		}
	}
	var mu sync.Mutex
	done := 0
	swept, err := sim.Sweep(cmd.Context(), ws, sim.SweepOptions{Workers: s.workers, Shard: shard, Done: func(w, p int, res *sim.Result) {
		mu.Lock()
		defer mu.Unlock()
		done++
		replica := ""
		if reps > 1 {
			replica = fmt.Sprintf(" replica %d", w%reps)
		}
		wl := &wls[w/reps]
		fmt.Fprintf(stderr, "suite: %d/%d %s%s load %g on %s, %s: %d cycles in %.1f s\n",
			done, total, wl.name, replica, wl.load, wl.cluster, runs[p].name, res.Summary.Cycles, res.Wall.Seconds())
	}})
	if err != nil {
		return err
	}
	sw := &suiteSweep{Reference: runs[ref].name, Estimates: cfg.Estimates.String(), KillAtLimit: f.killAtLimit, Depth: f.depth, UsersDropped: f.dropIDs}
	if cfg.Cycles != (sim.Config{}).Cycles || cfg.Interval != 0 || cfg.Ties != (sim.Config{}).Ties {
		sw.Cycles = &suiteCycles{Cycles: cfg.Cycles.String(), IntervalS: int64(cfg.Interval / time.Second), Ties: cfg.Ties.String()}
	}
	if reps > 1 {
		p := f.perturbation()
		sw.Replicas, sw.PerturbedShare, sw.PerturbedMostS = reps, p.Share, p.Most
	}
	for _, pr := range runs {
		sw.Policies = append(sw.Policies, pr.name)
	}
	for i := range wls {
		sw.Workloads = append(sw.Workloads, wls[i].info())
	}
	if f.shard != "" {
		return writeShard(cmd, f.shardOut, shard, shardKindSuite, sw, swept)
	}
	return writeSuite(cmd, f.asJSON, sw, swept)
}

// writeSuite checks every row against the reference's run and prints the
// table or the JSON, from a whole suite and from the merge of its shards
// alike. It exits with status 1 when a row fails.
func writeSuite(cmd *cobra.Command, asJSON bool, sw *suiteSweep, results [][]*sim.Result) error {
	// 4. Check and print.
	ref := slices.Index(sw.Policies, sw.Reference)
	reps := sw.replicasOf()
	var rows []suiteRow
	for w, wl := range sw.Workloads {
		for i, name := range sw.Policies {
			if i == ref {
				continue
			}
			// The row is the workload's own run (replica 0); with
			// replicas, each replica's run is checked alike and summed
			// up beside it.
			runs := make([]suiteRow, reps)
			for r := range reps {
				rs := results[w*reps+r]
				row, err := checkSuiteRow(wl, name, sw.Reference, rs[i], rs[ref])
				if err != nil {
					return err
				}
				runs[r] = row
			}
			row := runs[0]
			if reps > 1 {
				row.Replicated = replicated(runs)
			}
			rows = append(rows, row)
		}
	}
	failed := 0
	for _, r := range rows {
		if !r.Pass && !r.Control {
			failed++
		}
	}
	if asJSON {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		if err := enc.Encode(struct {
			Reference string `json:"reference"`
			Estimates string `json:"estimates"`
			// The replicas each row's replicated verdict is over, and how
			// far they depart from the workload: none without --replicas.
			Replicas       int           `json:"replicas,omitempty"`
			PerturbedShare float64       `json:"perturbed_share,omitempty"`
			PerturbedMostS int64         `json:"perturbed_most_s,omitempty"`
			UsersDropped   bool          `json:"users_dropped,omitempty"`
			Cycles         *suiteCycles  `json:"cycles,omitempty"`
			Rows           []suiteRow    `json:"rows"`
			Failed         int           `json:"failed"`
			Families       []suiteFamily `json:"families"`
		}{sw.Reference, sw.Estimates, sw.Replicas, sw.PerturbedShare, sw.PerturbedMostS, sw.UsersDropped, sw.Cycles, rows, failed, suiteFamilies(rows)}); err != nil {
			return err
		}
	} else if err := writeSuiteTable(cmd.OutOrStdout(), sw, rows); err != nil {
		return err
	}
	if failed > 0 {
		return exitWith(1, fmt.Errorf("suite: %d of %d rows miss a target", failed, len(rows)))
	}
	return nil
}

// parseLoads reads --suite-loads.
func parseLoads(list string) ([]float64, error) {
	var out []float64
	for item := range strings.SplitSeq(list, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		v, err := strconv.ParseFloat(item, 64)
		if err != nil || !(v >= 0.01 && v <= 100) {
			return nil, fmt.Errorf("--suite-loads: %q: want loads in [0.01, 100]", item)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, errors.New("--suite-loads: no load given")
	}
	return out, nil
}

// parseSeeds reads --suite-seeds: a list (1,2,5) or a range (1-8).
func parseSeeds(list string) ([]uint64, error) {
	var out []uint64
	for item := range strings.SplitSeq(list, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(item, "-")
		a, err1 := strconv.ParseUint(lo, 10, 64)
		b, err2 := a, error(nil)
		if isRange {
			b, err2 = strconv.ParseUint(hi, 10, 64)
		}
		if err1 != nil || err2 != nil || b < a || b-a >= 10000 {
			return nil, fmt.Errorf("--suite-seeds: %q: want seeds (1,2,5) or a range (1-8)", item)
		}
		for v := a; v <= b; v++ {
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("--suite-seeds: no seed given")
	}
	return out, nil
}

// tracesDir resolves --traces: a relative path from the current
// directory, else from the repository root (the nearest folder above with
// a go.mod), so that `make suite` and `go test ./cmd/huitian` both find
// ../shared/traces.
func tracesDir(dir string) (string, error) {
	if st, err := os.Stat(dir); err == nil && st.IsDir() {
		return dir, nil
	}
	if !filepath.IsAbs(dir) {
		if wd, err := os.Getwd(); err == nil {
			for d := wd; ; d = filepath.Dir(d) {
				if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
					p := filepath.Join(d, dir)
					if st, err := os.Stat(p); err == nil && st.IsDir() {
						return p, nil
					}
					break
				}
				if filepath.Dir(d) == d {
					break
				}
			}
		}
	}
	return "", fmt.Errorf("--traces: %s: no such folder here or under the repository root (give the folder of the shared traces)", dir)
}

// swfTraces lists the SWF traces under dir: files named *.swf or *.swf.gz,
// and *.gz files in folders named swf-*, sorted.
func swfTraces(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		name := d.Name()
		inSWF := strings.HasPrefix(filepath.Base(filepath.Dir(path)), "swf-")
		if strings.HasSuffix(name, ".swf") || strings.HasSuffix(name, ".swf.gz") || (inSWF && strings.HasSuffix(name, ".gz")) {
			rel, err := filepath.Rel(dir, path)
			if err != nil {
				return err
			}
			out = append(out, rel)
		}
		return nil
	})
	slices.Sort(out)
	return out, err
}

// selected reports whether --suite-traces selects a workload.
func (s *suiteFlags) selected(name string) bool { return s.matches(name, "") }

// selectedTrace says whether --suite-traces selects the trace at rel: an
// item that is a substring of its path, other than the keyword "synth",
// which selects the synthetic workloads only (it used to select the
// Lublin-synthetic SWF traces as well).
func (s *suiteFlags) selectedTrace(rel string) bool { return s.matches(rel, "synth") }

// matches says whether --suite-traces is empty or has an item, other than
// skip, that is a substring of name.
func (s *suiteFlags) matches(name, skip string) bool {
	if strings.TrimSpace(s.only) == "" {
		return true
	}
	for item := range strings.SplitSeq(s.only, ",") {
		if item = strings.TrimSpace(item); item != "" && item != skip && strings.Contains(name, item) {
			return true
		}
	}
	return false
}

// suiteWorkloads reads the selected traces and makes the synthetic
// workloads, each at every load.
func suiteWorkloads(dir string, s *suiteFlags, loads []float64, seeds []uint64, dropUsers bool, log io.Writer) ([]suiteWorkload, error) {
	var out []suiteWorkload
	swfs, err := swfTraces(dir)
	if err != nil {
		return nil, fmt.Errorf("--traces: %w", err)
	}
	type file struct{ rel, format string }
	files := make([]file, 0, len(swfs)+1)
	for _, p := range swfs {
		files = append(files, file{p, "swf"})
	}
	files = append(files, file{suitePhilly, "philly"})
	for _, fl := range files {
		if !s.selectedTrace(fl.rel) && !(fl.format == "philly" && s.selected("philly")) {
			continue
		}
		t0 := time.Now()
		tr, err := trace.Open(filepath.Join(dir, fl.rel), fl.format, trace.Options{})
		if err != nil {
			return nil, fmt.Errorf("--traces: %w", err)
		}
		if s.jobs > 0 && s.jobs < len(tr.Jobs) {
			tr.Jobs = tr.Jobs[:s.jobs]
		}
		if dropUsers {
			tr.DropUsers()
		}
		if len(tr.Jobs) == 0 {
			return nil, fmt.Errorf("--traces: %s: no jobs to replay", fl.rel)
		}
		fmt.Fprintf(log, "suite: %s: %d jobs read in %.1f s; offered work %.1f cards\n", fl.rel, len(tr.Jobs), time.Since(t0).Seconds(), offeredCards(tr.Jobs))
		for _, l := range loads {
			cluster, jobs, f := loadWorkload(tr.Jobs, l)
			t := *tr
			t.Jobs = jobs
			if f != 1 {
				fmt.Fprintf(log, "suite: %s at load %g: %s is the smallest cluster that holds its largest job in whole nodes, so its submit times are scaled by %.3f\n", fl.rel, l, cluster, f)
			}
			out = append(out, suiteWorkload{name: fl.rel, load: l, cluster: cluster, compress: f, tr: &t})
		}
	}
	if s.selected("synth") {
		cards := suiteSynthNodes * 8
		for _, seed := range seeds {
			for _, l := range loads {
				so := trace.SynthOptions{Jobs: s.synthJobs, Seed: seed, Load: l, Cards: cards}
				tr, err := trace.Synth(so)
				if err != nil {
					return nil, fmt.Errorf("--suite-synth-jobs: %w", err)
				}
				if dropUsers {
					tr.DropUsers()
				}
				name := fmt.Sprintf("synth:jobs=%d,seed=%d", s.synthJobs, seed)
				out = append(out, suiteWorkload{name: name, load: l, cluster: fmt.Sprintf("hgx:%d", suiteSynthNodes), compress: 1, tr: tr})
			}
		}
	}
	return out, nil
}

// offeredCards is a workload's offered work as a number of cards kept
// busy: Σ cards × runtime over the span of its submits (over the longest
// runtime when every job arrives at once).
func offeredCards(jobs []trace.Job) float64 {
	var work float64
	first, last, longest := jobs[0].Submit, jobs[0].Submit, int64(1)
	for i := range jobs {
		j := &jobs[i]
		work += float64(j.Spec.Cards) * float64(j.Runtime)
		first, last = min(first, j.Submit), max(last, j.Submit)
		longest = max(longest, j.Runtime)
	}
	span := last - first
	if span <= 0 {
		span = longest
	}
	return work / float64(span)
}

// suiteLoadSlack is how far below its target a trace's load may stay on
// the cluster sized for it (rounded up to whole cards) before its submit
// times are scaled.
const suiteLoadSlack = 1.01

// loadWorkload sizes a cluster so that the workload's offered work is
// load of it: flat:N (single-card nodes, as SWF results assume), or hgx:N
// (8-card nodes) when some job needs cards on one node. The cluster is
// never smaller than the largest job; where that (or rounding up to whole
// nodes) keeps the load more than 1% below the target (a trace whose
// largest job is its whole machine, at a load above the trace's own), the
// submit times are scaled by f < 1 around the first submit instead, so that the jobs arrive faster and the offered load
// reaches the target. It returns the cluster, the jobs (jobs itself when f
// is 1, else a scaled copy) and f.
func loadWorkload(jobs []trace.Job, load float64) (cluster string, out []trace.Job, f float64) {
	largest, nodes := 1, false
	for i := range jobs {
		sp := &jobs[i].Spec
		largest = max(largest, sp.Cards)
		if sp.CardsPerNode > 1 || sp.Topology != model.TopologyAny {
			nodes = true
		}
	}
	offered := offeredCards(jobs)
	cards := max(int(math.Ceil(offered/load)), largest)
	cluster = fmt.Sprintf("flat:%d", cards)
	if nodes {
		cards = (cards + 7) / 8 * 8
		cluster = fmt.Sprintf("hgx:%d", cards/8)
	}
	f = 1
	if float64(cards)*load > offered*suiteLoadSlack {
		f = offered / (float64(cards) * load)
	}
	if f == 1 {
		return cluster, jobs, 1
	}
	out = slices.Clone(jobs)
	first := jobs[0].Submit
	for i := range out {
		out[i].Submit = first + int64(math.Round(float64(out[i].Submit-first)*f))
	}
	return cluster, out, f
}

// checkSuiteRow checks one policy's run against the reference's.
func checkSuiteRow(wl suiteWorkloadInfo, policy, reference string, res, ref *sim.Result) (suiteRow, error) {
	same, err := sim.CompareClasses(res, ref)
	if err != nil {
		return suiteRow{}, fmt.Errorf("%s load %g: %s against %s: %w", wl.Name, wl.Load, policy, reference, err)
	}
	s, rs := res.Summary, ref.Summary
	row := suiteRow{
		Workload: wl.Name, Load: wl.Load, Cluster: wl.Cluster, SubmitScale: wl.Compress, Jobs: wl.Jobs, Policy: policy, ReferencePolicy: reference,
		AvgBSLD: s.AvgBSLD, RefAvgBSLD: rs.AvgBSLD, CompletionRate: s.BackfillCompletionRate, LostShare: s.LostShare,
		Preemptions: s.Preemptions, NeverStarted: s.NeverStarted, RefNeverStarted: rs.NeverStarted, BackfillStarts: s.BackfillStarts,
		HeadDelayP95: s.HeadDelay.P95, RefHeadDelayP95: rs.HeadDelay.P95, HeadDelayMax: s.HeadDelay.Max, HeadHeld: s.HeadDelay.Held, HeadHeldMax: s.HeadDelay.HeldMax, Utilization: s.Utilization, RefUtilization: rs.Utilization,
		CyclesReplayed: s.Cycles, Control: policy == suiteControl,
	}
	// (a) The largest class on the same jobs.
	row.LargestWait = true
	if c := sim.Largest(same); c >= 0 {
		v := same[c]
		row.Class, row.ClassJobs = v.Class, v.Jobs
		row.MeanWaitRatio, row.P95WaitRatio = v.MeanWaitRatio, v.P95WaitRatio
		row.MeanWait, row.RefMeanWait, row.P95Wait, row.RefP95Wait = v.MeanWait, v.RefMeanWait, v.P95Wait, v.RefP95Wait
		row.LargestWait = atMost(v.MeanWait, v.RefMeanWait*suiteSlack) && atMost(v.P95Wait, v.RefP95Wait*suiteSlack)
	}
	// (b)–(d).
	row.Slowdown = atMost(s.AvgBSLD, rs.AvgBSLD)
	row.Completion = s.BackfillCompletionRate == nil || *s.BackfillCompletionRate >= suiteCompletion
	row.Lost = s.LostShare == nil || *s.LostShare <= suiteLost
	row.Pass = row.LargestWait && row.Slowdown && row.Completion && row.Lost
	return row, nil
}

// meanSE prints a ratio over replicas as mean±standard error.
func meanSE(m replicaMeasure) string {
	if m.Mean == nil {
		return "–"
	}
	return opt(m.Mean, "%.3f") + "±" + opt(m.StdErr, "%.3f")
}

// atMost is a ≤ b, forgiving the rounding of sums taken in other orders.
func atMost(a, b float64) bool { return a <= b+1e-9*max(1, math.Abs(b)) }

func writeSuiteTable(w io.Writer, sw *suiteSweep, rows []suiteRow) error {
	reference := sw.Reference
	fmt.Fprintf(w, "targets against %s on the same run: (a) largest size class mean and p95 wait ≤ ×%.2f on the same jobs; (b) avg bounded slowdown ≤ %s's; (c) backfill completion ≥ %.2f; (d) lost ≤ %.0f%% of busy card-seconds\n",
		reference, suiteSlack, reference, suiteCompletion, 100*suiteLost)
	if sw.UsersDropped {
		fmt.Fprintln(w, "every job's user id dropped (--users drop)")
	}
	if sw.Cycles != nil {
		fmt.Fprintln(w, sw.Cycles)
	}
	fmt.Fprintln(w)
	reps := 0
	for _, r := range rows {
		if r.Replicated != nil {
			reps = r.Replicated.Replicas
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "workload\tload\tcluster\tsubmit ×\tjobs\tpolicy\tlargest class\tsame jobs\tmean wait ×%[1]s\tp95 wait ×%[1]s\tbsld\t%[1]s bsld\tbf completion\tlost / busy\tpreemptions\thead delay max\theld by lent (max)\ta\tb\tc\td\tresult\t", reference)
	if reps > 0 {
		fmt.Fprintf(tw, "over %d replicas: mean wait ×%s\tp95 wait ×%[2]s\tbsld ×%[2]s\tbeyond chance\t", reps, reference)
	}
	fmt.Fprintln(tw)
	mark := func(ok bool) string {
		if ok {
			return "ok"
		}
		return "FAIL"
	}
	var passed, checked, ctlRows, ctlA, ctlB, repRows, repMiss int
	for _, r := range rows {
		result := map[bool]string{true: "PASS", false: "FAIL"}[r.Pass]
		if r.Control {
			result = "control"
			ctlRows++
			if !r.LargestWait {
				ctlA++
			}
			if !r.Slowdown {
				ctlB++
			}
		} else {
			checked++
			if r.Pass {
				passed++
			}
		}
		fmt.Fprintf(tw, "%s\t%g\t%s\t%.3f\t%d\t%s\t%s\t%d\t%s\t%s\t%.2f\t%.2f\t%s\t%s\t%d\t%s\t%d (%s)\t%s\t%s\t%s\t%s\t%s\t",
			r.Workload, r.Load, r.Cluster, r.SubmitScale, r.Jobs, r.Policy, r.Class, r.ClassJobs, opt(r.MeanWaitRatio, "%.3f"), opt(r.P95WaitRatio, "%.3f"),
			r.AvgBSLD, r.RefAvgBSLD, opt(r.CompletionRate, "%.3f"), pct(r.LostShare), r.Preemptions, (time.Duration(r.HeadDelayMax) * time.Second).String(),
			r.HeadHeld, (time.Duration(r.HeadHeldMax) * time.Second).String(),
			mark(r.LargestWait), mark(r.Slowdown), mark(r.Completion), mark(r.Lost), result)
		if rp := r.Replicated; rp != nil {
			var beyond []string
			if !rp.LargestWait {
				beyond = append(beyond, "a")
			}
			if !rp.Slowdown {
				beyond = append(beyond, "b")
			}
			if !r.Control {
				repRows++
				if len(beyond) > 0 {
					repMiss++
				}
			}
			if len(beyond) == 0 {
				beyond = []string{"–"}
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t", meanSE(rp.MeanWaitRatio), meanSE(rp.P95WaitRatio), meanSE(rp.BSLDRatio), strings.Join(beyond, ","))
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if _, err := fmt.Fprintf(w, "\n%d of %d rows pass\n", passed, checked); err != nil {
		return err
	}
	if repRows > 0 {
		fmt.Fprintf(w, "over %d replicas of each workload (the workload and %d with %.0f%% of its jobs submitted 1–%d s later, seeded), %d of %d rows miss (a) or (b) beyond chance: the mean ratio less %.2f standard errors (Student's t, 97.5%%) above the target\n",
			reps, reps-1, 100*sw.PerturbedShare, sw.PerturbedMostS, repMiss, repRows, chanceT(reps))
	}
	if fams := suiteFamilies(rows); len(fams) > 0 {
		fmt.Fprintf(w, "\nover the rows of each family (the mean of the rows' ratios; a single run moves by chance, the mean much less):\n\n")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "family\tpolicy\trows\tlargest class mean wait ×%[1]s\t(min – max)\tp95 wait ×%[1]s\tbsld ×%[1]s\trows failing a\trows failing b\t\n", reference)
		for _, f := range fams {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%.3f\t%.3f – %.3f\t%.3f\t%.3f\t%d\t%d\t\n",
				f.Family, f.Policy, f.Rows, f.MeanWaitRatio, f.MinMeanWaitRatio, f.MaxMeanWaitRatio, f.P95WaitRatio, f.BSLDRatio, f.FailA, f.FailB)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if ctlRows == 0 {
		return nil
	}
	_, err := fmt.Fprintf(w, "control %s (%s planning with every queued job's limit one minute longer: no policy change) misses (a) on %d and (b) on %d of %d rows: the noise floor of one run\n",
		suiteControl, reference, ctlA, ctlB, ctlRows)
	return err
}

// suiteFamily sums up a policy's rows over a family of workloads: the
// traces, or the synthetic seeds. One run's ratio moves by chance by
// several percent (the control shows how far); their mean over a family
// moves much less, and is where a systematic harm to the largest class
// would show.
type suiteFamily struct {
	Family           string  `json:"family"`
	Policy           string  `json:"policy"`
	Rows             int     `json:"rows"`
	MeanWaitRatio    float64 `json:"largest_mean_wait_ratio"`
	MinMeanWaitRatio float64 `json:"largest_mean_wait_ratio_min"`
	MaxMeanWaitRatio float64 `json:"largest_mean_wait_ratio_max"`
	P95WaitRatio     float64 `json:"largest_p95_wait_ratio"`
	BSLDRatio        float64 `json:"avg_bsld_ratio"`
	FailA            int     `json:"rows_failing_a"`
	FailB            int     `json:"rows_failing_b"`
}

// suiteFamilies sums the rows up per family and policy, in the rows'
// order; rows without a largest class compared (or a reference bounded
// slowdown of 0) leave the means they lack.
func suiteFamilies(rows []suiteRow) []suiteFamily {
	type acc struct {
		f          suiteFamily
		n, nb      int
		mean, p95  float64
		bsld       float64
		minR, maxR float64
	}
	var order []string
	byKey := map[string]*acc{}
	for _, r := range rows {
		fam := "traces"
		if strings.HasPrefix(r.Workload, "synth:") {
			fam = "synth"
		}
		key := fam + "\x00" + r.Policy
		a := byKey[key]
		if a == nil {
			a = &acc{f: suiteFamily{Family: fam, Policy: r.Policy}, minR: math.Inf(1), maxR: math.Inf(-1)}
			byKey[key] = a
			order = append(order, key)
		}
		a.f.Rows++
		if !r.LargestWait {
			a.f.FailA++
		}
		if !r.Slowdown {
			a.f.FailB++
		}
		if r.MeanWaitRatio != nil && r.P95WaitRatio != nil {
			a.n++
			a.mean += *r.MeanWaitRatio
			a.p95 += *r.P95WaitRatio
			a.minR, a.maxR = min(a.minR, *r.MeanWaitRatio), max(a.maxR, *r.MeanWaitRatio)
		}
		if r.RefAvgBSLD > 0 {
			a.nb++
			a.bsld += r.AvgBSLD / r.RefAvgBSLD
		}
	}
	out := make([]suiteFamily, 0, len(order))
	for _, key := range order {
		a := byKey[key]
		if a.n > 0 {
			a.f.MeanWaitRatio, a.f.P95WaitRatio = a.mean/float64(a.n), a.p95/float64(a.n)
			a.f.MinMeanWaitRatio, a.f.MaxMeanWaitRatio = a.minR, a.maxR
		}
		if a.nb > 0 {
			a.f.BSLDRatio = a.bsld / float64(a.nb)
		}
		out = append(out, a.f)
	}
	return out
}
