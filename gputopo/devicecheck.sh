#!/usr/bin/env bash
# devicecheck.sh checks `huitian topo` on a machine with NVIDIA GPUs and
# their driver. It builds huitian and the gputopo test binary (or takes them
# from $HUITIAN_BIN and $GPUTOPO_TEST, built elsewhere with
# `go build ./cmd/huitian` and `go test -c ./gputopo`, for a machine without
# Go or its module cache), then:
#
#   1. runs `huitian topo --json` and `huitian topo`, which must succeed;
#   2. where nvidia-smi is installed, counts the GPUs (nvidia-smi -L) and
#      reads `nvidia-smi topo -m` back through `huitian topo --from-smi`;
#   3. runs TestDeviceJSON on the JSON: it decodes as a huitian.v1.Node, passes
#      protovalidate, has as many cards as nvidia-smi -L lists (on a one-GPU
#      machine: one), each with a GPU- UUID, a model, memory > 0 and a PCI bus
#      id, NVLinks that agree from both ends, and the islands and NUMA nodes of
#      nvidia-smi's matrix.
#
# It prints what it checked and exits non-zero at the first failed check.
#
#   gputopo/devicecheck.sh
#   HUITIAN_BIN=./huitian GPUTOPO_TEST=./gputopo.test gputopo/devicecheck.sh
set -euo pipefail
cd "$(dirname "$0")/.."

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() {
	echo "devicecheck: FAIL: $*" >&2
	exit 1
}
step() { printf '\n== %s\n' "$*"; }

bin=${HUITIAN_BIN:-}
if [ -z "$bin" ]; then
	step "go build ./cmd/huitian"
	go build -o "$work/huitian" ./cmd/huitian || fail "huitian does not build"
	bin=$work/huitian
fi
testbin=${GPUTOPO_TEST:-}
if [ -z "$testbin" ]; then
	step "go test -c ./gputopo"
	go test -c -o "$work/gputopo.test" ./gputopo || fail "the gputopo tests do not build"
	testbin=$work/gputopo.test
fi

# 1. huitian topo, both formats.
step "huitian topo --json"
rc=0
"$bin" topo --json --node devicecheck >"$work/node.json" || rc=$?
cat "$work/node.json"
[ "$rc" -eq 0 ] || fail "huitian topo --json exited $rc (3: no NVML, NVIDIA driver or GPU on this machine)"

step "huitian topo"
rc=0
"$bin" topo --node devicecheck >"$work/topo.txt" || rc=$?
cat "$work/topo.txt"
[ "$rc" -eq 0 ] || fail "huitian topo exited $rc"
grep -q '^GPU0 ' "$work/topo.txt" || fail "the readable matrix has no GPU0 row"
echo "checked: huitian topo prints a matrix with a GPU0 row"

# 2. What nvidia-smi says, when it is installed.
cards=0
smi=()
if command -v nvidia-smi >/dev/null 2>&1; then
	step "nvidia-smi -L; nvidia-smi topo -m | huitian topo --from-smi -"
	nvidia-smi -L
	cards=$(nvidia-smi -L | grep -c '^GPU ' || true)
	nvidia-smi topo -m >"$work/smi.txt" || fail "nvidia-smi topo -m failed"
	cat "$work/smi.txt"
	rc=0
	"$bin" topo --from-smi - --node devicecheck <"$work/smi.txt" >"$work/smi-topo.txt" || rc=$?
	[ "$rc" -eq 0 ] || fail "huitian topo --from-smi cannot read this machine's nvidia-smi topo -m (exit $rc)"
	echo "checked: huitian topo --from-smi reads this machine's nvidia-smi topo -m"
	smi=(-smi "$work/smi.txt")
else
	echo "nvidia-smi is not installed: the card count and the nvidia-smi comparison are skipped"
fi

# 3. The JSON against the contract.
step "TestDeviceJSON"
rc=0
"$testbin" -test.run '^TestDeviceJSON$' -test.v -test.count=1 \
	-json "$work/node.json" -cards "$cards" ${smi[@]+"${smi[@]}"} | tee "$work/test.txt" || rc=$?
[ "$rc" -eq 0 ] || fail "TestDeviceJSON failed (exit $rc)"
grep -q -- '--- PASS: TestDeviceJSON' "$work/test.txt" || fail "TestDeviceJSON did not run"

printf '\ndevicecheck: OK: huitian topo describes %s GPU(s) as a valid huitian.v1.Node\n' \
	"$(grep -c '"uuid"' "$work/node.json")"
