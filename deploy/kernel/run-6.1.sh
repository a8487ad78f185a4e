#!/usr/bin/env bash
# run-6.1.sh — readyline's privileged eBPF tests on Debian 12's kernel, Linux
# 6.1 (no uprobe_multi: the kubelet-call probes must take their per-address
# fallback), booted under QEMU without KVM. See deploy/kernel/README.md.
#
#   run-6.1.sh         fetch (once) the kernel and QEMU, build the test
#                      binaries on the host, boot the kernel with the host's
#                      files shared read-only, run the tests, power off; exit
#                      non-zero when a test failed or the guest did not finish
#   run-6.1.sh stop    stop a QEMU that a killed run left behind (by the PID
#                      it recorded) and remove the run directory
#
# Settings (env): READYLINE_CACHE (/var/cache/readyline: the kernel),
# KERNEL_RUN_DIR (bin/kernel-6.1 in the checkout: test binaries, logs, the
# guest's console), GUEST_TIMEOUT (1800 s), GUEST_CPUS (2), GUEST_MEMORY (2048 MiB),
# KERNEL_TESTS (the -test.run pattern, ^TestIntegration), KERNEL_SKIP (its
# -test.skip: the tests that read the kubelet binaries deploy/node builds or
# compile against cri-api, which are no kernel's and need what the guest
# lacks (the host runs them)).
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/../.." && pwd)
READYLINE_CACHE=${READYLINE_CACHE:-/var/cache/readyline}
KERNEL_RUN_DIR=${KERNEL_RUN_DIR:-$REPO_ROOT/bin/kernel-6.1}
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

# The kernel is whatever Debian 12's linux-image-amd64 depends on today (the
# current 6.1 ABI package); without apt (offline), the newest one cached.
KERNEL_META=linux-image-amd64
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

# RUN_DIR and LOG_DIR: where lib/common.sh keeps PID files and logs.
RUN_DIR=$KERNEL_RUN_DIR
LOG_DIR=$KERNEL_RUN_DIR
# shellcheck source=../node/lib/common.sh
source "$REPO_ROOT/deploy/node/lib/common.sh"
# shellcheck source=../node/lib/build.sh
source "$REPO_ROOT/deploy/node/lib/build.sh"

OUT=$KERNEL_RUN_DIR/out     # the guest's writable share: guest.sh, logs, status
TESTS=$KERNEL_RUN_DIR/tests # test binaries, read by the guest through the host share

