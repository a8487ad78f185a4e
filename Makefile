# readyline — `make help` lists the targets.
SHELL := /bin/bash
GO    ?= go
BIN   ?= bin
CLANG ?= clang-14

# Privileged tests fail instead of skipping when this is set (CI runs as root).
export READYLINE_REQUIRE_PRIVILEGED ?= $(if $(filter 0,$(shell id -u)),1,)

# The build ledger of this make run (deploy/node/lib/build.sh): a file, new
# for each run and shared by its sub-makes, scripts and tests, of the cached
# binaries that a step of this run built or asked deploy/node to build.
# `node.sh tool --built NAME` answers only for those, so a step that uses a
# binary before the step that builds it fails on a warm machine as it would
# on a fresh one (deploy/node/test-build-order.sh checks that it does).
ifndef READYLINE_BUILD_LEDGER
export READYLINE_BUILD_LEDGER := $(shell mktemp -u /tmp/readyline-build-ledger.XXXXXXXX)
endif

.DEFAULT_GOAL := help

help: ## list targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_.-]+:.*## / {printf "  %-18s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

## ---- build

VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
# The daemon's build tags: grpcnotrace leaves out grpc's golang.org/x/net/trace
# (/debug/requests, unused), which links text/template; with it gone, the
# linker can drop the exported methods nothing calls (text/template's
# MethodByName keeps them all). deploy/e2e and the Dockerfile build alike.
DAEMON_TAGS ?= grpcnotrace

build: plugin ## build bin/readyline and bin/kubectl-readyline (no clang needed: bpf2go output is committed)
	CGO_ENABLED=0 $(GO) build -trimpath -tags "$(DAEMON_TAGS)" -ldflags "-X main.version=$(VERSION)" -o $(BIN)/readyline ./cmd/readyline

plugin: ## build the kubectl plugin only, bin/kubectl-readyline (kubectl readyline, once it is on the PATH)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-X main.version=$(VERSION)" -o $(BIN)/kubectl-readyline ./cmd/kubectl-readyline

# The plugin's release archives: one per platform kubectl users run, each
# with the binary and the license, and their SHA-256 sums.
PLUGIN_PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64
RELEASE_DIR ?= $(BIN)/release

plugin-release: ## release archives of kubectl-readyline for PLUGIN_PLATFORMS in bin/release, with sha256sums.txt
	rm -rf $(RELEASE_DIR) && mkdir -p $(RELEASE_DIR)
	set -e; for p in $(PLUGIN_PLATFORMS); do \
		os=$${p%/*} arch=$${p#*/} name=kubectl-readyline-$(VERSION)-$${p%/*}-$${p#*/}; exe=; \
		[ $$os != windows ] || exe=.exe; \
		mkdir -p $(RELEASE_DIR)/$$name; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags "-s -w -X main.version=$(VERSION)" \
			-o $(RELEASE_DIR)/$$name/kubectl-readyline$$exe ./cmd/kubectl-readyline; \
		cp LICENSE $(RELEASE_DIR)/$$name/; \
		tar -C $(RELEASE_DIR)/$$name -czf $(RELEASE_DIR)/$$name.tar.gz --owner=0 --group=0 --mtime=@0 .; \
		rm -rf $(RELEASE_DIR)/$$name; \
	done
	cd $(RELEASE_DIR) && sha256sum *.tar.gz > sha256sums.txt && cat sha256sums.txt

generate: ## regenerate bpf/vmlinux.h and the bpf2go output with Debian's clang 14, and readyline.dev's OpenAPI definitions
	./bpf/generate.sh
	cd exporter/podstartapi && $(GO) generate .

verify-generate: ## fail when the committed bpf2go objects are stale
	./bpf/generate.sh --verify

lint: ## gofmt + go vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags e2e ./deploy/e2e/... ./deploy/node/check/ ./collector/...
	$(GO) vet -tags sim ./deploy/sim/
	cd deploy/helm && $(GO) vet ./... && $(GO) vet -tags e2e ./...

## ---- test

