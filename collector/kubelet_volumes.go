package collector

import (
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/readyline/readyline/bpf"
	"github.com/readyline/readyline/collector/event"
)

// This file is readyline's knowledge of how the kubelet sets up a pod's
// volumes while the pod waits for them, before the sandbox
// (operation_generator.go GenerateMountVolumeFunc): for a CSI volume, the
// calls its volume manager makes to the CSI node plugin (MountDevice's
// NodeStageVolume, then SetUp's NodePublishVolume); for an in-tree one
// (configMap, Secret, projected, downwardAPI, emptyDir), its plugin's
// SetUpAt. The same in kubelets 1.34-1.37.
//
// The CSI calls name a volume handle, not a pod: the pod and the volume's
// name come from the CSI plugin's NewMounter(spec, pod), which the same
// mount operation calls first, on the same goroutine. SetUpAt names the
// volume's directory, <root>/pods/<uid>/volumes/<plugin>/<volume>.

// csiPackage is the Go package of the kubelet's CSI volume plugin.
const csiPackage = "k8s.io/kubernetes/pkg/volume/csi"

// Offsets the CSI probes read at, in structs of the kubelet.
var (
	// The pod's UID in a *v1.Pod, and a PersistentVolume's name.
	podUIDOffset = fieldOffset(corev1.Pod{}, "ObjectMeta") + fieldOffset(metav1.ObjectMeta{}, "UID")
	pvNameOffset = fieldOffset(corev1.PersistentVolume{}, "ObjectMeta") + fieldOffset(metav1.ObjectMeta{}, "Name")
)

const (
	// volumeSpecPV is the offset of PersistentVolume in the kubelet's
	// volume.Spec (k8s.io/kubernetes pkg/volume/plugins.go: Volume
	// *v1.Volume, then PersistentVolume *v1.PersistentVolume).
	volumeSpecPV = 8
	// csiClientDriverName is the offset of driverName (a string) in the
	// kubelet's csiDriverClient (pkg/volume/csi/csi_client.go: the first
	// field).
	csiClientDriverName = 0
)

// csiCall is a method of the kubelet's csiDriverClient:
// func (c *csiDriverClient) M(ctx, volID string, ...) error. The driver's
// name is read through the receiver.
func csiCall(m event.CRIMethod) criMethod {
	return criMethod{
		Method: m,
		Symbol: csiPackage + ".(*csiDriverClient)." + m.Short(),
		spec: func(*criOffsets) bpf.GoprobeFuncSpec {
			s := noRegs()
			s.Deref[0] = bpf.GoprobeDerefSpec{Reg: bpf.IntReg0, Kind: bpf.DerefString, Off1: csiClientDriverName}
			s.RetErr = bpf.IntReg0 // (c 0, ctx 1:2, volID 3:4, ...) error 0:1
			return s
		},
		fill: func(c *event.CRICall, r *GoCallRecord) { c.Driver = r.Deref[0] },
	}
}

// kubeletCSIMethods are the probed methods of the kubelet's CSI plugin,
// after criMethods in a kubelet's table.
var kubeletCSIMethods = []criMethod{
	{
		// (*csiPlugin).NewMounter(spec *volume.Spec, pod *v1.Pod) (volume.Mounter, error):
		// not reported; it names the pod and volume of the CSI calls
		// after it on its goroutine (csiNames).
		Symbol: csiPackage + ".(*csiPlugin).NewMounter",
		names:  true,
		spec: func(*criOffsets) bpf.GoprobeFuncSpec {
			s := noRegs()
			// (p 0, spec 1, pod 2) (volume.Mounter 0:1, error 2:3)
			s.Deref[0] = bpf.GoprobeDerefSpec{Reg: bpf.IntReg2, Kind: bpf.DerefString, Off1: uint32(podUIDOffset)}
			s.Deref[1] = bpf.GoprobeDerefSpec{Reg: bpf.IntReg1, Kind: bpf.DerefPtrString, Off1: volumeSpecPV, Off2: uint32(pvNameOffset)}
			return s
		},
		fill: func(c *event.CRICall, r *GoCallRecord) { c.PodUID, c.Volume = r.Deref[0], r.Deref[1] },
	},
	csiCall(event.CSINodeStageVolume),
	csiCall(event.CSINodePublishVolume),
	{
		// (*csiAttacher).WaitForAttach(spec *volume.Spec, devicePath string,
		//     pod *v1.Pod, timeout time.Duration) (string, error)
		Method: event.VolumeWaitForAttach,
		Symbol: csiPackage + ".(*csiAttacher).WaitForAttach",
		spec: func(*criOffsets) bpf.GoprobeFuncSpec {
			s := noRegs()
			// (c 0, spec 1, devicePath 2:3, pod 4, timeout 5) (string 0:1, error 2:3)
			s.Deref[0] = bpf.GoprobeDerefSpec{Reg: bpf.IntReg4, Kind: bpf.DerefString, Off1: uint32(podUIDOffset)}
			s.Deref[1] = bpf.GoprobeDerefSpec{Reg: bpf.IntReg1, Kind: bpf.DerefPtrString, Off1: volumeSpecPV, Off2: uint32(pvNameOffset)}
			s.RetErr = bpf.IntReg2
			return s
		},
		fill: func(c *event.CRICall, r *GoCallRecord) { c.PodUID, c.Volume = r.Deref[0], r.Deref[1] },
	},
	setUpAt("configmap", "configMapVolumeMounter", "kubernetes.io~configmap"),
	setUpAt("secret", "secretVolumeMounter", "kubernetes.io~secret"),
	setUpAt("projected", "projectedVolumeMounter", "kubernetes.io~projected"),
	setUpAt("downwardapi", "downwardAPIVolumeMounter", "kubernetes.io~downward-api"),
	// emptyDir's SetUpAt also sets up the other four's directory (their
	// "wrapper", same dir): only its own directories are its volumes.
	setUpAt("emptydir", "emptyDir", "kubernetes.io~empty-dir"),
}

