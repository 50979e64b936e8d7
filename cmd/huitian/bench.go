package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/huitian/huitian/bench"
	"github.com/huitian/huitian/model"
)

func newBenchCmd() *cobra.Command {
	var (
		cards, queued   []int
		policies        []string
		runs            int
		budget          time.Duration
		maxTime         time.Duration
		jsonOut         bool
		cores           int
		seed            uint64
		conservativeMax int
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure plan latency per policy over cluster size × queue depth",
		Long: `Bench plans generated snapshots — 8-card nodes under 32-node switches, a
quarter of the cards busy, a queue headed by a gang that wants a whole
switch — with each policy, and prints p50/p99 plan latency, the ratio to
EASY measured in the same run, and the LP's size, gap and fallbacks.

Each plan gets the time budget as its context deadline, as the service
gives it. Policies run one after another on one core (--cores).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			runtime.GOMAXPROCS(cores)
			var pols []model.Policy
			for _, name := range policies {
				p, ok := model.ParsePolicy(name)
				if !ok {
					return exitWith(2, fmt.Errorf("--policy: unknown policy %q", name))
				}
				pols = append(pols, p)
			}
			hist := bench.History(2000, seed+1)
			var results []bench.Result
			for _, c := range cards {
				for _, q := range queued {
					s := bench.Snapshot(c, q, seed)
					easy := 0.0
					for _, p := range pols {
						if p == model.PolicyConservative && c*q > conservativeMax {
							// One reservation sweep per blocked job: O(queue × cards).
							fmt.Fprintf(os.Stderr, "skipped conservative at %d cards × %d queued (above --conservative-max %d card-jobs)\n", c, q, conservativeMax)
							continue
						}
						pl, err := bench.NewPlanner(p, hist)
						if err != nil {
							return exitWith(2, err)
						}
						// One plan to see how long a run takes; then as many
						// runs as fit in --max-time, at least 3.
						t0 := time.Now()
						if _, err := pl.Plan(cmd.Context(), s); err != nil {
							return err
						}
						one := time.Since(t0)
						n := runs
						if one > 0 && time.Duration(n)*one > maxTime {
							n = max(3, int(maxTime/one))
						}
						res, err := bench.Measure(context.Background(), pl, s, n, budget, time.Now)
						if err != nil {
							return err
						}
						res.Policy = p.String()
						if p == model.PolicyEASY {
							easy = res.P50ms
						}
						if easy > 0 {
							res.RatioToEASY = res.P50ms / easy
						}
						results = append(results, res)
						if !jsonOut {
							fmt.Fprintf(os.Stderr, "measured %s at %d cards × %d queued: p50 %.1f ms (%d runs)\n", p, c, q, res.P50ms, res.Runs)
						}
					}
				}
			}
			if jsonOut {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(map[string]any{"results": results})
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 2, 4, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(tw, "policy\tcards\tqueued\trunning\tp50 ms\tp99 ms\t×EASY\tcandidates\tLP rows\tLP cols\tgap\tfallbacks\truns\tstarts\tbackfill\t")
			for _, r := range results {
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.1f\t%.1f\t%.2f\t%d\t%d\t%d\t%.3f\t%d\t%d\t%d\t%d\t\n", r.Policy, r.Cards, r.Queued, r.Running,
					r.P50ms, r.P99ms, r.RatioToEASY, r.Candidates, r.LPRows, r.LPCols, r.Gap, r.Fallbacks, r.Runs, r.Starts, r.Backfills)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().IntSliceVar(&cards, "cards", []int{1024, 8192, 65536}, "cluster sizes in cards")
	cmd.Flags().IntSliceVar(&queued, "queued", []int{1000, 5000, 20000}, "queue depths")
	cmd.Flags().StringSliceVar(&policies, "policy", []string{"easy", "conservative", "huitian-greedy", "huitian"}, "policies, EASY first for the ratios: "+strings.Join(policyNames(), ", "))
	cmd.Flags().IntVar(&runs, "runs", 30, "plans per policy and size (fewer when a plan is slow, see --max-time)")
	cmd.Flags().DurationVar(&budget, "budget", 50*time.Millisecond, "time budget of each plan (its context deadline)")
	cmd.Flags().DurationVar(&maxTime, "max-time", 20*time.Second, "time to spend per policy and size")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print JSON")
	cmd.Flags().IntVar(&cores, "cores", 1, "GOMAXPROCS while measuring")
	cmd.Flags().Uint64Var(&seed, "seed", 1, "workload seed")
	cmd.Flags().IntVar(&conservativeMax, "conservative-max", 8192*5000, "skip conservative above this many cards × queued jobs (it reserves for every blocked job: O(queue × cards))")
	return cmd
}
