package exporter

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/deploy/e2e/jaeger"
)

// The Jaeger that 'make jaeger-up' starts (deploy/node/config/jaeger.yaml);
// READYLINE_JAEGER_QUERY_URL, READYLINE_JAEGER_OTLP_GRPC and
// READYLINE_JAEGER_OTLP_HTTP point the test at another one.
var (
	jaegerQueryURL = envOr("READYLINE_JAEGER_QUERY_URL", "http://127.0.0.1:16686")
	jaegerOTLPGRPC = envOr("READYLINE_JAEGER_OTLP_GRPC", "127.0.0.1:4317")
	jaegerOTLPHTTP = envOr("READYLINE_JAEGER_OTLP_HTTP", "http://127.0.0.1:4318")
	jaegerQuery    = jaeger.NewClient(jaegerQueryURL)
)

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// requireJaeger skips the test when Jaeger's query API does not answer,
// unless READYLINE_REQUIRE_JAEGER=1 or READYLINE_REQUIRE_PRIVILEGED=1 (set by
// 'make test' as root) make that a failure.
func requireJaeger(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := jaegerQuery.Up(ctx)
	if err == nil {
		return
	}
	msg := fmt.Sprintf("Jaeger is not reachable at %s (%v): start it with 'make jaeger-up'", jaegerQueryURL, err)
	if os.Getenv("READYLINE_REQUIRE_JAEGER") == "1" || os.Getenv("READYLINE_REQUIRE_PRIVILEGED") == "1" {
		t.Fatal(msg + " (failing, not skipping: READYLINE_REQUIRE_JAEGER or READYLINE_REQUIRE_PRIVILEGED is set)")
	}
	t.Skip("SKIPPING the real-Jaeger test. " + msg)
}