# The Debian packages the tests need beyond deploy/node's own (which node.sh
# installs): clang 14 and libbpf for verify-generate, jq for the scripts,
# chromium for the waterfall page's headless-browser test, with a font for
# its text (installed without recommends, chromium brings none); iproute2
# for the ip command of collector's TCP tests (a network namespace and a
# veth pair).
TEST_PACKAGES = clang-14 llvm-14 libbpf-dev bpftool gcc libc6-dev make git jq curl chromium fonts-dejavu-core iproute2

# Go modules of their own under deploy/node/tools, with tests that the main
# module's ./... does not reach.
TOOL_MODULES = deploy/node/tools/imagepush

test-deps: ## install the Debian packages the tests need, when missing (root)
	@missing=$$(for p in $(TEST_PACKAGES); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing Debian packages: $$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

# go test's -timeout for the end-to-end tests on the local node. It bounds
# the tests only (go test's alarm runs while m.Run does): TestMain's setup
# (node.sh up, done already here) and its teardown and host check are
# outside it. The tests keep 10 min of it for the cleanups of those running
# when it is spent (deploy/e2e teardownReserve: the node's normal mode back,
# a CNI configuration restored), so they share a budget of 50 min: each
# test's context ends at its own deadline or the budget's end, whichever is
# first, and a run that goes long fails its last tests and still tears
# down, instead of dying in go test's panic with the node left up. Each
# test's own deadline is its limit, not a schedule: the serial ones add up
# to ~90 min, a healthy run of all of them takes a fraction.
# (make test in all, a healthy run: ~30 min; the worst case, with every
# bound reached, is this plus test-kind's 40 min and the steps around.)
E2E_TIMEOUT ?= 60m

test: test-deps lint verify-generate ## unit + privileged (root), privileged on Linux 6.1, end-to-end on the local node, then on kind
	./deploy/node/test-build-order.sh
	./deploy/demo/demo.sh stop-readyline # a demo left running would export the tests' pods too
	./deploy/node/node.sh jaeger-up
	$(GO) test -count=1 ./...
	$(BUDGET_BENCH)
	$(MAKE) test-tools
	$(MAKE) test-helm
	$(MAKE) test-kernel-6.1
	GUEST_ARCH=arm64 KERNEL_SKIP='$(ARM64_SKIP_QUICK)' ./deploy/kernel/run-6.1.sh
	# An older kubelet and containerd 1.7 first (the default node is back up after it).
	$(MAKE) test-compat
	KUBELET_TRACING=1 ./deploy/node/node.sh up
	# The cgroup v2-only VM node (deploy/cgroup2) with three of its four pods:
	# the crash loop's 5 min report does not fit CI's budget (make
	# test-cgroup2 runs all four). It deletes a VM node a killed run left first.
	$(MAKE) test-cgroup2 CGROUP2_TESTS='^TestCgroup2Node/(lifecycle-demo|poststart-demo|image-pull)$$$$'
	# The node's own checks (deploy/node/check: no readyline), then what
	# needs the node's kubelet (built by node.sh up) and runtime.
	READYLINE_REQUIRE_NODE=1 $(GO) test -count=1 -tags e2e ./deploy/node/check/
	READYLINE_REQUIRE_NODE=1 $(GO) test -count=1 -tags e2e -run 'TestIntegration(PodWatch|Runtime)$$' ./collector/
	./deploy/node/node.sh tool kubelet-arm64 >/dev/null
	READYLINE_REQUIRE_NODE=1 $(GO) test -count=1 -run '^TestIntegrationKubelet' ./collector/gofunc/
	./deploy/node/test-fresh-cache.sh
	./deploy/alerts/test.sh
	READYLINE_E2E_TEARDOWN=$${READYLINE_E2E_TEARDOWN:-1} $(GO) test -count=1 -tags e2e -timeout $(E2E_TIMEOUT) -v ./deploy/e2e/...
	$(MAKE) test-kind

# make test-compat: the older kubelet and containerd 1.7 under the same
# control plane. The subset: the node's versions, the kubelet's CRI calls seen
# by the uprobes against its own tracing, the lifecycle-demo's trace, a pull.
COMPAT_KUBELET ?= v1.34.4
COMPAT_CONTAINERD ?= v1.7.35
COMPAT_TESTS = ^(TestKernelCRICallsMatchKubeletTracing|TestLifecycleDemo|TestPullLargeImage)$$

# make test runs test-compat, which builds the one older kubelet it runs
# (cold: ~11 min; the others would add ~13 min more, which a cold CI machine
# cannot spare); make test-kubelets builds and checks every one.
test-compat: ## e2e subset on the local node with kubelet $(COMPAT_KUBELET) and containerd $(COMPAT_CONTAINERD), then the default node back
	./deploy/node/node.sh jaeger-up
	# The kubelets the next tests read: the node's default, for this host and
	# arm64 (READYLINE_REQUIRE_NODE=1 demands them), and the older one.
	./deploy/node/node.sh tool kubelet >/dev/null
	./deploy/node/node.sh tool kubelet-arm64 >/dev/null
	K8S_KUBELET_VERSION=$(COMPAT_KUBELET) ./deploy/node/node.sh tool kubelet >/dev/null
	READYLINE_REQUIRE_NODE=1 $(GO) test -count=1 -run 'TestIntegrationKubeletVersions|TestIntegrationCRIAPILayouts' ./collector/
	export K8S_KUBELET_VERSION=$(COMPAT_KUBELET) CONTAINERD_VERSION=$(COMPAT_CONTAINERD) KUBELET_TRACING=1; \
	./deploy/node/node.sh up && \
	READYLINE_REQUIRE_NODE=1 $(GO) test -count=1 -tags e2e -run '^TestLocalNodeReady$$' ./deploy/node/check/ && \
	READYLINE_E2E_TEARDOWN=0 $(GO) test -count=1 -tags e2e -timeout 20m -v -run '$(COMPAT_TESTS)' ./deploy/e2e/; rc=$$?; \
	unset K8S_KUBELET_VERSION CONTAINERD_VERSION; \
	./deploy/node/node.sh up || rc=1; exit $$rc

# Each older kubelet minor with a containerd: 1.7 under two of them, 2.x
# under the third.
COMPAT_MATRIX = v1.34.4/v1.7.35 v1.35.4/v2.4.2 v1.36.3/v1.7.35

test-compat-all: ## test-compat for each kubelet/containerd pair of COMPAT_MATRIX (builds the kubelets it lacks)
	set -e; for p in $(COMPAT_MATRIX); do $(MAKE) test-compat COMPAT_KUBELET=$${p%/*} COMPAT_CONTAINERD=$${p#*/}; done

# The older kubelets deploy/node builds (tools/kubelet-v1.X), by version.
KUBELETS_OLDER = $(shell awk '$$1 == "k8s.io/kubernetes" {print $$2}' deploy/node/tools/kubelet-v1.*/go.mod)

test-kubelets: ## every kubelet deploy/node knows (1.34-1.37), built as a release is, for this host and arm64, its CRI client found and read
	set -e; for v in "" $(KUBELETS_OLDER); do for t in kubelet kubelet-arm64; do \
		K8S_KUBELET_VERSION=$$v ./deploy/node/node.sh tool $$t >/dev/null; done; done
	READYLINE_REQUIRE_NODE=all $(GO) test -count=1 -run 'TestIntegrationKubeletVersions|TestIntegrationCRIAPILayouts' ./collector/
	READYLINE_REQUIRE_NODE=all $(GO) test -count=1 -run 'TestIntegrationKubeletBinary' ./collector/gofunc/

test-unit: ## unit and privileged tests only (no local node)
	$(GO) test -count=1 ./...
	$(BUDGET_BENCH)
	$(MAKE) test-tools
	$(MAKE) test-helm

test-tools: ## the tests of deploy/node's tool modules (TOOL_MODULES), which ./... does not reach
	set -e; for m in $(TOOL_MODULES); do (cd $$m && $(GO) vet ./... && $(GO) test -count=1 ./...); done

# deploy/helm is a module of its own: Helm's requirements would raise
# modules the daemon links in readyline's go.mod.
test-helm: ## the Helm chart: helm lint and helm template as Go tests, its objects against deploy/base's kustomize output
	cd deploy/helm && $(GO) test -count=1 ./...

test-kernel-6.1: ## privileged eBPF tests on Debian 12's Linux 6.1 (no uprobe_multi) under QEMU, see deploy/kernel (root)
	./deploy/kernel/run-6.1.sh

# make test-arm64: the same privileged tests, built for arm64, in an arm64
# guest (Debian 12's arm64 kernel and root, qemu-system-aarch64, TCG), and
# the static tests on every kubelet cross-built for arm64. make test runs the
# guest without the 2000 execs in a row (ARM64_SKIP_QUICK) and the static
# tests on the default kubelet's arm64 build.
ARM64_SKIP_QUICK = ^(TestIntegrationCRIAPILayouts|TestIntegrationKubeletVersions|TestIntegrationRapidExecsNoDrops)$$
# make test-cgroup2: a second node, on cgroup v2 only with the systemd
# driver (a VM, deploy/cgroup2), joined to the local node's control plane;
# readyline as the DaemonSet there traces the e2e subset with the same facts
# as the local node's readyline on the local node.
CGROUP2_TESTS ?= ^TestCgroup2Node$$

test-cgroup2: ## e2e subset on a cgroup v2-only node with the systemd driver (a QEMU VM joined to the local node, see deploy/cgroup2) (root)
	./deploy/node/node.sh jaeger-up
	KUBELET_TRACING=1 ./deploy/node/node.sh up
	./deploy/cgroup2/node-vm.sh up
	READYLINE_E2E_TEARDOWN=0 READYLINE_E2E_CGROUP2_NODE=readyline-cgroup2 $(GO) test -count=1 -tags e2e -timeout 30m -v \
		-run '$(CGROUP2_TESTS)' ./deploy/e2e/; rc=$$?; ./deploy/cgroup2/node-vm.sh down || rc=1; exit $$rc

test-arm64: ## privileged tests of bpf, collector, cmd/readyline in an arm64 guest (TCG), every kubelet cross-built for arm64 read (root)
	GUEST_ARCH=arm64 ./deploy/kernel/run-6.1.sh
	set -e; for v in "" $(KUBELETS_OLDER); do K8S_KUBELET_VERSION=$$v ./deploy/node/node.sh tool kubelet-arm64 >/dev/null; done
	READYLINE_REQUIRE_NODE=all $(GO) test -count=1 -run 'TestIntegrationKubeletVersions/arm64' ./collector/
	READYLINE_REQUIRE_NODE=all $(GO) test -count=1 -run 'TestIntegrationKubeletBinary/arm64' ./collector/gofunc/

# The per-event benchmarks fail over their budgets (correlator/perevent_bench_test.go):
# make test runs them too, 20000 events each (about a second).
BUDGET_BENCH = $(GO) test -count=1 -run '^$$' -bench 'Benchmark(ProcessEvent|ProbeRun|PodUpdate|ExpireStarting)$$' -benchtime 20000x ./correlator/

bench: ## Go benchmarks
	$(GO) test -run '^$$' -bench . -benchmem ./...

bench-node: ## what readyline costs on the local node, beside the kubelet and containerd: BENCH_MODE=steady (110 pods probed, 10 min), churn (10 rounds of 100 starts), or both
	./deploy/node/node.sh jaeger-up
	./deploy/node/node.sh up
	@case "$${BENCH_MODE:-all}" in all|steady|churn) ;; *) echo "BENCH_MODE=$$BENCH_MODE: want steady, churn or all" >&2; exit 2;; esac
	@failed=; \
	if [ "$${BENCH_MODE:-all}" != churn ]; then set -x; READYLINE_E2E_TEARDOWN=0 $(GO) test -count=1 -tags e2e -timeout 90m -run '^$$' \
		-bench BenchmarkNodeSteady -benchtime 1x ./deploy/e2e/ || failed="$$failed steady"; set +x; fi; \
	if [ "$${BENCH_MODE:-all}" != steady ]; then set -x; READYLINE_E2E_TEARDOWN=$${READYLINE_E2E_TEARDOWN:-0} $(GO) test -count=1 -tags e2e -timeout 90m -run '^$$' \
		-bench BenchmarkNodePodStarts -benchtime $${BENCH_ROUNDS:-10}x ./deploy/e2e/ || failed="$$failed churn"; set +x; fi; \
	if [ -n "$$failed" ]; then echo "bench-node: goals missed in:$$failed (see above and deploy/e2e/artifacts/bench-*.txt)" >&2; exit 1; fi

