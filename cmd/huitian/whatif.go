package main

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/sim"
	"github.com/huitian/huitian/sim/report"
	"github.com/huitian/huitian/sim/trace"
	"github.com/huitian/huitian/solver"
	"github.com/huitian/huitian/solver/baseline"
)

// whatifFlags are the whatif command's flags.
type whatifFlags struct {
	trace, format, cluster, policies, estimates, filter, reference, cycles string
	depth                                                                  int
	killAtLimit, asJSON                                                    bool
	interval                                                               time.Duration
	jobsDir, reportDir                                                     string
	pair, pairLog                                                          string
	ties                                                                   string
	// users is --users: keep, or drop every job's user id; dropIDs is
	// it read (readUsers, once, before anything is replayed).
	users    string
	dropIDs  bool
	replicas int
	// replicaShare and replicaDelay are --replica-share and
	// --replica-delay: how far a replica departs from its trace.
	replicaShare float64
	replicaDelay time.Duration
	load         float64
	suite        suiteFlags
	// shard is --shard (i/n, "" for the whole sweep), shardOut --shard-out.
	shard, shardOut string
	prof            profiling // --cpuprofile, --memprofile
}

// simConfig reads the flags that say how a replay runs (--estimates,
// --kill-at-limit, --cycles, --interval, --ties): one run's, the
// replicas' and the suite's alike.
func (f *whatifFlags) simConfig() (sim.Config, error) {
	est, err := sim.ParseEstimates(f.estimates)
	if err != nil {
		return sim.Config{}, fmt.Errorf("--estimates: %w", err)
	}
	var cycles sim.Cycles
	switch f.cycles {
	case "per-time":
	case "per-event", "pyss":
		cycles = sim.CyclesPerEvent
	case "interval", "loop":
		cycles = sim.CyclesInterval
		if f.cycles == "loop" {
			cycles = sim.CyclesLoop
		}
		if f.interval <= 0 {
			return sim.Config{}, fmt.Errorf("--cycles %s: give --interval", f.cycles)
		}
	default:
		return sim.Config{}, fmt.Errorf("--cycles: %q: want per-time, per-event, interval or loop", f.cycles)
	}
	ties, err := sim.ParseTies(f.ties)
	if err != nil {
		return sim.Config{}, fmt.Errorf("--ties: %w", err)
	}
	if f.interval < 0 || f.interval%time.Second != 0 {
		return sim.Config{}, fmt.Errorf("--interval: %v: want whole seconds ≥ 0", f.interval)
	}
	return sim.Config{Estimates: est, KeepOverrun: !f.killAtLimit, Interval: f.interval, Cycles: cycles, Ties: ties}, nil
}

// The values of --users.
const (
	usersKeep = "keep"
	usersDrop = "drop"
)

// readUsers reads --users into dropIDs: whether to drop every job's user
// id.
func (f *whatifFlags) readUsers() error {
	switch f.users {
	case usersKeep, usersDrop:
		f.dropIDs = f.users == usersDrop
		return nil
	}
	return fmt.Errorf("--users: %q: want %s or %s", f.users, usersKeep, usersDrop)
}

// policyRun is one policy to simulate.
type policyRun struct {
	name   string // as given: easy, hybrid-8, …
	policy model.Policy
	depth  int
	// pad lengthens every queued job's time limit as the planner sees it
	// (the suite's control run); 0 for a policy as it is.
	pad time.Duration
	// place, when set, turns end-aligned placement on or off against the
	// policy's default: a name's +aligned or +bestfit (solver.NewPlacement).
	place *bool
	// ablation turns a huitian planner's mechanisms against its defaults:
	// +onenode (solver.Config.OneNodeGangs), +nosat (no saturation
	// threshold).
	ablation solver.Ablation
}

// Placement suffixes of a policy name (parsePolicies).
const (
	alignedSuffix = "+aligned"
	bestFitSuffix = "+bestfit"
	oneNodeSuffix = "+onenode"
	noSatSuffix   = "+nosat"
)

