package exporter

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	rlevent "github.com/readyline/readyline/collector/event"
	"github.com/readyline/readyline/correlator"
)

// SpanPodStartup is the name of the root span of every pod start trace. The
// phase spans carry the correlator's phase names (correlator.PhaseSchedule,
// ...); the other names are built by ConditionSpanName and by
// podtrace's functions (ContainerSpanName, ProcessSpanName, ProbeSpanName),
// which the waterfalls label their rows with too.
const SpanPodStartup = "pod.startup"

// spanBuilder starts and ends the spans of one timeline on a tracer. It is
// used by one goroutine at a time.
//
// Every span lies inside its parent, and so inside the root (creation ->
// outcome): the builder clamps, it never extends. A parent's interval is
// that of its own facts (a container attempt's includes its CRI calls,
// process, hook and probes), the child is cut to it (AttrClipped), and a
// child wholly outside is not made (counted on the root, AttrOutside).
// The root is not extended because its length is the start's duration.
type spanBuilder struct {
	tracer  trace.Tracer
	node    string           // node name when the timeline does not carry one
	spans   int              // spans ended so far
	outside int              // spans not made: wholly outside their parent
	alerts  map[string]Alert // the timeline's alerts by the span they mark
}

// window is the interval of the span a context carries: its children must
// lie inside it.
type window struct{ start, end time.Time }

type windowKey struct{}

func withWindow(ctx context.Context, w window) context.Context {
	return context.WithValue(ctx, windowKey{}, w)
}

// clamp cuts [start, end] to the window of ctx's span; ok is false when
// nothing of it is inside.
func clamp(ctx context.Context, start, end time.Time) (s, e time.Time, clipped, ok bool) {
	if end.Before(start) {
		end = start // sources with different clocks can disagree by a few ms
	}
	w, has := ctx.Value(windowKey{}).(window)
	if !has {
		return start, end, false, true
	}
	if end.Before(w.start) || start.After(w.end) {
		return start, end, false, false
	}
	s, e = start, end
	if s.Before(w.start) {
		s, clipped = w.start, true
	}
	if e.After(w.end) {
		e, clipped = w.end, true
	}
	return s, e, clipped, true
}

