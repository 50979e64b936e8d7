#!/usr/bin/env bash
# Build kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, etcd and
# kwok from the Go module proxy only (no release downloads), into K8S_BIN_DIR
# (default $HOME/.cache/huitian/k8s-bin, outside the clone so later runs reuse it).
# Idempotent: with the version stamp present it does nothing.
# From ../shared/recipes/kubernetes-test-cluster.md (verified there).
set -euo pipefail
K8S_VERSION=${K8S_VERSION:-1.34.4}      # k8s.io/kubernetes vX.Y.Z
ETCD_VERSION=${ETCD_VERSION:-3.6.16}    # go.etcd.io/etcd/server/v3
KWOK_VERSION=${KWOK_VERSION:-0.8.0}     # sigs.k8s.io/kwok
BIN_DIR=${K8S_BIN_DIR:-$HOME/.cache/huitian/k8s-bin}
mkdir -p "$BIN_DIR"; BIN_DIR=$(cd "$BIN_DIR" && pwd)
WORK=${K8S_BUILD_DIR:-$BIN_DIR/../k8s-build}; mkdir -p "$WORK"; WORK=$(cd "$WORK" && pwd)
STAMP="$BIN_DIR/.stamp"; WANT="k8s=$K8S_VERSION etcd=$ETCD_VERSION kwok=$KWOK_VERSION"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ]; then echo "k8s binaries up to date in $BIN_DIR"; exit 0; fi
echo "building Kubernetes $K8S_VERSION, etcd $ETCD_VERSION and kwok $KWOK_VERSION into $BIN_DIR (10-50 minutes on 2 cores)"
export CGO_ENABLED=0
export GOFLAGS=-mod=mod
MINOR=$(echo "$K8S_VERSION" | cut -d. -f2)
start=$SECONDS

# kube-apiserver, kube-controller-manager, kube-scheduler, kubectl: k8s.io/kubernetes
# cannot be built directly (its go.mod has replace directives), so a wrapper
# module requires it and maps every staging module to its published version.
K=$WORK/kubernetes; mkdir -p "$K"; cd "$K"
gomod=$(go mod download -json "k8s.io/kubernetes@v$K8S_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p')
{
  printf 'module local/k8sbins\n\ngo 1.24.0\n\nrequire k8s.io/kubernetes v%s\n\nreplace (\n' "$K8S_VERSION"
  grep -E '^[[:space:]]*k8s\.io/[^ ]+ => \./staging/' "$gomod" | awk -v v="v0.${K8S_VERSION#1.}" '{print "\t"$1" => "$1" "v}'
  printf ')\n'
} > go.mod
cat > tools.go <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
GO
go mod tidy
LD="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  LD="$LD -X $p.gitVersion=v$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$MINOR -X $p.gitTreeState=clean"
done
for c in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
  s=$SECONDS; go build -trimpath -ldflags "$LD" -o "$BIN_DIR/$c" "k8s.io/kubernetes/cmd/$c"; echo "built $c in $((SECONDS-s))s"
done

# etcd: server/v3 has replace directives too -> a tiny wrapper main.
E=$WORK/etcd; mkdir -p "$E"; cd "$E"
printf 'module local/etcd\n\ngo 1.24.0\n\nrequire go.etcd.io/etcd/server/v3 v%s\n' "$ETCD_VERSION" > go.mod
cat > main.go <<'GO'
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
go mod tidy
s=$SECONDS; go build -trimpath -ldflags "-s -w" -o "$BIN_DIR/etcd" .; echo "built etcd in $((SECONDS-s))s"

# kwok (a plain go install works) and its stage definitions.
s=$SECONDS; GOFLAGS= GOBIN="$BIN_DIR" go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@v$KWOK_VERSION"; echo "built kwok in $((SECONDS-s))s"
kdir=$(GOFLAGS= go mod download -json "sigs.k8s.io/kwok@v$KWOK_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')
st=$kdir/kustomize/stage; out=$BIN_DIR/kwok-stages.yaml; : > "$out"
for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
         pod/general/pod-create.yaml pod/general/pod-init-container-running.yaml \
         pod/general/pod-init-container-completed.yaml pod/general/pod-ready.yaml \
         pod/general/pod-complete.yaml pod/general/pod-delete.yaml; do
  echo '---' >> "$out"; cat "$st/$f" >> "$out"
done
echo "$WANT" > "$STAMP"
echo "k8s binaries built in $((SECONDS-start))s into $BIN_DIR"
ls -la "$BIN_DIR"
