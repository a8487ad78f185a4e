#!/usr/bin/env bash
# bench-overhead.sh: what the process collector costs a busy node. Runs N
# /bin/true execs without and with `readyline events` running (its output to
# /dev/null), alternating the order each round, and prints the median ratio.
# Goal: at most 1.05. Needs root (eBPF) and bin/readyline (make build).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
n=${N:-2000}
rounds=${ROUNDS:-6}
tmp=$(mktemp -d)
collector_pid=
cleanup() {
	[ -n "$collector_pid" ] && kill "$collector_pid" 2>/dev/null && wait "$collector_pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

[ "$(id -u)" = 0 ] || { echo "bench-overhead: needs root (loads eBPF programs)" >&2; exit 1; }
(cd "$top" && go build -o "$tmp/spawn" ./collector/testdata/spawn)

without() { "$tmp/spawn" -n "$n" /bin/true; }
with() {
	"$top/bin/readyline" events >/dev/null 2>"$tmp/log" &
	collector_pid=$!
	for _ in $(seq 100); do
		grep -q '"process tracer attached"' "$tmp/log" && break
		sleep 0.05
	done
	grep -q '"process tracer attached"' "$tmp/log" || { cat "$tmp/log" >&2; exit 1; }
	"$tmp/spawn" -n "$n" /bin/true
	kill -INT "$collector_pid"
	wait "$collector_pid"
	collector_pid=
	grep -q '"kernel_drops":0' "$tmp/log" || echo "bench-overhead: the collector dropped events: $(tail -1 "$tmp/log")" >&2
}

base=() coll=()
for r in $(seq "$rounds"); do
	if [ $((r % 2)) = 1 ]; then
		base+=("$(without)"); coll+=("$(with)")
	else
		coll+=("$(with)"); base+=("$(without)")
	fi
	echo "round $r: without ${base[-1]} s, with ${coll[-1]} s"
done

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
mb=$(median "${base[@]}")
mc=$(median "${coll[@]}")
awk -v b="$mb" -v c="$mc" -v n="$n" 'BEGIN {
	printf "%d execs: median %.3f s without, %.3f s with the collector: %.1f vs %.1f us/exec\n", n, b, c, b/n*1e6, c/n*1e6
	printf "ratio %.3f (goal <= 1.05)\n", c/b
}'
