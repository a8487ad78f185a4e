// Package podtrace says what readyline calls the trace of a pod start and
// its spans: the trace id a pod's UID gives, the trace a pod's
// tracing.k8s.io/traceparent annotation links to, the names of the spans
// of containers, processes, probes and conditions, where a replaced
// sandbox's span begins. The exporter's traces carry them and both
// waterfalls (exporter/waterfall, the exporter's HTML page) show them, so
// that what one says can be found in the other.
//
// It imports no OpenTelemetry package: the kubectl plugin draws the text
// waterfall and links none (cmd/kubectl-readyline's deps_test.go). Its ids
// are byte arrays that convert to OpenTelemetry's (trace.TraceID(id)).
package podtrace

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// TraceID is the id of a trace: 16 bytes, not all zero.
type TraceID [16]byte

// String is id in lowercase hex, as OpenTelemetry writes it.
func (id TraceID) String() string { return hex.EncodeToString(id[:]) }

// SpanID is the id of a span: 8 bytes, not all zero.
type SpanID [8]byte

// String is id in lowercase hex, as OpenTelemetry writes it.
func (id SpanID) String() string { return hex.EncodeToString(id[:]) }

// TraceIDForPod returns the trace id of a pod start: the 16 bytes of the pod
// UID when it is a UUID (with or without dashes), so that
// `kubectl get pod X -o jsonpath='{.metadata.uid}'` with the dashes removed
// opens the trace. Any other UID (never produced by the API server, but
// possible in hand-made recordings) maps to the first 16 bytes of its SHA-256,
// which is as stable but not readable back.
func TraceIDForPod(uid string) TraceID {
	var id TraceID
	hexUID := strings.ReplaceAll(uid, "-", "")
	if len(hexUID) == 2*len(id) {
		if _, err := hex.Decode(id[:], []byte(hexUID)); err == nil && id != (TraceID{}) {
			return id
		}
	}
	sum := sha256.Sum256([]byte(uid))
	copy(id[:], sum[:])
	return id
}
