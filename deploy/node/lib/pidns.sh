# shellcheck shell=bash
# NODE_PIDNS=1: the node in a PID namespace of its own, as a kind node (a
# container) has one. A hostPID pod then sees the node's pids while eBPF sees
# the host's, which is what readyline must handle on kind.
#
# node-init (images/pause.c: it reaps orphans and exits on SIGTERM) is PID 1
# of a new PID namespace with a new mount namespace whose /proc matches it
# (unshare --pid --fork --mount-proc). containerd and the kubelet are started
# in both with nsenter, so the shims, runc and every container are in it too.
# The control plane and kube-proxy stay on the host: nothing there cares about
# pids, and on kind the control plane is another node anyway. When node-init
# exits, the kernel kills everything left in the namespace.
#
# Mounts: the kubelet and containerd mount volumes, rootfs and network
# namespaces under NODE_DIR from inside the node's mount namespace. The host's
# mounts are private here (no systemd making / shared), so a bind mount of
# NODE_DIR onto itself, made shared before the namespace is created, is the
# peer through which those mounts also appear on the host: the teardown and
# check-clean see and unmount them as in the normal mode. Inside the node
# everything is made shared (--propagation shared), as kind's entrypoint does.

NODE_INIT=node-init
# Marks that NODE_DIR is our shared bind mount (and not the user's own mount).
node_dir_marker() { echo "$RUN_DIR/node-dir.mount"; }

# node_launcher prints the launcher of start_process_via that puts a node
# component into the node's namespaces, or nothing when the node has none.
node_launcher() {
	local init
	init=$(recorded_pid "$NODE_INIT") || return 0
	echo "nsenter --target $init --pid --mount --"
}

# start_node_process NAME BINARY ARGS... starts a component that belongs to
# the node (containerd, the kubelet): in its namespaces when it has them.
start_node_process() { start_process_via "$1" "$(node_launcher)" "${@:2}"; }

pidns_wanted() { [[ ${NODE_PIDNS:-0} == 1 ]]; }
pidns_running() { is_running "$NODE_INIT"; }

# pidns_mode_matches: the running node is in the mode NODE_PIDNS asks for.
pidns_mode_matches() {
	if pidns_wanted; then pidns_running; else ! pidns_running; fi
}

pidns_running_mode() { if pidns_running; then echo "its own PID namespace"; else echo "the host's PID namespace"; fi; }

# share_node_dir bind-mounts NODE_DIR onto itself and makes it shared (see
# above); the marker lets the teardown undo exactly this. -n: libmount would
# create /run/mount/utab, which the teardown has already cleaned up when
# unshare_node_dir runs.
share_node_dir() {
	if ! mountpoint -q "$NODE_DIR"; then
		mount -n --bind "$NODE_DIR" "$NODE_DIR" || die "cannot bind-mount $NODE_DIR onto itself"
		touch "$(node_dir_marker)"
	fi
	[[ -f $(node_dir_marker) ]] || die "$NODE_DIR is a mount point node.sh did not make; NODE_PIDNS=1 needs to make it shared"
	mount -n --make-shared "$NODE_DIR"
}

# unshare_node_dir undoes share_node_dir. Lazily: node.sh's lock, and Jaeger's
# working directory, are open through it; they stay valid (same directory).
unshare_node_dir() {
	[[ -f $(node_dir_marker) ]] || return 0
	if mountpoint -q "$NODE_DIR"; then
		umount -n -l "$NODE_DIR" || warn "could not unmount the bind mount $NODE_DIR"
	fi
	mountpoint -q "$NODE_DIR" || rm -f "$(node_dir_marker)"
}

start_node_namespace() {
	local bin=$NODE_DIR/bin/$NODE_INIT
	mkdir -p "$(dirname "$bin")"
	gcc -static -O2 -Wall -Werror -o "$bin" "$SCRIPT_DIR/images/pause.c" || die "building $NODE_INIT failed"
	share_node_dir
	start_process_via "$NODE_INIT" "unshare --pid --fork --mount-proc --propagation shared --" "$bin"
	log "the node runs in its own PID namespace $(pidns_of "$(recorded_pid "$NODE_INIT")")"
}

# pidns_of PID prints the PID namespace of PID, e.g. pid:[4026532301].
pidns_of() { readlink "/proc/$1/ns/pid"; }

# ns_pid PID prints PID's number in its own (innermost) PID namespace.
ns_pid() { awk '$1 == "NSpid:" {print $NF}' "/proc/$1/status"; }

# pidns_status prints the status line on the node's PID namespace.
pidns_status() {
	local init kubelet
	if ! init=$(recorded_pid "$NODE_INIT"); then
		is_running kubelet && echo "pid namespace: the host's, $(pidns_of self)"
		return 0
	fi
	printf 'pid namespace: its own, %s (node-init: pid %s on the host' "$(pidns_of "$init")" "$init"
	if kubelet=$(recorded_pid kubelet); then
		printf '; kubelet: pid %s on the host, %s inside' "$kubelet" "$(ns_pid "$kubelet")"
	fi
	echo ')'
}
