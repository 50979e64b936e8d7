#!/bin/bash
# up.sh [NNODES=4] [NCPUS=8] [NGPUS=8]: a real Slurm 22.05 on one machine —
# munged, slurmctld and one slurmd per fake node, all on 127.0.0.1 — with
# NGPUS fake GPUs per node (symlinks to /dev/null: a count-only gres.conf
# registers no GPUs in 22.05 and plain files are rejected). Adapted from the
# one-machine recipe; everything lives under $BASE. Stop with down.sh.
#
# Environment:
#   BASE         run folder (default ./slurm-test)
#   GRES_TYPES   how gres.conf types the GPUs: none (gpu:8), card (one type
#                per GPU, c0…c7: huitian places card-exact) or island (one
#                type per NVLink pair, i0…i3) (default card)
#   HOLD_LUA     1: install job_submit.lua (jobs submitted to the huitian
#                partition are held) (default 1)
#   CTLD_PORT    slurmctld's port (default 16817); slurmd ports follow
#                SLURMD_PORT (default 17001)
#   SCHEDPARAMS, PARTITIONS, EXTRA: as in slurm.conf.tmpl
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
N=${1:-4}; C=${2:-8}; G=${3:-8}
BASE=${BASE:-$PWD/slurm-test}
GRES_TYPES=${GRES_TYPES:-card}
HOLD_LUA=${HOLD_LUA:-1}
CTLD_PORT=${CTLD_PORT:-16817}
SLURMD_PORT=${SLURMD_PORT:-17001}
SCHEDPARAMS=${SCHEDPARAMS:-bf_interval=1,bf_resolution=1,bf_continue,bf_window=1440,sched_min_interval=0,default_queue_depth=1000,bf_max_job_test=1000}
EXTRA=${EXTRA:-}
PARTITIONS=${PARTITIONS:-PartitionName=huitian Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO}
if [ "$HOLD_LUA" = 1 ]; then EXTRA="JobSubmitPlugins=lua $EXTRA"; fi
mkdir -p "$BASE"/{state,spool,run,log,etc,dev}
rm -rf "${BASE:?}"/state/* "$BASE"/spool/* "$BASE"/log/* "$BASE"/run/*
H=$(hostname)
# The node line's Gres and gres.conf, by GRES_TYPES.
gres="gpu:$G"; conf="AutoDetect=off"$'\n'
case $GRES_TYPES in
none) [ "$G" -gt 0 ] && conf+="Name=gpu File=$BASE/dev/gpu[0-$((G-1))]"$'\n' ;;
card) gres=""; for i in $(seq 0 $((G-1))); do gres+="${gres:+,}gpu:c$i:1"; conf+="Name=gpu Type=c$i File=$BASE/dev/gpu$i"$'\n'; done ;;
island) gres=""; for i in $(seq 0 2 $((G-1))); do
    last=$((i+1 < G ? i+1 : i)); k=$((i/2)); gres+="${gres:+,}gpu:i$k:$((last-i+1))"
    conf+="Name=gpu Type=i$k File=$BASE/dev/gpu[$i-$last]"$'\n'; done ;;
*) echo "up.sh: GRES_TYPES=$GRES_TYPES: want none, card or island" >&2; exit 2 ;;
esac
[ "$G" -gt 0 ] || gres=""
sed -e "s#BASE#$BASE#g" -e "s#HOSTNAME#$H#g" -e "s#NNODES#$N#g" -e "s#FIRSTPORT#$SLURMD_PORT#g" -e "s#LASTPORT#$((SLURMD_PORT+N-1))#g" \
    -e "s#CTLDPORT#$CTLD_PORT#g" -e "s#NCPUS#$C#g" -e "s#NODEGRES#${gres:-gpu:0}#g" -e "s#SCHEDPARAMS#$SCHEDPARAMS#" \
    -e "s#^EXTRA#$EXTRA#" -e "s#^PARTITIONS#$PARTITIONS#" \
    "$HERE/slurm.conf.tmpl" > "$BASE/etc/slurm.conf"
for i in $(seq 0 $((G-1))); do ln -sf /dev/null "$BASE/dev/gpu$i"; done
printf '%s' "$conf" > "$BASE/etc/gres.conf"
echo "CgroupPlugin=autodetect" > "$BASE/etc/cgroup.conf"
[ "$HOLD_LUA" = 1 ] && cp "$HERE/../../../deploy/slurm/job_submit.lua" "$BASE/etc/job_submit.lua"
export SLURM_CONF=$BASE/etc/slurm.conf
# munge (left running by down.sh: other users of the machine may share it)
if ! pgrep -x munged >/dev/null; then
  mkdir -p /run/munge /var/log/munge /var/lib/munge; chown munge:munge /run/munge /var/log/munge /var/lib/munge
  runuser -u munge -- /usr/sbin/munged
fi
/usr/sbin/slurmctld -i -f "$SLURM_CONF"
for i in $(seq 1 "$N"); do mkdir -p "$BASE/spool/n$i"; /usr/sbin/slurmd -f "$SLURM_CONF" -N "n$i"; done
# Ready when every node is idle.
for _ in $(seq 1 50); do
  [ "$(sinfo -h -N -t idle -o %N 2>/dev/null | wc -l)" = "$N" ] && break; sleep 0.2
done
sinfo -N -o '%N %T %c %G' | head -5
echo "export SLURM_CONF=$SLURM_CONF"