# kernel_dir prints the cache directory of the kernel to boot, filling it
# first: vmlinuz, config, and modules/ with the guest's modules and their
# load order. A fill writes into a temporary directory moved in place when
# complete, so a killed one is simply redone.
kernel_dir() {
	local pkg version dir tmp
	pkg=$(apt-cache depends "$KERNEL_META" 2>/dev/null | awk '$1 == "Depends:" && $2 ~ /^linux-image-/ {print $2; exit}') || true
	if [[ -z $pkg ]]; then
		apt-get update -qq >&2 || true
		pkg=$(apt-cache depends "$KERNEL_META" 2>/dev/null | awk '$1 == "Depends:" && $2 ~ /^linux-image-/ {print $2; exit}') || true
	fi
	if [[ -n $pkg ]]; then
		version=$(apt-cache show --no-all-versions "$pkg" | awk '$1 == "Version:" {print $2; exit}')
	else
		# Offline: the newest kernel cached.
		dir=$(find "$READYLINE_CACHE" -maxdepth 1 -name "debian-kernel-$KERNEL_SERIES.*" -type d 2>/dev/null | sort -V | tail -n 1)
		[[ -n $dir && -f $dir/vmlinuz ]] || die "apt cannot resolve $KERNEL_META and no kernel is cached in $READYLINE_CACHE"
		echo "$dir"
		return
	fi
	[[ $version == "$KERNEL_SERIES".* ]] ||
		die "$KERNEL_META is $pkg $version here, not Debian 12's $KERNEL_SERIES (this script needs Debian 12's apt sources)"
	dir=$READYLINE_CACHE/debian-kernel-$version
	if [[ -f $dir/vmlinuz && -f $dir/modules/order ]]; then
		echo "$dir"
		return
	fi
	# What a killed fill left (the caller holds the cache's lock).
	rm -rf "$READYLINE_CACHE"/debian-kernel-*.tmp.*
	tmp=$dir.tmp.$$
	rm -rf "$dir" && mkdir -p "$tmp/deb" "$tmp/modules"
	log "fetching $pkg $version (Debian's $KERNEL_SERIES kernel)"
	# apt downloads as _apt: let it write there (else it warns, and downloads as root).
	chown _apt "$tmp/deb" 2>/dev/null || true
	(cd "$tmp/deb" && apt-get download -qq "$pkg=$version" >&2) || die "apt-get download $pkg=$version failed"
	dpkg-deb -x "$tmp"/deb/*.deb "$tmp/root"
	cp "$tmp"/root/boot/vmlinuz-* "$tmp/vmlinuz"
	cp "$tmp"/root/boot/config-* "$tmp/config"
	check_kernel_config "$tmp/config"
	resolve_modules "$tmp/root/lib/modules" "$tmp/modules" "${GUEST_MODULES[@]}"
	rm -rf "$tmp/deb" "$tmp/root"
	echo "$pkg $version" >"$tmp/package"
	mv "$tmp" "$dir"
	echo "$dir"
}

# check_kernel_config CONFIG fails unless the kernel has what readyline
# needs built in (the guest cannot load those as modules).
check_kernel_config() {
	local opt
	for opt in CONFIG_DEBUG_INFO_BTF CONFIG_BPF_SYSCALL CONFIG_BPF_JIT CONFIG_BPF_EVENTS CONFIG_UPROBES \
		CONFIG_UPROBE_EVENTS CONFIG_CGROUP_BPF CONFIG_TRACING CONFIG_BLK_DEV_INITRD CONFIG_DEVTMPFS; do
		grep -qx "$opt=y" "$1" || die "the kernel's config lacks $opt=y"
	done
}

# resolve_modules LIBMODULES DEST MODULE... copies each module and what it
# depends on (the depends= of its modinfo) into DEST, and writes DEST/order:
# their file names, dependencies first.
resolve_modules() {
	local lib=$1 dest=$2
	shift 2
	local -A path=() done=()
	local f name
	while IFS= read -r f; do
		name=${f##*/}
		name=${name%.ko}
		path[${name//-/_}]=$f
	done < <(find "$lib" -name '*.ko')
	: >"$dest/order"
	add_module() {
		local m=${1//-/_} dep deps
		[[ -n ${done[$m]:-} ]] && return
		[[ -n ${path[$m]:-} ]] || die "module $m is not in the kernel package"
		deps=$(tr '\0' '\n' <"${path[$m]}" | sed -n 's/^depends=//p' | head -n 1)
		for dep in ${deps//,/ }; do add_module "$dep"; done
		cp "${path[$m]}" "$dest/"
		echo "$m.ko" >>"$dest/order"
		done[$m]=1
	}
	for name in "$@"; do add_module "$name"; done
}

# build_initramfs KERNEL_DIR OUT writes the guest's initramfs: busybox,
# guest-init.sh as /init and the modules.
build_initramfs() {
	local kdir=$1 out=$2 root
	root=$KERNEL_RUN_DIR/initramfs
	rm -rf "$root" && mkdir -p "$root/bin" "$root/modules"
	file_is_static /bin/busybox || die "/bin/busybox is not statically linked (is busybox-static installed?)"
	cp /bin/busybox "$root/bin/busybox"
	cp "$SCRIPT_DIR/guest-init.sh" "$root/init"
	cp "$kdir"/modules/* "$root/modules/"
	(cd "$root" && find . | LC_ALL=C sort | busybox cpio -o -H newc 2>/dev/null | gzip -1) >"$out"
	rm -rf "$root"
}

# build_tests builds the test binaries and crilike on the host: the guest
# has no Go toolchain to build them (and would take ages under TCG).
build_tests() {
	local t0=$SECONDS
	command -v go >/dev/null || die "go is not on PATH"
	rm -rf "$TESTS" && mkdir -p "$TESTS"
	log "building the test binaries"
	(
		cd "$REPO_ROOT"
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

# boot runs QEMU until the guest powers off, or GUEST_TIMEOUT, streaming the
# guest's console.
boot() {
	local kdir=$1 pid deadline
	: >"$KERNEL_RUN_DIR/console.log"
	start_process qemu "$(command -v qemu-system-x86_64)" \
		-machine q35 -accel tcg -cpu max -smp "$GUEST_CPUS" -m "$GUEST_MEMORY" \
		-nodefaults -no-reboot -display none -monitor none \
		-serial "file:$KERNEL_RUN_DIR/console.log" \
		-kernel "$kdir/vmlinuz" -initrd "$KERNEL_RUN_DIR/initramfs.cpio.gz" \
		-append "console=ttyS0 quiet panic=-1 mitigations=off cgroup_no_v1=all rdinit=/init -- $OUT $REPO_ROOT" \
		-virtfs "local,path=/,mount_tag=host,security_model=none,readonly=on,multidevs=remap" \
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
	local t0=$SECONDS kdir
	install_debian_packages "${HOST_PACKAGES[@]}"
	kdir=$(
		exec 8>"$READYLINE_CACHE/debian-kernel.lock"
		flock 8
		kernel_dir
	)
	log "kernel: $(cat "$kdir/package") ($kdir)"
	cat "$kdir/package" >"$KERNEL_RUN_DIR/kernel"
	build_tests
	mkdir -p "$OUT"
	build_initramfs "$kdir" "$KERNEL_RUN_DIR/initramfs.cpio.gz"
	write_guest_script
	trap 'stop_process qemu 5' EXIT
	trap 'exit 130' INT TERM
	log "booting $(cat "$kdir/package") under QEMU (TCG, $GUEST_CPUS CPUs, ${GUEST_MEMORY} MiB)"
	local tb=$SECONDS
	boot "$kdir"
	log "the guest ran $((SECONDS - tb))s; $((SECONDS - t0))s in all"
	summary
}

main "$@"
