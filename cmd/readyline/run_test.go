package main

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/readyline/readyline/collector"
	"github.com/readyline/readyline/collector/event"
	"github.com/readyline/readyline/exporter"
)

// keptSpans is an in-memory span exporter whose spans survive the tracer
// provider's shutdown (tracetest's resets them), so a test can read what a
// daemon exported on its way out.
type keptSpans struct{ *tracetest.InMemoryExporter }

func (keptSpans) Shutdown(context.Context) error { return nil }

// TestShutdownFlushesStartsInProgress: when the daemon's context ends (what
// SIGTERM does through signal.NotifyContext in main), a pod start still in
// progress is flushed by the correlator and reaches the trace exporter
// before the exporter closes.
func TestShutdownFlushesStartsInProgress(t *testing.T) {
	mem := keptSpans{tracetest.NewInMemoryExporter()}
	logger := slog.New(slog.DiscardHandler)
	metrics, err := exporter.NewMetrics(logger)
	if err != nil {
		t.Fatal(err)
	}
	traces, err := exporter.NewTraceExporter(exporter.TraceConfig{Exporter: mem, ShutdownTimeout: 5 * time.Second}, logger)
	if err != nil {
		t.Fatal(err)
	}
	d := &daemon{logger: logger, events: make(chan event.Event, 16), metrics: metrics, traces: traces, store: exporter.NewStore(exporter.StoreLimits{Timelines: 8})}

	const uid = "0b1c2d3e-4f5a-4b6c-8d7e-9f0a1b2c3d4e"
	created := time.Now().Add(-3 * time.Second).UTC().Truncate(time.Second)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "slow", Namespace: "default", UID: uid, CreationTimestamp: metav1.NewTime(created)},
		Spec:       corev1.PodSpec{NodeName: "vm", Containers: []corev1.Container{{Name: "app"}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(created)}}},
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	emitted := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- d.pipeline(ctx, cancel, func(ctx context.Context, g *group) {
			g.Go(ctx, "fake pod watch", func(ctx context.Context) error {
				d.emitter(ctx)(&event.PodUpdate{Time: created.Add(100 * time.Millisecond), Action: event.PodAdded, Pod: pod})
				close(emitted)
				<-ctx.Done()
				return nil
			})
		})
	}()
	<-emitted
	cancel() // SIGTERM
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("pipeline: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the daemon did not stop within its shutdown budget")
	}

	var root *tracetest.SpanStub
	spans := mem.GetSpans()
	for i := range spans {
		if spans[i].Name == exporter.SpanPodStartup {
			root = &spans[i]
		}
	}
	if root == nil {
		t.Fatalf("no %s span among %d exported: the start in progress was not flushed", exporter.SpanPodStartup, len(spans))
	}
	if got := root.SpanContext.TraceID().String(); got != strings.ReplaceAll(uid, "-", "") {
		t.Errorf("trace id %s, want the pod UID", got)
	}
	attrs := map[string]string{}
	for _, kv := range root.Attributes {
		attrs[string(kv.Key)] = kv.Value.Emit()
	}
	if attrs["readyline.outcome"] != "timeout" || attrs["readyline.reason"] != "still starting when readyline stopped" {
		t.Errorf("root attributes %v: want the start flushed as still starting", attrs)
	}
	if st := traces.Stats(); st.Dropped != 0 || st.Timelines != 1 {
		t.Errorf("trace exporter stats %+v", st)
	}
}

