package exporter

import (
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"

	rlevent "github.com/readyline/readyline/collector/event"
	"github.com/readyline/readyline/correlator"
)

// TestTraceMarksBlindSources: a start during which sources were blind says
// so on its root span: a line per source in readyline.missing, the sources
// in readyline.blind, and an event "blind <source>" at its first blind
// moment inside the start.
func TestTraceMarksBlindSources(t *testing.T) {
	tl := blindSources()
	spans, _ := exportToMemory(t, TraceConfig{}, tl)
	st := newSpanTree(t, spans)
	wantAttrs(t, st.root, map[string]string{
		"readyline.blind": "cri_calls,process,pod_watch",
		"readyline.missing": `["cri_calls: kubelet_restarted 01:51:15.000–01:51:19.200: kubelet calls in this window are not seen",` +
			`"process: ring_full 01:51:27.100–01:51:28.100, ring_full 01:51:40.000–01:51:41.000 (150 records lost): process execs and exits in these windows may be missing",` +
			`"pod_watch: disconnected since 01:51:44.000 (still blind): pod updates in this window are seen late or not at all"]`,
	})
	events := map[string]time.Time{}
	for _, ev := range st.root.Events {
		if !strings.HasPrefix(ev.Name, "blind ") {
			continue
		}
		events[ev.Name] = ev.Time
		attrs := attrMap(ev.Attributes)
		if ev.Name == "blind process" && (attrs[AttrBlindLost].AsInt64() != 150 || attrs[AttrBlindReason].AsString() != "ring_full" ||
			!strings.HasPrefix(attrs[AttrBlindMessage].AsString(), "process: ring_full")) {
			t.Errorf("event %s: %v", ev.Name, ev.Attributes)
		}
	}
	// cri_calls was blind before the start: its event is at the start.
	for name, want := range map[string]time.Time{"blind cri_calls": t0, "blind process": at(9100), "blind pod_watch": at(26000)} {
		if got, ok := events[name]; !ok || !got.Equal(want) {
			t.Errorf("event %s at %v (found %v), want at %v", name, got.Sub(t0), ok, want.Sub(t0))
		}
	}

	// A start seen whole by every source has none of it.
	spans, _ = exportToMemory(t, TraceConfig{}, lifecycleDemo())
	st = newSpanTree(t, spans)
	for _, k := range []attribute.Key{AttrBlind, AttrMissing} {
		if _, ok := attrMap(st.root.Attributes)[k]; ok {
			t.Errorf("lifecycle-demo carries %s", k)
		}
	}
}

// TestTraceBlindAfterTheReport: the completion of a start reported at its
// deadline tells the windows the report could not: those still open at the
// deadline or after it.
func TestTraceBlindAfterTheReport(t *testing.T) {
	report, done := reportedAndCompleted() // reported at 5 s
	report.Gaps = []correlator.SourceGap{{Source: rlevent.SourceRuntime, Windows: []correlator.BlindWindow{
		{Reason: rlevent.ReasonDisconnected, From: at(1000), To: at(2000)},
		{Reason: rlevent.ReasonDisconnected, From: at(4000)},
	}}}
	done.Gaps = []correlator.SourceGap{{Source: rlevent.SourceRuntime, Windows: []correlator.BlindWindow{
		{Reason: rlevent.ReasonDisconnected, From: at(1000), To: at(2000)},
		{Reason: rlevent.ReasonDisconnected, From: at(4000), To: at(7000)},
		{Reason: rlevent.ReasonStreamBehind, From: at(20000), To: at(20100), Lost: 3},
	}}}
	spans, _ := exportToMemory(t, TraceConfig{}, report, done)
	st := newSpanTree(t, spans)
	wantAttrs(t, st.root, map[string]string{
		"readyline.blind": "cri",
		"readyline.missing": `["cri: disconnected 01:51:19.000–01:51:20.000, disconnected since 01:51:22.000 (still blind): ` +
			`runtime state changes in these windows are seen late or not at all"]`,
	})
	c := st.child(st.root, SpanPodStartupCompleted)
	wantAttrs(t, c, map[string]string{
		"readyline.blind": "cri",
		"readyline.missing": `["cri: disconnected 01:51:22.000–01:51:25.000, stream_behind 01:51:38.000–01:51:38.100 (3 records lost): ` +
			`runtime state changes in these windows are seen late or not at all"]`,
	})
	for _, ev := range c.Events {
		if ev.Name == "blind cri" && !ev.Time.Equal(done.ReportedAt) {
			t.Errorf("blind cri on the completion at %v, want at the deadline (the window began before)", ev.Time.Sub(t0))
		}
	}
}

