package exporter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/readyline/readyline/correlator"
)

// Sentinel errors of TraceExporter.Export.
var (
	// ErrQueueFull: the timeline was dropped because the timelines waiting
	// to become spans filled their queue (QueueSize); it was counted.
	ErrQueueFull = errors.New("trace export queue full")
	// ErrClosed: the timeline was dropped because Run has returned.
	ErrClosed = errors.New("trace exporter closed")
)

// TraceStats are a TraceExporter's counters since it was created, and what
// its export queue holds now.
type TraceStats struct {
	Timelines      uint64 // timelines turned into spans: traces built
	Spans          uint64 // spans made from them
	Dropped        uint64 // timelines dropped before becoming spans
	ExportedTraces uint64 // traces the endpoint accepted
	ExportedSpans  uint64 // spans the endpoint accepted
	FailedExports  uint64 // export requests that failed (each try of a batch counts)
	FailedSpans    uint64 // spans in those requests
	DroppedTraces  uint64 // traces built and then dropped unsent: QueueBytes, rejected, shutdown
	DroppedSpans   uint64 // spans in those traces
	QueuedTraces   int    // traces waiting for the endpoint now
	QueuedBytes    int64  // their size (see QueueBytes)
}

// TraceExporter turns timelines into one OTLP trace per pod start. Export
// only enqueues the timeline; Run builds its spans at once into a trace
// that waits in the export queue until a request that carries it succeeds.
// A request starts as soon as a trace is built unless one is in flight;
// the traces built meanwhile go together in the next one, so an endpoint
// that is up sees a trace one round trip after Export.
//
// When the endpoint is down the batch at the head of the queue is sent
// again, the same batch, with a capped exponential back-off, and the
// queue keeps the traces in order until the endpoint is back. It is
// bounded by QueueBytes: beyond it the oldest traces are dropped, counted
// and logged once per outage. Export never blocks the caller: when Run
// falls behind, the QueueSize timelines waiting for it fill and further
// ones are dropped and counted. Export failures are counted and logged
// once per outage.
//
// TraceExporter is safe for concurrent use. Run must be called once.
type TraceExporter struct {
	cfg      TraceConfig
	logger   *slog.Logger
	endpoint string // for logs
	spanExp  sdktrace.SpanExporter

	jobs     chan exportJob
	flushes  chan chan uint64
	done     chan struct{} // closed when Run returns
	closed   atomic.Bool
	runOnce  sync.Once
	draining chan struct{} // closed when Run stops building: send returns once the queue is empty
	retryNow chan struct{} // Flush and shutdown cut a back-off short

	provider *sdktrace.TracerProvider
	ended    *endedSpans
	builder  spanBuilder // used by Run's goroutine only
	queue    *exportQueue

	// after and jitter drive the back-off; tests replace them before Run.
	after  func(time.Duration) <-chan time.Time
	jitter func() float64 // in [0, 1)

	lastDropWarn atomic.Int64 // unix ns of the last warning about a dropped timeline
	bytesWarned  atomic.Int64 // unix ns of the warning about queue_bytes drops in this outage, or 0
	partialWarn  atomic.Bool
	down         atomic.Bool // the last request failed
	outageFails  atomic.Uint64

	timelines      atomic.Uint64
	spans          atomic.Uint64
	dropped        atomic.Uint64
	exportedTraces atomic.Uint64
	exportedSpans  atomic.Uint64
	failures       atomic.Uint64
	failedSpans    atomic.Uint64
	droppedTraces  atomic.Uint64
	droppedSpans   atomic.Uint64
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
		spanExp:  spanExp,
		jobs:     make(chan exportJob, cfg.QueueSize),
		flushes:  make(chan chan uint64),
		done:     make(chan struct{}),
		draining: make(chan struct{}),
		retryNow: make(chan struct{}, 1),
		ended:    &endedSpans{},
		queue:    newExportQueue(cfg.QueueBytes),
		after:    time.After,
		jitter:   rand.Float64,
	}
	e.provider = sdktrace.NewTracerProvider(
		sdktrace.WithResource(res),
		sdktrace.WithIDGenerator(podIDGenerator{}),
		sdktrace.WithSampler(sdktrace.AlwaysSample()),
		sdktrace.WithSpanProcessor(e.ended),
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
	// rec, instead of tl: a return to Ready after the start.
	rec *correlator.Recovery
}