// TestSourcesBlindnessReachesTracesAndMetrics: what the sources say of
// themselves passes through the daemon to both ends: a Down before a pod
// start marks its trace (readyline.blind) and sets readyline_source_up to
// 0, and the sources' loss counts become readyline_events_dropped_total.
func TestSourcesBlindnessReachesTracesAndMetrics(t *testing.T) {
	mem := keptSpans{tracetest.NewInMemoryExporter()}
	logger := slog.New(slog.DiscardHandler)
	metrics, err := exporter.NewMetrics(logger)
	if err != nil {
		t.Fatal(err)
	}
	traces, err := exporter.NewTraceExporter(exporter.TraceConfig{Exporter: mem, ShutdownTimeout: 5 * time.Second}, logger)
	if err != nil {
		t.Fatal(err)
	}
	var lost atomic.Uint64
	d := &daemon{logger: logger, events: make(chan event.Event, 16), metrics: metrics, traces: traces,
		store: exporter.NewStore(exporter.StoreLimits{Timelines: 8}),
		losses: &lossCounter{sources: []lossSource{lossesOf{event.SourceProcess, func() []collector.Loss {
			return []collector.Loss{{Reason: event.ReasonRingFull, N: lost.Load()}}
		}}}}}
	metrics.ExpectSources(event.SourceProcess, event.SourceRuntime)

	const uid = "1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f"
	created := time.Now().Add(-3 * time.Second).UTC().Truncate(time.Second)
	pod := pendingPod("blind", uid, created)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	emitted := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- d.pipeline(ctx, cancel, func(ctx context.Context, g *group) {
			g.Go(ctx, "fake sources", func(ctx context.Context) error {
				emit := d.emitter(ctx)
				emit(&event.SourceStatus{Time: created, Source: event.SourceProcess, Up: true})
				emit(&event.SourceStatus{Time: created.Add(50 * time.Millisecond), Source: event.SourceRuntime, Reason: event.ReasonDisconnected})
				emit(&event.PodUpdate{Time: created.Add(100 * time.Millisecond), Action: event.PodAdded, Pod: pod})
				lost.Store(7)
				close(emitted)
				<-ctx.Done()
				return nil
			})
		})
	}()
	<-emitted
	gauge := func(source string) float64 {
		rec := httptest.NewRecorder()
		metrics.Handler(nil).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		for _, line := range strings.Split(rec.Body.String(), "\n") {
			if strings.HasPrefix(line, `readyline_source_up{source="`+source+`"} `) {
				v, _ := strconv.ParseFloat(strings.Fields(line)[1], 64)
				return v
			}
		}
		return -1
	}
	dropped := func() string {
		rec := httptest.NewRecorder()
		metrics.Handler(nil).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		for _, line := range strings.Split(rec.Body.String(), "\n") {
			if strings.HasPrefix(line, `readyline_events_dropped_total{reason="ring_full",source="process"} `) {
				return strings.Fields(line)[1]
			}
		}
		return ""
	}
	deadline := time.Now().Add(5 * time.Second)
	for (gauge(event.SourceProcess) != 1 || dropped() != "7") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond) // the loss counts are polled every second
	}
	if p, c, n := gauge(event.SourceProcess), gauge(event.SourceRuntime), dropped(); p != 1 || c != 0 || n != "7" {
		t.Errorf("readyline_source_up process %v, cri %v; dropped %q: want 1, 0 and 7", p, c, n)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("pipeline: %v", err)
	}
	var root *tracetest.SpanStub
	spans := mem.GetSpans()
	for i := range spans {
		if spans[i].Name == exporter.SpanPodStartup {
			root = &spans[i]
		}
	}
	if root == nil {
		t.Fatal("no trace of the start")
	}
	attrs := map[string]string{}
	for _, kv := range root.Attributes {
		attrs[string(kv.Key)] = kv.Value.Emit()
	}
	if attrs["readyline.blind"] != event.SourceRuntime || !strings.Contains(attrs["readyline.missing"], "cri: disconnected since") {
		t.Errorf("root attributes %v: want the runtime's outage marked", attrs)
	}
}

