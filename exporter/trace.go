package exporter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/readyline/readyline/correlator"
)

// OTLP protocols a TraceExporter speaks.
const (
	ProtocolGRPC = "grpc"
	ProtocolHTTP = "http/protobuf"
)

// ServiceName is the service.name of readyline's telemetry.
const ServiceName = "readyline"

// Sentinel errors of TraceExporter.Export.
var (
	// ErrQueueFull: the timeline was dropped because the export queue is full
	// (the endpoint is slow or down); it was counted.
	ErrQueueFull = errors.New("trace export queue full")
	// ErrClosed: the timeline was dropped because Run has returned.
	ErrClosed = errors.New("trace exporter closed")
)

// Sources and reasons of the drops a TraceExporter reports to its
// ExportObserver (readyline_events_dropped_total{source,reason}).
const (
	DropSourceTraces   = "trace_exporter"
	DropReasonQueue    = "queue_full"
	DropReasonClosed   = "closed"
	DropReasonShutdown = "shutdown_timeout"
)

// ExportObserver is told what the trace exporter loses, so that it shows in
// the metrics; *Metrics implements it. Implementations must be safe for
// concurrent use and must not block.
type ExportObserver interface {
	// ExportFailed counts one export request that failed (after retries).
	ExportFailed()
	// AddDropped counts n items dropped by source for reason.
	AddDropped(source, reason string, n int)
}

// TraceConfig configures a TraceExporter. The zero value exports over OTLP
// gRPC wherever the standard OTEL_EXPORTER_OTLP_* variables say
// (localhost:4317 when they say nothing).
type TraceConfig struct {
	// Endpoint is where traces go (--otlp-endpoint): "host:port", or a URL
	// such as "http://localhost:4318" or "https://collector:4317". A URL's
	// scheme decides TLS; for OTLP/HTTP a URL without a path gets
	// /v1/traces. Empty: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, then
	// OTEL_EXPORTER_OTLP_ENDPOINT, then the OTLP default, all read by the
	// OTel exporters themselves.
	Endpoint string
	// Protocol is ProtocolGRPC or ProtocolHTTP. Empty:
	// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, then OTEL_EXPORTER_OTLP_PROTOCOL,
	// then ProtocolHTTP when the endpoint's port is 4318 or its path ends in
	// /v1/traces, else ProtocolGRPC.
	Protocol string
	// Insecure disables TLS for a "host:port" endpoint.
	// OTEL_EXPORTER_OTLP_INSECURE=true has the same effect.
	Insecure bool
	// Headers are sent with every request; when set they replace
	// OTEL_EXPORTER_OTLP_HEADERS.
	Headers map[string]string

	// NodeName and ServiceVersion go into the resource (k8s.node.name,
	// service.version); NodeName also stands in for a timeline without one.
	NodeName       string
	ServiceVersion string

	// QueueSize bounds the timelines waiting to become spans (default 256).
	QueueSize int
	// MaxQueueSpans bounds the spans waiting for export (default 8192);
	// MaxBatchSpans is the most spans per request (default 512).
	MaxQueueSpans int
	MaxBatchSpans int
	// BatchTimeout is the longest a span waits for its batch to fill
	// (default 500 ms): what it adds at most to "Ready -> visible in Jaeger".
	BatchTimeout time.Duration
	// ExportTimeout bounds one export request, retries included
	// (default 10 s).
	ExportTimeout time.Duration
	// ShutdownTimeout bounds the final flush when Run's context ends
	// (default 5 s).
	ShutdownTimeout time.Duration

	// Exporter, when set, receives the spans instead of an OTLP exporter
	// (tests use tracetest.NewInMemoryExporter). The endpoint fields are
	// then ignored.
	Exporter sdktrace.SpanExporter
	// Observer, when set, counts export failures and drops.
	Observer ExportObserver
}

func (c TraceConfig) withDefaults() TraceConfig {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.QueueSize, 256)
	def(&c.MaxQueueSpans, 8192)
	def(&c.MaxBatchSpans, 512)
	if c.MaxBatchSpans > c.MaxQueueSpans {
		c.MaxBatchSpans = c.MaxQueueSpans
	}
	defDur(&c.BatchTimeout, 500*time.Millisecond)
	defDur(&c.ExportTimeout, 10*time.Second)
	defDur(&c.ShutdownTimeout, 5*time.Second)
	return c
}

