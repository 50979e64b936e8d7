// Package slurm is the Slurm end-to-end test (make e2e-slurm): a real
// slurmctld and four slurmd with eight fake GPUs each on one machine
// (up.sh, started by scripts/e2e-slurm.sh), huitian serve and huitian
// slurm, and a workload of held batch jobs; or, with E2E_MODE=slurm, the
// same workload under Slurm's own sched/backfill for comparison.
package slurm
