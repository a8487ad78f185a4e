package exporter

import (
	"bytes"
	"strings"
	"testing"

	cri "github.com/readyline/readyline/collector/event"
	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter/waterfall"
)

// volumesTimeline is slowSandbox with its wait before the sandbox spent on
// a CSI volume (a stage, a failed publish, a publish) and a quick
// configMap volume.
func volumesTimeline() *correlator.Timeline {
	tl := slowSandbox()
	tl.Volumes = []correlator.VolumeSetup{
		{Name: "cfg", Driver: "kubernetes.io/configmap", Calls: []correlator.CRICall{{Method: cri.VolumeSetUp, Start: at(60), End: at(65)}}},
		{Name: "data", Source: "pv-1", Driver: "csi.example.dev", Calls: []correlator.CRICall{
			{Method: cri.CSINodeStageVolume, Start: at(70), End: at(300)},
			{Method: cri.CSINodePublishVolume, Start: at(301), End: at(320), Err: true},
			{Method: cri.CSINodePublishVolume, Start: at(350), End: at(440)},
		}},
	}
	return tl
}

// TestWaterfallVolumes: the volumes' steps that took time or failed are
// rows under the wait before the sandbox; the quick ones are counted.
func TestWaterfallVolumes(t *testing.T) {
	var buf bytes.Buffer
	if err := waterfall.Render(&buf, volumesTimeline(), 160); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"volume data NodeStageVolume", "volume data NodePublishVolume ✗", "(2 volume setup steps under 100ms)"} {
		if !strings.Contains(out, want) {
			t.Errorf("waterfall has no %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "volume cfg") {
		t.Errorf("the quick configMap volume has a row:\n%s", out)
	}
}

// TestVolumeSpans: a volume.setup span per volume under pod.wait_sandbox,
// from its first call to its last, its calls as its children.
func TestVolumeSpans(t *testing.T) {
	spans, _ := exportToMemory(t, TraceConfig{}, volumesTimeline())
	st := newSpanTree(t, spans)
	wait := st.child(st.root, correlator.PhaseWaitSandbox)
	setups := st.named(wait, SpanVolumeSetup)
	if len(setups) != 2 {
		t.Fatalf("%d volume.setup spans under %s, want 2 (children: %v)", len(setups), wait.Name, st.childNames(wait))
	}
	wantAttrs(t, setups[0], map[string]string{"k8s.volume.name": "cfg", string(AttrVolumeCSIDriver): "kubernetes.io/configmap"})
	data := setups[1]
	wantInterval(t, data, at(70), at(440))
	wantAttrs(t, data, map[string]string{"k8s.volume.name": "data", string(AttrVolumeCSIDriver): "csi.example.dev",
		string(AttrVolumeSource): "pv-1", "k8s.volume.type": "persistentVolumeClaim"})
	wantInterval(t, st.child(data, string(cri.CSINodeStageVolume)), at(70), at(300))
	if n := len(st.named(data, string(cri.CSINodePublishVolume))); n != 2 {
		t.Errorf("%d publish spans, want 2", n)
	}
}

// TestVolumeProvision: a claim provisioned while the pod waited to be
// scheduled is a volume.provision span under pod.schedule, with its claim,
// driver and failed attempts, and a row in that wait; a volume with a
// provision and no setup seen makes no volume.setup span.
func TestVolumeProvision(t *testing.T) {
	tl := volumesTimeline()
	tl.Volumes[1].Provision = &correlator.Provision{Claim: "data-claim", Start: at(5), End: at(35), Failures: 2, Error: "rpc error: code = Unavailable"}
	tl.Volumes = append(tl.Volumes, correlator.VolumeSetup{Name: "logs", Driver: "csi.example.dev",
		Provision: &correlator.Provision{Claim: "logs", Start: at(10), End: at(20)}})
	spans, _ := exportToMemory(t, TraceConfig{}, tl)
	st := newSpanTree(t, spans)
	schedule := st.child(st.root, correlator.PhaseSchedule)
	provisions := st.named(schedule, SpanVolumeProvision)
	if len(provisions) != 2 {
		t.Fatalf("%d volume.provision spans under %s, want 2 (children: %v)", len(provisions), schedule.Name, st.childNames(schedule))
	}
	wantInterval(t, provisions[0], at(5), at(35))
	wantAttrs(t, provisions[0], map[string]string{"k8s.volume.name": "data", string(AttrVolumeClaim): "data-claim",
		string(AttrVolumeCSIDriver): "csi.example.dev", string(AttrVolumeProvisionFailures): "2"})
	if n := len(st.named(st.child(st.root, correlator.PhaseWaitSandbox), SpanVolumeSetup)); n != 2 {
		t.Errorf("%d volume.setup spans, want 2 (logs has no setup seen)", n)
	}
	var buf bytes.Buffer
	if err := waterfall.Render(&buf, tl, 160); err != nil {
		t.Fatal(err)
	}
	if want := "volume data provision (2 failed)"; !strings.Contains(buf.String(), want) {
		t.Errorf("waterfall has no %q:\n%s", want, buf.String())
	}
}
