#!/usr/bin/env bash
# The Kubernetes end-to-end test (make e2e-kubernetes): a real etcd,
# kube-apiserver (RBAC authorizer on), kube-controller-manager and
# kube-scheduler on loopback, kwok faking four 8-card GPU nodes whose cards
# huitian topo publishes as DRA ResourceSlices, then the Go test in
# test/e2e/kubernetes runs huitian serve and huitian kube (the latter under
# deploy/kubernetes/rbac.yaml's ServiceAccount) against a workload of Jobs.
#
#   scripts/e2e-kubernetes.sh            build the binaries if needed, run
#   scripts/e2e-kubernetes.sh if-cached  run only when the binaries are cached,
#                                        else say it skipped (make test)
#
# The Kubernetes binaries live in K8S_BIN_DIR (default
# $HOME/.cache/huitian/k8s-bin, outside the clone); building them takes 10-50
# minutes on 2 cores (scripts/build-k8s-bins.sh). E2E_KEEP=1 keeps the run
# folder (logs, kubeconfigs, describe outputs).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export K8S_BIN_DIR=${K8S_BIN_DIR:-$HOME/.cache/huitian/k8s-bin}
BIN_DIR=$K8S_BIN_DIR
NEED=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok kwok-stages.yaml .stamp)
cached() { for f in "${NEED[@]}"; do [ -e "$BIN_DIR/$f" ] || return 1; done; }

if [ "${1:-run}" = if-cached ] && ! cached; then
  echo "== e2e-kubernetes: SKIPPED: the Kubernetes binaries are not cached in $BIN_DIR"
  echo "   (make e2e-kubernetes builds them once, 10-50 minutes on 2 cores, and runs the test)"
  exit 0
fi

# openssl (service-account keys) and curl (readiness) from apt when missing.
missing=()
for c in openssl curl; do command -v "$c" >/dev/null 2>&1 || missing+=("$c"); done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "e2e-kubernetes: installing ${missing[*]} with apt-get"
  sudo=(); [ "$(id -u)" = 0 ] || sudo=(sudo)
  "${sudo[@]}" apt-get update -qq && "${sudo[@]}" apt-get install -y -qq "${missing[@]}"
fi

s=$SECONDS
"$ROOT/scripts/build-k8s-bins.sh"
echo "e2e-kubernetes: Kubernetes binaries ready in $((SECONDS-s))s"
cd "$ROOT"
go build -o bin/huitian ./cmd/huitian
# The adapter runs under the race detector (cgo's deprecation warnings from
# go-nvml are shown only if the build fails).
go build -race -o bin/huitian-race ./cmd/huitian 2> bin/huitian-race.build.log || { cat bin/huitian-race.build.log; exit 1; }

RUN_DIR=$(mktemp -d -t huitian-e2e.XXXXXX)
stop() {
  for p in kwok scheduler kcm apiserver etcd; do
    f="$RUN_DIR/$p.pid"; [ -f "$f" ] || continue
    pid=$(cat "$f"); kill "$pid" 2>/dev/null && for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    rm -f "$f"
  done
  if [ "${E2E_KEEP:-0}" = 1 ]; then echo "e2e-kubernetes: run folder kept: $RUN_DIR"; else rm -rf "$RUN_DIR"; fi
}
trap stop EXIT
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
ETCD_PORT=$(freeport); API_PORT=$(freeport)

# --- the control plane (../shared/recipes/kubernetes-test-cluster.md) -------
t0=$SECONDS
mkdir -p "$RUN_DIR/certs"
openssl genrsa -out "$RUN_DIR/sa.key" 2048 2>/dev/null
openssl rsa -in "$RUN_DIR/sa.key" -pubout -out "$RUN_DIR/sa.pub" 2>/dev/null
TOKEN=$(head -c16 /dev/urandom | od -An -tx1 | tr -d ' \n')
echo "$TOKEN,admin,admin-uid,system:masters" > "$RUN_DIR/tokens.csv"
"$BIN_DIR/etcd" --data-dir "$RUN_DIR/etcd" \
  --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls http://127.0.0.1:0 --unsafe-no-fsync --log-level=warn > "$RUN_DIR/etcd.log" 2>&1 &
echo $! > "$RUN_DIR/etcd.pid"
# The API server starts from a script, so that the test can restart it.
cat > "$RUN_DIR/apiserver.sh" <<APISERVER
#!/usr/bin/env bash
"$BIN_DIR/kube-apiserver" --etcd-servers="http://127.0.0.1:$ETCD_PORT" \\
  --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$API_PORT" \\
  --cert-dir="$RUN_DIR/certs" --token-auth-file="$RUN_DIR/tokens.csv" \\
  --authorization-mode=RBAC \\
  --service-account-issuer="https://127.0.0.1:$API_PORT" \\
  --service-account-key-file="$RUN_DIR/sa.pub" --service-account-signing-key-file="$RUN_DIR/sa.key" \\
  --service-cluster-ip-range=10.0.0.0/24 --allow-privileged=true \\
  --disable-admission-plugins=ServiceAccount >> "$RUN_DIR/apiserver.log" 2>&1 &