// TraceStats are a TraceExporter's counters since it was created.
type TraceStats struct {
	Timelines     uint64 // timelines turned into spans
	Spans         uint64 // spans made from them
	Dropped       uint64 // timelines dropped before becoming spans
	ExportedSpans uint64 // spans the endpoint accepted
	FailedExports uint64 // export requests that failed
	FailedSpans   uint64 // spans in those requests
}

// TraceExporter turns timelines into one OTLP trace per pod start. Export
// only enqueues; Run builds the spans and hands them to a batching span
// processor whose export runs in the background. Memory is bounded by
// QueueSize timelines plus MaxQueueSpans spans: when the endpoint is down or
// slow the queues fill and further timelines are dropped and counted, never
// blocking the caller. Export failures are counted and logged once per
// outage.
//
// TraceExporter is safe for concurrent use. Run must be called once.
type TraceExporter struct {
	cfg      TraceConfig
	logger   *slog.Logger
	endpoint string // for logs

	queue   chan exportJob
	flushes chan chan struct{}
	done    chan struct{} // closed when Run returns
	closed  atomic.Bool
	runOnce sync.Once

	provider *sdktrace.TracerProvider
	builder  spanBuilder // used by Run's goroutine only
	exporter *observedExporter

	lastDropWarn atomic.Int64 // unix ns of the last drop warning
	timelines    atomic.Uint64
	spans        atomic.Uint64
	dropped      atomic.Uint64
}

// NewTraceExporter builds the OTLP exporter and the tracer provider. It does
// not connect: connection problems show up as failed exports once Run runs.
// logger may be nil.
func NewTraceExporter(cfg TraceConfig, logger *slog.Logger) (*TraceExporter, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cfg = cfg.withDefaults()

	spanExp, endpoint := cfg.Exporter, "custom exporter"
	if spanExp == nil {
		var err error
		spanExp, endpoint, err = newOTLPExporter(cfg)
		if err != nil {
			return nil, err
		}
	}
	res, err := newResource(cfg)
	if err != nil {
		return nil, err
	}

	e := &TraceExporter{
		cfg:      cfg,
		logger:   logger,
		endpoint: endpoint,
		queue:    make(chan exportJob, cfg.QueueSize),
		flushes:  make(chan chan struct{}),
		done:     make(chan struct{}),
	}
	e.exporter = &observedExporter{next: spanExp, logger: logger, endpoint: endpoint, observer: cfg.Observer,
		progress: make(chan struct{}, 1)}
	// Run keeps the processor's span queue from overflowing (see
	// buildWhenRoom), so its silent drop-when-full never happens.
	bsp := sdktrace.NewBatchSpanProcessor(e.exporter,
		sdktrace.WithMaxQueueSize(cfg.MaxQueueSpans),
		sdktrace.WithMaxExportBatchSize(cfg.MaxBatchSpans),
		sdktrace.WithBatchTimeout(cfg.BatchTimeout),
		sdktrace.WithExportTimeout(cfg.ExportTimeout),
	)
	e.provider = sdktrace.NewTracerProvider(
		sdktrace.WithResource(res),
		sdktrace.WithIDGenerator(podIDGenerator{}),
		sdktrace.WithSampler(sdktrace.AlwaysSample()),
		sdktrace.WithSpanProcessor(bsp),
	)
	e.builder = spanBuilder{
		tracer: e.provider.Tracer("github.com/readyline/readyline/exporter"),
		node:   cfg.NodeName,
	}
	return e, nil
}

// Endpoint describes where the spans go, for logs.
func (e *TraceExporter) Endpoint() string { return e.endpoint }

// exportJob is a timeline waiting to become spans, with the alerts to mark
// on them.
type exportJob struct {
	tl     *correlator.Timeline
	alerts []Alert
}

// Export enqueues tl to become a trace and returns at once. It returns
// ErrQueueFull or ErrClosed when tl was dropped instead (the drop is counted
// and logged at most once a minute; callers need not log it). The exporter takes
// tl over: the caller must not modify it afterwards. alerts, usually what
// Alerter.Observe returned for tl, are marked on the root span and on the
// span of each alert's measure (AttrAlert and the "alert <name>" events).
func (e *TraceExporter) Export(ctx context.Context, tl *correlator.Timeline, alerts ...Alert) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("exporting trace: %w", err)
	}
	if e.closed.Load() {
		e.drop(DropReasonClosed, tl)
		return ErrClosed
	}
	select {
	case e.queue <- exportJob{tl: tl, alerts: alerts}:
		return nil
	default:
		e.drop(DropReasonQueue, tl)
		return ErrQueueFull
	}
}

