#!/usr/bin/env bash
# demo.sh — readyline on a real local node: brings up the node and Jaeger
# (deploy/node), runs readyline on the host, starts the seed's example pods
# and prints the waterfall of each pod start and where its trace is.
#
#   demo.sh up     (make demo)       everything above; idempotent
#   demo.sh down   (make demo-down)  stop readyline, the node and Jaeger
#   demo.sh stop-readyline           stop only the demo's readyline (make test
#                                    does: its daemons would export the same traces)
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
READYLINE=$REPO_ROOT/bin/readyline
NAMESPACE=${DEMO_NAMESPACE:-readyline-demo}
API_ADDR=127.0.0.1:9465
METRICS_ADDR=127.0.0.1:9464
JAEGER_QUERY=http://127.0.0.1:16686
# A pod start not Ready by then is reported as a timeout (the retry example
# never becomes Ready: this keeps the demo short).
START_TIMEOUT=${DEMO_START_TIMEOUT:-40s}

# shellcheck source=../node/lib/common.sh
source "$REPO_ROOT/deploy/node/lib/common.sh"

# KUBECTL is the kubectl node.sh built (the preinstalled one is too old for
# watches), set by demo_up once node.sh up has built it.
KUBECTL=

kubectl() {
	"$KUBECTL" --kubeconfig "$NODE_DIR/admin.kubeconfig" "$@"
}

start_readyline() {
	if is_running readyline; then
		log "readyline is already running (pid $(recorded_pid readyline))"
		return
	fi
	start_process readyline "$READYLINE" run \
		--node-name "$(hostname)" --kubeconfig "$NODE_DIR/admin.kubeconfig" \
		--cri-endpoint "unix://$NODE_DIR/containerd/containerd.sock" \
		--otlp-endpoint 127.0.0.1:4317 --otlp-insecure \
		--api-addr "$API_ADDR" --metrics-addr "$METRICS_ADDR" \
		--start-timeout "$START_TIMEOUT" --record "$NODE_DIR/readyline-record.jsonl"
	wait_until 30 "readyline /healthz" http_ok "http://$METRICS_ADDR/healthz" ||
		die "readyline did not come up, see $LOG_DIR/readyline.log"
	wait_until 30 "readyline's pod watch" grep -q '"pod watch synced"' "$LOG_DIR/readyline.log" ||
		die "readyline's pod watch did not sync, see $LOG_DIR/readyline.log"
}

# pod_done NAME succeeds when the pod is Ready or Failed.
pod_done() {
	local out
	out=$(kubectl -n "$NAMESPACE" get pod "$1" -o jsonpath='{.status.phase} {.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null) || return 1
	[[ $out == Failed* || $out == *True ]]
}

demo_up() {
	need_root
	log "building readyline"
	make -C "$REPO_ROOT" --no-print-directory build >/dev/null
	"$NODE_SH" up
	"$NODE_SH" jaeger-up
	KUBECTL=$("$NODE_SH" tool --built kubectl)
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
		wait_until 90 "the timeline of $p" "$READYLINE" explain --api-addr "$API_ADDR" "$NAMESPACE/$p" ||
			{ warn "no timeline for $p"; continue; }
		"$READYLINE" explain --api-addr "$API_ADDR" "$NAMESPACE/$p"
	done
	cat <<MSG
Traces are in Jaeger (trace id = pod UID without dashes), e.g.:
  uid=\$($KUBECTL --kubeconfig $NODE_DIR/admin.kubeconfig -n $NAMESPACE get pod lifecycle-demo -o jsonpath='{.metadata.uid}')
  curl -s $JAEGER_QUERY/api/traces/\${uid//-/} | jq '.data[0].spans[] | {operationName, duration}'
  curl -s '$JAEGER_QUERY/api/traces?service=readyline&limit=20' | jq '.data[].traceID'
Metrics:   curl -s http://$METRICS_ADDR/metrics | grep readyline_
Waterfall: $READYLINE explain $NAMESPACE/<pod>   (list: $READYLINE explain)
Logs:      $LOG_DIR/readyline.log; the event recording: $NODE_DIR/readyline-record.jsonl
           ($READYLINE replay $NODE_DIR/readyline-record.jsonl)
Stop it all: make demo-down
MSG
}

demo_down() {
	need_root
	stop_process readyline 15
	"$NODE_SH" jaeger-down
	"$NODE_SH" down
}

case ${1:-} in
up) demo_up ;;
down) demo_down ;;
stop-readyline) need_root && stop_process readyline 15 ;;
*)
	sed -n '2,10s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
	exit 2
	;;
esac
