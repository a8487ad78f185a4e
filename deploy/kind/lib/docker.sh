# shellcheck shell=bash
# The Docker engine kind runs on. A dockerd that already answers (DOCKER_HOST,
# or the default socket) is used as it is and never stopped. Otherwise kind.sh
# starts Debian's dockerd on a socket, data root and exec root of its own
# (everything under $KIND_STATE), records its PID like node.sh records its
# components (lib/common.sh), and `down` stops it and removes its image store.
#
# Settings of our dockerd, and why:
#   --bridge=none        no docker0: kind's nodes use the network below
#   --iptables=false --ip-forward=false
#                        the host's iptables, FORWARD policy and ip_forward stay
#                        as they are, so the local node (deploy/node) keeps
#                        working beside kind. kind needs none of it here: the
#                        nodes talk over one bridge, pods reach the other node
#                        through routes inside the nodes, and the API server's
#                        published port is served by docker-proxy (userland).
#   default runtime      deploy/kind/docker/runc-nosysresource: runc without
#                        CAP_SYS_RESOURCE where the host lacks it, and with the
#                        capabilities newer than Docker 20.10 for privileged
#                        containers (kind's nodes)
# kind's network is created here, before kind does, with a bridge of a known
# name ($KIND_BRIDGE), so that a killed run's bridge can be found and removed.

DOCKER_SOCK=unix:///run/readyline-docker.sock
KIND_NETWORK=kind
KIND_BRIDGE=rlkind0

docker_paths() {
	DOCKER_DATA=$KIND_STATE/docker
	DOCKER_EXEC=$KIND_STATE/exec
	DOCKER_CONFIG_FILE=$KIND_STATE/daemon.json
	DOCKER_MODE_FILE=$KIND_STATE/docker-mode
}