bench-cluster: ## readyline.dev at 100, 1000 and 5000 simulated nodes x 110 pods against a real kube-apiserver: list latency, readyline-api's memory and CPU, the API server's requests, an incident's Events reads
	$(GO) build -o bin/readyline-api ./cmd/readyline-api
	READYLINE_SIM_ETCD=$$(./deploy/node/node.sh tool etcd) \
	READYLINE_SIM_KUBE_APISERVER=$$(./deploy/node/node.sh tool kube-apiserver) \
	READYLINE_SIM_API=$(CURDIR)/bin/readyline-api \
		$(GO) test -count=1 -tags sim -timeout 40m -run '^$$' -bench BenchmarkClusterSim -benchtime 1x -v ./deploy/sim/

bench-overhead: build ## exec overhead of the process collector (ratio with/without)
	./collector/bench-overhead.sh

## ---- alerts

test-alerts: ## Prometheus rules of deploy/alerts: promtool check + unit tests (builds promtool once)
	./deploy/alerts/test.sh

## ---- demo

demo: ## local node + Jaeger + readyline on the host; start the seed's pods, print their waterfalls
	./deploy/demo/demo.sh up

demo-down: ## stop readyline, the local node and Jaeger
	./deploy/demo/demo.sh down

## ---- local node (deploy/node)

