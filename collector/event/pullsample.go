package event

import "time"

// TypePullSample is the event type of PullSample.
const TypePullSample Type = "pull_sample"

// PullSample is how far one of the kubelet's PullImage calls in flight had
// come, read from the runtime's content store while the call ran
// (collector.PullSampler asks every few seconds): the bytes of the pull
// over time, which the call's return alone does not tell. The call it
// belongs to is the PullImage of Image for PodUID that began at CallStart;
// its CRICall comes when it returns, after its samples.
type PullSample struct {
	// Time is when the content store was asked (Progress.AsOf).
	Time time.Time `json:"time"`
	// Image is the image the call asked for, PodUID the pod it was for
	// (a static pod's config hash, as the call names it).
	Image  string `json:"image"`
	PodUID string `json:"pod_uid,omitempty"`
	// CallStart is the call's start as the kernel saw it, read from the
	// calls in flight: the CRICall's Time when it returns, within the
	// drift of the boot clock's conversion to wall time between the two
	// reads.
	CallStart time.Time    `json:"call_start"`
	Progress  PullProgress `json:"progress"`
}

func (*PullSample) Type() Type        { return TypePullSample }
func (e *PullSample) When() time.Time { return e.Time }
