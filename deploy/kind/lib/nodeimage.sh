# shellcheck shell=bash
# readyline's local kind node image, for hosts with no image registry: built
# from what deploy/node already builds and caches, in kind's node-image
# contract (kind v0.33.0: pkg/build/nodeimage, images/base, and what
# pkg/cluster/internal/create/actions run inside a node):
#   /usr/local/bin/entrypoint, then systemd as PID 1
#   /kind/version                   the Kubernetes version (kubeadm's config)
#   kubeadm, kubelet, kubectl, containerd, ctr, crictl, runc on PATH
#   /etc/containerd/config.toml     version 3, read by `kind load`
#   /kind/manifests/default-cni.yaml, default-storage.yaml
#   the images kubeadm runs, under the names kubeadm asks for
#     (`kubeadm config images list`), imported at boot from /kind/images
#
# Two cache entries, each keyed by what goes into it, so a warm run only
# imports the image into Docker:
#   $READYLINE_CACHE/kind-rootfs-KEY   Debian (debootstrap minbase) + systemd
#   $READYLINE_CACHE/kind-node-KEY     that + our binaries, files and images

# Debian packages of the node's root file system: systemd as PID 1, what the
# kubelet and kube-proxy run (iptables, mount, conntrack, ...), runc and the
# CNI plugins (bridge, host-local, portmap) podnet configures.
NODE_SUITE=bookworm
NODE_PACKAGES=systemd,systemd-sysv,dbus,iptables,iproute2,ca-certificates,procps,kmod,mount,util-linux,conntrack,ethtool,socat,runc,containernetworking-plugins,libseccomp2,nftables,ebtables,jq
# The Kubernetes binaries on the node's PATH, then the node's containerd.
NODE_K8S_TOOLS=(kubeadm kubelet kubectl)
NODE_RUNTIME_TOOLS=(containerd containerd-shim-runc-v2 ctr crictl)
# Image names kubeadm v1.37 asks for; checked against `kubeadm config images list`.
KIND_PAUSE_TAG=3.10.2
KIND_COREDNS_TAG=v1.14.6
KIND_ETCD_TAG=3.7.0-0
PODNET_IMAGE=localhost/readyline-podnet:kind

key_of() { sha256sum | cut -c1-12; }

# base_rootfs prints the cached Debian root file system, making it first.
base_rootfs() {
	local key dir
	key=$(printf '%s %s\n' "$NODE_SUITE" "$NODE_PACKAGES" | key_of)
	dir=$READYLINE_CACHE/kind-rootfs-$key
	if [[ ! -f $dir/complete ]]; then
		command -v debootstrap >/dev/null || install_debian_packages debootstrap
		local mirror t0=$SECONDS
		mirror=$(apt_mirror "$NODE_SUITE")
		rm -rf "$dir" && mkdir -p "$dir"
		log "debootstrap $NODE_SUITE (minbase + systemd) for the kind node image (cold: ~3 min)"
		debootstrap --variant=minbase --include="$NODE_PACKAGES" "$NODE_SUITE" "$dir/rootfs" "$mirror" \
			>"$dir/debootstrap.log" 2>&1 || die "debootstrap failed, see $dir/debootstrap.log"
		touch "$dir/complete"
		log "debootstrap done in $((SECONDS - t0))s"
	fi
	echo "$dir/rootfs"
}

# node_image_key prints the key of the node image: everything that goes into it.
node_image_key() {
	local base=$1 t
	{
		echo "$base"
		(cd "$REPO_ROOT" && find deploy/kind/node-image deploy/kind/podnet deploy/kind/lib/nodeimage.sh \
			deploy/node/mkimage deploy/node/images/pause.c -type f -print0 | sort -z | xargs -0 sha256sum)
		for t in "${NODE_K8S_TOOLS[@]}" "${NODE_RUNTIME_TOOLS[@]}" kube-apiserver kube-controller-manager \
			kube-scheduler kube-proxy etcd coredns; do
			node_tool "$t"
		done
		# The readyline module's dependencies (podnet is built from it).
		sha256sum "$REPO_ROOT/go.sum"
	} | key_of
}

