package main

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"gonum.org/v1/gonum/stat"

	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/sim"
	"github.com/huitian/huitian/sim/trace"
)

// replicaOutput is --replicas' answer: every policy's ratios to the
// reference, on the same jobs of the same replica, over the replicas.
type replicaOutput struct {
	Trace          traceInfo       `json:"trace"`
	Cluster        clusterInfo     `json:"cluster"`
	Reference      string          `json:"reference"`
	Replicas       int             `json:"replicas"`
	PerturbedShare float64         `json:"perturbed_share"`
	PerturbedMostS int64           `json:"perturbed_most_s"`
	Policies       []replicaPolicy `json:"policies"`
}

type replicaPolicy struct {
	Policy   string           `json:"policy"`
	Measures []replicaMeasure `json:"measures"`
}

// replicaMeasure is one ratio over the replicas where it is defined
// (sim.Ratio: not where only the reference's figure is 0): its mean, the
// standard error of that mean (from two replicas on), and its range; null
// where no replica defines it.
type replicaMeasure struct {
	Measure  string   `json:"measure"`
	Replicas int      `json:"replicas"`
	Mean     *float64 `json:"mean"`
	StdErr   *float64 `json:"std_error"`
	Min      *float64 `json:"min"`
	Max      *float64 `json:"max"`
	// Values are the ratios of the replicas that define it, in replica
	// order.
	Values []float64 `json:"values"`
}

// runReplicas replays the trace and f.replicas-1 replicas of it
// (sim.Perturb, seeds 1…) under every policy, all in parallel, and writes
// each policy's ratios to the reference over the replicas.
func runReplicas(cmd *cobra.Command, f *whatifFlags, tr *trace.Trace, runs []policyRun, cfg sim.Config, format string, lay *model.Layout) error {
	ref := slices.IndexFunc(runs, func(pr policyRun) bool { return pr.name == f.reference })
	ws := make([]sim.WhatIf, f.replicas)
	for r := range ws {
		ws[r] = sim.WhatIf{
			Jobs:       sim.Perturb(tr.Jobs, uint64(r), f.perturbation()),
			NewCluster: func() (*model.Cluster, error) { return sim.ParseCluster(f.cluster, tr.MaxCards) },
			Config:     cfg,
		}
		for _, pr := range runs {
			ws[r].Policies = append(ws[r].Policies, simPolicy(pr))
		}
	}
	stderr := cmd.ErrOrStderr()
	bar := newBar(stderr, int64(len(tr.Jobs))*int64(len(runs))*int64(len(ws)))
	if bar != nil {
		for r := range ws {
			ws[r].Config.Progress = func(n int) { _ = bar.Add(n) }
		}
	}
	swept, err := sim.Sweep(cmd.Context(), ws, sim.SweepOptions{})
	if bar != nil {
		_ = bar.Finish()
		fmt.Fprintln(stderr)
	}
	if err != nil {
		return err
	}
	out := replicaOutput{
		Trace: newTraceInfo(f, format, tr), Cluster: newClusterInfo(f.cluster, lay),
		Reference: f.reference, Replicas: f.replicas,
		PerturbedShare: f.replicaShare, PerturbedMostS: f.perturbation().Most,
	}
	// values[p][m] lists policy p's measure m over the replicas.
	var names []string
	values := make([]map[string][]float64, len(runs))
	for p := range values {
		values[p] = map[string][]float64{}
	}
	for r, results := range swept {
		cmp, err := ws[r].Compare(results, ref)
		if err != nil {
			return err
		}
		for p := range runs {
			if p == ref {
				continue
			}
			for _, m := range replicaRatios(results[p].Summary, results[ref].Summary, cmp.Same[p]) {
				if !slices.Contains(names, m.name) {
					names = append(names, m.name)
				}
				if m.ratio != nil {
					values[p][m.name] = append(values[p][m.name], *m.ratio)
				}
			}
		}
	}
	for p, pr := range runs {
		if p == ref {
			continue
		}
		rp := replicaPolicy{Policy: pr.name}
		for _, name := range names {
			rp.Measures = append(rp.Measures, summarizeRatios(name, values[p][name]))
		}
		out.Policies = append(out.Policies, rp)
	}
	if f.asJSON {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	return writeReplicas(cmd, &out)
}

type namedRatio struct {
	name  string
	ratio *float64
}

// replicaRatios are one replica's ratios of a run to the reference: the
// overall figures, then each size class's mean wait on the same jobs and
// the largest class's p95.
func replicaRatios(run, ref sim.Summary, same []sim.SameJobs) []namedRatio {
	out := []namedRatio{
		{"avg wait", sim.Ratio(run.AvgWait, ref.AvgWait)},
		{"p95 wait", sim.Ratio(run.P95Wait, ref.P95Wait)},
		{"avg bsld", sim.Ratio(run.AvgBSLD, ref.AvgBSLD)},
	}
	for _, c := range same {
		if c.Jobs > 0 {
			out = append(out, namedRatio{"class " + c.Class + " mean wait", c.MeanWaitRatio})
		}
	}
	if l := sim.Largest(same); l >= 0 {
		out = append(out, namedRatio{"largest (" + same[l].Class + ") p95 wait", same[l].P95WaitRatio})
	}
	return out
}

// summarizeRatios is the mean, standard error and range of vs.
func summarizeRatios(name string, vs []float64) replicaMeasure {
	m := replicaMeasure{Measure: name, Replicas: len(vs), Values: vs}
	if len(vs) == 0 {
		m.Values = []float64{}
		return m
	}
	m.Mean, m.Min, m.Max = new(stat.Mean(vs, nil)), new(slices.Min(vs)), new(slices.Max(vs))
	if len(vs) > 1 {
		m.StdErr = new(stat.StdDev(vs, nil) / math.Sqrt(float64(len(vs))))
	}
	return m
}

// writeReplicas prints the replicas' table.
func writeReplicas(cmd *cobra.Command, o *replicaOutput) error {
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "%d replicas of %s on %s: the trace, and %d with %.0f%% of its jobs submitted 1–%d s later (seeded)\n",
		o.Replicas, o.Trace.Path, o.Cluster.Spec, o.Replicas-1, 100*o.PerturbedShare, o.PerturbedMostS)
	fmt.Fprintf(w, "ratio to %s on the same jobs of the same replica: mean ± standard error [min, max]\n", o.Reference)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\tmeasure\treplicas\tmean\t± s.e.\tmin\tmax\t")
	for _, p := range o.Policies {
		for _, m := range p.Measures {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t\n", p.Policy, m.Measure, m.Replicas,
				opt(m.Mean, "%.3f"), opt(m.StdErr, "%.3f"), opt(m.Min, "%.3f"), opt(m.Max, "%.3f"))
		}
	}
	return tw.Flush()
}
