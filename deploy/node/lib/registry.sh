# shellcheck shell=bash
# The node's image registry: the CNCF distribution registry (tools/registry)
# on loopback, plain HTTP, its storage in $NODE_DIR/registry (gone with the
# node). `up` starts it before containerd and fills it with tools/imagepush:
#
#   127.0.0.1:5000/readyline/pause:local      the local images of lib/images.sh,
#   127.0.0.1:5000/readyline/busybox:local    manifest for manifest as containerd
#   127.0.0.1:5000/readyline/nginx:local      imported them (their layers are
#   127.0.0.1:5000/readyline/coredns:VER      already in containerd: a pull only
#                                             resolves and fetches the manifest)
#   127.0.0.1:5000/readyline/large:256mib     busybox plus a 256 MiB layer of
#                                             random data (ChaCha8, seed 13): a
#                                             pull that takes time
#   127.0.0.1:5000/readyline/missing:nope     never there: a pull fails with
#                                             "not found" (imagepush deletes it
#                                             if someone pushed it)
#
# containerd's CRI plugin reads $REGISTRY_HOSTS_DIR (config_path), where
# config/hosts.toml.in sends 127.0.0.1:5000 to plain HTTP.

REGISTRY_ADDR=127.0.0.1:5000
REGISTRY_URL=http://$REGISTRY_ADDR
REGISTRY_REPO_PREFIX=readyline
REGISTRY_LARGE_MIB=256
REGISTRY_LARGE_SEED=13
REGISTRY_LARGE_IMAGE=$REGISTRY_ADDR/$REGISTRY_REPO_PREFIX/large:256mib
REGISTRY_MISSING_IMAGE=$REGISTRY_ADDR/$REGISTRY_REPO_PREFIX/missing:nope
# The archives lib/images.sh writes, pushed as readyline/<name>:<tag>.
REGISTRY_ARCHIVES=(pause busybox nginx coredns)

registry_is_healthy() { is_running registry && http_ok "$REGISTRY_URL/v2/"; }

# shellcheck disable=SC2034 # REGISTRY_STORAGE and REGISTRY_HOSTS_DIR are template values.
render_registry_configs() {
	render "$CONFIG_SRC/registry.yml.in" "$CONF_DIR/registry.yml"
	render "$CONFIG_SRC/hosts.toml.in" "$REGISTRY_HOSTS_DIR/$REGISTRY_ADDR/hosts.toml"
}

# start_registry starts the registry unless ours answers already. A recorded
# registry that does not answer is stopped first (only by its recorded PID:
# stop_process checks start time and executable); a port held by anything
# else is an error, never a reason to kill.
start_registry() {
	if registry_is_healthy; then
		log "registry is already up ($REGISTRY_URL)"
		return 0
	fi
	stop_process registry
	if ss -Htln "sport = :${REGISTRY_ADDR##*:}" | grep -q .; then
		die "port ${REGISTRY_ADDR##*:} is in use by a process this script did not start: $(ss -Htlnp "sport = :${REGISTRY_ADDR##*:}" | grep -o 'users:.*' | head -1)"
	fi
	mkdir -p "$REGISTRY_STORAGE"
	# Its OpenTelemetry exporter defaults to OTLP on localhost:4318, which is
	# the local Jaeger: the registry's spans would mix with readyline's.
	# shellcheck disable=SC2153 # REGISTRY_DIR is set by node.sh's set_paths.
	OTEL_TRACES_EXPORTER=none start_process registry "$REGISTRY_DIR/bin/registry" serve "$CONF_DIR/registry.yml"
	wait_until 30 "the registry at $REGISTRY_URL" http_ok "$REGISTRY_URL/v2/" ||
		die "the registry did not answer, see $LOG_DIR/registry.log"
}

# push_images fills the registry (see the top of this file). imagepush skips
# every manifest the registry has already, so a second run only reads: ~1 s
# to regenerate and hash the random layer.
push_images() {
	local bin=$NODE_DIR/bin/imagepush name archives=() t0=$SECONDS
	mkdir -p "$(dirname "$bin")"
	ensure_go
	(cd "$IMAGEPUSH_TOOLS" && CGO_ENABLED=0 go build -mod=readonly -trimpath -o "$bin" .) ||
		die "building deploy/node/tools/imagepush failed"
	for name in "${REGISTRY_ARCHIVES[@]}"; do archives+=("$IMAGES_DIR/$name.tar"); done
	"$bin" -registry "$REGISTRY_ADDR" -prefix "$REGISTRY_REPO_PREFIX" \
		-large "${REGISTRY_LARGE_IMAGE#"$REGISTRY_ADDR"/}" -large-base "$IMAGES_DIR/busybox.tar" \
		-large-mib "$REGISTRY_LARGE_MIB" -large-seed "$REGISTRY_LARGE_SEED" \
		-absent "${REGISTRY_MISSING_IMAGE#"$REGISTRY_ADDR"/}" \
		"${archives[@]}" || die "pushing the node's images to $REGISTRY_URL failed"
	log "registry $REGISTRY_URL filled in $((SECONDS - t0))s"
}
