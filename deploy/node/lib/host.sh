# shellcheck shell=bash
# What the node leaves on the host outside NODE_DIR, and how it is put back.
#
# Before anything starts, `up` records a baseline of the host in $HOST_DIR:
# sysctls, iptables rules, network links, kubepods cgroups and the contents of
# the paths kubelet/containerd/CNI write to no matter how they are configured.
# Teardown removes exactly what is not in the baseline and restores the sysctls;
# check-clean compares the host with the baseline of the last run.

# Paths written outside NODE_DIR although every configurable path points into
# it: kubelet's device-plugin socket (/var/lib/kubelet/device-plugins) and
# container log symlinks (/var/log/containers), libcni's result cache
# (/var/lib/cni), libmount's utab (/run/mount, written by mount/umount). The
# others are defaults of settings node.sh overrides, watched in case one slips.
# /run/mount comes last, and the cleanup's own umounts pass -n: a umount
# without it writes /run/mount again, even one that fails.
HOST_PATHS=(
	/var/lib/kubelet /var/lib/cni /var/log/containers
	/run/containerd /run/netns /run/nri /var/log/pods /usr/libexec/kubernetes /etc/kubernetes /run/mount
)

# Sysctls that kubelet (setupKernelTunables), kube-proxy or the CNI bridge may change.
HOST_SYSCTLS=(
	vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
	kernel.keys.root_maxkeys kernel.keys.root_maxbytes
	net.ipv4.ip_forward net.ipv4.conf.all.route_localnet net.ipv6.conf.all.forwarding
	net.bridge.bridge-nf-call-iptables net.bridge.bridge-nf-call-ip6tables
	net.netfilter.nf_conntrack_max net.netfilter.nf_conntrack_tcp_timeout_established
	net.netfilter.nf_conntrack_tcp_timeout_close_wait
)

IPTABLES_FAMILIES=(iptables ip6tables)

# baseline_dir prints the directory holding the baseline to compare with: the
# current run's, or the last torn-down run's.
baseline_dir() {
	if [[ -f $HOST_DIR/complete ]]; then
		echo "$HOST_DIR"
	elif [[ -f $NODE_DIR/host.last/complete ]]; then
		echo "$NODE_DIR/host.last"
	else
		return 1
	fi
}

host_record_baseline() {
	local dir=$HOST_DIR k v t
	rm -rf "$dir" && mkdir -p "$dir"
	for k in "${HOST_SYSCTLS[@]}"; do
		if v=$(sysctl -n "$k" 2>/dev/null); then echo "$k=$v"; fi
	done >"$dir/sysctl"
	for t in "${IPTABLES_FAMILIES[@]}"; do
		iptables_rules "$t" >"$dir/$t"
	done
	link_names >"$dir/links"
	list_host_paths >"$dir/paths"
	ls -d /sys/fs/cgroup/*/kubepods 2>/dev/null >"$dir/cgroups" || true
	touch "$dir/complete"
}

# iptables_rules FAMILY prints the ruleset as sorted "table rule" lines without
# counters: user chains, non-ACCEPT policies of built-in chains, and rules.
iptables_rules() {
	command -v "$1-save" >/dev/null || return 0
	"$1-save" 2>/dev/null | awk '
		/^\*/ { table = substr($0, 2); next }
		/^:/ {
			chain = substr($1, 2)
			if ($2 == "-") print table " :" chain
			else if ($2 != "ACCEPT") print table " policy " chain " " $2
			next
		}
		/^-A / { print table " " $0 }' | sort
}

# list_host_paths prints everything under HOST_PATHS, sorted.
list_host_paths() {
	local p
	for p in "${HOST_PATHS[@]}"; do
		if [[ -e $p ]]; then find "$p" -xdev 2>/dev/null || true; fi
	done | sort
}

link_names() { ip -o link show | awk -F': ' '{sub(/@.*/, "", $2); print $2}' | sort; }

# mounts_under DIR prints the mount points below DIR, deepest first.
mounts_under() {
	awk -v d="${1%/}/" '{ p = $5; gsub(/\\040/, " ", p); if (index(p, d) == 1) print p }' /proc/self/mountinfo | sort -r
}