func TestIntegrationJaeger(t *testing.T) {
	requireJaeger(t)
	for _, tc := range []struct {
		name, endpoint, protocol string
		flush                    bool // Flush right after Export, then poll
	}{
		{"grpc", jaegerOTLPGRPC, ProtocolGRPC, false},
		{"http", jaegerOTLPHTTP, ProtocolHTTP, false},
		{"grpc-flush", jaegerOTLPGRPC, ProtocolGRPC, true},
		{"http-flush", jaegerOTLPHTTP, ProtocolHTTP, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A fresh UID per run, and times shifted to now, so that reruns
			// against the same Jaeger do not find an old trace.
			tl := lifecycleDemo()
			shiftTimes(tl, time.Now().Add(-30*time.Second).Sub(t0))
			tl.Pod.UID = newUUID(t)
			tl.Pod.Name = "lifecycle-demo-" + tc.name
			traceID := strings.ReplaceAll(tl.Pod.UID, "-", "")

			obs := &fakeObserver{}
			e, err := NewTraceExporter(TraceConfig{
				Endpoint: tc.endpoint, Protocol: tc.protocol, Insecure: true,
				NodeName: "it-node", ServiceVersion: "test", Observer: obs,
			}, nil)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			runCtx, stop := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- e.Run(runCtx) }()

			// Ready -> queryable: the request starts as soon as the trace is
			// built, without waiting for a batch to fill; Jaeger's own batch
			// processor and storage make the rest.
			exported := time.Now()
			if err := e.Export(ctx, tl); err != nil {
				t.Fatal(err)
			}
			var flushed time.Duration
			if tc.flush {
				if err := e.Flush(ctx); err != nil {
					t.Fatal(err)
				}
				flushed = time.Since(exported)
			}
			var tr *jaeger.Trace
			polls := 0
			for {
				polls++
				tr, err = jaegerQuery.Trace(ctx, traceID)
				if errors.Is(err, jaeger.ErrTraceNotFound) {
					tr = nil
				} else if err != nil {
					t.Fatal(err)
				}
				if tr != nil && len(tr.Spans) >= 21 {
					break
				}
				select {
				case <-ctx.Done():
					t.Fatalf("trace %s not in Jaeger after %v (%d polls; last answer %v); exporter stats %+v",
						traceID, time.Since(exported), polls, tr != nil, e.Stats())
				case <-time.After(20 * time.Millisecond):
				}
			}
			latency := time.Since(exported)
			stop()
			if err := <-done; err != nil {
				t.Fatalf("Run: %v", err)
			}
			t.Logf("%s (flush %v, returned after %v): trace %s with %d spans queryable in Jaeger %v after Export (%d polls); stats %+v",
				tc.protocol, tc.flush, flushed.Round(time.Millisecond), traceID, len(tr.Spans), latency.Round(time.Millisecond), polls, e.Stats())

			if tr.TraceID != traceID {
				t.Errorf("trace id %s, want %s", tr.TraceID, traceID)
			}
			if got := len(tr.Spans); got != 21 {
				t.Errorf("%d spans in Jaeger, want 21", got)
			}
			nameOf := map[string]string{}
			for _, s := range tr.Spans {
				nameOf[s.SpanID] = s.OperationName
			}
			var names []string
			roots := 0
			for _, s := range tr.Spans {
				tags := map[string]string{}
				for _, tag := range s.Tags {
					tags[tag.Key] = fmt.Sprint(tag.Value)
				}
				parent := ""
				if len(s.References) == 1 && s.References[0].RefType == "CHILD_OF" {
					parent = nameOf[s.References[0].SpanID]
				}
				switch {
				case s.OperationName == "process pause" && parent != "pod.sandbox",
					strings.HasPrefix(s.OperationName, "condition ") && parent != SpanPodStartup,
					s.OperationName == "readinessProbe" && parent != "container nginx",
					strings.HasPrefix(s.OperationName, "pod.") && s.OperationName != SpanPodStartup && parent != SpanPodStartup:
					t.Errorf("span %q has parent %q", s.OperationName, parent)
				}
				if s.OperationName == "condition Initialized" && (tags["readyline.condition.lag_ms"] != "70" ||
					tags["readyline.condition.last_transition_time"] == "") {
					t.Errorf("condition Initialized tags %v", tags)
				}
				if s.OperationName == SpanPodStartup && (tags["k8s.pod.uid"] != tl.Pod.UID || tags["readyline.outcome"] != "ready") {
					t.Errorf("root tags %v", tags)
				}
				names = append(names, s.OperationName)
				if len(s.References) == 0 {
					roots++
					if s.OperationName != SpanPodStartup {
						t.Errorf("root span %q", s.OperationName)
					}
					if d := time.Duration(s.Duration) * time.Microsecond; d != 27097*time.Millisecond {
						t.Errorf("root duration %v, want 27.097s", d)
					}
					if p := tr.Processes[s.ProcessID]; p.ServiceName != ServiceName {
						t.Errorf("service %q, want %q", p.ServiceName, ServiceName)
					}
				}
			}
			if roots != 1 {
				t.Errorf("%d root spans, want 1", roots)
			}
			sort.Strings(names)
			want := []string{
				"condition ContainersReady", "condition Initialized", "condition PodReadyToStartContainers",
				"condition PodScheduled", "condition Ready",
				"container nginx", "init init-regular",
				"pod.containers", "pod.init", "pod.sandbox", "pod.schedule", "pod.startup", "pod.wait_sandbox",
				"process busybox", "process pause", "process sh", "process sh",
				"readinessProbe", "sidecar init-sidecar", "startupProbe", "startupProbe",
			}
			if !slices.Equal(names, want) {
				t.Errorf("span names in Jaeger\n got %q\nwant %q", names, want)
			}
			if obs.failures.Load() != 0 || e.Stats().FailedExports != 0 {
				t.Errorf("export failures: observer %d, stats %+v", obs.failures.Load(), e.Stats())
			}
		})
	}
}

func newUUID(t *testing.T) string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// shiftTimes moves every non-zero time.Time in tl by d.
func shiftTimes(tl *correlator.Timeline, d time.Duration) {
	timeType := reflect.TypeFor[time.Time]()
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer:
			if !v.IsNil() {
				walk(v.Elem())
			}
		case reflect.Slice:
			for i := range v.Len() {
				walk(v.Index(i))
			}
		case reflect.Struct:
			if v.Type() == timeType {
				if t := v.Interface().(time.Time); !t.IsZero() {
					v.Set(reflect.ValueOf(t.Add(d)))
				}
				return
			}
			for i := range v.NumField() {
				if v.Type().Field(i).IsExported() {
					walk(v.Field(i))
				}
			}
		}
	}
	walk(reflect.ValueOf(tl))
}
