#!/usr/bin/env bash
# node.sh — a real single-node Kubernetes, its own image registry and a real Jaeger
# on this machine, without Docker. See deploy/node/README.md.
#
#   node.sh up            start (or reuse) the node and its registry on 127.0.0.1:5000;
#                         recovers from a killed previous run
#   node.sh down          stop what up started and leave the host as it was
#   node.sh status        components, PIDs, kubeconfig, Jaeger and registry URLs
#   node.sh jaeger-up     start (or reuse) Jaeger v2 on 127.0.0.1
#   node.sh jaeger-down   stop Jaeger
#   node.sh build         only build/cache the binaries (also builds Jaeger)
#   node.sh restart-kubelet  stop and start the kubelet alone (its pods keep running)
#   node.sh outage COMPONENT SECONDS  stop kube-apiserver or containerd, wait, start it
#                         again (for fault tests: the pods keep running)
#   node.sh import-image FILE  import an image archive into the node's containerd
#   node.sh tool [--built] NAME  print the path of a binary node.sh builds (kubectl,
#                         kubelet, crictl, jaeger, promtool, prometheus, kind, etcd, registry, ...), building it first
#                         when it is missing (--built: fail instead)
# KUBELET_TRACING=1 node.sh up: the kubelet sends its own traces to the local
# Jaeger (a running node's kubelet is restarted to take it).
# NODE_PIDNS=1 node.sh up: containerd, the kubelet and every pod run in a PID
# namespace of their own, as on a kind node (a node in the other mode restarts).
#   node.sh check-clean [--with-jaeger]
#                         exit non-zero if anything the node leaves on the host remains
# Many settings below are only read by render (lib/common.sh) through @NAME@
# placeholders in config/*.in, which shellcheck cannot see.
# shellcheck disable=SC2034
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# Go modules that pin the Kubernetes and Jaeger builds (two modules: see
# tools/README.md).
K8S_TOOLS=$SCRIPT_DIR/tools/kubernetes
JAEGER_TOOLS=$SCRIPT_DIR/tools/jaeger
# etcd's server module has replace directives too (for kind's etcd image: the
# local node runs Debian's etcd-server).
ETCD_TOOLS=$SCRIPT_DIR/tools/etcd
# The image registry the node pulls from (lib/registry.sh).
REGISTRY_TOOLS=$SCRIPT_DIR/tools/registry
# Our own tool that fills it (its own module: go-containerregistry stays out
# of readyline's go.mod).
IMAGEPUSH_TOOLS=$SCRIPT_DIR/tools/imagepush
CONFIG_SRC=$SCRIPT_DIR/config
REPO_ROOT=$(cd "$SCRIPT_DIR/../.." && pwd)

# Everything the node writes lives in NODE_DIR; built binaries in READYLINE_CACHE.
NODE_DIR=${NODE_DIR:-/var/lib/readyline-node}
READYLINE_CACHE=${READYLINE_CACHE:-/var/cache/readyline}

# Versions. Kubernetes and Jaeger come from the tools modules' go.mod.
# CONTAINERD_VERSION=v1.7.35 runs containerd 1.7 (config version 2,
# config/containerd-v1.toml.in) instead; K8S_KUBELET_VERSION=v1.34.4 an older
# kubelet (tools/kubelet-v1.34) under the same control plane.
CONTAINERD_VERSION=${CONTAINERD_VERSION:-v2.4.2}
CRICTL_VERSION=v1.37.0
COREDNS_VERSION=v1.15.0
# Prometheus 3.16.0 (Prometheus publishes v3.X.Y as Go module v0.3XX.Y): promtool
# for deploy/alerts.
PROMETHEUS_VERSION=v0.316.0
# kind, for deploy/kind (the node image there is built from these binaries).
KIND_VERSION=v0.33.0

# Network layout of the node.
BRIDGE=readyline0
CNI_NETWORK=readyline
POD_CIDR=10.244.0.0/16
SERVICE_CIDR=10.96.0.0/16
KUBERNETES_SERVICE_IP=10.96.0.1
CLUSTER_DNS_IP=10.96.0.10
CLUSTER_DOMAIN=cluster.local

# Image references of the locally built images, imported into containerd (the
# node's registry serves them too, see lib/registry.sh).
PAUSE_IMAGE=localhost/pause:local
COREDNS_IMAGE=localhost/coredns:$COREDNS_VERSION

