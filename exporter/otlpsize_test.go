package exporter

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	grpccodes "google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/readyline/readyline/correlator"
)

// otlpHTTPServer is an OTLP/HTTP endpoint that records the size of every
// request body (uncompressed protobuf: the OTLP exporter's default) and its
// spans, and answers with answer(i) for the i-th request (200 when nil).
type otlpHTTPServer struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []int
	spans  []int
	answer func(i int) int
}

func newOTLPHTTPServer(t *testing.T, answer func(int) int) *otlpHTTPServer {
	s := &otlpHTTPServer{answer: answer}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			t.Errorf("decoding OTLP request: %v", err)
		}
		n := 0
		for _, rs := range req.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				n += len(ss.GetSpans())
			}
		}
		s.mu.Lock()
		i := len(s.bodies)
		s.bodies = append(s.bodies, len(body))
		s.spans = append(s.spans, n)
		s.mu.Unlock()
		if code := s.answerFor(i); code != http.StatusOK {
			http.Error(w, "no", code)
			return
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		b, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Write(b)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *otlpHTTPServer) answerFor(i int) int {
	if s.answer == nil {
		return http.StatusOK
	}
	return s.answer(i)
}

func (s *otlpHTTPServer) requests() (bodies, spans []int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.bodies...), append([]int(nil), s.spans...)
}

// sizingExporter computes otlpSize of each trace in every request before
// passing it on.
type sizingExporter struct {
	sdktrace.SpanExporter
	mu    sync.Mutex
	sizes []int64 // per request: the sum of its traces' otlpSize
}

func (s *sizingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	var sum int64
	for i := 0; i < len(spans); {
		j := i
		for j < len(spans) && spans[j].SpanContext().TraceID() == spans[i].SpanContext().TraceID() {
			j++
		}
		sum += otlpSize(spans[i:j])
		i = j
	}
	s.mu.Lock()
	s.sizes = append(s.sizes, sum)
	s.mu.Unlock()
	return s.SpanExporter.ExportSpans(ctx, spans)
}