func TestProfileMemory(t *testing.T) {
	defer func(rate int) { runtime.MemProfileRate = rate }(runtime.MemProfileRate)
	for _, tc := range []struct {
		name       string
		rate, want int
		pprof      bool
	}{
		{"off without --pprof", defaultMemProfileRate, 0, false},
		{"stays off", 0, 0, false},
		{"--pprof after GODEBUG=memprofilerate=0", 0, defaultMemProfileRate, true},
		{"--pprof keeps a rate set", 4096, 4096, true},
	} {
		runtime.MemProfileRate = tc.rate
		profileMemory(tc.pprof)
		if runtime.MemProfileRate != tc.want {
			t.Errorf("%s: MemProfileRate %d, want %d", tc.name, runtime.MemProfileRate, tc.want)
		}
	}
}

// TestRuntimeDefaults: GOGC 50 and GOMAXPROCS 1 unless the environment sets
// them (the README's "What it costs").
func TestRuntimeDefaults(t *testing.T) {
	procs, gc := runtime.GOMAXPROCS(0), debug.SetGCPercent(100)
	t.Cleanup(func() { runtime.GOMAXPROCS(procs); debug.SetGCPercent(gc) })

	runtimeDefaults(func(string) (string, bool) { return "", false })
	if got := debug.SetGCPercent(100); got != 50 {
		t.Errorf("GOGC %d, want 50", got)
	}
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Errorf("GOMAXPROCS %d, want 1", got)
	}

	runtime.GOMAXPROCS(2)
	runtimeDefaults(func(k string) (string, bool) { return "7", true }) // both set: the runtime read them
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC %d with GOGC set, want it left as it was (100)", got)
	}
	if got := runtime.GOMAXPROCS(0); got != 2 {
		t.Errorf("GOMAXPROCS %d with GOMAXPROCS set, want it left as it was (2)", got)
	}
}

// pipelineDaemon is a daemon with metrics, an in-memory trace exporter and a
// store, and no source: a test gives it events through its pipeline.
func pipelineDaemon(t *testing.T) *daemon {
	t.Helper()
	logger := slog.New(slog.DiscardHandler)
	metrics, err := exporter.NewMetrics(logger)
	if err != nil {
		t.Fatal(err)
	}
	traces, err := exporter.NewTraceExporter(exporter.TraceConfig{Exporter: tracetest.NewInMemoryExporter(), ShutdownTimeout: 5 * time.Second}, logger)
	if err != nil {
		t.Fatal(err)
	}
	return &daemon{logger: logger, events: make(chan event.Event, 16), metrics: metrics, traces: traces,
		store: exporter.NewStore(exporter.StoreLimits{Timelines: 8})}
}

// TestQuietLoopTicksEachSecond: the README's "the loop beats at every
// event and at its one-second tick". A daemon given no event at all comes
// round on its tick (it polls the sources' losses there), as counted by the
// loop itself: 3 times in 3.5 s, 2 if the last came late, never more.
func TestQuietLoopTicksEachSecond(t *testing.T) {
	const run = 3500 * time.Millisecond
	d := pipelineDaemon(t)
	var ticks atomic.Int32
	d.losses = &lossCounter{sources: []lossSource{lossesOf{event.SourceProcess, func() []collector.Loss {
		ticks.Add(1)
		return nil
	}}}}
	ctx, cancel := context.WithTimeout(context.Background(), run)
	defer cancel()
	if err := d.pipeline(ctx, cancel, func(context.Context, *group) {}); err != nil {
		t.Fatal(err)
	}
	if n := ticks.Load(); n < 2 || n > 3 {
		t.Errorf("the loop came round %d times in %v with no event, want once a second", n, run)
	}
}

