//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// BenchmarkKubeletCRILatency compares the kubelet's own CRI call latencies
// (its KEP-2831 spans in Jaeger) for pods started while readyline probes it
// and while it does not, alternating in the same run, and reports the ratio
// of the medians per method. Run it alone:
//
//	go test -tags e2e -run '^$' -bench KubeletCRILatency -benchtime 6x ./deploy/e2e/
func BenchmarkKubeletCRILatency(b *testing.B) {
	if others := otherDaemons(); len(others) > 0 {
		b.Fatalf("another readyline is running (pids %v): it would probe the kubelet in both halves", others)
	}
	ctx := context.Background()
	methods := []string{"RunPodSandbox", "CreateContainer", "StartContainer"}
	with, without := map[string][]time.Duration{}, map[string][]time.Duration{}
	i := 0
	for b.Loop() {
		for _, probed := range []bool{i%2 == 0, i%2 != 0} {
			var d *Daemon
			if probed {
				var err error
				if d, err = env.StartDaemon(ctx, "overhead"); err != nil {
					b.Fatal(err)
				}
			}
			spans := startPodForKubeletSpans(b, ctx, fmt.Sprintf("overhead-%d-%v", i, probed), methods)
			if d != nil {
				if err := d.Stop(); err != nil {
					b.Fatal(err)
				}
			}
			into := without
			if probed {
				into = with
			}
			for m, ds := range spans {
				into[m] = append(into[m], ds...)
			}
		}
		i++
	}
	median := func(ds []time.Duration) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[len(s)/2]
	}
	for _, m := range methods {
		if len(with[m]) == 0 || len(without[m]) == 0 {
			b.Fatalf("no %s spans from the kubelet (is KUBELET_TRACING on?)", m)
		}
		mw, mo := median(with[m]), median(without[m])
		b.ReportMetric(float64(mo.Microseconds()), m+"-us-unprobed")
		b.ReportMetric(float64(mw.Microseconds()), m+"-us-probed")
		b.ReportMetric(float64(mw)/float64(mo), m+"-ratio")
	}
}

// startPodForKubeletSpans starts a one-container pod, waits until it is
// Ready, deletes it, and returns the kubelet's spans of methods made while it
// started.
func startPodForKubeletSpans(b *testing.B, ctx context.Context, prefix string, methods []string) map[string][]time.Duration {
	ns, err := env.CreateNamespace(ctx, prefix)
	if err != nil {
		b.Fatal(err)
	}
	defer env.DeleteNamespace(ctx, ns)
	from := time.Now()
	if _, err := env.Apply(ctx, ns, []byte(`apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - {name: c, image: localhost/busybox:local, imagePullPolicy: Never, command: ["sleep", "3600"]}
`)); err != nil {
		b.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	pod, err := WaitForPod(wctx, env.Client, ns, "p", ConditionTrue(corev1.PodReady))
	if err != nil {
		b.Fatal(err)
	}
	to := time.Now()
	// The kubelet exports its spans in batches: each method's call for
	// this pod is asked for until it is there.
	out := map[string][]time.Duration{}
	for _, m := range methods {
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(time.Second) {
			calls, err := kubeletCalls(wctx, "runtime.v1.RuntimeService/"+m, from, to)
			if err != nil {
				b.Fatal(err)
			}
			for _, c := range calls {
				if c.podUID == string(pod.UID) {
					out[m] = append(out[m], dur(c.Span))
				}
			}
			if len(out[m]) > 0 {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("no %s span of pod %s/p from the kubelet within 20 s of its Ready (is KUBELET_TRACING on?)", m, ns)
			}
		}
	}
	return out
}
