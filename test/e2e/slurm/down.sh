#!/bin/bash
# down.sh: stop the slurmd and slurmctld that up.sh started, by the PIDs in
# their pid files (munged is left running), and wait until they are gone.
BASE=${BASE:-$PWD/slurm-test}
for f in "$BASE"/run/slurmd-*.pid "$BASE"/run/slurmctld.pid; do
  [ -s "$f" ] || continue
  p=$(cat "$f"); kill "$p" 2>/dev/null || continue
  for _ in $(seq 1 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$p" 2>/dev/null || true
done
exit 0
