package collector

import (
	"slices"
	"testing"
	"time"

	"github.com/readyline/readyline/collector/event"
)

// TestCSINamesJoinByGoroutine: a CSI call takes the pod and volume the
// last NewMounter on its goroutine (of the same kubelet) named, if it came
// after it and within csiNamesAge; none otherwise.
func TestCSINamesJoinByGoroutine(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	rec := func(tgid uint32, g uint64, s float64) *GoCallRecord {
		at := t0.Add(time.Duration(s * float64(time.Second)))
		return &GoCallRecord{TGID: tgid, Goroutine: g, Start: at, End: at.Add(time.Millisecond)}
	}
	var n csiNames
	n.remember(rec(1, 0xa0, 0), "uid-a", "pv-a")
	n.remember(rec(1, 0xb0, 1), "uid-b", "pv-b")
	n.remember(rec(1, 0xa0, 2), "uid-c", "pv-c") // the goroutine, reused for another mount
	n.remember(rec(1, 0xd0, 3), "", "pv-d")      // no pod read: not kept
	for _, tc := range []struct {
		name     string
		r        *GoCallRecord
		uid, vol string
	}{
		{"after the last NewMounter of its goroutine", rec(1, 0xa0, 2.5), "uid-c", "pv-c"},
		{"another goroutine's", rec(1, 0xb0, 5), "uid-b", "pv-b"},
		{"before the NewMounter", rec(1, 0xb0, 0.5), "", ""},
		{"another kubelet's goroutine", rec(2, 0xa0, 2.5), "", ""},
		{"a goroutine that named nothing", rec(1, 0xd0, 4), "", ""},
		{"too long after", rec(1, 0xb0, 1+csiNamesAge.Seconds()+1), "", ""},
		{"no entry seen: its return", &GoCallRecord{TGID: 1, Goroutine: 0xa0, End: t0.Add(3 * time.Second)}, "uid-c", "pv-c"},
	} {
		c := &event.CRICall{Method: event.CSINodeStageVolume}
		n.name(c, tc.r)
		if c.PodUID != tc.uid || c.Volume != tc.vol {
			t.Errorf("%s: pod %q volume %q, want %q %q", tc.name, c.PodUID, c.Volume, tc.uid, tc.vol)
		}
	}
}

// TestCSINamesBounded: a burst of mounts beyond maxCSINames drops names,
// never grows without bound.
func TestCSINamesBounded(t *testing.T) {
	var n csiNames
	at := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	for g := range uint64(3 * maxCSINames) {
		n.remember(&GoCallRecord{TGID: 1, Goroutine: g, Start: at}, "uid", "pv")
	}
	if len(n.m) > maxCSINames {
		t.Errorf("%d goroutines remembered, bound %d", len(n.m), maxCSINames)
	}
}

// TestSetUpAtNamesThePodsVolume: an in-tree plugin's SetUpAt names its pod,
// volume and plugin by the directory; emptyDir setting up another plugin's
// directory (their wrapper) and a directory not of a pod name nothing.
func TestSetUpAtNamesThePodsVolume(t *testing.T) {
	configMap := setUpAt("configmap", "configMapVolumeMounter", "kubernetes.io~configmap")
	emptyDir := setUpAt("emptydir", "emptyDir", "kubernetes.io~empty-dir")
	const dir = "/var/lib/kubelet/pods/1f0c5a4e-8d2b-4b7a-9c1e-2f3a4b5c6d7e/volumes/"
	for _, tc := range []struct {
		m            criMethod
		dir          string
		uid, vol, by string
	}{
		{configMap, dir + "kubernetes.io~configmap/cfg", "1f0c5a4e-8d2b-4b7a-9c1e-2f3a4b5c6d7e", "cfg", "kubernetes.io/configmap"},
		{emptyDir, dir + "kubernetes.io~empty-dir/cache", "1f0c5a4e-8d2b-4b7a-9c1e-2f3a4b5c6d7e", "cache", "kubernetes.io/empty-dir"},
		{emptyDir, dir + "kubernetes.io~configmap/cfg", "", "", ""},
		{configMap, "/var/lib/kubelet/plugins/x/cfg", "", "", ""},
		{configMap, dir + "kubernetes.io~configmap/cfg/extra", "", "", ""},
	} {
		c := &event.CRICall{Method: tc.m.Method}
		tc.m.fill(c, &GoCallRecord{Str: tc.dir})
		if c.PodUID != tc.uid || c.Volume != tc.vol || c.Driver != tc.by {
			t.Errorf("%s on %s: pod %q volume %q plugin %q, want %q %q %q", tc.m.Symbol, tc.dir, c.PodUID, c.Volume, c.Driver, tc.uid, tc.vol, tc.by)
		}
	}
}

// TestProbedMethodsAreListed: every method the kubelet's probes report is
// one of event.CRIMethods, the set readyline_kubelet_calls_total's method
// label is bounded by; a method it reports outside it would be counted as
// "other".
func TestProbedMethodsAreListed(t *testing.T) {
	listed := event.CRIMethods()
	probed := map[event.CRIMethod]bool{}
	for _, m := range slices.Concat(criMethods, kubeletCSIMethods) {
		if m.names {
			continue // names the CSI calls after it, not reported
		}
		probed[m.Method] = true
		if !slices.Contains(listed, m.Method) {
			t.Errorf("%s (%s) is not in event.CRIMethods", m.Method, m.Symbol)
		}
	}
	for _, m := range listed {
		if !probed[m] {
			t.Errorf("%s is listed and probed by none", m)
		}
	}
}
