package exporter

import (
	"bytes"
	"context"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter/waterfall"
)

// spanTree indexes exported spans by id and parent.
type spanTree struct {
	t        *testing.T
	spans    tracetest.SpanStubs
	byID     map[trace.SpanID]tracetest.SpanStub
	children map[trace.SpanID][]tracetest.SpanStub
	root     tracetest.SpanStub
}

func newSpanTree(t *testing.T, spans tracetest.SpanStubs) *spanTree {
	t.Helper()
	st := &spanTree{t: t, spans: spans, byID: map[trace.SpanID]tracetest.SpanStub{}, children: map[trace.SpanID][]tracetest.SpanStub{}}
	roots := 0
	for _, s := range spans {
		st.byID[s.SpanContext.SpanID()] = s
		if !s.Parent.IsValid() {
			st.root = s
			roots++
			continue
		}
		st.children[s.Parent.SpanID()] = append(st.children[s.Parent.SpanID()], s)
	}
	if roots != 1 {
		t.Fatalf("got %d root spans, want 1", roots)
	}
	for id, cs := range st.children {
		if _, ok := st.byID[id]; !ok {
			t.Errorf("%d spans have a parent that was not exported", len(cs))
		}
		sort.SliceStable(cs, func(i, j int) bool { return cs[i].StartTime.Before(cs[j].StartTime) })
	}
	return st
}

// child returns the only child of parent named name.
func (st *spanTree) child(parent tracetest.SpanStub, name string) tracetest.SpanStub {
	st.t.Helper()
	var found []tracetest.SpanStub
	for _, c := range st.children[parent.SpanContext.SpanID()] {
		if c.Name == name {
			found = append(found, c)
		}
	}
	if len(found) != 1 {
		st.t.Fatalf("span %q has %d children named %q, want 1 (children: %v)", parent.Name, len(found), name, st.childNames(parent))
	}
	return found[0]
}

func (st *spanTree) childNames(parent tracetest.SpanStub) []string {
	var names []string
	for _, c := range st.children[parent.SpanContext.SpanID()] {
		names = append(names, c.Name)
	}
	return names
}

func attrMap(kvs []attribute.KeyValue) map[attribute.Key]attribute.Value {
	m := make(map[attribute.Key]attribute.Value, len(kvs))
	for _, kv := range kvs {
		m[kv.Key] = kv.Value
	}
	return m
}

// wantAttrs checks that s carries every attribute in want (as Emit strings).
func wantAttrs(t *testing.T, s tracetest.SpanStub, want map[string]string) {
	t.Helper()
	got := attrMap(s.Attributes)
	for k, v := range want {
		gv, ok := got[attribute.Key(k)]
		if !ok {
			t.Errorf("span %q: no attribute %s (have %v)", s.Name, k, s.Attributes)
			continue
		}
		if gv.Emit() != v {
			t.Errorf("span %q: %s = %q, want %q", s.Name, k, gv.Emit(), v)
		}
	}
}

func wantInterval(t *testing.T, s tracetest.SpanStub, start, end time.Time) {
	t.Helper()
	if !s.StartTime.Equal(start) || !s.EndTime.Equal(end) {
		t.Errorf("span %q: %s -> %s, want %s -> %s", s.Name,
			s.StartTime.Format(time.RFC3339Nano), s.EndTime.Format(time.RFC3339Nano),
			start.Format(time.RFC3339Nano), end.Format(time.RFC3339Nano))
	}
}

