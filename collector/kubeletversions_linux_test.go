package collector

import (
	"log/slog"
	"os"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/readyline/readyline/collector/testenv"
)

// TestKubeletCRIOffsetsUnknownVersion: a kubelet whose CRI message layout
// readyline does not know is traced with ids only, and one Warn names its
// version, its cri-api and what is lost.
func TestKubeletCRIOffsetsUnknownVersion(t *testing.T) {
	info := &debug.BuildInfo{Main: debug.Module{Path: "k8s.io/kubernetes", Version: "v1.33.7"},
		Deps: []*debug.Module{{Path: "k8s.io/cri-api", Version: "v0.0.0", Replace: &debug.Module{Path: "k8s.io/cri-api", Version: "v0.33.7"}}}}
	logs := &logRecorder{}
	if o := kubeletCRIOffsets(info, slog.New(logs)); o != nil {
		t.Errorf("offsets %+v for cri-api v0.33.7, want none", *o)
	}
	if len(logs.records) != 1 || logs.records[0].Level != slog.LevelWarn {
		t.Fatalf("logged %q, want one Warn", logs.messages(slog.LevelWarn))
	}
	rec := logs.records[0]
	attrs := map[string]string{}
	rec.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.String(); return true })
	for _, lost := range []string{"pod UID", "container name", "image"} {
		if !strings.Contains(rec.Message, lost) {
			t.Errorf("the Warn %q does not say the %s is lost", rec.Message, lost)
		}
	}
	if attrs["kubelet_version"] != "v1.33.7" || attrs["kubelet_cri_api"] != "v0.33.7" || attrs["known"] != "1.34-1.37" {
		t.Errorf("the Warn's attributes %v, want kubelet_version v1.33.7, kubelet_cri_api v0.33.7, known 1.34-1.37", attrs)
	}

	logs = &logRecorder{}
	for _, v := range []string{"v1.34.4", "v1.37.2"} {
		info.Main.Version, info.Deps[0].Replace.Version = v, "v0."+strings.TrimPrefix(v, "v1.")
		if o := kubeletCRIOffsets(info, slog.New(logs)); o == nil {
			t.Errorf("%s: no offsets", v)
		}
	}
	if len(logs.records) != 0 {
		t.Errorf("known kubelets logged %q", logs.messages(slog.LevelWarn))
	}
}

// TestKubeletWithoutTheCRIClient: a Go binary without the CRI client
// methods (a kubelet before 1.31, whose client was in another package) is
// refused with an error naming its version and the versions readyline
// knows; the source then says attach_failed and the daemon goes on
// (TestKubeletCallSourceStatusAtStart).
func TestKubeletWithoutTheCRIClient(t *testing.T) {
	self, err := os.Executable() // a Go binary, no CRI client in it
	if err != nil {
		t.Fatal(err)
	}
	e := readKubeletFile(t, self)
	if e.err == nil {
		t.Fatal("no error for a binary without the CRI client")
	}
	for _, want := range []string{"none of the CRI client methods found in kubelet unknown", "readyline knows 1.34-1.37", "RunPodSandbox"} {
		if !strings.Contains(e.err.Error(), want) {
			t.Errorf("error %q does not say %q", e.err, want)
		}
	}
}

// TestIntegrationKubeletVersions reads each kubelet deploy/node builds
// (stripped, as released) as the kubelet-call source does: every probed
// method is found, the message layout is known (pod UID, container name
// and image are read) and nothing is warned about. Each is read as built
// for this host and, cross-built, for arm64 (the layout is a 64-bit one:
// the same on both).
func TestIntegrationKubeletVersions(t *testing.T) {
	for goarch, tool := range testenv.KubeletTools() {
		t.Run(goarch, func(t *testing.T) {
			for _, v := range testenv.KubeletVersions(t) {
				t.Run(v, func(t *testing.T) { checkKubeletVersion(t, v, testenv.KubeletTool(t, tool, v)) })
			}
		})
	}
}

func checkKubeletVersion(t *testing.T, v, path string) {
	logs := &logRecorder{}
	e := readKubeletFileLogged(t, path, logs)
	if e.err != nil || e.lookupErr != nil {
		t.Fatalf("%v; lookup: %v", e.err, e.lookupErr)
	}
	for _, m := range kubeletTarget.methods {
		if e.funcs[m.Symbol] == nil {
			t.Errorf("%s not found", m.Symbol)
		}
	}
	if e.offsets == nil || *e.offsets != linkedCRIOffsets {
		t.Errorf("offsets %v, want the linked cri-api's %+v", e.offsets, linkedCRIOffsets)
	}
	if e.version != v {
		t.Errorf("version %q, want %q", e.version, v)
	}
	if w := logs.messages(slog.LevelWarn); len(w) > 0 {
		t.Errorf("warned: %q", w)
	}
}

func readKubeletFile(t *testing.T, path string) *kubeletBinary {
	return readKubeletFileLogged(t, path, &logRecorder{})
}

// readKubeletFileLogged reads path as the kubelet-call source reads a kubelet.
func readKubeletFileLogged(t *testing.T, path string, logs *logRecorder) *kubeletBinary {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	s := &KubeletCallSource{cfg: KubeletCallConfig{target: &kubeletTarget}, logger: slog.New(logs)}
	return s.lookupMethods(f, st.Size())
}
