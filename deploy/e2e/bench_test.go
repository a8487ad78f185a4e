//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
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

	"github.com/readyline/readyline/deploy/e2e/jaeger"
)

// benchPods is how many pods each round of BenchmarkNodePodStarts creates at
// once (the kubelet's default maxPods is 110).
const benchPods = 100

// The goals BenchmarkNodePodStarts and BenchmarkNodeSteady fail on (the
// README's "What it costs" prints what the last run measured against them):
// every start traced; no event of readyline's sources dropped (the alerts'
// rate limiter holds Events back by design: source alerts is left out); the
// steady RSS at most benchGoalSteadyRSS; readyline's CPU at most
// benchGoalRatio of the kubelet's and the runtime's over the same window;
// for a churn of starts, the time from a pod observed Ready to its trace
// queryable in Jaeger at most benchGoalReadyToQueryable at the 99th
// percentile; on a node in steady state, readyline's CPU at most
// benchGoalSteadyCore of one core.
const (
	benchGoalSteadyRSS        = 40 << 20
	benchGoalReadyToQueryable = 500 * time.Millisecond
	benchGoalSteadyCore       = 0.01
)

// BenchmarkNodePodStarts is the churn of `make bench-node`: each iteration
// (round) creates benchPods pods at once on the local node (churnPod: an
// init container, an exec readiness probe, a configMap, a Secret and the
// service account's token; benchCSIPods of them with a CSI claim and
// benchPullPods pulling their image while a user watches them), waits
// until all are Ready and their traces are in Jaeger with their outcome,
// then deletes them and waits until they are gone. It reports, over all
// rounds: pods traced per pod started (%), events readyline dropped,
// readyline's CPU per pod start beside the kubelet's and the runtime's
// over the same window (see costMeter) and the shares of it its volume
// probes and the content store's reads took (sourceShares), its peak RSS
// and the highest from one to three minutes after the load, and the time
// from a pod observed Ready to its trace queryable in Jaeger (p50, p99).
//
//	make bench-node BENCH_MODE=churn                # 10 rounds: 1000 starts
//	make bench-node BENCH_MODE=churn BENCH_ROUNDS=3
//	BENCH_PPROF=1 make bench-node                   # and CPU and heap profiles
//
// The daemon runs as the DaemonSet runs it (DaemonOptions.AsDeployed):
// its memory is what a node's would be, and the runtime's account of it is
// in the go_memstats_* of the /metrics saved beside the summary.
func BenchmarkNodePodStarts(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 80*time.Minute)
	defer cancel()
	d, pprof := startBenchDaemon(b, ctx, "bench-churn")
	startBenchDriver(b, ctx)
	meter := newCostMeter(b, d)
	c0 := meter.read(ctx)
	drops0 := droppedBy(b, d)
	stopProfile := profileDaemon(ctx, b, d, pprof, "bench-churn")
	var latencies []time.Duration
	started, traced := 0, 0
	rounds := 0
	b.ResetTimer()
	for b.Loop() {
		rounds++
		s, tr, lat := benchRound(b, ctx, d, rounds)
		started += s
		traced += tr
		latencies = append(latencies, lat...)
	}
	b.StopTimer()
	stopProfile()
	cost := c0.to(meter.read(ctx))
	if cost.work.reads > 0 {
		cost.read = measureContentStoreRead(b, ctx, benchPullImage, contentStoreReads)
	}
	dropped, drops := droppedSince(b, d, drops0)
	loaded := processMemory(b, d.PID)
	// Steady: what stays once the load is over (the Go runtime gives
	// freed heap back to the kernel within minutes, the daemon the pages
	// of its binary it is not using every minute). Which of those pages
	// it used is not told: on x86 the pages the kernel maps around a
	// fault are marked accessed too.
	steady := settledMemory(b, d.PID)
	p := percentiles(latencies)
	b.ReportMetric(100*float64(traced)/float64(max(started, 1)), "%traced")
	b.ReportMetric(drops, "drops")
	reportCost(b, cost, "start", float64(started))
	b.ReportMetric(float64(steady.peak)/(1<<20), "peak-RSS-MiB")
	b.ReportMetric(float64(steady.rss)/(1<<20), "steady-RSS-MiB")
	b.ReportMetric(float64(steady.anon)/(1<<20), "steady-anon-MiB")
	b.ReportMetric(p(0.5).Seconds(), "ready-to-queryable-p50-s")
	b.ReportMetric(p(0.99).Seconds(), "ready-to-queryable-p99-s")
	summary := fmt.Sprintf("bench-node churn: %d rounds of %d pods (a configMap, a Secret and the token mounted; %d with a CSI volume, %d pulling their image, watched): "+
		"%d started, %d traced (%.1f%%), %v events dropped; "+
		"per start: readyline %.4f s of CPU (its eBPF programs' included), the kubelet and containerd %.4f s; %v; "+
		"memory after the last round: %v; the highest from %v to %v after it: %v; Ready -> queryable p50 %v p99 %v max %v",
		rounds, benchPods, benchCSIPods, benchPullPods, started, traced, 100*float64(traced)/float64(max(started, 1)), drops,
		cost.observer().Seconds()/float64(max(started, 1)), cost.observed().Seconds()/float64(max(started, 1)), cost,
		loaded, benchSettleAfter, benchSettleAfter+benchSettle, steady,
		p(0.5).Round(time.Millisecond), p(0.99).Round(time.Millisecond), p(1).Round(time.Millisecond))
	summary += fmt.Sprintf("; drops by source/reason since the daemon started: %v; kernel ring buffers, peak/size: %s", droppedBy(b, d), ringPeaks(b, d))
	saveBenchResults(b, d, pprof, "bench-churn", summary)
	if started == 0 || traced < started {
		b.Errorf("goal missed: %d of %d starts traced in Jaeger with their outcome, want every one", traced, started)
	}
	checkBenchGoals(b, dropped, steady, cost)
	if p99 := p(0.99); p99 > benchGoalReadyToQueryable {
		b.Errorf("goal missed: Ready -> queryable p99 %v, want at most %v", p99.Round(time.Millisecond), benchGoalReadyToQueryable)
	}
}