// TestOTLPSizeIsTheRequestSize holds otlpSize against the bodies the real
// OTLP/HTTP exporter sends: one trace per request, each fixture (strings,
// ints, bools, slices, events, error statuses, a completion's remote
// parent), and a batch of several, which must not exceed the sum of its
// traces' sizes.
func TestOTLPSizeIsTheRequestSize(t *testing.T) {
	srv := newOTLPHTTPServer(t, nil)
	otlp, _, err := newOTLPExporter(TraceConfig{Endpoint: srv.URL, Protocol: ProtocolHTTP}.withDefaults())
	if err != nil {
		t.Fatal(err)
	}
	sizing := &sizingExporter{SpanExporter: otlp}
	e, stop := startExporter(t, TraceConfig{NodeName: "node-1", ServiceVersion: "v1.2.3"}, sizing, nil, nil)

	report, completion := reportedAndCompleted()
	tls := []*correlator.Timeline{lifecycleDemo(), initFailureNever(), postStartDemo(), stuckCrashLoop(), lateSeen(), staticPod(), report, completion}
	for _, tl := range tls {
		if err := e.Export(context.Background(), tl); err != nil {
			t.Fatal(err)
		}
		flush(t, e)
	}
	bodies, _ := srv.requests()
	sizing.mu.Lock()
	sizes := append([]int64(nil), sizing.sizes...)
	sizing.mu.Unlock()
	if len(bodies) != len(tls) || len(sizes) != len(tls) {
		t.Fatalf("%d requests, %d sized, want %d", len(bodies), len(sizes), len(tls))
	}
	for i, tl := range tls {
		t.Logf("%s: otlpSize %d, request body %d bytes", tl.Pod.Name, sizes[i], bodies[i])
		if sizes[i] != int64(bodies[i]) {
			t.Errorf("%s: otlpSize %d, the OTLP exporter sent %d bytes", tl.Pod.Name, sizes[i], bodies[i])
		}
	}

	// All at once: they share requests, which are no larger than the sum.
	for _, tl := range tls[:6] {
		tl.Pod.UID = newUUID(t)
		if err := e.Export(context.Background(), tl); err != nil {
			t.Fatal(err)
		}
	}
	flush(t, e)
	bodies, _ = srv.requests()
	sizing.mu.Lock()
	sizes = append([]int64(nil), sizing.sizes...)
	sizing.mu.Unlock()
	for i := len(tls); i < len(bodies); i++ {
		if int64(bodies[i]) > sizes[i] {
			t.Errorf("request %d: %d bytes, more than its traces' %d", i, bodies[i], sizes[i])
		}
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// TestOTLPSizeOfEveryAttributeType: the attribute types readyline does not
// use today, sized like the OTLP exporter encodes them.
func TestOTLPSizeOfEveryAttributeType(t *testing.T) {
	srv := newOTLPHTTPServer(t, nil)
	otlp, _, err := newOTLPExporter(TraceConfig{Endpoint: srv.URL, Protocol: ProtocolHTTP}.withDefaults())
	if err != nil {
		t.Fatal(err)
	}
	ended := &endedSpans{}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(ended))
	_, s := tp.Tracer("sizes", trace.WithInstrumentationVersion("v9"), trace.WithSchemaURL("https://example.com/schema")).
		Start(context.Background(), "every type", trace.WithSpanKind(trace.SpanKindServer),
			trace.WithLinks(trace.Link{SpanContext: trace.NewSpanContext(trace.SpanContextConfig{
				TraceID: TraceIDForPod(lifecycleUID), SpanID: trace.SpanID{1}, TraceFlags: trace.FlagsSampled}),
				Attributes: []attribute.KeyValue{attribute.String("link", "x")}}))
	s.SetAttributes(
		attribute.Bool("b", false), attribute.Int64("neg", -1), attribute.Int64("zero", 0), attribute.Float64("f", 0.5),
		attribute.String("empty", ""), attribute.BoolSlice("bs", []bool{true, false}),
		attribute.Int64Slice("is", []int64{1, -300, 1 << 40}), attribute.Float64Slice("fs", []float64{1, 2}),
		attribute.StringSlice("ss", []string{"a", "", "ccc"}), attribute.StringSlice("none", nil),
	)
	s.AddEvent("ev", trace.WithAttributes(attribute.Int("n", 7)))
	s.SetStatus(codes.Ok, "")
	s.End()
	spans := ended.take()
	if err := otlp.ExportSpans(context.Background(), spans); err != nil {
		t.Fatal(err)
	}
	bodies, _ := srv.requests()
	if got := otlpSize(spans); len(bodies) != 1 || got != int64(bodies[0]) {
		t.Errorf("otlpSize %d, request bodies %v", got, bodies)
	}
}

// TestQueueHeapPerByte measures the heap the queued traces hold per byte
// of their otlpSize, the factor QueueBytes's doc quotes.
func TestQueueHeapPerByte(t *testing.T) {
	e, err := NewTraceExporter(TraceConfig{Exporter: discardExporter{}, QueueBytes: 1 << 30}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tls := podStarts(t, 500)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for _, tl := range tls {
		e.build(exportJob{tl: tl})
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	traces, bytes := e.Queued()
	heap := float64(after.HeapAlloc) - float64(before.HeapAlloc)
	factor := heap / float64(bytes)
	t.Logf("%d traces, %d OTLP bytes (%d per trace), %.0f heap bytes (%.0f per trace): %.2f heap bytes per queued byte",
		traces, bytes, bytes/int64(traces), heap, heap/float64(traces), factor)
	if factor < 1 || factor > 4 {
		t.Errorf("heap per queued byte %.2f: update QueueBytes's doc and --export-queue-bytes's help", factor)
	}
	runtime.KeepAlive(tls)
}

// TestRejectedBatchIsDropped: a request the endpoint refuses as invalid
// (HTTP 400, gRPC InvalidArgument) is not sent again: its traces are
// dropped and counted, and the next trace goes through.
func TestRejectedBatchIsDropped(t *testing.T) {
	check := func(t *testing.T, endpoint, protocol string, requests func() int) {
		var logs syncBuffer
		obs := &fakeObserver{}
		e, err := NewTraceExporter(TraceConfig{Endpoint: endpoint, Protocol: protocol, Insecure: true, Observer: obs},
			slog.New(slog.NewTextHandler(&logs, nil)))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- e.Run(ctx) }()
		for _, tl := range podStarts(t, 2) {
			if err := e.Export(ctx, tl); err != nil {
				t.Fatal(err)
			}
			flush(t, e)
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		st := e.Stats()
		if requests() != 2 || st.ExportedTraces != 1 || st.DroppedTraces != 1 || st.FailedExports != 1 ||
			obs.droppedFor(DropSourceTraces+"/"+DropReasonRejected) != 1 || obs.failures.Load() != 1 {
			t.Errorf("%d requests; stats %+v; observer %v", requests(), st, obs.dropped)
		}
		out := logs.String()
		if !strings.Contains(out, "rejected a trace export request") || strings.Contains(out, "trace export failing") {
			t.Errorf("logs:\n%s", out)
		}
	}
	t.Run("http", func(t *testing.T) {
		srv := newOTLPHTTPServer(t, func(i int) int {
			if i == 0 {
				return http.StatusBadRequest
			}
			return http.StatusOK
		})
		check(t, srv.URL, ProtocolHTTP, func() int { b, _ := srv.requests(); return len(b) })
	})
	t.Run("grpc", func(t *testing.T) {
		ts := &answeringTraceServer{answer: func(i int) (*coltracepb.ExportTraceServiceResponse, error) {
			if i == 0 {
				return nil, status.Error(grpccodes.InvalidArgument, "span too big")
			}
			return &coltracepb.ExportTraceServiceResponse{}, nil
		}}
		check(t, ts.start(t), ProtocolGRPC, ts.requests)
	})
}

// TestPartialSuccessIsNotSentAgain: an answer that the endpoint kept only
// part of a request is a success: sending it again would duplicate the
// rest.
func TestPartialSuccessIsNotSentAgain(t *testing.T) {
	ts := &answeringTraceServer{answer: func(int) (*coltracepb.ExportTraceServiceResponse, error) {
		return &coltracepb.ExportTraceServiceResponse{PartialSuccess: &coltracepb.ExportTracePartialSuccess{
			RejectedSpans: 2, ErrorMessage: "two spans too old"}}, nil
	}}
	otlp, _, err := newOTLPExporter(TraceConfig{Endpoint: ts.start(t), Protocol: ProtocolGRPC, Insecure: true}.withDefaults())
	if err != nil {
		t.Fatal(err)
	}
	e, stop := startExporter(t, TraceConfig{}, otlp, nil, nil)
	for _, tl := range podStarts(t, 3) {
		if err := e.Export(context.Background(), tl); err != nil {
			t.Fatal(err)
		}
		flush(t, e)
	}
	if err := stop(); err != nil {
		t.Errorf("Run: %v", err)
	}
	if st := e.Stats(); ts.requests() != 3 || st.ExportedTraces != 3 || st.FailedExports != 0 {
		t.Errorf("%d requests, stats %+v", ts.requests(), st)
	}
}

// answeringTraceServer is an OTLP/gRPC endpoint answering the i-th request
// with answer(i).
type answeringTraceServer struct {
	coltracepb.UnimplementedTraceServiceServer
	answer func(i int) (*coltracepb.ExportTraceServiceResponse, error)
	n      atomic.Int64
}

func (s *answeringTraceServer) Export(context.Context, *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	return s.answer(int(s.n.Add(1) - 1))
}

func (s *answeringTraceServer) requests() int { return int(s.n.Load()) }

// start serves s on a loopback port until the test ends and returns it.
func (s *answeringTraceServer) start(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(gs, s)
	go gs.Serve(l)
	t.Cleanup(gs.Stop)
	return l.Addr().String()
}

// TestLifecycleDemoOTLPSize: the README's "the seed's lifecycle-demo start
// is about 8 KiB as an OTLP request: 16Mi holds some 2000 of them". Fails
// when a trace grows or shrinks past what the README says.
func TestLifecycleDemoOTLPSize(t *testing.T) {
	ended := &endedSpans{}
	tp := sdktrace.NewTracerProvider(sdktrace.WithIDGenerator(podIDGenerator{}), sdktrace.WithSpanProcessor(ended))
	sb := spanBuilder{tracer: tp.Tracer("size")}
	sb.emit(context.Background(), lifecycleDemo())
	n := otlpSize(ended.take())
	if n < 7<<10 || n > 9<<10 {
		t.Errorf("lifecycle-demo's trace is %d bytes as OTLP, not about 8 KiB: update the README", n)
	}
	if starts := (16 << 20) / n; starts < 1800 || starts > 2400 {
		t.Errorf("16Mi holds %d such traces, not some 2000: update the README", starts)
	}
}