// setUpAt is an in-tree volume plugin's
// func (m *T) SetUpAt(dir string, mounterArgs volume.MounterArgs) error,
// in package k8s.io/kubernetes/pkg/volume/<pkg>, whose volumes live in
// directories of pluginDir (the plugin's name, escaped).
func setUpAt(pkg, typ, pluginDir string) criMethod {
	return criMethod{
		Method: event.VolumeSetUp,
		Symbol: "k8s.io/kubernetes/pkg/volume/" + pkg + ".(*" + typ + ").SetUpAt",
		spec: func(*criOffsets) bpf.GoprobeFuncSpec {
			s := noRegs()
			s.StrArg, s.RetErr = bpf.IntReg1, bpf.IntReg0 // (m 0, dir 1:2, mounterArgs ...) error 0:1
			return s
		},
		fill: func(c *event.CRICall, r *GoCallRecord) {
			if uid, plugin, volume, ok := podVolumeDir(r.Str); ok && plugin == pluginDir {
				c.PodUID, c.Volume, c.Driver = uid, volume, strings.ReplaceAll(plugin, "~", "/")
			}
		},
	}
}

// podVolumeDir splits a pod volume's directory,
// <root>/pods/<uid>/volumes/<plugin>/<volume> (kubelet_getters.go
// getPodVolumeDir), into its parts.
func podVolumeDir(dir string) (uid, plugin, volume string, ok bool) {
	i := strings.LastIndex(dir, "/pods/")
	if i < 0 {
		return "", "", "", false
	}
	parts := strings.Split(dir[i+len("/pods/"):], "/")
	if len(parts) != 4 || parts[1] != "volumes" || parts[0] == "" || parts[2] == "" || parts[3] == "" {
		return "", "", "", false
	}
	return parts[0], parts[2], parts[3], true
}

// csiNamesAge bounds how long after NewMounter a CSI call on its goroutine
// is taken for that mount's: the operation waits for the volume's attach
// (WaitForAttach, minutes) between them. A goroutine the Go runtime reused
// for another mount names it again.
const csiNamesAge = 30 * time.Minute

// maxCSINames bounds the goroutines remembered.
const maxCSINames = 4096

// csiNames remembers, per goroutine of the kubelet, the pod and volume its
// last NewMounter named. Safe for concurrent use (CallsInFlight reads it).
type csiNames struct {
	mu sync.Mutex
	m  map[goroutineKey]namedMount
}

type goroutineKey struct {
	tgid      uint32
	goroutine uint64
}

type namedMount struct {
	uid, volume string
	at          time.Time
}

// remember keeps what a NewMounter call named.
func (n *csiNames) remember(r *GoCallRecord, uid, volume string) {
	if uid == "" {
		return
	}
	at := r.Start
	if at.IsZero() {
		at = r.End
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.m == nil {
		n.m = make(map[goroutineKey]namedMount)
	}
	if len(n.m) >= maxCSINames {
		for k, v := range n.m {
			if at.Sub(v.at) > csiNamesAge {
				delete(n.m, k)
			}
		}
		if len(n.m) >= maxCSINames {
			clear(n.m) // a burst of mounts: names are lost, not memory
		}
	}
	n.m[goroutineKey{r.TGID, r.Goroutine}] = namedMount{uid: uid, volume: volume, at: at}
}

// name fills c's pod and volume from the NewMounter its goroutine made
// before it.
func (n *csiNames) name(c *event.CRICall, r *GoCallRecord) {
	start := r.Start
	if start.IsZero() {
		start = r.End
	}
	n.mu.Lock()
	nm, ok := n.m[goroutineKey{r.TGID, r.Goroutine}]
	n.mu.Unlock()
	if !ok || start.Before(nm.at) || start.Sub(nm.at) > csiNamesAge {
		return
	}
	c.PodUID, c.Volume = nm.uid, nm.volume
}
