//go:build e2e

package e2e

import (
	"context"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// kubeletSpans returns the kubelet's own spans named op (its CRI client
// spans, KEP-2831 tracing) that started in [from, to].
func kubeletSpans(ctx context.Context, t *testing.T, op string, from, to time.Time) []Span {
	t.Helper()
	traces, err := SearchTraces(ctx, JaegerQueryURL, SearchQuery("kubelet", op, from, to))
	if err != nil {
		t.Fatal(err)
	}
	var out []Span
	for _, tr := range traces {
		for _, s := range tr.Spans {
			if s.OperationName == op && !start(s).Before(from) && !start(s).After(to) {
				out = append(out, s)
			}
		}
	}
	return out
}

// criSpans are readyline's CRI call spans of a trace, with the ExecSync
// calls that became probe or hook spans, by method.
func criSpans(tr *Trace) map[string][]Span {
	out := map[string][]Span{}
	for _, s := range tr.Spans {
		method := tagString(s, "rpc.method")
		if method == "" {
			continue
		}
		out[method] = append(out[method], s)
	}
	return out
}

// TestKernelCRICallsMatchKubeletTracing: for lifecycle-demo, every CRI
// call readyline timed with its uprobes is one of the kubelet's own CRI
// client spans, within 2 ms; the sandbox span holds CNI ADD and pause; the
// nginx httpGet probe attempts are there as connections.
func TestKernelCRICallsMatchKubeletTracing(t *testing.T) {
	t.Parallel()
	_, tr := startAndTrace(t, "lifecycle-demo.yaml", "lifecycle-demo", ConditionTrue(corev1.PodReady), 20)
	st := newSpanTree(t, tr)
	ctx := testContext(t, 2*time.Minute)

	ours := criSpans(tr)
	for method, min := range map[string]int{
		"runtime.v1.RuntimeService/RunPodSandbox": 1, "runtime.v1.RuntimeService/CreateContainer": 3,
		"runtime.v1.RuntimeService/StartContainer": 3, "runtime.v1.RuntimeService/ExecSync": 1,
	} {
		if len(ours[method]) < min {
			t.Errorf("%d %s spans from readyline, want at least %d", len(ours[method]), method, min)
		}
	}
	matched := 0
	for method, spans := range ours {
		var from, to time.Time
		for _, s := range spans {
			if from.IsZero() || start(s).Before(from) {
				from = start(s)
			}
			if end(s).After(to) {
				to = end(s)
			}
		}
		theirs := kubeletSpans(ctx, t, method, from.Add(-50*time.Millisecond), to)
		used := make([]bool, len(theirs))
		for _, s := range spans {
			best, bestDiff := -1, time.Duration(math.MaxInt64)
			for i, k := range theirs {
				if d := start(k).Sub(start(s)).Abs(); !used[i] && d < bestDiff {
					best, bestDiff = i, d
				}
			}
			if best < 0 || bestDiff > 2*time.Millisecond {
				t.Errorf("%s at %v (%v): no kubelet span within 2 ms (nearest %v)", method, start(s), dur(s), bestDiff)
				continue
			}
			used[best] = true
			k := theirs[best]
			if d := (dur(s) - dur(k)).Abs(); d > 2*time.Millisecond {
				t.Errorf("%s: %v by readyline, %v by the kubelet", method, dur(s), dur(k))
			}
			matched++
			t.Logf("%-45s readyline %10v  kubelet %10v  start %+v", method, dur(s), dur(k), start(k).Sub(start(s)))
		}
	}
	if matched < 8 {
		t.Errorf("only %d CRI calls matched the kubelet's spans", matched)
	}

	// The sandbox: its RunPodSandbox call, CNI ADD inside it, pause.
	sandbox := st.one("pod.sandbox")
	run := st.one("runtime.v1.RuntimeService/RunPodSandbox")
	if st.parent[run.SpanID] != sandbox.SpanID || dur(sandbox) != dur(run) {
		t.Errorf("pod.sandbox (%v) is not the RunPodSandbox call (%v)", dur(sandbox), dur(run))
	}
	var cni []string
	for _, s := range tr.Spans {
		if strings.HasPrefix(s.OperationName, "cni ") && st.parent[s.SpanID] == sandbox.SpanID {
			cni = append(cni, s.OperationName)
			if start(s).Before(start(run)) || end(s).After(end(run)) {
				t.Errorf("%s outside the RunPodSandbox call", s.OperationName)
			}
		}
	}
	if !strings.Contains(strings.Join(cni, ","), "cni bridge") {
		t.Errorf("CNI plugins in the sandbox span: %v, want the bridge plugin", cni)
	}
	st.child(sandbox, "process pause")

	// nginx's httpGet probes, each attempt a connection to the pod.
	nginx := st.one("container nginx")
	var attempts int
	for _, kind := range []string{"startupProbe", "readinessProbe"} {
		for _, p := range st.children(nginx, kind) {
			if tagString(p, "server.port") == "80" && tagString(p, "readyline.inferred") != "true" {
				attempts++
			}
		}
	}
	if attempts < 2 {
		t.Errorf("%d httpGet probe attempts seen as connections under nginx, want startup and readiness", attempts)
	}
}

// TestKernelKubeletRestart: the kubelet restarts (new process, same
// binary); readyline re-attaches and the next pod's trace has its CRI calls.
// Not parallel: the restart must not hit other tests' pods mid-start.
func TestKernelKubeletRestart(t *testing.T) {
	d := readyline(t)
	ctx := testContext(t, 3*time.Minute)
	attached := func() int {
		b, _ := os.ReadFile(d.Log)
		return strings.Count(string(b), "probing the kubelet's CRI client")
	}
	before := attached()
	if before == 0 {
		t.Fatalf("readyline never probed the kubelet; log %s", d.Log)
	}
	if err := env.NodeScript(ctx, "restart-kubelet"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for attached() == before {
		if time.Now().After(deadline) {
			t.Fatalf("readyline did not re-attach to the restarted kubelet within 30 s; log %s", d.Log)
		}
		time.Sleep(200 * time.Millisecond)
	}
	_, tr := startAndTrace(t, "poststart-demo.yaml", "poststart-demo", ConditionTrue(corev1.PodReady), 8)
	ours := criSpans(tr)
	for _, m := range []string{"RunPodSandbox", "CreateContainer", "StartContainer", "ExecSync"} {
		if len(ours["runtime.v1.RuntimeService/"+m]) == 0 {
			t.Errorf("no %s in the trace after the kubelet restarted", m)
		}
	}
}