// contentStoreReads are the reads measureContentStoreRead makes: enough
// for the CPU clocks' granularity (a read costs 1.4 to 2.1 ms, measured; the clocks count
// in µs, containerd's cgroup in ns).
const contentStoreReads = 200

// startBenchDaemon waits until the node is quiet and starts readyline as the
// DaemonSet runs it, with Go's profiles served when BENCH_PPROF=1.
func startBenchDaemon(b *testing.B, ctx context.Context, name string) (*Daemon, bool) {
	// Pods an earlier test deleted may still be torn down: their
	// processes' exits belong to pods the daemon never saw, orphans it
	// would count as drops.
	waitNodeQuiet(b, ctx)
	// 100 pods at once take minutes on 2 cores: the daemon's own start
	// timeout, not the e2e tests' 60 s, so each start is one export.
	args := []string{"--start-timeout", "10m"}
	pprof := os.Getenv("BENCH_PPROF") == "1"
	if pprof {
		args = append(args, "--pprof")
	}
	d, err := env.StartDaemonWith(ctx, name, DaemonOptions{Args: args, ColdBinary: true, AsDeployed: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := d.Stop(); err != nil {
			b.Errorf("readyline: %v (log %s)", err, d.Log)
		}
	})
	return d, pprof
}

// droppedSince is what readyline dropped since before (droppedBy), by
// source/reason and in all.
func droppedSince(b *testing.B, d *Daemon, before map[string]float64) (map[string]float64, float64) {
	var all float64
	dropped := map[string]float64{}
	for key, n := range droppedBy(b, d) {
		if n -= before[key]; n > 0 {
			dropped[key] = n
			all += n
		}
	}
	return dropped, all
}

