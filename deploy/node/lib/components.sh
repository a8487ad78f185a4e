# shellcheck shell=bash
# The node's components: how each starts, how `up` decides to reuse a running
# node, and the teardown order.

# Start order; teardown goes the other way round.
NODE_COMPONENTS=(registry containerd etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy)

ETCD_CLIENT_URL=http://127.0.0.1:12379
ETCD_PEER_URL=http://127.0.0.1:12380

# Ports the node listens on. etcd is kept off 2379/2380, where Debian's own
# etcd.service listens once etcd-server is installed on a systemd machine.
NODE_PORTS=(5000 6443 10248 10249 10250 10256 10257 10259 12379 12380)

# kubectl would otherwise write its discovery cache to ~/.kube/cache.
kctl() { "$KUBECTL" --kubeconfig "$ADMIN_KUBECONFIG" --cache-dir "$NODE_DIR/kubectl-cache" "$@"; }
crictl_node() { "$CRICTL_DIR/bin/crictl" --runtime-endpoint "unix://$CONTAINERD_SOCK" --timeout 30s "$@"; }

# Directory for shim sockets: under NODE_DIR unless that path is too long for a
# unix socket (containerd allows 38 characters; the hash adds 65).
shim_socket_dir() {
	local dir=$NODE_DIR/s
	((${#dir} <= 38)) || dir=/run/readyline-s
	echo "$dir"
}

host_resolv_conf() {
	# On systemd-resolved hosts /etc/resolv.conf names 127.0.0.53, which is
	# unreachable from pods; kubelet must hand them the upstream servers.
	if [[ -f /run/systemd/resolve/resolv.conf ]]; then
		echo /run/systemd/resolve/resolv.conf
	else
		echo /etc/resolv.conf
	fi
}

# kubelet_tracing_config prints the KubeletConfiguration that sends the
# kubelet's own traces to the local Jaeger when KUBELET_TRACING=1.
kubelet_tracing_config() {
	[[ ${KUBELET_TRACING:-0} == 1 ]] || return 0
	printf 'tracing:\n  endpoint: %s\n  samplingRatePerMillion: 1000000' "$JAEGER_OTLP_GRPC"
}

# shellcheck disable=SC2034 # SHIM_SOCKET_DIR, HOST_RESOLV_CONF, KUBELET_TRACING_CONFIG are template values.
render_configs() {
	SHIM_SOCKET_DIR=$(shim_socket_dir)
	HOST_RESOLV_CONF=$(host_resolv_conf)
	KUBELET_TRACING_CONFIG=$(kubelet_tracing_config)
	render "$CONTAINERD_CONFIG_IN" "$CONF_DIR/containerd.toml"
	render "$CONFIG_SRC/cni.conflist.in" "$CNI_DIR/net.d/10-$CNI_NETWORK.conflist"
	render "$CONFIG_SRC/kubelet.yaml.in" "$CONF_DIR/kubelet.yaml"
	render "$CONFIG_SRC/kube-proxy.yaml.in" "$CONF_DIR/kube-proxy.yaml"
	render "$CONFIG_SRC/coredns.yaml.in" "$CONF_DIR/coredns.yaml"
	render_registry_configs
}

check_ports_free() {
	local port holders=()
	for port in "${NODE_PORTS[@]}"; do
		ss -Htln "sport = :$port" | grep -q . && holders+=("$port ($(ss -Htlnp "sport = :$port" | grep -o 'users:.*' | head -1))")
	done
	((${#holders[@]} == 0)) || die "ports already in use by processes this script did not start: ${holders[*]}"
}

start_containerd() {
	mkdir -p "$CONTAINERD_ROOT" "$CONTAINERD_STATE" "$RUNC_ROOT" "$SHIM_SOCKET_DIR"
	# The shim is looked up in PATH; runc is configured by absolute path.
	PATH=$CONTAINERD_DIR/bin:$PATH start_node_process containerd "$CONTAINERD_DIR/bin/containerd" \
		--config "$CONF_DIR/containerd.toml"
	wait_until 30 "containerd" ctr_k8s version || die "containerd did not start, see $LOG_DIR/containerd.log"
}

start_etcd() {
	start_process etcd /usr/bin/etcd --name readyline-node --data-dir "$ETCD_DIR" \
		--listen-client-urls "$ETCD_CLIENT_URL" --advertise-client-urls "$ETCD_CLIENT_URL" \
		--listen-peer-urls "$ETCD_PEER_URL" --initial-advertise-peer-urls "$ETCD_PEER_URL" \
		--initial-cluster "readyline-node=$ETCD_PEER_URL"
	wait_until 30 "etcd" http_ok "$ETCD_CLIENT_URL/health" || die "etcd did not start, see $LOG_DIR/etcd.log"
}

start_apiserver() {
	start_process kube-apiserver "$K8S_DIR/bin/kube-apiserver" \
		--etcd-servers="$ETCD_CLIENT_URL" \
		--advertise-address="$NODE_IP" --secure-port=6443 \
		--service-cluster-ip-range="$SERVICE_CIDR" \
		--client-ca-file="$PKI_DIR/ca.crt" \
		--tls-cert-file="$PKI_DIR/apiserver.crt" --tls-private-key-file="$PKI_DIR/apiserver.key" \
		--kubelet-client-certificate="$PKI_DIR/apiserver-kubelet-client.crt" \
		--kubelet-client-key="$PKI_DIR/apiserver-kubelet-client.key" \
		--kubelet-preferred-address-types=InternalIP,Hostname \
		--service-account-issuer="https://kubernetes.default.svc.$CLUSTER_DOMAIN" \
		--service-account-key-file="$PKI_DIR/sa.pub" \
		--service-account-signing-key-file="$PKI_DIR/sa.key" \
		--requestheader-client-ca-file="$PKI_DIR/front-proxy-ca.crt" \
		--requestheader-allowed-names=front-proxy-client \
		--requestheader-username-headers=X-Remote-User --requestheader-group-headers=X-Remote-Group \
		--requestheader-extra-headers-prefix=X-Remote-Extra- \
		--proxy-client-cert-file="$PKI_DIR/front-proxy-client.crt" \
		--proxy-client-key-file="$PKI_DIR/front-proxy-client.key" \
		--authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
		--allow-privileged=true --v=1
	wait_until 90 "kube-apiserver /readyz" kctl get --raw /readyz ||
		die "kube-apiserver did not become ready, see $LOG_DIR/kube-apiserver.log"
}

start_controller_manager() {
	local kc=$NODE_DIR/controller-manager.kubeconfig
	start_process kube-controller-manager "$K8S_DIR/bin/kube-controller-manager" \
		--kubeconfig="$kc" --authentication-kubeconfig="$kc" --authorization-kubeconfig="$kc" \
		--bind-address=127.0.0.1 --leader-elect=false --controllers='*' \
		--use-service-account-credentials=true \
		--service-account-private-key-file="$PKI_DIR/sa.key" --root-ca-file="$PKI_DIR/ca.crt" \
		--cluster-signing-cert-file="$PKI_DIR/ca.crt" --cluster-signing-key-file="$PKI_DIR/ca.key" \
		--service-cluster-ip-range="$SERVICE_CIDR" --cluster-name=readyline-node --v=1
}

start_scheduler() {
	local kc=$NODE_DIR/scheduler.kubeconfig
	start_process kube-scheduler "$K8S_DIR/bin/kube-scheduler" \
		--kubeconfig="$kc" --authentication-kubeconfig="$kc" --authorization-kubeconfig="$kc" \
		--bind-address=127.0.0.1 --leader-elect=false --v=1
}

start_kubelet() {
	mkdir -p "$KUBELET_DIR"/{manifests,pod-logs,volume-plugins,pki}
	start_node_process kubelet "$KUBELET_BIN" \
		--config="$CONF_DIR/kubelet.yaml" --kubeconfig="$NODE_DIR/kubelet.kubeconfig" \
		--root-dir="$KUBELET_DIR" --cert-dir="$KUBELET_DIR/pki" \
		--node-ip="$NODE_IP" --hostname-override="$NODE_NAME" --v=2
}

# restart_kubelet stops the kubelet node.sh started and starts it again with
# the configuration rendered now (KUBELET_TRACING may have changed); its pods
# keep running.
restart_kubelet() {
	is_running kubelet || die "the kubelet is not running: use node.sh up"
	# shellcheck disable=SC2034 # template values
	HOST_RESOLV_CONF=$(host_resolv_conf) KUBELET_TRACING_CONFIG=$(kubelet_tracing_config)
	render "$CONFIG_SRC/kubelet.yaml.in" "$CONF_DIR/kubelet.yaml"
	stop_process kubelet
	start_kubelet
	wait_node_ready
}

# kubelet_config_changed succeeds when the kubelet would now get another
# configuration than the one it runs with.
kubelet_config_changed() {
	local want
	want=$(mktemp)
	# shellcheck disable=SC2034 # template values
	HOST_RESOLV_CONF=$(host_resolv_conf) KUBELET_TRACING_CONFIG=$(kubelet_tracing_config)
	render "$CONFIG_SRC/kubelet.yaml.in" "$want"
	! cmp -s "$want" "$CONF_DIR/kubelet.yaml"
	local changed=$?
	rm -f "$want"
	return $changed
}

# containerd_config_changed succeeds when containerd would now get another
# configuration than the one it runs with (e.g. a node started before
# CNI_BIN_DIR existed).
containerd_config_changed() {
	local want changed
	want=$(mktemp)
	# shellcheck disable=SC2034 # template value
	SHIM_SOCKET_DIR=$(shim_socket_dir)
	render "$CONTAINERD_CONFIG_IN" "$want"
	! cmp -s "$want" "$CONF_DIR/containerd.toml"
	changed=$?
	rm -f "$want"
	return $changed
}

# restart_containerd renders containerd's configuration and restarts it; the
# shims, and so the pods, keep running and the kubelet reconnects.
restart_containerd() {
	# shellcheck disable=SC2034 # template value
	SHIM_SOCKET_DIR=$(shim_socket_dir)
	render "$CONTAINERD_CONFIG_IN" "$CONF_DIR/containerd.toml"
	stop_process containerd 30
	start_containerd
}

# outage COMPONENT SECONDS stops kube-apiserver or containerd, leaves it down
# for SECONDS and starts it again, as a fault test needs: the pods (their
# shims) keep running, the kubelet and the watches reconnect.
outage() {
	local component=${1:-} seconds=${2:-}
	[[ $seconds =~ ^[0-9]+$ ]] || die "outage: SECONDS must be a whole number, got '$seconds'"
	case $component in
	kube-apiserver | containerd) ;;
	*) die "outage: COMPONENT must be kube-apiserver or containerd, got '$component'" ;;
	esac
	is_running "$component" || die "$component is not running: use node.sh up"
	# kube-apiserver stops listening at once on SIGTERM but lingers ~30 s
	# after: its outage has begun, so 5 s are grace enough.
	stop_process "$component" 5
	log "$component down for ${seconds}s"
	sleep "$seconds"
	case $component in
	kube-apiserver) start_apiserver ;;
	containerd)
		# shellcheck disable=SC2034 # template value
		SHIM_SOCKET_DIR=$(shim_socket_dir)
		start_containerd
		;;
	esac
	log "$component is back"
}

start_kube_proxy() {
	start_process kube-proxy "$K8S_DIR/bin/kube-proxy" --config="$CONF_DIR/kube-proxy.yaml" --v=1
	wait_until 60 "kube-proxy /healthz" http_ok http://127.0.0.1:10256/healthz ||
		die "kube-proxy did not become healthy, see $LOG_DIR/kube-proxy.log"
}

node_condition() {
	kctl get node "$NODE_NAME" -o jsonpath="{.status.conditions[?(@.type==\"$1\")].status}" 2>/dev/null
}

node_is_ready() { [[ $(node_condition Ready) == True ]]; }

# node_is_schedulable: Ready, not cordoned and without taints (the node
# lifecycle controller removes node.kubernetes.io/not-ready once it sees Ready).
node_is_schedulable() {
	node_is_ready &&
		[[ -z $(kctl get node "$NODE_NAME" -o jsonpath='{.spec.unschedulable}{.spec.taints}') ]]
}

# namespace_is_populated: the controller-manager created what every pod needs.
namespace_is_populated() {
	kctl -n default get serviceaccount default >/dev/null 2>&1 &&
		kctl -n default get configmap kube-root-ca.crt >/dev/null 2>&1
}

wait_node_ready() {
	wait_until 120 "node $NODE_NAME to be Ready" node_is_ready ||
		die "node $NODE_NAME did not become Ready, see $LOG_DIR/kubelet.log"
	wait_until 60 "node $NODE_NAME to be schedulable" node_is_schedulable ||
		die "node $NODE_NAME stayed tainted: $(kctl get node "$NODE_NAME" -o jsonpath='{.spec.taints}')"
	wait_until 60 "the default ServiceAccount and kube-root-ca.crt" namespace_is_populated ||
		die "kube-controller-manager did not populate the default namespace, see $LOG_DIR/kube-controller-manager.log"
}

start_dns() {
	kctl apply -f "$CONF_DIR/coredns.yaml" >/dev/null || die "applying the CoreDNS addon failed"
	kctl -n kube-system rollout status deployment/coredns --timeout=120s >/dev/null ||
		die "CoreDNS did not become ready: $(kctl -n kube-system get pods -l k8s-app=kube-dns -o wide 2>&1)"
}

# node_is_healthy: every component is ours and alive, and the node answers Ready.
node_is_healthy() {
	local c
	for c in "${NODE_COMPONENTS[@]}"; do is_running "$c" || return 1; done
	[[ -x $KUBECTL ]] && kctl get --raw /readyz >/dev/null 2>&1 && node_is_ready
}

# recorded_exe NAME prints the executable component NAME was started from.
recorded_exe() {
	local f
	f=$(pidfile "$1")
	[[ -f $f ]] && awk '{print $3}' "$f"
}

# node_runs_versions_asked: the running containerd and kubelet are the
# binaries CONTAINERD_VERSION and K8S_KUBELET_VERSION ask for; if not, it
# says what runs.
node_runs_versions_asked() {
	local want_ctrd want_kubelet ok=0
	want_ctrd=$(readlink -f "$CONTAINERD_DIR/bin/containerd" 2>/dev/null || echo "$CONTAINERD_DIR/bin/containerd")
	want_kubelet=$(readlink -f "$KUBELET_BIN" 2>/dev/null || echo "$KUBELET_BIN")
	if [[ $(recorded_exe containerd) != "$want_ctrd" ]]; then
		log "the node runs $(recorded_exe containerd), containerd $CONTAINERD_VERSION is asked for"
		ok=1
	fi
	if [[ $(recorded_exe kubelet) != "$want_kubelet" ]]; then
		log "the node runs $(recorded_exe kubelet), kubelet $KUBELET_VERSION is asked for"
		ok=1
	fi
	return $ok
}

# remember_containerd records which containerd the node's state belongs to,
# for a teardown asked with another CONTAINERD_VERSION (use_node_containerd).
remember_containerd() { echo "$CONTAINERD_VERSION" >"$CONF_DIR/containerd.version"; }

# use_node_containerd makes CONTAINERD_DIR the containerd whose state is in
# NODE_DIR, so that the teardown restarts and recognizes the right one (its
# shims).
use_node_containerd() {
	local v
	v=$(cat "$CONF_DIR/containerd.version" 2>/dev/null) || return 0
	[[ $v =~ ^v[12]\.[0-9]+\.[0-9]+$ && $v != "$CONTAINERD_VERSION" ]] || return 0
	log "the node's state is containerd $v's: tearing it down with that one"
	CONTAINERD_VERSION=$v
	CONTAINERD_DIR=$READYLINE_CACHE/containerd-$v
}

node_up() {
	local t0=$SECONDS
	if node_is_healthy && node_runs_versions_asked; then
		if pidns_mode_matches; then
			log "node is already up"
			# Its binaries are cached; this notes them in the build ledger.
			build_node_binaries
			if kubelet_config_changed; then
				log "the kubelet's configuration changed (KUBELET_TRACING?): restarting the kubelet"
				restart_kubelet
			fi
			if containerd_config_changed; then
				log "containerd's configuration changed: restarting containerd (pods keep running)"
				restart_containerd
			fi
			# Puts back what a test may have changed (the missing tag pushed,
			# an image removed from the node).
			push_images
			reimport_missing_images
			wait_node_ready
			node_status
			return 0
		fi
		log "NODE_PIDNS=${NODE_PIDNS:-0} but the node runs in $(pidns_running_mode): restarting it"
	fi
	ensure_packages
	build_node_binaries
	# Whatever a previous run left (killed processes, mounts, sandboxes, chains)
	# goes first; on a clean host this finds nothing to do.
	node_teardown
	if ! host_check_clean >/dev/null 2>&1; then
		host_check_clean || true
		warn "starting although the previous run left the above behind"
	fi

	log "starting the node in $NODE_DIR (node $NODE_NAME, IP $NODE_IP)"
	t0=$SECONDS
	check_ports_free
	mkdir -p "$NODE_DIR" "$LOG_DIR" "$RUN_DIR" "$CONF_DIR" "$IMAGES_DIR"
	host_record_baseline
	make_pki
	make_kubeconfigs
	render_configs
	remember_containerd
	build_images
	start_registry
	push_images
	if pidns_wanted; then start_node_namespace; fi
	start_containerd
	import_images
	start_etcd
	start_apiserver
	start_controller_manager
	start_scheduler
	start_kubelet
	start_kube_proxy
	wait_node_ready
	start_dns
	log "node is up in $((SECONDS - t0))s"
	node_status
}

# remove_pod_sandboxes stops and removes every pod sandbox through CRI, so that
# containerd runs the CNI DEL (veth, IP, masquerade chain) and the shims exit.
# A containerd killed earlier is started again for this if its state survived.
remove_pod_sandboxes() {
	local started_here=0
	[[ -d $CONTAINERD_STATE && -f $CONF_DIR/containerd.toml && -x $CONTAINERD_DIR/bin/containerd ]] || return 0
	if ! is_running containerd; then
		[[ -n $(ls -A "$CONTAINERD_STATE" 2>/dev/null) ]] || return 0
		log "starting containerd again to remove the sandboxes it left"
		mkdir -p "$(shim_socket_dir)"
		PATH=$CONTAINERD_DIR/bin:$PATH start_node_process containerd "$CONTAINERD_DIR/bin/containerd" \
			--config "$CONF_DIR/containerd.toml"
		wait_until 30 "containerd" ctr_k8s version || {
			warn "containerd did not start; falling back to runc"
			return 0
		}
		started_here=1
	fi
	# A CRI call the kubelet made just before it stopped may still create a
	# sandbox or container, so repeat until the runtime reports none.
	local round left
	for round in 1 2 3; do
		left=$(($(crictl_node pods -q 2>/dev/null | wc -l) + $(crictl_node ps -a -q 2>/dev/null | wc -l)))
		((left == 0)) && break
		log "removing pod sandboxes and containers ($left left, round $round)"
		crictl_node rm --all --force >/dev/null 2>&1 || true
		crictl_node rmp --all --force >/dev/null 2>&1 || true
		sleep 1
	done
	((left == 0)) || warn "the runtime still lists $left sandboxes/containers; falling back to runc"
	((started_here)) && log "stopping the containerd started for cleanup"
	return 0
}

# stop_leftover_shims ends shims that outlived the containerd that would have
# cleaned them up. containerd 2.x keeps no shim PID file, so a shim is
# recognized by its executable (a cached shim binary) and its command line
# (our containerd socket, which only this node's containerd serves; the
# teardown holds the node's lock). A shim whose task bundle is already gone
# is one too: containerd removed the task and the shim did not exit (seen
# once with 2.4, under the e2e tests' API server restart).
stop_leftover_shims() {
	local p exe cmdline id why
	for p in /proc/[0-9]*; do
		exe=$(readlink "$p/exe" 2>/dev/null) || continue
		# Any containerd version's shim (the node may have run another).
		[[ $exe == "$READYLINE_CACHE"/containerd-*/bin/containerd-shim-runc-v2 ]] || continue
		cmdline=$(tr '\0' ' ' <"$p/cmdline" 2>/dev/null) || continue
		[[ $cmdline == *" -address $CONTAINERD_SOCK "* ]] || continue
		id=$(sed -n 's/.* -id \([^ ]*\) .*/\1/p' <<<"$cmdline")
		why="of task $id"
		[[ -d $CONTAINERD_STATE/io.containerd.runtime.v2.task/k8s.io/$id ]] || why="of task $id, whose bundle is gone"
		warn "killing leftover shim ${p#/proc/} $why"
		kill -KILL "${p#/proc/}" 2>/dev/null || true
	done
}

# delete_runc_containers force-deletes (kills) containers still in our runc root.
delete_runc_containers() {
	local id
	[[ -d $RUNC_ROOT ]] || return 0
	for id in $(runc --root "$RUNC_ROOT" list -q 2>/dev/null); do
		warn "force-deleting leftover runc container $id"
		runc --root "$RUNC_ROOT" delete --force "$id" 2>/dev/null || true
	done
}

# node_teardown stops every recorded component and removes what the node left,
# inside NODE_DIR (except logs/, host.last/, run/ and the lock) and outside it.
node_teardown() {
	local c dirty=0 f
	for f in "$RUN_DIR"/*.pid; do [[ -e $f && $f != */jaeger.pid ]] && dirty=1; done
	[[ -d $HOST_DIR || -n $(mounts_under "$NODE_DIR") || -d $CONTAINERD_STATE || -f $(node_dir_marker) ]] && dirty=1
	ip link show "$BRIDGE" >/dev/null 2>&1 && dirty=1
	if ((!dirty)); then
		stop_leftover_shims # one may outlive the teardown that stopped its containerd
		return 0
	fi

	log "tearing down the node in $NODE_DIR"
	# The node's containerd for this teardown only: up starts the one asked for.
	local CONTAINERD_VERSION=$CONTAINERD_VERSION CONTAINERD_DIR=$CONTAINERD_DIR
	use_node_containerd
	for c in kube-scheduler kube-controller-manager kubelet kube-proxy; do stop_process "$c"; done
	remove_pod_sandboxes
	stop_process containerd 30
	stop_leftover_shims
	# Ends whatever is left in the node's PID namespace (containers included),
	# before runc's state is read from the host.
	stop_process "$NODE_INIT"
	delete_runc_containers
	stop_process kube-apiserver
	stop_process etcd
	stop_process registry
	host_cleanup
	unshare_node_dir
	if [[ -n $(mounts_under "$NODE_DIR") ]]; then
		die "mounts remain under $NODE_DIR; not deleting its state: $(mounts_under "$NODE_DIR" | tr '\n' ' ')"
	fi
	for f in "$NODE_DIR"/*; do
		case ${f##*/} in
		logs | host.last | run | node.lock) ;;
		*) rm -rf --one-file-system "$f" ;;
		esac
	done
	local sdir
	sdir=$(shim_socket_dir)
	[[ $sdir == /run/* ]] && rm -rf "$sdir"
	log "node torn down"
}

node_down() {
	node_teardown
	host_check_clean
}

node_status() {
	local c pid all=0
	printf '%-24s %-8s %s\n' COMPONENT PID STATE
	for c in "${NODE_COMPONENTS[@]}" jaeger; do
		if pid=$(recorded_pid "$c"); then
			printf '%-24s %-8s %s\n' "$c" "$pid" running
		else
			pid=-
			[[ -f $(pidfile "$c") ]] && pid=$(awk '{print $1}' "$(pidfile "$c")")
			printf '%-24s %-8s %s\n' "$c" "$pid" "$([[ $pid == - ]] && echo stopped || echo dead)"
			[[ $c == jaeger ]] || all=3
		fi
	done
	cat <<EOF

kubeconfig:  export KUBECONFIG=$ADMIN_KUBECONFIG
kubectl:     $KUBECTL
crictl:      $CRICTL_DIR/bin/crictl --runtime-endpoint unix://$CONTAINERD_SOCK
logs:        $LOG_DIR/
jaeger:      query $JAEGER_QUERY_URL  OTLP gRPC $JAEGER_OTLP_GRPC  OTLP HTTP $JAEGER_OTLP_HTTP
registry:    $REGISTRY_URL  large $REGISTRY_LARGE_IMAGE  missing $REGISTRY_MISSING_IMAGE
$(pidns_status)
EOF
	if ((all == 0)) && [[ -x $KUBECTL ]]; then
		echo
		kctl get nodes -o wide 2>/dev/null || true
	fi
	return $all
}

jaeger_is_healthy() { is_running jaeger && http_ok "$JAEGER_QUERY_URL/api/services"; }

jaeger_up() {
	if jaeger_is_healthy; then
		log "jaeger is already up"
		build_jaeger # cached: notes it in the build ledger
	else
		stop_process jaeger
		build_jaeger
		local port
		for port in 4317 4318 16685 16686 13133 8888; do
			ss -Htln "sport = :$port" | grep -q . && die "port $port is in use by a process this script did not start"
		done
		mkdir -p "$JAEGER_STATE"
		# Jaeger resolves relative paths against its working directory.
		(cd "$JAEGER_STATE" && start_process jaeger "$JAEGER_DIR/bin/jaeger" --config "file:$SCRIPT_DIR/config/jaeger.yaml")
		wait_until 60 "Jaeger health" http_ok "$JAEGER_HEALTH_URL" ||
			die "jaeger did not become healthy, see $LOG_DIR/jaeger.log"
		wait_until 30 "the Jaeger query API" http_ok "$JAEGER_QUERY_URL/api/services" ||
			die "the Jaeger query API did not answer, see $LOG_DIR/jaeger.log"
		log "jaeger is up"
	fi
	log "jaeger: query $JAEGER_QUERY_URL, OTLP gRPC $JAEGER_OTLP_GRPC, OTLP HTTP $JAEGER_OTLP_HTTP"
}

jaeger_down() {
	stop_process jaeger
	rm -rf "$JAEGER_STATE"
}

build_all() {
	ensure_packages
	build_node_binaries
	build_jaeger
	build_promtool
	log "binaries are in $READYLINE_CACHE"
}