// dropWarnInterval is the least time between two warnings about drops: a
// queue that is full tends to flap between full and not full.
const dropWarnInterval = time.Minute

func (e *TraceExporter) drop(reason string, tl *correlator.Timeline) {
	total := e.dropped.Add(1)
	if e.cfg.Observer != nil {
		e.cfg.Observer.AddDropped(DropSourceTraces, reason, 1)
	}
	now := time.Now().UnixNano()
	last := e.lastDropWarn.Load()
	if (last == 0 || now-last >= int64(dropWarnInterval)) && e.lastDropWarn.CompareAndSwap(last, now) {
		e.logger.Warn("dropping pod start traces: export queue full or exporter closed; further drops are counted and logged at most once a minute",
			"reason", reason, "pod", tl.Pod.Name, "namespace", tl.Pod.Namespace, "endpoint", e.endpoint, "dropped_total", total)
	}
}

// Run turns queued timelines into spans until ctx ends, then builds what is
// still queued and flushes the exporter, both within ShutdownTimeout, and
// shuts it down. It returns nil on cancellation, or the shutdown error. Run
// must be called once; Export after Run returned drops.
func (e *TraceExporter) Run(ctx context.Context) error {
	first := false
	e.runOnce.Do(func() { first = true })
	if !first {
		return errors.New("exporting traces: Run called twice")
	}
	defer close(e.done)
	for {
		select {
		case job := <-e.queue:
			if !e.buildWhenRoom(job, ctx.Done()) {
				return e.shutdown(&job)
			}
		case flushed := <-e.flushes:
			if job, ok := e.drain(ctx.Done()); !ok {
				close(flushed)
				return e.shutdown(job)
			}
			fctx, cancel := context.WithTimeout(ctx, e.cfg.ExportTimeout)
			if err := e.provider.ForceFlush(fctx); err != nil {
				e.logger.Debug("flushing traces", "error", err)
			}
			cancel()
			close(flushed)
		case <-ctx.Done():
			return e.shutdown(nil)
		}
	}
}

// shutdown builds pending (if not nil) and the queued timelines while the
// span processor has room, flushes, and shuts the provider down, all within
// ShutdownTimeout. What cannot be built or sent in time is counted as
// dropped.
func (e *TraceExporter) shutdown(pending *exportJob) error {
	e.closed.Store(true)
	sctx, cancel := context.WithTimeout(context.Background(), e.cfg.ShutdownTimeout)
	defer cancel()
	if pending != nil && !e.buildWhenRoom(*pending, sctx.Done()) {
		e.drop(DropReasonShutdown, pending.tl)
	}
	if job, ok := e.drain(sctx.Done()); !ok {
		e.drop(DropReasonShutdown, job.tl)
		e.dropQueued(DropReasonShutdown)
	}
	err := e.provider.Shutdown(sctx)
	e.dropQueued(DropReasonClosed) // raced with closing
	if err != nil {
		if lost := e.outstanding(); lost > 0 && e.cfg.Observer != nil {
			e.cfg.Observer.AddDropped(DropSourceTraces, DropReasonShutdown+"_spans", int(lost))
		}
		return fmt.Errorf("shutting down trace export: %w", err)
	}
	return nil
}

// drain builds every timeline queued so far. When done closes while it
// waits for room it returns the timeline in hand and false.
func (e *TraceExporter) drain(done <-chan struct{}) (*exportJob, bool) {
	for {
		select {
		case job := <-e.queue:
			if !e.buildWhenRoom(job, done) {
				return &job, false
			}
		default:
			return nil, true
		}
	}
}

// dropQueued counts what is left in the queue as dropped.
func (e *TraceExporter) dropQueued(reason string) {
	for {
		select {
		case job := <-e.queue:
			e.drop(reason, job.tl)
		default:
			return
		}
	}
}

// outstanding is the number of spans built but not yet exported or failed:
// those in the span processor's queue or in an export request.
func (e *TraceExporter) outstanding() uint64 {
	done := e.exporter.exported.Load() + e.exporter.failedSpans.Load()
	built := e.spans.Load() // after done: spans are counted once emit returns
	if done > built {
		return 0
	}
	return built - done
}

