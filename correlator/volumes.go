package correlator

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
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
	// Attach is, for a volume that needs attaching to the node (its CSI
	// driver's attachRequired), the wait for it: from the pod's arrival on
	// the node to the kubelet's WaitForAttach (a call in Calls) returning,
	// once the attach/detach controller had the volume attached and said
	// so in the node's status. Nil for a volume that needs no attach.
	Attach *Interval `json:"attach,omitempty"`
	// Provision is, for a claim whose volume a provisioner made while the
	// pod waited to be scheduled, that making.
	Provision *Provision `json:"provision,omitempty"`
}

// Provision is a claim's volume being made by its provisioner, as the
// claim's Events tell it (1 s timestamps): from the provisioner's first
// Provisioning to its ProvisioningSucceeded, its failed attempts counted
// (ProvisioningFailed) with the last one's words. The scheduler binds a
// pod only once its claims are bound (VolumeBinding's PreBind), so the
// pod waited for it to be scheduled.
type Provision struct {
	Claim    string    `json:"claim"`
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
	Failures int       `json:"failures,omitempty"`
	Error    string    `json:"error,omitempty"`
	// Open is set on a start in progress whose pod is not scheduled yet
	// when the provisioner has not said it succeeded: End is then the
	// timeline's End (its AsOf), and the provisioning goes on.
	Open bool `json:"open,omitempty"`
}

// Duration is End - Start.
func (p Provision) Duration() time.Duration { return span(p.Start, p.End) }

// The external provisioner's reasons (sig-storage-lib-external-provisioner
// controller.go), on the claim.
const (
	reasonProvisioning          = "Provisioning"
	reasonProvisioningSucceeded = "ProvisioningSucceeded"
	reasonProvisioningFailed    = "ProvisioningFailed"
)

// provisions adds the provisioning of the pod's claims, as their Events
// read (kubeletEvents.claims) tell it, to the volume of each. For a start
// still being scheduled (tl in progress, the pod on no node yet), a claim
// whose provisioner began and has not succeeded is provisioning still: its
// Provision is Open, to tl's End.
func (d *derivation) provisions(volumes []VolumeSetup, tl *Timeline) []VolumeSetup {
	inFlight := tl.Outcome == OutcomeStarting && unscheduled(d.p.pod)
	for _, claim := range PodClaims(d.p.pod) {
		var pr *Provision
		var driver string
		for _, e := range d.p.events.claims {
			if e.Claim != claim {
				continue
			}
			if pr == nil {
				pr = &Provision{Claim: claim}
			}
			switch e.Reason {
			case reasonProvisioning:
				pr.Start = earliest(pr.Start, e.First)
				// "csi.example.dev_node-1_6f1c...": the driver, where it runs.
				driver, _, _ = strings.Cut(e.Component, "_")
			case reasonProvisioningSucceeded:
				pr.End = latest(pr.End, e.Last)
			case reasonProvisioningFailed:
				pr.Failures += int(max(e.Count, 1))
				pr.Error = e.Message
			}
		}
		if pr != nil && !pr.Start.IsZero() && pr.End.Before(pr.Start) && inFlight {
			pr.End, pr.Open = tl.End, true
		}
		if pr == nil || pr.Start.IsZero() || pr.End.Before(pr.Start) {
			continue // not provisioned while the start watched (bound, or its words lost)
		}
		name := claimVolume(d.p.pod, claim)
		i := slices.IndexFunc(volumes, func(v VolumeSetup) bool { return v.Name == name })
		if i < 0 {
			volumes = append(volumes, VolumeSetup{Name: name, Driver: driver})
			i = len(volumes) - 1
		}
		volumes[i].Provision = pr
		volumes[i].Driver = cmp.Or(volumes[i].Driver, driver)
	}
	return volumes
}

// claimVolume is the pod's volume of claim (PodClaims' name of it).
func claimVolume(pod *corev1.Pod, claim string) string {
	for _, v := range pod.Spec.Volumes {
		if (v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim) || (v.Ephemeral != nil && pod.Name+"-"+v.Name == claim) {
			return v.Name
		}
	}
	return claim
}

// provisionSteps are the critical path's steps of the wait to be scheduled
// [start, end]: the provisioning that ended last inside it (the scheduler
// binds the pod once every claim is bound: they are made in parallel) and
// the scheduling around it.
func provisionSteps(cp *pathBuilder, volumes []VolumeSetup, start, end time.Time) {
	var last *VolumeSetup
	for i := range volumes {
		p := volumes[i].Provision
		if p != nil && p.End.After(start) && p.Start.Before(end) && (last == nil || p.End.After(last.Provision.End)) {
			last = &volumes[i]
		}
	}
	if last == nil {
		cp.add(PhaseSchedule, ShareSchedule, "", start, end)
		return
	}
	p := last.Provision
	from, to := latest(start, p.Start), earliest(end, p.End)
	cp.add(PhaseSchedule, ShareSchedule, "", start, from)
	cp.add(VolumeStepName(last.Name), ShareWaitVolumes, describeProvision(last), from, to)
	if !p.Open { // provisioning still: the start ends in it
		cp.add(PhaseSchedule, ShareSchedule, "", to, end)
	}
}