echo \$! > "$RUN_DIR/apiserver.pid"
APISERVER
chmod +x "$RUN_DIR/apiserver.sh"
"$RUN_DIR/apiserver.sh"
kubeconfig() { # file server-token
  cat > "$1" <<KC
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {server: "https://127.0.0.1:$API_PORT", insecure-skip-tls-verify: true}
users:
- name: user
  user: {token: "$2"}
contexts:
- name: local
  context: {cluster: local, user: user}
current-context: local
KC
}
kubeconfig "$RUN_DIR/kubeconfig" "$TOKEN"
export KUBECONFIG=$RUN_DIR/kubeconfig
for _ in $(seq 1 300); do
  [ "$(curl -sk -H "Authorization: Bearer $TOKEN" "https://127.0.0.1:$API_PORT/readyz" 2>/dev/null)" = ok ] && break
  kill -0 "$(cat "$RUN_DIR/apiserver.pid")" 2>/dev/null || { echo "kube-apiserver exited"; tail -20 "$RUN_DIR/apiserver.log"; exit 1; }
  sleep 0.2
done
K="--kubeconfig=$RUN_DIR/kubeconfig"
"$BIN_DIR/kube-controller-manager" "$K" --leader-elect=false --secure-port=0 \
  --service-account-private-key-file="$RUN_DIR/sa.key" --root-ca-file="$RUN_DIR/certs/apiserver.crt" > "$RUN_DIR/kcm.log" 2>&1 &
echo $! > "$RUN_DIR/kcm.pid"
"$BIN_DIR/kube-scheduler" "$K" --leader-elect=false --secure-port=0 > "$RUN_DIR/scheduler.log" 2>&1 &
echo $! > "$RUN_DIR/scheduler.pid"
"$BIN_DIR/kwok" "$K" -c "$BIN_DIR/kwok-stages.yaml" --manage-all-nodes=false \
  --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
  --node-lease-duration-seconds=40 --cidr=10.0.0.1/24 --node-ip=10.0.0.1 > "$RUN_DIR/kwok.log" 2>&1 &
echo $! > "$RUN_DIR/kwok.pid"
KC="$BIN_DIR/kubectl"
for _ in $(seq 1 100); do $KC get ns default >/dev/null 2>&1 && break; sleep 0.3; done

# --- four fake 8-card GPU nodes, two NVLink islands each, two racks ----------
for n in 1 2 3 4; do
  rack=r$(( (n + 1) / 2 ))
  cat <<NODE | $KC apply -f - >/dev/null
apiVersion: v1
kind: Node
metadata:
  name: gpu-$n
  annotations: {kwok.x-k8s.io/node: fake}
  labels: {type: kwok, kubernetes.io/hostname: gpu-$n, rack: $rack}
status:
  capacity:    {cpu: "64", memory: 512Gi, pods: "110"}
  allocatable: {cpu: "64", memory: 512Gi, pods: "110"}
NODE
  cards=""
  for i in 0 1 2 3 4 5 6 7; do
    island=nvl-a; [ $i -ge 4 ] && island=nvl-b
    cards="$cards${cards:+,}{\"index\":$i,\"uuid\":\"GPU-$n-$i\",\"model\":\"H100-SXM5-80GB\",\"memoryBytes\":\"85899345920\",\"nvlinkIsland\":\"$island\",\"numaNode\":-1}"
  done
  echo "{\"name\":\"gpu-$n\",\"cards\":[$cards]}" > "$RUN_DIR/node-$n.json"
done
$KC apply -f deploy/kubernetes/deviceclass-fake.yaml >/dev/null
for n in 1 2 3 4; do ./bin/huitian topo --publish-slice --from-json "$RUN_DIR/node-$n.json" --kubeconfig "$RUN_DIR/kubeconfig"; done
$KC wait --for=condition=Ready node/gpu-1 node/gpu-2 node/gpu-3 node/gpu-4 --timeout=120s >/dev/null
for _ in $(seq 1 240); do
  [ -z "$($KC get nodes -o jsonpath='{range .items[*]}{.spec.taints}{end}')" ] && break; sleep 0.5
done

# --- the adapter's identity: deploy/kubernetes/rbac.yaml, nothing more -------
$KC apply -f deploy/kubernetes/namespace.yaml -f deploy/kubernetes/rbac.yaml >/dev/null

# --- every manifest shipped, checked by the API server itself ---------------
# A server-side dry run validates and admits each object as a real apply
# would, and creates nothing. example-job.yaml runs in namespace ml.
$KC create namespace ml >/dev/null
$KC apply --dry-run=server -f deploy/kubernetes/ >/dev/null
echo "e2e-kubernetes: deploy/kubernetes/*.yaml pass the API server's validation (dry run)"
kubeconfig "$RUN_DIR/adapter.kubeconfig" "$($KC create token huitian-kube -n huitian --duration=2h)"
echo "e2e-kubernetes: cluster up in $((SECONDS-t0))s ($RUN_DIR)"

t1=$SECONDS
E2E_RUN_DIR=$RUN_DIR E2E_ADMIN_KUBECONFIG=$RUN_DIR/kubeconfig E2E_ADAPTER_KUBECONFIG=$RUN_DIR/adapter.kubeconfig \
E2E_HUITIAN=$ROOT/bin/huitian E2E_HUITIAN_RACE=$ROOT/bin/huitian-race E2E_KUBECTL=$KC \
  go test -count=1 -v -timeout 40m ./test/e2e/kubernetes/ 2>&1 | tee "$RUN_DIR/test.log"
rc=${PIPESTATUS[0]}
echo "e2e-kubernetes: test ran in $((SECONDS-t1))s, exit $rc"
exit "$rc"