// buildWhenRoom waits until the span processor's queue can take tl's spans,
// then builds them; it returns false, without building, if done closes
// first. Keeping the processor's queue from overflowing this way means it
// never drops spans silently: the only drops are the counted ones of the
// timeline queue, and waiting here never blocks Export's callers.
func (e *TraceExporter) buildWhenRoom(job exportJob, done <-chan struct{}) bool {
	need := min(uint64(maxSpans(job.tl)), uint64(e.cfg.MaxQueueSpans))
	for {
		out := e.outstanding()
		if out == 0 || out+need <= uint64(e.cfg.MaxQueueSpans) {
			break
		}
		select {
		case <-done:
			return false
		case <-e.exporter.progress:
		}
	}
	e.build(job)
	return true
}

// maxSpans is an upper bound of the spans spanBuilder.emit makes from tl.
func maxSpans(tl *correlator.Timeline) int {
	n := 2 + len(tl.Phases) + len(tl.Conditions) // root, pause
	for ci := range tl.Containers {
		for _, a := range tl.Containers[ci].Attempts {
			n += 3 + len(a.Probes) // attempt, process, postStart
		}
	}
	return n
}

func (e *TraceExporter) build(job exportJob) {
	tl := job.tl
	n := e.builder.emit(context.Background(), tl, job.alerts...)
	e.timelines.Add(1)
	e.spans.Add(uint64(n))
	e.logger.Debug("pod start trace built", "pod", tl.Pod.Name, "namespace", tl.Pod.Namespace,
		"trace_id", TraceIDForPod(tl.Pod.UID).String(), "spans", n)
}

// Flush waits until every timeline exported before the call has been built
// and handed to the endpoint (successfully or not), or ctx ends. It needs
// Run to be running.
func (e *TraceExporter) Flush(ctx context.Context) error {
	flushed := make(chan struct{})
	select {
	case e.flushes <- flushed:
	case <-e.done:
		return ErrClosed
	case <-ctx.Done():
		return fmt.Errorf("flushing traces: %w", ctx.Err())
	}
	select {
	case <-flushed:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("flushing traces: %w", ctx.Err())
	}
}

// Stats returns the exporter's counters.
func (e *TraceExporter) Stats() TraceStats {
	return TraceStats{
		Timelines:     e.timelines.Load(),
		Spans:         e.spans.Load(),
		Dropped:       e.dropped.Load(),
		ExportedSpans: e.exporter.exported.Load(),
		FailedExports: e.exporter.failures.Load(),
		FailedSpans:   e.exporter.failedSpans.Load(),
	}
}

// observedExporter counts what its SpanExporter exports and fails to, and
// logs one Warn when exports start failing and one Info when they recover.
// It reports success to the span processor in any case: the failure is
// accounted for here, and the OTel global error handler would otherwise log
// every failed batch.
type observedExporter struct {
	next     sdktrace.SpanExporter
	logger   *slog.Logger
	endpoint string
	observer ExportObserver
	progress chan struct{} // gets a value after each export request

	down        atomic.Bool
	exported    atomic.Uint64
	failures    atomic.Uint64
	failedSpans atomic.Uint64
	outageFails atomic.Uint64
}

func (o *observedExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := o.next.ExportSpans(ctx, spans)
	defer func() {
		select {
		case o.progress <- struct{}{}:
		default:
		}
	}()
	if err == nil {
		o.exported.Add(uint64(len(spans)))
		if o.down.CompareAndSwap(true, false) {
			o.logger.Info("trace export recovered", "endpoint", o.endpoint,
				"failed_exports", o.outageFails.Swap(0))
		}
		return nil
	}
	o.failures.Add(1)
	o.failedSpans.Add(uint64(len(spans)))
	o.outageFails.Add(1)
	if o.observer != nil {
		o.observer.ExportFailed()
	}
	if o.down.CompareAndSwap(false, true) {
		o.logger.Warn("trace export failing, spans are lost until the endpoint is back; further failures are only counted",
			"endpoint", o.endpoint, "spans", len(spans), "error", err)
	}
	return nil
}

func (o *observedExporter) Shutdown(ctx context.Context) error {
	if err := o.next.Shutdown(ctx); err != nil {
		return fmt.Errorf("shutting down span exporter: %w", err)
	}
	return nil
}