func newWhatifCmd() *cobra.Command {
	var f whatifFlags
	cmd := &cobra.Command{
		Use:   "whatif",
		Short: "Replay a workload trace on a cluster under several policies and compare them",
		Long: `Whatif replays a workload trace (or a synthetic workload) on a simulated
cluster under each policy, in parallel, and compares wait, flow, bounded
slowdown, utilization and the backfill measures.

  huitian whatif --trace KTH-SP2.swf.gz --filter strong --cluster flat \
      --policy easy,easy-sjbf,conservative --json
  huitian whatif --trace synth:jobs=100000,seed=1,load=0.9 --cluster hgx:128 \
      --policy easy,conservative --report out/

Clusters: ` + sim.ClusterSpecs + `.

Policies: easy, conservative, fcfs, easy-sjbf, hybrid, hybrid-N, huitian-greedy
and huitian (the LP on CLP). A name ending in +aligned or +bestfit turns
end-aligned placement on or off (the huitian planners align by default, the
baselines place by best fit alone): easy+aligned is EASY placing as
huitian does, to tell what placement gives from what backfill does. A
huitian planner's name may end in +onenode, which lends a job that
communicates the cards of one node only, beyond EASY (gangs spread over
nodes start by EASY's own backfill alone), and in +nosat, which lends
beyond EASY however deep the queue (no saturation threshold); with a
placement suffix too, in any order.

Measures, besides wait, flow, bounded slowdown and utilization:
  by job size  classes by cards relative to the cluster: 1; 2 up to
               max(one node, 1/16 of the cluster); up to 1/4; above 1/4.
               Per class: jobs, mean and p95 wait, mean bounded slowdown,
               preemptions, and (×REF) the ratio to the --reference policy
               on the same jobs: those of the class that finished in both.
  head delay   for every job that was the reserved head of a decision: its
               start minus the start its first reservation promised.
  held by lent heads that waited with their cards free but for jobs lent
               into windows (beyond EASY): EASY would have started them.
  lost / busy  card-seconds lost to preemption over busy card-seconds.
  main-wait Δ  mean wait of the jobs this policy started as regular minus
               that of the jobs the reference started as regular: different
               jobs per policy (one that backfills more leaves mostly the
               large jobs as main jobs); compare the size classes instead. The runs are chaotic: one different start changes
everything after it, so compare policies over several seeds, or over
replicas of a trace (--replicas), before trusting a difference of a few
percent. Bad flags and unreadable inputs exit with status 2.

--replicas N replays the trace and N-1 replicas of it, each with a seeded
2% of its jobs submitted 1–120 s later, under every policy, and prints each
policy's ratios to the --reference policy on the same jobs of the same
replica (average and p95 wait, average bounded slowdown, each size class's
mean wait, the largest class's p95) as mean ± standard error over the
replicas, with their range. easy+1m among the policies shows the spread
that chance alone gives.

  huitian whatif --trace KTH-SP2.swf.gz --filter strong --cluster flat:80 \
      --policy easy,huitian-greedy,easy+1m --replicas 27

--suite runs the robustness suite instead of one trace: every SWF trace in
--traces, the Philly VC trace and synthetic workloads (--suite-seeds), each
at every load of --suite-loads, under easy, huitian-greedy and huitian, and
prints one row per workload, load and policy with pass/fail against the
targets (largest size class's mean and p95 wait ≤ easy's × 1.02 on the same
jobs; avg bounded slowdown ≤ easy's; backfill completion ≥ 0.95; lost ≤ 1%
of busy card-seconds), and a control, easy+1m (EASY planning with every
queued job's limit one minute longer: no policy change), whose rows show
how far one run moves by chance and never fail. It exits with status 1
when a policy's row fails. With --replicas N each row also gives its
targets over N replicas of its workload (mean ± standard error) and whether
a miss is beyond chance: the mean less t standard errors (Student's t at
97.5%: 2.78 for 5 replicas) above the target. The verdict and the exit status stay the workload's own run's.

  huitian whatif --suite --suite-traces lublin,hpc2n --suite-loads 0.9 --suite-jobs 2000`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runWhatif(cmd, &f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.trace, "trace", "", "workload: a trace file, or synth:jobs=N,seed=S,load=L[,cards=C,users=U]")
	fl.StringVar(&f.format, "format", "", "trace format: "+strings.Join(trace.Formats(), ", ")+" (default: synth for synth:…, swf for *.swf[.gz])")
	fl.StringVar(&f.cluster, "cluster", "flat", "cluster: "+sim.ClusterSpecs)
	fl.StringVar(&f.policies, "policy", "easy", "comma-separated policies: "+strings.Join(policyNames(), ", ")+", hybrid-N, or "+suiteControl+" (EASY with every queued limit a minute longer: how far one run moves by chance)")
	fl.IntVar(&f.depth, "depth", 0, "reservation depth of hybrid (0: its default)")
	fl.StringVar(&f.estimates, "estimates", "user", "runtime estimates the planner gets: user (the trace's limits) or exact (actual runtimes)")
	fl.StringVar(&f.filter, "filter", "", `SWF record filter: "" or strong (predictsim's)`)
	fl.StringVar(&f.users, "users", usersKeep, "user ids: keep, or drop every job's (a log that records none: the estimators get no user's own history)")
	fl.BoolVar(&f.killAtLimit, "kill-at-limit", true, "kill a job at its limit; false lets it run to its recorded end")
	fl.DurationVar(&f.interval, "interval", 0, "also plan every interval (whole seconds); 0 plans on arrivals and completions only")
	fl.StringVar(&f.cycles, "cycles", "per-time", "per-time: one cycle per event time, completions then arrivals; per-event: a cycle per arrival and per early completion, arrivals first (pyss, predictsim's simulator); interval: only every --interval, as a timer-driven backfill scheduler; loop: every --interval and when a plan asks (replan_by) or a preempted job's cards come back, as huitian's own loop (huitian kube, huitian slurm)")
	fl.StringVar(&f.ties, "ties", "id", "order of jobs submitted in the same second in the planner's queue: id (the planner's own order) or arrival (trace order, pyss's convention; with --cycles per-event it replays pyss)")
	fl.StringVar(&f.reference, "reference", "easy", "policy the others are compared against, when it is in the run: per size class on the same jobs, and main-wait Δ")
	fl.BoolVar(&f.asJSON, "json", false, "print the results as JSON on stdout")
	fl.StringVar(&f.jobsDir, "jobs", "", "write one CSV per policy into this directory: id,submit,start,end,cards,kind,preemptions")
	fl.StringVar(&f.reportDir, "report", "", "write report.md and its plots (SVG and PNG) into this directory, and say where")
	addSuiteFlags(fl, &f.suite)
	fl.StringVar(&f.shard, "shard", "", "i/n: make only part i (from 0) of n of the runs (workload × policy, numbered in order; run k is part k mod n's) and write them as a partial result for huitian whatif merge")
	fl.StringVar(&f.shardOut, "shard-out", "", "--shard: write the partial result to this file (default: standard output)")
	fl.Float64Var(&f.load, "load", 0, "size the cluster for this offered load as --suite does (flat:N, or hgx:N when jobs ask for nodes; submit times scaled when the smallest cluster that holds the largest job is too big), instead of --cluster; 0: --cluster")
	fl.IntVar(&f.replicas, "replicas", 0, "compare the policies over the trace and this many minus one replicas of it (by default 2% of jobs submitted 1–120 s later, seeded): ratios to --reference as mean ± standard error; with --suite, every workload's, beside each row's own run; 0: one run")
	fl.Float64Var(&f.replicaShare, "replica-share", sim.PerturbShare, "--replicas: the share of the jobs a replica submits later")
	fl.DurationVar(&f.replicaDelay, "replica-delay", sim.PerturbMost*time.Second, "--replicas: the most a replica submits a job later (whole seconds)")
	fl.StringVar(&f.pair, "pair", "", "LEAD,SHADOW: one run driven by LEAD while SHADOW plans every same snapshot alongside; counts where their decisions differ (instead of --policy)")
	fl.StringVar(&f.pairLog, "pair-log", "", "--pair: write every cycle whose started jobs differ to this file: the jobs only one planner starts, each one's first reservation, LEAD's preemptions")
	f.prof.flags(fl)
	cmd.AddCommand(newWhatifMergeCmd())
	return cmd
}

// parsePolicies reads the --policy list; every name must be a policy the
// solver builds.
func parsePolicies(list string, depth int) ([]policyRun, error) {
	if depth < 0 {
		return nil, fmt.Errorf("--depth %d: want ≥ 0 (0: hybrid's default, %d)", depth, baseline.DefaultHybridDepth)
	}
	var out []policyRun
	seen := map[string]bool{}
	for name := range strings.SplitSeq(list, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if seen[name] {
			return nil, fmt.Errorf("--policy: %s given twice", name)
		}
		seen[name] = true
		pr := policyRun{name: name, depth: depth}
		base := name
		for cut := true; cut; {
			var b string
			if b, cut = strings.CutSuffix(base, oneNodeSuffix); cut && !pr.ablation.OneNodeGangs {
				base, pr.ablation.OneNodeGangs = b, true
			} else if b, cut = strings.CutSuffix(base, noSatSuffix); cut && !pr.ablation.NoSaturation {
				base, pr.ablation.NoSaturation = b, true
			} else if b, cut = strings.CutSuffix(base, alignedSuffix); cut && pr.place == nil {
				base, pr.place = b, new(true)
			} else if b, cut = strings.CutSuffix(base, bestFitSuffix); cut && pr.place == nil {
				base, pr.place = b, new(false)
			} else {
				cut = false
			}
		}
		if base == suiteControl {
			// The control: EASY with every queued limit a minute longer
			// (placing as a suffix says, as any policy).
			pr.policy, pr.pad = model.PolicyEASY, suiteControlPad
		} else if rest, ok := strings.CutPrefix(base, "hybrid-"); ok {
			d, err := strconv.Atoi(rest)
			if err != nil || d < 1 {
				return nil, fmt.Errorf("--policy: %q: want hybrid-N with N ≥ 1", name)
			}
			pr.policy, pr.depth = model.PolicyHybridDepth, d
		} else {
			p, ok := model.ParsePolicy(base)
			if !ok || p == model.PolicyDefault {
				return nil, fmt.Errorf("--policy: unknown policy %q (want %s, hybrid-N, %s; any of them %s or %s; huitian's %s, %s)",
					name, strings.Join(policyNames(), ", "), suiteControl, alignedSuffix, bestFitSuffix, oneNodeSuffix, noSatSuffix)
			}
			pr.policy = p
		}
		if pr.ablation != (solver.Ablation{}) && pr.policy != model.PolicyHuitian && pr.policy != model.PolicyHuitianGreedy {
			return nil, fmt.Errorf("--policy: %q: %s and %s are for huitian and huitian-greedy", name, oneNodeSuffix, noSatSuffix)
		}
		if _, err := solver.New(pr.policy, pr.depth); err != nil {
			if errors.Is(err, solver.ErrUnimplemented) {
				return nil, fmt.Errorf("--policy: %s is not built yet (%w); nothing else is run in its place", name, err)
			}
			return nil, fmt.Errorf("--policy: %s: %w", name, err)
		}
		out = append(out, pr)
	}
	if len(out) == 0 {
		return nil, errors.New("--policy: no policy given")
	}
	return out, nil
}

func traceFormat(path, format string) (string, error) {
	switch {
	case format != "":
		return format, nil
	case strings.HasPrefix(path, "synth:"):
		return "synth", nil
	case strings.HasSuffix(path, ".swf"), strings.HasSuffix(path, ".swf.gz"):
		return "swf", nil
	}
	return "", fmt.Errorf("--format: cannot tell the format of %q; give one of %s", path, strings.Join(trace.Formats(), ", "))
}

func runWhatif(cmd *cobra.Command, f *whatifFlags) (err error) {
	shard, err := parseShardFlags(cmd, f)
	if err != nil {
		return exitWith(2, err)
	}
	stop, err := f.prof.start()
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, stop()) }()
	if f.replicas != 0 && f.replicas < 2 {
		return exitWith(2, fmt.Errorf("--replicas: %d: want at least 2 (the workload and a replica)", f.replicas))
	}
	if err := f.checkPerturbation(cmd); err != nil {
		return exitWith(2, err)
	}
	if err := f.readUsers(); err != nil {
		return exitWith(2, err)
	}
	if f.suite.on {
		return runSuite(cmd, f, shard)
	}
	for _, name := range suiteOnlyFlags {
		if cmd.Flags().Changed(name) {
			return exitWith(2, fmt.Errorf("--%s: for --suite (a single replay would ignore it)", name))
		}
	}
	// 1. Flags and inputs: every problem here exits with status 2.
	if f.trace == "" {
		return exitWith(2, errors.New("--trace: give a trace file or synth:jobs=N,…"))
	}
	policies := f.policies
	if f.pairLog != "" && f.pair == "" {
		return exitWith(2, errors.New("--pair-log: for a --pair run"))
	}
	if f.pair != "" {
		switch {
		case cmd.Flags().Changed("policy"):
			return exitWith(2, errors.New("--pair: give either --pair or --policy"))
		case f.jobsDir != "" || f.reportDir != "":
			return exitWith(2, errors.New("--pair: --jobs and --report are for --policy runs"))
		}
		policies = f.pair
	}
	runs, err := parsePolicies(policies, f.depth)
	if err != nil {
		return exitWith(2, err)
	}
	if f.pair != "" && f.shard != "" {
		return exitWith(2, errors.New("--pair: one run, nothing to shard"))
	}
	if f.replicas != 0 {
		switch {
		case f.pair != "" || f.shard != "" || f.jobsDir != "" || f.reportDir != "":
			return exitWith(2, errors.New("--replicas: not with --pair, --shard, --jobs or --report"))
		case !slices.ContainsFunc(runs, func(pr policyRun) bool { return pr.name == f.reference }):
			return exitWith(2, fmt.Errorf("--replicas: compares with --reference %s: give it among --policy", f.reference))
		case len(runs) < 2:
			return exitWith(2, errors.New("--replicas: give the --reference policy and at least one other"))
		}
	}
	if f.pair != "" && len(runs) != 2 {
		return exitWith(2, fmt.Errorf("--pair: %q: want two policies, LEAD,SHADOW", f.pair))
	}
	cfg, err := f.simConfig()
	if err != nil {
		return exitWith(2, err)
	}
	format, err := traceFormat(f.trace, f.format)
	if err != nil {
		return exitWith(2, err)
	}
	stderr := cmd.ErrOrStderr()
	start := time.Now()
	spec := f.trace
	if format == "synth" && !strings.Contains(spec, "cards=") {
		// The offered load is relative to the cluster being simulated
		// unless the spec says otherwise.
		if c, err := sim.ParseCluster(f.cluster, 0); err == nil {
			spec += fmt.Sprintf(",cards=%d", len(c.Layout().Cards))
		}
	}
	tr, err := trace.Open(spec, format, trace.Options{Filter: f.filter})
	if err != nil {
		return exitWith(2, err)
	}
	fmt.Fprintf(stderr, "trace: %s (%s): %d jobs of %d records read in %.1f s; dropped: %s\n",
		spec, format, len(tr.Jobs), tr.Records, time.Since(start).Seconds(), trace.DroppedSummary(tr.Dropped))
	if f.dropIDs {
		tr.DropUsers()
		fmt.Fprintf(stderr, "trace: %s (--users drop)\n", tr.Notes[len(tr.Notes)-1])
	}
	if len(tr.Jobs) == 0 {
		return exitWith(2, fmt.Errorf("--trace: %s: no jobs left to replay", f.trace))
	}
	if f.load != 0 {
		switch {
		case f.load < 0 || math.IsNaN(f.load) || math.IsInf(f.load, 0):
			return exitWith(2, fmt.Errorf("--load: %v: want an offered load > 0", f.load))
		case cmd.Flags().Changed("cluster"):
			return exitWith(2, errors.New("--load sizes the cluster: not with --cluster"))
		case format == "synth":
			return exitWith(2, errors.New("--load: a synthetic workload takes its load in the spec (load=)"))
		}
		cluster, jobs, scale := loadWorkload(tr.Jobs, f.load)
		f.cluster, tr.Jobs = cluster, jobs
		fmt.Fprintf(stderr, "load %g: cluster %s, submit times scaled by %.3f\n", f.load, cluster, scale)
	}
	probe, err := sim.ParseCluster(f.cluster, tr.MaxCards)
	if err != nil {
		var verr *model.ValidationError
		if errors.As(err, &verr) {
			for _, p := range verr.Problems {
				fmt.Fprintln(stderr, p)
			}
		}
		return exitWith(2, fmt.Errorf("--cluster: %w", err))
	}
	lay := probe.Layout()
	if f.pair != "" {
		return runPaired(cmd, f, tr, runs, cfg)
	}
	if f.replicas != 0 {
		return runReplicas(cmd, f, tr, runs, cfg, format, lay)
	}

	// 2. Every policy in parallel (sim.Sweep), each with its own planner
	// and its own cluster; with --shard, only the shard's policies.
	wi := sim.WhatIf{
		Jobs:       tr.Jobs,
		NewCluster: func() (*model.Cluster, error) { return sim.ParseCluster(f.cluster, tr.MaxCards) },
		Config:     cfg,
	}
	// A shard records the series: the merge may be asked for a report.
	wi.Config.Series = f.reportDir != "" || f.shard != ""
	for _, pr := range runs {
		wi.Policies = append(wi.Policies, simPolicy(pr))
	}
	inShard := 0
	for i := range runs {
		if shard.Has(i) {
			inShard++
		}
	}
	bar := newBar(stderr, int64(len(tr.Jobs))*int64(inShard))
	if bar != nil {
		wi.Config.Progress = func(n int) { _ = bar.Add(n) }
	}
	swept, err := sim.Sweep(cmd.Context(), []sim.WhatIf{wi}, sim.SweepOptions{Shard: shard})
	if bar != nil {
		_ = bar.Finish()
		fmt.Fprintln(stderr)
	}
	if err != nil {
		return err
	}
	results := swept[0]
	for i, pr := range runs {
		if results[i] != nil {
			fmt.Fprintf(stderr, "%s: %d cycles in %.2f s\n", pr.name, results[i].Summary.Cycles, results[i].Wall.Seconds())
		}
	}
	if !slices.ContainsFunc(runs, func(pr policyRun) bool { return pr.name == f.reference }) && cmd.Flags().Changed("reference") {
		fmt.Fprintf(stderr, "--reference %s is not among the policies run: main_wait_delta_s and vs_reference are null\n", f.reference)
	}
	sw := &whatifSweep{
		Out: whatifOutput{
			Trace: newTraceInfo(f, format, tr), Cluster: newClusterInfo(f.cluster, lay),
			Cycles: cfg.Cycles.String(), Reference: f.reference,
		},
		Estimates: cfg.Estimates.String(), KillAtLimit: f.killAtLimit, IntervalSeconds: int64(f.interval / time.Second),
		Ties: cfg.Ties.String(), Depth: f.depth,
	}
	for _, pr := range runs {
		sw.Policies = append(sw.Policies, pr.name)
	}
	if f.shard != "" {
		return writeShard(cmd, f.shardOut, shard, shardKindWhatif, sw, [][]*sim.Result{results})
	}

	// 3. Compare and write.
	return writeWhatif(cmd, whatifOutputs{asJSON: f.asJSON, jobsDir: f.jobsDir, reportDir: f.reportDir}, sw, results)
}

