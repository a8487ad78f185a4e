#!/usr/bin/env bash
# node-vm.sh — a second Kubernetes node, on cgroup v2 only with the systemd
# cgroup driver, joined to the local node's control plane (deploy/node): a
# QEMU virtual machine (TCG: this machine has no KVM) booting Debian 12's
# kernel with cgroup_no_v1=all, whose disk is readyline's kind node image
# (systemd as PID 1, containerd 2.x with SystemdCgroup, the kubelet,
# deploy/kind/lib/nodeimage.sh) with this node's identity and settings
# added. See deploy/cgroup2/README.md.
#
#   node-vm.sh up      make the disk, boot the VM, wait until its node is Ready
#   node-vm.sh down    delete the node object, stop the VM, remove its files
#   node-vm.sh status  the VM's process and its node's Ready condition
#
# The local node must be up (node.sh up: the API server, the CA that signs
# this node's certificates, the image registry, Jaeger). up builds
# readyline's image from the checkout (make image-archive, for this host's
# platform only: the import is emulated too), which the disk carries so the
# DaemonSet runs with no registry.
#
# Settings (env): READYLINE_CACHE (/var/cache/readyline), NODE_DIR
# (/var/lib/readyline-node), VM_DIR (/var/lib/readyline-cgroup2: disk,
# console, logs), VM_CPUS (2), VM_MEMORY (4096 MiB), VM_READY_TIMEOUT (900 s).
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/../.." && pwd)
READYLINE_CACHE=${READYLINE_CACHE:-/var/cache/readyline}
NODE_DIR=${NODE_DIR:-/var/lib/readyline-node}
VM_DIR=${VM_DIR:-/var/lib/readyline-cgroup2}
VM_CPUS=${VM_CPUS:-2}
VM_MEMORY=${VM_MEMORY:-4096}
VM_READY_TIMEOUT=${VM_READY_TIMEOUT:-900}
# The node's name, and its address on QEMU's user network (the guest's
# fixed 10.0.2.15; the host's loopback is 10.0.2.2 there, its other
# addresses are reached as themselves through QEMU's NAT).
VM_NAME=readyline-cgroup2
VM_IP=10.0.2.15
# The VM's pods' addresses: apart from the local node's 10.244.0.0/16.
VM_POD_CIDR=10.245.0.0/24
VM_DISK_SIZE=8G

# Debian 12's kernel (deploy/kernel/lib/kernel.sh), its whole module tree on
# the disk; the initramfs takes what reaches the disk.
GUEST_ARCH=amd64
KERNEL_META=linux-image-amd64
KERNEL_SERIES=6.1
INITRD_MODULES=(virtio_pci virtio_blk crc32c_generic ext4 virtio_net)
HOST_PACKAGES=(qemu-system-x86 busybox-static e2fsprogs openssl make)
# The node image's image archives the VM node runs: the sandbox's pause,
# kube-proxy, the examples' busybox and nginx. (Not the control plane's:
# that is the host's.)
VM_IMAGES=(pause kube-proxy busybox nginx)

RUN_DIR=$VM_DIR/run
LOG_DIR=$VM_DIR/logs
# shellcheck source=../node/lib/common.sh
source "$REPO_ROOT/deploy/node/lib/common.sh"
# shellcheck source=../node/lib/build.sh
source "$REPO_ROOT/deploy/node/lib/build.sh"
# shellcheck source=../node/lib/pki.sh
source "$REPO_ROOT/deploy/node/lib/pki.sh"
# shellcheck source=../kernel/lib/kernel.sh
source "$REPO_ROOT/deploy/kernel/lib/kernel.sh"

kctl() { "$KUBECTL" --kubeconfig "$NODE_DIR/admin.kubeconfig" "$@"; }

# host_settings reads what the VM node takes from the local node: the API
# server's advertised address (the kubernetes Service's endpoint), the
# cluster DNS and domain its kubelet is given, the Kubernetes version.
host_settings() {
	[[ -f $NODE_DIR/pki/ca.key && -f $NODE_DIR/admin.kubeconfig ]] ||
		die "the local node is not up ($NODE_DIR has no CA): run 'deploy/node/node.sh up' first"
	KUBECTL=$("$REPO_ROOT/deploy/node/node.sh" tool kubectl)
	API_ENDPOINT=$(kctl get endpointslices -n default -l kubernetes.io/service-name=kubernetes \
		-o jsonpath='{.items[0].endpoints[0].addresses[0]}:{.items[0].ports[0].port}') ||
		die "cannot read the API server's address from the kubernetes Service"
	CLUSTER_DNS_IP=$(awk '$1 == "clusterDNS:" {gsub(/[][]/, "", $2); print $2}' "$NODE_DIR/config/kubelet.yaml")
	CLUSTER_DOMAIN=$(awk '$1 == "clusterDomain:" {print $2}' "$NODE_DIR/config/kubelet.yaml")
	[[ -n $CLUSTER_DNS_IP && -n $CLUSTER_DOMAIN ]] || die "cannot read clusterDNS and clusterDomain from $NODE_DIR/config/kubelet.yaml"
}

