package exporter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// fakeObserver counts what a TraceExporter reports.
type fakeObserver struct {
	failures atomic.Int64
	mu       sync.Mutex
	dropped  map[string]int
}

func (f *fakeObserver) ExportFailed() { f.failures.Add(1) }

func (f *fakeObserver) AddDropped(source, reason string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dropped == nil {
		f.dropped = map[string]int{}
	}
	f.dropped[source+"/"+reason] += n
}

func (f *fakeObserver) droppedFor(key string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.dropped[key]
}

// syncBuffer is a bytes.Buffer safe for the logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// closedPort returns a loopback port nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestExportEndpointDown exports to a closed port: Export never blocks,
// built traces wait in the export queue within its byte bound, the oldest
// dropped and counted, failed requests are counted and logged once, and Run
// still returns promptly, counting what it could not send.
func TestExportEndpointDown(t *testing.T) {
	for _, tc := range []struct{ name, protocol, scheme string }{
		{"grpc", ProtocolGRPC, ""},
		{"http", ProtocolHTTP, "http://"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs syncBuffer
			logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
			obs := &fakeObserver{}
			const budget, queueSize = 64 << 10, 8
			e, err := NewTraceExporter(TraceConfig{
				Endpoint: tc.scheme + closedPort(t), Protocol: tc.protocol, Insecure: true,
				QueueSize: queueSize, QueueBytes: budget, MaxBatchSpans: 32,
				ExportTimeout: 300 * time.Millisecond, RetryInitial: 20 * time.Millisecond, RetryMax: 100 * time.Millisecond,
				ShutdownTimeout: 500 * time.Millisecond, Observer: obs,
			}, logger)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			const n = 2000
			full := 0
			start := time.Now()
			// Export never waits for the exporter: with nothing reading
			// its queue (Run not started yet), the calls past QueueSize
			// return ErrQueueFull instead of waiting for room (an Export
			// that blocked would hang the test here). No clock involved:
			// the scheduler's delays cannot fail it.
			const pre = queueSize + 3
			for i := range pre {
				tl := lifecycleDemo()
				tl.Pod.UID = newUUID(t)
				err := e.Export(ctx, tl)
				if i < queueSize && err != nil || i >= queueSize && !errors.Is(err, ErrQueueFull) {
					t.Fatalf("export %d of %d with no reader and room for %d: %v", i, pre, queueSize, err)
				}
				if err != nil {
					full++
				}
			}
			done := make(chan error, 1)
			go func() { done <- e.Run(ctx) }()

			var slowest time.Duration
			for i := pre; i < n; i++ {
				tl := lifecycleDemo()
				tl.Pod.UID = newUUID(t)
				t0 := time.Now()
				err := e.Export(ctx, tl)
				slowest = max(slowest, time.Since(t0))
				switch {
				case errors.Is(err, ErrQueueFull):
					full++
				case err != nil:
					t.Fatalf("export %d: %v", i, err)
				}
				if i%100 == 0 {
					time.Sleep(5 * time.Millisecond) // let some requests go out and fail
				}
			}
			t.Logf("%d exports in %v, slowest %v (told, not judged: a busy machine may preempt any call), %d dropped (timeline queue full)",
				n, time.Since(start), slowest, full)
			if obs.droppedFor(DropSourceTraces+"/"+DropReasonQueue) != full || e.Stats().Dropped != uint64(full) {
				t.Errorf("timeline-queue drops: returned %d, observer %v, stats %+v", full, obs.dropped, e.Stats())
			}

			deadline := time.Now().Add(10 * time.Second)
			for (obs.failures.Load() < 2 || e.Stats().Timelines+e.Stats().Dropped < n) && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			st := e.Stats()
			if obs.failures.Load() < 2 || st.FailedExports < 2 || st.ExportedSpans != 0 {
				t.Fatalf("failures: observer %d, stats %+v", obs.failures.Load(), st)
			}
			if st.QueuedBytes > budget || st.QueuedTraces == 0 {
				t.Errorf("queue holds %d traces, %d bytes: want some, within %d", st.QueuedTraces, st.QueuedBytes, budget)
			}
			bytesDrops := obs.droppedFor(DropSourceTraces + "/" + DropReasonQueueBytes)
			if bytesDrops == 0 || uint64(bytesDrops) != st.DroppedTraces {
				t.Errorf("queue_bytes drops: observer %d, stats %+v", bytesDrops, st)
			}

			t.Logf("%d failed exports after %v; stats %+v", obs.failures.Load(), time.Since(start), st)
			stopping := time.Now()
			cancel()
			var runErr error
			// That Run gave up at ShutdownTimeout shows in the shutdown
			// drops below; the wait only tells a return from a hang.
			select {
			case runErr = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("Run did not return within 30 s of cancellation (ShutdownTimeout is 500 ms)")
			}
			t.Logf("Run returned after %v of cancel: %v", time.Since(stopping), runErr)
			st = e.Stats()
			// Every timeline was built or dropped, and every trace built
			// was dropped: the endpoint never answered.
			if st.Timelines+st.Dropped != n || st.DroppedTraces != st.Timelines || st.QueuedTraces != 0 {
				t.Errorf("stats %+v: want built + dropped = %d, every trace built dropped", st, n)
			}
			lost := obs.droppedFor(DropSourceTraces + "/" + DropReasonShutdown)
			if lost == 0 || uint64(lost+bytesDrops) != st.DroppedTraces {
				t.Errorf("shutdown drops %d + queue_bytes %d, stats %+v", lost, bytesDrops, st)
			}
			if runErr == nil || !strings.Contains(runErr.Error(), "traces not sent") {
				t.Errorf("Run: %v, want it to say traces were not sent", runErr)
			}
			if err := e.Export(context.Background(), lifecycleDemo()); !errors.Is(err, ErrClosed) {
				t.Errorf("Export after Run: %v, want ErrClosed", err)
			}

			out := logs.String()
			if c := strings.Count(out, "trace export failing"); c != 1 {
				t.Errorf("%d 'trace export failing' warnings for one outage, want 1:\n%s", c, out)
			}
			if c := strings.Count(out, "export queue full: dropping the oldest"); c != 1 {
				t.Errorf("%d warnings about queue_bytes drops for one outage, want 1:\n%s", c, out)
			}
			if strings.Count(out, "level=WARN") > 10 {
				t.Errorf("too many warnings:\n%s", out)
			}
		})
	}
}

