# huitian — two commands set everything up on a fresh Debian machine:
#   make run    runs the main job on an embedded default
#   make test   installs what is missing, builds, and runs every check and test
# Everything else here is a step of those two.

GO      ?= go
BIN     := bin/huitian
PKGS    := ./...
# Packages that own goroutines or locks run under the race detector too.
RACE_PKGS := ./cmd/... ./internal/... ./server/... ./client/... ./sim/... ./rm/...

.PHONY: run test deps build bench-flat bench-service bench-soak suite generate check-generated lint fmt-check vet staticcheck unit race bench fuzz clean

# The planning service on the embedded demo cluster, driven by a built-in
# resource manager (RUN_DATA holds its store, emptied first so that every run
# shows the same first minute; RUN_LISTEN its address).
RUN_DATA   ?= bin/run-data
RUN_LISTEN ?= 127.0.0.1:7070
RUN_POLICY ?= huitian

run: deps build
	@echo "== planning the embedded example snapshot (4 nodes x 8 cards, EASY) =="
	./$(BIN) plan --example --format table
	@echo "== serving the demo cluster (Ctrl-C stops it) =="
	rm -rf $(RUN_DATA)
	./$(BIN) serve --demo --data $(RUN_DATA) --listen $(RUN_LISTEN) --default-policy $(RUN_POLICY)

test: deps build fmt-check vet staticcheck check-generated unit race e2e-kubernetes-if-cached e2e-slurm-if-possible
	@echo "== make test: all checks passed =="

deps:
	@scripts/deps.sh

# The commit `huitian --version` names where Go's own VCS stamping is off
# (GOFLAGS=-buildvcs=false) or the tree has no .git.
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)$(shell git status --porcelain --untracked-files=no 2>/dev/null | grep -q . && echo +modified)

build:
	$(GO) build -ldflags "-X main.commit=$(COMMIT)" -o $(BIN) ./cmd/huitian

generate:
	scripts/generate.sh

check-generated:
	scripts/check-generated.sh

fmt-check:
	@out="$$(gofmt -l $$(git ls-files '*.go'))"; if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

staticcheck:
	$(GO) tool staticcheck $(PKGS)

lint: fmt-check vet staticcheck

unit:
	$(GO) test -count=1 $(PKGS)

race:
	$(GO) test -count=1 -race $(RACE_PKGS)

# The Kubernetes end-to-end test (scripts/e2e-kubernetes.sh): etcd,
# kube-apiserver, kube-controller-manager, kube-scheduler and kwok on
# loopback, huitian serve and huitian kube, a workload of 61 Jobs. The
# Kubernetes binaries are built once into K8S_BIN_DIR, outside the clone
# (10-50 minutes on 2 cores), and reused; `make test` runs the test only
# when they are there and says that it skipped it otherwise.
K8S_BIN_DIR ?= $(HOME)/.cache/huitian/k8s-bin
.PHONY: e2e-kubernetes e2e-kubernetes-if-cached
e2e-kubernetes: deps
	K8S_BIN_DIR=$(K8S_BIN_DIR) scripts/e2e-kubernetes.sh

e2e-kubernetes-if-cached:
	@K8S_BIN_DIR=$(K8S_BIN_DIR) scripts/e2e-kubernetes.sh if-cached

# The Slurm end-to-end test (scripts/e2e-slurm.sh): a real Slurm 22.05 on
# this machine (test/e2e/slurm/up.sh: slurmctld and four slurmd with eight
# fake GPUs each), huitian serve and huitian slurm, a workload of 49 held
# batch jobs; about 5 minutes. It installs the Debian packages when missing
# (apt-get; root or passwordless sudo). `make test` runs it when Slurm can be
# installed and started and says why it skipped otherwise. E2E_COMPARE=1
# runs the workload once more under Slurm's own sched/backfill and prints
# both side by side (e2e-slurm-compare).
.PHONY: e2e-slurm e2e-slurm-if-possible e2e-slurm-compare
e2e-slurm: deps
	scripts/e2e-slurm.sh

e2e-slurm-if-possible:
	@scripts/e2e-slurm.sh if-possible

e2e-slurm-compare: deps
	E2E_COMPARE=1 scripts/e2e-slurm.sh

bench:
	$(GO) test -run='^$$' -bench=. -benchmem $(PKGS)

# The service's figures: Plan RPCs per second on an 8,192-card snapshot, and
# the server's memory after 1 million events.
# Issue 15's flat-machine ratio (bench/README.md): KTH-SP2 ×933 on 93,312
# cards against KTH-SP2 on its 100, per policy, in one run (a few minutes).
bench-flat:
	$(GO) test -run='^$$' -bench='^BenchmarkFlatRatio$$' -benchtime=1x -count=1 -timeout=0 ./sim/

bench-service:
	$(GO) test -run='^$$' -bench=. -benchtime=1x -count=1 ./bench/service/

# The soak: 64 clients mixing every RPC for SOAK (default 10 minutes) against
# one service: calls, errors, p50/p99 per RPC, and the resident set over
# time, which must stay flat after the warm-up (bench/README.md).
# `make bench-service` skips it (HUITIAN_SOAK unset).
SOAK ?= 10m
bench-soak:
	HUITIAN_SOAK=$(SOAK) $(GO) test -run='^$$' -bench='^BenchmarkSoak$$' -benchtime=1x -count=1 -timeout=0 ./bench/service/

# The robustness suite: every SWF trace in TRACES, the Philly VC trace and
# synthetic workloads of 20,000 jobs over 8 seeds, each at loads 0.7, 0.9
# and 1.2, under easy, huitian-greedy and huitian, with pass/fail against
# the targets (a benchmark, not a test: about 4 minutes on a 2-core VM,
# 2026-12-03). SUITE_FLAGS selects a
# slice, e.g. SUITE_FLAGS='--suite-traces lublin,hpc2n --suite-loads 0.9 --suite-jobs 2000'.
TRACES      ?= ../shared/traces
SUITE_FLAGS ?=
suite: build
	./$(BIN) whatif --suite --traces $(TRACES) $(SUITE_FLAGS)

# Short fuzzing of every parser and decoder (go test -fuzz runs one target at a time).
# go test -fuzz minimizes every input that finds new coverage before it fuzzes
# on, for up to -fuzzminimizetime (60 s by default) and with O(n²) calls for an
# n-byte input; FUZZMINIMIZETIME bounds that, so that a short run fuzzes rather
# than minimizes (FuzzPlanAndReportEvents made no progress in 60 s otherwise).
FUZZTIME ?= 15s
FUZZMINIMIZETIME ?= 5s
fuzz:
	@for t in $$(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -n1 dirname | sort -u); do \
	  for f in $$(grep -h '^func Fuzz' $$t/*_test.go | sed 's/func \(Fuzz[A-Za-z0-9_]*\).*/\1/'); do \
	    echo "== $$t $$f"; $(GO) test -run='^$$' -fuzz="^$$f$$" -fuzztime=$(FUZZTIME) -fuzzminimizetime=$(FUZZMINIMIZETIME) $$t || exit 1; \
	  done; \
	done

clean:
	rm -rf bin
