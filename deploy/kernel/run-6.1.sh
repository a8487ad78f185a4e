#!/usr/bin/env bash
# run-6.1.sh — readyline's privileged eBPF tests on Debian 12's kernel, Linux
# 6.1 (no uprobe_multi: the kubelet-call probes must take their per-address
# fallback), booted under QEMU without KVM, for amd64 or, with
# GUEST_ARCH=arm64, for arm64 (emulated). See deploy/kernel/README.md.
#
#   run-6.1.sh         fetch (once) the kernel and QEMU, build the test
#                      binaries on the host, boot the kernel with the host's
#                      files shared read-only, run the tests, power off; exit
#                      non-zero when a test failed or the guest did not finish
#   run-6.1.sh stop    stop a QEMU that a killed run left behind (by the PID
#                      it recorded) and remove the run directory
#
# Settings (env): GUEST_ARCH (amd64 or arm64), READYLINE_CACHE
# (/var/cache/readyline: the kernel, arm64's root file system),
# KERNEL_RUN_DIR (bin/kernel-6.1 in the checkout, bin/kernel-6.1-arm64 for
# arm64: test binaries, logs, the guest's console), GUEST_TIMEOUT (1800 s), GUEST_CPUS (2), GUEST_MEMORY (2048 MiB),
# KERNEL_TESTS (the -test.run pattern, ^TestIntegration), KERNEL_SKIP (its
# -test.skip: the tests that read the kubelet binaries deploy/node builds or
# compile against cri-api, which are no kernel's and need what the guest
# lacks (the host runs them)).
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/../.." && pwd)
READYLINE_CACHE=${READYLINE_CACHE:-/var/cache/readyline}
GUEST_ARCH=${GUEST_ARCH:-amd64}
case $GUEST_ARCH in
amd64) KERNEL_RUN_DIR=${KERNEL_RUN_DIR:-$REPO_ROOT/bin/kernel-6.1} ;;
arm64) KERNEL_RUN_DIR=${KERNEL_RUN_DIR:-$REPO_ROOT/bin/kernel-6.1-arm64} ;;
*)
	echo "run-6.1.sh: GUEST_ARCH=$GUEST_ARCH: want amd64 or arm64" >&2
	exit 2
	;;
esac
GUEST_TIMEOUT=${GUEST_TIMEOUT:-1800}
GUEST_CPUS=${GUEST_CPUS:-2}
GUEST_MEMORY=${GUEST_MEMORY:-2048}
KERNEL_TESTS=${KERNEL_TESTS:-^TestIntegration}
KERNEL_SKIP=${KERNEL_SKIP:-^(TestIntegrationCRIAPILayouts|TestIntegrationKubeletVersions)$}
# The collector's tests run again in a pod's container with a cgroup
# namespace of its own: those of attribution by cgroup. Not those that
# start a process of their own as the host's or the node's: in the pod's
# cgroup it is a pod's (the CRI-client look-alike of the kubelet-call tests,
# which the kubelet search rightly refuses there; the host process of
# TestIntegrationCNIPluginEnvironment).
CGROUPNS_TESTS=${CGROUPNS_TESTS:-^TestIntegration(ExecExitInContainerCgroup|ShortLivedContainer|CgroupRemovedWhileRead|KilledBySignal|NestedNodesPodsAreNotThisNodes|PIDNamespace)$}
CGROUPNS_POD=7c1e5b2a-3d4f-4a6b-8c9d-0e1f2a3b4c5d
CGROUPNS_CONTAINER=5e0c9a4f7b2d1e8c3a6f9b0d4e7c2a5f8b1e3d6c9a0f4b7e2d5c8a1f3b6e9d0c

# The kernel is whatever Debian 12's linux-image-ARCH depends on today (the
# current 6.1 ABI package); without apt (offline), the newest one cached.
KERNEL_META=linux-image-$GUEST_ARCH
KERNEL_SERIES=6.1
# Modules the guest loads (with their dependencies): virtio-pci and 9p for
# the host's files, veth for the TCP test across network namespaces.
# Everything else the tests use (BTF, uprobes, ring buffers, cgroup2,
# tracefs) is built into Debian's kernel.
GUEST_MODULES=(virtio_pci 9pnet_virtio 9p veth)
# Debian packages on the host: QEMU without its recommends (no GUI),
# busybox-static for the guest's init. The tests also run the host's gcc,
# ip and unshare inside the guest (make test-deps installs gcc).
HOST_PACKAGES=(qemu-system-x86 busybox-static iproute2 util-linux gcc libc6-dev)

