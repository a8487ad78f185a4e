//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// The daemon shared by the trace tests: started on first use, stopped by
// TestMain after the tests.
var (
	daemonOnce sync.Once
	daemonRun  *Daemon
	daemonErr  error
)

func readyline(t testing.TB) *Daemon {
	t.Helper()
	daemonOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		daemonRun, daemonErr = env.StartDaemon(ctx, "readyline")
	})
	if daemonErr != nil {
		t.Fatal(daemonErr)
	}
	return daemonRun
}

// stopReadyline stops the shared daemon if a test started it.
func stopReadyline() error {
	if daemonRun == nil {
		return nil
	}
	return daemonRun.Stop()
}

// startAndTrace applies an example in a new namespace, waits until done
// says the pod start is over, and returns its pod and its trace from Jaeger.
func startAndTrace(t *testing.T, example, pod string, done func(*corev1.Pod) bool, minSpans int) (*corev1.Pod, *Trace) {
	t.Helper()
	d := readyline(t)
	ns := newNamespace(t)
	ctx := testContext(t, 4*time.Minute)
	rec := recordPod(t, ns, pod)
	applyExample(t, ns, example)
	ev, err := rec.WaitFor(ctx, done)
	if err != nil {
		t.Fatal(err)
	}
	endAt := time.Now()
	tl, err := d.Timeline(ctx, ns, pod, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := WaitForTrace(ctx, JaegerQueryURL, TraceIDFromPodUID(string(ev.Pod.UID)), minSpans, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %s after %v; trace %s with %d spans, queryable %v after the API showed the end",
		pod, tl.Outcome, tl.End.Sub(tl.Start).Round(time.Millisecond), tr.TraceID, len(tr.Spans), time.Since(endAt).Round(time.Millisecond))
	return ev.Pod, tr
}

// spanTree indexes a trace's spans.
type spanTree struct {
	t      *testing.T
	tr     *Trace
	byID   map[string]Span
	parent map[string]string
}

func newSpanTree(t *testing.T, tr *Trace) *spanTree {
	st := &spanTree{t: t, tr: tr, byID: map[string]Span{}, parent: map[string]string{}}
	for _, s := range tr.Spans {
		st.byID[s.SpanID] = s
		for _, r := range s.References {
			if r.RefType == "CHILD_OF" {
				st.parent[s.SpanID] = r.SpanID
			}
		}
	}
	return st
}

// one returns the only span named op.
func (st *spanTree) one(op string) Span {
	st.t.Helper()
	var found []Span
	for _, s := range st.tr.Spans {
		if s.OperationName == op {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		st.t.Fatalf("%d spans named %q, want 1", len(found), op)
	}
	return found[0]
}

// children returns the spans named op under parent, in time order.
func (st *spanTree) children(parent Span, op string) []Span {
	var out []Span
	for _, s := range st.tr.Spans {
		if s.OperationName == op && st.parent[s.SpanID] == parent.SpanID {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].StartTime < out[j].StartTime })
	return out
}

func (st *spanTree) child(parent Span, op string) Span {
	st.t.Helper()
	c := st.children(parent, op)
	if len(c) == 0 {
		st.t.Fatalf("no %q span under %q", op, parent.OperationName)
	}
	return c[0]
}

func start(s Span) time.Time { return time.UnixMicro(s.StartTime) }
func end(s Span) time.Time   { return time.UnixMicro(s.StartTime + s.Duration) }
func dur(s Span) time.Duration {
	return time.Duration(s.Duration) * time.Microsecond
}

func tagString(s Span, key string) string {
	v, ok := s.Tag(key)
	if !ok {
		return ""
	}
	return fmt.Sprint(v)
}

func tagFloat(t *testing.T, s Span, key string) float64 {
	t.Helper()
	v, ok := s.Tag(key)
	if !ok {
		t.Fatalf("span %q has no tag %s", s.OperationName, key)
	}
	f, err := strconv.ParseFloat(fmt.Sprint(v), 64)
	if err != nil {
		t.Fatalf("span %q tag %s = %v: %v", s.OperationName, key, v, err)
	}
	return f
}

// conditionOrder returns the condition span types in time order;
// conditions observed in the same update keep their usual order.
func (st *spanTree) conditionOrder() []string {
	rank := map[string]int{}
	for i, c := range LifecycleConditions {
		rank[string(c)] = i
	}
	var conds []Span
	for _, s := range st.tr.Spans {
		if tagString(s, "readyline.condition.type") != "" && st.parent[s.SpanID] == st.one("pod.startup").SpanID {
			conds = append(conds, s)
		}
	}
	sort.SliceStable(conds, func(i, j int) bool {
		if conds[i].StartTime != conds[j].StartTime {
			return conds[i].StartTime < conds[j].StartTime
		}
		return rank[tagString(conds[i], "readyline.condition.type")] < rank[tagString(conds[j], "readyline.condition.type")]
	})
	var out []string
	for _, s := range conds {
		out = append(out, tagString(s, "readyline.condition.type"))
	}
	return out
}

// TestTraceLifecycleDemo: the seed's lifecycle-demo as a trace in Jaeger,
// measured by readyline running on the host.
func TestTraceLifecycleDemo(t *testing.T) {
	t.Parallel()
	_, tr := startAndTrace(t, "lifecycle-demo.yaml", "lifecycle-demo", ConditionTrue(corev1.PodReady), 15)
	st := newSpanTree(t, tr)
	root := st.one("pod.startup")
	if got := tagString(root, "readyline.outcome"); got != "ready" {
		t.Errorf("outcome %q", got)
	}

	// init-regular: sh -c 'sleep 5', 5 s by the kernel clock, exit 0.
	regular := st.one("init init-regular")
	proc := st.child(regular, "process sh")
	if d := dur(proc); math.Abs(d.Seconds()-5) > 0.050 {
		t.Errorf("init-regular's process ran %v, want 5 s within 50 ms", d)
	}
	if code := tagString(proc, "process.exit.code"); code != "0" {
		t.Errorf("init-regular's process exit code %q, want 0", code)
	}
	sidecar := st.one("sidecar init-sidecar")
	if !end(proc).Before(start(sidecar)) {
		t.Errorf("init-sidecar started %v, before init-regular's process exited %v", start(sidecar), end(proc))
	}

	// init-sidecar counts as started once its exec startupProbe succeeded:
	// only then does the kubelet create nginx.
	probes := st.children(sidecar, "startupProbe")
	if len(probes) == 0 {
		t.Fatal("no startupProbe attempt under init-sidecar")
	}
	var success Span
	for _, p := range probes {
		if tagString(p, "readyline.probe.result") == "success" {
			success = p
			break
		}
	}
	if success.SpanID == "" {
		t.Fatalf("no successful startupProbe attempt among %d", len(probes))
	}
	if tagString(success, "readyline.probe.handler") != "exec" || tagString(success, "readyline.inferred") == "true" {
		t.Errorf("the sidecar's startupProbe should be a kernel-seen exec attempt: %+v", success.Tags)
	}
	// initialDelaySeconds: 5 counts whole seconds from the API's (1 s) startedAt.
	if d := start(success).Sub(start(st.child(sidecar, "process sh"))); d < 4*time.Second {
		t.Errorf("first startupProbe %v after the sidecar's process: initialDelaySeconds is 5", d)
	}
	nginx := st.one("container nginx")
	if !start(nginx).After(end(success)) {
		t.Errorf("nginx created %v, before init-sidecar's startupProbe succeeded %v", start(nginx), end(success))
	}
	initialized := st.one("condition Initialized")
	cause, err := time.Parse(time.RFC3339Nano, tagString(initialized, "readyline.condition.cause_time"))
	if err != nil {
		t.Fatalf("Initialized cause_time: %v", err)
	}
	if !start(nginx).After(cause) {
		t.Errorf("nginx created %v, before Initialized's cause %v", start(nginx), cause)
	}
	if len(st.children(nginx, "startupProbe")) == 0 || len(st.children(nginx, "readinessProbe")) == 0 {
		t.Errorf("nginx lacks startup/readiness probe spans")
	}

	want := []string{"PodScheduled", "PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready"}
	if got := st.conditionOrder(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("conditions in the trace %v, want %v", got, want)
	}
}

// TestTracePostStartDemo: the 15 s postStart hook and the ~15 s the API
// takes to report the container, as readyline measures them.
func TestTracePostStartDemo(t *testing.T) {
	t.Parallel()
	_, tr := startAndTrace(t, "poststart-demo.yaml", "poststart-demo", ConditionTrue(corev1.PodReady), 8)
	st := newSpanTree(t, tr)
	main := st.one("container main")
	hook := st.child(main, "postStart")
	if d := dur(hook); d < 14900*time.Millisecond || d > 15500*time.Millisecond {
		t.Errorf("postStart hook span %v, want ~15 s", d)
	}
	if tagString(hook, "readyline.inferred") == "true" {
		t.Error("the exec hook should be seen in the kernel, not inferred")
	}
	lag := tagFloat(t, st.one("condition ContainersReady"), "readyline.condition.lag_ms")
	if lag < 14000 || lag > 17000 {
		t.Errorf("ContainersReady lag %v ms, want ~15000 (the hook holds the status write back)", lag)
	}
}

// TestTraceInitFailureNever: a failed pod start is a trace with status Error
// and the init container's exit code.
func TestTraceInitFailureNever(t *testing.T) {
	t.Parallel()
	_, tr := startAndTrace(t, "init-failure-never.yaml", "init-container-failure-never", PhaseIs(corev1.PodFailed), 4)
	st := newSpanTree(t, tr)
	root := st.one("pod.startup")
	if got := tagString(root, "otel.status_code"); got != "ERROR" {
		t.Errorf("root status %q, want ERROR (tags %+v)", got, root.Tags)
	}
	if got := tagString(root, "readyline.outcome"); got != "failed" {
		t.Errorf("outcome %q, want failed", got)
	}
	initc := st.one("init fail-on-purpose")
	if got := tagString(initc, "readyline.container.exit_code"); got != "42" {
		t.Errorf("init container exit code %q, want 42", got)
	}
}