// Export enqueues tl to become a trace and returns at once. It returns
// ErrQueueFull or ErrClosed when tl was dropped instead (the drop is counted
// and logged at most once a minute; callers need not log it). The exporter takes
// tl over: the caller must not modify it afterwards. alerts, usually what
// Alerter.Observe returned for tl, are marked on the root span and on the
// span of each alert's measure (AttrAlert and the "alert <name>" events).
func (e *TraceExporter) Export(ctx context.Context, tl *correlator.Timeline, alerts ...Alert) error {
	return e.enqueue(ctx, exportJob{tl: tl, alerts: alerts})
}

// ExportRecovery enqueues a return to Ready after a pod's start to become a
// span of the pod's trace (SpanPodReadyAgain), as Export does a start.
func (e *TraceExporter) ExportRecovery(ctx context.Context, r *correlator.Recovery) error {
	return e.enqueue(ctx, exportJob{tl: &correlator.Timeline{Pod: r.Pod}, rec: r}) // tl: what a drop logs
}

// enqueue hands job to Run, or drops it when the queue is full or closed.
func (e *TraceExporter) enqueue(ctx context.Context, job exportJob) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("exporting trace: %w", err)
	}
	if e.closed.Load() {
		e.drop(DropReasonClosed, job.tl)
		return ErrClosed
	}
	select {
	case e.jobs <- job:
		return nil
	default:
		e.drop(DropReasonQueue, job.tl)
		return ErrQueueFull
	}
}

// Run builds the queued timelines into traces, and sends them from a
// goroutine of its own, until ctx ends. Then it builds what is still
// queued and sends what it can within ShutdownTimeout; what is left is
// counted as dropped (DropReasonShutdown). It returns nil on cancellation,
// or an error saying what shutting down lost. Run must be called once;
// Export after Run returned drops.
func (e *TraceExporter) Run(ctx context.Context) error {
	first := false
	e.runOnce.Do(func() { first = true })
	if !first {
		return errors.New("exporting traces: Run called twice")
	}
	defer close(e.done)
	sendCtx, stopSending := context.WithCancel(context.Background())
	defer stopSending()
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		e.send(sendCtx)
	}()
	for {
		select {
		case job := <-e.jobs:
			e.build(job)
		case reply := <-e.flushes:
			e.buildQueued()
			reply <- e.queue.last()
		case <-ctx.Done():
			return e.shutdown(stopSending, sent)
		}
	}
}

