package exporter

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
)

// exportOnce runs a TraceExporter built from cfg (and the environment),
// exports lifecycle-demo, flushes and stops it.
func exportOnce(t *testing.T, cfg TraceConfig) TraceStats {
	t.Helper()
	cfg.ExportTimeout = 5 * time.Second
	e, err := NewTraceExporter(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	if err := e.Export(ctx, lifecycleDemo()); err != nil {
		t.Fatal(err)
	}
	if err := e.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return e.Stats()
}

// TestOTLPEnvHTTP: with an empty TraceConfig the standard variables choose
// the protocol, the endpoint (a per-signal URL is used as is) and headers.
func TestOTLPEnvHTTP(t *testing.T) {
	var mu sync.Mutex
	var gotPath, gotTenant string
	var gotSpans int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			t.Errorf("decoding OTLP request: %v", err)
		}
		mu.Lock()
		gotPath, gotTenant = r.URL.Path, r.Header.Get("X-Tenant")
		for _, rs := range req.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				gotSpans += len(ss.GetSpans())
			}
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		b, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Write(b)
	}))
	defer srv.Close()

	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", srv.URL+"/custom/traces")
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-tenant=team-a")
	st := exportOnce(t, TraceConfig{})
	mu.Lock()
	defer mu.Unlock()
	if gotPath != "/custom/traces" || gotTenant != "team-a" || gotSpans != 21 || st.ExportedSpans != 21 {
		t.Errorf("request to %q with X-Tenant %q and %d spans; stats %+v", gotPath, gotTenant, gotSpans, st)
	}
}

type traceServer struct {
	coltracepb.UnimplementedTraceServiceServer
	mu     sync.Mutex
	spans  int
	tenant string
}

func (s *traceServer) Export(ctx context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	md, _ := metadata.FromIncomingContext(ctx)
	s.tenant = strings.Join(md.Get("x-tenant"), ",")
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			s.spans += len(ss.GetSpans())
		}
	}
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// TestOTLPEnvGRPC: OTEL_EXPORTER_OTLP_ENDPOINT and _INSECURE reach the gRPC
// exporter (an https URL to a plaintext server works only if INSECURE is
// honoured), and the explicit Endpoint wins over the environment.
func TestOTLPEnvGRPC(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts := &traceServer{}
	gs := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(gs, ts)
	go gs.Serve(l)
	defer gs.Stop()

	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "https://"+l.Addr().String())
	t.Setenv("OTEL_EXPORTER_OTLP_INSECURE", "true")
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-tenant=team-b")
	st := exportOnce(t, TraceConfig{})
	ts.mu.Lock()
	if ts.spans != 21 || ts.tenant != "team-b" || st.ExportedSpans != 21 {
		t.Errorf("server got %d spans, tenant %q; stats %+v", ts.spans, ts.tenant, st)
	}
	ts.mu.Unlock()

	// An explicit endpoint overrides the variable (which now points nowhere).
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+closedPort(t))
	st = exportOnce(t, TraceConfig{Endpoint: l.Addr().String(), Insecure: true})
	if st.ExportedSpans != 21 {
		t.Errorf("explicit endpoint: stats %+v", st)
	}
}
