package exporter

import (
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// named returns the children of parent named name, in start order.
func (st *spanTree) named(parent tracetest.SpanStub, name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, c := range st.children[parent.SpanContext.SpanID()] {
		if c.Name == name {
			out = append(out, c)
		}
	}
	return out
}

// TestTraceStuck: waiting reasons are events on the container's span,
// failed CRI calls are spans with status Error, and a container that was
// never created still has a span carrying its reasons.
func TestTraceStuck(t *testing.T) {
	tl := stuckCrashLoop()
	spans, _ := exportToMemory(t, TraceConfig{}, tl)
	st := newSpanTree(t, spans)
	if st.root.Status.Code != codes.Error || st.root.Status.Description != tl.Reason {
		t.Errorf("root status %+v, want Error with the reason", st.root.Status)
	}

	// The sandbox: the failed call, then the successful one, inside the phase.
	phase := st.child(st.root, "pod.sandbox")
	calls := st.named(phase, "runtime.v1.RuntimeService/RunPodSandbox")
	if len(calls) != 2 {
		t.Fatalf("%d RunPodSandbox spans under pod.sandbox, want 2 (children %q)", len(calls), st.childNames(phase))
	}
	wantInterval(t, calls[0], at(300), at(800))
	if calls[0].Status.Code != codes.Error || calls[1].Status.Code != codes.Unset {
		t.Errorf("RunPodSandbox statuses %v, %v; want Error, Unset", calls[0].Status, calls[1].Status)
	}
	wantInterval(t, phase, at(300), at(2900))

	// app: three attempts; the CrashLoopBackOff is an event on the last.
	apps := st.named(st.root, "container app")
	if len(apps) != 3 {
		t.Fatalf("%d app spans, want 3", len(apps))
	}
	var waits []string
	for _, ev := range apps[2].Events {
		if ev.Name != "waiting CrashLoopBackOff" {
			continue
		}
		waits = append(waits, ev.Name)
		if !ev.Time.Equal(at(3800)) {
			t.Errorf("event at %v, want the first observation", ev.Time.Sub(t0))
		}
		got := attrMap(ev.Attributes)
		for k, want := range map[string]string{
			"readyline.waiting.reason":      "CrashLoopBackOff",
			"readyline.waiting.message":     stuckBackOff,
			"readyline.waiting.times":       "3",
			"readyline.waiting.duration_ms": "35200",
			"readyline.waiting.last":        at(39000).UTC().Format(time.RFC3339Nano),
		} {
			if v, ok := got[attribute.Key(k)]; !ok || v.Emit() != want {
				t.Errorf("event %s = %q, want %q", k, v.Emit(), want)
			}
		}
	}
	if len(waits) != 1 {
		t.Errorf("app's last span has %d waiting events, want 1", len(waits))
	}
	for _, a := range apps[:2] {
		for _, ev := range a.Events {
			if ev.Name == "waiting CrashLoopBackOff" {
				t.Errorf("waiting event on an earlier attempt")
			}
		}
	}

	// cache: never created; its span is its waiting reasons.
	cache := st.child(st.root, "container cache")
	wantInterval(t, cache, at(3350), at(39000))
	wantAttrs(t, cache, map[string]string{"readyline.container.not_created": "true", "k8s.container.name": "cache"})
	if cache.Status.Code != codes.Error || cache.Status.Description != "ImagePullBackOff: "+stuckPullBackOff {
		t.Errorf("cache status %+v", cache.Status)
	}
	if len(cache.Events) != 2 || cache.Events[0].Name != "waiting ErrImagePull" || cache.Events[1].Name != "waiting ImagePullBackOff" {
		t.Errorf("cache events %+v", cache.Events)
	}

	// config: its failed CreateContainer calls hang from the root.
	creates := st.named(st.root, "runtime.v1.RuntimeService/CreateContainer")
	if len(creates) != 2 {
		t.Fatalf("%d CreateContainer spans under the root, want 2", len(creates))
	}
	for _, c := range creates {
		if c.Status.Code != codes.Error {
			t.Errorf("CreateContainer status %+v", c.Status)
		}
		wantAttrs(t, c, map[string]string{"k8s.container.name": "config"})
	}
	config := st.child(st.root, "container config")
	wantInterval(t, config, at(3400), at(39000))

	// Children stay inside their parents.
	for _, s := range spans {
		p, ok := st.byID[s.Parent.SpanID()]
		if !s.Parent.IsValid() || !ok {
			continue
		}
		if s.StartTime.Before(p.StartTime) || s.EndTime.After(p.EndTime) {
			t.Errorf("span %q [%v, %v] outside its parent %q [%v, %v]", s.Name,
				s.StartTime.Sub(t0), s.EndTime.Sub(t0), p.Name, p.StartTime.Sub(t0), p.EndTime.Sub(t0))
		}
	}
}
