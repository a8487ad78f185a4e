package exporter

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"math/rand/v2"

	"go.opentelemetry.io/otel/trace"

	"github.com/readyline/readyline/exporter/podtrace"
)

// TraceIDForPod returns the trace id of a pod start
// (podtrace.TraceIDForPod) as OpenTelemetry's type.
func TraceIDForPod(uid string) trace.TraceID {
	return trace.TraceID(podtrace.TraceIDForPod(uid))
}

// RootSpanID is the span id of the pod.startup root span of trace id: fixed
// by the trace id, so that spans exported later (the completion of a start
// reported at its deadline) can name the root as their parent.
func RootSpanID(id trace.TraceID) trace.SpanID {
	sum := sha256.Sum256(append([]byte("pod.startup/"), id[:]...))
	var sid trace.SpanID
	copy(sid[:], sum[:])
	if !sid.IsValid() {
		sid[7] = 1
	}
	return sid
}

// RootSpanContext is the span context of the pod.startup root span of the
// start of the pod with this UID: TraceIDForPod and its RootSpanID, sampled
// (readyline samples every start) and remote (the span is exported, or is
// to be, apart from whoever names it). It is known without the trace:
// spans exported later take it as their parent, other traces link to it,
// and the histograms' exemplars carry it.
func RootSpanContext(uid string) trace.SpanContext {
	id := TraceIDForPod(uid)
	return trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: id, SpanID: RootSpanID(id), TraceFlags: trace.FlagsSampled, Remote: true,
	})
}

// traceIDKey carries the trace id a root span must use.
type traceIDKey struct{}

// withTraceID returns ctx telling podIDGenerator the trace id of the next
// root span started from it.
func withTraceID(ctx context.Context, id trace.TraceID) context.Context {
	return context.WithValue(ctx, traceIDKey{}, id)
}

// podIDGenerator is an sdktrace.IDGenerator that takes root spans' trace ids
// from the context (withTraceID) and draws everything else at random. It is
// safe for concurrent use.
type podIDGenerator struct{}

// NewIDs returns the trace id put in ctx by withTraceID with its root span
// id (RootSpanID), or a random trace id and a random span id.
func (podIDGenerator) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if id, ok := ctx.Value(traceIDKey{}).(trace.TraceID); ok && id.IsValid() {
		return id, RootSpanID(id)
	}
	var id trace.TraceID
	for !id.IsValid() {
		binary.BigEndian.PutUint64(id[:8], rand.Uint64())
		binary.BigEndian.PutUint64(id[8:], rand.Uint64())
	}
	return id, randomSpanID()
}

// NewSpanID returns a random span id.
func (podIDGenerator) NewSpanID(context.Context, trace.TraceID) trace.SpanID {
	return randomSpanID()
}

func randomSpanID() trace.SpanID {
	var id trace.SpanID
	for !id.IsValid() {
		binary.BigEndian.PutUint64(id[:], rand.Uint64())
	}
	return id
}
