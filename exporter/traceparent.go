package exporter

import (
	"encoding/hex"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/readyline/readyline/correlator"
)

// Attributes of a pod's tracing.k8s.io/traceparent (KEP-5915).
const (
	// AttrLinkSource is on the link from a pod start's root span to the
	// span the annotation names: the annotation's key.
	AttrLinkSource = attribute.Key("readyline.link.source")
	// AttrTraceParentInvalid (why) and AttrTraceParent (the value, at most
	// correlator.MaxTraceParent bytes) are on the root span of a pod whose
	// annotation is not a valid traceparent: there is no link then.
	AttrTraceParentInvalid = attribute.Key("readyline.traceparent.invalid")
	AttrTraceParent        = attribute.Key("readyline.traceparent")
)

// ErrInvalidTraceParent is returned by ParseTraceParent for a value that
// is not a W3C traceparent of version 00.
var ErrInvalidTraceParent = errors.New("invalid traceparent")

// traceParentLen is the length of a version 00 traceparent:
// "00-" 32 hex "-" 16 hex "-" 2 hex.
const traceParentLen = 55

// ParseTraceParent parses a W3C Trace Context traceparent value, strictly:
// version 00, then a trace id of 32 and a parent span id of 16 lowercase hex
// digits, neither all zeros, and 2 lowercase hex digits of flags, separated
// by dashes, nothing around them. The span context it returns is remote
// and keeps the flags as given. Any other value is an error wrapping
// ErrInvalidTraceParent that says why.
func ParseTraceParent(s string) (trace.SpanContext, error) {
	sc, reason := parseTraceParent(s)
	if reason != "" {
		return trace.SpanContext{}, fmt.Errorf("%w: %s", ErrInvalidTraceParent, reason)
	}
	return sc, nil
}

// parseTraceParent is ParseTraceParent with the reason of a refusal.
func parseTraceParent(s string) (trace.SpanContext, string) {
	if len(s) >= 2 {
		switch v := s[:2]; {
		case !isLowerHex(v):
			return trace.SpanContext{}, "the version is not 2 lowercase hex digits"
		case v == "ff":
			return trace.SpanContext{}, "version ff is forbidden"
		case v != "00":
			return trace.SpanContext{}, "version " + v + " is not supported (only 00)"
		}
	}
	switch {
	case len(s) > traceParentLen:
		return trace.SpanContext{}, fmt.Sprintf("longer than %d characters", traceParentLen)
	case len(s) < traceParentLen:
		return trace.SpanContext{}, fmt.Sprintf("%d characters, want %d", len(s), traceParentLen)
	case s[2] != '-' || s[35] != '-' || s[52] != '-':
		return trace.SpanContext{}, "not version-traceid-parentid-flags separated by dashes"
	}
	var tid trace.TraceID
	var sid trace.SpanID
	var flags [1]byte
	switch {
	case !isLowerHex(s[3:35]):
		return trace.SpanContext{}, "the trace id is not 32 lowercase hex digits"
	case !isLowerHex(s[36:52]):
		return trace.SpanContext{}, "the parent id is not 16 lowercase hex digits"
	case !isLowerHex(s[53:]):
		return trace.SpanContext{}, "the flags are not 2 lowercase hex digits"
	}
	// Lowercase hex of the right lengths: these cannot fail.
	_, _ = hex.Decode(tid[:], []byte(s[3:35]))
	_, _ = hex.Decode(sid[:], []byte(s[36:52]))
	_, _ = hex.Decode(flags[:], []byte(s[53:]))
	switch {
	case !tid.IsValid():
		return trace.SpanContext{}, "the trace id is all zeros"
	case !sid.IsValid():
		return trace.SpanContext{}, "the parent id is all zeros"
	}
	return trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: tid, SpanID: sid, TraceFlags: trace.TraceFlags(flags[0]), Remote: true,
	}), ""
}

func isLowerHex(s string) bool {
	for i := range len(s) {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// traceParentLink reads tl.TraceParent: for a valid value, the link from a
// root span (pod.startup, and pod.startup.completed: each export stands
// alone) to the span it names — a link, not a parent: the pod start is a
// trace of its own; for an invalid one, the root's attributes that say why
// there is none. Nothing when the pod has no annotation.
func traceParentLink(tl *correlator.Timeline) ([]trace.SpanStartOption, []attribute.KeyValue) {
	if tl.TraceParent == "" {
		return nil, nil
	}
	sc, reason := parseTraceParent(tl.TraceParent)
	if reason != "" {
		return nil, []attribute.KeyValue{
			AttrTraceParentInvalid.String(reason),
			AttrTraceParent.String(truncateMessage(tl.TraceParent, correlator.MaxTraceParent)),
		}
	}
	return []trace.SpanStartOption{trace.WithLinks(trace.Link{SpanContext: sc,
		Attributes: []attribute.KeyValue{AttrLinkSource.String(correlator.TraceParentAnnotation)}})}, nil
}
