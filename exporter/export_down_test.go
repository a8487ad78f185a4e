package exporter

import (
	"bytes"
	"context"
	"errors"
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
// drops are counted once the queues are full, failed requests are counted
// and logged once, and Run still returns promptly.
func TestExportEndpointDown(t *testing.T) {
	for _, tc := range []struct{ name, protocol, scheme string }{
		{"grpc", ProtocolGRPC, ""},
		{"http", ProtocolHTTP, "http://"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs syncBuffer
			logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
			obs := &fakeObserver{}
			e, err := NewTraceExporter(TraceConfig{
				Endpoint: tc.scheme + closedPort(t), Protocol: tc.protocol, Insecure: true,
				QueueSize: 8, MaxQueueSpans: 64, MaxBatchSpans: 32,
				BatchTimeout: 20 * time.Millisecond, ExportTimeout: 300 * time.Millisecond,
				ShutdownTimeout: 500 * time.Millisecond, Observer: obs,
			}, logger)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- e.Run(ctx) }()

			const n = 2000
			var slowest time.Duration
			full := 0
			start := time.Now()
			for i := range n {
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
					time.Sleep(5 * time.Millisecond) // let some batches go out and fail
				}
			}
			t.Logf("%d exports in %v, slowest %v, %d dropped (queue full)", n, time.Since(start), slowest, full)
			if slowest > 50*time.Millisecond {
				t.Errorf("an Export call took %v: it must not block", slowest)
			}
			if full == 0 || obs.droppedFor(DropSourceTraces+"/"+DropReasonQueue) != full || e.Stats().Dropped < uint64(full) {
				t.Errorf("queue-full drops: returned %d, observer %v, stats %+v", full, obs.dropped, e.Stats())
			}

			deadline := time.Now().Add(10 * time.Second)
			for obs.failures.Load() < 2 && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if obs.failures.Load() < 2 || e.Stats().FailedExports < 2 || e.Stats().ExportedSpans != 0 {
				t.Fatalf("failures: observer %d, stats %+v", obs.failures.Load(), e.Stats())
			}

			t.Logf("%d failed exports after %v", obs.failures.Load(), time.Since(start))
			stopping := time.Now()
			cancel()
			defer func() { t.Logf("Run returned %v after cancel", time.Since(stopping)) }()
			select {
			case <-done:
			case <-time.After(1500 * time.Millisecond):
				t.Fatal("Run did not return within ShutdownTimeout (500 ms) + 1 s of cancellation")
			}
			// Every timeline was either turned into spans or counted as dropped.
			if st := e.Stats(); st.Timelines+st.Dropped != n {
				t.Errorf("stats %+v: built + dropped = %d, want %d", st, st.Timelines+st.Dropped, n)
			}
			if err := e.Export(context.Background(), lifecycleDemo()); !errors.Is(err, ErrClosed) {
				t.Errorf("Export after Run: %v, want ErrClosed", err)
			}

			out := logs.String()
			if c := strings.Count(out, "trace export failing"); c != 1 {
				t.Errorf("%d 'trace export failing' warnings for one outage, want 1:\n%s", c, out)
			}
			if c := strings.Count(out, "dropping pod start traces"); c < 1 {
				t.Errorf("no warning about dropped traces:\n%s", out)
			}
			if strings.Count(out, "level=WARN") > 10 {
				t.Errorf("too many warnings:\n%s", out)
			}
		})
	}
}

// TestExportRecovers: failures, then a working exporter: one Warn, one Info.
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
		if err := e.Export(ctx, lifecycleDemo()); err != nil {
			t.Fatal(err)
		}
		if err := e.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	flaky.fail.Store(false)
	if err := e.Export(ctx, lifecycleDemo()); err != nil {
		t.Fatal(err)
	}
	if err := e.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	st := e.Stats()
	if st.FailedExports != 3 || st.FailedSpans != 63 || st.ExportedSpans != 21 {
		t.Errorf("stats %+v", st)
	}
	out := logs.String()
	if strings.Count(out, "trace export failing") != 1 || strings.Count(out, "trace export recovered") != 1 ||
		!strings.Contains(out, "failed_exports=3") {
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