// TestKubeletCallsCounted: each of the kubelet's calls the probes report
// reaches readyline_kubelet_calls_total under its method, whatever pod it
// belongs to (one the correlator knows nothing of here).
func TestKubeletCallsCounted(t *testing.T) {
	d := pipelineDaemon(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	t0 := time.Now().UTC()
	go func() {
		done <- d.pipeline(ctx, cancel, func(ctx context.Context, g *group) {
			g.Go(ctx, "fake kubelet calls", func(ctx context.Context) error {
				emit := d.emitter(ctx)
				for i := range 3 {
					at := t0.Add(time.Duration(i) * time.Second)
					emit(&event.CRICall{Time: at, End: at.Add(time.Millisecond), Method: event.CRIExecSync, ContainerID: "c1"})
				}
				emit(&event.CRICall{Time: t0, End: t0.Add(2 * time.Millisecond), Method: event.VolumeSetUp, PodUID: "u1", Volume: "config", Driver: "kubernetes.io/configmap"})
				<-ctx.Done()
				return nil
			})
		})
	}()
	calls := func(method event.CRIMethod) string {
		rec := httptest.NewRecorder()
		d.metrics.Handler(nil).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		for _, line := range strings.Split(rec.Body.String(), "\n") {
			if strings.HasPrefix(line, `readyline_kubelet_calls_total{method="`+string(method)+`"} `) {
				return strings.Fields(line)[1]
			}
		}
		return ""
	}
	deadline := time.Now().Add(5 * time.Second)
	for (calls(event.CRIExecSync) != "3" || calls(event.VolumeSetUp) != "1") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if e, v, p := calls(event.CRIExecSync), calls(event.VolumeSetUp), calls(event.CSINodePublishVolume); e != "3" || v != "1" || p != "0" {
		t.Errorf("calls counted: ExecSync %q, SetUp %q, NodePublishVolume %q; want 3, 1 and 0", e, v, p)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("pipeline: %v", err)
	}
}

// TestPaceFollowsStartsInProgress: the kernel sources' readers and the pull
// sampler are paced fast from the moment a pod start opens in the
// correlator until it is built, idle before and after (collector.Pace;
// correlator's TestBusyNotPastTimeout has the readers' pace past the
// start's timeout).
func TestPaceFollowsStartsInProgress(t *testing.T) {
	d := pipelineDaemon(t)
	d.pace, d.pullPace = collector.NewPace(), collector.NewPace()
	const uid = "5e0a7c1d-2b3f-4c5d-8e6f-7a8b9c0d1e2f"
	created := time.Now().Add(-2 * time.Second).UTC().Truncate(time.Second)
	pod := pendingPod("paced", uid, created)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	added, deleted := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- d.pipeline(ctx, cancel, func(ctx context.Context, g *group) {
			g.Go(ctx, "fake pod watch", func(ctx context.Context) error {
				emit := d.emitter(ctx)
				<-added
				emit(&event.PodUpdate{Time: time.Now().UTC(), Action: event.PodAdded, Pod: pod})
				<-deleted
				emit(&event.PodUpdate{Time: time.Now().UTC(), Action: event.PodDeleted, Pod: pod})
				<-ctx.Done()
				return nil
			})
		})
	}()
	waitPace := func(fast bool, what string) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); d.pace.Fast() != fast || d.pullPace.Fast() != fast; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the pace (fast %v) and the pull sampler's (%v) are not %v 30 s after %s", d.pace.Fast(), d.pullPace.Fast(),
					map[bool]string{true: "fast", false: "idle"}[fast], what)
			}
		}
	}
	time.Sleep(1500 * time.Millisecond) // a tick or more with no start
	if d.pace.Fast() || d.pullPace.Fast() {
		t.Fatal("the pace is fast with no pod start open")
	}
	close(added)
	waitPace(true, "the pod was added")
	kicks := d.pace.Kicks() // the switch to fast's
	close(deleted)
	waitPace(false, "the pod was deleted (its start built)")
	if d.pace.Kicks() <= kicks {
		t.Errorf("%d kicks, as before the pod was deleted: a start that ended did not have the kernel sources drain at once", d.pace.Kicks())
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("pipeline: %v", err)
	}
}

// pendingPod is a pod of one container on node vm, created at created and
// not started.
func pendingPod(name, uid string, created time.Time) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(uid), CreationTimestamp: metav1.NewTime(created)},
		Spec:       corev1.PodSpec{NodeName: "vm", Containers: []corev1.Container{{Name: "app"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodPending},
	}
}
