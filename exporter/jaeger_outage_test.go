package exporter

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/deploy/e2e/jaeger"
)

// jaegerBinary returns the Jaeger v2 that deploy/node builds, as `node.sh
// tool --built jaeger` reports it. Without it the test skips loudly, or
// fails when READYLINE_REQUIRE_JAEGER=1 or READYLINE_REQUIRE_PRIVILEGED=1.
func jaegerBinary(t *testing.T) string {
	t.Helper()
	// go test runs in this package's directory.
	out, err := exec.Command("../deploy/node/node.sh", "tool", "--built", "jaeger").Output()
	if err != nil {
		var stderr []byte
		if exit, ok := err.(*exec.ExitError); ok {
			stderr = exit.Stderr
		}
		msg := fmt.Sprintf("JAEGER OUTAGE TEST NOT RUN: node.sh tool --built jaeger: %v: %s (deploy/node builds it: 'deploy/node/node.sh tool jaeger')", err, strings.TrimSpace(string(stderr)))
		if os.Getenv("READYLINE_REQUIRE_JAEGER") == "1" || os.Getenv("READYLINE_REQUIRE_PRIVILEGED") == "1" {
			t.Fatal(msg + " (failing, not skipping: READYLINE_REQUIRE_JAEGER or READYLINE_REQUIRE_PRIVILEGED is set)")
		}
		t.Skip(msg)
	}
	return strings.TrimSpace(string(out))
}

// jaegerConfig is deploy/node/config/jaeger.yaml on ports of the test's
// own: in-memory storage, every listener on loopback, no telemetry port.
const jaegerConfig = `service:
  extensions: [jaeger_storage, jaeger_query, healthcheckv2]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: info
extensions:
  healthcheckv2:
    use_v2: true
    http:
      endpoint: 127.0.0.1:{{health}}
  jaeger_query:
    storage:
      traces: memstore
    enable_tracing: false
    http:
      endpoint: 127.0.0.1:{{query}}
    grpc:
      endpoint: 127.0.0.1:{{querygrpc}}
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 100000
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:{{grpc}}
      http:
        endpoint: 127.0.0.1:{{http}}
processors:
  batch:
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`

// testJaeger is a Jaeger of the test's own, on free loopback ports.
type testJaeger struct {
	bin, dir          string
	grpc, http, query string // host:port
	cmd               *exec.Cmd
	logPath           string
	configPath        string
	api               *jaeger.Client // its query API
}

func newTestJaeger(t *testing.T) *testJaeger {
	j := &testJaeger{bin: jaegerBinary(t), dir: t.TempDir()}
	ports := map[string]string{}
	for _, name := range []string{"health", "query", "querygrpc", "grpc", "http"} {
		ports[name] = strconv.Itoa(freePort(t))
	}
	cfg := jaegerConfig
	for name, port := range ports {
		cfg = strings.ReplaceAll(cfg, "{{"+name+"}}", port)
	}
	j.configPath = filepath.Join(j.dir, "jaeger.yaml")
	if err := os.WriteFile(j.configPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	j.grpc, j.http = "127.0.0.1:"+ports["grpc"], "127.0.0.1:"+ports["http"]
	j.api = jaeger.NewClient("http://127.0.0.1:" + ports["query"])
	j.logPath = filepath.Join(j.dir, "jaeger.log")
	t.Cleanup(func() {
		j.stop()
		if t.Failed() {
			b, _ := os.ReadFile(j.logPath)
			t.Logf("jaeger log:\n%s", b)
		}
	})
	return j
}

// freePort returns a loopback port nothing listened on a moment ago, below
// the kernel's ephemeral range: Jaeger binds it later (after the outage),
// and a port from the ephemeral range (what listening on port 0 gives) can
// meanwhile be taken as the source port of any connection on the machine.
func freePort(t *testing.T) int {
	t.Helper()
	lo := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > 21000 {
				lo = n
			}
		}
	}
	for range 100 {
		port := 20000 + rand.IntN(lo-20000) // above the well-known services' ports
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue
		}
		l.Close()
		return port
	}
	t.Fatalf("no free loopback port below %d in 100 tries", lo)
	return 0
}

