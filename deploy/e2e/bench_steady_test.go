//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// benchSteadyPods is how many pods BenchmarkNodeSteady keeps Ready: the
// kubelet's default maxPods, less the pods the node already runs.
const benchSteadyPods = 110

// benchSteadyWindow is how long BenchmarkNodeSteady measures the node in
// steady state (BENCH_STEADY overrides it, as a Go duration).
const benchSteadyWindow = 10 * time.Minute

// steadyPod is a pod of BenchmarkNodeSteady: a web server (busybox httpd,
// the nginx stand-in) probed as many are: an exec readiness probe every
// second and an httpGet liveness probe every 10 s; with the volumes of
// benchVolumes (claim, when not empty, a CSI volume's) and the service
// account's token.
func steadyPod(name, claim string) string {
	mounts, volumes := benchVolumes(claim)
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - name: web
    image: localhost/nginx:local
    imagePullPolicy: Never
    readinessProbe:
      exec: {command: ["true"]}
      periodSeconds: 1
    livenessProbe:
      httpGet: {path: /, port: 80}
      periodSeconds: 10
%s%s`, name, mounts, volumes)
}

// BenchmarkNodeSteady is the steady state of `make bench-node`: the node
// runs as many pods as it may (benchSteadyPods), Ready and probed
// (steadyPod; benchCSIPods with a CSI claim), and readyline's cost is
// measured over benchSteadyWindow once every start is traced and the
// starts' tail (their Event reads) is over: its CPU as a share of one core
// and beside the kubelet's and the runtime's (see costMeter), the shares
// its volume probes (the kubelet sets each pod's configMap and Secret up
// again at its syncs) and the content store's reads (none: no pull is in
// flight in a steady state) took of it (sourceShares), per probe run, the
// events it dropped, and its
// RSS read every 5 s (the highest of the window). It fails on a missed
// goal: readyline over benchGoalSteadyCore of a core or over benchGoalRatio
// of the kubelet and runtime, a drop, an RSS over benchGoalSteadyRSS, a
// start not traced.
//
//	make bench-node BENCH_MODE=steady
//	make bench-node BENCH_MODE=steady BENCH_STEADY=2m
func BenchmarkNodeSteady(b *testing.B) {
	window := benchSteadyWindow
	if v := os.Getenv("BENCH_STEADY"); v != "" {
		var err error
		if window, err = time.ParseDuration(v); err != nil || window <= 0 {
			b.Fatalf("BENCH_STEADY=%q: want a positive duration", v)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), window+40*time.Minute)
	defer cancel()
	d, pprof := startBenchDaemon(b, ctx, "bench-steady")
	running, err := runningPods(ctx)
	if err != nil {
		b.Fatal(err)
	}
	n := benchSteadyPods - running
	if n < benchSteadyPods/2 {
		b.Fatalf("the node already runs %d pods: not room for a steady state of %d", running, benchSteadyPods)
	}
	startBenchDriver(b, ctx)
	meter := newCostMeter(b, d)
	ns, err := env.CreateNamespace(ctx, "bench-steady")
	if err != nil {
		b.Fatal(err)
	}
	claims := &benchClaims{}
	defer claims.delete(b) // after the namespace: its pods unpublish their volumes first
	defer deleteBenchNamespace(b, ns)
	applyBenchVolumeObjects(b, ctx, ns)
	claims.make(b, ctx, ns, benchCSIPods)

	for b.Loop() {
		starts := startBenchPods(b, ctx, ns, "steady", n, func(i int) string {
			return steadyPod(fmt.Sprintf("web-%03d", i), claims.claim(i, n))
		})
		if starts.traced < starts.started {
			b.Errorf("goal missed: %d of %d starts traced in Jaeger with their outcome, want every one", starts.traced, starts.started)
		}
		// The starts' tail: the Event reads of starts that took over 5 s
		// (at most 80 s after their start), the exporter's batches.
		time.Sleep(90 * time.Second)
		restarts0 := podRestarts(b, ctx, ns)
		drops0 := droppedBy(b, d)
		c0 := meter.read(ctx)
		stopProfile := profileDaemon(ctx, b, d, pprof, "bench-steady")
		var top residentMemory
		for end := time.Now().Add(window); time.Now().Before(end); {
			time.Sleep(benchSettleEvery)
			if m := processMemory(b, d.PID); m.rss > top.rss {
				top = m
			}
		}
		stopProfile()
		cost := c0.to(meter.read(ctx))
		dropped, drops := droppedSince(b, d, drops0)
		restarts := podRestarts(b, ctx, ns) - restarts0

		b.ReportMetric(float64(n), "pods")
		b.ReportMetric(cost.probes/cost.wall.Seconds(), "probes/s")
		b.ReportMetric(drops, "drops")
		reportCost(b, cost, "probe", cost.probes)
		b.ReportMetric(float64(top.rss)/(1<<20), "steady-RSS-MiB")
		b.ReportMetric(float64(top.peak)/(1<<20), "peak-RSS-MiB")
		summary := fmt.Sprintf("bench-node steady: %d pods Ready (an exec readiness probe every second, an httpGet liveness probe every 10 s; "+
			"a configMap, a Secret and the token mounted, %d with a CSI volume), "+
			"%.0f probe runs (%.1f/s), %d container restarts, %v events dropped; readyline %.2f%% of a core; per probe run: readyline %.1f µs of CPU "+
			"(its eBPF programs' included), the kubelet and containerd %.1f µs; %v; memory: the highest RSS read every %v: %v",
			n, len(claims.names), cost.probes, cost.probes/cost.wall.Seconds(), restarts, drops, 100*cost.coreShare(),
			1e6*cost.observer().Seconds()/max(cost.probes, 1), 1e6*cost.observed().Seconds()/max(cost.probes, 1), cost,
			benchSettleEvery, top)
		summary += fmt.Sprintf("; drops by source/reason since the daemon started: %v; kernel ring buffers, peak/size: %s", droppedBy(b, d), ringPeaks(b, d))
		saveBenchResults(b, d, pprof, "bench-steady", summary)
		if asked := float64(n) * (1 + 1.0/10); cost.probes/cost.wall.Seconds() < 0.9*asked {
			// Not a goal of readyline's: the kubelet and the runtime have
			// the node's cores to themselves and cannot run more. The
			// figures are per probe run.
			b.Logf("the kubelet ran %.1f probes/s, of the %.0f/s the pods ask for: the node cannot run more (kubelet and containerd used %.0f%% of a core)",
				cost.probes/cost.wall.Seconds(), asked, 100*cost.observed().Seconds()/cost.wall.Seconds())
		}
		checkBenchGoals(b, dropped, top, cost)
		if share := cost.coreShare(); share > benchGoalSteadyCore {
			b.Errorf("goal missed: readyline used %.2f%% of a core, want at most %.0f%% (%v)", 100*share, 100*benchGoalSteadyCore, cost)
		}
	}
}

// runningPods counts the pods on the node that are not over.
func runningPods(ctx context.Context) (int, error) {
	pods, err := env.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + env.NodeName})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			n++
		}
	}
	return n, nil
}

// podRestarts sums the restart counts of ns's containers.
func podRestarts(b *testing.B, ctx context.Context, ns string) int {
	pods, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, p := range pods.Items {
		for _, c := range p.Status.ContainerStatuses {
			n += int(c.RestartCount)
		}
	}
	return n
}