node-up: ## bring up the local single-node Kubernetes (idempotent)
	./deploy/node/node.sh up

node-down: ## stop the local node and clean up what it left on the host
	./deploy/node/node.sh down

node-status: ## components, PIDs, kubeconfig
	./deploy/node/node.sh status

jaeger-up: ## start Jaeger v2 on loopback (OTLP 4317/4318, query 16686)
	./deploy/node/node.sh jaeger-up

jaeger-down: ## stop Jaeger
	./deploy/node/node.sh jaeger-down

## ---- deploy

IMAGE         ?= localhost/readyline:dev
IMAGE_LDFLAGS  = -s -w -X main.version=$(VERSION)
IMAGE_DIR      = $(BIN)/image
# The platforms (OS/ARCH) of image-archive's image, one image index (mkimage
# -platform) from which containerd takes the node's. Each has its root file
# system in $(IMAGE_DIR)/rootfs-ARCH, but the host's: $(IMAGE_DIR)/rootfs.
IMAGE_PLATFORMS ?= linux/amd64 linux/arm64
IMAGE_HOST      = $(shell $(GO) env GOOS)/$(shell $(GO) env GOARCH)
image_rootfs    = $(IMAGE_DIR)/rootfs$(if $(filter $(IMAGE_HOST),$(1)),,-$(notdir $(1)))
KIND_CLUSTER  ?= readyline
KIND_CONFIG   ?= deploy/kind/cluster.yaml
JAEGER_UI_PORT ?= 16686