// emit starts and ends every span of tl, all with explicit timestamps, in the
// trace TraceIDForPod(tl.Pod.UID), and marks the alerts (see AttrAlert). It
// returns the number of spans made.
func (b *spanBuilder) emit(ctx context.Context, tl *correlator.Timeline, alerts ...Alert) int {
	b.spans = 0
	b.alerts = make(map[string]Alert, len(alerts))
	for _, a := range alerts {
		b.alerts[a.Span] = a
	}
	if !tl.ReportedAt.IsZero() {
		return b.emitCompletion(ctx, tl, alerts)
	}
	start, end := tl.Bounds()
	node := tl.Pod.Node
	if node == "" {
		node = b.node
	}

	attrs := []attribute.KeyValue{
		semconv.K8SPodUID(tl.Pod.UID),
		semconv.K8SPodName(tl.Pod.Name),
		semconv.K8SNamespaceName(tl.Pod.Namespace),
		AttrOutcome.String(string(tl.Outcome)),
	}
	if node != "" {
		attrs = append(attrs, semconv.K8SNodeName(node))
	}
	if tl.Reason != "" {
		attrs = append(attrs, AttrReason.String(tl.Reason))
	}
	if tl.Waiting != "" {
		attrs = append(attrs, AttrWaiting.String(tl.Waiting))
	}
	if len(tl.Breakdown) > 0 {
		kinds := make([]string, len(tl.Breakdown))
		millis := make([]int64, len(tl.Breakdown))
		for i, sh := range tl.Breakdown {
			kinds[i], millis[i] = string(sh.Kind), sh.Duration.Milliseconds()
		}
		attrs = append(attrs, AttrBreakdown.StringSlice(kinds), AttrBreakdownMillis.Int64Slice(millis), AttrTimeWent.String(tl.WhereTheTimeWent()))
	}
	if tl.Partial {
		attrs = append(attrs, AttrPartial.Bool(true))
	}
	if tl.Pod.Static() {
		attrs = append(attrs, AttrStaticPod.Bool(true), AttrConfigHash.String(tl.Pod.ConfigHash))
	}
	var missing []string
	if !tl.ObservedSince.IsZero() {
		attrs = append(attrs, AttrObservedSince.String(tl.ObservedSince.UTC().Format(time.RFC3339Nano)))
	}
	// Missing: what a late start or a mark leaves out (any timeline).
	missing = tl.Missing
	if len(tl.Marks) > 0 {
		marks := make([]string, len(tl.Marks))
		for i, m := range tl.Marks {
			marks[i] = string(m)
		}
		attrs = append(attrs, AttrMarks.StringSlice(marks))
	}
	if len(tl.ClockSteps) > 0 {
		steps := make([]int64, len(tl.ClockSteps))
		for i, s := range tl.ClockSteps {
			steps[i] = s.Step.Milliseconds()
		}
		attrs = append(attrs, AttrClockStepsMS.Int64Slice(steps))
	}
	attrs = append(attrs, gapAttrs(missing, tl.Gaps)...)
	if tl.Sandbox != nil && tl.Sandbox.PodIP != "" {
		attrs = append(attrs, semconv.K8SPodIP(tl.Sandbox.PodIP))
	}
	if len(tl.CriticalPath) > 0 {
		names := make([]string, len(tl.CriticalPath))
		kinds := make([]string, len(tl.CriticalPath))
		millis := make([]int64, len(tl.CriticalPath))
		for i, s := range tl.CriticalPath {
			names[i], kinds[i] = s.Name, string(s.Kind)
			millis[i] = durationMS(s.Start, s.End)
		}
		attrs = append(attrs, AttrCriticalPath.StringSlice(names), AttrCriticalPathKinds.StringSlice(kinds), AttrCriticalPathMillis.Int64Slice(millis))
	}
	attrs = append(attrs, rootAlertAttrs(alerts)...)
	link, linkAttrs := traceParentLink(tl)
	attrs = append(attrs, linkAttrs...)
	ctx = withTraceID(ctx, TraceIDForPod(tl.Pod.UID))
	b.outside = 0
	rootCtx, root := b.tracer.Start(ctx, SpanPodStartup, append(link,
		trace.WithNewRoot(), trace.WithTimestamp(start), trace.WithAttributes(attrs...))...)
	rootCtx = withWindow(rootCtx, window{start, end})
	if tl.Outcome == correlator.OutcomeFailed || tl.Outcome == correlator.OutcomeTimeout {
		reason := tl.Reason
		if reason == "" {
			reason = string(tl.Outcome)
		}
		root.SetStatus(codes.Error, reason)
	}

	b.phases(rootCtx, tl, end)
	last := b.containers(rootCtx, tl)
	b.conditions(rootCtx, root, tl)
	ambiguousProbes(root, tl)
	kubeletEvents(root, tl.Events)

	for _, in := range tl.Insights {
		ev := insightEvent(in)
		root.AddEvent(ev.name, trace.WithTimestamp(end), trace.WithAttributes(ev.attrs...))
		if c, ok := last[in.Container]; ok && in.Container != "" {
			c.span.AddEvent(ev.name, trace.WithTimestamp(c.end), trace.WithAttributes(ev.attrs...))
		}
	}
	for _, a := range alerts {
		at := a.End
		if at.IsZero() || at.After(end) {
			at = end
		}
		root.AddEvent("alert "+a.Name, trace.WithTimestamp(at), trace.WithAttributes(alertEventAttrs(a)...))
	}
	gapEvents(root, tl.Gaps, start, end)
	for _, c := range last {
		b.end(c.span, c.end)
	}
	if b.outside > 0 {
		root.SetAttributes(AttrOutside.Int(b.outside))
	}
	b.end(root, end)
	return b.spans
}