// exportToMemory runs a TraceExporter over an in-memory exporter and returns
// the spans made from tls.
func exportToMemory(t *testing.T, cfg TraceConfig, tls ...*correlator.Timeline) (tracetest.SpanStubs, TraceStats) {
	t.Helper()
	mem := tracetest.NewInMemoryExporter()
	cfg.Exporter = mem
	e, err := NewTraceExporter(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	for _, tl := range tls {
		if err := e.Export(ctx, tl); err != nil {
			t.Fatal(err)
		}
	}
	fctx, fcancel := context.WithTimeout(ctx, 10*time.Second)
	defer fcancel()
	if err := e.Flush(fctx); err != nil {
		t.Fatal(err)
	}
	spans := mem.GetSpans() // before shutdown, which resets the in-memory exporter
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	return spans, e.Stats()
}

func TestTraceLifecycleDemo(t *testing.T) {
	tl := lifecycleDemo()
	spans, stats := exportToMemory(t, TraceConfig{NodeName: "fallback-node", ServiceVersion: "v0.1.0"}, tl)
	st := newSpanTree(t, spans)

	wantTraceID := strings.ReplaceAll(lifecycleUID, "-", "")
	for _, s := range spans {
		if got := s.SpanContext.TraceID().String(); got != wantTraceID {
			t.Fatalf("span %q: trace id %s, want the pod UID %s", s.Name, got, wantTraceID)
		}
	}
	if stats.Spans != uint64(len(spans)) || stats.ExportedSpans != uint64(len(spans)) || stats.Timelines != 1 {
		t.Errorf("stats %+v, exported %d spans", stats, len(spans))
	}

	// Root.
	root := st.root
	if root.Name != SpanPodStartup {
		t.Fatalf("root span %q, want %q", root.Name, SpanPodStartup)
	}
	wantInterval(t, root, t0, at(27097))
	wantAttrs(t, root, map[string]string{
		"k8s.pod.uid":                         lifecycleUID,
		"k8s.pod.name":                        "lifecycle-demo",
		"k8s.namespace.name":                  "default",
		"k8s.node.name":                       "readyline-node",
		"k8s.pod.ip":                          "10.88.0.7",
		"readyline.outcome":                   "ready",
		"readyline.critical_path":             `["pod.schedule","pod.wait_sandbox","pod.sandbox","init/init-regular","sidecar/init-sidecar","container/nginx"]`,
		"readyline.critical_path.duration_ms": "[45,258,432,5124,5182,5210]",
	})
	if root.Status.Code != codes.Unset {
		t.Errorf("root status %v, want unset for a ready pod", root.Status)
	}
	res := attrMap(root.Resource.Attributes())
	if res["service.name"].AsString() != "readyline" || res["k8s.node.name"].AsString() != "fallback-node" ||
		res["service.version"].AsString() != "v0.1.0" {
		t.Errorf("resource %v", root.Resource.Attributes())
	}

	// The root's children, in start order: the phases, the containers and
	// the five conditions.
	wantChildren := []string{
		"pod.schedule", "condition PodScheduled", "pod.wait_sandbox", "pod.sandbox",
		"condition PodReadyToStartContainers", "pod.init", "init init-regular", "sidecar init-sidecar",
		"condition Initialized", "pod.containers", "container nginx",
		"condition ContainersReady", "condition Ready",
	}
	if got := st.childNames(root); !slices.Equal(got, wantChildren) {
		t.Errorf("root children\n got %q\nwant %q", got, wantChildren)
	}

	// Phases carry the timeline's bounds.
	for _, p := range tl.Phases {
		s := st.child(root, p.Name)
		wantInterval(t, s, p.Start, p.End)
		wantAttrs(t, s, map[string]string{"readyline.phase.source": p.Source})
	}
	sandbox := st.child(root, "pod.sandbox")
	wantAttrs(t, sandbox, map[string]string{"readyline.sandbox.id": "5f1e2d3c4b5a"})
	wantInterval(t, st.child(sandbox, "process pause"), at(598), at(598))

	// Conditions: zero-length at the observed time, in order.
	var condTypes []string
	for _, s := range st.children[root.SpanContext.SpanID()] {
		if strings.HasPrefix(s.Name, "condition ") {
			condTypes = append(condTypes, strings.TrimPrefix(s.Name, "condition "))
		}
	}
	wantConds := []string{"PodScheduled", "PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready"}
	if !slices.Equal(condTypes, wantConds) {
		t.Errorf("condition spans %q, want %q", condTypes, wantConds)
	}
	initialized := st.child(root, "condition Initialized")
	wantInterval(t, initialized, at(15310), at(15310))
	wantAttrs(t, initialized, map[string]string{
		"readyline.condition.type":                 "Initialized",
		"readyline.condition.last_transition_time": "2026-10-18T01:51:33Z",
		"readyline.condition.cause_event":          "init-sidecar startupProbe success",
		"readyline.condition.lag_ms":               "70",
	})
	if _, ok := attrMap(st.child(root, "condition PodScheduled").Attributes)["readyline.condition.lag_ms"]; ok {
		t.Error("PodScheduled has no known cause, so no lag attribute")
	}

	// Root events: the five conditions at their observed times, then the insights.
	var evNames []string
	for _, ev := range root.Events {
		evNames = append(evNames, ev.Name)
	}
	wantEvents := []string{
		"condition PodScheduled", "condition PodReadyToStartContainers", "condition Initialized",
		"condition ContainersReady", "condition Ready", "insight probe_initial_delay",
	}
	if !slices.Equal(evNames, wantEvents) {
		t.Errorf("root events %q, want %q", evNames, wantEvents)
	}
	if !root.Events[2].Time.Equal(at(15310)) {
		t.Errorf("Initialized event at %v", root.Events[2].Time)
	}

	// init-regular: the attempt, its process.
	initReg := st.child(root, "init init-regular")
	wantInterval(t, initReg, at(4912), at(10036))
	wantAttrs(t, initReg, map[string]string{
		"k8s.container.name":                      "init-regular",
		"container.id":                            "a1b2c3d4e5f6",
		"k8s.container.restart_count":             "0",
		"readyline.container.kind":                "init",
		"readyline.container.exit_code":           "0",
		"container.image.name":                    "localhost/busybox",
		"readyline.container.next_created_lag_ms": "84",
	})
	if initReg.Status.Code != codes.Unset {
		t.Errorf("init-regular status %v", initReg.Status)
	}
	proc := st.child(initReg, "process sh")
	wantInterval(t, proc, at(5021), at(10034))
	wantAttrs(t, proc, map[string]string{
		"process.pid":             "4242",
		"process.executable.path": "/bin/sh",
		"process.command_args":    `["sh","-c","sleep 5"]`,
		"process.exit.code":       "0",
	})
	if d := proc.EndTime.Sub(proc.StartTime); d < 5*time.Second || d > 5050*time.Millisecond {
		t.Errorf("sleep 5 took %v", d)
	}

	// The sidecar: running process, exec startupProbe, the insight naming it.
	sidecar := st.child(root, "sidecar init-sidecar")
	wantInterval(t, sidecar, at(10118), at(15302))
	wantAttrs(t, sidecar, map[string]string{"readyline.probe.startup.attempts": "1"})
	sproc := st.child(sidecar, "process sh")
	wantInterval(t, sproc, at(10195), at(15302))
	wantAttrs(t, sproc, map[string]string{"readyline.process.running": "true"})
	probe := st.child(sidecar, "startupProbe")
	wantInterval(t, probe, at(15210), at(15240))
	wantAttrs(t, probe, map[string]string{
		"readyline.probe.kind": "startup", "readyline.probe.handler": "exec",
		"readyline.probe.result": "success", "readyline.probe.exit_code": "0",
	})
	if n := len(sidecar.Events); n == 0 || sidecar.Events[n-1].Name != "insight probe_initial_delay" {
		t.Errorf("sidecar events %v, want the probe delay insight last", sidecar.Events)
	}

	// nginx: inferred http probes.
	nginx := st.child(root, "container nginx")
	if got, want := st.childNames(nginx), []string{"process busybox", "startupProbe", "readinessProbe"}; !slices.Equal(got, want) {
		t.Errorf("nginx children %q, want %q", got, want)
	}
	wantAttrs(t, st.child(nginx, "readinessProbe"), map[string]string{
		"readyline.inferred": "true", "readyline.probe.result": "success", "readyline.probe.handler": "httpGet",
	})

	// Every child lies within its parent.
	for _, s := range spans {
		if !s.Parent.IsValid() {
			continue
		}
		p := st.byID[s.Parent.SpanID()]
		if s.StartTime.Before(p.StartTime) || s.EndTime.After(p.EndTime) {
			t.Errorf("span %q [%v, %v] outside its parent %q [%v, %v]", s.Name,
				s.StartTime.Sub(t0), s.EndTime.Sub(t0), p.Name, p.StartTime.Sub(t0), p.EndTime.Sub(t0))
		}
	}
	// root, 5 phases, pause, 3 containers, 3 processes, 3 probes, 5 conditions
	if len(spans) != 21 {
		t.Errorf("%d spans, want 21", len(spans))
	}
}

func TestTraceFailedInit(t *testing.T) {
	spans, _ := exportToMemory(t, TraceConfig{}, initFailureNever())
	st := newSpanTree(t, spans)
	root := st.root
	if root.Status.Code != codes.Error || root.Status.Description != initFailureNever().Reason {
		t.Errorf("root status %+v, want Error with the reason", root.Status)
	}
	wantAttrs(t, root, map[string]string{"readyline.outcome": "failed", "readyline.reason": initFailureNever().Reason})
	initSpan := st.child(root, "init fail-on-purpose")
	if initSpan.Status.Code != codes.Error || initSpan.Status.Description != "exit code 42" {
		t.Errorf("init span status %+v", initSpan.Status)
	}
	proc := st.child(initSpan, "process sh")
	if proc.Status.Code != codes.Error {
		t.Errorf("process status %+v", proc.Status)
	}
	wantAttrs(t, proc, map[string]string{"process.exit.code": "42"})
	for _, s := range spans {
		if strings.Contains(s.Name, "app") {
			t.Errorf("span %q for a container that never started", s.Name)
		}
	}
	// No pause start known: the sandbox phase has no child.
	if got := st.childNames(st.child(root, "pod.sandbox")); len(got) != 0 {
		t.Errorf("pod.sandbox children %q", got)
	}
}

func TestTracePostStartAndNodeFallback(t *testing.T) {
	spans, _ := exportToMemory(t, TraceConfig{NodeName: "node-from-config"}, postStartDemo())
	st := newSpanTree(t, spans)
	wantAttrs(t, st.root, map[string]string{"k8s.node.name": "node-from-config"})
	main := st.child(st.root, "container main")
	hook := st.child(main, "postStart")
	wantInterval(t, hook, at(861), at(15874))
	wantAttrs(t, hook, map[string]string{
		"readyline.hook.handler": "exec", "readyline.hook.command": `["sh","-c","sleep 15"]`, "readyline.hook.exit_code": "0",
	})
	wantAttrs(t, st.child(st.root, "condition PodReadyToStartContainers"), map[string]string{"readyline.condition.lag_ms": "15300"})
	// The insight naming main is on main's span too.
	var names []string
	for _, ev := range main.Events {
		names = append(names, ev.Name)
	}
	if !slices.Contains(names, "insight status_lag") {
		t.Errorf("main events %q", names)
	}
}

func TestTraceProbeSpansBounded(t *testing.T) {
	tl := lifecycleDemo()
	a := &tl.Containers[2].Attempts[0]
	a.Probes = nil
	for i := range 100 {
		a.Probes = append(a.Probes, correlator.ProbeAttempt{
			Kind: correlator.ProbeStartup, Handler: "exec", Start: at(22100 + 40*i), End: at(22110 + 40*i),
			Result: correlator.ProbeFailure, ExitCode: intp(1),
		})
	}
	a.Probes[99].Result, a.Probes[99].ExitCode = correlator.ProbeSuccess, intp(0)
	spans, _ := exportToMemory(t, TraceConfig{}, tl)
	st := newSpanTree(t, spans)
	nginx := st.child(st.root, "container nginx")
	var probes []tracetest.SpanStub
	for _, c := range st.children[nginx.SpanContext.SpanID()] {
		if c.Name == "startupProbe" {
			probes = append(probes, c)
		}
	}
	if len(probes) != maxProbeSpans {
		t.Fatalf("%d probe spans, want %d", len(probes), maxProbeSpans)
	}
	if probes[0].Status.Code != codes.Error {
		t.Errorf("failed probe status %+v", probes[0].Status)
	}
	if last := probes[len(probes)-1]; last.Status.Code != codes.Unset || !last.StartTime.Equal(at(22100+40*99)) {
		t.Errorf("last probe span %+v, want the success", last)
	}
	wantAttrs(t, nginx, map[string]string{
		"readyline.probe.startup.attempts": "100", "readyline.probe.startup.omitted": "68",
	})
}

// TestProbesOmittedByTheTimeline: a timeline whose probes the correlator
// cut (the first and last 32 kept, ProbesOmitted counting the rest) makes
// the same probe spans and counts as the whole list, and the waterfall
// counts every attempt.
func TestProbesOmittedByTheTimeline(t *testing.T) {
	whole := lifecycleDemo()
	a := &whole.Containers[2].Attempts[0]
	a.Probes = nil
	for i := range 100 {
		a.Probes = append(a.Probes, correlator.ProbeAttempt{
			Kind: correlator.ProbeStartup, Handler: "exec", Start: at(22100 + 40*i), End: at(22110 + 40*i),
			Result: correlator.ProbeFailure, ExitCode: intp(1),
		})
	}
	a.Probes[99].Result, a.Probes[99].ExitCode = correlator.ProbeSuccess, intp(0)
	cut := lifecycleDemo()
	b := &cut.Containers[2].Attempts[0]
	b.Probes = append(slices.Clone(a.Probes[:32]), a.Probes[68:]...)
	b.ProbesOmitted = map[correlator.ProbeKind]correlator.OmittedProbes{correlator.ProbeStartup: {Attempts: 36, Failed: 36}}

	probeSpans := func(tl *correlator.Timeline) ([]time.Time, map[string]string) {
		spans, _ := exportToMemory(t, TraceConfig{}, tl)
		st := newSpanTree(t, spans)
		nginx := st.child(st.root, "container nginx")
		var starts []time.Time
		for _, c := range st.children[nginx.SpanContext.SpanID()] {
			if c.Name == "startupProbe" {
				starts = append(starts, c.StartTime)
			}
		}
		attrs := map[string]string{}
		for _, kv := range nginx.Attributes {
			attrs[string(kv.Key)] = kv.Value.Emit()
		}
		return starts, attrs
	}
	wholeStarts, wholeAttrs := probeSpans(whole)
	cutStarts, cutAttrs := probeSpans(cut)
	if !slices.EqualFunc(wholeStarts, cutStarts, time.Time.Equal) {
		t.Errorf("probe spans at %v from the cut timeline, want %v", cutStarts, wholeStarts)
	}
	for _, k := range []string{"readyline.probe.startup.attempts", "readyline.probe.startup.omitted"} {
		if wholeAttrs[k] != cutAttrs[k] {
			t.Errorf("%s = %q from the cut timeline, want %q", k, cutAttrs[k], wholeAttrs[k])
		}
	}
	for _, tl := range []*correlator.Timeline{whole, cut} {
		var buf bytes.Buffer
		if err := waterfall.Render(&buf, tl, 100); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), "startupProbe ×100 (99✗)") {
			t.Errorf("waterfall does not count 100 attempts, 99 failed:\n%s", buf.String())
		}
	}
}

