package collector

import (
	"testing"

	"github.com/readyline/readyline/collector/event"
)

func TestHelperScope(t *testing.T) {
	tests := []struct {
		filename string
		want     event.Scope
	}{
		{"/usr/sbin/runc", event.ScopeRuntime},
		{"/usr/local/bin/containerd-shim-runc-v2", event.ScopeRuntime},
		{"/usr/lib/cni/bridge", event.ScopeCNI},
		{"/opt/cni/bin/host-local", event.ScopeCNI},
		{"/usr/bin/conmon", event.ScopeRuntime},
		{"/usr/bin/containerd", event.ScopeHost},
		{"/usr/bin/sh", event.ScopeHost},
		{"/opt/cni/bin/../../bin/sh", event.ScopeHost},
	}
	for _, tt := range tests {
		if got := HelperScope(tt.filename, DefaultCNIBinDirs); got != tt.want {
			t.Errorf("HelperScope(%q) = %v, want %v", tt.filename, got, tt.want)
		}
	}
}
