package collector

import (
	"runtime/debug"
	"testing"
)

func TestStagingVersion(t *testing.T) {
	dep := func(path, version string, replace *debug.Module) *debug.Module {
		return &debug.Module{Path: path, Version: version, Replace: replace}
	}
	for _, tc := range []struct {
		name string
		info debug.BuildInfo
		want string
	}{
		{"module proxy build (deploy/node)", debug.BuildInfo{Main: debug.Module{Path: "readyline-tools"},
			Deps: []*debug.Module{dep("k8s.io/cri-api", "v0.0.0", &debug.Module{Path: "k8s.io/cri-api", Version: "v0.37.2"})}}, "v0.37.2"},
		{"kubernetes tree build", debug.BuildInfo{Main: debug.Module{Path: "k8s.io/kubernetes", Version: "v1.36.4"},
			Deps: []*debug.Module{dep("k8s.io/cri-api", "v0.0.0", &debug.Module{Path: "./staging/src/k8s.io/cri-api"})}}, "v0.36.4"},
		{"plain", debug.BuildInfo{Deps: []*debug.Module{dep("k8s.io/cri-api", "v0.35.1", nil)}}, "v0.35.1"},
		{"absent", debug.BuildInfo{}, ""},
	} {
		if got := stagingVersion(&tc.info, "k8s.io/cri-api"); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	if !sameMinor("v0.37.2", "v0.37.0") || sameMinor("v0.36.9", "v0.37.2") || sameMinor("", "v0.37.2") {
		t.Error("sameMinor")
	}
}