// percentiles returns the q-quantile of ds (sorted here).
func percentiles(ds []time.Duration) func(q float64) time.Duration {
	slices.Sort(ds)
	return func(q float64) time.Duration {
		if len(ds) == 0 {
			return 0
		}
		return ds[min(len(ds)-1, int(q*float64(len(ds))))]
	}
}

// saveBenchResults prints the summary and saves it in the artifacts with
// the daemon's /metrics (the runtime's own account of its memory,
// go_memstats_*) and, with pprof, its heap profile.
func saveBenchResults(b *testing.B, d *Daemon, pprof bool, name, summary string) {
	fmt.Println(summary)
	dir, err := env.ArtifactsDir()
	if err != nil {
		b.Logf("artifacts: %v", err)
		return
	}
	os.WriteFile(filepath.Join(dir, name+".txt"), []byte(summary+"\n"), 0o644)
	if err := saveURL(d.MetricsURL+"/metrics", filepath.Join(dir, name+".metrics.txt")); err != nil {
		b.Logf("metrics: %v", err)
	}
	if pprof {
		// Where the heap is: `go tool pprof -sample_index=inuse_space -top FILE`.
		if err := saveURL(d.APIURL+"/debug/pprof/heap", filepath.Join(dir, name+".heap.pprof")); err != nil {
			b.Logf("heap profile: %v", err)
		}
	}
}

// checkBenchGoals fails the benchmark for each goal both modes share that
// it missed (see benchGoalSteadyRSS).
func checkBenchGoals(b *testing.B, dropped map[string]float64, steady residentMemory, cost costWindow) {
	b.Helper()
	for key, n := range dropped {
		if !strings.HasPrefix(key, "alerts/") {
			b.Errorf("goal missed: %v events dropped (readyline_events_dropped_total %s), want none", n, key)
		}
	}
	if steady.rss > benchGoalSteadyRSS {
		b.Errorf("goal missed: steady RSS %.1f MiB, want at most %d MiB (%v)", float64(steady.rss)/(1<<20), benchGoalSteadyRSS>>20, steady)
	}
	if r := cost.ratio(); r > benchGoalRatio {
		b.Errorf("goal missed: readyline spent %.2f%% of what the kubelet and containerd spent, want at most %.0f%% (%v)", 100*r, 100*benchGoalRatio, cost)
	}
}

// nodeQuietWithin bounds waitNodeQuiet. The steady mode's 109 pods,
// deleted at its end, took containerd over 3 minutes to tear down on this
// 2-core VM (2026-12-07: its sandbox list still timing out then, the load
// average at 66), and the churn that follows waits for them; nothing is
// measured meanwhile.
const nodeQuietWithin = 10 * time.Minute

