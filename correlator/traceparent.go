package correlator

import (
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
)

// TraceParentAnnotation is the pod annotation of KEP-5915 (trace context
// on Kubernetes objects): a W3C traceparent value that the controller which
// created the pod sets, so that the spans about the pod can point back to
// the operation that asked for it. readyline only reads it.
const TraceParentAnnotation = "tracing.k8s.io/traceparent"

// MaxTraceParent bounds the bytes of the annotation a Timeline keeps: a
// valid value (version 00) has 55, and anything longer than 55 is invalid
// however long it is, so a cut value is still seen as invalid.
const MaxTraceParent = 64

// traceParent is the pod's TraceParentAnnotation as the Timeline keeps it:
// at most MaxTraceParent bytes, cut on a rune boundary; "" when absent. It
// is not validated here: the exporter parses it.
func traceParent(pod *corev1.Pod) string {
	v := pod.Annotations[TraceParentAnnotation]
	if len(v) <= MaxTraceParent {
		return v
	}
	cut := MaxTraceParent
	for cut > 0 && !utf8.RuneStart(v[cut]) {
		cut--
	}
	return v[:cut]
}