// whatifSweep is what the output of a whatif run says besides its
// results: the same for every shard of a sweep, and what the merge writes
// the output from.
type whatifSweep struct {
	// Out is the JSON output without its results.
	Out             whatifOutput `json:"output"`
	Estimates       string       `json:"estimates"`
	KillAtLimit     bool         `json:"kill_at_limit"`
	IntervalSeconds int64        `json:"interval_s"`
	Policies        []string     `json:"policies"`
	// Ties and Depth change the runs without showing in the output: shards
	// that differ in them are parts of different sweeps.
	Ties  string `json:"ties"`
	Depth int    `json:"depth"`
}

// whatifOutputs are the flags that say what a run writes.
type whatifOutputs struct {
	asJSON             bool
	jobsDir, reportDir string
}

// writeWhatif compares the results (one per policy) with the reference's
// and writes the table, or the JSON, and the job CSVs and the report when
// asked: from a single run and from the merge of its shards alike.
func writeWhatif(cmd *cobra.Command, o whatifOutputs, sw *whatifSweep, results []*sim.Result) error {
	est, err := sim.ParseEstimates(sw.Estimates)
	if err != nil {
		return err
	}
	ref := slices.Index(sw.Policies, sw.Out.Reference)
	wi := sim.WhatIf{}
	for _, name := range sw.Policies {
		wi.Policies = append(wi.Policies, sim.Policy{Name: name})
	}
	cmp, err := wi.Compare(results, ref)
	if err != nil {
		return err
	}
	out := sw.Out
	out.Results = nil
	for i, name := range sw.Policies {
		out.Results = append(out.Results, toRow(name, est, results[i].Summary, cmp.MainWaitDelta[i], cmp.Same[i]))
	}
	if o.jobsDir != "" {
		if err := writeJobCSVs(o.jobsDir, sw.Policies, est, results); err != nil {
			return err
		}
	}
	rr := make([]report.Run, len(results))
	for i, name := range sw.Policies {
		rr[i] = report.Run{Label: runFile(name, est), Result: results[i], MainWaitDelta: cmp.MainWaitDelta[i], SameJobs: cmp.Same[i]}
	}
	if o.reportDir != "" {
		if err := writeReport(cmd.ErrOrStderr(), o.reportDir, sw, est, rr); err != nil {
			return err
		}
	}
	if o.asJSON {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	// The same tables, columns and units as report.md.
	return report.WriteTables(cmd.OutOrStdout(), out.Reference, rr)
}

// simPolicy is a policy's planner and options for sim.WhatIf.
func simPolicy(pr policyRun) sim.Policy {
	return sim.Policy{
		Name: pr.name,
		NewPlanner: func() (sim.Planner, error) {
			var p solver.Planner
			var err error
			if pr.place != nil {
				p, err = solver.NewPlacement(pr.policy, pr.depth, *pr.place)
			} else {
				p, err = solver.New(pr.policy, pr.depth)
			}
			if err == nil {
				err = solver.Ablate(p, pr.ablation)
			}
			if err != nil || pr.pad == 0 {
				return p, err
			}
			return paddedLimits{p, pr.pad}, nil
		},
		Options: model.Options{Policy: pr.policy, ReservationDepth: pr.depth},
	}
}

// newBar returns a progress bar on w when w is a terminal, else nil.
func newBar(w io.Writer, total int64) *progressbar.ProgressBar {
	fd, ok := w.(interface{ Fd() uintptr })
	if !ok || !term.IsTerminal(int(fd.Fd())) {
		return nil
	}
	return progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription("simulating"),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(200*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)
}

type whatifOutput struct {
	Trace     traceInfo   `json:"trace"`
	Cluster   clusterInfo `json:"cluster"`
	Cycles    string      `json:"cycles"`
	Reference string      `json:"reference"`
	Results   []resultRow `json:"results"`
}

type traceInfo struct {
	Path   string `json:"path"`
	Format string `json:"format"`
	Filter string `json:"filter,omitempty"`
	// UsersDropped says every job's user id was dropped (--users drop).
	UsersDropped bool           `json:"users_dropped,omitempty"`
	Jobs         int            `json:"jobs"`
	Records      int            `json:"records"`
	MaxCards     int            `json:"max_cards"`
	Dropped      map[string]int `json:"dropped"`
	Notes        []string       `json:"notes"`
}

type clusterInfo struct {
	Spec  string `json:"spec"`
	Nodes int    `json:"nodes"`
	Cards int    `json:"cards"`
}

// newTraceInfo describes the trace a whatif run replays.
func newTraceInfo(f *whatifFlags, format string, tr *trace.Trace) traceInfo {
	return traceInfo{Path: f.trace, Format: format, Filter: f.filter, UsersDropped: f.dropIDs, Jobs: len(tr.Jobs), Records: tr.Records,
		MaxCards: tr.MaxCards, Dropped: tr.Dropped, Notes: tr.Notes}
}

// newClusterInfo describes the cluster a whatif run replays on.
func newClusterInfo(spec string, lay *model.Layout) clusterInfo {
	return clusterInfo{Spec: spec, Nodes: len(lay.Nodes), Cards: len(lay.Cards)}
}

// resultRow is one policy's line of the comparison. Fields that do not
// apply are null.
type resultRow struct {
	Policy                 string   `json:"policy"`
	Estimates              string   `json:"estimates"`
	Jobs                   int      `json:"jobs"`
	NeverStarted           int      `json:"never_started"`
	AvgWait                float64  `json:"avg_wait_s"`
	MedianWait             float64  `json:"median_wait_s"`
	P95Wait                float64  `json:"p95_wait_s"`
	AvgBSLD                float64  `json:"avg_bsld"`
	AvgFlow                float64  `json:"avg_flow_s"`
	Utilization            float64  `json:"utilization"`
	UtilizationQueued      *float64 `json:"utilization_while_queued"`
	Makespan               int64    `json:"makespan_s"`
	RegularStarts          int      `json:"regular_starts"`
	BackfillStarts         int      `json:"backfill_starts"`
	BackfillCompletionRate *float64 `json:"backfill_completion_rate"`
	BackfillUtilization    *float64 `json:"backfill_utilization"`
	// MainWaitDelta is this run's mean wait of the jobs it started as
	// regular minus the reference run's of the jobs that one started as
	// regular: a different population per policy (a policy that backfills
	// more leaves mostly the large jobs as main jobs). Classes compare the
	// same jobs.
	MainWaitDelta   *float64 `json:"main_wait_delta_s"`
	Preemptions     int      `json:"preemptions"`
	LostCardSeconds float64  `json:"lost_card_seconds"`
	// LostShare is lost over busy card-seconds.
	LostShare *float64      `json:"lost_share"`
	HeadDelay sim.HeadDelay `json:"head_delay"`
	Classes   []classRow    `json:"classes"`
	Cycles    int           `json:"cycles"`
}

// classRow is one size class of a run, and the comparison with the
// reference run on the same jobs (null without a reference).
type classRow struct {
	sim.ClassStats
	VsReference *sim.SameJobs `json:"vs_reference"`
}

func toRow(name string, est sim.Estimates, s sim.Summary, delta *float64, same []sim.SameJobs) resultRow {
	r := resultRow{
		Policy: name, Estimates: est.String(), Jobs: s.Jobs, NeverStarted: s.NeverStarted,
		AvgWait: s.AvgWait, MedianWait: s.MedianWait, P95Wait: s.P95Wait, AvgBSLD: s.AvgBSLD, AvgFlow: s.AvgFlow,
		Utilization: s.Utilization, UtilizationQueued: s.UtilizationQueued, Makespan: s.Makespan, RegularStarts: s.RegularStarts, BackfillStarts: s.BackfillStarts,
		BackfillCompletionRate: s.BackfillCompletionRate, BackfillUtilization: s.BackfillUtilization,
		MainWaitDelta: delta, Preemptions: s.Preemptions, LostCardSeconds: s.LostCardSeconds, Cycles: s.Cycles,
		LostShare: s.LostShare, HeadDelay: s.HeadDelay,
	}
	for i, c := range s.Classes {
		cr := classRow{ClassStats: c}
		if same != nil {
			cr.VsReference = &same[i]
		}
		r.Classes = append(r.Classes, cr)
	}
	return r
}

// opt formats a value that may be absent ("–").
func opt(p *float64, format string) string {
	if p == nil {
		return "–"
	}
	return fmt.Sprintf(format, *p)
}

// pct formats a share as a percentage, "–" when absent.
func pct(p *float64) string {
	if p == nil {
		return "–"
	}
	return fmt.Sprintf("%.2f%%", 100**p)
}

func runFile(name string, est sim.Estimates) string {
	if est == sim.EstimatesExact {
		name += "-exact"
	}
	return name
}

// writeJobCSVs writes DIR/<policy>.csv: a row per job, times in trace
// seconds, start and end empty for a job that never ran.
func writeJobCSVs(dir string, names []string, est sim.Estimates, results []*sim.Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--jobs: %w", err)
	}
	for i, name := range names {
		path := filepath.Join(dir, runFile(name, est)+".csv")
		if err := writeJobCSV(path, results[i].Jobs); err != nil {
			return fmt.Errorf("--jobs: %w", err)
		}
	}
	return nil
}

