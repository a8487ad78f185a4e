package exporter

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter/waterfall"
)

const (
	parentTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	parentSpan  = "00f067aa0ba902b7"
	validParent = "00-" + parentTrace + "-" + parentSpan + "-01"
)

func TestParseTraceParent(t *testing.T) {
	for _, tc := range []struct {
		in     string
		flags  trace.TraceFlags
		reason string // "" for a valid value
	}{
		{in: validParent, flags: trace.FlagsSampled},
		{in: "00-" + parentTrace + "-" + parentSpan + "-00", flags: 0},
		{in: "00-" + parentTrace + "-" + parentSpan + "-03", flags: trace.FlagsSampled | trace.FlagsRandom},
		{in: "", reason: "0 characters, want 55"},
		{in: validParent[:54], reason: "54 characters, want 55"},
		{in: validParent + "-what", reason: "longer than 55 characters"},
		{in: " " + validParent, reason: "the version is not 2 lowercase hex digits"},
		{in: "01-" + parentTrace + "-" + parentSpan + "-01", reason: "version 01 is not supported (only 00)"},
		{in: "ff-" + parentTrace + "-" + parentSpan + "-01", reason: "version ff is forbidden"},
		{in: "0A-" + parentTrace + "-" + parentSpan + "-01", reason: "the version is not 2 lowercase hex digits"},
		{in: "00_" + parentTrace + "-" + parentSpan + "-01", reason: "not version-traceid-parentid-flags separated by dashes"},
		{in: "00-" + strings.ToUpper(parentTrace) + "-" + parentSpan + "-01", reason: "the trace id is not 32 lowercase hex digits"},
		{in: "00-" + parentTrace + "-" + "00f067aa0ba902bz" + "-01", reason: "the parent id is not 16 lowercase hex digits"},
		{in: "00-" + parentTrace + "-" + parentSpan + "-0x", reason: "the flags are not 2 lowercase hex digits"},
		{in: "00-" + strings.Repeat("0", 32) + "-" + parentSpan + "-01", reason: "the trace id is all zeros"},
		{in: "00-" + parentTrace + "-" + strings.Repeat("0", 16) + "-01", reason: "the parent id is all zeros"},
	} {
		sc, err := ParseTraceParent(tc.in)
		if tc.reason != "" {
			if !errors.Is(err, ErrInvalidTraceParent) || err.Error() != "invalid traceparent: "+tc.reason || sc.IsValid() {
				t.Errorf("%q: %v, %v; want the error %q and no span context", tc.in, sc, err, tc.reason)
			}
			continue
		}
		if err != nil || sc.TraceID().String() != parentTrace || sc.SpanID().String() != parentSpan ||
			sc.TraceFlags() != tc.flags || !sc.IsRemote() {
			t.Errorf("%q: trace %s span %s flags %s remote %v, error %v; want %s %s %s remote",
				tc.in, sc.TraceID(), sc.SpanID(), sc.TraceFlags(), sc.IsRemote(), err, parentTrace, parentSpan, tc.flags)
		}
	}
}

// TestTraceLinksTheTraceParent: a pod annotated with a valid traceparent
// has its pod.startup root linked (not parented) to that span; an invalid
// one gets no link and says why; no annotation, nothing. Only the root
// carries them.
func TestTraceLinksTheTraceParent(t *testing.T) {
	long := "00-" + parentTrace + "-" + parentSpan + "-01" + strings.Repeat("-junk", 20)
	for _, tc := range []struct {
		name, value string
		link        bool
		invalid     string // readyline.traceparent.invalid
		shown       string // readyline.traceparent
	}{
		{name: "absent"},
		{name: "valid", value: validParent, link: true},
		{name: "invalid", value: "01-" + parentTrace + "-" + parentSpan + "-01",
			invalid: "version 01 is not supported (only 00)", shown: "01-" + parentTrace + "-" + parentSpan + "-01"},
		// A timeline not from the correlator (a hand-made one, a replay of
		// an old format) may carry more than the correlator keeps.
		{name: "long", value: long, invalid: "longer than 55 characters", shown: long[:correlator.MaxTraceParent-3] + "..."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl := lifecycleDemo()
			tl.TraceParent = tc.value
			spans, _ := exportToMemory(t, TraceConfig{}, tl)
			st := newSpanTree(t, spans) // one root: the link is no parent
			root := st.root
			if root.SpanContext.TraceID() != TraceIDForPod(tl.Pod.UID) {
				t.Errorf("root in trace %s, want the pod's %s", root.SpanContext.TraceID(), TraceIDForPod(tl.Pod.UID))
			}
			checkTraceParent(t, root, tc.link, tc.invalid, tc.shown)
			for _, s := range spans {
				if s.Name != SpanPodStartup && (len(s.Links) > 0 || attrMap(s.Attributes)[AttrTraceParentInvalid].Emit() != "") {
					t.Errorf("span %q has links %v or the invalid attribute: only the root has them", s.Name, s.Links)
				}
			}
		})
	}
}