// newOTLPExporter builds the OTLP/gRPC or OTLP/HTTP exporter cfg asks for
// and describes its endpoint for logs.
func newOTLPExporter(cfg TraceConfig) (sdktrace.SpanExporter, string, error) {
	endpoint := cfg.Endpoint
	if endpoint == "" {
		endpoint = firstEnv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
	}
	protocol := cfg.Protocol
	if protocol == "" {
		protocol = firstEnv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	if protocol == "" {
		protocol = guessProtocol(endpoint)
	}
	desc := endpoint
	if desc == "" {
		desc = "OTLP default"
	}
	desc = protocol + " " + desc

	// With no explicit endpoint the exporters read OTEL_EXPORTER_OTLP_*
	// themselves; explicit options override those variables.
	ctx := context.Background()
	switch protocol {
	case ProtocolGRPC:
		opts := []otlptracegrpc.Option{otlptracegrpc.WithTimeout(cfg.ExportTimeout)}
		if cfg.Endpoint != "" {
			if hasScheme(cfg.Endpoint) {
				opts = append(opts, otlptracegrpc.WithEndpointURL(cfg.Endpoint))
			} else {
				opts = append(opts, otlptracegrpc.WithEndpoint(cfg.Endpoint))
			}
		}
		if cfg.Insecure {
			opts = append(opts, otlptracegrpc.WithInsecure())
		}
		if len(cfg.Headers) > 0 {
			opts = append(opts, otlptracegrpc.WithHeaders(cfg.Headers))
		}
		exp, err := otlptracegrpc.New(ctx, opts...)
		if err != nil {
			return nil, "", fmt.Errorf("creating OTLP/gRPC trace exporter: %w", err)
		}
		return exp, desc, nil
	case ProtocolHTTP:
		opts := []otlptracehttp.Option{otlptracehttp.WithTimeout(cfg.ExportTimeout)}
		if cfg.Endpoint != "" {
			if hasScheme(cfg.Endpoint) {
				u, err := url.Parse(cfg.Endpoint)
				if err != nil {
					return nil, "", fmt.Errorf("parsing OTLP endpoint: %w", err)
				}
				if u.Path == "" || u.Path == "/" {
					u.Path = "/v1/traces"
				}
				opts = append(opts, otlptracehttp.WithEndpointURL(u.String()))
			} else {
				opts = append(opts, otlptracehttp.WithEndpoint(cfg.Endpoint))
			}
		}
		if cfg.Insecure {
			opts = append(opts, otlptracehttp.WithInsecure())
		}
		if len(cfg.Headers) > 0 {
			opts = append(opts, otlptracehttp.WithHeaders(cfg.Headers))
		}
		exp, err := otlptracehttp.New(ctx, opts...)
		if err != nil {
			return nil, "", fmt.Errorf("creating OTLP/HTTP trace exporter: %w", err)
		}
		return exp, desc, nil
	default:
		return nil, "", fmt.Errorf("OTLP protocol %q: want %q or %q", protocol, ProtocolGRPC, ProtocolHTTP)
	}
}

func firstEnv(names ...string) string {
	for _, n := range names {
		if v := strings.TrimSpace(os.Getenv(n)); v != "" {
			return v
		}
	}
	return ""
}

func hasScheme(endpoint string) bool { return strings.Contains(endpoint, "://") }

// guessProtocol picks OTLP/HTTP for endpoints that look like one (port 4318,
// path /v1/traces) and gRPC otherwise.
func guessProtocol(endpoint string) string {
	hostPort, path := endpoint, ""
	if hasScheme(endpoint) {
		if u, err := url.Parse(endpoint); err == nil {
			hostPort, path = u.Host, u.Path
		}
	}
	if strings.HasSuffix(path, "/v1/traces") {
		return ProtocolHTTP
	}
	if _, port, err := net.SplitHostPort(hostPort); err == nil && port == "4318" {
		return ProtocolHTTP
	}
	return ProtocolGRPC
}

// newResource describes readyline: service.name, service.version,
// k8s.node.name, the SDK, and OTEL_RESOURCE_ATTRIBUTES / OTEL_SERVICE_NAME
// (which win).
func newResource(cfg TraceConfig) (*resource.Resource, error) {
	attrs := resourceAttrs(cfg.NodeName, cfg.ServiceVersion)
	res, err := resource.New(context.Background(),
		resource.WithSchemaURL(semconv.SchemaURL),
		resource.WithTelemetrySDK(),
		resource.WithAttributes(attrs...),
		resource.WithFromEnv(),
	)
	if err != nil {
		return nil, fmt.Errorf("building trace resource: %w", err)
	}
	return res, nil
}

func resourceAttrs(node, version string) []attribute.KeyValue {
	attrs := []attribute.KeyValue{semconv.ServiceName(ServiceName)}
	if version != "" {
		attrs = append(attrs, semconv.ServiceVersion(version))
	}
	if node != "" {
		attrs = append(attrs, semconv.K8SNodeName(node))
	}
	return attrs
}
