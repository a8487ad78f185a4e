#!/usr/bin/env bash
# demo.sh — readyline on a real local node: brings up the node and Jaeger
# (deploy/node), runs readyline as the DaemonSet users deploy (deploy/demo:
# deploy/local's privileged DaemonSet with a short start timeout), starts
# the seed's example pods and prints the waterfall of each pod start, read
# with `kubectl readyline explain`, and where its trace is.
#
#   demo.sh up     (make demo)       everything above; idempotent
#   demo.sh down   (make demo-down)  stop readyline, the node and Jaeger
#   demo.sh stop-readyline           remove only the demo's readyline (make test
#                                    does: its daemon would export the same traces)
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/../.." && pwd)
NODE_SH=$REPO_ROOT/deploy/node/node.sh
EXAMPLES=$REPO_ROOT/deploy/examples
NODE_DIR=${NODE_DIR:-/var/lib/readyline-node}
# RUN_DIR and LOG_DIR are where lib/common.sh keeps PID files and logs.
# shellcheck disable=SC2034
RUN_DIR=$NODE_DIR/run
LOG_DIR=$NODE_DIR/logs
PLUGIN=$REPO_ROOT/bin/kubectl-readyline
ARCHIVE=$REPO_ROOT/bin/image/readyline.tar
NAMESPACE=${DEMO_NAMESPACE:-readyline-demo}
# deploy/demo's DaemonSet is in the host's network namespace (deploy/local).
METRICS_ADDR=127.0.0.1:9464
JAEGER_QUERY=http://127.0.0.1:16686
# deploy/demo/kustomization.yaml: READYLINE_START_TIMEOUT, READYLINE_RECORD
# (a file in the directory deploy/demo/record.yaml mounts from here).
START_TIMEOUT=40s
RECORDING=$NODE_DIR/demo/events.jsonl

# shellcheck source=../node/lib/common.sh
source "$REPO_ROOT/deploy/node/lib/common.sh"

# KUBECTL is the kubectl node.sh built (the preinstalled one is too old for
# watches), set by demo_up once node.sh up has built it.
KUBECTL=

kubectl() {
	"$KUBECTL" --kubeconfig "$NODE_DIR/admin.kubeconfig" "$@"
}

readyline_explain() {
	"$PLUGIN" --kubeconfig "$NODE_DIR/admin.kubeconfig" explain "$@"
}

pod_watch_synced() {
	kubectl -n readyline logs daemonset/readyline 2>/dev/null | grep -q '"pod watch synced"'
}

# start_readyline deploys deploy/demo with the image just built, imported
# into the node's containerd (no registry).
start_readyline() {
	# A host process from an earlier demo would export the same traces.
	stop_process readyline 15
	log "readyline: make node-image, kubectl apply -k deploy/demo"
	make -C "$REPO_ROOT" --no-print-directory node-image >/dev/null
	kubectl apply -k "$REPO_ROOT/deploy/demo" >/dev/null
	# A rebuilt image restarts the pod.
	kubectl -n readyline patch daemonset readyline --type merge -p "$(image_patch "$(sha256sum "$ARCHIVE" | cut -d' ' -f1)")" >/dev/null
	kubectl -n readyline rollout status daemonset/readyline --timeout=180s >/dev/null ||
		die "readyline's DaemonSet did not become ready: kubectl -n readyline describe pods"
	wait_until 30 "readyline's pod watch" pod_watch_synced ||
		die "readyline's pod watch did not sync: kubectl -n readyline logs daemonset/readyline"
}

# stop_readyline removes the demo's DaemonSet (and waits for its pod to
# end) when the node's API server runs and answers, and a host readyline of
# an earlier demo. Without a node there is nothing to remove, and nothing is
# built for it.
stop_readyline() {
	stop_process readyline 15
	is_running kube-apiserver || return 0
	KUBECTL=$("$NODE_SH" tool kubectl)
	kubectl get --raw /readyz >/dev/null 2>&1 || return 0
	kubectl delete -k "$REPO_ROOT/deploy/demo" --ignore-not-found --wait=true --timeout=120s >/dev/null
}

