#!/bin/busybox sh
# init.sh is PID 1 of the VM node's initramfs (deploy/cgroup2/node-vm.sh
# puts it at /init beside busybox and the modules that reach the disk): it
# loads those, mounts the node's disk (/dev/vda, ext4) and hands over to its
# systemd. Anything that goes wrong powers the VM off, which node-vm.sh
# reports with the console's log.
export PATH=/bin
/bin/busybox --install -s /bin
say() { echo "node-vm init: $*" >/dev/console; }
mkdir -p /proc /sys /dev /newroot
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
while read -r m; do
	insmod "/modules/$m" || say "loading $m failed"
done </modules/order
for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
	[ -b /dev/vda ] && break
	sleep 0.5
done
if ! mount -t ext4 /dev/vda /newroot; then
	say "cannot mount the node's disk /dev/vda"
	poweroff -f
fi
umount /proc /sys /dev
exec switch_root /newroot /sbin/init
