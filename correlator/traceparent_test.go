package correlator

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestTimelineKeepsTheTraceParent: the timeline carries the pod's
// tracing.k8s.io/traceparent as the latest pod object had it, unvalidated
// and cut to MaxTraceParent bytes; nothing when the pod has none.
func TestTimelineKeepsTheTraceParent(t *testing.T) {
	const valid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, tc := range []struct {
		name string
		// first is the annotation at the pod's creation, later the one
		// the Ready update carries ("" for none).
		first, later string
		want         string
	}{
		{name: "absent"},
		{name: "valid", first: valid, later: valid, want: valid},
		{name: "set after the creation", later: valid, want: valid},
		{name: "changed", first: "00-" + strings.Repeat("a", 32) + "-" + strings.Repeat("b", 16) + "-00", later: valid, want: valid},
		{name: "invalid kept as is", first: "not a traceparent", later: "not a traceparent", want: "not a traceparent"},
		{name: "long cut", first: strings.Repeat("x", 300), later: strings.Repeat("x", 300), want: strings.Repeat("x", MaxTraceParent)},
		// A 2-byte rune straddling the cut is left out whole.
		{name: "cut on a rune", first: strings.Repeat("x", MaxTraceParent-1) + "é", later: strings.Repeat("x", MaxTraceParent-1) + "é",
			want: strings.Repeat("x", MaxTraceParent-1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := newScenario(t, "traced", corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}})
			annotate := func(v string) {
				sc.pod.Annotations = nil
				if v != "" {
					sc.pod.Annotations = map[string]string{TraceParentAnnotation: v, "other": "kept"}
				}
			}
			annotate(tc.first)
			sc.cond(corev1.PodScheduled, 0)
			sc.update(0.05)
			sc.sandboxUp(0.3)
			annotate(tc.later)
			sc.cond(corev1.PodReady, 2)
			sc.update(2.05)
			tl := sc.run(Config{})
			if tl.TraceParent != tc.want {
				t.Errorf("TraceParent %q, want %q", tl.TraceParent, tc.want)
			}
		})
	}
}