# Jaeger endpoints (all on loopback, see config/jaeger.yaml).
JAEGER_QUERY_URL=http://127.0.0.1:16686
JAEGER_OTLP_GRPC=127.0.0.1:4317
JAEGER_OTLP_HTTP=http://127.0.0.1:4318
JAEGER_HEALTH_URL=http://127.0.0.1:13133/status

# shellcheck source=lib/common.sh
source "$SCRIPT_DIR/lib/common.sh"
# shellcheck source=lib/build.sh
source "$SCRIPT_DIR/lib/build.sh"
# shellcheck source=lib/images.sh
source "$SCRIPT_DIR/lib/images.sh"
# shellcheck source=lib/pki.sh
source "$SCRIPT_DIR/lib/pki.sh"
# shellcheck source=lib/host.sh
source "$SCRIPT_DIR/lib/host.sh"
# shellcheck source=lib/registry.sh
source "$SCRIPT_DIR/lib/registry.sh"
# shellcheck source=lib/components.sh
source "$SCRIPT_DIR/lib/components.sh"
# shellcheck source=lib/pidns.sh
source "$SCRIPT_DIR/lib/pidns.sh"

set_paths() {
	K8S_VERSION=$(tools_version "$K8S_TOOLS" k8s.io/kubernetes)
	JAEGER_VERSION=$(tools_version "$JAEGER_TOOLS" github.com/jaegertracing/jaeger)
	ETCD_VERSION=$(tools_version "$ETCD_TOOLS" go.etcd.io/etcd/server/v3)
	REGISTRY_VERSION=$(tools_version "$REGISTRY_TOOLS" github.com/distribution/distribution/v3)
	[[ -n $K8S_VERSION && -n $JAEGER_VERSION && -n $ETCD_VERSION && -n $REGISTRY_VERSION ]] || die "cannot read the versions from $SCRIPT_DIR/tools/*/go.mod"

	[[ $CONTAINERD_VERSION =~ ^v[12]\.[0-9]+\.[0-9]+$ ]] || die "CONTAINERD_VERSION must be v1.X.Y or v2.X.Y, got '$CONTAINERD_VERSION'"
	CONTAINERD_CONFIG_IN=$CONFIG_SRC/containerd.toml.in
	[[ $CONTAINERD_VERSION == v1.* ]] && CONTAINERD_CONFIG_IN=$CONFIG_SRC/containerd-v1.toml.in
	CONTAINERD_DIR=$READYLINE_CACHE/containerd-$CONTAINERD_VERSION
	CRICTL_DIR=$READYLINE_CACHE/cri-tools-$CRICTL_VERSION
	COREDNS_DIR=$READYLINE_CACHE/coredns-$COREDNS_VERSION
	K8S_DIR=$READYLINE_CACHE/kubernetes-$K8S_VERSION
	JAEGER_DIR=$READYLINE_CACHE/jaeger-$JAEGER_VERSION
	PROMTOOL_DIR=$READYLINE_CACHE/promtool-$PROMETHEUS_VERSION
	PROMETHEUS_DIR=$READYLINE_CACHE/prometheus-$PROMETHEUS_VERSION
	ETCD_CACHE_DIR=$READYLINE_CACHE/etcd-$ETCD_VERSION
	KIND_DIR=$READYLINE_CACHE/kind-$KIND_VERSION
	REGISTRY_DIR=$READYLINE_CACHE/distribution-$REGISTRY_VERSION
	KUBECTL=$K8S_DIR/bin/kubectl
	set_kubelet_version

	LOG_DIR=$NODE_DIR/logs
	RUN_DIR=$NODE_DIR/run
	PKI_DIR=$NODE_DIR/pki
	CONF_DIR=$NODE_DIR/config
	HOST_DIR=$NODE_DIR/host
	ETCD_DIR=$NODE_DIR/etcd
	CONTAINERD_ROOT=$NODE_DIR/containerd/root
	CONTAINERD_STATE=$NODE_DIR/containerd/state
	CONTAINERD_SOCK=$NODE_DIR/containerd/containerd.sock
	RUNC_ROOT=$NODE_DIR/runc
	KUBELET_DIR=$NODE_DIR/kubelet
	CNI_DIR=$NODE_DIR/cni
	CNI_BIN_DIR=$NODE_DIR/cnibin
	IMAGES_DIR=$NODE_DIR/images
	JAEGER_STATE=$NODE_DIR/jaeger
	REGISTRY_STORAGE=$NODE_DIR/registry
	REGISTRY_HOSTS_DIR=$CONF_DIR/certs.d
	ADMIN_KUBECONFIG=$NODE_DIR/admin.kubeconfig

	NODE_NAME=$(hostname)
	NODE_IP=${NODE_IP:-$(primary_ipv4)}
	[[ -n $NODE_IP ]] || die "cannot determine the primary IPv4 address (set NODE_IP)"
}

