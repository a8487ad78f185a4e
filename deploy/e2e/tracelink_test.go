//go:build e2e

package e2e

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// TestTraceLinksTheTraceParent: a pod annotated tracing.k8s.io/traceparent
// (KEP-5915: the controller that created it leaves its trace context on it)
// has its trace's root linked to that span — in Jaeger's v1 API a
// FOLLOWS_FROM reference to the other trace, not a CHILD_OF: the pod start
// is still a trace of its own, under its UID. A pod whose annotation is not
// a traceparent gets no reference and a root that says why.
//
// The "controller" is a span this test sends to Jaeger itself, so that the
// link leads somewhere, as it would in a cluster whose controllers trace.
func TestTraceLinksTheTraceParent(t *testing.T) {
	t.Parallel()
	readyline(t)
	ctx := testContext(t, 4*time.Minute)
	ns := newNamespace(t)

	controller := TestSpan{TraceID: NewTraceID(), SpanID: NewSpanID(), Service: "readyline-e2e", Name: "e2e.create-pod",
		Start: time.Now().Add(-100 * time.Millisecond), End: time.Now(), Attributes: map[string]string{"readyline.test": t.Name()}}
	if err := SendSpanOTLP(ctx, OTLPHTTPEndpoint, controller); err != nil {
		t.Fatal(err)
	}
	traceparent := "00-" + controller.TraceID + "-" + controller.SpanID + "-01"
	const invalid = "00-not-a-traceparent"

	pod := func(name, annotation string) string {
		return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  annotations: {tracing.k8s.io/traceparent: %q}
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - {name: c, image: localhost/busybox:local, imagePullPolicy: Never, command: ["sleep", "3600"]}
`, name, annotation)
	}
	linked, bad := recordPod(t, ns, "linked"), recordPod(t, ns, "bad-traceparent")
	if _, err := env.Apply(ctx, ns, []byte(pod("linked", traceparent)+"---\n"+pod("bad-traceparent", invalid))); err != nil {
		t.Fatal(err)
	}

	// The linked pod: one reference on its root, to the controller's span.
	ev, err := linked.WaitFor(ctx, ConditionTrue(corev1.PodReady))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := env.Jaeger.WaitForTrace(ctx, TraceIDFromPodUID(string(ev.Pod.UID)), 3, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	root := rootOf(t, tr)
	if len(root.References) != 1 {
		t.Fatalf("root of %s: references %+v, want one FOLLOWS_FROM to %s", tr.TraceID, root.References, traceparent)
	}
	if r := root.References[0]; r.RefType != "FOLLOWS_FROM" || !SameID(r.TraceID, controller.TraceID) || !SameID(r.SpanID, controller.SpanID) {
		t.Errorf("root of %s: reference %+v, want FOLLOWS_FROM trace %s span %s", tr.TraceID, r, controller.TraceID, controller.SpanID)
	}
	if !SameID(root.TraceID, TraceIDFromPodUID(string(ev.Pod.UID))) || tagString(root, "readyline.traceparent.invalid") != "" {
		t.Errorf("root in trace %s (want the pod's %s), readyline.traceparent.invalid %q (want none)",
			root.TraceID, TraceIDFromPodUID(string(ev.Pod.UID)), tagString(root, "readyline.traceparent.invalid"))
	}
	// Only the root links (and pod.startup.completed, should the start
	// have outlasted --start-timeout: it stands alone in its export).
	for _, s := range tr.Spans {
		if s.SpanID == root.SpanID {
			continue
		}
		links := 0
		for _, r := range s.References {
			if SameID(r.TraceID, controller.TraceID) {
				links++
			}
		}
		want := 0
		if s.OperationName == "pod.startup.completed" {
			want = 1
		}
		if links != want {
			t.Errorf("span %s (%s) refers %d times to the controller's trace, want %d", s.SpanID, s.OperationName, links, want)
		}
	}
	// The link leads somewhere: the controller's span is in Jaeger.
	ctr, err := env.Jaeger.WaitForTrace(ctx, controller.TraceID, 1, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := ctr.SpanByName(controller.Name); !ok || !SameID(s.SpanID, controller.SpanID) {
		t.Errorf("the linked trace %s: %+v, want the span %s %s", controller.TraceID, ctr.Spans, controller.Name, controller.SpanID)
	}

	// The pod whose annotation is no traceparent: no reference, the reason
	// and the value on the root.
	ev, err = bad.WaitFor(ctx, ConditionTrue(corev1.PodReady))
	if err != nil {
		t.Fatal(err)
	}
	tr, err = env.Jaeger.WaitForTrace(ctx, TraceIDFromPodUID(string(ev.Pod.UID)), 3, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	root = rootOf(t, tr)
	if len(root.References) != 0 || tagString(root, "readyline.traceparent.invalid") != "20 characters, want 55" ||
		tagString(root, "readyline.traceparent") != invalid {
		t.Errorf("root of %s: references %+v, readyline.traceparent.invalid %q, readyline.traceparent %q; want none, %q, %q",
			tr.TraceID, root.References, tagString(root, "readyline.traceparent.invalid"), tagString(root, "readyline.traceparent"),
			"20 characters, want 55", invalid)
	}
}
