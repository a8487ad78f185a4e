#!/usr/bin/env bash
# kind.sh — readyline on a two-node kind cluster (control plane + worker).
#
#   kind.sh up          Docker, the kind cluster, readyline (DaemonSet) and
#                       Jaeger on it; idempotent; recovers from a killed run
#   kind.sh demo        the seed's pods on the worker, then their waterfalls
#                       from the worker's readyline and where the traces are
#   kind.sh down        delete the cluster; stop our dockerd and remove its
#                       image store, network and mounts (a dockerd we did not
#                       start is left running)
#   kind.sh check-clean exit non-zero if anything of ours remains on the host
#   kind.sh kubectl ARGS...  kubectl on the cluster
#   kind.sh node-image  only build (or find) the cached local node image
#   kind.sh docker-up | docker-down   only our dockerd (or the one that answers)
#   kind.sh docker ARGS...  docker on the engine the cluster runs on
#
# Two paths:
#   local (default)     no registry needed: Debian's dockerd started here, a
#                       node image built from what deploy/node builds
#                       (lib/nodeimage.sh), readyline's image from
#                       bin/image/readyline.tar (make image-archive), Jaeger's
#                       made from the Jaeger deploy/node builds
#   KIND_OFFICIAL=1     Docker and internet: kind's default image
#                       (kindest/node), `docker build` of readyline
#                       (localhost/readyline:dev) and the official Jaeger image
# Settings: KIND_CLUSTER (readyline), KIND_CONFIG (deploy/kind/cluster.yaml),
# KIND_STATE (/var/lib/readyline-kind), READYLINE_CACHE (/var/cache/readyline).
set -euo pipefail

KIND_SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$KIND_SCRIPT_DIR/../.." && pwd)
NODE_SH=$REPO_ROOT/deploy/node/node.sh
KIND_CLUSTER=${KIND_CLUSTER:-readyline}
KIND_CONFIG=${KIND_CONFIG:-$REPO_ROOT/deploy/kind/cluster.yaml}
KIND_STATE=${KIND_STATE:-/var/lib/readyline-kind}
KIND_OFFICIAL=${KIND_OFFICIAL:-}
READYLINE_CACHE=${READYLINE_CACHE:-/var/cache/readyline}
KUBECONFIG_FILE=$KIND_STATE/kubeconfig
READYLINE_ARCHIVE=$REPO_ROOT/bin/image/readyline.tar
READYLINE_IMAGE=localhost/readyline:dev
JAEGER_IMAGE=docker.io/jaegertracing/jaeger:2.12.0
PROMETHEUS_IMAGE=quay.io/prometheus/prometheus:v3.16.0
DEMO_NAMESPACE=readyline-demo
# RUN_DIR and LOG_DIR: where lib/common.sh keeps PID files and logs.
RUN_DIR=$KIND_STATE/run
LOG_DIR=$KIND_STATE/logs

# shellcheck source=../node/lib/common.sh
source "$REPO_ROOT/deploy/node/lib/common.sh"
# shellcheck source=../node/lib/build.sh
source "$REPO_ROOT/deploy/node/lib/build.sh"
# shellcheck source=../node/lib/images.sh
source "$REPO_ROOT/deploy/node/lib/images.sh"
# shellcheck source=lib/docker.sh
source "$KIND_SCRIPT_DIR/lib/docker.sh"
# shellcheck source=lib/nodeimage.sh
source "$KIND_SCRIPT_DIR/lib/nodeimage.sh"

K8S_VERSION=$(tools_version "$REPO_ROOT/deploy/node/tools/kubernetes" k8s.io/kubernetes)

# The host packages the local path needs (deploy/node's own come with its builds).
HOST_PACKAGES=(docker.io debootstrap jq gcc libc6-dev busybox-static)

# docker is Debian's client when ours runs (the one on PATH may be newer than
# the engine's API).
docker() {
	if [[ -x /usr/bin/docker ]]; then /usr/bin/docker "$@"; else command docker "$@"; fi
}

kind() { "$KIND" "$@"; }
kubectl() { "$KUBECTL" --kubeconfig "$KUBECONFIG_FILE" "$@"; }