# An arm64 guest cannot run the host's programs: its root is a Debian 12
# arm64 tree of its own (debootstrap's first stage, every package unpacked:
# bash, coreutils, iproute2, util-linux, gcc, what the tests run), its
# busybox Debian's arm64 busybox-static, both fetched from the host's
# Debian mirror with an apt of their own (READYLINE_CACHE/apt-arm64: the
# host's dpkg is not given a foreign architecture). The checkout is shared
# at its own path.
ARM64_HOST_PACKAGES=(qemu-system-arm debootstrap busybox-static)
ARM64_ROOT_PACKAGES=bash,coreutils,grep,mawk,iproute2,util-linux,mount,gcc,libc6-dev
case $GUEST_ARCH in
amd64)
	QEMU=qemu-system-x86_64
	QEMU_MACHINE=(-machine q35 -accel tcg -cpu max)
	GUEST_CONSOLE=ttyS0
	GO_ARCH_ENV=()
	;;
arm64)
	HOST_PACKAGES=("${ARM64_HOST_PACKAGES[@]}")
	QEMU=qemu-system-aarch64
	# pauth-impdef: TCG's emulation of the architected pointer
	# authentication is several times slower, and nothing here needs it.
	QEMU_MACHINE=(-machine virt -accel tcg -cpu max,pauth-impdef=on)
	GUEST_CONSOLE=ttyAMA0
	GO_ARCH_ENV=(GOARCH=arm64 CGO_ENABLED=0)
	;;
esac

# RUN_DIR and LOG_DIR: where lib/common.sh keeps PID files and logs.
RUN_DIR=$KERNEL_RUN_DIR
LOG_DIR=$KERNEL_RUN_DIR
# shellcheck source=../node/lib/common.sh
source "$REPO_ROOT/deploy/node/lib/common.sh"
# shellcheck source=../node/lib/build.sh
source "$REPO_ROOT/deploy/node/lib/build.sh"
# shellcheck source=lib/kernel.sh
source "$SCRIPT_DIR/lib/kernel.sh"

OUT=$KERNEL_RUN_DIR/out     # the guest's writable share: guest.sh, logs, status
TESTS=$KERNEL_RUN_DIR/tests # test binaries, read by the guest through the host share

