package exporter

import (
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter/podtrace"
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

// ParseTraceParent parses a W3C Trace Context traceparent value as
// podtrace.ParseTraceParent does, strictly. The span context it returns is
// remote and keeps the flags as given. Any other value is an error wrapping
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
	tp, err := podtrace.ParseTraceParent(s)
	if err != nil {
		return trace.SpanContext{}, err.Error()
	}
	return trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID(tp.TraceID), SpanID: trace.SpanID(tp.SpanID), TraceFlags: trace.TraceFlags(tp.Flags), Remote: true,
	}), ""
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