# pod_done NAME succeeds when the pod is Ready or Failed.
pod_done() {
	local out
	out=$(kubectl -n "$NAMESPACE" get pod "$1" -o jsonpath='{.status.phase} {.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null) || return 1
	[[ $out == Failed* || $out == *True ]]
}

demo_up() {
	need_root
	log "building readyline and kubectl-readyline"
	make -C "$REPO_ROOT" --no-print-directory build >/dev/null
	"$NODE_SH" up
	"$NODE_SH" jaeger-up
	KUBECTL=$("$NODE_SH" tool kubectl)
	start_readyline

	if kubectl get namespace "$NAMESPACE" >/dev/null 2>&1; then
		log "deleting the previous demo namespace"
		kubectl delete namespace "$NAMESPACE" --wait=true --timeout=120s >/dev/null
	fi
	kubectl create namespace "$NAMESPACE" >/dev/null
	local pods=(lifecycle-demo poststart-demo image-pull init-container-failure-never
		init-container-wait-for-service init-container-failure-retry)
	for f in lifecycle-demo poststart-demo image-pull init-failure-never init-wait-for-service init-failure-retry; do
		kubectl -n "$NAMESPACE" apply -f "$EXAMPLES/$f.yaml" >/dev/null
	done
	log "applied the examples in namespace $NAMESPACE; the Service init-container-wait-for-service waits for comes in 8 s"
	sleep 8
	kubectl -n "$NAMESPACE" apply -f "$EXAMPLES/init-dependency-service.yaml" >/dev/null

	log "waiting for the pod starts to end (the retry example ends as a timeout after $START_TIMEOUT)"
	local p
	for p in "${pods[@]}"; do
		[[ $p == init-container-failure-retry ]] && continue
		wait_until 180 "$p" pod_done "$p" || warn "$p did not become Ready or Failed"
	done
	echo
	for p in "${pods[@]}"; do
		wait_until 90 "the timeline of $p" readyline_explain -n "$NAMESPACE" "$p" ||
			{ warn "no timeline for $p"; continue; }
		readyline_explain -n "$NAMESPACE" "$p"
	done
	cat <<MSG
Traces are in Jaeger (trace id = pod UID without dashes), e.g.:
  uid=\$($KUBECTL --kubeconfig $NODE_DIR/admin.kubeconfig -n $NAMESPACE get pod lifecycle-demo -o jsonpath='{.metadata.uid}')
  curl -s $JAEGER_QUERY/api/traces/\${uid//-/} | jq '.data[0].spans[] | {operationName, duration}'
  curl -s '$JAEGER_QUERY/api/traces?service=readyline&limit=20' | jq '.data[].traceID'
Metrics:   curl -s http://$METRICS_ADDR/metrics | grep readyline_
Waterfall: export KUBECONFIG=$NODE_DIR/admin.kubeconfig PATH=$REPO_ROOT/bin:\$PATH
           kubectl readyline explain -n $NAMESPACE <pod>   (list: kubectl readyline list -n $NAMESPACE)
           kubectl readyline explain --web -n $NAMESPACE lifecycle-demo   (the page, in a browser)
Logs:      kubectl -n readyline logs daemonset/readyline; the event recording: $RECORDING
           ($REPO_ROOT/bin/readyline replay $RECORDING)
Stop it all: make demo-down
MSG
}

demo_down() {
	need_root
	stop_readyline
	"$NODE_SH" jaeger-down
	"$NODE_SH" down
}

case ${1:-} in
up) demo_up ;;
down) demo_down ;;
stop-readyline) need_root && stop_readyline ;;
*)
	sed -n '2,10s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
	exit 2
	;;
esac
