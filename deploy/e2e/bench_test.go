//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// benchPods is how many pods each round of BenchmarkNodePodStarts creates at
// once (the kubelet's default maxPods is 110).
const benchPods = 100

// BenchmarkNodePodStarts is `make bench-node`: each iteration (round)
// creates benchPods pods at once on the local node (an init container, an
// exec readiness probe), waits until all are Ready and their traces are in
// Jaeger with their outcome, then deletes them. It reports, over all rounds:
// pods traced per pod started (%), events readyline dropped, readyline's CPU
// seconds per pod start, its peak and final RSS, and the time from a pod
// observed Ready to its trace queryable in Jaeger (p50, p99).
//
//	make bench-node                       # 3 rounds
//	BENCH_ROUNDS=5 make bench-node
func BenchmarkNodePodStarts(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Minute)
	defer cancel()
	// 100 pods at once take minutes on 2 cores: the daemon's own start
	// timeout, not the e2e tests' 60 s, so each start is one export.
	d, err := env.StartDaemonWith(ctx, "bench-node", DaemonOptions{Args: []string{"--start-timeout", "10m"}})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := d.Stop(); err != nil {
			b.Errorf("readyline: %v (log %s)", err, d.Log)
		}
	}()
	cpu0 := processCPU(b, d.PID)
	drops0 := droppedTotal(b, d)
	var latencies []time.Duration
	started, traced := 0, 0
	rounds := 0
	b.ResetTimer()
	for b.Loop() {
		rounds++
		s, tr, lat := benchRound(b, ctx, rounds)
		started += s
		traced += tr
		latencies = append(latencies, lat...)
	}
	b.StopTimer()
	cpu := processCPU(b, d.PID) - cpu0
	drops := droppedTotal(b, d) - drops0
	peak, rss := processMemory(b, d.PID)
	slices.Sort(latencies)
	p := func(q float64) time.Duration {
		if len(latencies) == 0 {
			return 0
		}
		return latencies[min(len(latencies)-1, int(q*float64(len(latencies))))]
	}
	b.ReportMetric(100*float64(traced)/float64(max(started, 1)), "%traced")
	b.ReportMetric(drops, "drops")
	b.ReportMetric(cpu.Seconds()/float64(max(started, 1)), "cpu-s/start")
	b.ReportMetric(float64(peak)/(1<<20), "peak-RSS-MiB")
	b.ReportMetric(float64(rss)/(1<<20), "RSS-MiB")
	b.ReportMetric(p(0.5).Seconds(), "ready-to-queryable-p50-s")
	b.ReportMetric(p(0.99).Seconds(), "ready-to-queryable-p99-s")
	summary := fmt.Sprintf("bench-node: %d rounds of %d pods: %d started, %d traced (%.1f%%), %v events dropped, "+
		"readyline CPU %.4f s per start (%.1f s in all), RSS peak %.1f MiB, now %.1f MiB, Ready -> queryable p50 %v p99 %v max %v",
		rounds, benchPods, started, traced, 100*float64(traced)/float64(max(started, 1)), drops,
		cpu.Seconds()/float64(max(started, 1)), cpu.Seconds(), float64(peak)/(1<<20), float64(rss)/(1<<20),
		p(0.5).Round(time.Millisecond), p(0.99).Round(time.Millisecond), p(1).Round(time.Millisecond))
	summary += fmt.Sprintf("; drops by source/reason since the daemon started: %v", droppedBy(b, d))
	fmt.Println(summary)
	if dir, err := env.ArtifactsDir(); err == nil {
		os.WriteFile(dir+"/bench-node.txt", []byte(summary+"\n"), 0o644)
	}
}