# docker_answers HOST succeeds when a Docker engine answers on HOST.
docker_answers() { DOCKER_HOST=$1 timeout 10 docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

# docker_select sets DOCKER_HOST: our dockerd if it runs, else one that already
# answers, else ours, started now.
docker_select() {
	docker_paths
	if is_running dockerd && docker_answers "$DOCKER_SOCK"; then
		export DOCKER_HOST=$DOCKER_SOCK
		return 0
	fi
	local h
	for h in ${DOCKER_HOST:-} unix:///var/run/docker.sock; do
		if docker_answers "$h"; then
			export DOCKER_HOST=$h
			echo external >"$DOCKER_MODE_FILE"
			log "using the Docker engine that already answers on $h (it is left running)"
			return 0
		fi
	done
	docker_start
}

docker_start() {
	local dockerd
	dockerd=$(command -v dockerd) || {
		install_debian_packages docker.io
		dockerd=$(command -v dockerd) || die "no dockerd after installing docker.io"
	}
	docker_cleanup_dead
	mkdir -p "$DOCKER_DATA" "$DOCKER_EXEC" "$RUN_DIR" "$LOG_DIR"
	jq -n --arg path "$KIND_SCRIPT_DIR/docker/runc-nosysresource" \
		'{runtimes: {"readyline-runc": {path: $path}}, "default-runtime": "readyline-runc"}' >"$DOCKER_CONFIG_FILE"
	start_process dockerd "$dockerd" --config-file "$DOCKER_CONFIG_FILE" \
		-H "$DOCKER_SOCK" --data-root "$DOCKER_DATA" --exec-root "$DOCKER_EXEC" \
		--pidfile "$RUN_DIR/dockerd.own.pid" --bridge=none --iptables=false --ip-forward=false \
		--ip6tables=false --userland-proxy=true
	echo own >"$DOCKER_MODE_FILE"
	export DOCKER_HOST=$DOCKER_SOCK
	wait_until 60 "dockerd on $DOCKER_SOCK" docker_answers "$DOCKER_SOCK" ||
		die "dockerd did not answer, see $LOG_DIR/dockerd.log"
	log "dockerd $(docker version --format '{{.Server.Version}}') answers on $DOCKER_SOCK (data root $DOCKER_DATA)"
}

# docker_network creates kind's network on our dockerd, with its bridge named
# $KIND_BRIDGE (kind reuses a network that exists).
docker_network() {
	[[ $(cat "$DOCKER_MODE_FILE" 2>/dev/null) == own ]] || return 0
	docker network inspect "$KIND_NETWORK" >/dev/null 2>&1 && return 0
	docker network create -d bridge -o com.docker.network.bridge.name="$KIND_BRIDGE" \
		-o com.docker.network.bridge.enable_ip_masquerade=false "$KIND_NETWORK" >/dev/null
}

# docker_stop stops our dockerd (never one we did not start) and removes what
# it leaves: its data root (image store), exec root, network and mounts.
docker_stop() {
	docker_paths
	if [[ $(cat "$DOCKER_MODE_FILE" 2>/dev/null) == external ]]; then
		rm -f "$DOCKER_MODE_FILE"
		return 0
	fi
	if is_running dockerd; then
		DOCKER_HOST=$DOCKER_SOCK docker network rm "$KIND_NETWORK" >/dev/null 2>&1 || true
		stop_process dockerd 30
	fi
	docker_cleanup_dead
	rm -f "$DOCKER_MODE_FILE"
}

# docker_cleanup_dead removes what a dockerd of ours that is no longer running
# (stopped, or killed with its session) left behind: processes still running
# from its containers, its containerd and shims, mounts under $KIND_STATE, the
# kind bridge, the socket, the data and exec roots.
docker_cleanup_dead() {
	is_running dockerd && die "dockerd (pid $(recorded_pid dockerd)) is running: stop it first"
	local pid ids id line
	# Processes of our containers: their cgroup path names the container id.
	ids=$(ls "$DOCKER_DATA/containers" 2>/dev/null || true)
	for p in /proc/[0-9]*; do
		pid=${p#/proc/}
		line=$(tr '\0' ' ' 2>/dev/null <"$p/cmdline") || continue
		# dockerd's own containerd and the shims name our exec root.
		if [[ $line == *"$DOCKER_EXEC/"* ]]; then
			kill -KILL "$pid" 2>/dev/null && log "killed leftover pid $pid ($line)"
			continue
		fi
		for id in $ids; do
			if grep -q "$id" "$p/cgroup" 2>/dev/null; then
				kill -KILL "$pid" 2>/dev/null && log "killed leftover pid $pid of container ${id:0:12}"
				break
			fi
		done
	done
	while read -r line; do
		umount -n -l "$line" 2>/dev/null || warn "cannot unmount $line"
	done < <(findmnt -rn -o TARGET | awk -v s="$KIND_STATE/" 'index($0, s) == 1' | sort -r)
	if ip link show "$KIND_BRIDGE" >/dev/null 2>&1; then
		ip link del "$KIND_BRIDGE" && log "removed bridge $KIND_BRIDGE"
	fi
	rm -f "${DOCKER_SOCK#unix://}"
	rm -rf "$DOCKER_DATA" "$DOCKER_EXEC" "$DOCKER_CONFIG_FILE"
}

# docker_check_clean prints what our dockerd left on the host.
docker_check_clean() {
	docker_paths
	local p line
	is_running dockerd && echo "dockerd (pid $(recorded_pid dockerd)) is running"
	for p in /proc/[0-9]*; do
		line=$(tr '\0' ' ' 2>/dev/null <"$p/cmdline") || continue
		[[ $line == *"$KIND_STATE/"* ]] && echo "process ${p#/proc/} ($line)"
	done
	findmnt -rn -o TARGET | awk -v s="$KIND_STATE/" 'index($0, s) == 1 {print "mount " $0}'
	ip link show "$KIND_BRIDGE" >/dev/null 2>&1 && echo "link $KIND_BRIDGE exists"
	ip -o link show type veth 2>/dev/null | awk -v b="$KIND_BRIDGE" '$0 ~ "master " b {print "veth " $2}'
	[[ -e ${DOCKER_SOCK#unix://} ]] && echo "socket ${DOCKER_SOCK#unix://} exists"
	[[ -e $DOCKER_DATA ]] && echo "image store $DOCKER_DATA exists"
	[[ -e $DOCKER_EXEC ]] && echo "exec root $DOCKER_EXEC exists"
	iptables-save 2>/dev/null | grep -q 'DOCKER' && echo "iptables rules of Docker exist"
	true
}
