#!/usr/bin/env bash
# The Slurm end-to-end test (make e2e-slurm): a real Slurm 22.05 on this
# machine (test/e2e/slurm/up.sh: slurmctld and four slurmd with eight fake
# GPUs each, on loopback), jobs of the partition held by
# deploy/slurm/job_submit.lua, then the Go test in test/e2e/slurm runs huitian
# serve and huitian slurm against a workload of 49 batch jobs.
#
#   scripts/e2e-slurm.sh               install Slurm if missing, run the test
#   scripts/e2e-slurm.sh if-possible   the same, but say why and exit 0 when
#                                      Slurm cannot be installed or started
#                                      (make test)
#
# E2E_COMPARE=1 runs the same workload a second time under Slurm's own
# sched/backfill alone (jobs not held, same nodes) and prints wait and
# bounded slowdown per size class side by side (E2E_COMPARE=slurm-only:
# only the Slurm run, against bin/e2e-slurm-huitian.json of an earlier
# run). E2E_KEEP=1 keeps the run
# folders (logs, job outputs).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MODE=${1:-run}
skip() {
  echo "== e2e-slurm: SKIPPED: $*"
  [ "$MODE" = if-possible ] && exit 0
  exit 1
}

# 1. Root: slurmd runs as root and the driver is a Slurm administrator.
if [ "$(id -u)" != 0 ]; then
  if sudo -n true 2>/dev/null; then
    exec sudo -E env "PATH=$PATH" "$0" "$@"
  fi
  skip "needs root or passwordless sudo (slurmd runs as root)"
fi

# 2. The Debian packages, installed when missing.
PKGS=(slurm-wlm slurmctld slurmd slurm-client munge)
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v sbatch >/dev/null || ! command -v munged >/dev/null; then
  command -v apt-get >/dev/null || skip "Slurm is not installed and there is no apt-get to install ${PKGS[*]}"
  echo "e2e-slurm: installing ${PKGS[*]} with apt-get (apt-get update first)"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${PKGS[@]}"; } \
    || skip "apt-get could not install ${PKGS[*]}"
fi
v=$(slurmctld -V 2>/dev/null | awk '{print $2}')
case $v in 22.05*|23.*|24.*) ;; *) skip "Slurm $v found; the driver is tested on 22.05 (squeue --json, openapi v0.0.38)" ;; esac

cd "$ROOT"
go build -o bin/huitian ./cmd/huitian || exit 1

freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
freerange() { # four consecutive free ports
  python3 -c '
import socket, random
for _ in range(200):
    b = random.randrange(20000, 60000); ok = True
    for p in range(b, b + 4):
        s = socket.socket()
        try: s.bind(("127.0.0.1", p))
        except OSError: ok = False
        finally: s.close()
    if ok: print(b); break'
}

BASE=""
down() {
  [ -n "$BASE" ] || return
  SLURM_CONF=$BASE/etc/slurm.conf scancel --partition=huitian 2>/dev/null || true
  sleep 1
  BASE=$BASE test/e2e/slurm/down.sh
}
cleanup() {
  down
  for d in "${RUNS[@]}"; do
    if [ "${E2E_KEEP:-0}" = 1 ]; then echo "e2e-slurm: run folder kept: $d"; else rm -rf "$d"; fi
  done
}
RUNS=()
trap cleanup EXIT

# one MODE: start Slurm (held jobs for huitian, plain for slurm), run the test.
one() {
  local mode=$1 hold=1
  [ "$mode" = slurm ] && hold=0
  local dir; dir=$(mktemp -d -t huitian-e2e-slurm.XXXXXX); RUNS+=("$dir"); chmod 755 "$dir"
  BASE=$dir/slurm
  local t=$SECONDS
  if ! BASE=$BASE GRES_TYPES=none HOLD_LUA=$hold CTLD_PORT=$(freeport) SLURMD_PORT=$(freerange) \
      test/e2e/slurm/up.sh 4 8 8 > "$dir/up.log" 2>&1; then
    cat "$dir/up.log"; tail -20 "$BASE/log/slurmctld.log" 2>/dev/null
    skip "Slurm did not start (see above)"
  fi
  export SLURM_CONF=$BASE/etc/slurm.conf
  if [ "$(sinfo -h -N -t idle -o %N | wc -l)" != 4 ]; then
    sinfo -N; tail -20 "$BASE/log/slurmctld.log"; skip "Slurm started but its four nodes are not idle"
  fi
  echo "e2e-slurm: Slurm $v up in $((SECONDS-t))s (4 nodes x 8 fake GPUs, $mode)"
  E2E_RUN_DIR=$dir E2E_HUITIAN=$ROOT/bin/huitian E2E_MODE=$mode E2E_RESULT=$dir/result.json \
    go test -count=1 -v -timeout 12m -run '^TestSlurm$' ./test/e2e/slurm/ 2>&1 | tee "$dir/test.log" | grep -v '^=== RUN'
  local rc=${PIPESTATUS[0]}
  [ -f "$dir/result.json" ] && cp "$dir/result.json" "$ROOT/bin/e2e-slurm-$mode.json"
  down; BASE=""
  return "$rc"
}

t0=$SECONDS
mkdir -p bin
if [ "${E2E_COMPARE:-0}" != slurm-only ] || [ ! -f bin/e2e-slurm-huitian.json ]; then
  one huitian || { echo "== e2e-slurm: FAILED"; exit 1; }
  echo "== e2e-slurm: passed in $((SECONDS-t0))s"
fi
if [ "${E2E_COMPARE:-0}" != 0 ]; then
  one slurm || { echo "== e2e-slurm (Slurm's own backfill): FAILED"; exit 1; }
  python3 - "$ROOT/bin/e2e-slurm-huitian.json" "$ROOT/bin/e2e-slurm-slurm.json" <<'PY'
import json, sys
h = {r["class"]: r for r in json.load(open(sys.argv[1]))}
s = {r["class"]: r for r in json.load(open(sys.argv[2]))}
print("== the same workload: huitian vs Slurm's sched/backfill alone (wait in seconds; bsld: bounded slowdown, tau 10 s)")
print(f'{"GPUs":<6}{"jobs":>5}  {"wait huitian":>13}{"wait slurm":>11}  {"max huitian":>12}{"max slurm":>10}  {"bsld huitian":>13}{"bsld slurm":>11}')
for k in ["1", "2-4", "5-8", "9-16"]:
    if k in h and k in s:
        a, b = h[k], s[k]
        print(f'{k:<6}{a["jobs"]:>5}  {a["mean_wait_s"]:>13.1f}{b["mean_wait_s"]:>11.1f}  {a["max_wait_s"]:>12.0f}{b["max_wait_s"]:>10.0f}  {a["mean_bsld"]:>13.2f}{b["mean_bsld"]:>11.2f}')
PY
  echo "== e2e-slurm: both runs done in $((SECONDS-t0))s"
fi
