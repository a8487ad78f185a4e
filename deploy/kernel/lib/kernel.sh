# shellcheck shell=bash
# Debian 12's kernel for a QEMU guest, fetched with apt and cached (sourced by
# deploy/kernel/run-6.1.sh and deploy/cgroup2/node-vm.sh, after
# deploy/node/lib/common.sh and build.sh). The caller sets:
#   READYLINE_CACHE   where debian-kernel-<version><KERNEL_SUFFIX>/ is kept
#   GUEST_ARCH        amd64 or arm64 (KERNEL_SUFFIX: "" or -arm64)
#   KERNEL_META       the package whose dependency is the kernel (linux-image-ARCH)
#   KERNEL_SERIES     the version it must be (6.1)
# A cached kernel is vmlinuz, config, package (its name and version) and
# modules/<release>/, the package's whole module tree: each guest takes what
# it loads from there (resolve_modules), a guest with a root of its own all
# of it.

KERNEL_SUFFIX=
[[ $GUEST_ARCH == amd64 ]] || KERNEL_SUFFIX=-$GUEST_ARCH

# kernel_dir prints the cache directory of the kernel to boot, filling it
# first (a directory of an older layout, without modules/<release>/, is
# filled again). A fill writes into a temporary directory moved in place
# when complete, so a killed one is simply redone.
kernel_dir() {
	local pkg version dir tmp
	pkg=$(guest_apt apt-cache depends "$KERNEL_META" 2>/dev/null | awk '$1 == "Depends:" && $2 ~ /^linux-image-/ {print $2; exit}') || true
	if [[ -z $pkg ]]; then
		guest_apt apt-get update -qq >&2 || true
		pkg=$(guest_apt apt-cache depends "$KERNEL_META" 2>/dev/null | awk '$1 == "Depends:" && $2 ~ /^linux-image-/ {print $2; exit}') || true
	fi
	if [[ -n $pkg ]]; then
		version=$(guest_apt apt-cache show --no-all-versions "$pkg" | awk '$1 == "Version:" {print $2; exit}')
	else
		# Offline: the newest kernel cached.
		local others=('!' -name '*-arm64') # amd64's have no suffix
		[[ $GUEST_ARCH == amd64 ]] || others=()
		dir=$(find "$READYLINE_CACHE" -maxdepth 1 -type d -name "debian-kernel-$KERNEL_SERIES.*$KERNEL_SUFFIX" \
			! -name '*.tmp.*' "${others[@]}" 2>/dev/null | sort -V | tail -n 1)
		[[ -n $dir && -f $dir/vmlinuz ]] || die "apt cannot resolve $KERNEL_META and no kernel is cached in $READYLINE_CACHE"
		echo "$dir"
		return
	fi
	[[ $version == "$KERNEL_SERIES".* ]] ||
		die "$KERNEL_META is $pkg $version here, not Debian 12's $KERNEL_SERIES (this script needs Debian 12's apt sources)"
	dir=$READYLINE_CACHE/debian-kernel-$version$KERNEL_SUFFIX
	if [[ -f $dir/vmlinuz && -f $dir/package && ! -f $dir/modules/order && ($GUEST_ARCH == amd64 || -f $dir/busybox) ]]; then
		echo "$dir"
		return
	fi
	# What a killed fill left (the caller holds the cache's lock).
	rm -rf "$READYLINE_CACHE"/debian-kernel-*.tmp.*
	tmp=$dir.tmp.$$
	rm -rf "$dir" && mkdir -p "$tmp/deb"
	log "fetching $pkg $version (Debian's $KERNEL_SERIES kernel for $GUEST_ARCH)"
	# apt downloads as _apt: let it write there (else it warns, and downloads as root).
	chown _apt "$tmp/deb" 2>/dev/null || true
	(cd "$tmp/deb" && guest_apt apt-get download -qq "$pkg=$version" >&2) || die "apt-get download $pkg=$version failed"
	dpkg-deb -x "$tmp"/deb/linux-image-*.deb "$tmp/root"
	cp "$tmp"/root/boot/vmlinuz-* "$tmp/vmlinuz"
	cp "$tmp"/root/boot/config-* "$tmp/config"
	check_kernel_config "$tmp/config"
	mv "$tmp/root/lib/modules" "$tmp/modules"
	if [[ $GUEST_ARCH != amd64 ]]; then
		# The initramfs's busybox, of the guest's architecture.
		(cd "$tmp/deb" && guest_apt apt-get download -qq busybox-static >&2) || die "apt-get download busybox-static ($GUEST_ARCH) failed"
		dpkg-deb -x "$tmp"/deb/busybox-static_*.deb "$tmp/busybox-root"
		cp "$tmp/busybox-root/bin/busybox" "$tmp/busybox"
	fi
	rm -rf "$tmp/deb" "$tmp/root" "$tmp/busybox-root"
	echo "$pkg $version" >"$tmp/package"
	mv "$tmp" "$dir"
	echo "$dir"
}

# guest_apt CMD ARG... runs apt-get or apt-cache (CMD) for the guest's
# architecture: the host's own for amd64; for another, with an apt
# configuration and state of its own in READYLINE_CACHE (the host's sources,
# the guest's architecture), so the host's dpkg is left as it is.
guest_apt() {
	if [[ $GUEST_ARCH == amd64 ]]; then
		"$@"
		return
	fi
	local dir=$READYLINE_CACHE/apt-$GUEST_ARCH
	mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial"
	[[ -f $dir/status ]] || : >"$dir/status"
	cat >"$dir/apt.conf" <<EOF
APT::Architecture "$GUEST_ARCH";
APT::Architectures { "$GUEST_ARCH"; };
Dir::State::Lists "$dir/lists";
Dir::State::Status "$dir/status";
Dir::Cache "$dir/cache";
EOF
	APT_CONFIG=$dir/apt.conf "$@"
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
		echo "${path[$m]##*/}" >>"$dest/order"
		done[$m]=1
	}
	for name in "$@"; do add_module "$name"; done
}