# set_kubelet_version sets what the node's kubelet is: K8S_KUBELET_VERSION
# (default: the control plane's K8S_VERSION); an older one is built alone from
# tools/kubelet-v1.X, whose go.mod must pin exactly that version.
set_kubelet_version() {
	KUBELET_VERSION=${K8S_KUBELET_VERSION:-$K8S_VERSION}
	KUBELET_TOOLS=$K8S_TOOLS KUBELET_CACHE_DIR=$K8S_DIR KUBELET_BIN=$K8S_DIR/bin/kubelet
	# The same kubelet built for arm64 (tool kubelet-arm64), read by the
	# static tests: this node runs the host's.
	KUBELET_ARM64_DIR=$READYLINE_CACHE/kubelet-$KUBELET_VERSION-arm64
	[[ $KUBELET_VERSION == "$K8S_VERSION" ]] && return 0
	[[ $KUBELET_VERSION =~ ^v1\.[0-9]+\.[0-9]+$ ]] || die "K8S_KUBELET_VERSION must be v1.X.Y, got '$KUBELET_VERSION'"
	KUBELET_TOOLS=$SCRIPT_DIR/tools/kubelet-${KUBELET_VERSION%.*}
	local known pinned
	known=$(cd "$SCRIPT_DIR/tools" && for d in kubelet-v1.*; do [[ -f $d/go.mod ]] && tools_version "$d" k8s.io/kubernetes; done | tr '\n' ' ')
	[[ -f $KUBELET_TOOLS/go.mod ]] || die "no kubelet $KUBELET_VERSION: node.sh builds $K8S_VERSION and ${known:-no other} (tools/kubelet-v1.X, see tools/README.md)"
	pinned=$(tools_version "$KUBELET_TOOLS" k8s.io/kubernetes)
	[[ $pinned == "$KUBELET_VERSION" ]] || die "no kubelet $KUBELET_VERSION: $KUBELET_TOOLS pins $pinned"
	KUBELET_CACHE_DIR=$READYLINE_CACHE/kubelet-$KUBELET_VERSION
	KUBELET_BIN=$KUBELET_CACHE_DIR/bin/kubelet
}

# primary_ipv4 prints the source address of the default route.
primary_ipv4() {
	ip -4 route get 1.1.1.1 2>/dev/null | awk '{for (i = 1; i < NF; i++) if ($i == "src") {print $(i + 1); exit}}'
}

# with_lock runs "$@" holding $NODE_DIR/node.lock on fd 9, so two node.sh runs
# never interleave. Processes started by start_process close fd 9.
with_lock() {
	mkdir -p "$NODE_DIR"
	exec 9>"$NODE_DIR/node.lock"
	if ! flock -n 9; then
		log "another node.sh holds $NODE_DIR/node.lock, waiting"
		flock -w 3600 9 || die "timed out waiting for $NODE_DIR/node.lock"
	fi
	"$@"
}

usage() {
	# The header comment, up to the shellcheck note.
	sed -n '2,/^# Many settings/{/^# Many settings/d;s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}"
	exit 2
}

main() {
	local cmd=${1:-}
	[[ -n $cmd ]] || usage
	set_paths
	case $cmd in
	up) need_root && with_lock node_up ;;
	down) need_root && with_lock node_down ;;
	status) node_status ;;
	jaeger-up) need_root && with_lock jaeger_up ;;
	jaeger-down) need_root && with_lock jaeger_down ;;
	build) need_root && with_lock build_all ;;
	restart-kubelet) need_root && with_lock restart_kubelet ;;
	outage) need_root && with_lock outage "${@:2}" ;;
	import-image) need_root && with_lock import_image_file "${2:-}" ;;
	check-clean) host_check_clean "${@:2}" ;;
	tool) tool "${@:2}" ;;
	*) usage ;;
	esac
}

main "$@"
