package exporter

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/readyline/readyline/correlator"
)

// SpanPodStartupCompleted tells the rest of a start that was reported,
// still in progress, at its deadline: a child of that report's pod.startup
// root span, from the deadline to the outcome, with the outcome, the whole
// start's duration, the conditions observed after the deadline and the
// image pulls that returned after it. The
// trace thus keeps one root however long the start takes. Like the root,
// it links to the span the pod's tracing.k8s.io/traceparent names: the
// report's trace may have been dropped, and each export stands alone.
const SpanPodStartupCompleted = "pod.startup.completed"

// emitCompletion emits the spans of a timeline that completes a start
// reported at tl.ReportedAt: what came before was exported with the report.
func (b *spanBuilder) emitCompletion(ctx context.Context, tl *correlator.Timeline, alerts []Alert) int {
	ctx = trace.ContextWithRemoteSpanContext(ctx, RootSpanContext(tl.Pod.UID))
	end := tl.End
	if end.Before(tl.ReportedAt) {
		end = tl.ReportedAt
	}
	attrs := []attribute.KeyValue{
		semconv.K8SPodUID(tl.Pod.UID),
		semconv.K8SPodName(tl.Pod.Name),
		semconv.K8SNamespaceName(tl.Pod.Namespace),
		AttrOutcome.String(string(tl.Outcome)),
		AttrStartupMS.Int64(durationMS(tl.Start, tl.End)),
	}
	if tl.Reason != "" {
		attrs = append(attrs, AttrReason.String(tl.Reason))
	}
	gaps := gapsAfter(tl.Gaps, tl.ReportedAt) // the report told those before
	attrs = append(attrs, gapAttrs(nil, gaps)...)
	attrs = append(attrs, rootAlertAttrs(alerts)...)
	link, linkAttrs := traceParentLink(tl)
	attrs = append(attrs, linkAttrs...)
	cctx, s := b.tracer.Start(ctx, SpanPodStartupCompleted, append(link,
		trace.WithTimestamp(tl.ReportedAt), trace.WithAttributes(attrs...))...)
	cctx = withWindow(cctx, window{tl.ReportedAt, end}) // its children inside it, like the root's
	if tl.Outcome == correlator.OutcomeFailed || tl.Outcome == correlator.OutcomeTimeout {
		reason := tl.Reason
		if reason == "" {
			reason = string(tl.Outcome)
		}
		s.SetStatus(codes.Error, reason)
	}
	after := *tl
	after.Conditions = nil
	for _, c := range tl.Conditions {
		if c.Observed.After(tl.ReportedAt) {
			after.Conditions = append(after.Conditions, c)
		}
	}
	b.conditions(cctx, s, &after)
	// The pulls that returned after the deadline: the report could not
	// tell them (a call is seen as it returns). A wait or back-off before
	// the deadline is cut to it.
	after.ImagePulls = nil
	for _, ip := range tl.ImagePulls {
		if ip.Call.End.After(tl.ReportedAt) {
			after.ImagePulls = append(after.ImagePulls, ip)
		}
	}
	b.imagePulls(cctx, &after)
	gapEvents(s, gaps, tl.ReportedAt, end)
	for _, in := range tl.Insights {
		ev := insightEvent(in)
		s.AddEvent(ev.name, trace.WithTimestamp(end), trace.WithAttributes(ev.attrs...))
	}
	for _, a := range alerts {
		at := a.End
		if at.IsZero() || at.After(end) || at.Before(tl.ReportedAt) {
			at = end
		}
		s.AddEvent("alert "+a.Name, trace.WithTimestamp(at), trace.WithAttributes(alertEventAttrs(a)...))
	}
	b.end(s, end)
	return b.spans
}

// reportedAfter is how long after its creation a start was reported still
// in progress, for the waterfall.
func reportedAfter(tl *correlator.Timeline) time.Duration { return tl.ReportedAt.Sub(tl.Start) }