// TestExportRecovers: failures, then a working exporter: the traces that
// waited are sent, each once, with one Warn and one Info.
func TestExportRecovers(t *testing.T) {
	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	flaky := &flakyExporter{InMemoryExporter: tracetest.NewInMemoryExporter()}
	flaky.fail.Store(true)
	e, err := NewTraceExporter(TraceConfig{Exporter: flaky}, logger)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go e.Run(ctx)
	for range 3 {
		tl := lifecycleDemo()
		tl.Pod.UID = newUUID(t)
		if err := e.Export(ctx, tl); err != nil {
			t.Fatal(err)
		}
	}
	for e.Stats().FailedExports == 0 || e.Stats().Timelines < 3 {
		time.Sleep(time.Millisecond)
	}
	flaky.fail.Store(false)
	if err := e.Export(ctx, lifecycleDemo()); err != nil {
		t.Fatal(err)
	}
	fctx, fcancel := context.WithTimeout(ctx, 10*time.Second)
	defer fcancel()
	if err := e.Flush(fctx); err != nil { // cuts the back-off short
		t.Fatal(err)
	}
	st := e.Stats()
	if st.ExportedTraces != 4 || st.ExportedSpans != 84 || st.FailedExports == 0 || st.FailedSpans%21 != 0 || st.QueuedTraces != 0 {
		t.Errorf("stats %+v", st)
	}
	ids := map[string]int{}
	for _, s := range flaky.GetSpans() {
		ids[s.SpanContext.SpanID().String()]++
	}
	if len(ids) != 84 || len(flaky.GetSpans()) != 84 {
		t.Errorf("%d spans, %d distinct span ids: want 84 each, every span once", len(flaky.GetSpans()), len(ids))
	}
	out := logs.String()
	if strings.Count(out, "trace export failing") != 1 || strings.Count(out, "trace export recovered") != 1 ||
		!strings.Contains(out, fmt.Sprintf("failed_exports=%d", st.FailedExports)) {
		t.Errorf("logs:\n%s", out)
	}
}

type flakyExporter struct {
	*tracetest.InMemoryExporter
	fail atomic.Bool
}

func (f *flakyExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if f.fail.Load() {
		return errors.New("connection refused")
	}
	return f.InMemoryExporter.ExportSpans(ctx, spans)
}