// start starts a span over [start, end] cut to its parent's window, and
// returns the context for its children, the end to end it at and false
// (no span) when it lies wholly outside its parent.
func (b *spanBuilder) start(ctx context.Context, name string, start, end time.Time, attrs []attribute.KeyValue, opts ...trace.SpanStartOption) (context.Context, trace.Span, time.Time, bool) {
	s, e, clipped, ok := clamp(ctx, start, end)
	if !ok {
		b.outside++
		return ctx, nil, time.Time{}, false
	}
	if clipped {
		attrs = append(attrs, AttrClipped.Bool(true))
	}
	opts = append(opts, trace.WithTimestamp(s), trace.WithAttributes(attrs...))
	cctx, span := b.tracer.Start(ctx, name, opts...)
	return withWindow(cctx, window{s, e}), span, e, true
}

func (b *spanBuilder) end(s trace.Span, at time.Time) {
	s.End(trace.WithTimestamp(at))
	b.spans++
}

// leaf starts and ends a span without children, with end no earlier than start
// (sources with different clocks can disagree by a few ms). A non-empty
// errDesc sets status Error.
func (b *spanBuilder) leaf(ctx context.Context, name string, start, end time.Time, errDesc string, attrs ...attribute.KeyValue) {
	_, s, end, ok := b.start(ctx, name, start, end, attrs)
	if !ok {
		return
	}
	if errDesc != "" {
		s.SetStatus(codes.Error, errDesc)
	}
	b.end(s, end)
}

// criCall is a CRI call as a gRPC client span, named like the kubelet's own
// (runtime.v1.RuntimeService/StartContainer), status Error when it failed.
func (b *spanBuilder) criCall(ctx context.Context, c *correlator.CRICall, extra ...attribute.KeyValue) {
	if c.End.IsZero() {
		return
	}
	attrs := append([]attribute.KeyValue{semconv.RPCSystemNameGRPC, semconv.RPCMethod(string(c.Method))}, extra...)
	start := c.Start
	if start.IsZero() {
		start = c.End
		attrs = append(attrs, AttrIncomplete.Bool(true))
	}
	_, s, end, ok := b.start(ctx, string(c.Method), start, c.End, attrs, trace.WithSpanKind(trace.SpanKindClient))
	if !ok {
		return
	}
	if c.Err {
		s.SetStatus(codes.Error, "the call returned an error")
	}
	b.end(s, end)
}

// kubeletEvents adds the kubelet's Events (of the pod, or of a container)
// to a span, each at its first time.
func kubeletEvents(s trace.Span, evs []rlevent.PodEvent) {
	for _, e := range evs {
		attrs := []attribute.KeyValue{AttrKubeletEventType.String(e.Type), AttrKubeletEventCount.Int(int(e.Count)),
			AttrKubeletEventLast.String(e.Last.UTC().Format(time.RFC3339))}
		if e.Message != "" {
			attrs = append(attrs, AttrKubeletEventMessage.String(e.Message))
		}
		s.AddEvent("kubelet "+e.Reason, trace.WithTimestamp(e.First), trace.WithAttributes(attrs...))
	}
}

type event struct {
	name  string
	attrs []attribute.KeyValue
}

func insightEvent(in correlator.Insight) event {
	attrs := []attribute.KeyValue{
		AttrInsightKind.String(string(in.Kind)),
		AttrInsightMessage.String(in.Message),
		AttrInsightDurationMS.Int64(in.Duration.Milliseconds()),
	}
	if in.Container != "" {
		attrs = append(attrs, semconv.K8SContainerName(in.Container))
	}
	return event{name: "insight " + string(in.Kind), attrs: attrs}
}

func durationMS(a, b time.Time) int64 {
	if a.IsZero() || b.IsZero() {
		return 0
	}
	return b.Sub(a).Milliseconds()
}