image: ## container image localhost/readyline:dev (docker build: needs a Docker engine)
	docker build --build-arg VERSION=$(VERSION) -t $(IMAGE) .

image-archive: ## the same image without Docker (deploy/node/mkimage), for IMAGE_PLATFORMS (amd64, arm64): $(IMAGE_DIR)/readyline.tar
	rm -rf $(IMAGE_DIR) && mkdir -p $(IMAGE_DIR)
	# For each platform, in $(IMAGE_DIR)/rootfs (the host's) or rootfs-ARCH:
	# the daemon; the aggregated API server (kubectl get podstarts), a
	# Deployment of the same image; CA certificates for OTLP over TLS, when
	# the host has them. The bpf objects of both architectures are committed.
	set -e; for pr in $(foreach p,$(IMAGE_PLATFORMS),$(p)=$(call image_rootfs,$(p))); do \
		p=$${pr%%=*} root=$${pr#*=}; \
		mkdir -p $$root/tmp $$root/etc/ssl/certs && chmod 1777 $$root/tmp; \
		CGO_ENABLED=0 GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) build -trimpath -tags "$(DAEMON_TAGS)" -ldflags "$(IMAGE_LDFLAGS)" -o $$root/readyline ./cmd/readyline; \
		CGO_ENABLED=0 GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) build -trimpath -ldflags "$(IMAGE_LDFLAGS)" -o $$root/readyline-api ./cmd/readyline-api; \
		[ ! -f /etc/ssl/certs/ca-certificates.crt ] || cp /etc/ssl/certs/ca-certificates.crt $$root/etc/ssl/certs/; \
	done
	CGO_ENABLED=0 $(GO) build -o $(IMAGE_DIR)/mkimage ./deploy/node/mkimage
	SOURCE_DATE_EPOCH=$$(git log -1 --format=%ct 2>/dev/null || echo 0) $(IMAGE_DIR)/mkimage \
		$(foreach p,$(IMAGE_PLATFORMS),-platform $(p)=$(call image_rootfs,$(p))) \
		-ref $(IMAGE) -o $(IMAGE_DIR)/readyline.tar \
		-entrypoint '["/readyline"]' -cmd '["run"]' -expose 9464/tcp \
		-label org.opencontainers.image.version=$(VERSION)