// benchRound runs one round and returns the pods started, the pods whose
// trace reached Jaeger with their outcome, and each traced pod's Ready ->
// queryable time.
func benchRound(b *testing.B, ctx context.Context, round int) (int, int, []time.Duration) {
	ns, err := env.CreateNamespace(ctx, fmt.Sprintf("bench-round-%d", round))
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if err := env.DeleteNamespace(dctx, ns); err != nil {
			b.Errorf("deleting %s: %v", ns, err)
		}
		// The next round starts on an empty node.
		wait.PollUntilContextCancel(dctx, time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := env.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			return err != nil, nil
		})
	}()

	// An informer for the round (it relists and rewatches on its own): when
	// each pod was observed Ready.
	var mu sync.Mutex
	readyAt := map[string]time.Time{} // uid -> observed Ready
	allReady := make(chan struct{})
	note := func(obj any) {
		pod, ok := obj.(*corev1.Pod)
		if !ok || ConditionStatus(pod, corev1.PodReady) != corev1.ConditionTrue {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if _, seen := readyAt[string(pod.UID)]; !seen {
			readyAt[string(pod.UID)] = time.Now()
			if len(readyAt) == benchPods {
				close(allReady)
			}
		}
	}
	factory := informers.NewSharedInformerFactoryWithOptions(env.Client, 0, informers.WithNamespace(ns))
	informer := factory.Core().V1().Pods().Informer()
	informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    note,
		UpdateFunc: func(_, obj any) { note(obj) },
	})
	stopInformer := make(chan struct{})
	defer close(stopInformer)
	factory.Start(stopInformer)
	cache.WaitForCacheSync(stopInformer, informer.HasSynced)

	var manifest strings.Builder
	for i := range benchPods {
		fmt.Fprintf(&manifest, "---\n%s", faultPod(fmt.Sprintf("bench-%03d", i), 1))
	}
	if _, err := env.Apply(ctx, ns, []byte(manifest.String())); err != nil {
		b.Fatal(err)
	}
	// Searched in Jaeger from now on, a search per pass (one request
	// whatever the number of pods): a trace is queryable once its outcome is
	// ready. Both stamps (Ready observed, trace found) are taken here.
	found := map[string]time.Time{} // uid -> the first search that had its trace
	byTrace := map[string]string{}  // trace id -> uid
	deadline := time.Now().Add(12 * time.Minute)
	for time.Now().Before(deadline) {
		traces, err := searchTraces(ctx, JaegerQueryURL, ns)
		now := time.Now()
		if err != nil {
			b.Logf("searching Jaeger: %v", err)
		}
		mu.Lock()
		for uid := range readyAt {
			byTrace[TraceIDFromPodUID(uid)] = uid
		}
		nReady := len(readyAt)
		mu.Unlock()
		for i := range traces {
			if uid, ok := byTrace[traces[i].TraceID]; ok && found[uid].IsZero() && traceOutcome(&traces[i]) == "ready" {
				found[uid] = now
			}
		}
		if nReady == benchPods && len(found) == benchPods {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	select {
	case <-allReady:
	default:
		mu.Lock()
		n := len(readyAt)
		mu.Unlock()
		b.Fatalf("round %d: %d of %d pods Ready after 12 minutes", round, n, benchPods)
	}
	var lat []time.Duration
	mu.Lock()
	for uid, at := range found {
		lat = append(lat, max(0, at.Sub(readyAt[uid])))
	}
	mu.Unlock()
	if len(found) < benchPods {
		b.Logf("round %d: %d of %d traces not in Jaeger with their outcome", round, benchPods-len(found), benchPods)
	}
	pending := make([]string, benchPods-len(found))
	return benchPods, benchPods - len(pending), lat
}

// processCPU is a process's user+system CPU time so far.
func processCPU(tb testing.TB, pid int) time.Duration {
	tb.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		tb.Fatal(err)
	}
	s := string(stat)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ
}

// processMemory is a process's peak and current resident set size.
func processMemory(tb testing.TB, pid int) (peak, rss uint64) {
	tb.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseUint(f[1], 10, 64)
		switch f[0] {
		case "VmHWM:":
			peak = kb << 10
		case "VmRSS:":
			rss = kb << 10
		}
	}
	return peak, rss
}

// droppedBy is readyline_events_dropped_total by source/reason, non-zero ones.
func droppedBy(tb testing.TB, d *Daemon) map[string]float64 {
	tb.Helper()
	out := map[string]float64{}
	for _, m := range scrapeDaemon(tb, d)["readyline_events_dropped_total"].GetMetric() {
		var source, reason string
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "source":
				source = l.GetValue()
			case "reason":
				reason = l.GetValue()
			}
		}
		if v := m.GetCounter().GetValue(); v > 0 {
			out[source+"/"+reason] += v
		}
	}
	return out
}

// droppedTotal is the sum of readyline_events_dropped_total.
func droppedTotal(tb testing.TB, d *Daemon) float64 {
	tb.Helper()
	return counterValue(scrapeDaemon(tb, d), "readyline_events_dropped_total", nil)
}

// traceOutcome is the outcome of the pod start a trace shows: its
// completion's when the start was reported at its deadline, else the root's.
func traceOutcome(tr *Trace) string {
	if c, ok := tr.SpanByName("pod.startup.completed"); ok {
		return tagString(c, "readyline.outcome")
	}
	if root, ok := tr.SpanByName("pod.startup"); ok {
		return tagString(root, "readyline.outcome")
	}
	return ""
}

// searchTraces returns the traces readyline exported for namespace ns, in
// one Jaeger search.
func searchTraces(ctx context.Context, queryURL, ns string) ([]Trace, error) {
	q := url.Values{"service": {"readyline"}, "limit": {"1000"}, "lookback": {"1h"},
		"tags": {fmt.Sprintf(`{"k8s.namespace.name":%q}`, ns)}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, queryURL+"/api/traces?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("jaeger answered %s", resp.Status)
	}
	var out struct {
		Data []Trace `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, err
	}
	return out.Data, nil
}
