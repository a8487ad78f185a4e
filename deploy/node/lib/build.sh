# shellcheck shell=bash
# Debian packages and the binaries built from the Go module proxy.
#
# Built binaries live in $READYLINE_CACHE/<project>-<version>/bin and are reused
# by every later run; a build writes into a temporary directory and is moved in
# place only when complete, so an interrupted build is simply redone.

# runc, CNI plugins and etcd are the runtime pieces; busybox-static fills the
# busybox and nginx stand-in images; gcc + libc6-dev build the static pause
# binary; iproute2's ip removes the bridge and checks the host is clean.
DEBIAN_PACKAGES=(
	runc containernetworking-plugins etcd-server busybox-static
	iptables conntrack openssl jq socat curl gcc libc6-dev iproute2
)

ensure_packages() {
	install_debian_packages "${DEBIAN_PACKAGES[@]}"
	# busybox-static is a static binary: the pause and busybox images depend on that.
	file_is_static /bin/busybox || die "/bin/busybox is not statically linked (is busybox-static installed?)"
}

# install_debian_packages PKG... installs those of the packages that are missing
# (deploy/kind installs its own with it too).
install_debian_packages() {
	local pkg missing=()
	for pkg in "$@"; do
		[[ $(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null) == "install ok installed" ]] || missing+=("$pkg")
	done
	((${#missing[@]} == 0)) && return 0
	log "installing Debian packages: ${missing[*]}"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# apt_mirror SUITE prints the Debian mirror this host's apt uses for SUITE
# (debootstrap needs one: deploy/kind's node image, deploy/kernel's arm64 root).
apt_mirror() {
	local uri
	uri=$(awk -v s="$1" '
		/^Types:/ { deb = ($0 ~ /deb( |$)/) }
		/^URIs:/ { u = $2 }
		/^Suites:/ && deb && u !~ /security/ { for (i = 2; i <= NF; i++) if ($i == s) { print u; exit } }
		$1 == "deb" && $3 == s { print $2; exit }' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null | head -1)
	[[ -n $uri ]] || die "no Debian mirror for $1 in /etc/apt/sources.list{,.d}"
	echo "$uri"
}

file_is_static() { ! LC_ALL=C readelf -l "$1" 2>/dev/null | grep -q 'INTERP'; }

# The build ledger. READYLINE_BUILD_LEDGER names a file (make sets a new one
# for each of its runs, see the Makefile) listing every cached binary that a
# step of this run has built or asked to be built. `tool --built NAME`
# answers only for binaries in it: the cache of an earlier run does not
# count, so a step that reads a binary before the step that builds it fails
# on a warm machine as it does on a fresh one. Unset (node.sh run by hand),
# the cache answers alone.

# ledger_record PATH... notes that PATH has been built or asked for in this run.
ledger_record() {
	[[ -n ${READYLINE_BUILD_LEDGER:-} ]] || return 0
	printf '%s\n' "$@" >>"$READYLINE_BUILD_LEDGER"
}

# ledger_has PATH succeeds when PATH may be used in this run: it is in the
# ledger, or there is no ledger.
ledger_has() {
	[[ -n ${READYLINE_BUILD_LEDGER:-} ]] || return 0
	grep -qxF -- "$1" "$READYLINE_BUILD_LEDGER" 2>/dev/null
}

ensure_go() {
	command -v go >/dev/null || die "go is not on PATH (Go $(awk '/^go /{print $2}' "$K8S_TOOLS/go.mod") or newer is needed)"
}

# tools_version DIR MODULE prints the version of MODULE pinned in DIR/go.mod.
tools_version() {
	awk -v m="$2" '$1 == m && $2 ~ /^v/ {print $2; exit}' "$1/go.mod"
}

# go_install_cached DIR VERSION LDFLAGS PKG... installs each PKG@VERSION into
# DIR/bin unless all binaries are there already.
go_install_cached() {
	local dir=$1 version=$2 ldflags=$3
	shift 3
	local pkg missing=() paths=()
	for pkg in "$@"; do
		paths+=("$dir/bin/${pkg##*/}")
		[[ -x $dir/bin/${pkg##*/} ]] || missing+=("$pkg")
	done
	if ((${#missing[@]} == 0)); then
		ledger_record "${paths[@]}"
		return 0
	fi
	ensure_go
	local tmp=$dir/.build.$$ t0=$SECONDS
	rm -rf "$tmp" && mkdir -p "$tmp" "$dir/bin"
	log "building ${missing[*]} $version from the Go module proxy"
	for pkg in "${missing[@]}"; do
		CGO_ENABLED=0 GOBIN=$tmp go install -trimpath -ldflags "-s -w $ldflags" "$pkg@$version" || {
			rm -rf "$tmp"
			die "building $pkg@$version failed"
		}
	done
	mv -f "$tmp"/* "$dir/bin/" && rmdir "$tmp"
	log "built ${missing[*]} in $((SECONDS - t0))s"
	ledger_record "${paths[@]}"
}

# The version stamps mirror the projects' release Makefiles, so that the node
# reports "containerd://2.4.2" like a packaged containerd. containerd 1.7 is
# the module github.com/containerd/containerd (2.x added /v2), built in
# tools/containerd-v1.7: its go.mod has an exclude directive, which go install
# refuses.
build_containerd() {
	if [[ $CONTAINERD_VERSION == v1.* ]]; then
		local mod=github.com/containerd/containerd tools=$SCRIPT_DIR/tools/containerd-${CONTAINERD_VERSION%.*}
		[[ $(tools_version "$tools" $mod 2>/dev/null) == "$CONTAINERD_VERSION" ]] ||
			die "no containerd $CONTAINERD_VERSION: node.sh builds v2.X.Y and $(tools_version "$SCRIPT_DIR/tools/containerd-v1.7" $mod) (tools/containerd-v1.7)"
		build_tools_module "$tools" "$CONTAINERD_DIR" "-s -w -X $mod/version.Version=${CONTAINERD_VERSION#v}" \
			containerd=$mod/cmd/containerd containerd-shim-runc-v2=$mod/cmd/containerd-shim-runc-v2 ctr=$mod/cmd/ctr
		return
	fi
	go_install_cached "$CONTAINERD_DIR" "$CONTAINERD_VERSION" \
		"-X github.com/containerd/containerd/v2/version.Version=${CONTAINERD_VERSION#v}" \
		github.com/containerd/containerd/v2/cmd/containerd \
		github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 \
		github.com/containerd/containerd/v2/cmd/ctr
}

build_crictl() {
	go_install_cached "$CRICTL_DIR" "$CRICTL_VERSION" \
		"-X sigs.k8s.io/cri-tools/pkg/version.Version=$CRICTL_VERSION" sigs.k8s.io/cri-tools/cmd/crictl
}

build_coredns() {
	go_install_cached "$COREDNS_DIR" "$COREDNS_VERSION" "" github.com/coredns/coredns
}

# k8s_ldflags [VERSION] prints the version stamps a release build of VERSION
# (default K8S_VERSION) carries (hack/lib/version.sh).
k8s_ldflags() {
	local v=${1:-$K8S_VERSION} minor pkg flags="-s -w"
	minor=${v#v*.}
	minor=${minor%%.*}
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		flags+=" -X $pkg.gitVersion=$v -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
		flags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
	done
	echo "$flags"
}

# build_tools_module MODULE_DIR DIR LDFLAGS BINARY=PACKAGE... builds the
# packages in the tools module MODULE_DIR into DIR/bin, for BUILD_GOARCH
# when it is set (a cross-build), else for the host.
build_tools_module() {
	local module=$1 dir=$2 ldflags=$3
	shift 3
	local spec missing=() names=() paths=()
	for spec in "$@"; do
		paths+=("$dir/bin/${spec%%=*}")
		[[ -x $dir/bin/${spec%%=*} ]] && continue
		missing+=("${spec#*=}")
		names+=("${spec%%=*}")
	done
	if ((${#missing[@]} == 0)); then
		ledger_record "${paths[@]}"
		return 0
	fi
	ensure_go
	local tmp=$dir/.build.$$ t0=$SECONDS
	rm -rf "$tmp" && mkdir -p "$tmp" "$dir/bin"
	log "building ${names[*]} in $module (cold on 2 cores: kubernetes ~15 min, a kubelet alone ~7 min, jaeger ~9 min)"
	# One go build for all packages: they share most of their dependencies.
	(cd "$module" && CGO_ENABLED=0 GOARCH=${BUILD_GOARCH:-${GOARCH:-}} go build -mod=readonly -trimpath -ldflags "$ldflags" -o "$tmp/" "${missing[@]}") || {
		rm -rf "$tmp"
		die "building ${names[*]} failed"
	}
	mv -f "$tmp"/* "$dir/bin/" && rmdir "$tmp"
	log "built ${names[*]} in $((SECONDS - t0))s"
	ledger_record "${paths[@]}"
}

build_kubernetes() {
	local c specs=()
	for c in kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl kubeadm; do
		specs+=("$c=k8s.io/kubernetes/cmd/$c")
	done
	build_tools_module "$K8S_TOOLS" "$K8S_DIR" "$(k8s_ldflags)" "${specs[@]}"
}

# build_kubelet builds the kubelet K8S_KUBELET_VERSION asks for: the one of
# build_kubernetes, or an older minor's alone from its tools/kubelet-v1.X
# module into $READYLINE_CACHE/kubelet-<version> (set_kubelet_version).
build_kubelet() {
	if [[ $KUBELET_TOOLS == "$K8S_TOOLS" ]]; then
		build_kubernetes
		return
	fi
	build_tools_module "$KUBELET_TOOLS" "$KUBELET_CACHE_DIR" "$(k8s_ldflags "$KUBELET_VERSION")" \
		kubelet=k8s.io/kubernetes/cmd/kubelet
}

# build_kubelet_arm64 builds that kubelet for arm64, as a release is, alone
# (the control plane's version too: nothing else of Kubernetes is needed for
# arm64), into $READYLINE_CACHE/kubelet-<version>-arm64.
build_kubelet_arm64() {
	BUILD_GOARCH=arm64 build_tools_module "$KUBELET_TOOLS" "$KUBELET_ARM64_DIR" "$(k8s_ldflags "$KUBELET_VERSION")" \
		kubelet=k8s.io/kubernetes/cmd/kubelet
}

build_jaeger() {
	build_tools_module "$JAEGER_TOOLS" "$JAEGER_DIR" \
		"-s -w -X github.com/jaegertracing/jaeger/internal/version.latestVersion=$JAEGER_VERSION" \
		jaeger=github.com/jaegertracing/jaeger/cmd/jaeger
}

# promtool checks and unit-tests deploy/alerts' rules; it never enters
# readyline's go.mod (go install in an empty directory).
build_promtool() {
	go_install_cached "$PROMTOOL_DIR" "$PROMETHEUS_VERSION" "" \
		github.com/prometheus/prometheus/cmd/promtool
}

# prometheus evaluates deploy/alerts' rules on kind (deploy/kind/prometheus);
# same module as promtool, so it reuses its downloads.
build_prometheus() {
	local v=${PROMETHEUS_VERSION#v0.}
	go_install_cached "$PROMETHEUS_DIR" "$PROMETHEUS_VERSION" \
		"-X github.com/prometheus/common/version.Version=3.${v:1:2}.${v#*.}" \
		github.com/prometheus/prometheus/cmd/prometheus
}

# etcd for kind's etcd image: kubeadm's static pod passes flags and probes
# /readyz, which Debian's etcd 3.4 lacks. The server module's main package
# would be named "server" by go build.
build_etcd() {
	if [[ -x $ETCD_CACHE_DIR/bin/etcd ]]; then
		ledger_record "$ETCD_CACHE_DIR/bin/etcd"
		return 0
	fi
	ensure_go
	local tmp=$ETCD_CACHE_DIR/.build.$$ t0=$SECONDS
	rm -rf "$tmp" && mkdir -p "$tmp" "$ETCD_CACHE_DIR/bin"
	log "building etcd $ETCD_VERSION in $ETCD_TOOLS"
	(cd "$ETCD_TOOLS" && CGO_ENABLED=0 go build -mod=readonly -trimpath -ldflags "-s -w" -o "$tmp/etcd" go.etcd.io/etcd/server/v3) || {
		rm -rf "$tmp"
		die "building etcd failed"
	}
	mv -f "$tmp/etcd" "$ETCD_CACHE_DIR/bin/" && rmdir "$tmp"
	log "built etcd in $((SECONDS - t0))s"
	ledger_record "$ETCD_CACHE_DIR/bin/etcd"
}

# The CNCF distribution registry, the node's own image registry
# (lib/registry.sh). The version stamp is the one its release Makefile sets.
build_registry() {
	build_tools_module "$REGISTRY_TOOLS" "$REGISTRY_DIR" \
		"-s -w -X github.com/distribution/distribution/v3/version.version=$REGISTRY_VERSION" \
		registry=github.com/distribution/distribution/v3/cmd/registry
}

# kind for deploy/kind; its go.mod has no replace directives.
build_kind() {
	go_install_cached "$KIND_DIR" "$KIND_VERSION" "" sigs.k8s.io/kind
}

# tool_builder NAME prints the build function of a binary node.sh caches, or
# fails for a name it does not build.
tool_builder() {
	case $1 in
	containerd | containerd-shim-runc-v2 | ctr) echo build_containerd ;;
	crictl) echo build_crictl ;;
	coredns) echo build_coredns ;;
	kubelet) echo build_kubelet ;;
	kubelet-arm64) echo build_kubelet_arm64 ;;
	kube-apiserver | kube-controller-manager | kube-scheduler | kube-proxy | kubectl | kubeadm) echo build_kubernetes ;;
	jaeger) echo build_jaeger ;;
	promtool) echo build_promtool ;;
	prometheus) echo build_prometheus ;;
	etcd) echo build_etcd ;;
	kind) echo build_kind ;;
	registry) echo build_registry ;;
	*) return 1 ;;
	esac
}

# tool_path NAME prints where the cached binary NAME is (built or not).
tool_path() {
	case $(tool_builder "$1") in
	build_containerd) echo "$CONTAINERD_DIR/bin/$1" ;;
	build_crictl) echo "$CRICTL_DIR/bin/$1" ;;
	build_coredns) echo "$COREDNS_DIR/bin/$1" ;;
	build_kubelet) echo "$KUBELET_BIN" ;;
	build_kubelet_arm64) echo "$KUBELET_ARM64_DIR/bin/kubelet" ;;
	build_kubernetes) echo "$K8S_DIR/bin/$1" ;;
	build_jaeger) echo "$JAEGER_DIR/bin/$1" ;;
	build_promtool) echo "$PROMTOOL_DIR/bin/$1" ;;
	build_prometheus) echo "$PROMETHEUS_DIR/bin/$1" ;;
	build_etcd) echo "$ETCD_CACHE_DIR/bin/$1" ;;
	build_kind) echo "$KIND_DIR/bin/$1" ;;
	build_registry) echo "$REGISTRY_DIR/bin/$1" ;;
	esac
}

# tool [--built] NAME prints the path of the cached binary NAME, building it
# first when it is missing (--built: fail instead, and under a build ledger
# also when no earlier step of this run built or asked for it). This is the
# one way for a script or test outside node.sh to find a binary node.sh
# builds, so that no caller ever holds a path computed before the build that
# makes it.
tool() {
	local build=1
	[[ ${1:-} == --built ]] && build=0 && shift
	local name=${1:-} builder path
	builder=$(tool_builder "$name") || die "node.sh builds no tool named '${name}' (known: containerd containerd-shim-runc-v2 ctr crictl coredns kube-apiserver kube-controller-manager kube-scheduler kubelet kubelet-arm64 kube-proxy kubectl kubeadm etcd kind registry jaeger promtool prometheus)"
	path=$(tool_path "$name")
	if ((!build)); then
		[[ -x $path ]] || die "$name is not built yet ($path): run 'node.sh tool $name' or 'node.sh build'"
		ledger_has "$path" || die "$name is used before any step of this run built it: $path is cached, but on a fresh machine it would not be; ask 'node.sh tool $name' (it builds when missing) or run the step that builds it first (build ledger $READYLINE_BUILD_LEDGER)"
		echo "$path"
		return 0
	fi
	if [[ -x $path ]]; then
		ledger_record "$path"
	else
		need_root
		with_lock "$builder" >&2
		[[ -x $path ]] || die "building $name did not produce $path"
	fi
	echo "$path"
}

build_node_binaries() {
	build_containerd
	build_crictl
	build_coredns
	build_kubernetes
	build_kubelet
	build_registry
}