func writeJobCSV(path string, jobs []sim.JobResult) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	w := csv.NewWriter(f)
	if err := w.Write([]string{"id", "submit", "start", "end", "cards", "kind", "preemptions"}); err != nil {
		return err
	}
	opt := func(v int64) string {
		if v < 0 {
			return ""
		}
		return strconv.FormatInt(v, 10)
	}
	for _, j := range jobs {
		kind := j.Kind.String()
		if j.Start < 0 {
			kind = ""
		}
		rec := []string{j.ID, strconv.FormatInt(j.Submit, 10), opt(j.Start), opt(j.End), strconv.Itoa(j.Cards), kind, strconv.Itoa(j.Preemptions)}
		if err := w.Write(rec); err != nil {
			return err
		}
	}
	w.Flush()
	return w.Error()
}

// writeReport writes the report (report.md, its plots as SVG and PNG)
// into dir and says on w where it wrote them.
func writeReport(w io.Writer, dir string, sw *whatifSweep, est sim.Estimates, rr []report.Run) error {
	tr, interval := sw.Out.Trace, time.Duration(sw.IntervalSeconds)*time.Second
	about := []string{
		fmt.Sprintf("trace `%s` (%s%s): %d jobs of %d records; dropped: %s", tr.Path, tr.Format, filterNote(tr.Filter), tr.Jobs, tr.Records, trace.DroppedSummary(tr.Dropped)),
		fmt.Sprintf("cluster `%s`: %d nodes, %d cards", sw.Out.Cluster.Spec, sw.Out.Cluster.Nodes, sw.Out.Cluster.Cards),
		fmt.Sprintf("estimates: %s; jobs past their limit: %s; cycles: %s%s", est, map[bool]string{true: "killed", false: "kept running"}[sw.KillAtLimit], sw.Out.Cycles, intervalNote(interval)),
		fmt.Sprintf("reference policy (main-wait Δ, same-job ratios): %s", sw.Out.Reference),
	}
	for _, n := range tr.Notes {
		about = append(about, "trace note: "+n)
	}
	paths, err := report.Write(dir, "What-if: "+filepath.Base(tr.Path), about, rr)
	if err != nil {
		return fmt.Errorf("--report: %w", err)
	}
	fmt.Fprintf(w, "report: %s, with %d plots as SVG and PNG:\n", paths[0], (len(paths)-1)/2)
	for _, p := range paths[1:] {
		fmt.Fprintf(w, "  %s\n", p)
	}
	return nil
}

