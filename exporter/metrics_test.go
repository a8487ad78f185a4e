package exporter

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape fetches /metrics from h and parses it.
func scrape(t *testing.T, h http.Handler) map[string]*dto.MetricFamily {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return mfs
}

func labels(m *dto.Metric) map[string]string {
	l := map[string]string{}
	for _, lp := range m.GetLabel() {
		l[lp.GetName()] = lp.GetValue()
	}
	return l
}

// series finds the series of family name whose labels are exactly want.
func series(t *testing.T, mfs map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	t.Helper()
	mf, ok := mfs[name]
	if !ok {
		t.Fatalf("no metric family %s", name)
	}
	for _, m := range mf.GetMetric() {
		l := labels(m)
		if len(l) != len(want) {
			continue
		}
		match := true
		for k, v := range want {
			if l[k] != v {
				match = false
			}
		}
		if match {
			return m
		}
	}
	var have []map[string]string
	for _, m := range mf.GetMetric() {
		have = append(have, labels(m))
	}
	t.Fatalf("%s: no series %v (have %v)", name, want, have)
	return nil
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestMetricsRecordAndScrape(t *testing.T) {
	m, err := NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	m.Record(lifecycleDemo())
	m.Record(lifecycleDemo())
	m.Record(initFailureNever())
	m.Record(postStartDemo())
	m.AddDropped("collector", "unknown_pod", 3)
	m.AddDropped("collector", "unknown_pod", 2)
	m.ExportFailed()

	mfs := scrape(t, m.Handler(nil))

	// Only bounded labels, on every readyline series.
	allowed := []string{LabelNamespace, LabelPhase, LabelContainerKind, LabelOutcome, LabelSource, LabelReason, LabelImageSize, LabelMethod}
	var names []string
	for name, mf := range mfs {
		if !strings.HasPrefix(name, "readyline_") {
			continue
		}
		names = append(names, name)
		for _, s := range mf.GetMetric() {
			for k, v := range labels(s) {
				if !slices.Contains(allowed, k) {
					t.Errorf("%s has label %s=%q", name, k, v)
				}
				if strings.Contains(v, "lifecycle-demo") || strings.Contains(v, lifecycleUID) {
					t.Errorf("%s: pod identity leaked into label %s=%q", name, k, v)
				}
			}
		}
	}
	sort.Strings(names)
	wantNames := []string{
		"readyline_container_phase_duration_seconds",
		"readyline_events_dropped_total",
		"readyline_export_failures_total",
		"readyline_kubelet_calls_total",
		"readyline_pod_phase_duration_seconds",
		"readyline_pod_ready_to_start_containers_seconds",
		"readyline_pod_starts_total",
		"readyline_pod_startup_duration_seconds",
		"readyline_pull_progress_read_seconds_total",
		"readyline_pull_progress_reads_total",
	}
	if !slices.Equal(names, wantNames) {
		t.Errorf("metric families\n got %q\nwant %q", names, wantNames)
	}

	// Two lifecycle-demo starts of 27.097 s.
	h := series(t, mfs, "readyline_pod_startup_duration_seconds", map[string]string{"namespace": "default", "outcome": "ready"}).GetHistogram()
	if h.GetSampleCount() != 3 || !near(h.GetSampleSum(), 2*27.097+16.412) {
		t.Errorf("startup histogram count %d sum %v", h.GetSampleCount(), h.GetSampleSum())
	}
	if len(h.GetBucket()) != len(DurationBuckets)+1 || h.GetBucket()[0].GetUpperBound() != 0.05 { // and +Inf
		t.Errorf("buckets %v", h.GetBucket())
	}
	for _, b := range h.GetBucket() {
		want := uint64(0)
		if b.GetUpperBound() >= 30 {
			want = 3
		} else if b.GetUpperBound() >= 20 {
			want = 1 // poststart-demo
		}
		if b.GetCumulativeCount() != want {
			t.Errorf("le=%v: %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), want)
		}
	}
	failed := series(t, mfs, "readyline_pod_startup_duration_seconds", map[string]string{"namespace": "demo", "outcome": "failed"}).GetHistogram()
	if failed.GetSampleCount() != 1 || !near(failed.GetSampleSum(), 1.630) {
		t.Errorf("failed startup count %d sum %v", failed.GetSampleCount(), failed.GetSampleSum())
	}

	// pod.init: 10.328 s twice in default; 0.778 s in demo.
	pi := series(t, mfs, "readyline_pod_phase_duration_seconds", map[string]string{"namespace": "default", "phase": "pod.init"}).GetHistogram()
	if pi.GetSampleCount() != 2 || !near(pi.GetSampleSum(), 2*10.328) {
		t.Errorf("pod.init count %d sum %v", pi.GetSampleCount(), pi.GetSampleSum())
	}

	// PodScheduled (45 ms) -> PodReadyToStartContainers (760 ms) = 0.715 s
	// twice, and poststart-demo's 15.959 s held by its postStart hook.
	rts := series(t, mfs, "readyline_pod_ready_to_start_containers_seconds", map[string]string{"namespace": "default"}).GetHistogram()
	if rts.GetSampleCount() != 3 || !near(rts.GetSampleSum(), 2*0.715+15.959) {
		t.Errorf("ready_to_start count %d sum %v", rts.GetSampleCount(), rts.GetSampleSum())
	}

	// Container steps.
	run := series(t, mfs, "readyline_container_phase_duration_seconds",
		map[string]string{"namespace": "default", "container_kind": "init", "phase": "run"}).GetHistogram()
	if run.GetSampleCount() != 2 || !near(run.GetSampleSum(), 2*5.013) {
		t.Errorf("init run count %d sum %v", run.GetSampleCount(), run.GetSampleSum())
	}
	ps := series(t, mfs, "readyline_container_phase_duration_seconds",
		map[string]string{"namespace": "default", "container_kind": "container", "phase": "post_start"}).GetHistogram()
	if ps.GetSampleCount() != 1 || !near(ps.GetSampleSum(), 15.013) {
		t.Errorf("post_start count %d sum %v", ps.GetSampleCount(), ps.GetSampleSum())
	}
	sp := series(t, mfs, "readyline_container_phase_duration_seconds",
		map[string]string{"namespace": "default", "container_kind": "sidecar", "phase": "startup_probe"}).GetHistogram()
	if sp.GetSampleCount() != 2 || !near(sp.GetSampleSum(), 2*5.039) {
		t.Errorf("sidecar startup_probe count %d sum %v", sp.GetSampleCount(), sp.GetSampleSum())
	}

	// Counters.
	if v := series(t, mfs, "readyline_pod_starts_total", map[string]string{"namespace": "default", "outcome": "ready"}).GetCounter().GetValue(); v != 3 {
		t.Errorf("starts ready = %v", v)
	}
	if v := series(t, mfs, "readyline_pod_starts_total", map[string]string{"namespace": "demo", "outcome": "failed"}).GetCounter().GetValue(); v != 1 {
		t.Errorf("starts failed = %v", v)
	}
	if v := series(t, mfs, "readyline_events_dropped_total", map[string]string{"source": "collector", "reason": "unknown_pod"}).GetCounter().GetValue(); v != 5 {
		t.Errorf("dropped = %v", v)
	}
	if v := series(t, mfs, "readyline_export_failures_total", map[string]string{}).GetCounter().GetValue(); v != 1 {
		t.Errorf("export failures = %v", v)
	}
	if _, ok := mfs["go_goroutines"]; !ok {
		t.Error("no Go runtime metrics")
	}
}

func TestMetricsDropCounterFunc(t *testing.T) {
	m, err := NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	var dc DropCounter = m
	f := m.AddDropped // what a package that must not import exporter takes
	dc.AddDropped("correlator", "late_event", 1)
	f("correlator", "late_event", 1)
	mfs := scrape(t, m.Handler(nil))
	if v := series(t, mfs, "readyline_events_dropped_total", map[string]string{"source": "correlator", "reason": "late_event"}).GetCounter().GetValue(); v != 2 {
		t.Errorf("dropped = %v", v)
	}
}

func TestHealthz(t *testing.T) {
	m, err := NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	var healthErr error
	srv := httptest.NewServer(m.Handler(func() error { return healthErr }))
	defer srv.Close()
	get := func() (int, string) {
		resp, err := http.Get(srv.URL + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get(); code != http.StatusOK || body != "ok\n" {
		t.Errorf("healthy: %d %q", code, body)
	}
	healthErr = errors.New("pod watch not synced")
	if code, body := get(); code != http.StatusServiceUnavailable || !strings.Contains(body, "pod watch not synced") {
		t.Errorf("unhealthy: %d %q", code, body)
	}

	// Without a health func (readyline run serves its health elsewhere)
	// there is no /healthz beside /metrics.
	rec := httptest.NewRecorder()
	m.Handler(nil).ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("/healthz without a health func: %d %q, want 404", rec.Code, rec.Body.String())
	}
}

// TestMetricsExportQueue: the queue gauges follow a TraceExporter through an
// outage, and its failed requests and queue_bytes drops are counted.
func TestMetricsExportQueue(t *testing.T) {
	m, err := NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := scrape(t, m.Handler(nil))["readyline_export_queue_bytes"]; ok {
		t.Error("queue gauges before WatchExportQueue")
	}
	size := traceBytes(t)
	out := &outageExporter{down: true}
	clock := newFakeClock()
	e, stop := startExporter(t, TraceConfig{QueueBytes: 3 * size, Observer: m}, out, clock, nil)
	m.WatchExportQueue(e.Queued)
	var w pendingWait
	for i := range 5 {
		tl := lifecycleDemo()
		tl.Pod.UID = newUUID(t)
		if err := e.Export(context.Background(), tl); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			w = clock.next(t) // the first request failed
		}
	}
	waitBuilt(t, e, 5)
	mfs := scrape(t, m.Handler(nil))
	gauge := func(mfs map[string]*dto.MetricFamily, name string) float64 {
		return series(t, mfs, name, map[string]string{}).GetGauge().GetValue()
	}
	if b, n := gauge(mfs, "readyline_export_queue_bytes"), gauge(mfs, "readyline_export_queue_traces"); b != float64(3*size) || n != 3 {
		t.Errorf("queue gauges in the outage: %v bytes, %v traces; want %d, 3", b, n, 3*size)
	}
	if v := series(t, mfs, "readyline_events_dropped_total", map[string]string{"source": DropSourceTraces, "reason": DropReasonQueueBytes}).GetCounter().GetValue(); v != 2 {
		t.Errorf("queue_bytes drops = %v, want 2", v)
	}
	if v := series(t, mfs, "readyline_export_failures_total", map[string]string{}).GetCounter().GetValue(); v != 1 {
		t.Errorf("export failures = %v, want 1", v)
	}
	out.setDown(false)
	w.fire <- time.Time{}
	flush(t, e)
	mfs = scrape(t, m.Handler(nil))
	if b, n := gauge(mfs, "readyline_export_queue_bytes"), gauge(mfs, "readyline_export_queue_traces"); b != 0 || n != 0 {
		t.Errorf("queue gauges after the outage: %v bytes, %v traces; want 0", b, n)
	}
	if err := stop(); err != nil {
		t.Error(err)
	}
}

// TestMetricsRings: readyline_ring_buffer_size_bytes and _peak_bytes say,
// per source, what WatchRings returns at the scrape.
func TestMetricsRings(t *testing.T) {
	m, err := NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := scrape(t, m.Handler(nil))["readyline_ring_buffer_peak_bytes"]; ok {
		t.Error("ring gauges before WatchRings")
	}
	peak := uint64(4096)
	m.WatchRings(func() []Ring {
		return []Ring{{Source: "process", Size: 1 << 20, Peak: peak}, {Source: "tcp", Size: 1 << 18, Peak: 0}}
	})
	for _, want := range []uint64{4096, 300000} {
		peak = want
		mfs := scrape(t, m.Handler(nil))
		got := map[string][2]float64{}
		for _, fam := range []string{"readyline_ring_buffer_size_bytes", "readyline_ring_buffer_peak_bytes"} {
			for _, s := range mfs[fam].GetMetric() {
				v := got[labels(s)["source"]]
				if fam == "readyline_ring_buffer_size_bytes" {
					v[0] = s.GetGauge().GetValue()
				} else {
					v[1] = s.GetGauge().GetValue()
				}
				got[labels(s)["source"]] = v
			}
		}
		if got["process"] != [2]float64{1 << 20, float64(want)} || got["tcp"] != [2]float64{1 << 18, 0} || len(got) != 2 {
			t.Errorf("rings %v, want process [1Mi %d] and tcp [256Ki 0]", got, want)
		}
	}
}
