// Package slurm is the Slurm driver of the resource-manager loop (package
// rm). It talks to a real slurmctld only through Slurm's own commands:
// `scontrol show node -o` for the nodes and their GPUs, `squeue --json` for
// the jobs, `scontrol update/release/requeuehold` to start and preempt, and
// `scancel --signal=USR1` for a checkpoint notice. Slurm's own suspend is
// never used: a suspended job keeps its GPUs. Slurm has no watch to
// subscribe to: a short `squeue --format="%i %T"` every WatchInterval sees a
// job submitted, started or ended, and wakes the loop (rm.Waker).
//
// The jobs it manages are the ones submitted into its partition, held (by
// job_submit.lua, deploy/slurm/, or `sbatch --hold`), with `--time` as the
// limit, `--nodes` and `--gres=gpu:K` (K per node) as the request and
// huitian's options in `--comment "huitian: key=value …"`. A start sets the
// job's node list to the plan and releases it; Slurm chooses the GPUs inside
// the planned nodes (Slurm 22.05 cannot re-type a pending job's GRES
// reliably), and the driver reads back what Slurm gave (`scontrol show job
// -d`, IDX) and reports that, never the plan.
//
// Everything the driver must remember — the plan it started a job on, a
// notice in progress, a preemption not yet acknowledged, the job's first
// submit time — is written into the job's AdminComment after huitian's
// words for its users, so a restart of the driver reads it all back from
// Slurm and acts on nothing twice.
package slurm