// describeProvision is "volume data: provisioned in 4.0s
// (csi.example.dev)", with "after 2 failed attempts" when it failed first;
// in flight "volume data: provisioning 5.0s so far, 2 attempts failed
// (csi.example.dev): <the provisioner's last error>".
func describeProvision(v *VolumeSetup) string {
	p := v.Provision
	if p.Open {
		s := "volume " + v.Name + ": provisioning " + FormatDuration(p.Duration()) + " so far"
		if p.Failures > 0 {
			s += fmt.Sprintf(", %d %s failed", p.Failures, plural(p.Failures, "attempt", "attempts"))
		}
		if v.Driver != "" {
			s += " (" + v.Driver + ")"
		}
		if p.Failures > 0 && p.Error != "" {
			s += ": " + p.Error
		}
		return s
	}
	s := "volume " + v.Name + ": provisioned in " + FormatDuration(p.Duration())
	if p.Failures > 0 {
		s += fmt.Sprintf(", after %d failed %s", p.Failures, plural(p.Failures, "attempt", "attempts"))
	}
	if v.Driver != "" {
		s += " (" + v.Driver + ")"
	}
	return s
}

// Interval is a span of time, and whether what it timed failed.
type Interval struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	Err   bool      `json:"err,omitempty"`
}

// volumeSetups are the pod's volumes that the kubelet set up during the
// start, before its first sandbox (the kubelet sets a Secret's or a
// configMap's volume up again at each sync of the pod: those are not its
// start), in the order of their first call; then the claims provisioned
// while the pod waited to be scheduled.
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
		claimed := c.Method.IsCSI() || c.Method == event.VolumeWaitForAttach
		if claimed {
			key[1] = "" // a PersistentVolume's calls, WaitForAttach's without its driver
		}
		i, ok := index[key]
		if !ok {
			i = len(out)
			index[key] = i
			out = append(out, VolumeSetup{Name: c.Volume, Driver: c.Driver})
		}
		v := &out[i]
		if claimed {
			v.Source = c.Volume
			v.Driver = cmp.Or(v.Driver, c.Driver)
		}
		v.Calls = append(v.Calls, *criCall(c))
	}
	var arrived time.Time // the pod seen on the node: the wait before the sandbox began
	if ph, ok := phaseNamed(tl, PhaseWaitSandbox); ok {
		arrived = ph.Start
	}
	for i := range out {
		v := &out[i]
		if v.Source != "" {
			v.Name = podVolumeName(d.p.pod, v.Source, v.Driver)
		}
		for _, c := range v.Calls {
			if c.Method == event.VolumeWaitForAttach && !arrived.IsZero() && !c.End.Before(arrived) {
				v.Attach = &Interval{Start: arrived, End: c.End, Err: c.Err}
				break
			}
		}
	}
	return d.provisions(out, tl)
}

// unsetWorth is how long a claim's volume may go without a step of its
// setup before a start waiting for its sandbox is said to wait on it.
const unsetWorth = 5 * time.Second

// unsetClaims says which of the pod's claims (persistentVolumeClaim,
// ephemeral) a start waiting for its sandbox (tl, derived as of its End)
// has seen no setup step of, unsetWorth after it began: the kubelet calls
// the volume's driver as soon as the volume is attached to the node and
// the driver registered. Said only when steps of the pod's other volumes
// were seen (the kubelet's volume setups are traced on this node).
func unsetClaims(pod *corev1.Pod, tl *Timeline) []string {
	if len(tl.Volumes) == 0 || tl.End.Sub(tl.Start) < unsetWorth {
		return nil
	}
	set := map[string]bool{}
	for _, v := range tl.Volumes {
		set[v.Name] = true
	}
	var out []string
	for _, v := range pod.Spec.Volumes {
		if (v.PersistentVolumeClaim != nil || v.Ephemeral != nil) && !set[v.Name] {
			out = append(out, "volume "+v.Name+": not set up after "+FormatDuration(tl.End.Sub(tl.Start))+
				" (the kubelet has made no call to its driver: not attached to the node yet, or its driver not registered)")
		}
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

// describe is "volume data: NodeStageVolume 5.0s (csi.example.dev)", for
// the attach "volume data: attached after 3.1s (...)".
func (v volumeCall) describe() string {
	s := "volume " + v.volume.Name + ": " + v.call.Method.Short() + " " + FormatDuration(v.call.End.Sub(v.call.Start))
	if v.call.Method == event.VolumeWaitForAttach {
		s = "volume " + v.volume.Name + ": attached after " + FormatDuration(v.call.End.Sub(v.call.Start))
	}
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
		// The wait for the attach, to WaitForAttach's return, is a step
		// (the call itself is a moment of it).
		var calls []CRICall
		if a := volumes[i].Attach; a != nil {
			calls = append(calls, CRICall{Method: event.VolumeWaitForAttach, Start: a.Start, End: a.End, Err: a.Err})
		}
		for _, c := range volumes[i].Calls {
			if c.Method != event.VolumeWaitForAttach {
				calls = append(calls, c)
			}
		}
		for _, c := range calls {
			if !c.Start.IsZero() && !c.Start.Before(start) && !c.End.After(end) {
				out = append(out, volumeCall{&volumes[i], c})
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].call.Start.Before(out[j].call.Start) })
	return out
}

// describeVolumeCall is a CSI call in flight: "volume data: NodeStageVolume
// 6.2s so far (csi.example.dev)".
func (f InFlightCall) describeVolumeCall(ran time.Duration) string {
	s := "volume " + f.Volume + ": " + f.Method.Short() + " " + FormatDuration(ran) + " so far"
	if f.Driver != "" {
		s += " (" + f.Driver + ")"
	}
	return s
}

// isVolumeCall: f is a step of a volume's setup.
func (f InFlightCall) isVolumeCall() bool { return f.Method.IsVolume() }