# node_tool NAME prints the path of the cached binary NAME (deploy/node
# builds and caches them; node.sh tool is the one place that knows where).
node_tool() { "$REPO_ROOT/deploy/node/node.sh" tool "$1"; }

# node_image prints the cached node image's directory (rootfs + ref), making it first.
node_image() {
	local base key dir
	base=$(base_rootfs)
	key=$(node_image_key "$base")
	dir=$READYLINE_CACHE/kind-node-$key
	if [[ ! -f $dir/complete ]]; then
		local t0=$SECONDS
		rm -rf "$dir" && mkdir -p "$dir"
		log "making the kind node image $key (Kubernetes $K8S_VERSION)"
		make_node_rootfs "$base" "$dir/rootfs" "$dir/work"
		rm -rf "$dir/work"
		echo "localhost/readyline-kind-node:$K8S_VERSION-$key" >"$dir/ref"
		touch "$dir/complete"
		# One node image is kept: older ones are 1 GB each.
		find "$READYLINE_CACHE" -maxdepth 1 -name 'kind-node-*' ! -path "$dir" -exec rm -rf {} +
		log "node image made in $((SECONDS - t0))s ($(du -sh "$dir/rootfs" | cut -f1))"
	fi
	echo "$dir"
}

make_node_rootfs() {
	local base=$1 root=$2 work=$3 t
	mkdir -p "$work"
	cp -a "$base" "$root"
	cp -a "$REPO_ROOT/deploy/kind/node-image/." "$root/"
	# containerd's second CNI plugin directory (empty: for plugins tests add).
	mkdir -p "$root/opt/cni/bin"
	for t in "${NODE_K8S_TOOLS[@]}" "${NODE_RUNTIME_TOOLS[@]}"; do
		install -m 0755 "$(node_tool "$t")" "$root/usr/local/bin/$t"
	done
	echo "$K8S_VERSION" >"$root/kind/version"
	make_node_images "$base" "$root/kind/images" "$work"
	# The node's own units; getty and the like stay off (container=docker).
	systemctl --root="$root" enable containerd.service readyline-kind-images.service kubelet.service >/dev/null 2>&1 ||
		die "systemctl --root enable failed"
	rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/usr/share/doc "$root"/usr/share/man
}

