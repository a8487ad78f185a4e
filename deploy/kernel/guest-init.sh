#!/bin/busybox sh
# guest-init.sh is PID 1 of the kernel-test guest (run-6.1.sh copies it to
# /init of the initramfs, next to Debian's busybox-static and the kernel
# modules the guest needs). It loads the modules, mounts the host's root
# read-only (9p tag "host") and the run's directory writable (tag "out", at
# its own path on the host, given as the first argument; the checkout is
# the second). When the root is not the host's (an arm64 guest's Debian
# tree), the third argument is "checkout": the checkout is shared apart
# (tag "checkout", read-only) and mounted at its own path. It gives the host's
# tree the mounts a machine has (proc, sys, cgroup2, bpf, tracefs, /dev,
# /tmp, /run), runs the run's guest.sh chrooted into the host's tree, writes
# its exit status to <out>/status and powers off. Anything that goes wrong
# before guest.sh runs leaves no status: run-6.1.sh counts that as a failure.
export PATH=/bin
/bin/busybox --install -s /bin

say() { echo "guest-init: $*" >/dev/console; }
die() {
	say "FAILED: $*"
	sync
	poweroff -f
}

out=$1 checkout=$2 checkout_share=${3:-}
[ -n "$out" ] && [ -n "$checkout" ] || die "no output and checkout directories on the kernel command line (after --)"

mkdir -p /proc /sys /dev /host
mount -t proc proc /proc || die "mounting /proc"
mount -t sysfs sysfs /sys || die "mounting /sys"
mount -t devtmpfs devtmpfs /dev || die "mounting /dev"

# Modules, in the order run-6.1.sh resolved (dependencies first).
while read -r m; do
	insmod "/modules/$m" || die "loading module $m"
done </modules/order

# 9p over virtio-pci: the device shows up asynchronously after the modules.
for _ in 1 2 3 4 5 6 7 8 9 10; do
	mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=512000 host /host 2>/dev/null && break
	sleep 1
done
grep -q " /host 9p " /proc/mounts || die "mounting the host's root (9p tag host)"

r=/host
mount -t proc proc $r/proc || die "mounting $r/proc"
mount -t sysfs sysfs $r/sys || die "mounting $r/sys"
mount -t devtmpfs devtmpfs $r/dev || die "mounting $r/dev"
mkdir -p $r/dev/pts $r/dev/shm
mount -t devpts devpts $r/dev/pts
mount -t tmpfs tmpfs $r/dev/shm
# /tmp and /run are the guest's own, but a checkout under one of them
# (a CI clone in /tmp) must stay in sight: it is bound back over the tmpfs.
for d in /tmp /run; do
	mkdir -p "/keep$d"
	[ -z "$checkout_share" ] && case "$checkout/" in "$d"/*) mount --bind "$r$checkout" "/keep$d" || die "keeping $checkout" ;; esac
	mode=1777
	[ "$d" = /run ] && mode=755
	mount -t tmpfs -o mode=$mode tmpfs "$r$d" || die "mounting $r$d"
	[ -z "$checkout_share" ] && case "$checkout/" in
	"$d"/*)
		mkdir -p "$r$checkout"
		mount --bind "/keep$d" "$r$checkout" || die "binding $checkout back"
		;;
	esac
done
if [ -n "$checkout_share" ]; then
	# (run-6.1.sh made the mount point in the root, or it is on a tmpfs here)
	mkdir -p "$r$checkout"
	mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=512000 "$checkout_share" "$r$checkout" ||
		die "mounting the checkout (9p tag $checkout_share)"
fi
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 out "$r$out" || die "mounting $out (9p tag out)"
mount -t cgroup2 cgroup2 $r/sys/fs/cgroup || die "mounting cgroup2"
mount -t bpf bpf $r/sys/fs/bpf || die "mounting bpffs"
mount -t tracefs tracefs $r/sys/kernel/tracing || die "mounting tracefs"
mount -t debugfs debugfs $r/sys/kernel/debug
ip link set lo up || die "bringing lo up"

say "kernel $(uname -r), running $out/guest.sh"
chroot $r /bin/sh -c "cd / && exec /bin/bash $out/guest.sh" </dev/console >/dev/console 2>&1
rc=$?
echo "$rc" >"$r$out/status"
say "guest.sh exited with $rc"
sync
umount "$r$out"
poweroff -f