# unmount_under DIR unmounts everything below DIR (stacked mounts included).
unmount_under() {
	local dir=$1 m
	for _ in 1 2 3 4 5; do
		mapfile -t mounts < <(mounts_under "$dir")
		((${#mounts[@]} == 0)) && return 0
		for m in "${mounts[@]}"; do
			umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
		done
	done
	mounts_under "$dir" | grep -q . && warn "mounts remain under $dir: $(mounts_under "$dir" | tr '\n' ' ')"
	return 0
}

# cleanup_iptables removes the KUBE-* and CNI-* chains that are not in the
# baseline, after deleting the rules that jump to them from other chains.
cleanup_iptables() {
	local base=$1 t keep payload
	for t in "${IPTABLES_FAMILIES[@]}"; do
		command -v "$t-save" >/dev/null || continue
		keep=""
		[[ -f $base/$t ]] && keep=$(awk '$2 ~ /^:(KUBE|CNI)-/ {print $1 ":" substr($2, 2)}' "$base/$t" | tr '\n' ' ')
		payload=$("$t-save" 2>/dev/null | awk -v keep="$keep" '
			BEGIN { n = split(keep, k, " "); for (i = 1; i <= n; i++) kept[k[i]] = 1 }
			/^\*/ { table = substr($0, 2); dels = ""; chains = ""; next }
			/^:/ {
				c = substr($1, 2)
				if (c ~ /^(KUBE|CNI)-/ && !((table ":" c) in kept)) { del[table ":" c] = 1; chains = chains " " c }
				next
			}
			/^-A / {
				if ((table ":" $2) in del) next
				for (i = 3; i < NF; i++) if (($i == "-j" || $i == "-g") && ((table ":" $(i + 1)) in del)) {
					line = $0; sub(/^-A /, "-D ", line); dels = dels line "\n"; break
				}
				next
			}
			/^COMMIT/ {
				if (chains == "") next
				printf "*%s\n%s", table, dels
				n = split(chains, cs, " ")
				for (i = 1; i <= n; i++) print "-F " cs[i]
				for (i = 1; i <= n; i++) print "-X " cs[i]
				print "COMMIT"
			}')
		[[ -z $payload ]] && continue
		"$t-restore" --noflush <<<"$payload" || warn "$t-restore could not remove the node's chains:"$'\n'"$payload"
	done
}

# cleanup_links deletes the CNI bridge and the veths still attached to it.
cleanup_links() {
	local l
	ip link show "$BRIDGE" >/dev/null 2>&1 || return 0
	for l in $(ip -o link show master "$BRIDGE" | awk -F': ' '{sub(/@.*/, "", $2); print $2}'); do
		ip link del "$l" 2>/dev/null || true
	done
	if ip link del "$BRIDGE"; then
		log "deleted bridge $BRIDGE"
	else
		warn "could not delete bridge $BRIDGE"
	fi
}

# cgroup_procs DIR prints the PIDs in the cgroup tree DIR.
# Cgroups may vanish while it reads them; that is not an error here.
cgroup_procs() { { find "$1" -name cgroup.procs -exec cat {} + 2>/dev/null || true; } | sort -u; }

cgroup_is_empty() { [[ -z $(cgroup_procs "$1") ]]; }

# cleanup_cgroups removes the kubepods cgroup trees kubelet created, in every
# v1 hierarchy and in the cgroup2 mount at /sys/fs/cgroup/unified.
cleanup_cgroups() {
	local base=$1 d pids
	for d in /sys/fs/cgroup/*/kubepods; do
		[[ -d $d ]] || continue
		grep -qxF "$d" "$base/cgroups" 2>/dev/null && continue
		pids=$(cgroup_procs "$d")
		if [[ -n $pids ]]; then
			# Only container processes of this node's pods can be in a kubepods tree
			# that did not exist before `up`, and their runtime is gone: end them.
			warn "killing leftover container processes in $d: $(echo "$pids" | tr '\n' ' ')"
			# shellcheck disable=SC2086
			kill -KILL $pids 2>/dev/null || true
			wait_until 10 "the processes in $d to exit" cgroup_is_empty "$d" || true
		fi
		find "$d" -depth -type d -exec rmdir {} + 2>/dev/null || true
		[[ -d $d ]] && warn "could not remove cgroup $d"
	done
	return 0
}

# cleanup_paths removes what appeared under HOST_PATHS since the baseline.
cleanup_paths() {
	local base=$1 p f
	for p in "${HOST_PATHS[@]}"; do
		[[ -e $p ]] || continue
		unmount_new_mounts "$base" "$p"
		if ! grep -qxF "$p" "$base/paths" 2>/dev/null; then
			rm -rf --one-file-system "$p"
			continue
		fi
		{ find "$p" -xdev -mindepth 1 2>/dev/null || true; } | sort -r | while read -r f; do
			grep -qxF "$f" "$base/paths" || rm -rf --one-file-system "$f"
		done
	done
}

# unmount_new_mounts BASE DIR unmounts mount points below DIR not in the baseline
# (network namespaces left in /run/netns).
unmount_new_mounts() {
	local base=$1 dir=$2 m self=()
	# The directory itself may be a mount too: `ip netns add` (a test's, or
	# anyone's while the node ran) bind-mounts /run/netns onto itself, and
	# rm then fails with "Device or resource busy".
	mountpoint -q "$dir" 2>/dev/null && self=("$dir")
	for m in $(mounts_under "$dir") "${self[@]}"; do
		grep -qxF "$m" "$base/paths" 2>/dev/null || umount -n "$m" 2>/dev/null || umount -n -l "$m" 2>/dev/null || true
	done
}

restore_sysctls() {
	local base=$1 k v
	[[ -f $base/sysctl ]] || return 0
	while IFS='=' read -r k v; do
		[[ $(sysctl -n "$k" 2>/dev/null) == "$v" ]] && continue
		if sysctl -qw "$k=$v" 2>/dev/null; then
			log "restored sysctl $k=$v"
		else
			warn "could not restore sysctl $k=$v"
		fi
	done <"$base/sysctl"
}

# host_cleanup puts the host back to the baseline. Without one (NODE_DIR was
# removed while the node ran) it removes only what is recognizably the node's:
# its mounts, bridge, KUBE-*/CNI-* chains and kubepods cgroups.
host_cleanup() {
	local base
	if ! base=$(baseline_dir); then
		warn "no host baseline in $NODE_DIR: leaving paths and sysctls outside it alone"
		base=$NODE_DIR/host.none
		mkdir -p "$base"
	fi
	unmount_under "$NODE_DIR"
	cleanup_links
	cleanup_iptables "$base"
	cleanup_cgroups "$base"
	if [[ $base != "$NODE_DIR/host.none" ]]; then
		cleanup_paths "$base"
		restore_sysctls "$base"
	fi
	if [[ $base == "$HOST_DIR" ]]; then
		rm -rf "$NODE_DIR/host.last" && mv "$HOST_DIR" "$NODE_DIR/host.last"
	fi
	rm -rf "$NODE_DIR/host.none"
}

# host_check_clean [--with-jaeger] reports everything the node may leave on the
# host and fails if any of it is there. Jaeger is independent of the node and
# only checked when asked for.
host_check_clean() {
	local base problems=() names=("${NODE_COMPONENTS[@]}" "$NODE_INIT") skip_dir=$JAEGER_DIR name f c t k v p line
	if [[ ${1:-} == --with-jaeger ]]; then
		names+=(jaeger)
		skip_dir=/nonexistent
	fi
	base=$(baseline_dir) || {
		base=""
		warn "no host baseline in $NODE_DIR (node never started?): comparing with a clean host"
	}

	for name in "${names[@]}"; do
		is_running "$name" && problems+=("process $name (pid $(recorded_pid "$name")) is still running")
	done
	for p in /proc/[0-9]*; do
		# Kernel threads and zombies have no executable.
		f=$(readlink "$p/exe" 2>/dev/null) || continue
		[[ $f == "$READYLINE_CACHE"/* && $f != "$skip_dir"/* ]] && problems+=("process ${p#/proc/} runs $f")
		# A kind node's pods (kubepods nested in a container's cgroup) are
		# that cluster's, not this node's leftovers.
		grep kubepods "$p/cgroup" 2>/dev/null | grep -qvE '[0-9a-f]{64}[^/]*/(.*/)?[^/]*kubepods' &&
			problems+=("process ${p#/proc/} ($(cat "$p/comm" 2>/dev/null)) is in a kubepods cgroup")
	done

	while read -r line; do problems+=("mount $line"); done < <(mounts_under "$NODE_DIR")
	[[ -f $(node_dir_marker) ]] && mountpoint -q "$NODE_DIR" && problems+=("mount $NODE_DIR (NODE_PIDNS's shared bind mount)")
	ip link show "$BRIDGE" >/dev/null 2>&1 && problems+=("link $BRIDGE exists")
	for c in /sys/fs/cgroup/*/kubepods; do
		[[ -d $c ]] || continue
		[[ -n $base ]] && grep -qxF "$c" "$base/cgroups" && continue
		problems+=("cgroup $c exists")
	done

	for t in "${IPTABLES_FAMILIES[@]}"; do
		command -v "$t-save" >/dev/null || continue
		while read -r line; do
			problems+=("$t: $line")
		done < <(iptables_rules "$t" | if [[ -n $base ]]; then comm -13 "$base/$t" -; else grep -E '(KUBE|CNI)-' || true; fi)
	done

	if [[ -n $base ]]; then
		while read -r line; do problems+=("new link $line"); done < <(link_names | comm -13 "$base/links" -)
		while read -r line; do problems+=("path $line"); done < <(
			list_host_paths | comm -13 "$base/paths" -
		)
		while IFS='=' read -r k v; do
			[[ $(sysctl -n "$k" 2>/dev/null) == "$v" ]] || problems+=("sysctl $k=$(sysctl -n "$k" 2>/dev/null), was $v")
		done <"$base/sysctl"
	else
		for p in "${HOST_PATHS[@]}"; do
			[[ -e $p ]] && [[ -n $(find "$p" -xdev \( -type s -o -name 'cni-*' -o -name '*.log' \) 2>/dev/null) ]] &&
				problems+=("path $p holds sockets, netns or logs")
		done
	fi

	if ((${#problems[@]} > 0)); then
		log "host is NOT clean:"
		printf '  %s\n' "${problems[@]}" >&2
		return 1
	fi
	log "host is clean${base:+ (compared with the baseline in $base)}"
}