# make_node_images writes the image archives kubeadm and the default CNI run.
make_node_images() {
	local base=$1 out=$2 work=$3 c
	mkdir -p "$out"
	(cd "$REPO_ROOT" && CGO_ENABLED=0 go build -trimpath -o "$work/mkimage" ./deploy/node/mkimage &&
		CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$work/podnet/podnet" ./deploy/kind/podnet) ||
		die "building mkimage and podnet failed"

	mkdir -p "$work/pause"
	gcc -static -O2 -Wall -Werror -o "$work/pause/pause" "$REPO_ROOT/deploy/node/images/pause.c" ||
		die "building the static pause binary failed (gcc and libc6-dev installed?)"
	strip "$work/pause/pause"
	kind_mkimage "$work" "$work/pause" "registry.k8s.io/pause:$KIND_PAUSE_TAG" "$out/pause.tar" -entrypoint '["/pause"]'

	for c in kube-apiserver kube-controller-manager kube-scheduler etcd; do
		binary_rootfs "$work/$c" "$(node_tool "$c")" "usr/local/bin/$c"
	done
	for c in kube-apiserver kube-controller-manager kube-scheduler; do
		kind_mkimage "$work" "$work/$c" "registry.k8s.io/$c:$K8S_VERSION" "$out/$c.tar"
	done
	kind_mkimage "$work" "$work/etcd" "registry.k8s.io/etcd:$KIND_ETCD_TAG" "$out/etcd.tar" \
		-label "org.readyline.etcd.version=$("$(node_tool etcd)" --version | awk '/etcd Version/ {print $3}')"

	binary_rootfs "$work/coredns" "$(node_tool coredns)" coredns
	kind_mkimage "$work" "$work/coredns" "registry.k8s.io/coredns/coredns:$KIND_COREDNS_TAG" "$out/coredns.tar" \
		-entrypoint '["/coredns"]' -expose 53/udp -expose 53/tcp -label "org.readyline.coredns.version=$("$(node_tool coredns)" -version | head -1)"

	# kube-proxy runs iptables (nft), taken from the node's Debian with its libraries.
	binary_rootfs "$work/kube-proxy" "$(node_tool kube-proxy)" usr/local/bin/kube-proxy
	copy_iptables "$base" "$work/kube-proxy"
	kind_mkimage "$work" "$work/kube-proxy" "registry.k8s.io/kube-proxy:$K8S_VERSION" "$out/kube-proxy.tar"

	kind_mkimage "$work" "$work/podnet" "$PODNET_IMAGE" "$out/podnet.tar" -entrypoint '["/podnet"]'

	# The stand-ins of busybox and nginx that deploy/examples run (no registry).
	busybox_rootfs "$work/busybox"
	kind_mkimage "$work" "$work/busybox" "$BUSYBOX_IMAGE" "$out/busybox.tar" -cmd '["sh"]'
	busybox_rootfs "$work/nginx"
	nginx_html "$work/nginx"
	kind_mkimage "$work" "$work/nginx" "$NGINX_IMAGE" "$out/nginx.tar" -expose 80/tcp -cmd "$NGINX_CMD"
	rm -rf "${work:?}"/*/
}

# binary_rootfs DIR BINARY PATH lays out a root file system holding BINARY at PATH.
binary_rootfs() {
	local dir=$1 bin=$2 path=$3
	mkdir -p "$dir/tmp" "$dir/etc" "$(dirname "$dir/$path")"
	chmod 1777 "$dir/tmp"
	install -m 0755 "$bin" "$dir/$path"
	printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n' >"$dir/etc/passwd"
	printf 'root:x:0:\nnogroup:x:65534:\n' >"$dir/etc/group"
}

# copy_iptables BASE DIR copies iptables-nft from the Debian root BASE into DIR:
# the multi-call binary, its names, its extensions and their libraries.
copy_iptables() {
	local base=$1 dir=$2 f lib name
	mkdir -p "$dir/usr/sbin" "$dir/usr/lib/x86_64-linux-gnu/xtables"
	cp -a "$base/usr/sbin/xtables-nft-multi" "$dir/usr/sbin/"
	for name in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore; do
		ln -sf xtables-nft-multi "$dir/usr/sbin/$name"
	done
	cp -a "$base"/usr/lib/x86_64-linux-gnu/xtables/. "$dir/usr/lib/x86_64-linux-gnu/xtables/"
	for f in /usr/sbin/xtables-nft-multi "${base}"/usr/lib/x86_64-linux-gnu/xtables/*.so; do
		chroot "$base" ldd "${f#"$base"}" 2>/dev/null | awk '$(NF-1) ~ /^\// {print $(NF-1)} $1 ~ /^\// {print $1}'
	done | sort -u | while read -r lib; do
		mkdir -p "$dir$(dirname "$lib")"
		cp -L "$base$lib" "$dir$lib"
	done
	[[ -f $base/etc/protocols ]] && cp "$base/etc/protocols" "$dir/etc/"
	[[ -f $base/etc/ethertypes ]] && cp "$base/etc/ethertypes" "$dir/etc/"
	return 0
}

# kind_mkimage WORK ROOTFS REF OUT [FLAGS...] writes ROOTFS as image REF to OUT.
kind_mkimage() {
	local work=$1 rootfs=$2 ref=$3 out=$4
	shift 4
	SOURCE_DATE_EPOCH=0 "$work/mkimage" -rootfs "$rootfs" -ref "$ref" -o "$out" "$@" || die "writing image $ref failed"
}

# node_image_load imports the node image into Docker unless it is there.
# (docker import takes no STOPSIGNAL: kind removes nodes with docker rm -f.)
node_image_load() {
	local dir=$1 ref
	ref=$(cat "$dir/ref")
	if ! docker image inspect "$ref" >/dev/null 2>&1; then
		local t0=$SECONDS
		tar -C "$dir/rootfs" --numeric-owner -c . | docker import \
			--change 'ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]' \
			--change 'ENV container=docker' \
			--change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
			- "$ref" >/dev/null || die "docker import of the node image failed"
		log "imported $ref into Docker in $((SECONDS - t0))s"
	fi
	echo "$ref"
}
