# shellcheck shell=bash
# Container images made on this machine, without a registry: single-layer image
# archives written by deploy/node/mkimage and imported into containerd's k8s.io
# namespace, where the kubelet finds them (imagePullPolicy: Never/IfNotPresent).
#
#   localhost/pause:local     static pause from images/pause.c
#   localhost/busybox:local   Debian's busybox-static with every applet linked
#   localhost/nginx:local     the same busybox running httpd on port 80, serving
#                             /usr/share/nginx/html like the real nginx image
#   localhost/coredns:VER     the CoreDNS binary built from the Go module proxy

# The stand-ins of the seed's busybox and nginx images (deploy/kind's node
# image carries them too).
BUSYBOX_IMAGE=localhost/busybox:local
NGINX_IMAGE=localhost/nginx:local

build_images() {
	local work=$IMAGES_DIR/work
	rm -rf "$work" && mkdir -p "$work"
	(cd "$REPO_ROOT" && CGO_ENABLED=0 go build -trimpath -o "$work/mkimage" ./deploy/node/mkimage) ||
		die "building deploy/node/mkimage failed"

	mkdir -p "$work/pause"
	gcc -static -O2 -Wall -Werror -o "$work/pause/pause" "$SCRIPT_DIR/images/pause.c" ||
		die "building the static pause binary failed (gcc and libc6-dev installed?)"
	strip "$work/pause/pause"
	mkimage "$work/pause" "$PAUSE_IMAGE" pause -entrypoint '["/pause"]'

	busybox_rootfs "$work/busybox"
	mkimage "$work/busybox" "$BUSYBOX_IMAGE" busybox -cmd '["sh"]'

	busybox_rootfs "$work/nginx"
	nginx_html "$work/nginx"
	mkimage "$work/nginx" "$NGINX_IMAGE" nginx -expose 80/tcp -cmd "$NGINX_CMD"

	mkdir -p "$work/coredns"
	cp "$COREDNS_DIR/bin/coredns" "$work/coredns/coredns"
	mkimage "$work/coredns" "$COREDNS_IMAGE" coredns -entrypoint '["/coredns"]' -expose 53/udp -expose 53/tcp

	rm -rf "$work"
}

# mkimage ROOTFS REF NAME [MKIMAGE FLAGS...] writes $IMAGES_DIR/NAME.tar.
mkimage() {
	local rootfs=$1 ref=$2 name=$3
	shift 3
	"$IMAGES_DIR/work/mkimage" -rootfs "$rootfs" -ref "$ref" -o "$IMAGES_DIR/$name.tar" "$@" ||
		die "writing image $ref failed"
}

# The nginx stand-in: busybox httpd serving /usr/share/nginx/html on port 80.
NGINX_CMD='["httpd","-f","-v","-p","80","-h","/usr/share/nginx/html"]'

# nginx_html DIR writes the stand-in's index page into the root file system DIR.
nginx_html() {
	mkdir -p "$1/usr/share/nginx/html"
	printf '<!DOCTYPE html>\n<title>Welcome to nginx!</title>\n<h1>busybox httpd standing in for nginx</h1>\n' \
		>"$1/usr/share/nginx/html/index.html"
}

# busybox_rootfs DIR lays out a minimal root file system around busybox-static.
busybox_rootfs() {
	local dir=$1 applet
	mkdir -p "$dir"/{bin,etc,root,tmp,proc,sys,dev,var/run}
	chmod 1777 "$dir/tmp"
	cp /bin/busybox "$dir/bin/busybox"
	for applet in $(/bin/busybox --list); do
		[[ $applet == busybox ]] || ln -s busybox "$dir/bin/$applet"
	done
	printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$dir/etc/passwd"
	printf 'root:x:0:\nnogroup:x:65534:\n' >"$dir/etc/group"
}

ctr_k8s() { "$CONTAINERD_DIR/bin/ctr" --address "$CONTAINERD_SOCK" --namespace k8s.io "$@"; }

import_images() {
	local name out
	for name in pause busybox nginx coredns; do
		# ctr warns about cgroup v1 on every call; show its output only on failure.
		out=$(ctr_k8s images import "$IMAGES_DIR/$name.tar" 2>&1) || die "importing $name.tar into containerd failed: $out"
	done
	log "imported images: $(ctr_k8s images ls -q 2>/dev/null | grep '^localhost/' | tr '\n' ' ')"
}

# reimport_missing_images imports again, into the running node, the images
# of import_images that are gone: a test that removes an image through the
# CRI removes every name it has (a pulled busybox takes localhost/busybox:local
# with it), and the tests run pods from these without pulling.
reimport_missing_images() {
	local have name
	have=$(ctr_k8s images ls -q 2>/dev/null) || return 0
	for name in pause busybox nginx coredns; do
		if ! grep -q "^localhost/$name:" <<<"$have"; then
			log "localhost/$name is gone from the node: importing the images again"
			import_images
			return
		fi
	done
}

# import_image_file FILE imports an image archive (docker-archive or OCI
# layout, such as mkimage writes) into the running node's containerd, where the
# kubelet finds it; `make node-image` imports readyline's this way. An image
# of the same reference is replaced.
# readyline's is an image index (linux/amd64 and linux/arm64, make
# image-archive) named on index.json's entry. ctr needs neither --platform
# nor --all-platforms for it: it names the image after that entry, so the
# image is the whole index, and takes and unpacks the content of this host's
# platform only (ctr's default), the one the kubelet runs, as a pull would.
# The other platform's blobs, which nothing refers to, go with the import's
# lease; --all-platforms would keep them in the content store for nothing.
import_image_file() {
	local file=$1 out
	[[ -n $file ]] || die "usage: node.sh import-image FILE"
	[[ -f $file ]] || die "$file: no such image archive"
	is_running containerd || die "the node's containerd is not running: use node.sh up"
	# ctr warns about cgroup v1 on every call; show its output only on failure.
	out=$(ctr_k8s images import "$file" 2>&1) || die "importing $file into containerd failed: $out"
	# ctr prints "<ref> <TAB>saved" for each image of the archive.
	log "imported $(awk '$2 == "saved" {printf "%s ", $1}' <<<"$out")from $file"
}