func TestTraceIDForPod(t *testing.T) {
	for _, tc := range []struct{ uid, want string }{
		{lifecycleUID, "7c0e4f3a9b1d4e2f8a6b3c5d7e9f1a2b"},
		{"7C0E4F3A9B1D4E2F8A6B3C5D7E9F1A2B", "7c0e4f3a9b1d4e2f8a6b3c5d7e9f1a2b"},
	} {
		if got := TraceIDForPod(tc.uid).String(); got != tc.want {
			t.Errorf("TraceIDForPod(%q) = %s, want %s", tc.uid, got, tc.want)
		}
	}
	a, b := TraceIDForPod("static-pod-hash"), TraceIDForPod("static-pod-hash")
	if !a.IsValid() || a != b {
		t.Errorf("non-UUID uid: %s, %s: want a stable valid id", a, b)
	}
	if TraceIDForPod("00000000-0000-0000-0000-000000000000").IsValid() == false {
		t.Error("the nil UUID must still give a valid (hashed) trace id")
	}
}

func TestGuessProtocol(t *testing.T) {
	for endpoint, want := range map[string]string{
		"":                                   ProtocolGRPC,
		"localhost:4317":                     ProtocolGRPC,
		"http://localhost:4317":              ProtocolGRPC,
		"http://localhost:4318":              ProtocolHTTP,
		"localhost:4318":                     ProtocolHTTP,
		"https://otel.example.com/v1/traces": ProtocolHTTP,
	} {
		if got := guessProtocol(endpoint); got != want {
			t.Errorf("guessProtocol(%q) = %s, want %s", endpoint, got, want)
		}
	}
}

