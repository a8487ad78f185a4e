package collector

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/readyline/readyline/bpf"
	"github.com/readyline/readyline/collector/testenv"
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

func TestKubeletCRILayout(t *testing.T) {
	proxyBuild := func(v string) *debug.BuildInfo {
		return &debug.BuildInfo{Main: debug.Module{Path: "k8s.io/kubernetes", Version: v},
			Deps: []*debug.Module{{Path: "k8s.io/cri-api", Version: "v0.0.0",
				Replace: &debug.Module{Path: "k8s.io/cri-api", Version: "v0." + strings.TrimPrefix(v, "v1.")}}}}
	}
	for _, tc := range []struct {
		name          string
		info          *debug.BuildInfo
		known         bool
		criAPI, kubel string
	}{
		{"v1.37.2", proxyBuild("v1.37.2"), true, "v0.37.2", "v1.37.2"},
		{"v1.36.3", proxyBuild("v1.36.3"), true, "v0.36.3", "v1.36.3"},
		{"v1.35.4", proxyBuild("v1.35.4"), true, "v0.35.4", "v1.35.4"},
		{"v1.34.4", proxyBuild("v1.34.4"), true, "v0.34.4", "v1.34.4"},
		{"v1.33.7: not checked", proxyBuild("v1.33.7"), false, "v0.33.7", "v1.33.7"},
		{"v1.38.0: newer than readyline", proxyBuild("v1.38.0"), false, "v0.38.0", "v1.38.0"},
		{"tree build without a tag", &debug.BuildInfo{Main: debug.Module{Path: "k8s.io/kubernetes", Version: "(devel)"},
			Deps: []*debug.Module{{Path: "k8s.io/cri-api", Version: "v0.0.0", Replace: &debug.Module{Path: "./staging/src/k8s.io/cri-api"}}}},
			false, "v0.0.0", "unknown"},
		{"no build info", nil, false, "", "unknown"},
	} {
		o, criAPI := kubeletCRILayout(tc.info)
		if (o != nil) != tc.known || criAPI != tc.criAPI {
			t.Errorf("%s: layout known %v, cri-api %q; want %v, %q", tc.name, o != nil, criAPI, tc.known, tc.criAPI)
		}
		if o != nil && *o != linkedCRIOffsets {
			t.Errorf("%s: offsets %+v, want the linked %+v", tc.name, *o, linkedCRIOffsets)
		}
		if v := kubeletVersion(tc.info); v != tc.kubel {
			t.Errorf("%s: kubelet version %q, want %q", tc.name, v, tc.kubel)
		}
	}
	if got := knownKubelets(); got != "1.34-1.37" {
		t.Errorf("knownKubelets() = %q", got)
	}
}

// TestSpecRegistersPortable: every register the kubelet's probes read is
// below bpf.PortableIntRegs, with the words after it a string (2) or a
// slice (3) takes, so that the one table means the same arguments on amd64
// and arm64 (bpf.IntReg0).
func TestSpecRegistersPortable(t *testing.T) {
	check := func(m criMethod, what string, reg uint8, words int) {
		if reg != bpf.NoReg && int(reg)+words > bpf.PortableIntRegs {
			t.Errorf("%s: %s in register %d (%d words): beyond amd64's %d", m.Symbol, what, reg, words, bpf.PortableIntRegs)
		}
	}
	for _, m := range slices.Concat(criMethods, kubeletCSIMethods) {
		for _, o := range []*criOffsets{&linkedCRIOffsets, nil} {
			s := m.spec(o)
			check(m, "string argument", s.StrArg, 2)
			check(m, "[]string argument", s.SliceArg, 3)
			check(m, "string result", s.RetStr, 2)
			check(m, "error result", s.RetErr, 1)
			for i, d := range s.Deref {
				if d.Kind != bpf.DerefNone {
					check(m, fmt.Sprintf("deref %d", i), d.Reg, 1)
				}
			}
		}
	}
}

// TestIntegrationCRIAPILayouts compiles a program against each
// k8s.io/cri-api of criAPIMinorsLikeLinked (the patch release of the
// kubelet deploy/node builds for that minor) and checks that its messages
// have the linked version's offsets: what lets readyline read the pod UID,
// container name and image in those kubelets. It needs the Go toolchain and
// the module proxy (or a module cache holding those versions).
func TestIntegrationCRIAPILayouts(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles against four cri-api versions")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("CRI-API LAYOUT TEST NOT RUN: no go on PATH")
	}
	patch := map[string]string{} // v0.34 -> v0.34.4
	for _, v := range testenv.KubeletVersions(t) {
		s := "v0." + strings.TrimPrefix(v, "v1.")
		patch[s[:strings.LastIndexByte(s, '.')]] = s
	}
	want := fmt.Sprintf("%d %d %d %d %d\n", linkedCRIOffsets.sandboxConfigMetadata, linkedCRIOffsets.sandboxMetadataUID,
		linkedCRIOffsets.containerConfigMeta, linkedCRIOffsets.containerMetadataName, linkedCRIOffsets.imageSpecImage)
	for _, minor := range criAPIMinorsLikeLinked {
		t.Run(minor, func(t *testing.T) {
			v := patch[minor]
			if v == "" {
				t.Fatalf("deploy/node builds no kubelet of cri-api %s: criAPIMinorsLikeLinked claims more than is checked", minor)
			}
			dir := t.TempDir()
			mod := fmt.Sprintf("module layout\n\ngo 1.24\n\nrequire k8s.io/cri-api %s\n", v)
			if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(mod), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(layoutProgram), 0o644); err != nil {
				t.Fatal(err)
			}
			run := func(args ...string) string {
				cmd := exec.Command(goBin, args...)
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
				out, err := cmd.CombinedOutput()
				if err != nil {
					// A compile error is what the test exists to catch, and a
					// module it cannot fetch is a broken build: neither skips.
					t.Fatalf("cri-api %s: go %s: %v\n%s", v, strings.Join(args, " "), err, out)
				}
				return string(out)
			}
			run("mod", "tidy")
			if got := run("run", "."); got != want {
				t.Errorf("k8s.io/cri-api %s: offsets %q, the linked %s has %q", v, got, linkedCRIAPIVersion(), want)
			}
		})
	}
}

// layoutProgram prints the offsets criOffsets holds, in its order.
const layoutProgram = `package main

import (
	"fmt"
	"reflect"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func off(v any, name string) uintptr {
	f, ok := reflect.TypeOf(v).FieldByName(name)
	if !ok {
		panic(name)
	}
	return f.Offset
}

func main() {
	fmt.Println(off(runtimeapi.PodSandboxConfig{}, "Metadata"), off(runtimeapi.PodSandboxMetadata{}, "Uid"),
		off(runtimeapi.ContainerConfig{}, "Metadata"), off(runtimeapi.ContainerMetadata{}, "Name"),
		off(runtimeapi.ImageSpec{}, "Image"))
}
`