# guest_root prints the root file system the guest runs its tests in: the
# host's own (/) for amd64; for arm64 a Debian 12 arm64 tree in
# READYLINE_CACHE (made once: debootstrap's first stage, then every package
# it fetched unpacked, as the second stage would without running their
# scripts, which need an arm64 machine). The caller holds the cache's lock.
guest_root() {
	if [[ $GUEST_ARCH == amd64 ]]; then
		echo /
		return
	fi
	local key dir mirror t0=$SECONDS deb
	key=$(printf 'bookworm %s %s\n' "$GUEST_ARCH" "$ARM64_ROOT_PACKAGES" | sha256sum | cut -c1-12)
	dir=$READYLINE_CACHE/debian-root-$GUEST_ARCH-$key
	if [[ ! -f $dir/complete ]]; then
		mirror=$(apt_mirror bookworm)
		rm -rf "$dir" && mkdir -p "$dir"
		log "debootstrap bookworm ($GUEST_ARCH, first stage) for the guest's root (cold: ~1 min)"
		debootstrap --foreign --arch="$GUEST_ARCH" --variant=minbase --include="$ARM64_ROOT_PACKAGES" \
			bookworm "$dir/rootfs" "$mirror" >"$dir/debootstrap.log" 2>&1 ||
			die "debootstrap failed, see $dir/debootstrap.log"
		for deb in "$dir"/rootfs/var/cache/apt/archives/*.deb; do
			dpkg-deb -x "$deb" "$dir/rootfs" || die "unpacking $deb"
		done
		rm -f "$dir"/rootfs/var/cache/apt/archives/*.deb
		# What the packages' scripts would have made: awk's alternative.
		ln -sf mawk "$dir/rootfs/usr/bin/awk"
		touch "$dir/complete"
		log "the guest's root made in $((SECONDS - t0))s"
	fi
	echo "$dir/rootfs"
}

# build_initramfs KERNEL_DIR OUT writes the guest's initramfs: busybox (the
# host's, or the one of the guest's architecture kernel_dir fetched),
# guest-init.sh as /init and the modules.
build_initramfs() {
	local kdir=$1 out=$2 root busybox=/bin/busybox
	[[ $GUEST_ARCH == amd64 ]] || busybox=$kdir/busybox
	root=$KERNEL_RUN_DIR/initramfs
	rm -rf "$root" && mkdir -p "$root/bin" "$root/modules"
	file_is_static "$busybox" || die "$busybox is not statically linked (is busybox-static installed?)"
	cp "$busybox" "$root/bin/busybox"
	cp "$SCRIPT_DIR/guest-init.sh" "$root/init"
	resolve_modules "$kdir/modules" "$root/modules" "${GUEST_MODULES[@]}"
	(cd "$root" && find . | LC_ALL=C sort | busybox cpio -o -H newc 2>/dev/null | gzip -1) >"$out"
	rm -rf "$root"
}

# build_tests builds the test binaries and crilike on the host, for the
# guest's architecture: the guest has no Go toolchain to build them (and
# would take ages under TCG).
build_tests() {
	local t0=$SECONDS
	command -v go >/dev/null || die "go is not on PATH"
	rm -rf "$TESTS" && mkdir -p "$TESTS"
	log "building the test binaries"
	(
		cd "$REPO_ROOT"
		((${#GO_ARCH_ENV[@]} == 0)) || export "${GO_ARCH_ENV[@]}"
		go test -c -o "$TESTS/collector.test" ./collector/
		go test -c -o "$TESTS/bpf.test" ./bpf/
		go test -c -o "$TESTS/readyline.test" ./cmd/readyline/
		# The builds collector's tests make with buildCrilike (its
		# crilikeBuilds): READYLINE_CRILIKE_DIR tells them where these are.
		go build -ldflags='-s -w' -o "$TESTS/crilike.stripped" ./collector/gofunc/testdata/crilike
		go build -buildmode=pie -ldflags='-s -w' -o "$TESTS/crilike.stripped-pie" ./collector/gofunc/testdata/crilike
	) || die "building the test binaries failed"
	log "built the test binaries in $((SECONDS - t0))s"
}

# write_guest_script writes what the guest runs, chrooted into the host's
# tree: each test binary in its package's directory, as go test would.
write_guest_script() {
	cat >"$OUT/guest.sh" <<EOF
#!/bin/bash
# Written by deploy/kernel/run-6.1.sh; run by guest-init.sh inside the guest.
set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TMPDIR=/tmp
export READYLINE_REQUIRE_PRIVILEGED=1 READYLINE_CRILIKE_DIR=$TESTS
# The kernel has no uprobe_multi: the kubelet-call probes must be per address.
export READYLINE_EXPECT_CRI_UPROBES=per_address
rc=0
run() {
	local dir=\$1 bin=\$2 name=\$3
	shift 3
	echo "=== \$name.test (\$dir)"
	# The whole -test.v output to its log, the results to the console as they come.
	(cd "$REPO_ROOT/\$dir" && "$TESTS/\$bin" -test.v -test.count=1 -test.timeout=20m "\$@") 2>&1 |
		tee "$OUT/\$name.log" | grep --line-buffered -E '^(=== RUN|--- |    --- |PASS|FAIL|panic)'
	local st=\${PIPESTATUS[0]}
	echo "=== \$name.test exited with \$st"
	[ \$st -eq 0 ] || rc=1
}
if [ "\${1:-}" = in-pod ]; then
	# In the pod's container (see below): the runtime's namespaced view
	# of the hierarchy, then the host's over it, as the DaemonSet mounts it.
	# (mounted aside first: mount refuses a second cgroup2 at a mountpoint
	# that has one).
	mkdir -p /run/readyline-pod-cgroup
	mount -t cgroup2 cgroup2 /run/readyline-pod-cgroup && mount --move /run/readyline-pod-cgroup /sys/fs/cgroup &&
		mount --bind /run/readyline-host-cgroup /sys/fs/cgroup || exit 1
	echo "in a pod's container: /proc/self/cgroup \$(cat /proc/self/cgroup), cgroup2 mounts (root mountpoint):" \$(awk '{for (i = 7; \$i != "-"; i++); if (\$(i+1) == "cgroup2") print \$4, \$5}' /proc/self/mountinfo)
	run collector collector.test collector-in-pod -test.run '$CGROUPNS_TESTS'
	run cmd/readyline readyline.test readyline-in-pod -test.run '$KERNEL_TESTS' -test.skip '$KERNEL_SKIP'
	exit \$rc
fi
echo "guest: \$(uname -sr), \$(nproc) CPUs, BTF \$(stat -c %s /sys/kernel/btf/vmlinux 2>/dev/null || echo missing) bytes"
# Cgroup v2 only, as a 1.35+ node (the kernel booted with cgroup_no_v1=all):
# a v1 hierarchy cannot be mounted.
mkdir -p /tmp/cgroup-v1
if mount -t cgroup -o memory cgroup /tmp/cgroup-v1 2>/dev/null; then
	umount /tmp/cgroup-v1
	echo "guest: a cgroup v1 hierarchy mounted: not a cgroup v2-only node"
	exit 1
fi
echo "guest: cgroup v2 only (controllers \$(cat /sys/fs/cgroup/cgroup.controllers); a v1 mount is refused)"
run bpf bpf.test bpf -test.run '$KERNEL_TESTS' -test.skip '$KERNEL_SKIP'
run collector collector.test collector -test.run '$KERNEL_TESTS' -test.skip '$KERNEL_SKIP'
run cmd/readyline readyline.test readyline -test.run '$KERNEL_TESTS' -test.skip '$KERNEL_SKIP'
# Again, where readyline runs on such a node: in a pod's container cgroup
# (the systemd driver's layout), in a cgroup namespace of its own
# (containerd gives every container one on cgroup v2) and a mount namespace
# of its own, with the host's hierarchy mounted over the container's own
# view (the DaemonSet's hostPath), the host's PID namespace (hostPID).
pod=kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod${CGROUPNS_POD//-/_}.slice
scope=/sys/fs/cgroup/\$pod/cri-containerd-$CGROUPNS_CONTAINER.scope
mkdir -p "\$scope" /run/readyline-host-cgroup && mount --bind /sys/fs/cgroup /run/readyline-host-cgroup || exit 1
(echo \$BASHPID >"\$scope/cgroup.procs" && exec unshare --cgroup --mount --propagation private bash "\$0" in-pod) || rc=1
umount /run/readyline-host-cgroup
rmdir "\$scope" /sys/fs/cgroup/\$pod /sys/fs/cgroup/kubepods.slice/kubepods-besteffort.slice /sys/fs/cgroup/kubepods.slice
exit \$rc
EOF
}

# boot KERNEL_DIR ROOT runs QEMU until the guest powers off, or
# GUEST_TIMEOUT, streaming the guest's console. ROOT (read-only) is the
# guest's root; when it is not the host's, the checkout is shared too.
boot() {
	local kdir=$1 root=$2 pid deadline share=
	local shares=(-virtfs "local,path=$root,mount_tag=host,security_model=none,readonly=on,multidevs=remap")
	if [[ $root != / ]]; then
		shares+=(-virtfs "local,path=$REPO_ROOT,mount_tag=checkout,security_model=none,readonly=on,multidevs=remap")
		share=checkout
	fi
	: >"$KERNEL_RUN_DIR/console.log"
	start_process qemu "$(command -v "$QEMU")" \
		"${QEMU_MACHINE[@]}" -smp "$GUEST_CPUS" -m "$GUEST_MEMORY" \
		-nodefaults -no-reboot -display none -monitor none \
		-serial "file:$KERNEL_RUN_DIR/console.log" \
		-kernel "$kdir/vmlinuz" -initrd "$KERNEL_RUN_DIR/initramfs.cpio.gz" \
		-append "console=$GUEST_CONSOLE quiet panic=-1 mitigations=off cgroup_no_v1=all rdinit=/init -- $OUT $REPO_ROOT $share" \
		"${shares[@]}" \
		-virtfs "local,path=$OUT,mount_tag=out,security_model=none"
	pid=$(recorded_pid qemu) || die "QEMU did not start, see $LOG_DIR/qemu.log"
	# 9>&-: the tailer lives as long as QEMU, which a killed run leaves
	# behind; holding the run's lock, it would keep the next run (the one
	# that stops that QEMU) waiting.
	tail -n +1 -f --pid="$pid" "$KERNEL_RUN_DIR/console.log" 9>&- &
	local tailer=$!
	deadline=$((SECONDS + GUEST_TIMEOUT))
	while recorded_pid qemu >/dev/null && ((SECONDS < deadline)); do sleep 2; done
	if recorded_pid qemu >/dev/null; then
		warn "the guest did not power off within ${GUEST_TIMEOUT}s: stopping QEMU"
		stop_process qemu 5
	fi
	rm -f "$(pidfile qemu)"
	wait "$tailer" 2>/dev/null || true
}

# summary prints each test's result and the evidence of the per-address
# uprobes, and fails unless the guest said every test passed.
summary() {
	local status
	status=$(cat "$OUT/status" 2>/dev/null) || status=""
	echo
	log "results (logs in $OUT):"
	grep -hE '^(--- |    --- )(PASS|FAIL|SKIP)' "$OUT"/*.log 2>/dev/null | sed 's/^/  /' || true
	# What each failed test said (its lines of the -test.v log, up to 40).
	local f
	for f in "$OUT"/*.log; do
		[[ -f $f ]] || continue
		awk '/^=== (RUN|CONT) / {cur = $3; next}
			$1 == "---" && $2 == "FAIL:" {
				printf "  %s %s said:\n%s", FILENAME, $3, said[$3]
				next
			}
			cur != "" && /^ / && n[cur]++ < 40 {said[cur] = said[cur] "    " $0 "\n"}' "$f"
	done | sed "s|$OUT/||"
	# How the kubelet-call probes attached, and why (collector's tests log it).
	grep -hE 'kubelet-call probes attached|the source logged' "$OUT"/collector.log 2>/dev/null |
		sed -E 's/^ *[a-z_]+\.go:[0-9]+: //; s/pid=[0-9]+|[0-9]+\/exe/N/g' | sort | uniq -c || true
	if [[ -z $status ]]; then
		die "the guest did not finish (no $OUT/status): see $KERNEL_RUN_DIR/console.log and $LOG_DIR/qemu.log"
	fi
	if grep -qhE '^(--- |    --- )SKIP' "$OUT"/*.log 2>/dev/null; then
		status=1
		warn "a test skipped inside the guest"
	fi
	[[ $status == 0 ]] || die "tests failed on Linux $(cat "$KERNEL_RUN_DIR/kernel" 2>/dev/null)"
	log "every test passed on Linux $(cat "$KERNEL_RUN_DIR/kernel")"
}

# cleanup stops a QEMU of this run directory (by its recorded PID, start
# time and executable) and removes what a previous run left.
cleanup() {
	stop_process qemu 5
	rm -rf "$OUT" "$KERNEL_RUN_DIR/initramfs" "$KERNEL_RUN_DIR/initramfs.cpio.gz"
}

main() {
	[[ $(id -u) -eq 0 ]] || die "run-6.1.sh must run as root (the guest's tests load eBPF programs; QEMU shares / read-only)"
	# Nice 19 for everything the run starts (apt, the builds, every thread
	# of QEMU): the machine is shared, with CI's other tests among others.
	renice -n 19 -p $$ >/dev/null
	mkdir -p "$KERNEL_RUN_DIR" "$READYLINE_CACHE"
	exec 9>"$KERNEL_RUN_DIR/lock"
	flock -n 9 || {
		log "waiting for another run-6.1.sh in $KERNEL_RUN_DIR"
		flock 9
	}
	cleanup
	[[ ${1:-} == stop ]] && return 0
	local t0=$SECONDS kdir root
	install_debian_packages "${HOST_PACKAGES[@]}"
	kdir=$(
		exec 8>"$READYLINE_CACHE/debian-kernel.lock"
		flock 8
		kernel_dir
	)
	root=$(
		exec 8>"$READYLINE_CACHE/debian-kernel.lock"
		flock 8
		guest_root
	)
	# The checkout's mount point in a root of the guest's own.
	[[ $root == / ]] || mkdir -p "$root$REPO_ROOT"
	log "kernel: $(cat "$kdir/package") ($kdir), root $root"
	cat "$kdir/package" >"$KERNEL_RUN_DIR/kernel"
	build_tests
	mkdir -p "$OUT"
	build_initramfs "$kdir" "$KERNEL_RUN_DIR/initramfs.cpio.gz"
	write_guest_script
	trap 'stop_process qemu 5' EXIT
	trap 'exit 130' INT TERM
	log "booting $(cat "$kdir/package") under QEMU (TCG, $GUEST_ARCH, $GUEST_CPUS CPUs, ${GUEST_MEMORY} MiB)"
	local tb=$SECONDS
	boot "$kdir" "$root"
	log "the guest ran $((SECONDS - tb))s; $((SECONDS - t0))s in all"
	summary
}

main "$@"