func TestSplitImage(t *testing.T) {
	for ref, want := range map[string][2]string{
		"localhost/busybox:local":       {"localhost/busybox", "local"},
		"registry:5000/team/app":        {"registry:5000/team/app", ""},
		"registry:5000/team/app:v1":     {"registry:5000/team/app", "v1"},
		"nginx@sha256:0123456789abcdef": {"nginx", ""},
	} {
		if n, tag := splitImage(ref); n != want[0] || tag != want[1] {
			t.Errorf("splitImage(%q) = %q, %q, want %q", ref, n, tag, want)
		}
	}
}

// TestTraceStaticAndLateSeen: a static pod's trace is its mirror pod's and
// says so; a pod seen late says from when, and what is missing; a coarse
// condition has no lag.
func TestTraceStaticAndLateSeen(t *testing.T) {
	spans, _ := exportToMemory(t, TraceConfig{}, staticPod())
	st := newSpanTree(t, spans)
	if got := st.root.SpanContext.TraceID().String(); got != strings.ReplaceAll(staticPodUID, "-", "") {
		t.Errorf("trace id %s, want the mirror pod's UID %s", got, staticPodUID)
	}
	wantAttrs(t, st.root, map[string]string{
		"k8s.pod.uid":           staticPodUID,
		"readyline.static_pod":  "true",
		"readyline.config_hash": staticHash,
	})
	if _, ok := attrMap(st.root.Attributes)[AttrObservedSince]; ok {
		t.Error("a static pod seen from its start carries readyline.observed_since")
	}
	ready := st.child(st.root, ConditionSpanName(correlator.CondReady))
	wantAttrs(t, ready, map[string]string{"readyline.condition.coarse": "true"})
	if _, ok := attrMap(ready.Attributes)[AttrConditionLagMS]; ok {
		t.Errorf("coarse Ready has a lag: %v", ready.Attributes)
	}

	spans, _ = exportToMemory(t, TraceConfig{}, lateSeen())
	st = newSpanTree(t, spans)
	wantAttrs(t, st.root, map[string]string{
		"readyline.observed_since": "2026-10-18T01:51:31Z",
		"readyline.missing":        `["the RunPodSandbox call (the sandbox's times are the runtime's)","the pause process","init init-regular: its process and CRI calls","the transitions of the conditions already True (their lastTransitionTime, 1 s, stands in)"]`,
	})
	for _, k := range []attribute.Key{AttrStaticPod, AttrConfigHash} {
		if _, ok := attrMap(st.root.Attributes)[k]; ok {
			t.Errorf("a regular pod carries %s", k)
		}
	}
	if ready := st.child(st.root, ConditionSpanName(correlator.CondReady)); attrMap(ready.Attributes)[AttrConditionLagMS].AsInt64() != 17 {
		t.Errorf("Ready, observed in view, lost its lag: %v", ready.Attributes)
	}
	prtsc := st.child(st.root, ConditionSpanName(correlator.CondPodReadyToStartContainers))
	wantInterval(t, prtsc, t0, t0)
	if _, ok := attrMap(prtsc.Attributes)[AttrConditionLagMS]; ok {
		t.Errorf("coarse PodReadyToStartContainers has a lag: %v", prtsc.Attributes)
	}
}

