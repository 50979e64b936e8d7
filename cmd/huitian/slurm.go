package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/huitian/huitian/client"
	"github.com/huitian/huitian/model"
	pb "github.com/huitian/huitian/proto/huitian/v1"
	"github.com/huitian/huitian/rm"
	"github.com/huitian/huitian/rm/slurm"
)

func newSlurmCmd() *cobra.Command {
	cfg := slurm.Defaults()
	var (
		serverURL, tokenFile, policy string
		logFormat, logLevel          string
		interval, cmdTimeout         time.Duration
		depth                        int32
	)
	cmd := &cobra.Command{
		Use:   "slurm",
		Short: "Carry out huitian's plans on a Slurm cluster (held jobs, node lists, USR1 and requeue)",
		Long: `slurm runs the Slurm driver: every --interval it reads the nodes and
GPUs of --partition (scontrol show node), the jobs (squeue --json), asks
huitian serve for a plan, preempts the jobs it names (SUSPEND: scancel
--signal=USR1, "checkpoint now", then requeue-hold when the notice runs out;
REQUEUE: requeue-hold at once), starts the jobs it names by setting their
node list to the plan and releasing them, reads back the GPUs Slurm gave
(scontrol show job -d, IDX) and reports what happened.

Jobs are submitted held into --partition (job_submit.lua in deploy/slurm
holds them; or sbatch --hold), with --time, --nodes and --gres=gpu:K (per
node), and huitian's options in --comment "huitian: key=value …". Users see
huitian's words in the job's AdminComment (scontrol show job). The driver
runs Slurm's commands from PATH, as a Slurm administrator (SlurmUser or
root: it sets AdminComment and releases held jobs); SLURM_CONF is honoured.
Its state lives in the jobs' AdminComment: a restart loses nothing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(cmd.ErrOrStderr(), logFormat, logLevel)
			if err != nil {
				return exitWith(2, err)
			}
			var plan *pb.PlanOptions
			if policy != "" {
				p, ok := model.ParsePolicy(policy)
				if !ok || p == model.PolicyDefault {
					return exitWith(2, fmt.Errorf("--policy: unknown policy %q (want one of %s)", policy, strings.Join(policyNames(), ", ")))
				}
				plan = &pb.PlanOptions{Policy: wirePolicy(p), ReservationDepth: depth}
			}
			if interval <= 0 {
				return exitWith(2, errors.New("--interval: must be > 0"))
			}
			if cmdTimeout <= 0 {
				return exitWith(2, errors.New("--command-timeout: must be > 0"))
			}
			cfg.Run = slurm.Exec(cmdTimeout)
			d, err := slurm.New(cfg, log)
			if err != nil {
				return exitWith(2, err)
			}
			var opts []client.Option
			if tokenFile != "" {
				b, err := os.ReadFile(tokenFile)
				if err != nil {
					return exitWith(2, fmt.Errorf("--token-file: %w", err))
				}
				tok, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
				opts = append(opts, client.WithToken(tok))
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			log.Info("huitian slurm: running", "server", serverURL, "partition", cfg.Partition, "cluster", cfg.ClusterID, "interval", interval)
			return rm.New(client.New(serverURL, opts...), d, rm.Options{Interval: interval, Plan: plan, Log: log}).Run(ctx)
		},
	}
	f := cmd.Flags()
	f.StringVar(&serverURL, "server", "http://127.0.0.1:7070", "huitian serve's address")
	f.StringVar(&tokenFile, "token-file", "", "file whose first line is huitian serve's bearer token")
	f.StringVar(&cfg.Partition, "partition", cfg.Partition, "the Slurm partition whose held jobs huitian plans")
	f.StringVar(&cfg.ClusterID, "cluster-id", cfg.ClusterID, "the cluster's id at huitian serve")
	f.StringVar(&cfg.TopologyDir, "topology-dir", "", "folder of NODE.json files (huitian topo --json per node): GPU UUIDs, models, NVLink islands")
	f.DurationVar(&interval, "interval", 10*time.Second, "time between scheduling cycles")
	f.DurationVar(&cfg.StartTimeout, "start-timeout", cfg.StartTimeout, "a released job that Slurm has not started by then is held and planned again")
	f.DurationVar(&cmdTimeout, "command-timeout", 30*time.Second, "longest a Slurm command may take")
	f.StringVar(&policy, "policy", "", "planning policy (default: the service's --default-policy): "+strings.Join(policyNames(), ", "))
	f.Int32Var(&depth, "reservation-depth", 0, "reservation depth for the hybrid policy")
	f.StringVar(&logFormat, "log-format", "text", "log format: text or json")
	f.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn or error")
	return cmd
}