cluster_exists() { kind get clusters 2>/dev/null | grep -qx "$KIND_CLUSTER"; }

with_kind_lock() {
	mkdir -p "$KIND_STATE"
	exec 9>"$KIND_STATE/kind.lock"
	flock -w 3600 9 || die "timed out waiting for $KIND_STATE/kind.lock"
	"$@"
}

tools() {
	KIND=$("$NODE_SH" tool kind)
	KUBECTL=$("$NODE_SH" tool kubectl)
}

kind_up() {
	need_root
	local t0=$SECONDS image_id
	tools
	if [[ -n $KIND_OFFICIAL ]]; then
		[[ -n ${DOCKER_HOST:-} ]] || export DOCKER_HOST=unix:///var/run/docker.sock
		docker_answers "$DOCKER_HOST" || die "KIND_OFFICIAL=1 needs a running Docker engine"
		cluster_exists || kind create cluster --name "$KIND_CLUSTER" --config "$KIND_CONFIG" --kubeconfig "$KUBECONFIG_FILE"
		kind load docker-image --name "$KIND_CLUSTER" "$READYLINE_IMAGE"
		image_id=$(docker image inspect --format '{{.Id}}' "$READYLINE_IMAGE")
	else
		install_debian_packages "${HOST_PACKAGES[@]}"
		[[ -f $READYLINE_ARCHIVE ]] || die "$READYLINE_ARCHIVE is missing: run make image-archive (make kind-up does)"
		local image_dir ref
		image_dir=$(node_image)
		docker_select
		docker_network
		ref=$(node_image_load "$image_dir")
		if ! cluster_exists; then
			local t1=$SECONDS
			kind create cluster --name "$KIND_CLUSTER" --config "$KIND_CONFIG" --image "$ref" \
				--kubeconfig "$KUBECONFIG_FILE" --wait 0s
			log "kind create cluster took $((SECONDS - t1))s"
		fi
		# readyline.tar is an image index (linux/amd64 and linux/arm64): kind
		# runs `ctr images import --all-platforms` on each node, which stores
		# every platform's blobs (the archive has them all, none is missing)
		# and unpacks the node's only.
		kind load image-archive --name "$KIND_CLUSTER" "$READYLINE_ARCHIVE"
		image_id=sha256:$(sha256sum "$READYLINE_ARCHIVE" | cut -d' ' -f1)
		kind load image-archive --name "$KIND_CLUSTER" "$(jaeger_archive)"
		kind load image-archive --name "$KIND_CLUSTER" "$(prometheus_archive)"
	fi
	kubectl wait --for=condition=Ready node --all --timeout=300s >/dev/null
	kubectl apply -k "$REPO_ROOT/deploy/kind" >/dev/null
	# kind load put a rebuilt readyline on the nodes; this restarts its pods.
	kubectl -n readyline patch daemonset readyline --type merge -p "$(image_patch "$image_id")" >/dev/null
	# The rules are deploy/alerts', outside deploy/kind/prometheus.
	kubectl kustomize --load-restrictor=LoadRestrictionsNone "$REPO_ROOT/deploy/kind/prometheus" | kubectl apply -f - >/dev/null
	kubectl -n readyline rollout status deployment/jaeger --timeout=300s
	kubectl -n readyline rollout status deployment/prometheus --timeout=300s
	kubectl -n readyline rollout status daemonset/readyline --timeout=300s
	log "kind cluster $KIND_CLUSTER is up in $((SECONDS - t0))s: $(kubectl get nodes --no-headers | awk '{printf "%s ", $1}')"
	log "kubectl: deploy/kind/kind.sh kubectl ...  (or kubectl --kubeconfig $KUBECONFIG_FILE)"
}