// TestMetricsSourceUp: readyline_source_up follows the sources' statuses:
// 0 until a source says Up, 0 from a Down to the next Up, and for
// SourceLossHold after a loss told after the fact.
func TestMetricsSourceUp(t *testing.T) {
	m, err := NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	m.sources.now = func() time.Time { return now }
	gauge := func(source string) float64 {
		t.Helper()
		return series(t, scrape(t, m.Handler(nil)), "readyline_source_up", map[string]string{"source": source}).GetGauge().GetValue()
	}
	m.ExpectSources(rlevent.SourceProcess, rlevent.SourceKubeletCalls, rlevent.SourcePodWatch)
	for _, s := range []string{rlevent.SourceProcess, rlevent.SourceKubeletCalls, rlevent.SourcePodWatch} {
		if v := gauge(s); v != 0 {
			t.Errorf("%s before its first status: %v, want 0", s, v)
		}
	}
	m.ObserveSource(&rlevent.SourceStatus{Time: now, Source: rlevent.SourceProcess, Up: true})
	m.ObserveSource(&rlevent.SourceStatus{Time: now, Source: rlevent.SourcePodWatch, Up: true})
	if gauge(rlevent.SourceProcess) != 1 || gauge(rlevent.SourcePodWatch) != 1 || gauge(rlevent.SourceKubeletCalls) != 0 {
		t.Error("after Up: want process and pod_watch 1, cri_calls (never up) 0")
	}
	m.ObserveSource(&rlevent.SourceStatus{Time: now, Source: rlevent.SourcePodWatch, Reason: rlevent.ReasonDisconnected})
	if v := gauge(rlevent.SourcePodWatch); v != 0 {
		t.Errorf("pod_watch down: %v", v)
	}
	// A ring loss, told after the fact: 0 for SourceLossHold, then 1.
	m.ObserveSource(&rlevent.SourceStatus{Time: now, Source: rlevent.SourceProcess, Since: now.Add(-time.Second), Reason: rlevent.ReasonRingFull, Lost: 5})
	m.ObserveSource(&rlevent.SourceStatus{Time: now, Source: rlevent.SourceProcess, Up: true})
	if v := gauge(rlevent.SourceProcess); v != 0 {
		t.Errorf("process just after a ring loss: %v, want 0", v)
	}
	now = now.Add(SourceLossHold)
	if v := gauge(rlevent.SourceProcess); v != 1 {
		t.Errorf("process %v after a ring loss: %v, want 1", SourceLossHold, v)
	}
}

// TestMetricsDroppedSeriesAtZero: AddDropped with n = 0 makes the series
// exist, so that the first real drop is an increase rate() sees.
func TestMetricsDroppedSeriesAtZero(t *testing.T) {
	m, err := NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	m.AddDropped(rlevent.SourceProcess, rlevent.ReasonRingFull, 0)
	labels := map[string]string{"source": rlevent.SourceProcess, "reason": rlevent.ReasonRingFull}
	if v := series(t, scrape(t, m.Handler(nil)), "readyline_events_dropped_total", labels).GetCounter().GetValue(); v != 0 {
		t.Errorf("%v, want a series at 0", v)
	}
	m.AddDropped(rlevent.SourceProcess, rlevent.ReasonRingFull, -3)
	m.AddDropped(rlevent.SourceProcess, rlevent.ReasonRingFull, 4)
	if v := series(t, scrape(t, m.Handler(nil)), "readyline_events_dropped_total", labels).GetCounter().GetValue(); v != 4 {
		t.Errorf("%v, want 4", v)
	}
}
