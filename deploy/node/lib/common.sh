# shellcheck shell=bash
# Logging, waiting and process bookkeeping shared by node.sh.
#
# Every process node.sh starts is recorded in $RUN_DIR/<name>.pid as
# "<pid> <start time in clock ticks since boot> <absolute executable path>".
# A process is only ever signalled when all three still match, so a PID that the
# kernel has handed to some other program since is never touched.

log() { printf '%s %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
warn() { log "WARN: $*"; }
die() {
	log "ERROR: $*"
	exit 1
}

need_root() {
	[[ $(id -u) -eq 0 ]] || die "node.sh must run as root (it starts kubelet, containerd and changes iptables)"
}

# wait_until SECONDS DESCRIPTION CMD... retries CMD every half second.
wait_until() {
	local timeout=$1 what=$2
	shift 2
	local deadline=$((SECONDS + timeout))
	until "$@" >/dev/null 2>&1; do
		((SECONDS < deadline)) || {
			log "timed out after ${timeout}s waiting for $what"
			return 1
		}
		sleep 0.5
	done
}

# proc_starttime PID prints field 22 of /proc/PID/stat (start time since boot).
proc_starttime() {
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	# The command name (field 2) may contain spaces; cut after its closing paren.
	stat=${stat##*) }
	# shellcheck disable=SC2086
	set -- $stat
	echo "${20}"
}

# proc_matches PID STARTTIME EXE succeeds when PID is still the process we recorded.
proc_matches() {
	local pid=$1 start=$2 exe=$3 now
	[[ $pid =~ ^[0-9]+$ ]] || return 1
	now=$(proc_starttime "$pid") || return 1
	[[ $now == "$start" ]] || return 1
	[[ $(readlink "/proc/$pid/exe" 2>/dev/null) == "$exe" || $(readlink "/proc/$pid/exe" 2>/dev/null) == "$exe (deleted)" ]]
}

pidfile() { echo "$RUN_DIR/$1.pid"; }

# recorded_pid NAME prints the PID of component NAME if it is alive and still ours.
recorded_pid() {
	local f pid start exe
	f=$(pidfile "$1")
	[[ -f $f ]] || return 1
	read -r pid start exe <"$f" || return 1
	proc_matches "$pid" "$start" "$exe" || return 1
	echo "$pid"
}

is_running() { recorded_pid "$1" >/dev/null; }

# start_process NAME BINARY ARGS... starts BINARY in its own session with output
# appended to $LOG_DIR/NAME.log and records its PID.
start_process() { start_process_via "$1" "" "${@:2}"; }

# start_process_via NAME LAUNCHER BINARY ARGS... is start_process through
# LAUNCHER, a command (words without spaces) that forks BINARY as its child and
# waits for it, such as nsenter or unshare --fork. BINARY's own PID is recorded,
# not the launcher's: stopping it ends the launcher too.
start_process_via() {
	local name=$1 via=$2 bin=$3
	shift 3
	local exe log pid start launcher=()
	read -ra launcher <<<"$via"
	exe=$(readlink -f "$bin") || die "$bin not found"
	[[ -x $exe ]] || die "$exe is not executable"
	mkdir -p "$RUN_DIR" "$LOG_DIR"
	log="$LOG_DIR/$name.log"
	[[ -s $log ]] && mv -f "$log" "$log.1"
	# setsid: the component must outlive the shell (and make, go test) that
	# started it. 9>&-: it must not inherit node.sh's lock (see with_lock).
	setsid "${launcher[@]}" "$exe" "$@" </dev/null >>"$log" 2>&1 9>&- &
	pid=$!
	if ((${#launcher[@]} > 0)); then
		pid=$(launched_child "$pid" "$exe") || die "$name did not start through $via, see $log"
	fi
	start=$(proc_starttime "$pid") || die "$name exited immediately, see $log"
	echo "$pid $start $exe" >"$(pidfile "$name")"
	log "started $name (pid $pid, log $log)"
}

# launched_child LAUNCHER_PID EXE prints the PID of the launcher's child once
# that child runs EXE (it is the launcher itself until it execs).
launched_child() {
	local parent=$1 exe=$2 c
	for _ in {1..100}; do
		for c in $(pgrep -P "$parent"); do
			[[ $(readlink "/proc/$c/exe" 2>/dev/null) == "$exe" ]] && echo "$c" && return 0
		done
		kill -0 "$parent" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# stop_process NAME [GRACE_SECONDS] sends SIGTERM to the recorded process, then
# SIGKILL after the grace period, and removes the PID file.
stop_process() {
	local name=$1 grace=${2:-20} f pid start exe
	f=$(pidfile "$name")
	[[ -f $f ]] || return 0
	if read -r pid start exe <"$f" && proc_matches "$pid" "$start" "$exe"; then
		kill -TERM "$pid" 2>/dev/null || true
		local deadline=$((SECONDS + grace))
		while proc_matches "$pid" "$start" "$exe" && ((SECONDS < deadline)); do sleep 0.2; done
		if proc_matches "$pid" "$start" "$exe"; then
			warn "$name (pid $pid) ignored SIGTERM for ${grace}s, sending SIGKILL"
			kill -KILL "$pid" 2>/dev/null || true
			while proc_matches "$pid" "$start" "$exe"; do sleep 0.1; done
		fi
		log "stopped $name (pid $pid)"
	fi
	rm -f "$f"
}

# http_ok URL [CURL ARGS...] succeeds when URL answers 2xx.
http_ok() {
	local url=$1
	shift
	curl -fsS -o /dev/null --max-time 3 "$@" "$url"
}

# render TEMPLATE OUT replaces each @NAME@ in TEMPLATE with the value of $NAME.
# Unknown placeholders are an error, so a typo cannot produce a silently broken config.
render() {
	local tpl=$1 out=$2 text name
	text=$(<"$tpl")
	while [[ $text =~ @([A-Z0-9_]+)@ ]]; do
		name=${BASH_REMATCH[1]}
		[[ -v $name ]] || die "$tpl: no value for @$name@"
		text=${text//@"$name"@/${!name}}
	done
	mkdir -p "$(dirname "$out")"
	printf '%s\n' "$text" >"$out"
}

# image_patch DIGEST prints the merge patch that stamps readyline's pod
# template with its image's digest: the image keeps its tag
# (localhost/readyline:dev), so only a changed template restarts the pods
# on a rebuilt one; an unchanged digest patches nothing.
image_patch() {
	printf '{"spec":{"template":{"metadata":{"annotations":{"readyline.dev/image":"%s"}}}}}' "${1#sha256:}"
}
