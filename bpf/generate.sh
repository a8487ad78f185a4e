#!/usr/bin/env bash
# generate.sh regenerates the bpf2go output for amd64 and arm64
# (*_x86_bpfel.{go,o}, *_arm64_bpfel.{go,o}) with Debian's clang 14, the
# pinned compiler; the output is byte-for-byte reproducible and independent
# of the checkout's path. One vmlinux.h (x86's) serves both arches: the
# kernel structs are read through CO-RE, and goprobe's registers through
# goabi.h, which needs no kernel types on arm64.
#
#   bpf/generate.sh            regenerate in place
#   bpf/generate.sh --verify   regenerate in a scratch copy and fail if the
#                              committed files differ (stale objects)
#   bpf/generate.sh --vmlinux  also refresh bpf/vmlinux.h from the running
#                              kernel's BTF (machine-specific: commit with care;
#                              an x86 kernel's, as goabi.h reads x86's pt_regs)
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
export BPF_CLANG=${BPF_CLANG:-clang-14}
export BPF_CFLAGS="-O2 -g -Wall -Werror"

command -v "$BPF_CLANG" >/dev/null || {
	echo "generate: $BPF_CLANG not found (apt-get install clang-14 llvm-14 libbpf-dev)" >&2
	exit 1
}
[ -f /usr/include/bpf/bpf_helpers.h ] || {
	echo "generate: libbpf headers not found (apt-get install libbpf-dev)" >&2
	exit 1
}
# bpf2go strips the object with llvm-strip; Debian names it llvm-strip-14.
shim=
if ! command -v llvm-strip >/dev/null; then
	shim=$(mktemp -d)
	trap 'rm -rf "$shim"' EXIT
	ln -s "$(command -v llvm-strip-14)" "$shim/llvm-strip"
	export PATH="$shim:$PATH"
fi

generated() { (cd "$1" && ls ./*_bpfel.go ./*_bpfel.o); }

case "${1:-}" in
--vmlinux)
	if [ "$(uname -m)" != x86_64 ]; then
		echo "generate: --vmlinux needs an x86_64 kernel's BTF (goabi.h reads x86's struct pt_regs from it)" >&2
		exit 1
	fi
	bpftool btf dump file /sys/kernel/btf/vmlinux format c >"$top/bpf/vmlinux.h"
	(cd "$top/bpf" && go generate ./)
	;;
--verify)
	scratch=$(mktemp -d "$top/.verify-generate.XXXXXX")
	trap 'rm -rf "$scratch" ${shim:+"$shim"}' EXIT # the shim's too
	cp "$top/go.mod" "$top/go.sum" "$scratch/"
	mkdir "$scratch/bpf"
	cp "$top"/bpf/*.c "$top"/bpf/*.h "$top/bpf/gen.go" "$scratch/bpf/"
	(cd "$scratch/bpf" && go generate ./)
	stale=0
	for f in $(generated "$scratch/bpf"); do
		if ! cmp -s "$scratch/bpf/$f" "$top/bpf/$f"; then
			echo "verify-generate: bpf/$f is stale: run 'make generate' and commit the result" >&2
			stale=1
		fi
	done
	# A committed file bpf2go no longer writes (a target dropped) is stale too.
	for f in $(generated "$top/bpf"); do
		if [ ! -e "$scratch/bpf/$f" ]; then
			echo "verify-generate: bpf/$f is no longer generated: remove it" >&2
			stale=1
		fi
	done
	[ "$stale" = 0 ] && echo "verify-generate: bpf2go output is up to date"
	exit "$stale"
	;;
"")
	(cd "$top/bpf" && go generate ./)
	;;
*)
	echo "usage: $0 [--verify|--vmlinux]" >&2
	exit 2
	;;
esac
