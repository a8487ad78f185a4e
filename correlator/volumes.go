package correlator

import (
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/readyline/readyline/collector/event"
)

// VolumeSetup is what the kubelet did to set up one of the pod's volumes
// before its sandbox, as far as readyline sees it: its calls of the
// volume's CSI node plugin (NodeStageVolume, then NodePublishVolume), or
// an in-tree plugin's SetUp (a configMap's files written), failed ones and
// retries included. The kubelet creates the sandbox only
// once every volume is set up (kubelet.go SyncPod: WaitForAttachAndMount),
// so these calls are what a slow PodReadyToStartContainers waited on.
type VolumeSetup struct {
	// Name is the pod's volume (spec.volumes[].name) when the pod says
	// which one it is, else what the kubelet calls it (Source).
	Name string `json:"name"`
	// Source is the volume as the kubelet's volume spec names it: the
	// PersistentVolume bound to the claim, empty for an inline volume.
	Source string `json:"source,omitempty"`
	// Driver is the CSI driver, or the in-tree volume plugin
	// (kubernetes.io/configmap).
	Driver string    `json:"driver,omitempty"`
	Calls  []CRICall `json:"calls"`
}

// volumeSetups are the pod's volumes that the kubelet set up during the
// start, before its first sandbox (the kubelet sets a Secret's or a
// configMap's volume up again at each sync of the pod: those are not its
// start), in the order of their first call.
func (d *derivation) volumeSetups(tl *Timeline) []VolumeSetup {
	before := tl.End
	for _, c := range d.p.calls {
		if c.Method == event.CRIRunPodSandbox && !c.Time.IsZero() && (before.IsZero() || c.Time.Before(before)) {
			before = c.Time
		}
	}
	var out []VolumeSetup
	index := map[[2]string]int{}
	for _, c := range d.p.calls {
		if !c.Method.IsVolume() || c.Time.IsZero() || (!before.IsZero() && c.Time.After(before)) {
			continue
		}
		key := [2]string{c.Volume, c.Driver}
		i, ok := index[key]
		if !ok {
			i = len(out)
			index[key] = i
			v := VolumeSetup{Name: c.Volume, Driver: c.Driver}
			if c.Method.IsCSI() {
				v.Name, v.Source = podVolumeName(d.p.pod, c.Volume, c.Driver), c.Volume
			}
			out = append(out, v)
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
// [start, end]: the volumes' calls that held it (criticalVolumeCalls),
// each named by what it did, how long and by which driver, and the wait
// around them.
func volumeSteps(cp *pathBuilder, volumes []VolumeSetup, kind ShareKind, what string, start, end time.Time) {
	at := start
	for _, st := range criticalVolumeCalls(volumeCallsIn(volumes, start, end), end) {
		cp.add(PhaseWaitSandbox, kind, what, at, st.call.Start)
		cp.add(VolumeStepName(st.volume.Name), ShareWaitVolumes, st.describe(), st.call.Start, st.call.End)
		at = st.call.End
	}
	cp.add(PhaseWaitSandbox, kind, what, at, end)
}

// criticalVolumeCalls is the chain of calls that held the wait ending at
// end: the volume manager sets the pod's volumes up in parallel (an
// operation each), and the sandbox waits for the last: the call that
// ended last, then the one that ended last before it began, and so on.
func criticalVolumeCalls(calls []volumeCall, end time.Time) []volumeCall {
	var chain []volumeCall
	limit := end
	for {
		best := -1
		for i, c := range calls {
			if !c.call.End.After(limit) && (best < 0 || c.call.End.After(calls[best].call.End)) {
				best = i
			}
		}
		if best < 0 || (len(chain) > 0 && !calls[best].call.End.Before(chain[len(chain)-1].call.End)) {
			break
		}
		chain = append(chain, calls[best])
		limit = calls[best].call.Start
	}
	slices.Reverse(chain)
	return chain
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

// isVolumeCall: f is a step of a volume's setup.
func (f InFlightCall) isVolumeCall() bool { return f.Method.IsVolume() }
