package event

import (
	"strings"
	"time"
)

// TypeCRICall is the event type of CRICall.
const TypeCRICall Type = "cri_call"

// CRIMethod is a gRPC method of the CRI as the kubelet's own tracing names
// its span and as CRICall carries it in JSON: service, slash, method
// (runtime.v1.RuntimeService/RunPodSandbox). The collector sets it and the
// correlator and exporter compare against the constants below; a recording
// may hold a method readyline has no constant for.
type CRIMethod string

// The CRI methods readyline probes in the kubelet's CRI client (the table in
// collector/kubelet_methods.go).
const (
	CRIRunPodSandbox    CRIMethod = "runtime.v1.RuntimeService/RunPodSandbox"
	CRIStopPodSandbox   CRIMethod = "runtime.v1.RuntimeService/StopPodSandbox"
	CRIRemovePodSandbox CRIMethod = "runtime.v1.RuntimeService/RemovePodSandbox"
	CRICreateContainer  CRIMethod = "runtime.v1.RuntimeService/CreateContainer"
	CRIStartContainer   CRIMethod = "runtime.v1.RuntimeService/StartContainer"
	CRIStopContainer    CRIMethod = "runtime.v1.RuntimeService/StopContainer"
	CRIRemoveContainer  CRIMethod = "runtime.v1.RuntimeService/RemoveContainer"
	CRIExecSync         CRIMethod = "runtime.v1.RuntimeService/ExecSync"
	CRIPullImage        CRIMethod = "runtime.v1.ImageService/PullImage"
)

// The kubelet's steps of a volume's setup, before the sandbox
// (collector/kubelet_volumes.go): the calls of a CSI node plugin (its CSI
// client is gRPC too, probed the same way), named like the CRI's (the CSI
// spec's service, slash, method); and an in-tree volume plugin's SetUp
// (configMap, Secret, projected, downwardAPI, emptyDir), named after the
// kubelet's volume.Mounter. They come as CRICalls with Volume and Driver
// set (IsVolume).
const (
	CSINodeStageVolume   CRIMethod = "csi.v1.Node/NodeStageVolume"
	CSINodePublishVolume CRIMethod = "csi.v1.Node/NodePublishVolume"
	VolumeSetUp          CRIMethod = "kubelet.volume.Mounter/SetUp"
	// VolumeWaitForAttach is the kubelet's check, before it stages a CSI
	// volume that needs attaching, that the volume's VolumeAttachment is
	// attached: it comes once the attach/detach controller said so.
	VolumeWaitForAttach CRIMethod = "kubelet.volume.Attacher/WaitForAttach"
)

// CRIMethods lists every method above, the CRI's first: the set a
// metric's method label is bounded by (a new constant belongs here too).
func CRIMethods() []CRIMethod {
	return []CRIMethod{
		CRIRunPodSandbox, CRIStopPodSandbox, CRIRemovePodSandbox,
		CRICreateContainer, CRIStartContainer, CRIStopContainer, CRIRemoveContainer,
		CRIExecSync, CRIPullImage,
		CSINodeStageVolume, CSINodePublishVolume, VolumeSetUp, VolumeWaitForAttach,
	}
}

// IsCSI reports whether m is a call of a CSI plugin.
func (m CRIMethod) IsCSI() bool { return strings.HasPrefix(string(m), "csi.") }

// IsVolume reports whether m is a step of a volume's setup: a CSI call, or
// an in-tree plugin's SetUp.
func (m CRIMethod) IsVolume() bool {
	return m.IsCSI() || m == VolumeSetUp || m == VolumeWaitForAttach
}

// Short is the method's name without its service (RunPodSandbox), empty
// when m names no service.
func (m CRIMethod) Short() string {
	_, name, _ := strings.Cut(string(m), "/")
	return name
}

// MaxExecSyncArg is the length an ExecSync argument is cut at: the uprobe
// copies at most 6 arguments of 63 bytes each (bpf/goprobe.bpf.c).
const MaxExecSyncArg = 63

// CRICall is one call of the kubelet's CRI client (or a step of a volume's
// setup: Method.IsVolume), timed in the kernel (uprobes on the kubelet: entry and
// every return of the method).
type CRICall struct {
	// Time is when the call began, End when it returned. Time is zero when
	// the entry was not seen (the probe attached mid-call).
	Time time.Time `json:"time"`
	End  time.Time `json:"end"`
	// Method is the gRPC method: runtime.v1.RuntimeService/RunPodSandbox.
	Method CRIMethod `json:"method"`
	// Err is set when the call returned an error (for ExecSync, also a
	// command that exited non-zero).
	Err bool `json:"err,omitempty"`
	// PID is the kubelet's process id.
	PID uint32 `json:"pid"`
	// The ids the call named or returned, as far as it has them.
	PodSandboxID  string   `json:"pod_sandbox_id,omitempty"`
	ContainerID   string   `json:"container_id,omitempty"`
	PodUID        string   `json:"pod_uid,omitempty"`
	ContainerName string   `json:"container_name,omitempty"`
	Image         string   `json:"image,omitempty"`     // PullImage: the image asked for
	ImageRef      string   `json:"image_ref,omitempty"` // PullImage: what the runtime returned
	Cmd           []string `json:"cmd,omitempty"`       // ExecSync: the command (bounded, redacted)
	// ImageSize is, for PullImage, the pulled image's size in bytes; 0 when
	// unknown. The uprobe on PullImage does not see it (the kubelet asks it
	// with a separate ImageStatus call: k8s.io/kubernetes
	// pkg/kubelet/images/puller.go GetImageSize); readyline run asks the
	// runtime the same (collector.RuntimeSource.ImageSize) before the call
	// goes on, and a recording carries it.
	ImageSize uint64 `json:"image_size,omitempty"`
	// Progress is, for a PullImage in flight, how far the runtime has
	// come, as its content store said when a question was asked
	// (collector.PullProgressReader); nil when unknown.
	Progress *PullProgress `json:"progress,omitempty"`
	// Volume and Driver are, for a step of a volume's setup, the volume as
	// the kubelet's volume spec names it (the PersistentVolume's name, for
	// a volume from a claim; else the pod's volume) and the CSI driver (an
	// in-tree volume's plugin: kubernetes.io/configmap).
	Volume string `json:"volume,omitempty"`
	Driver string `json:"driver,omitempty"`
}

// PullProgress is how far a pull in flight has come, from the runtime's
// content store: the bytes of its layers written so far, of how many, and
// when the last byte came.
type PullProgress struct {
	// AsOf is when the content store was asked.
	AsOf time.Time `json:"as_of"`
	// Bytes is what was written of the image's layers (whole layers
	// done, and what the ones in progress have); Total their sizes, 0
	// while the image's manifest is not known (Bytes and Layers are then
	// the layers in progress only).
	Bytes int64 `json:"bytes"`
	Total int64 `json:"total,omitempty"`
	// Layers and LayersDone count the image's layers and those written
	// whole; InProgress those being written now.
	Layers     int `json:"layers,omitempty"`
	LayersDone int `json:"layers_done,omitempty"`
	InProgress int `json:"in_progress,omitempty"`
	// LastByte is when a layer last grew (zero: no byte yet).
	LastByte time.Time `json:"last_byte,omitzero"`
}

func (*CRICall) Type() Type        { return TypeCRICall }
func (e *CRICall) When() time.Time { return e.End }
