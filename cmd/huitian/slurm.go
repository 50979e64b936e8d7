package main

import (
	"errors"
	"time"

	"github.com/spf13/cobra"

	"github.com/huitian/huitian/rm/slurm"
)

func newSlurmCmd() *cobra.Command {
	cfg := slurm.Defaults()
	var (
		df         driverFlags
		cmdTimeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "slurm",
		Short: "Carry out huitian's plans on a Slurm cluster (held jobs, node lists, USR1 and requeue)",
		Long: `slurm runs the Slurm driver: every --interval, and sooner when a job of
--partition is submitted, starts or ends (squeue every --watch-interval),
it reads the nodes and GPUs of --partition (scontrol show node), the jobs
(squeue --json), asks huitian serve for a plan, preempts the jobs it names
(SUSPEND: scancel --signal=USR1, "checkpoint now", then requeue-hold when
the notice runs out; REQUEUE: requeue-hold at once), starts the jobs it
names by setting their node list to the plan and releasing them, reads back
the GPUs Slurm gave (scontrol show job -d, IDX) and reports what happened.

Jobs are submitted held into --partition (job_submit.lua in deploy/slurm
holds them; or sbatch --hold), with --time, --nodes and --gres=gpu:K (per
node), and huitian's options in --comment "huitian: key=value …". Users see
huitian's words in the job's AdminComment (scontrol show job). The driver
runs Slurm's commands from PATH, as a Slurm administrator (SlurmUser or
root: it sets AdminComment and releases held jobs); SLURM_CONF is honoured.
Its state lives in the jobs' AdminComment: a restart loses nothing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := df.check(cmd); err != nil {
				return err
			}
			if cmdTimeout <= 0 {
				return exitWith(2, errors.New("--command-timeout: must be > 0"))
			}
			cfg.Run = slurm.Exec(cmdTimeout)
			d, err := slurm.New(cfg, df.log)
			if err != nil {
				return exitWith(2, err)
			}
			defer d.Close()
			ctx, stop := signalContext(cmd)
			defer stop()
			df.log.Info("huitian slurm: running", "server", df.server, "partition", cfg.Partition, "cluster", cfg.ClusterID, "interval", df.interval,
				"watch_interval", cfg.WatchInterval)
			return df.run(ctx, d)
		},
	}
	df.register(cmd)
	f := cmd.Flags()
	f.StringVar(&cfg.Partition, "partition", cfg.Partition, "the Slurm partition whose held jobs huitian plans")
	f.StringVar(&cfg.ClusterID, "cluster-id", cfg.ClusterID, "the cluster's id at huitian serve")
	f.StringVar(&cfg.TopologyDir, "topology-dir", "", "folder of NODE.json files (huitian topo --json per node): GPU UUIDs, models, NVLink islands")
	f.DurationVar(&cfg.StartTimeout, "start-timeout", cfg.StartTimeout, "a released job that Slurm has not started by then is held and planned again")
	f.DurationVar(&cfg.WatchInterval, "watch-interval", cfg.WatchInterval, "how often to ask Slurm (squeue: job ids and states) whether --partition's jobs changed; a change brings the next cycle before --interval (0: off)")
	f.DurationVar(&cmdTimeout, "command-timeout", 30*time.Second, "longest a Slurm command may take")
	df.registerLog(cmd)
	return cmd
}
