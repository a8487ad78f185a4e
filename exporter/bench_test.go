package exporter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"runtime"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// discardExporter accepts and forgets spans.
type discardExporter struct{}

func (discardExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardExporter) Shutdown(context.Context) error                             { return nil }

// BenchmarkBuildSpans measures turning one lifecycle-demo timeline into its
// 21 spans on the SDK (no export).
func BenchmarkBuildSpans(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithIDGenerator(podIDGenerator{}))
	sb := spanBuilder{tracer: tp.Tracer("bench")}
	tl := lifecycleDemo()
	ctx := context.Background()
	b.ReportAllocs()
	spans := 0
	for b.Loop() {
		spans = sb.emit(ctx, tl)
	}
	b.ReportMetric(float64(spans), "spans/timeline")
}

// BenchmarkExportTimeline measures the whole path of one timeline: Export,
// span building in Run, batching and the (discarding) exporter.
func BenchmarkExportTimeline(b *testing.B) {
	e, err := NewTraceExporter(TraceConfig{Exporter: discardExporter{}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	tl := lifecycleDemo()
	b.ReportAllocs()
	for b.Loop() {
		for {
			err := e.Export(ctx, tl)
			if !errors.Is(err, ErrQueueFull) {
				if err != nil {
					b.Fatal(err)
				}
				break
			}
			runtime.Gosched() // the benchmark outruns Run: let it catch up
		}
	}
	if err := e.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	st := e.Stats()
	b.ReportMetric(float64(st.Spans)/float64(st.Timelines), "spans/timeline")
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}

// BenchmarkOTLPSize measures sizing one lifecycle-demo trace for the export
// queue, which build does once per trace.
func BenchmarkOTLPSize(b *testing.B) {
	ended := &endedSpans{}
	tp := sdktrace.NewTracerProvider(sdktrace.WithIDGenerator(podIDGenerator{}), sdktrace.WithSpanProcessor(ended))
	sb := spanBuilder{tracer: tp.Tracer("bench")}
	sb.emit(context.Background(), lifecycleDemo())
	spans := ended.take()
	b.ReportAllocs()
	var n int64
	for b.Loop() {
		n = otlpSize(spans)
	}
	b.ReportMetric(float64(n), "bytes/trace")
}

// BenchmarkStoreAdd: the cost of keeping a finished timeline for the API,
// and what it holds (stored-B, against its JSON's json-B).
func BenchmarkStoreAdd(b *testing.B) {
	s := NewStore(StoreLimits{Timelines: 256})
	tl := lifecycleDemo()
	js, _ := json.Marshal(tl)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		tl := lifecycleDemo()
		tl.Pod.UID = fmt.Sprint("uid-", i)
		i++
		s.Add(tl)
	}
	b.ReportMetric(float64(s.Bytes())/float64(s.Len()), "stored-B")
	b.ReportMetric(float64(len(js)), "json-B")
}

// BenchmarkAnswerTimeline is the API's answer about one start, as a
// program asks (compact) and as curl does (indented, pretty).
func BenchmarkAnswerTimeline(b *testing.B) {
	tl := lifecycleDemo()
	for _, tc := range []struct{ name, agent string }{{"compact", "kubectl-readyline/v1"}, {"pretty", "curl/8.5.0"}} {
		b.Run(tc.name, func(b *testing.B) {
			r := httptest.NewRequest("GET", "/api/v1/timelines/default/lifecycle-demo", nil)
			r.Header.Set("User-Agent", tc.agent)
			b.ReportAllocs()
			var n int
			for b.Loop() {
				w := httptest.NewRecorder()
				writeJSON(w, r, slog.New(slog.DiscardHandler), tl)
				n = w.Body.Len()
			}
			b.ReportMetric(float64(n), "bytes")
		})
	}
}
