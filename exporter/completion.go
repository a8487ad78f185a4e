package exporter

import (
	"context"

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

// SpanPodReadyAgain is a return to Ready after the pod's start was over (a
// container that crashed or was killed, restarted and got ready again; a
// readiness probe that failed and passed again): a child of the pod.startup
// root span, exported when Ready is observed again, from the loss to the
// return, with a child span per step of the way back (AttrStepKind says
// what its time was) and the breakdown as on the root.
const SpanPodReadyAgain = "pod.ready_again"

// AttrStepKind is what a step of a return to Ready was (correlator.ShareKind).
const AttrStepKind = attribute.Key("readyline.step.kind")

// AttrRecoveryCause is the kind of what took Ready away (correlator.CauseKind).
const AttrRecoveryCause = attribute.Key("readyline.recovery.cause")

// emitRecovery emits the spans of a return to Ready.
func (b *spanBuilder) emitRecovery(ctx context.Context, r *correlator.Recovery) int {
	b.spans = 0
	ctx = trace.ContextWithRemoteSpanContext(ctx, RootSpanContext(r.Pod.UID))
	attrs := []attribute.KeyValue{
		semconv.K8SPodUID(r.Pod.UID),
		semconv.K8SPodName(r.Pod.Name),
		semconv.K8SNamespaceName(r.Pod.Namespace),
	}
	if r.Cause != "" {
		attrs = append(attrs, AttrReason.String(r.Cause))
	}
	if r.CauseKind != "" {
		attrs = append(attrs, AttrRecoveryCause.String(string(r.CauseKind)))
	}
	if len(r.Breakdown) > 0 {
		kinds := make([]string, len(r.Breakdown))
		millis := make([]int64, len(r.Breakdown))
		for i, sh := range r.Breakdown {
			kinds[i], millis[i] = string(sh.Kind), sh.Duration.Milliseconds()
		}
		attrs = append(attrs, AttrBreakdown.StringSlice(kinds), AttrBreakdownMillis.Int64Slice(millis))
	}
	cctx, s := b.tracer.Start(ctx, SpanPodReadyAgain, trace.WithTimestamp(r.Start), trace.WithAttributes(attrs...))
	b.spans++
	cctx = withWindow(cctx, window{r.Start, r.End})
	for _, st := range r.Steps {
		b.leaf(cctx, st.Name, st.Start, st.End, "", AttrStepKind.String(string(st.Kind)))
	}
	b.end(s, r.End)
	return b.spans
}
