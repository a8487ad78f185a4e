package gofunc

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"

	"github.com/readyline/readyline/collector/testenv"
)

// kubeletBinary returns the path of the kubelet that deploy/node runs by
// default (v1.37.2, stripped with -s -w, -trimpath). Without it the test
// skips loudly, or fails with READYLINE_REQUIRE_NODE=1.
func kubeletBinary(tb testing.TB) string {
	tb.Helper()
	return testenv.KubeletBinary(tb, testenv.KubeletVersions(tb)[0])
}

const (
	criRuntime = "k8s.io/cri-client/pkg.(*remoteRuntimeService)."
	criImage   = "k8s.io/cri-client/pkg.(*remoteImageService)."
)

// kubeletCRIMethods are the CRI client methods readyline probes, which
// k8s.io/cri-client v0.34 to v0.37 must have.
var kubeletCRIMethods = []string{
	criRuntime + "RunPodSandbox",
	criRuntime + "StopPodSandbox",
	criRuntime + "RemovePodSandbox",
	criRuntime + "CreateContainer",
	criRuntime + "StartContainer",
	criRuntime + "StopContainer",
	criRuntime + "RemoveContainer",
	criRuntime + "ExecSync",
	criImage + "PullImage",
}

// kubeletOptional are CRI client methods worth knowing about; the test
// reports them but does not require them.
var kubeletOptional = []string{
	criRuntime + "ContainerStatus",
	criRuntime + "PodSandboxStatus",
	criRuntime + "ListContainers",
	criRuntime + "ListPodSandbox",
	criRuntime + "UpdateContainerResources",
	criRuntime + "createContainerV1",
	criRuntime + "execSyncV1",
	criImage + "ImageStatus",
	criImage + "pullImageV1",
}

// TestIntegrationKubeletBinary finds the CRI client methods, and every
// RET in them, in each kubelet deploy/node builds (the control plane's and
// the older ones of K8S_KUBELET_VERSION), as released: stripped, for the
// host and cross-built for arm64 (node.sh tool kubelet-arm64).
func TestIntegrationKubeletBinary(t *testing.T) {
	for goarch, tool := range testenv.KubeletTools() {
		t.Run(goarch, func(t *testing.T) {
			for _, v := range testenv.KubeletVersions(t) {
				t.Run(v, func(t *testing.T) { checkKubeletBinary(t, v, goarch, testenv.KubeletTool(t, tool, v)) })
			}
		})
	}
}

func checkKubeletBinary(t *testing.T, want, goarch, path string) {
	b := open(t, path)
	if b.Arch() != goarch {
		t.Fatalf("%s is a %s executable, want %s", path, b.Arch(), goarch)
	}

	bi, err := b.BuildInfo()
	if err != nil {
		t.Fatal(err)
	}
	deps := map[string]*debug.Module{}
	for _, d := range bi.Deps {
		deps[d.Path] = d
	}
	version := func(path string) string {
		d := deps[path]
		switch {
		case d == nil:
			return "absent"
		case d.Replace != nil:
			return d.Version + " => " + d.Replace.Path + " " + d.Replace.Version
		}
		return d.Version
	}
	t.Logf("build info: %s, package %s, main module %s %s; k8s.io/cri-api %s; k8s.io/cri-client %s",
		bi.GoVersion, bi.Path, bi.Main.Path, bi.Main.Version, version("k8s.io/cri-api"), version("k8s.io/cri-client"))
	if bi.Main.Path != "k8s.io/kubernetes" || deps["k8s.io/cri-client"] == nil || !strings.HasPrefix(bi.GoVersion, "go1.") {
		t.Errorf("not a kubelet build: main module %q, Go %q, cri-client %s", bi.Main.Path, bi.GoVersion, version("k8s.io/cri-client"))
	}
	// The staging modules are the kubelet's own release (v1.34.4: v0.34.4).
	staging := "v0." + strings.TrimPrefix(want, "v1.")
	if bi.Main.Version != want {
		t.Errorf("main module version %s, want %s", bi.Main.Version, want)
	}
	for _, m := range []string{"k8s.io/cri-api", "k8s.io/cri-client"} {
		if d := deps[m]; d == nil || d.Replace == nil || d.Replace.Version != staging {
			t.Errorf("%s is %s, want => %s", m, version(m), staging)
		}
	}

	names := append(slices.Clone(kubeletCRIMethods), kubeletOptional...)
	fns, errs := b.Lookup(names...)
	for _, err := range errs {
		var le *LookupError
		if errors.As(err, &le) && !slices.Contains(kubeletCRIMethods, le.Name) {
			t.Logf("optional: %v", err)
			continue
		}
		t.Error(err)
	}

	var tab strings.Builder
	w := tabwriter.NewWriter(&tab, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "function\tsize\tRETs\tRET offsets\tentry\tfile offset\tfrom\t")
	for _, name := range names {
		fn := fns[name]
		if fn == nil {
			continue
		}
		checkFunc(t, path, fn)
		offs := make([]string, len(fn.RetOffsets))
		for i, o := range fn.RetOffsets {
			offs[i] = "+" + strconv.FormatUint(o, 10)
		}
		fmt.Fprintf(w, "%s\t%d\t%d\t%s\t%#x\t%#x\t%s\t\n", strings.TrimPrefix(name, "k8s.io/cri-client/pkg."),
			fn.Size(), len(fn.RetOffsets), strings.Join(offs, " "), fn.Entry, fn.EntryOffset, fn.Source)
	}
	w.Flush()
	t.Logf("%s (%s):\n%s", path, b.Arch(), tab.String())
	checkAgainstObjdump(t, path, fns)
}

// BenchmarkOpenLookup opens an executable and looks up the CRI client
// methods, as the kubelet-call source does for each kubelet (re)start. Besides
// time and allocations it reports the process's peak RSS during the run
// (VmHWM, reset first) and the RSS it started from.
func BenchmarkOpenLookup(b *testing.B) {
	b.Run("kubelet", func(b *testing.B) {
		benchOpenLookup(b, kubeletBinary(b), append(slices.Clone(kubeletCRIMethods), kubeletOptional...))
	})
	b.Run("crilike-stripped", func(b *testing.B) {
		benchOpenLookup(b, crilike(b, builds[1]), crilikeMethods)
	})
}

func benchOpenLookup(b *testing.B, path string, names []string) {
	runtime.GC()
	debug.FreeOSMemory()
	base, resetOK := resetPeakRSS()
	b.ReportAllocs()
	for b.Loop() {
		bin, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		fns, _ := bin.Lookup(names...)
		bin.Close()
		if len(fns) == 0 {
			b.Fatal("nothing found")
		}
	}
	b.StopTimer()
	if peak, ok := procStatusKB("VmHWM"); ok && resetOK {
		b.ReportMetric(float64(peak)/1024, "peak-RSS-MiB")
		b.ReportMetric(float64(base)/1024, "start-RSS-MiB")
	}
}

// resetPeakRSS resets the kernel's record of this process's peak RSS to the
// current RSS (Linux 4.0+) and returns that, in KiB.
func resetPeakRSS() (uint64, bool) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		return 0, false
	}
	return procStatusKB("VmRSS")
}

// procStatusKB reads a "Key:  N kB" line of /proc/self/status.
func procStatusKB(key string) (uint64, bool) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			n, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}