func filterNote(filter string) string {
	if filter == "" {
		return ""
	}
	return ", " + filter + " filter"
}

func intervalNote(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return ", and every " + d.String()
}

// runPaired runs --pair: one simulation driven by the first policy, the
// second planning alongside (sim.Paired).
func runPaired(cmd *cobra.Command, f *whatifFlags, tr *trace.Trace, runs []policyRun, cfg sim.Config) (err error) {
	// Each planner as a --policy run makes it: with its name's suffixes
	// (+aligned, +onenode, …) and the control's padded limits.
	leadPolicy := simPolicy(runs[0])
	lead, err := leadPolicy.NewPlanner()
	if err != nil {
		return err
	}
	shadow, err := simPolicy(runs[1]).NewPlanner()
	if err != nil {
		return err
	}
	c, err := sim.ParseCluster(f.cluster, tr.MaxCards)
	if err != nil {
		return err
	}
	runtime := make(map[string]float64, len(tr.Jobs))
	for _, j := range tr.Jobs {
		runtime[j.ID] = float64(j.Runtime)
	}
	p := &sim.Paired{Lead: lead, Shadow: shadow, Runtime: func(id string) (float64, bool) {
		r, ok := runtime[id]
		return r, ok
	}}
	if f.pairLog != "" {
		lf, err := os.Create(f.pairLog)
		if err != nil {
			return fmt.Errorf("--pair-log: %w", err)
		}
		bw := bufio.NewWriter(lf)
		p.Log = bw
		defer func() {
			if ferr := errors.Join(bw.Flush(), lf.Close()); ferr != nil && err == nil {
				err = fmt.Errorf("--pair-log: %w", ferr)
			}
		}()
	}
	t0 := time.Now()
	cfg.Cluster, cfg.Options = c, leadPolicy.Options
	res, err := sim.Run(cmd.Context(), tr.Jobs, p, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "%s leading, %s alongside: %d cycles in %.2f s\n", runs[0].name, runs[1].name, p.Stats.Cycles, time.Since(t0).Seconds())
	if f.asJSON {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Lead   string          `json:"lead"`
			Shadow string          `json:"shadow"`
			Paired sim.PairedStats `json:"paired"`
			Run    resultRow       `json:"lead_run"`
		}{runs[0].name, runs[1].name, p.Stats, toRow(runs[0].name, cfg.Estimates, res.Summary, nil, nil)})
	}
	w := cmd.OutOrStdout()
	st := p.Stats
	pct := func(n int) float64 { return 100 * float64(n) / float64(max(st.Cycles, 1)) }
	fmt.Fprintf(w, "%d cycles in the states %s led to; the starts differ in %d (%.2f%%), the started jobs in %d (%.2f%%)\n",
		st.Cycles, runs[0].name, st.Differ, pct(st.Differ), st.DifferJobs, pct(st.DifferJobs))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\trole\tstarts\tcards\trelief Σ1/runtime\trisk ΣP\t")
	for i, sd := range []sim.Side{st.Lead, st.Shadow} {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.4f\t%.3f\t\n", runs[i].name, []string{"lead", "shadow"}[i], sd.Starts, sd.Cards, sd.Relief, sd.Risk)
	}
	return tw.Flush()
}

