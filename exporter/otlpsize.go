package exporter

import (
	"google.golang.org/protobuf/encoding/protowire"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// otlpSize is the size in bytes of the OTLP/protobuf export request that
// would carry spans alone (ExportTraceServiceRequest, uncompressed): what
// a trace costs the export queue's budget. It follows the OTLP trace
// schema field by field without encoding anything; exporter tests hold it
// against the bodies the OTLP/HTTP exporter sends. Spans of one request
// share its resource and scope, so a batch is at most the sum of its
// traces' sizes.
func otlpSize(spans []sdktrace.ReadOnlySpan) int64 {
	if len(spans) == 0 {
		return 0
	}
	scopeSpans := 0 // ScopeSpans messages, each with the spans of one scope in a row
	for i := 0; i < len(spans); {
		scope := spans[i].InstrumentationScope()
		n := 0
		for ; i < len(spans) && spans[i].InstrumentationScope() == scope; i++ {
			n += sizeMessage(sizeSpan(spans[i]))
		}
		if scope != (instrumentation.Scope{}) {
			n += sizeMessage(sizeScope(scope))
		}
		n += sizeString(scope.SchemaURL)
		scopeSpans += sizeMessage(n)
	}
	resourceSpans := scopeSpans
	if res := spans[0].Resource(); res != nil {
		resourceSpans += sizeMessage(sizeAttrs(res.Attributes())) + sizeString(res.SchemaURL())
	}
	return int64(sizeMessage(resourceSpans))
}

// Every field number in the OTLP trace schema is below 16 but Span.flags
// (16), so most tags take one byte.
const (
	sizeTag      = 1
	sizeFlagsTag = 2 // field 16
)

// sizeMessage is the size of a length-delimited field of n bytes: a nested
// message, a string or bytes.
func sizeMessage(n int) int { return sizeTag + protowire.SizeBytes(n) }

// sizeString is the size of a string field, absent when empty (proto3).
func sizeString(s string) int {
	if s == "" {
		return 0
	}
	return sizeMessage(len(s))
}

// sizeCount is the size of a uint32 count field, absent when zero.
func sizeCount(n int) int {
	if n <= 0 {
		return 0
	}
	return sizeTag + protowire.SizeVarint(uint64(min(n, 1<<32-1)))
}

func sizeSpan(s sdktrace.ReadOnlySpan) int {
	sc := s.SpanContext()
	n := sizeMessage(len(trace.TraceID{})) + sizeMessage(len(trace.SpanID{}))
	n += sizeString(sc.TraceState().String())
	if s.Parent().SpanID().IsValid() {
		n += sizeMessage(len(trace.SpanID{}))
	}
	n += sizeFlagsTag + 4 // fixed32, never zero: it says whether the parent is remote
	n += sizeString(s.Name())
	if s.SpanKind() != trace.SpanKindUnspecified {
		n += sizeTag + 1
	}
	n += sizeTime(s.StartTime().UnixNano()) + sizeTime(s.EndTime().UnixNano())
	n += sizeAttrs(s.Attributes()) + sizeCount(s.DroppedAttributes())
	for _, ev := range s.Events() {
		n += sizeMessage(sizeTime(ev.Time.UnixNano()) + sizeString(ev.Name) +
			sizeAttrs(ev.Attributes) + sizeCount(ev.DroppedAttributeCount))
	}
	n += sizeCount(s.DroppedEvents())
	for _, l := range s.Links() { // the OTLP exporter leaves out their trace state
		n += sizeMessage(sizeMessage(len(trace.TraceID{})) + sizeMessage(len(trace.SpanID{})) +
			sizeAttrs(l.Attributes) + sizeCount(l.DroppedAttributeCount) + sizeTag + 4) // flags: field 6
	}
	n += sizeCount(s.DroppedLinks())
	// The status is always sent, its code only when set.
	st := 0
	if s.Status().Code != codes.Unset {
		st = sizeTag + 1
	}
	n += sizeMessage(st + sizeString(s.Status().Description))
	return n
}

// sizeTime is the size of a fixed64 time field, absent when zero.
func sizeTime(unixNano int64) int {
	if unixNano <= 0 {
		return 0
	}
	return sizeTag + 8
}

func sizeScope(s instrumentation.Scope) int {
	return sizeString(s.Name) + sizeString(s.Version) + sizeAttrs(s.Attributes.ToSlice())
}

// sizeAttrs is the size of a repeated KeyValue field.
func sizeAttrs(attrs []attribute.KeyValue) int {
	n := 0
	for _, kv := range attrs {
		n += sizeMessage(sizeString(string(kv.Key)) + sizeMessage(sizeValue(kv.Value)))
	}
	return n
}

// sizeValue is the size of an AnyValue's content. Its one field is sent
// even when zero (it is a oneof).
func sizeValue(v attribute.Value) int {
	switch v.Type() {
	case attribute.EMPTY:
		return 0
	case attribute.BOOL:
		return sizeTag + 1
	case attribute.INT64:
		return sizeTag + protowire.SizeVarint(uint64(v.AsInt64()))
	case attribute.FLOAT64:
		return sizeTag + 8
	case attribute.STRING:
		return sizeMessage(len(v.AsString()))
	case attribute.BYTESLICE:
		return sizeMessage(len(v.AsByteSlice()))
	case attribute.BOOLSLICE:
		return sizeArray(len(v.AsBoolSlice()), func(int) int { return sizeTag + 1 })
	case attribute.INT64SLICE:
		s := v.AsInt64Slice()
		return sizeArray(len(s), func(i int) int { return sizeTag + protowire.SizeVarint(uint64(s[i])) })
	case attribute.FLOAT64SLICE:
		return sizeArray(len(v.AsFloat64Slice()), func(int) int { return sizeTag + 8 })
	case attribute.STRINGSLICE:
		s := v.AsStringSlice()
		return sizeArray(len(s), func(i int) int { return sizeMessage(len(s[i])) })
	case attribute.SLICE:
		s := v.AsSlice()
		return sizeArray(len(s), func(i int) int { return sizeValue(s[i]) })
	case attribute.MAP:
		return sizeMessage(sizeAttrs(v.AsMap()))
	}
	return sizeMessage(len("INVALID")) // what the OTLP exporter sends for a type it does not know
}

// sizeArray is the size of an ArrayValue of n values, value(i) the size of
// the i-th one's content.
func sizeArray(n int, value func(i int) int) int {
	arr := 0
	for i := range n {
		arr += sizeMessage(value(i))
	}
	return sizeMessage(arr)
}