node-image: image-archive ## image-archive, imported into the local node
	./deploy/node/node.sh import-image $(IMAGE_DIR)/readyline.tar

# kind: a two-node cluster (deploy/kind/cluster.yaml) on this machine with no
# registry (deploy/kind/kind.sh: Debian's dockerd, a node image built from
# deploy/node's binaries); KIND_OFFICIAL=1 takes kind's own node image, the
# official Jaeger image and `docker build` instead (Docker and internet).
KIND_SH = KIND_CLUSTER=$(KIND_CLUSTER) KIND_CONFIG=$(KIND_CONFIG) KIND_OFFICIAL=$(KIND_OFFICIAL) ./deploy/kind/kind.sh
KIND_OFFICIAL ?=

kind-up: $(if $(KIND_OFFICIAL),image,image-archive) ## two-node kind cluster, readyline (DaemonSet) and Jaeger on it
	$(KIND_SH) up

kind-demo: plugin ## the seed's pods on the kind worker; prints their waterfalls (kubectl readyline explain) and where the traces are
	$(KIND_SH) demo

jaeger-ui: ## Jaeger's UI on kind, port-forwarded to localhost (Ctrl-C ends it)
	@echo "Jaeger UI: http://localhost:$(JAEGER_UI_PORT)/search?service=readyline"
	$(KIND_SH) kubectl -n readyline port-forward service/jaeger $(JAEGER_UI_PORT):16686

kind-down: ## delete the kind cluster, stop our dockerd, remove its image store; check the host is clean
	$(KIND_SH) down
	$(KIND_SH) check-clean

test-kind: ## end-to-end tests on a two-node kind cluster (brings it up, deletes it after)
	$(MAKE) kind-up
	# kind-down (and its check-clean) runs whatever the tests said.
	READYLINE_E2E_KIND=1 $(GO) test -count=1 -tags e2e -timeout 40m -v ./deploy/e2e/kind/...; rc=$$?; \
		(cd deploy/helm && READYLINE_E2E_KIND=1 $(GO) test -count=1 -tags e2e -timeout 25m -v ./kind/) || rc=1; \
		$(MAKE) kind-down && exit $$rc

.PHONY: image image-archive node-image kind-up kind-demo jaeger-ui kind-down test-kind

.PHONY: help build plugin plugin-release generate verify-generate lint test test-compat test-compat-all test-kubelets test-deps test-unit test-tools test-helm test-kernel-6.1 test-arm64 test-cgroup2 test-alerts bench bench-node bench-cluster bench-overhead node-up node-down node-status jaeger-up jaeger-down demo demo-down
