package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/readyline/readyline/collector"
	"github.com/readyline/readyline/collector/event"
	"github.com/readyline/readyline/exporter"
)

// serveHealth serves healthHandler(check) on a loopback port as the daemon
// does, until the test ends, and returns its address.
func serveHealth(t *testing.T, check func() error) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serveHTTP(ctx, newHTTPServer(healthHandler(check), healthHTTPLimits), ln, healthHTTPLimits)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("health server: %v", err)
		}
	})
	return ln.Addr().String()
}

// TestHealthCommand: `readyline health` (the probes' command) exits 0
// while the daemon says ok, 1 with the daemon's reason when it does not,
// and 1 when nothing answers; it reads the address from the environment
// twin the DaemonSet's ConfigMap would set.
func TestHealthCommand(t *testing.T) {
	var unhealthy atomic.Pointer[error]
	addr := serveHealth(t, func() error {
		if err := unhealthy.Load(); err != nil {
			return *err
		}
		return nil
	})
	t.Setenv("READYLINE_HEALTH_ADDR", addr)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"health"}, &stdout, &stderr); code != 0 || stdout.String() != "ok\n" {
		t.Errorf("healthy: exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
	stall := errors.New("the correlator loop has not come round for 31s")
	unhealthy.Store(&stall)
	stdout.Reset()
	if code := run([]string{"health"}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "503") ||
		!strings.Contains(stderr.String(), "has not come round for 31s") {
		t.Errorf("unhealthy: exit %d, stderr %q; want 1 and the daemon's reason", code, stderr.String())
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := ln.Addr().String()
	ln.Close()
	stderr.Reset()
	if code := run([]string{"health", "--health-addr", closedAddr}, io.Discard, &stderr); code != 1 {
		t.Errorf("no daemon: exit %d, stderr %q; want 1", code, stderr.String())
	}
}

func TestHealthURL(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:9466":                  "http://127.0.0.1:9466/healthz",
		":9466":                           "http://127.0.0.1:9466/healthz",
		"0.0.0.0:9466":                    "http://127.0.0.1:9466/healthz",
		"[::]:9466":                       "http://[::1]:9466/healthz",
		"[::1]:9466":                      "http://[::1]:9466/healthz",
		"unix:/run/readyline/health.sock": "http://readyline/healthz",
	} {
		if got, err := healthURL(addr); err != nil || got != want {
			t.Errorf("healthURL(%q) = %q, %v; want %q", addr, got, err, want)
		}
	}
	if _, err := healthURL("9466"); err == nil {
		t.Error("healthURL(\"9466\"): no error")
	}
}

// TestHealthFailsWhileCorrelatorStalls: the daemon's health (what
// `readyline health` reports) fails while its correlator loop is stuck in
// one tick (a source's loss count that does not return), and is ok again
// once the loop comes round.
func TestHealthFailsWhileCorrelatorStalls(t *testing.T) {
	logger := slog.New(slog.DiscardHandler)
	metrics, err := exporter.NewMetrics(logger)
	if err != nil {
		t.Fatal(err)
	}
	traces, err := exporter.NewTraceExporter(exporter.TraceConfig{Exporter: keptSpans{tracetest.NewInMemoryExporter()}, ShutdownTimeout: time.Second}, logger)
	if err != nil {
		t.Fatal(err)
	}
	var stuck atomic.Bool
	release := make(chan struct{})
	d := &daemon{logger: logger, events: make(chan event.Event, 16), metrics: metrics, traces: traces,
		store: exporter.NewStore(exporter.StoreLimits{Timelines: 8}),
		losses: &lossCounter{sources: []lossSource{lossesOf{event.SourceProcess, func() []collector.Loss {
			if stuck.Load() {
				<-release
			}
			return nil
		}}}}}
	d.watchdog = newLoopWatchdog(200*time.Millisecond, func() int { return len(d.events) })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- d.pipeline(ctx, cancel, func(ctx context.Context, g *group) {})
	}()

	// eventually waits up to a minute for health to say what want says.
	eventually := func(what string, want func(error) bool) error {
		var err error
		for stop := time.Now().Add(time.Minute); time.Now().Before(stop); time.Sleep(20 * time.Millisecond) {
			if err = d.health(); want(err) {
				return err
			}
		}
		t.Fatalf("health never %s within a minute: last %v", what, err)
		return nil
	}
	eventually("ok while the loop runs", func(err error) bool { return err == nil })
	stuck.Store(true) // the next tick's loss poll does not return
	err = eventually("failed with the loop stuck", func(err error) bool { return err != nil })
	if !strings.Contains(err.Error(), "correlator loop has not come round") {
		t.Errorf("health while stuck: %v", err)
	}
	stuck.Store(false)
	close(release)
	eventually("ok again once the loop came round", func(err error) bool { return err == nil })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
