package correlator

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// VolumeSetup is what the kubelet did to set up one of the pod's volumes
// before its sandbox, as far as readyline sees it: its calls of the
// volume's CSI node plugin (NodeStageVolume, then NodePublishVolume),
// failed ones and retries included. The kubelet creates the sandbox only
// once every volume is set up (kubelet.go SyncPod: WaitForAttachAndMount),
// so these calls are what a slow PodReadyToStartContainers waited on.
type VolumeSetup struct {
	// Name is the pod's volume (spec.volumes[].name) when the pod says
	// which one it is, else what the kubelet calls it (Source).
	Name string `json:"name"`
	// Source is the volume as the kubelet's volume spec names it: the
	// PersistentVolume bound to the claim, empty for an inline volume.
	Source string `json:"source,omitempty"`
	// Driver is the CSI driver.
	Driver string    `json:"driver,omitempty"`
	Calls  []CRICall `json:"calls"`
}

// volumeSetups are the pod's volumes that the kubelet set up through a
// CSI driver during the start (calls that began before its End), in the
// order of their first call.
func (d *derivation) volumeSetups(tl *Timeline) []VolumeSetup {
	var out []VolumeSetup
	index := map[[2]string]int{}
	for _, c := range d.p.calls {
		if !c.Method.IsCSI() || (!tl.End.IsZero() && c.Time.After(tl.End)) {
			continue
		}
		key := [2]string{c.Volume, c.Driver}
		i, ok := index[key]
		if !ok {
			i = len(out)
			index[key] = i
			out = append(out, VolumeSetup{Name: podVolumeName(d.p.pod, c.Volume, c.Driver), Source: c.Volume, Driver: c.Driver})
		}
		out[i].Calls = append(out[i].Calls, *criCall(c))
	}
	return out
}

// podVolumeName is the pod's name for the volume the kubelet names source
// (a PersistentVolume's name, or "" for an inline CSI volume) of driver:
// the claim's volume when the pod has one claim, the inline CSI volume of
// that driver when it has one; else source.
func podVolumeName(pod *corev1.Pod, source, driver string) string {
	var claims, inline []string
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil || v.Ephemeral != nil:
			claims = append(claims, v.Name)
		case v.CSI != nil && v.CSI.Driver == driver:
			inline = append(inline, v.Name)
		}
	}
	switch {
	case source != "" && len(claims) == 1:
		return claims[0]
	case source == "" && len(inline) == 1:
		return inline[0]
	}
	return source
}

// VolumeStepName is the critical path's name of a step of volume's setup.
func VolumeStepName(volume string) string { return "volume/" + volume }

// volumeSteps are the critical path's steps of the wait before the sandbox
// [start, end]: each CSI call of a volume inside it (what it did, how
// long, by which driver), and the wait around them.
func volumeSteps(cp *pathBuilder, volumes []VolumeSetup, kind ShareKind, what string, start, end time.Time) {
	at := start
	for _, st := range volumeCallsIn(volumes, start, end) {
		cp.add(PhaseWaitSandbox, kind, what, at, st.call.Start)
		cp.add(VolumeStepName(st.volume.Name), ShareWaitVolumes, st.describe(), st.call.Start, st.call.End)
		at = latest(at, st.call.End)
	}
	cp.add(PhaseWaitSandbox, kind, what, at, end)
}

// volumeCall is one call of a volume's setup.
type volumeCall struct {
	volume *VolumeSetup
	call   CRICall
}

// describe is "volume data: NodeStageVolume 5.0s (csi.example.dev)".
func (v volumeCall) describe() string {
	s := "volume " + v.volume.Name + ": " + v.call.Method.Short() + " " + fmtDur(v.call.End.Sub(v.call.Start))
	if v.call.Err {
		s += " failed"
	}
	if v.volume.Driver != "" {
		s += " (" + v.volume.Driver + ")"
	}
	return s
}

// volumeCallsIn are the volumes' calls that lie inside [start, end], by
// their start.
func volumeCallsIn(volumes []VolumeSetup, start, end time.Time) []volumeCall {
	var out []volumeCall
	for i := range volumes {
		for _, c := range volumes[i].Calls {
			if c.Start.IsZero() || c.Start.Before(start) || c.End.After(end) {
				continue
			}
			out = append(out, volumeCall{&volumes[i], c})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].call.Start.Before(out[j].call.Start) })
	return out
}

// describeVolumeCall is a CSI call in flight: "volume data: NodeStageVolume
// 6.2s so far (csi.example.dev)".
func (f InFlightCall) describeVolumeCall(ran time.Duration) string {
	s := "volume " + f.Volume + ": " + f.Method.Short() + " " + fmtDur(ran) + " so far"
	if f.Driver != "" {
		s += " (" + f.Driver + ")"
	}
	return s
}

// isVolumeCall: f is a call of a volume's CSI driver.
func (f InFlightCall) isVolumeCall() bool { return f.Method.IsCSI() }
