package collector

import (
	"path"
	"strings"

	"github.com/readyline/readyline/collector/event"
)

// DefaultCNIBinDirs are where CNI plugins are installed on common nodes.
var DefaultCNIBinDirs = []string{"/opt/cni/bin", "/usr/lib/cni", "/usr/libexec/cni"}

// runtimeHelpers are host programs that build containers: their argv is
// worth keeping (container ids, bundle paths).
var runtimeHelpers = map[string]bool{
	"runc": true, "crun": true, "runsc": true, "youki": true, "conmon": true,
}

// HelperScope says whether the program at filename is a container runtime
// helper: ScopeRuntime for an OCI runtime, a containerd shim or conmon,
// ScopeCNI for a CNI plugin (any program in one of cniBinDirs), ScopeHost
// for anything else.
func HelperScope(filename string, cniBinDirs []string) event.Scope {
	base := path.Base(filename)
	if runtimeHelpers[base] || strings.HasPrefix(base, "containerd-shim") {
		return event.ScopeRuntime
	}
	dir := path.Dir(filename)
	for _, d := range cniBinDirs {
		if dir == d {
			return event.ScopeCNI
		}
	}
	return event.ScopeHost
}