// waitNodeQuiet waits until no pod on the node is being deleted and every
// ready sandbox of the runtime is a pod the API server has.
func waitNodeQuiet(b testing.TB, ctx context.Context) {
	b.Helper()
	crictl, err := Tool("crictl")
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	var busy []string
	err = wait.PollUntilContextTimeout(ctx, time.Second, nodeQuietWithin, true, func(ctx context.Context) (bool, error) {
		pods, err := env.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		known := map[string]bool{}
		busy = nil
		for _, p := range pods.Items {
			known[string(p.UID)] = true
			if hash := p.Annotations[corev1.MirrorPodAnnotationKey]; hash != "" {
				known[hash] = true // a static pod's sandbox has its UID
			}
			if p.DeletionTimestamp != nil {
				busy = append(busy, "deleting "+p.Namespace+"/"+p.Name)
			}
		}
		out, err := exec.CommandContext(ctx, crictl, "--runtime-endpoint", env.CRIEndpoint(), "pods", "--state", "ready", "-o", "json").Output()
		if err != nil {
			// containerd tearing a hundred pods down can be slower than
			// crictl's timeout: asked again until the deadline.
			if ee, ok := err.(*exec.ExitError); ok {
				err = fmt.Errorf("%w: %s", err, bytes.TrimSpace(ee.Stderr))
			}
			busy = append(busy, "crictl pods: "+err.Error())
			return false, nil
		}
		var sandboxes struct {
			Items []struct {
				Metadata struct{ Name, Namespace, UID string }
			}
		}
		if err := json.Unmarshal(out, &sandboxes); err != nil {
			return false, fmt.Errorf("crictl pods: %w", err)
		}
		for _, sb := range sandboxes.Items {
			if !known[sb.Metadata.UID] {
				busy = append(busy, "sandbox of "+sb.Metadata.Namespace+"/"+sb.Metadata.Name+", a pod deleted")
			}
		}
		return len(busy) == 0, nil
	})
	if err != nil {
		b.Fatalf("the node is still tearing pods down after %v: %v (%v)", time.Since(start).Round(time.Second), busy, err)
	}
	if waited := time.Since(start); waited > time.Second {
		b.Logf("waited %v for the node to tear down pods deleted before", waited.Round(time.Second))
	}
}

// benchRound runs one round of benchPods churnPods in a namespace of its
// own, deleted at the end of the round with the round's CSI volumes, and
// returns the pods started, the pods whose trace reached Jaeger with their
// outcome, and each traced pod's Ready -> queryable time. The first
// benchPullPods pull their image and are watched (watchPulls); the last
// benchCSIPods have a claim each.
func benchRound(b *testing.B, ctx context.Context, d *Daemon, round int) (int, int, []time.Duration) {
	ns, err := env.CreateNamespace(ctx, fmt.Sprintf("bench-round-%d", round))
	if err != nil {
		b.Fatal(err)
	}
	claims := &benchClaims{}
	defer claims.delete(b) // after the namespace: its pods unpublish their volumes first
	defer deleteBenchNamespace(b, ns)
	applyBenchVolumeObjects(b, ctx, ns)
	claims.make(b, ctx, ns, benchCSIPods)
	names := podNames("bench", benchPods)
	stopWatch := watchPulls(ctx, d, ns, names[:benchPullPods])
	s := startBenchPods(b, ctx, ns, fmt.Sprintf("round %d", round), benchPods, func(i int) string {
		return churnPod(names[i], claims.claim(i, benchPods), i < benchPullPods)
	})
	b.Logf("round %d: %d questions about the pulling pods while they started", round, stopWatch())
	return s.started, s.traced, s.latencies
}

// deleteBenchNamespace deletes ns and waits until it is gone: what comes
// next starts on an empty node.
func deleteBenchNamespace(b *testing.B, ns string) {
	dctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := env.DeleteNamespace(dctx, ns); err != nil {
		b.Errorf("deleting %s: %v", ns, err)
	}
	wait.PollUntilContextCancel(dctx, time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := env.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return err != nil, nil
	})
}

// benchStarts is what startBenchPods saw.
type benchStarts struct {
	started, traced int
	latencies       []time.Duration // Ready -> queryable, per traced pod
}