// checkTraceParent checks the link (validParent's span) or the attributes
// saying why there is none on a root span.
func checkTraceParent(t *testing.T, s tracetest.SpanStub, link bool, invalid, shown string) {
	t.Helper()
	attrs := attrMap(s.Attributes)
	if got := attrs[AttrTraceParentInvalid].Emit(); got != invalid {
		t.Errorf("%s: %s = %q, want %q", s.Name, AttrTraceParentInvalid, got, invalid)
	}
	if got := attrs[AttrTraceParent].Emit(); got != shown {
		t.Errorf("%s: %s = %q, want %q", s.Name, AttrTraceParent, got, shown)
	}
	if !link {
		if len(s.Links) != 0 {
			t.Errorf("%s: links %v, want none", s.Name, s.Links)
		}
		return
	}
	if len(s.Links) != 1 {
		t.Fatalf("%s: %d links, want 1 (%v)", s.Name, len(s.Links), s.Links)
	}
	l := s.Links[0]
	if l.SpanContext.TraceID().String() != parentTrace || l.SpanContext.SpanID().String() != parentSpan ||
		l.SpanContext.TraceFlags() != trace.FlagsSampled || !l.SpanContext.IsRemote() {
		t.Errorf("%s: link to trace %s span %s flags %s remote %v, want %s %s 01 remote", s.Name,
			l.SpanContext.TraceID(), l.SpanContext.SpanID(), l.SpanContext.TraceFlags(), l.SpanContext.IsRemote(), parentTrace, parentSpan)
	}
	if got := attrMap(l.Attributes)[AttrLinkSource].Emit(); got != correlator.TraceParentAnnotation {
		t.Errorf("%s: link %s = %q, want %s", s.Name, AttrLinkSource, got, correlator.TraceParentAnnotation)
	}
	if s.Parent.TraceID().String() == parentTrace {
		t.Errorf("%s: a child of the traceparent, want a link only", s.Name)
	}
}

// TestCompletionLinksTheTraceParent: a start completed after its deadline
// report links from pod.startup.completed too.
func TestCompletionLinksTheTraceParent(t *testing.T) {
	report, done := reportedAndCompleted()
	report.TraceParent, done.TraceParent = validParent, validParent
	spans, _ := exportToMemory(t, TraceConfig{}, report, done)
	st := newSpanTree(t, spans)
	checkTraceParent(t, st.root, true, "", "")
	checkTraceParent(t, st.child(st.root, SpanPodStartupCompleted), true, "", "")
}

// TestWaterfallTellsTheTraceParent: explain shows the span a pod start is
// linked to, or why the annotation was ignored.
func TestWaterfallTellsTheTraceParent(t *testing.T) {
	for _, tc := range []struct{ value, want string }{
		{validParent, "linked to trace " + parentTrace + " span " + parentSpan + " (tracing.k8s.io/traceparent)"},
		{"00-" + strings.Repeat("0", 32) + "-" + parentSpan + "-01", "tracing.k8s.io/traceparent ignored: the trace id is all zeros"},
	} {
		tl := lifecycleDemo()
		tl.TraceParent = tc.value
		var buf bytes.Buffer
		if err := waterfall.Render(&buf, tl, 200); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), "\n  "+tc.want+"\n") {
			t.Errorf("%s: no line %q in\n%s", tc.value, tc.want, buf.String())
		}
	}
}