# tool_archive TOOL REF PATH USER [MKIMAGE ARGS...] prints an image archive
# named REF holding the binary that deploy/node builds as TOOL (node.sh tool)
# at PATH, its entrypoint, run as USER, making it first (cached by the
# binary's path and mkimage's source).
tool_archive() {
	local tool=$1 ref=$2 path=$3 user=$4
	shift 4
	local bin key dir
	bin=$("$NODE_SH" tool "$tool")
	key=$( (echo "$bin $ref $path $user $*" && sha256sum "$REPO_ROOT/deploy/node/mkimage"/*.go) | key_of)
	dir=$READYLINE_CACHE/kind-$tool-$key
	if [[ ! -f $dir/image.tar ]]; then
		rm -rf "$dir" && mkdir -p "$dir/rootfs/${path%/*}" "$dir/rootfs/tmp"
		chmod 1777 "$dir/rootfs/tmp"
		install -m 0755 "$bin" "$dir/rootfs/$path"
		(cd "$REPO_ROOT" && CGO_ENABLED=0 go build -trimpath -o "$dir/mkimage" ./deploy/node/mkimage) || die "building mkimage failed"
		SOURCE_DATE_EPOCH=0 "$dir/mkimage" -rootfs "$dir/rootfs" -ref "$ref" -o "$dir/image.tar.tmp" \
			-entrypoint "[\"/$path\"]" -user "$user" "$@" >&2 ||
			die "writing the $tool image failed"
		mv "$dir/image.tar.tmp" "$dir/image.tar"
		rm -rf "$dir/rootfs" "$dir/mkimage"
	fi
	echo "$dir/image.tar"
}

# jaeger_archive: the Jaeger deploy/node builds, in the official image's
# layout and name (entrypoint /cmd/jaeger/jaeger-linux, uid 10001, all-in-one
# on every interface).
jaeger_archive() {
	tool_archive jaeger "$JAEGER_IMAGE" cmd/jaeger/jaeger-linux 10001 -env JAEGER_LISTEN_HOST=0.0.0.0
}

# prometheus_archive: the Prometheus deploy/node builds, in the official
# image's layout and name (entrypoint /bin/prometheus, uid nobody); the
# Deployment of deploy/kind/prometheus gives it all its flags.
prometheus_archive() {
	tool_archive prometheus "$PROMETHEUS_IMAGE" bin/prometheus 65534
}

# DEMO_PODS are the pods `demo` starts and explains (deploy/kind/demo-local).
DEMO_PODS=(lifecycle-demo poststart-demo)

# pod_done NAME succeeds when the demo pod is Ready or Failed.
pod_done() {
	local out
	out=$(kubectl -n "$DEMO_NAMESPACE" get pod "$1" -o jsonpath='{.status.phase} {.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null) || return 1
	[[ $out == Failed* || $out == *True ]]
}

# readyline_pod NODE prints the name of the readyline pod on NODE.
readyline_pod() {
	kubectl -n readyline get pod -l app.kubernetes.io/name=readyline --field-selector "spec.nodeName=$1" \
		-o jsonpath='{.items[0].metadata.name}'
}

# explain POD prints the waterfall of demo pod POD, as users read it:
# kubectl readyline explain (make kind-demo builds bin/kubectl-readyline)
# finds the pod's node and asks the readyline there.
explain() {
	"$REPO_ROOT/bin/kubectl-readyline" --kubeconfig "$KUBECONFIG_FILE" explain -n "$DEMO_NAMESPACE" "$1"
}

kind_demo() {
	local demo=$REPO_ROOT/deploy/kind/demo-local worker p uid
	[[ -n $KIND_OFFICIAL ]] && demo=$REPO_ROOT/deploy/kind/demo
	worker=$(kubectl get nodes -l '!node-role.kubernetes.io/control-plane' -o jsonpath='{.items[0].metadata.name}')
	[[ -n $worker ]] || die "the cluster has no worker: make kind-up first"
	if kubectl get namespace "$DEMO_NAMESPACE" >/dev/null 2>&1; then
		log "deleting the previous demo namespace"
		kubectl delete namespace "$DEMO_NAMESPACE" --wait=true --timeout=120s >/dev/null
	fi
	kubectl kustomize --load-restrictor=LoadRestrictionsNone "$demo" | kubectl apply -f - >/dev/null
	log "started ${DEMO_PODS[*]} in namespace $DEMO_NAMESPACE on $worker"
	for p in "${DEMO_PODS[@]}"; do
		wait_until 180 "$p" pod_done "$p" || warn "$p did not become Ready or Failed"
	done
	echo
	for p in "${DEMO_PODS[@]}"; do
		wait_until 90 "the timeline of $p" explain "$p" || {
			warn "no timeline for $p on $worker"
			continue
		}
		echo "== $p, from the readyline on $worker ($(readyline_pod "$worker"))"
		explain "$p"
	done
	uid=$(kubectl -n "$DEMO_NAMESPACE" get pod lifecycle-demo -o jsonpath='{.metadata.uid}')
	cat <<MSG
Traces are in the cluster's Jaeger (trace id = pod UID without dashes):
  make jaeger-ui   then http://localhost:16686/trace/${uid//-/}
  or: deploy/kind/kind.sh kubectl -n readyline port-forward service/jaeger 16686 &
      curl -s http://127.0.0.1:16686/api/traces/${uid//-/} | jq '.data[0].spans[] | {operationName, duration}'
Waterfall: export KUBECONFIG=$KUBECONFIG_FILE PATH=$REPO_ROOT/bin:\$PATH
           kubectl readyline explain -n $DEMO_NAMESPACE <pod>   (list: kubectl readyline list -A)
           kubectl readyline explain --web -n $DEMO_NAMESPACE lifecycle-demo   (the page, in a browser)
Metrics:   deploy/kind/kind.sh kubectl -n readyline port-forward pod/$(readyline_pod "$worker") 9464 &  then curl -s 127.0.0.1:9464/metrics
Delete it all: make kind-down
MSG
}

# docker_host_of_cluster sets DOCKER_HOST to the engine kind_up used.
docker_host_of_cluster() {
	if [[ -z $KIND_OFFICIAL && $(cat "$DOCKER_MODE_FILE" 2>/dev/null) == own ]]; then
		export DOCKER_HOST=$DOCKER_SOCK
	else
		export DOCKER_HOST=${DOCKER_HOST:-unix:///var/run/docker.sock}
	fi
}

kind_down() {
	need_root
	tools
	docker_paths
	if [[ -n $KIND_OFFICIAL ]] || [[ $(cat "$DOCKER_MODE_FILE" 2>/dev/null) == external ]]; then
		[[ -n ${DOCKER_HOST:-} ]] || export DOCKER_HOST=unix:///var/run/docker.sock
		kind delete cluster --name "$KIND_CLUSTER" --kubeconfig "$KUBECONFIG_FILE"
	elif is_running dockerd; then
		export DOCKER_HOST=$DOCKER_SOCK
		kind delete cluster --name "$KIND_CLUSTER" --kubeconfig "$KUBECONFIG_FILE"
	fi
	docker_stop
	rm -f "$KUBECONFIG_FILE"
	log "kind cluster $KIND_CLUSTER deleted"
}

kind_check_clean() {
	local problems line
	problems=$(docker_check_clean)
	[[ -e $KUBECONFIG_FILE ]] && problems+=$'\n'"kubeconfig $KUBECONFIG_FILE exists"
	problems=$(sed '/^$/d' <<<"$problems")
	if [[ -n $problems ]]; then
		echo "not clean:" >&2
		while read -r line; do echo "  $line"; done <<<"$problems" >&2
		return 1
	fi
	echo "clean: no dockerd, container, network, image store, mount or kubeconfig of deploy/kind left"
}

usage() {
	sed -n '2,26s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
	exit 2
}

main() {
	case ${1:-} in
	up) with_kind_lock kind_up ;;
	down) with_kind_lock kind_down ;;
	demo) tools && kind_demo ;;
	check-clean) kind_check_clean ;;
	kubectl) tools && kubectl "${@:2}" ;;
	docker) docker_paths && docker_host_of_cluster && docker "${@:2}" ;;
	docker-up) need_root && with_kind_lock docker_select && echo "DOCKER_HOST=$DOCKER_HOST" ;;
	docker-down) need_root && with_kind_lock docker_stop ;;
	node-image) need_root && install_debian_packages "${HOST_PACKAGES[@]}" && node_image ;;
	*) usage ;;
	esac
}

main "$@"