# node_identity writes the VM node's credentials into ROOT, signed by the
# local node's CA: the kubelet's client certificate (system:node:VM_NAME in
# system:nodes, as the Node authorizer and NodeRestriction want), and
# kube-proxy's kubeconfig.
node_identity() {
	local root=$1
	PKI_DIR=$VM_DIR/pki
	rm -rf "$PKI_DIR" && mkdir -p "$PKI_DIR" && chmod 700 "$PKI_DIR"
	ln -s "$NODE_DIR/pki/ca.crt" "$NODE_DIR/pki/ca.key" "$PKI_DIR/"
	sign kubelet "/O=system:nodes/CN=system:node:$VM_NAME" "extendedKeyUsage=clientAuth"
	sign kube-proxy "/CN=system:kube-proxy" "extendedKeyUsage=clientAuth"
	mkdir -p "$root/etc/kubernetes/pki"
	cp "$NODE_DIR/pki/ca.crt" "$root/etc/kubernetes/pki/ca.crt"
	write_kubeconfig "$root/etc/kubernetes/kubelet.conf" kubelet "https://$API_ENDPOINT"
	write_kubeconfig "$root/etc/kubernetes/kube-proxy.conf" kube-proxy "https://$API_ENDPOINT"
	rm -f "$PKI_DIR"/*.key "$PKI_DIR"/*.crt "$PKI_DIR"/*.srl
}

# make_disk writes VM_DIR/disk.img: the kind node image's root, the
# kernel's modules, deploy/cgroup2/rootfs (the *.in files rendered), the
# node's identity, readyline's image, as an ext4 file system (mke2fs -d:
# no mount, no loop device).
make_disk() {
	local kdir=$1 image root tpl rel
	image=$("$REPO_ROOT/deploy/kind/kind.sh" node-image | tail -n 1)
	[[ -d $image/rootfs ]] || die "deploy/kind/kind.sh node-image gave no node image ($image)"
	K8S_VERSION=$(cat "$image/rootfs/kind/version")
	root=$VM_DIR/root
	rm -rf "$root"
	log "the disk: $(cat "$image/ref"), Linux $(cat "$kdir/package"), readyline's image"
	cp -a "$image/rootfs" "$root"
	cp -a "$kdir/modules/." "$root/lib/modules/"
	chroot "$root" depmod "$(ls "$kdir/modules")"
	# The node image's images that this node runs, and readyline's.
	find "$root/kind/images" -name '*.tar' $(printf '! -name %s.tar ' "${VM_IMAGES[@]}") -delete
	make -C "$REPO_ROOT" --no-print-directory image-archive IMAGE_PLATFORMS=linux/amd64 IMAGE_DIR="$VM_DIR/image" >&2 ||
		die "make image-archive failed"
	cp "$VM_DIR/image/readyline.tar" "$root/kind/images/readyline.tar"
	rm -rf "$VM_DIR/image"
	# A VM, not kind's container: its own hostname and resolver, no
	# drop-in of the development VM's cgroup v1 host.
	echo "$VM_NAME" >"$root/etc/hostname"
	printf '127.0.0.1 localhost\n127.0.1.1 %s\n' "$VM_NAME" >"$root/etc/hosts"
	rm -f "$root/etc/resolv.conf" "$root"/etc/readyline-kubelet.conf.d/*.conf
	echo "nameserver 10.0.2.3" >"$root/etc/resolv.conf"
	(cd "$SCRIPT_DIR/rootfs" && find . -type f) | while read -r rel; do
		rel=${rel#./}
		mkdir -p "$(dirname "$root/$rel")"
		case $rel in
		*.in) render "$SCRIPT_DIR/rootfs/$rel" "$root/${rel%.in}" ;;
		*) cp "$SCRIPT_DIR/rootfs/$rel" "$root/$rel" ;;
		esac
	done
	# containerd reads the registry's hosts.toml from certs.d.
	grep -q "config_path" "$root/etc/containerd/config.toml" ||
		sed -i "/^  \[plugins.'io.containerd.cri.v1.images'\]/a\\    [plugins.'io.containerd.cri.v1.images'.registry]\\n      config_path = '/etc/containerd/certs.d'" \
			"$root/etc/containerd/config.toml"
	systemctl --root="$root" enable readyline-vm-net.service readyline-vm-journal.service >/dev/null 2>&1 ||
		die "systemctl --root enable failed"
	node_identity "$root"
	rm -f "$VM_DIR/disk.img"
	mke2fs -q -t ext4 -L readyline-node -d "$root" "$VM_DIR/disk.img" "$VM_DISK_SIZE" || die "mke2fs of the node's disk failed"
	rm -rf "$root"
}

# make_initramfs writes VM_DIR/initramfs.cpio.gz: busybox, init.sh, the
# modules that reach the disk.
make_initramfs() {
	local kdir=$1 root=$VM_DIR/initramfs
	rm -rf "$root" && mkdir -p "$root/bin" "$root/modules"
	file_is_static /bin/busybox || die "/bin/busybox is not statically linked (is busybox-static installed?)"
	cp /bin/busybox "$root/bin/busybox"
	cp "$SCRIPT_DIR/init.sh" "$root/init"
	resolve_modules "$kdir/modules" "$root/modules" "${INITRD_MODULES[@]}"
	(cd "$root" && find . | LC_ALL=C sort | busybox cpio -o -H newc 2>/dev/null | gzip -1) >"$VM_DIR/initramfs.cpio.gz"
	rm -rf "$root"
}

node_ready() {
	[[ $(kctl get node "$VM_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null) == True ]]
}

vm_up() {
	need_root
	install_debian_packages "${HOST_PACKAGES[@]}"
	host_settings
	vm_down
	mkdir -p "$VM_DIR" "$RUN_DIR" "$LOG_DIR"
	local kdir t0=$SECONDS
	kdir=$(
		exec 8>"$READYLINE_CACHE/debian-kernel.lock"
		flock 8
		kernel_dir
	)
	make_disk "$kdir"
	make_initramfs "$kdir"
	log "disk and initramfs made in $((SECONDS - t0))s; booting $VM_NAME (TCG, $VM_CPUS CPUs, $VM_MEMORY MiB, cgroup v2 only)"
	: >"$LOG_DIR/console.log"
	: >"$LOG_DIR/journal.log"
	start_process qemu "$(command -v qemu-system-x86_64)" \
		-machine q35 -accel tcg -cpu max -smp "$VM_CPUS" -m "$VM_MEMORY" \
		-nodefaults -no-reboot -display none -monitor none \
		-serial "file:$LOG_DIR/console.log" -serial "file:$LOG_DIR/journal.log" \
		-kernel "$kdir/vmlinuz" -initrd "$VM_DIR/initramfs.cpio.gz" \
		-append "console=ttyS0 panic=-1 mitigations=off cgroup_no_v1=all net.ifnames=0 rdinit=/init systemd.show_status=0" \
		-drive "file=$VM_DIR/disk.img,if=virtio,format=raw,cache=unsafe" \
		-netdev user,id=net0 -device virtio-net-pci,netdev=net0
	local tb=$SECONDS
	wait_until "$VM_READY_TIMEOUT" "node $VM_NAME Ready" node_ready || {
		tail -n 40 "$LOG_DIR/console.log" >&2 || true
		die "node $VM_NAME did not become Ready in ${VM_READY_TIMEOUT}s (console: $LOG_DIR/console.log, journal: $LOG_DIR/journal.log)"
	}
	log "node $VM_NAME Ready $((SECONDS - tb))s after boot; $((SECONDS - t0))s in all"
}

vm_down() {
	need_root
	if [[ -f $NODE_DIR/admin.kubeconfig ]]; then
		KUBECTL=${KUBECTL:-$("$REPO_ROOT/deploy/node/node.sh" tool kubectl)}
		kctl delete node "$VM_NAME" --ignore-not-found --wait=false >/dev/null 2>&1 || true
	fi
	stop_process qemu 10
	rm -rf "$VM_DIR/root" "$VM_DIR/initramfs" "$VM_DIR/pki" "$VM_DIR/disk.img" "$VM_DIR/initramfs.cpio.gz"
}

vm_status() {
	local pid
	if pid=$(recorded_pid qemu); then echo "qemu: running (pid $pid)"; else echo "qemu: stopped"; fi
	host_settings
	kctl get node "$VM_NAME" -o wide 2>/dev/null || echo "node $VM_NAME: not registered"
}

main() {
	mkdir -p "$VM_DIR" "$RUN_DIR" "$LOG_DIR"
	exec 9>"$VM_DIR/lock"
	flock -n 9 || {
		log "another node-vm.sh holds $VM_DIR/lock, waiting"
		flock 9
	}
	case ${1:-} in
	up) vm_up ;;
	down) vm_down ;;
	status) vm_status ;;
	*)
		sed -n '2,21s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
		exit 2
		;;
	esac
}

main "$@"