// shutdown builds the queued timelines, lets send empty the export queue
// until ShutdownTimeout, stops it, counts what is left and shuts the span
// exporter down.
func (e *TraceExporter) shutdown(stopSending context.CancelFunc, sent <-chan struct{}) error {
	e.closed.Store(true)
	sctx, cancel := context.WithTimeout(context.Background(), e.cfg.ShutdownTimeout)
	defer cancel()
	e.buildQueued()
	close(e.draining)
	select { // one try at once: the endpoint may be back during a long back-off
	case e.retryNow <- struct{}{}:
	default:
	}
	select {
	case <-sent:
	case <-sctx.Done():
		stopSending() // ends the request in flight
		<-sent
	}
	e.dropQueued(DropReasonClosed) // Exports that raced with closing
	var errs []error
	if left := e.queue.drain(); len(left) > 0 {
		e.lose(DropReasonShutdown, left)
		e.logger.Warn("pod start traces not exported: the endpoint did not take them before the shutdown timeout",
			"endpoint", e.endpoint, "traces", len(left), "shutdown_timeout", e.cfg.ShutdownTimeout)
		errs = append(errs, fmt.Errorf("%d traces not sent within %v", len(left), e.cfg.ShutdownTimeout))
	}
	// The provider's only processor is endedSpans: nothing to wait for.
	if err := e.provider.Shutdown(context.Background()); err != nil {
		errs = append(errs, err)
	}
	// An exporter closes its connection even when sctx has expired; that
	// expiry is already told by the traces left.
	if err := e.spanExp.Shutdown(sctx); err != nil && sctx.Err() == nil {
		errs = append(errs, fmt.Errorf("shutting down span exporter: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("shutting down trace export: %w", err)
	}
	return nil
}

// buildQueued builds every timeline queued so far.
func (e *TraceExporter) buildQueued() {
	for {
		select {
		case job := <-e.jobs:
			e.build(job)
		default:
			return
		}
	}
}

// build makes job's spans into a trace on the export queue, which drops
// its oldest traces if this one needs their room.
func (e *TraceExporter) build(job exportJob) {
	tl := job.tl
	var n int
	if job.rec != nil {
		n = e.builder.emitRecovery(context.Background(), job.rec)
	} else {
		n = e.builder.emit(context.Background(), tl, job.alerts...)
	}
	spans := e.ended.take()
	t := &queuedTrace{id: TraceIDForPod(tl.Pod.UID), pod: tl.Pod.Namespace + "/" + tl.Pod.Name, spans: spans, bytes: otlpSize(spans)}
	e.logger.Debug("pod start trace built", "pod", tl.Pod.Name, "namespace", tl.Pod.Namespace,
		"trace_id", t.id.String(), "spans", n, "bytes", t.bytes)
	if dropped := e.queue.push(t); len(dropped) > 0 {
		e.lose(DropReasonQueueBytes, dropped)
	}
	// Counted once queued: Stats never shows a trace built but neither
	// queued nor dropped (a test waiting for n built traces read the
	// queue before the last push, and fired the retry into it).
	e.timelines.Add(1)
	e.spans.Add(uint64(n))
}

// Flush waits until every timeline exported before the call has been built
// and its trace has left the export queue, accepted by the endpoint or
// dropped, or ctx ends. It cuts a back-off short: a failed batch is sent
// again at once. It needs Run to be running.
func (e *TraceExporter) Flush(ctx context.Context) error {
	reply := make(chan uint64, 1)
	select {
	case e.flushes <- reply:
	case <-e.done:
		return ErrClosed
	case <-ctx.Done():
		return fmt.Errorf("flushing traces: %w", ctx.Err())
	}
	var seq uint64
	select {
	case seq = <-reply:
	case <-ctx.Done():
		return fmt.Errorf("flushing traces: %w", ctx.Err())
	}
	select {
	case e.retryNow <- struct{}{}:
	default:
	}
	if err := e.queue.waitLeft(ctx, seq); err != nil {
		return fmt.Errorf("flushing traces: %w", err)
	}
	return nil
}

// Queued returns the traces waiting for the endpoint and their size (see
// TraceConfig.QueueBytes), for the readyline_export_queue_* gauges.
func (e *TraceExporter) Queued() (traces int, bytes int64) { return e.queue.len() }

// Stats returns the exporter's counters.
func (e *TraceExporter) Stats() TraceStats {
	queued, bytes := e.queue.len()
	return TraceStats{
		Timelines:      e.timelines.Load(),
		Spans:          e.spans.Load(),
		Dropped:        e.dropped.Load(),
		ExportedTraces: e.exportedTraces.Load(),
		ExportedSpans:  e.exportedSpans.Load(),
		FailedExports:  e.failures.Load(),
		FailedSpans:    e.failedSpans.Load(),
		DroppedTraces:  e.droppedTraces.Load(),
		DroppedSpans:   e.droppedSpans.Load(),
		QueuedTraces:   queued,
		QueuedBytes:    bytes,
	}
}

// endedSpans is the span processor of a TraceExporter's provider: it keeps
// the spans ended since the last take, which build makes into one trace
// once a timeline's spans are made. It is safe for concurrent use.
type endedSpans struct {
	mu    sync.Mutex
	spans []sdktrace.ReadOnlySpan
}

func (p *endedSpans) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd keeps s, an immutable snapshot of the span.
func (p *endedSpans) OnEnd(s sdktrace.ReadOnlySpan) {
	p.mu.Lock()
	p.spans = append(p.spans, s)
	p.mu.Unlock()
}

func (p *endedSpans) take() []sdktrace.ReadOnlySpan {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.spans
	p.spans = nil
	return s
}

func (p *endedSpans) Shutdown(context.Context) error   { return nil }
func (p *endedSpans) ForceFlush(context.Context) error { return nil }