// start runs Jaeger and waits until its query API answers.
func (j *testJaeger) start(t *testing.T) {
	t.Helper()
	log, err := os.OpenFile(j.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	j.cmd = exec.Command(j.bin, "--config", "file:"+j.configPath)
	j.cmd.Dir, j.cmd.Stdout, j.cmd.Stderr = j.dir, log, log
	if err := j.cmd.Start(); err != nil {
		t.Fatalf("starting jaeger: %v", err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := j.api.Up(context.Background())
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("jaeger's query API did not answer within 60 s: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop kills the Jaeger this test started, by its pid.
func (j *testJaeger) stop() {
	if j.cmd == nil || j.cmd.Process == nil {
		return
	}
	j.cmd.Process.Kill()
	j.cmd.Wait()
	j.cmd = nil
}

// spanIDs returns the span ids Jaeger stores for trace id (raw: no
// adjuster deduplicates them), nil when it has none yet.
func (j *testJaeger) spanIDs(ctx context.Context, id string) ([]string, error) {
	tr, err := j.api.RawTrace(ctx, id)
	if errors.Is(err, jaeger.ErrTraceNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(tr.Spans))
	for i, s := range tr.Spans {
		ids[i] = s.SpanID
	}
	return ids, nil
}

// envDuration is the duration in the environment variable name, or def.
func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return d
}

// TestIntegrationJaegerOutage is the scenario against a real
// Jaeger: 50 pods start while Jaeger is down (10 s here,
// READYLINE_JAEGER_OUTAGE=5m for the five minutes, with
// READYLINE_OUTAGE_PODS to change the 50), with the daemon's default
// back-off, then Jaeger starts and every trace must be there, each span
// once. It logs the traces lost, the queue's bytes per trace (what sizes
// --export-queue-bytes for an outage) and how long after Jaeger was up the
// last trace was queryable.
func TestIntegrationJaegerOutage(t *testing.T) {
	outage := envDuration(t, "READYLINE_JAEGER_OUTAGE", 10*time.Second)
	pods := 50
	if v := os.Getenv("READYLINE_OUTAGE_PODS"); v != "" {
		var err error
		if pods, err = strconv.Atoi(v); err != nil {
			t.Fatalf("READYLINE_OUTAGE_PODS: %v", err)
		}
	}
	for _, protocol := range []string{ProtocolGRPC, ProtocolHTTP} {
		t.Run(strings.Split(protocol, "/")[0], func(t *testing.T) {
			j := newTestJaeger(t)
			endpoint := j.grpc
			if protocol == ProtocolHTTP {
				endpoint = "http://" + j.http
			}
			obs := &fakeObserver{}
			e, err := NewTraceExporter(TraceConfig{Endpoint: endpoint, Protocol: protocol, Insecure: true,
				NodeName: "outage-node", Observer: obs}, nil)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), outage+3*time.Minute)
			defer cancel()
			runCtx, stop := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- e.Run(runCtx) }()

			tls := outageStarts(t, pods)
			want := spansPerTrace(t, tls)

			// The pods start during the outage, the last one just before
			// Jaeger is back.
			began := time.Now()
			for i, tl := range tls {
				if err := e.Export(ctx, tl); err != nil {
					t.Fatal(err)
				}
				if wait := time.Until(began.Add(outage * time.Duration(i+1) / time.Duration(len(tls)))); wait > 0 {
					time.Sleep(wait)
				}
			}
			waitBuilt(t, e, uint64(len(tls)))
			before := e.Stats()
			if before.ExportedSpans != 0 || before.FailedExports == 0 || before.QueuedTraces != len(tls) {
				t.Fatalf("before Jaeger is up: stats %+v", before)
			}
			j.start(t)
			up := time.Now()

			missing := map[string]int{}
			for id, n := range want {
				missing[id] = n
			}
			var last time.Duration
			for len(missing) > 0 {
				for id, n := range missing {
					ids, err := j.spanIDs(ctx, id)
					if err != nil {
						t.Fatal(err)
					}
					if len(ids) < n {
						continue
					}
					distinct := map[string]bool{}
					for _, s := range ids {
						distinct[s] = true
					}
					if len(ids) != n || len(distinct) != n {
						t.Errorf("trace %s: %d spans in Jaeger, %d distinct, want %d", id, len(ids), len(distinct), n)
					}
					delete(missing, id)
					last = time.Since(up)
				}
				if len(missing) == 0 {
					break
				}
				select {
				case <-ctx.Done():
					t.Fatalf("%d of %d traces not in Jaeger %v after it started; stats %+v", len(missing), len(want), time.Since(up), e.Stats())
				case <-time.After(100 * time.Millisecond):
				}
			}
			stop()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
			st := e.Stats()
			lost := len(tls) - int(st.ExportedTraces)
			t.Logf("%s: Jaeger down %v while %d pods started: %d traces lost; %d failed requests; queue at its peak %d traces, %d bytes (%d bytes per trace); every trace queryable %v after Jaeger was up",
				protocol, outage, len(tls), lost, st.FailedExports, before.QueuedTraces, before.QueuedBytes,
				before.QueuedBytes/int64(before.QueuedTraces), last.Round(100*time.Millisecond))
			if lost != 0 || st.DroppedTraces != 0 || st.Dropped != 0 || len(obs.dropped) != 0 {
				t.Errorf("traces lost: stats %+v, observer %v", st, obs.dropped)
			}
		})
	}
}

// outageStarts returns n pod starts of distinct pods, a mix of the
// fixtures, shifted to end about now so that Jaeger keeps them.
func outageStarts(t *testing.T, n int) []*correlator.Timeline {
	tls := podStarts(t, n)
	for i, tl := range tls {
		shiftTimes(tl, time.Now().Add(-time.Minute).Sub(tl.Start))
		tl.Pod.Name = fmt.Sprintf("%s-%d", tl.Pod.Name, i)
	}
	return tls
}

// spansPerTrace builds tls in memory and counts the spans of each trace,
// by its hex id.
func spansPerTrace(t *testing.T, tls []*correlator.Timeline) map[string]int {
	spans, _ := exportToMemory(t, TraceConfig{NodeName: "outage-node"}, tls...)
	n := map[string]int{}
	for _, s := range spans {
		n[s.SpanContext.TraceID().String()]++
	}
	if len(n) != len(tls) {
		t.Fatalf("%d traces built from %d timelines", len(n), len(tls))
	}
	return n
}