// startBenchPods creates n pods (manifest(i) for each) in ns at once, waits
// until all are Ready and looks each one's trace up in Jaeger until it is
// there with its outcome.
func startBenchPods(b *testing.B, ctx context.Context, ns, what string, n int, manifest func(i int) string) benchStarts {
	// An informer (it relists and rewatches on its own): when each pod was
	// observed Ready.
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
			if len(readyAt) == n {
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

	var all strings.Builder
	for i := range n {
		fmt.Fprintf(&all, "---\n%s", manifest(i))
	}
	if _, err := env.Apply(ctx, ns, []byte(all.String())); err != nil {
		b.Fatal(err)
	}
	// Looked up in Jaeger from now on, each pod Ready and not found yet by
	// its trace id (small requests, 8 at a time, so a lookup's own time
	// stays small next to the latency measured): a trace is queryable once
	// its outcome is in. Both stamps (Ready observed, trace found) are
	// taken here; a trace found is stamped when its lookup returned.
	found := map[string]time.Time{} // uid -> the lookup that had its trace
	var lookups []time.Duration     // how long each lookup took: the stamp's slack
	deadline := time.Now().Add(12 * time.Minute)
	for time.Now().Before(deadline) {
		mu.Lock()
		var want []string
		for uid := range readyAt {
			if found[uid].IsZero() {
				want = append(want, uid)
			}
		}
		// The longest Ready first: each stamp's slack is the time from
		// its lookup's start to the end of the cycle of lookups.
		slices.SortFunc(want, func(a, b string) int { return readyAt[a].Compare(readyAt[b]) })
		nReady := len(readyAt)
		mu.Unlock()
		if nReady == n && len(want) == 0 {
			break
		}
		for _, l := range lookupTraces(ctx, want) {
			lookups = append(lookups, l.took)
			if l.ready {
				found[l.uid] = l.at
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	select {
	case <-allReady:
	default:
		mu.Lock()
		nReady := len(readyAt)
		mu.Unlock()
		b.Fatalf("%s: %d of %d pods Ready after 12 minutes", what, nReady, n)
	}
	s := benchStarts{started: n, traced: len(found)}
	mu.Lock()
	for uid, at := range found {
		s.latencies = append(s.latencies, max(0, at.Sub(readyAt[uid])))
	}
	mu.Unlock()
	if len(found) < n {
		b.Logf("%s: %d of %d traces not in Jaeger with their outcome", what, n-len(found), n)
	}
	slices.Sort(lookups)
	if len(lookups) > 0 {
		b.Logf("%s: %d Jaeger lookups took p50 %v, p99 %v, max %v (a trace found is stamped when its lookup returned)",
			what, len(lookups), lookups[len(lookups)/2].Round(time.Millisecond),
			lookups[len(lookups)*99/100].Round(time.Millisecond), lookups[len(lookups)-1].Round(time.Millisecond))
	}
	return s
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

// residentMemory is a process's resident memory, from /proc/PID/status and smaps.
type residentMemory struct {
	peak, rss, anon uint64 // VmHWM, VmRSS, RssAnon
	// binary: its executable's pages (file-backed: shared, reclaimable);
	// bpf: its BPF maps' (a ring buffer's data is mapped twice, so counted
	// twice in RSS).
	binary, bpf uint64
	// bpfKernel: the kernel memory of the BPF maps it holds (their
	// memlock in /proc/PID/fdinfo), charged to its memory cgroup, not to
	// its RSS but for the mapped ring buffers.
	bpfKernel uint64
}

func (m residentMemory) String() string {
	mib := func(n uint64) float64 { return float64(n) / (1 << 20) }
	return fmt.Sprintf("RSS %.1f MiB (anonymous %.1f, its binary %.1f, BPF maps %.1f), peak %.1f MiB; BPF maps' kernel memory %.1f MiB",
		mib(m.rss), mib(m.anon), mib(m.binary), mib(m.bpf), mib(m.peak), mib(m.bpfKernel))
}

// processMemory reads pid's resident memory.
func processMemory(tb testing.TB, pid int) residentMemory {
	tb.Helper()
	var m residentMemory
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
			m.peak = kb << 10
		case "VmRSS:":
			m.rss = kb << 10
		case "RssAnon:":
			m.anon = kb << 10
		}
	}
	exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	smaps, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		tb.Fatal(err)
	}
	var into *uint64 // the mapping whose lines follow
	for _, line := range strings.Split(string(smaps), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 5 && strings.Contains(f[0], "-"):
			into = nil
			if len(f) >= 6 && f[5] == exe {
				into = &m.binary
			} else if len(f) >= 6 && f[5] == "anon_inode:bpf-map" {
				into = &m.bpf
			}
		case len(f) == 3 && f[0] == "Rss:" && into != nil:
			kb, _ := strconv.ParseUint(f[1], 10, 64)
			*into += kb << 10
		}
	}
	fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fdinfo/*", pid))
	for _, fd := range fds {
		info, err := os.ReadFile(fd)
		if err != nil || !strings.Contains(string(info), "map_type:") {
			continue
		}
		for _, line := range strings.Split(string(info), "\n") {
			if f := strings.Fields(line); len(f) == 2 && f[0] == "memlock:" {
				n, _ := strconv.ParseUint(f[1], 10, 64)
				m.bpfKernel += n
			}
		}
	}
	return m
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

// ringPeaks is, per source, the most its kernel ring buffer held when read
// against its size: "process 96.0/4096 KiB, ...".
func ringPeaks(tb testing.TB, d *Daemon) string {
	tb.Helper()
	fams := scrapeDaemon(tb, d)
	var out []string
	for _, s := range []string{"process", "cri_calls", "tcp"} {
		src := map[string]string{"source": s}
		out = append(out, fmt.Sprintf("%s %.1f/%.0f KiB", s,
			counterValue(fams, "readyline_ring_buffer_peak_bytes", src)/1024,
			counterValue(fams, "readyline_ring_buffer_size_bytes", src)/1024))
	}
	return strings.Join(out, ", ")
}

// traceOutcome is the outcome of the pod start a trace shows: its
// completion's when the start was reported at its deadline, else the root's.
func traceOutcome(tr *jaeger.Trace) string {
	if c, ok := tr.SpanByName("pod.startup.completed"); ok {
		return tagString(c, "readyline.outcome")
	}
	if root, ok := tr.SpanByName("pod.startup"); ok {
		return tagString(root, "readyline.outcome")
	}
	return ""
}

// lookup is one pod's trace looked up in Jaeger: when the answer came, how
// long it took, and whether the trace was there with its outcome.
type lookup struct {
	uid   string
	at    time.Time
	took  time.Duration
	ready bool
}

// lookupTraces looks the pods' traces up in Jaeger, 8 at a time.
func lookupTraces(ctx context.Context, uids []string) []lookup {
	out := make([]lookup, len(uids))
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i, uid := range uids {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			asked := time.Now()
			tr, err := env.Jaeger.Trace(ctx, TraceIDFromPodUID(uid))
			now := time.Now()
			out[i] = lookup{uid: uid, at: now, took: now.Sub(asked), ready: err == nil && traceOutcome(tr) == "ready"}
		}()
	}
	wg.Wait()
	return out
}

// saveURL writes what GET url answers to file.
func saveURL(url, file string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return os.WriteFile(file, body, 0o644)
}

// The steady memory is read every benchSettleEvery for benchSettle, from
// benchSettleAfter after the load: by then the load's garbage is
// collected, and the daemon has given back the pages of its binary the
// load mapped (each minute, cmd/readyline/binary_pages.go). What it holds right
// after the load is reported apart.
const (
	benchSettleAfter = time.Minute
	benchSettle      = 2 * time.Minute
	benchSettleEvery = 5 * time.Second
)

// settledMemory reads pid's memory every benchSettleEvery for benchSettle,
// from benchSettleAfter on, and returns the reading with the highest RSS:
// the daemon's RSS goes down when it gives back pages and up as it uses
// them again, and steady is the top of that over two of those cycles, not
// a reading that happened to follow a trim.
func settledMemory(tb testing.TB, pid int) residentMemory {
	tb.Helper()
	time.Sleep(benchSettleAfter)
	var top residentMemory
	for end := time.Now().Add(benchSettle); time.Now().Before(end); {
		time.Sleep(benchSettleEvery)
		if m := processMemory(tb, pid); m.rss > top.rss {
			top = m
		}
	}
	return top
}
