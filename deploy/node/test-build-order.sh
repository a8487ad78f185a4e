#!/usr/bin/env bash
# test-build-order.sh — the build ledger (deploy/node/lib/build.sh, set up by
# the Makefile) catches, on a warm machine, a step that uses a cached binary
# before the step that builds it: the order that fails on a fresh machine.
#
# A cache of its own holds a stand-in promtool, as a warm machine's cache holds
# the real one; Makefile fragments ask node.sh for it in either order, under
# readyline's Makefile (which sets a new ledger for each make run) and without
# it. Nothing is built and nothing outside a directory under /tmp changes.
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
NODE_SH=$REPO_ROOT/deploy/node/node.sh

work=$(mktemp -d /tmp/readyline-build-order.XXXXXX)
trap '[[ -n ${KEEP:-} ]] || rm -rf "$work"' EXIT

# Where node.sh caches promtool (set_paths: promtool-<version>/bin).
version=$(awk -F= '$1 == "PROMETHEUS_VERSION" {print $2}' "$NODE_SH")
[[ -n $version ]] || { echo "cannot read PROMETHEUS_VERSION from $NODE_SH" >&2; exit 1; }
mkdir -p "$work/cache/promtool-$version/bin"
printf '#!/bin/sh\necho stand-in promtool\n' >"$work/cache/promtool-$version/bin/promtool"
chmod +x "$work/cache/promtool-$version/bin/promtool"

# use-before-build reads promtool as a test does (--built), then asks for it;
# build-before-use asks first. ask and use are the two halves, for runs that
# share a ledger (a sub-make) or do not (two make runs).
cat >"$work/order.mk" <<MK
NODE_SH := $NODE_SH
use-before-build:
	\$(NODE_SH) tool --built promtool
	\$(NODE_SH) tool promtool
build-before-use:
	\$(NODE_SH) tool promtool
	\$(NODE_SH) tool --built promtool
ask:
	\$(NODE_SH) tool promtool
use:
	\$(NODE_SH) tool --built promtool
ask-then-sub-make-use: ask
	\$(MAKE) -f $work/order.mk use
MK

failures=0
fail() {
	echo "FAIL: $*" >&2
	failures=$((failures + 1))
}

# run NAME WANT MAKE-ARGS... runs make (from readyline's checkout, with the
# stand-in cache and no ledger inherited from the make that runs this test)
# and checks its exit: WANT is ok or fail.
run() {
	local name=$1 want=$2 out rc=0
	shift 2
	out=$(cd "$REPO_ROOT" && env -u READYLINE_BUILD_LEDGER -u MAKEFLAGS -u MAKELEVEL \
		READYLINE_CACHE="$work/cache" NODE_DIR="$work/node" \
		make --no-print-directory "$@" 2>&1) || rc=$?
	case $want in
	ok) ((rc == 0)) || { fail "$name: exit $rc, want 0:"; echo "$out" | tail -n 5 >&2; return; } ;;
	fail)
		if ((rc == 0)); then
			fail "$name: exit 0, want a failure:"
			echo "$out" | tail -n 5 >&2
			return
		fi
		[[ $out == *"promtool is used before any step of this run built it"* ]] ||
			{ fail "$name: failed, but not for the order:"; echo "$out" | tail -n 5 >&2; return; }
		;;
	esac
	echo "ok: $name ($want)"
}

# Without a ledger the warm cache hides the wrong order: what the ledger is for.
run "warm cache, no ledger, use before build" ok -f "$work/order.mk" use-before-build
# Under readyline's Makefile each run has its own ledger.
run "Makefile, use before build" fail -f Makefile -f "$work/order.mk" use-before-build
run "Makefile, build before use" ok -f Makefile -f "$work/order.mk" build-before-use
run "Makefile, a sub-make shares its parent's ledger" ok -f Makefile -f "$work/order.mk" ask-then-sub-make-use
run "Makefile, an earlier make run's build does not count (1: ask)" ok -f Makefile -f "$work/order.mk" ask
run "Makefile, an earlier make run's build does not count (2: use)" fail -f Makefile -f "$work/order.mk" use

# The ledger does not hide a binary that is missing: that error stays.
rm -rf "$work/cache/promtool-$version"
ledger=$work/ledger
echo "$work/cache/promtool-$version/bin/promtool" >"$ledger"
if out=$(READYLINE_BUILD_LEDGER=$ledger READYLINE_CACHE=$work/cache NODE_DIR=$work/node "$NODE_SH" tool --built promtool 2>&1); then
	fail "tool --built promtool succeeded with no promtool in the cache: $out"
elif [[ $out != *"promtool is not built yet"* ]]; then
	fail "tool --built promtool with no promtool in the cache said: $out"
else
	echo "ok: a missing binary is still 'not built yet', ledger or not"
fi

if ((failures > 0)); then
	echo "test-build-order.sh: $failures failed" >&2
	exit 1
fi
echo "test-build-order.sh: all passed"