// TestTraceAmbiguousProbesAndHookConnection: a connection the kubelet's
// gating could not place is an event on the root naming its candidates, on
// no container; an httpGet hook's request is on its postStart span.
func TestTraceAmbiguousProbesAndHookConnection(t *testing.T) {
	tl := postStartDemo()
	h := tl.Containers[0].Attempts[0].PostStart
	h.Handler, h.Command = "httpGet", nil
	h.Conn = &correlator.Connection{Daddr: "10.244.0.9", Dport: 80, Established: h.Start, Result: "closed"}
	tl.AmbiguousProbes = []correlator.AmbiguousProbe{{
		Start: h.Start.Add(time.Second), End: h.Start.Add(time.Second + time.Millisecond),
		Conn: &correlator.Connection{Daddr: "10.244.0.9", Dport: 15021, Result: "closed"},
		Candidates: []correlator.ProbeTarget{
			{Container: "app", Attempt: 0, Kind: "readiness"}, {Container: "mesh", Attempt: 0, Kind: "readiness"}},
	}}
	spans, _ := exportToMemory(t, TraceConfig{}, tl)
	st := newSpanTree(t, spans)
	var ev []string
	for _, e := range st.root.Events {
		if e.Name == "ambiguous probe" {
			m := attrMap(e.Attributes)
			ev = append(ev, m["readyline.probe.candidates"].Emit()+" port "+m["server.port"].Emit())
		}
	}
	if len(ev) != 1 || ev[0] != `["app#0 readiness","mesh#0 readiness"] port 15021` {
		t.Errorf("ambiguous probe events on the root: %q", ev)
	}
	ps := st.child(st.child(st.root, "container main"), "postStart")
	wantAttrs(t, ps, map[string]string{"readyline.hook.handler": "httpGet", "server.port": "80", "readyline.tcp.result": "closed"})
}

// TestTracePauseAfterTheSandboxCall: runc start returns once it released
// the container's init, so the pause exec can come just after RunPodSandbox
// returned: it is then drawn under the root, not dropped as outside
// pod.sandbox.
func TestTracePauseAfterTheSandboxCall(t *testing.T) {
	tl := lifecycleDemo()
	tl.Sandbox.Call = &correlator.CRICall{Method: "runtime.v1.RuntimeService/RunPodSandbox", Start: at(310), End: at(590)}
	tl.Phases[2] = correlator.Phase{Name: correlator.PhaseSandbox, Start: at(310), End: at(590), Source: "kernel"}
	tl.Sandbox.PauseStart = at(598)
	spans, _ := exportToMemory(t, TraceConfig{}, tl)
	st := newSpanTree(t, spans)
	pause := st.child(st.root, "process pause")
	wantInterval(t, pause, at(598), at(598))
	for _, c := range st.children[st.child(st.root, correlator.PhaseSandbox).SpanContext.SpanID()] {
		if c.Name == "process pause" {
			t.Errorf("process pause under pod.sandbox although it came after the call")
		}
	}
}