// paddedLimits plans with every queued job's time limit pad longer: the
// suite's control run, a perturbation of the planner's input that changes
// nothing about the policy. It is a Planner only (never a Learner): the
// control runs a baseline.
type paddedLimits struct {
	p   solver.Planner
	pad time.Duration
}

func (l paddedLimits) Plan(ctx context.Context, s *model.Snapshot) (*model.Decision, error) {
	c := *s
	c.Queued = slices.Clone(s.Queued)
	for i := range c.Queued {
		c.Queued[i].TimeLimit += l.pad
	}
	return l.p.Plan(ctx, &c)
}

// perturbation is how far the replicas of --replicas depart from their
// trace (--replica-share, --replica-delay).
func (f *whatifFlags) perturbation() sim.Perturbation {
	return sim.Perturbation{Share: f.replicaShare, Most: int64(f.replicaDelay / time.Second)}
}

// checkPerturbation checks --replica-share and --replica-delay, which are
// for --replicas only.
func (f *whatifFlags) checkPerturbation(cmd *cobra.Command) error {
	for _, name := range []string{"replica-share", "replica-delay"} {
		if cmd.Flags().Changed(name) && f.replicas == 0 {
			return fmt.Errorf("--%s: for --replicas", name)
		}
	}
	if f.replicaDelay%time.Second != 0 {
		return fmt.Errorf("--replica-delay: %v: want whole seconds", f.replicaDelay)
	}
	if err := f.perturbation().Validate(); err != nil {
		return fmt.Errorf("--replica-share, --replica-delay: %w", err)
	}
	return nil
}
