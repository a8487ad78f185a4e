#!/usr/bin/env bash
# test-fresh-cache.sh — the scripts behind the README's two commands, run as on a
# fresh machine: with a binary cache (READYLINE_CACHE) and a node directory
# (NODE_DIR) that do not exist yet, up to their first build of a cached binary.
#
# A `go` in front of PATH stops each run at that first build (any build whose
# output goes into the cache); readyline's own `make build` goes through to the
# real go. Every script runs traced (xtrace, inherited through SHELLOPTS, PS4
# through BASH_ENV), and
# the test fails when a script other than node.sh itself expanded a path in the
# cache before that build: such a path is computed before the step that makes
# it, as demo.sh once globbed kubectl before `node.sh up` had built it. Callers
# ask `node.sh tool NAME` instead. Changes nothing on the host but bin/readyline
# and a directory under /tmp; needs root (the scripts check for it).
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# node.sh and its libraries own the cache: they may name paths in it early.
OWNERS=(node.sh build.sh common.sh components.sh host.sh images.sh pki.sh pidns.sh registry.sh)

[[ $(id -u) -eq 0 ]] || { echo "test-fresh-cache.sh must run as root (the scripts it runs do)" >&2; exit 1; }
real_go=$(command -v go) || { echo "go is not on PATH" >&2; exit 1; }

work=$(mktemp -d /tmp/readyline-fresh-cache.XXXXXX)
trap '[[ -n ${KEEP:-} ]] || rm -rf "$work"' EXIT
cache=$work/cache
mkdir -p "$work/shim"
cat >"$work/shim/go" <<SHIM
#!/usr/bin/env bash
# A build into the cache is where the test ends; anything else is the real go.
for a in "\$PWD" "\${GOBIN:-}" "\$@"; do
	if [[ \$a == *"$cache"* ]]; then
		echo "FRESH-CACHE-TEST: first build: go \$*" >&2
		exit 97
	fi
done
exec "$real_go" "\$@"
SHIM
chmod +x "$work/shim/go"
# Each traced line names its script, so that node.sh's own lines can be told apart.
echo "PS4='+[xtrace \${BASH_SOURCE[0]:+\${BASH_SOURCE[0]##*/}}:\${LINENO}] '" >"$work/bash_env"

failures=0
fail() {
	echo "FAIL: $*" >&2
	failures=$((failures + 1))
}

# run NAME CMD... runs CMD traced against the fresh cache and node directory and
# checks its trace.
run() {
	local name=$1 trace=$work/${1//[^a-z-]/_}.trace rc=0
	shift
	rm -rf "$cache" "$work/node"
	(
		cd "$REPO_ROOT"
		export PATH=$work/shim:$PATH READYLINE_CACHE=$cache NODE_DIR=$work/node
		# Bash run as root ignores an exported PS4, but reads BASH_ENV.
		export BASH_ENV=$work/bash_env
		# Only xtrace goes to the children, not this script's -euo pipefail.
		set +euo pipefail
		set -x
		export SHELLOPTS
		"$@"
	) >"$trace" 2>&1 || rc=$?
	if ! grep -q '^FRESH-CACHE-TEST: first build' "$trace"; then
		fail "$name: never reached a build into the cache (exit $rc); trace:"
		tail -n 30 "$trace" >&2
		return
	fi
	((rc != 0)) || fail "$name: exited 0 although its first build was refused"
	local before bad
	before=$(sed '/^FRESH-CACHE-TEST: first build/q' "$trace")
	bad=$(grep -F "$cache" <<<"$before" | grep '\[xtrace ' |
		grep -vE "\[xtrace ($(
			IFS='|'
			echo "${OWNERS[*]}"
		)):" | grep -v '\[xtrace go:' || true)
	if [[ -n $bad ]]; then
		fail "$name: a path in the cache was expanded before the first build:"
		echo "$bad" | head -n 10 >&2
	else
		echo "ok: $name stopped at its first build ($(grep -m1 '^FRESH-CACHE-TEST' "$trace" | sed 's/.*go /go /' | cut -c1-100)), no cache path used before it"
	fi
}

run "make demo" "$REPO_ROOT/deploy/demo/demo.sh" up
run "node.sh up" "$REPO_ROOT/deploy/node/node.sh" up
run "node.sh jaeger-up" "$REPO_ROOT/deploy/node/node.sh" jaeger-up
run "deploy/alerts/test.sh" "$REPO_ROOT/deploy/alerts/test.sh"

# Asking for a tool that is not built: a clear error, and no cache created.
rm -rf "$cache"
if out=$(READYLINE_CACHE=$cache NODE_DIR=$work/node "$REPO_ROOT/deploy/node/node.sh" tool --built kubectl 2>&1); then
	fail "node.sh tool --built kubectl succeeded with an empty cache: $out"
elif [[ $out != *"kubectl is not built yet"* ]]; then
	fail "node.sh tool --built kubectl with an empty cache said: $out"
elif [[ -e $cache ]]; then
	fail "node.sh tool --built kubectl created $cache"
else
	echo "ok: node.sh tool --built kubectl with an empty cache: ${out#* ERROR: }"
fi

if ((failures > 0)); then
	echo "test-fresh-cache.sh: $failures failed" >&2
	exit 1
fi
echo "test-fresh-cache.sh: all passed"
