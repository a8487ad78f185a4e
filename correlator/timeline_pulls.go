package correlator

import "time"

// ImagePull is one PullImage call of the kubelet for one of the pod's
// images: a pull, or a failed attempt at one (Call.Err). An image the
// kubelet found present (imagePullPolicy IfNotPresent, or a second
// container with the same image) makes no call and no ImagePull
// (images/image_manager.go EnsureImageExists: "already present on
// machine").
type ImagePull struct {
	// Container is the container that needed the image: the container
	// with that image that the kubelet created next after the call (its
	// pod worker pulls, then creates: kuberuntime_container.go
	// startContainer), else the first one in start order with that image;
	// "" if none (an image volume's pull names Volume instead).
	Container string `json:"container,omitempty"`
	// Volume is the image volume (spec.volumes[].image) the image was
	// pulled for, when no container has that image.
	Volume string `json:"volume,omitempty"`
	// Image is the reference the kubelet asked for (with the default tag
	// the kubelet adds: images/image_manager.go applyDefaultImageTag).
	Image string `json:"image"`
	// Ref is what the runtime returned: the image id or digest it resolved.
	Ref string `json:"ref,omitempty"`
	// Size is the image's size in bytes as the runtime reports it, 0 when
	// unknown: the kubelet asks it with a separate call after the pull
	// (images/puller.go GetImageSize), and so does readyline run (the CRI
	// source's ImageSize fills event.CRICall.ImageSize).
	Size uint64  `json:"size,omitempty"`
	Call CRICall `json:"call"`
	// Attempt counts the pod's PullImage calls of this image, from 1: the
	// kubelet's back-off is per pod and image (image_manager.go pullImage:
	// backOffKey podUID_image), so are its attempts.
	Attempt int `json:"attempt"`
	// ErrorReason and Error are, for a failed call, the waiting reason and
	// message the API showed for it on the container (ErrImagePull,
	// RegistryUnavailable or SignatureValidationFailed and the runtime's
	// error: image_manager.go evalCRIPullErr; or the error an
	// ImagePullBackOff message repeats); empty when not seen.
	ErrorReason string `json:"error_reason,omitempty"`
	Error       string `json:"error,omitempty"`
	// BackOff is the time from the end of the previous failed PullImage
	// call of this image in the pod to this call's start: the kubelet's
	// image back-off (ImagePullBackOff: 10 s doubling to 300 s, kubelet.go
	// imageBackOffPeriod, MaxImageBackOff) and its next sync. Zero for the
	// first attempt and after a success.
	BackOff time.Duration `json:"back_off,omitempty"`
	// Wait is the time the pull waited in the kubelet's serialized puller
	// behind other pods' pulls before its call began; nil when it did not
	// (or it cannot be told: see PullWait).
	Wait *PullWait `json:"wait,omitempty"`
	// Puller is what the timeline knows of the kubelet's puller.
	Puller Puller `json:"puller,omitempty"`
	// Progress is how far the pull had come while its call ran, oldest
	// first, as the runtime's content store said every few seconds (none
	// for a call of less than a second, or a runtime whose store cannot
	// be read); at most a few dozen, spread over the call.
	Progress []PullSample `json:"progress,omitempty"`
}

// End is the end of the pull's call.
func (ip ImagePull) End() time.Time { return ip.Call.End }

// Begin is when the pull began to hold its container: its wait's start in
// the serialized puller, else its call's start (zero when not seen).
func (ip ImagePull) Begin() time.Time {
	if ip.Wait != nil {
		return ip.Wait.Start
	}
	return ip.Call.Start
}

// Duration is the PullImage call's duration (0 when its start was not seen).
func (ip ImagePull) Duration() time.Duration { return span(ip.Call.Start, ip.Call.End) }

// Puller says which image puller the kubelet ran, as far as the node's
// PullImage calls tell. Its configuration (serializeImagePulls,
// maxParallelImagePulls) is not visible to readyline.
type Puller string

// Pullers.
const (
	// PullerSerialAssumed: no two PullImage calls on the node were seen
	// overlapping, as with the kubelet's default serializeImagePulls: true
	// (one worker takes the node's pulls one at a time from a queue:
	// images/puller.go serialImagePuller.processImagePullRequests). It is
	// assumed, not known: a parallel puller whose pulls never overlapped
	// looks the same.
	PullerSerialAssumed Puller = "serial_assumed"
	// PullerParallel: two PullImage calls on the node overlapped, which
	// the serialized puller never does: serializeImagePulls is false
	// (images/puller.go parallelImagePuller). Its maxParallelImagePulls is
	// not known, so no wait for a pull slot is told.
	PullerParallel Puller = "parallel"
)

// PullWait is a pull's wait in the kubelet's serialized puller: from when
// the container needed its image (Need) to when its PullImage call began,
// while the puller's one worker pulled other pods' images (Behind).
//
// Need is the end of the pod's previous step in the kubelet's pod worker,
// which runs one pod's steps one after another (kuberuntime_manager.go
// SyncPod: the sandbox, then for each container startContainer: pull,
// CreateContainer, StartContainer, postStart): the latest, before the
// call, of the pod's CRI calls (but ExecSync: probes run apart), its
// postStart hooks' ends and its init containers' exits. A retry after a
// failed pull has no Need (the back-off's end is not seen), and no wait.
type PullWait struct {
	// Start is the later of Need and the start of the first pull Behind;
	// End is the call's start.
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	Need  time.Time `json:"need"`
	// NeedEvent says what Need is ("RunPodSandbox returned", ...).
	NeedEvent string `json:"need_event"`
	// Behind are the other pods' pulls that the worker took before this
	// one, one after another, oldest first (at most maxPullsBehind, the
	// latest kept); the last is the one the call began right after.
	Behind []PullBehind `json:"behind"`
	// BehindOmitted counts the older pulls Behind leaves out.
	BehindOmitted int `json:"behind_omitted,omitempty"`
}

// Duration is End - Start.
func (w PullWait) Duration() time.Duration { return span(w.Start, w.End) }

// PullBehind is another pod's PullImage call that a pull waited behind.
type PullBehind struct {
	// PodUID is the other pod's UID (its trace id), "" when the call
	// named none.
	PodUID string `json:"pod_uid,omitempty"`
	// Namespace and Name are the other pod's, when it was known: a reader
	// who may not get it sees none of PodUID, Image and these, only
	// Hidden (exporter.ReaderView).
	Namespace string    `json:"namespace,omitempty"`
	Name      string    `json:"name,omitempty"`
	Image     string    `json:"image,omitempty"`
	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
	Err       bool      `json:"err,omitempty"`
	Hidden    bool      `json:"hidden,omitempty"`
}
