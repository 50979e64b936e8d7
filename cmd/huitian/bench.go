package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/huitian/huitian/bench"
	"github.com/huitian/huitian/model"
	"github.com/huitian/huitian/sim"
)

// The largest sizes bench builds: a machine as large as sim's cluster
// specs make, and as many queued jobs. Beyond them a size is a typo, and
// a negative one built a cluster of no node.
const (
	maxBenchCards  = sim.MaxSpecCards
	maxBenchQueued = sim.MaxSpecCards
)

func newBenchCmd() *cobra.Command {
	var (
		cards, queued []int
		policies      []string
		cycles        int
		rounds        int
		warmup        int
		step          time.Duration
		budget        time.Duration
		jsonOut       bool
		cores         int
		seed          uint64
		prof          profiling
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure plan latency per policy over consecutive cycles, cluster size × queue depth",
		Long: `Bench plans a sequence of consecutive cycles with each policy, as a
resource manager would ask for them: it starts from a generated snapshot —
8-card nodes under 32-node switches, a quarter of the cards busy, a queue
headed by a gang that wants a whole switch — and between cycles acts on the
decision (starts run, preemptions requeue), moves the clock one --step,
ends the jobs whose runtime is up and submits new ones so that the queue
stays as deep as asked, listed in submit order as Slurm lists its queue
(a requeued job, with its old submit time, out of that order). Each
policy runs its own sequence from the same start (same seed), --warmup
cycles first (not counted).

It prints p50/p99/max plan latency over the cycles, how many plans answered
more than 10 ms past the budget (late), the p99's ratio to
EASY's measured in the same run, how many plans the time budget cut short
(budget cuts, with the mean number of jobs a cut left unconsidered), how
many fell back for any reason (the LP's time included), and the LP's size
and gap. Each plan gets the time budget as its context deadline, as the
service gives it. Policies run one after another on one core (--cores).

With --rounds N every size is measured N times, the policies one after
another within each round (so that a busy spell of a shared machine falls
on all of them): each round's rows, then, per policy and size, the median
over the rounds of the p50, the p99 (with the lowest and highest) and the
p99's ratio to EASY's of the same round.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			runtime.GOMAXPROCS(cores)
			var pols []model.Policy
			for _, name := range policies {
				p, ok := model.ParsePolicy(name)
				if !ok {
					return exitWith(2, fmt.Errorf("--policy: unknown policy %q", name))
				}
				pols = append(pols, p)
			}
			for _, c := range cards {
				if c < 1 || c > maxBenchCards {
					return exitWith(2, fmt.Errorf("--cards %d: want 1 … %d (rounded up to whole 8-card nodes)", c, maxBenchCards))
				}
			}
			for _, q := range queued {
				if q < 0 || q > maxBenchQueued {
					return exitWith(2, fmt.Errorf("--queued %d: want 0 … %d", q, maxBenchQueued))
				}
			}
			if cycles < 1 || warmup < 0 || step <= 0 || rounds < 1 {
				return exitWith(2, fmt.Errorf("--cycles %d, --warmup %d, --step %s, --rounds %d: want at least one cycle, no negative warm-up, a positive step, at least one round", cycles, warmup, step, rounds))
			}
			stop, err := prof.start()
			if err != nil {
				return err
			}
			defer func() { err = errors.Join(err, stop()) }()
			hist := bench.History(2000, seed+1)
			var results []bench.SeqResult
			for _, c := range cards {
				for _, q := range queued {
					for round := 1; round <= rounds; round++ {
						easy := 0.0
						for _, p := range pols {
							pl, err := bench.NewPlanner(p, hist)
							if err != nil {
								return exitWith(2, err)
							}
							seq := bench.NewSequence(c, q, seed, step).Reuse()
							res, err := bench.MeasureSequence(context.Background(), pl, seq, warmup, cycles, budget, time.Now)
							if err != nil {
								return err
							}
							res.Policy = p.String()
							if rounds > 1 {
								res.Round = round
							}
							if p == model.PolicyEASY {
								easy = res.P99ms
							}
							if easy > 0 {
								res.RatioToEASY = res.P99ms / easy
							}
							results = append(results, res)
							if !jsonOut {
								of := ""
								if rounds > 1 {
									of = fmt.Sprintf(" (round %d of %d)", round, rounds)
								}
								fmt.Fprintf(os.Stderr, "measured %s at %d cards × %d queued%s: p50 %.1f ms, p99 %.1f ms, %d of %d cut by the budget\n",
									p, c, q, of, res.P50ms, res.P99ms, res.BudgetCuts, res.Cycles)
							}
						}
					}
				}
			}
			if jsonOut {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				out := map[string]any{"budget_ms": float64(budget) / float64(time.Millisecond), "results": results}
				if rounds > 1 {
					out["rounds"], out["summary"] = rounds, bench.Summarize(results)
				}
				return enc.Encode(out)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 2, 4, 2, ' ', tabwriter.AlignRight)
			round := ""
			if rounds > 1 {
				round = "round\t"
			}
			fmt.Fprintln(tw, round+"policy\tcards\tqueued\trunning\tp50 ms\tp99 ms\tmax ms\tlate\tp99 ×EASY\tbudget cuts\tmean cut\tfallbacks\tcycles\tstarts\tbackfill\tcandidates\tLP rows\tLP cols\tgap\t")
			for _, r := range results {
				if rounds > 1 {
					fmt.Fprintf(tw, "%d\t", r.Round)
				}
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.1f\t%.1f\t%.1f\t%d\t%.2f\t%d\t%.0f\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%.3f\t\n", r.Policy, r.Cards, r.Queued, r.Running,
					r.P50ms, r.P99ms, r.MaxMs, r.Late, r.RatioToEASY, r.BudgetCuts, r.MeanCut, r.Fallbacks, r.Cycles, r.Starts, r.Backfills,
					r.Candidates, r.LPRows, r.LPCols, r.Gap)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if rounds == 1 {
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "\nover %d rounds: medians (p99 and its ratio to EASY's of the same round: lowest – highest)\n", rounds)
			fmt.Fprintln(tw, "policy\tcards\tqueued\tp50 ms\tp99 ms\t(min – max)\tp99 ×EASY\t(min – max)\tmax ms\tlate\tbudget cuts\tfallbacks\tcycles\t")
			for _, m := range bench.Summarize(results) {
				ratio, spread := "–", ""
				if m.RatioToEASY > 0 {
					ratio, spread = fmt.Sprintf("%.2f", m.RatioToEASY), fmt.Sprintf("%.2f – %.2f", m.RatioMin, m.RatioMax)
				}
				fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f\t%.1f\t%.1f – %.1f\t%s\t%s\t%.1f\t%d\t%d\t%d\t%d\t\n", m.Policy, m.Cards, m.Queued,
					m.P50ms, m.P99ms, m.P99Min, m.P99Max, ratio, spread, m.MaxMs, m.Late, m.BudgetCuts, m.Fallbacks, m.Cycles)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().IntSliceVar(&cards, "cards", []int{1024, 8192, 65536}, "cluster sizes in cards")
	cmd.Flags().IntSliceVar(&queued, "queued", []int{1000, 5000, 20000}, "queue depths (kept by arrivals)")
	cmd.Flags().StringSliceVar(&policies, "policy", []string{"easy", "conservative", "huitian-greedy", "huitian"}, "policies, EASY first for the ratios: "+strings.Join(policyNames(), ", "))
	cmd.Flags().IntVar(&cycles, "cycles", 30, "consecutive cycles measured per policy and size")
	cmd.Flags().IntVar(&rounds, "rounds", 1, "measure every size this many times, the policies alternating, and give the medians over the rounds")
	cmd.Flags().IntVar(&warmup, "warmup", 2, "cycles planned and acted on before measuring")
	cmd.Flags().DurationVar(&step, "step", 30*time.Second, "time between cycles")
	cmd.Flags().DurationVar(&budget, "budget", 50*time.Millisecond, "time budget of each plan (its context deadline)")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print JSON")
	cmd.Flags().IntVar(&cores, "cores", 1, "GOMAXPROCS while measuring")
	cmd.Flags().Uint64Var(&seed, "seed", 1, "workload seed")
	prof.flags(cmd.Flags())
	return cmd
}
