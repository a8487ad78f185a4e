// Package podstartapi is the readyline.dev API: PodStart, one per pod, its
// latest start as the node that ran it tells it. The aggregated API server
// (cmd/readyline-api) serves it through the API server, so that users read
// pod starts with their own kubeconfig and RBAC (`kubectl get podstarts
// -A`), and no user's credential reaches a node (DESIGN.md, "Who may read
// what").
//
// +k8s:openapi-gen=true
// +groupName=readyline.dev
package podstartapi

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// PodStart is the latest start of a pod: its name and namespace are the
// pod's, its UID the pod's UID, its creation the start's.
//
// +k8s:openapi-gen=true
type PodStart struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PodStartSpec   `json:"spec"`
	Status PodStartStatus `json:"status"`
}

// PodStartSpec says which pod started where.
//
// +k8s:openapi-gen=true
type PodStartSpec struct {
	// NodeName is the node the pod started on.
	NodeName string `json:"nodeName"`
	// PodUID is the pod's UID.
	PodUID string `json:"podUID"`
}

// PodStartStatus is how the start went.
//
// +k8s:openapi-gen=true
type PodStartStatus struct {
	// Outcome is starting, ready, failed, deleted or timeout.
	Outcome string `json:"outcome"`
	// StartTime is the pod's creation; EndTime its outcome (none while
	// the start is in progress).
	StartTime metav1.Time  `json:"startTime"`
	EndTime   *metav1.Time `json:"endTime,omitempty"`
	// DurationSeconds is EndTime - StartTime, to the millisecond (0 while
	// the start is in progress).
	DurationSeconds float64 `json:"durationSeconds,omitempty"`
	// WaitingOn says, in the kubelet's words, what a start in progress
	// waits on now, and for a start that failed, what it waited on last.
	WaitingOn string `json:"waitingOn,omitempty"`
	// Reason is why a start failed or timed out.
	Reason string `json:"reason,omitempty"`
	// TraceID is the start's OpenTelemetry trace.
	TraceID string `json:"traceID,omitempty"`
	// Timeline is the start's whole timeline, as `readyline explain -o
	// json` prints it: only on a get of one pod start.
	//
	// +kubebuilder:pruning:PreserveUnknownFields
	Timeline *runtime.RawExtension `json:"timeline,omitempty"`
}

// PodStartList is a list of pod starts.
//
// +k8s:openapi-gen=true
type PodStartList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []PodStart `json:"items"`
}

// PodStartWebOptions are the options of the web subresource
// (podstarts/NAME/web/PATH): the daemon's page of the start, read from its
// node for the request's user, as pods/proxy reads a pod's.
//
// +k8s:openapi-gen=true
type PodStartWebOptions struct {
	metav1.TypeMeta `json:",inline"`

	// Path is what follows web/ in the request's path: ui/pods/NAMESPACE/NAME
	// (the start's page), ui/ (the node's starts the user may read), or
	// api/v1/timelines/NAMESPACE/NAME (its timeline as JSON).
	Path string `json:"path,omitempty"`
}
