package exporter

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/readyline/readyline/correlator"
)

// DurationBuckets are the histogram bucket bounds, in seconds, of every
// duration readyline records: from 50 ms (a fast sandbox) to 5 minutes (the
// usual pod start timeout).
var DurationBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 7.5, 10, 15, 20, 30, 45, 60, 90, 120, 180, 300}

// ImagePullBuckets are the bucket bounds, in seconds, of
// readyline_image_pull_duration_seconds: the kubelet's own for
// kubelet_image_pull_duration_seconds (pkg/kubelet/metrics
// imagePullDurationBuckets, 1 s to 1 h), with 0.1 to 0.5 s in front for
// pulls of layers already present, so every kubelet bound is one of them.
var ImagePullBuckets = []float64{0.1, 0.25, 0.5, 1, 5, 10, 20, 30, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600}

// PullThroughputBuckets are the bucket bounds, in bytes a second, of
// readyline_image_pull_throughput_bytes_per_second: from a registry that
// trickles (100 kB/s) to a local mirror (1 GB/s).
var PullThroughputBuckets = []float64{1e5, 1e6, 5e6, 1e7, 2.5e7, 5e7, 1e8, 2.5e8, 5e8, 1e9}

// minThroughputPull is the shortest pull whose throughput is recorded: a
// shorter one found its layers present, and its size over its time would
// say nothing of a registry.
const minThroughputPull = time.Second

// Label names. They are all bounded: a namespace, a phase, a container kind,
// an outcome, a drop source and reason, an alert rule's name (AlertNames),
// an image size bucket (ImageSizeBucket), a kubelet call's method
// (collector/event.CRIMethods, or MethodOther).
// Pod names and UIDs never become labels; they are in the traces.
const (
	LabelNamespace     = "namespace"
	LabelPhase         = "phase"
	LabelContainerKind = "container_kind"
	LabelOutcome       = "outcome"
	LabelSource        = "source"
	LabelReason        = "reason"
	LabelAlert         = "alert"
	LabelMethod        = "method"
	// LabelCause is what took Ready away before a return to it
	// (correlator.CauseKind: exit, livenessProbe, startupProbe, postStart,
	// killed, readiness).
	LabelCause = "cause"
	// LabelImageSize is the kubelet's own label name and values for an
	// image's size (kubelet_image_pull_duration_seconds image_size_in_bytes:
	// "0-10MB", ..., "N/A" when unknown).
	LabelImageSize = "image_size_in_bytes"
)

// Values of the phase label of readyline_container_phase_duration_seconds.
const (
	// ContainerPhaseCreateToStart: the runtime's creation -> start.
	ContainerPhaseCreateToStart = "create_to_start"
	// ContainerPhaseRun: the entrypoint's exec -> exit (init containers, and
	// any container that exited during the start).
	ContainerPhaseRun = "run"
	// ContainerPhasePostStart: the postStart hook.
	ContainerPhasePostStart = "post_start"
	// ContainerPhaseStartupProbe: started -> first successful startupProbe.
	ContainerPhaseStartupProbe = "startup_probe"
	// ContainerPhaseReady: started -> ready=true observed in the API.
	ContainerPhaseReady = "ready"
	// ContainerPhaseKubeletReaction: the entrypoint's exit -> the next
	// container created.
	ContainerPhaseKubeletReaction = "kubelet_reaction"
)

// DropCounter counts events dropped before they reached a timeline or an
// export; *Metrics is one. Packages that drop events can take a DropCounter
// (or the method value m.AddDropped as a func(source, reason string, n int))
// without importing OTel. Implementations are safe for concurrent use.
type DropCounter interface {
	AddDropped(source, reason string, n int)
}

// Metrics records readyline's histograms and counters with the OTel metrics
// SDK and serves them in the Prometheus format. Metrics is safe for
// concurrent use.
type Metrics struct {
	logger   *slog.Logger
	registry *prometheus.Registry
	provider *sdkmetric.MeterProvider

	podPhase       metric.Float64Histogram
	podStartup     metric.Float64Histogram
	readyToStart   metric.Float64Histogram
	containerPhase metric.Float64Histogram
	imagePull      metric.Float64Histogram
	pullRate       metric.Float64Histogram
	readyAgain     metric.Float64Histogram
	starts         metric.Int64Counter
	dropped        metric.Int64Counter
	exportFailures metric.Int64Counter
	alerts         metric.Int64Counter

	exportQueue atomic.Pointer[func() (traces int, bytes int64)] // see WatchExportQueue
	rings       atomic.Pointer[func() []Ring]                    // see WatchRings
	sources     sourceHealth                                     // readyline_source_up (sources.go)
	work        sourceWork                                       // the kubelet's calls, the content store's reads (sourcework.go)
}

// NewMetrics creates the instruments on a registry of their own, which also
// carries the Go runtime and process collectors. logger may be nil.
func NewMetrics(logger *slog.Logger) (*Metrics, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	reg := prometheus.NewRegistry()
	if err := reg.Register(collectors.NewGoCollector()); err != nil {
		return nil, fmt.Errorf("registering Go collector: %w", err)
	}
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, fmt.Errorf("registering process collector: %w", err)
	}
	exp, err := otelprom.New(
		otelprom.WithRegisterer(reg),
		otelprom.WithoutScopeInfo(),
		otelprom.WithoutTargetInfo(),
	)
	if err != nil {
		return nil, fmt.Errorf("creating Prometheus exporter: %w", err)
	}
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	meter := provider.Meter("github.com/readyline/readyline/exporter")

	m := &Metrics{logger: logger, registry: reg, provider: provider}
	hist := func(dst *metric.Float64Histogram, name, desc string) {
		if err != nil {
			return
		}
		*dst, err = meter.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
			metric.WithExplicitBucketBoundaries(DurationBuckets...))
	}
	counter := func(dst *metric.Int64Counter, name, desc string) {
		if err != nil {
			return
		}
		*dst, err = meter.Int64Counter(name, metric.WithDescription(desc))
	}
	// The OTel names become readyline_pod_phase_duration_seconds,
	// readyline_events_dropped_total, ... in Prometheus.
	hist(&m.podPhase, "readyline.pod.phase.duration",
		"Duration of each pod-level phase of a pod start (pod.schedule, pod.wait_sandbox, pod.sandbox, pod.init, pod.containers).")
	hist(&m.podStartup, "readyline.pod.startup.duration",
		"Pod creation to the end of its start (Ready, failure, deletion or timeout), by outcome.")
	hist(&m.readyToStart, "readyline.pod.ready_to_start_containers",
		"PodScheduled observed to PodReadyToStartContainers observed: the sandbox latency users alert on.")
	hist(&m.readyAgain, "readyline.pod.ready_again.duration",
		"A return to Ready after a pod lost it once its start was over: the exit of the container that took it away (or the loss, as the API showed it) to Ready observed again, by namespace and cause (exit, livenessProbe, startupProbe, postStart, killed, readiness).")
	hist(&m.containerPhase, "readyline.container.phase.duration",
		"Duration of a container's steps during a pod start (create_to_start, run, post_start, startup_probe, ready, kubelet_reaction), by container kind.")
	if err == nil {
		// readyline_image_pull_duration_seconds
		m.imagePull, err = meter.Float64Histogram("readyline.image.pull.duration", metric.WithUnit("s"),
			metric.WithDescription("Duration of each PullImage call of the kubelet during a pod start (the call alone: not its wait in the kubelet's serialized puller, which kubelet_image_pull_duration_seconds includes), by outcome (success, failure) and image_size_in_bytes (the kubelet's size buckets; N/A when the size is unknown)."),
			metric.WithExplicitBucketBoundaries(ImagePullBuckets...))
	}
	if err == nil {
		// readyline_image_pull_throughput_bytes_per_second
		m.pullRate, err = meter.Float64Histogram("readyline.image.pull.throughput", metric.WithUnit("By/s"),
			metric.WithDescription("The size of each image a PullImage call of the kubelet pulled during a pod start, over the call's duration: what the registry (or its mirror) gave the node, by image_size_in_bytes. Pulls shorter than a second (layers already present) and pulls of unknown size are not counted."),
			metric.WithExplicitBucketBoundaries(PullThroughputBuckets...))
	}
	counter(&m.starts, "readyline.pod.starts", "Pod starts observed, by outcome.")
	counter(&m.dropped, "readyline.events.dropped", "Events dropped before they reached a timeline or an export, by source and reason.")
	counter(&m.exportFailures, "readyline.export.failures", "Trace export requests that failed; a batch sent again after a failure counts once per request.")
	counter(&m.alerts, "readyline.alerts", "Pod starts that took longer than an --alert threshold, by alert (one per pod and alert).")
	// readyline_export_queue_bytes and readyline_export_queue_traces.
	var queueBytes, queueTraces metric.Int64ObservableGauge
	if err == nil {
		queueBytes, err = meter.Int64ObservableGauge("readyline.export.queue", metric.WithUnit("By"),
			metric.WithDescription("Pod start traces waiting for the OTLP endpoint: their size as OTLP requests, bounded by --export-queue-bytes."))
	}
	if err == nil {
		queueTraces, err = meter.Int64ObservableGauge("readyline.export.queue.traces", metric.WithUnit("{trace}"),
			metric.WithDescription("Pod start traces waiting for the OTLP endpoint."))
	}
	if err == nil {
		_, err = meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
			if queued := m.exportQueue.Load(); queued != nil {
				traces, bytes := (*queued)()
				o.ObserveInt64(queueBytes, bytes)
				o.ObserveInt64(queueTraces, int64(traces))
			}
			return nil
		}, queueBytes, queueTraces)
	}
	// readyline_ring_buffer_size_bytes and readyline_ring_buffer_peak_bytes.
	var ringSize, ringPeak metric.Int64ObservableGauge
	if err == nil {
		ringSize, err = meter.Int64ObservableGauge("readyline.ring_buffer.size", metric.WithUnit("By"),
			metric.WithDescription("Size of each kernel ring buffer (process: --ring-buffer-size, tcp: --tcp-ring-buffer-size, cri_calls: --cri-calls-ring-buffer-size), by source."))
	}
	if err == nil {
		ringPeak, err = meter.Int64ObservableGauge("readyline.ring_buffer.peak", metric.WithUnit("By"),
			metric.WithDescription("The most each kernel ring buffer held when readyline read it, since it started, by source: near the size, a burst may be lost (readyline_events_dropped_total{reason=\"ring_full\"})."))
	}
	if err == nil {
		_, err = meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
			if rings := m.rings.Load(); rings != nil {
				for _, r := range (*rings)() {
					src := metric.WithAttributes(attribute.String("source", r.Source))
					o.ObserveInt64(ringSize, int64(r.Size), src)
					o.ObserveInt64(ringPeak, int64(r.Peak), src)
				}
			}
			return nil
		}, ringSize, ringPeak)
	}
	if err == nil {
		_, err = meter.Int64ObservableGauge("readyline.source.up",
			metric.WithDescription("Whether each source sees (1) or is blind (0): not attached or not yet, its ring buffer losing records, its runtime or API server not answering; by source."),
			metric.WithInt64Callback(m.sources.observe))
	}
	if err == nil {
		m.work, err = newSourceWork(meter)
	}
	if err != nil {
		return nil, fmt.Errorf("creating instruments: %w", err)
	}
	return m, nil
}

// WatchExportQueue makes readyline_export_queue_bytes and
// readyline_export_queue_traces report what queued returns at each scrape
// (TraceExporter.Queued); until it is called they have no series. queued
// must be safe for concurrent use.
func (m *Metrics) WatchExportQueue(queued func() (traces int, bytes int64)) {
	m.exportQueue.Store(&queued)
}

// Ring is a source's kernel ring buffer: its size and the most it held
// when read (collector.RingUsage).
type Ring struct {
	Source     string
	Size, Peak uint64
}

// WatchRings makes readyline_ring_buffer_size_bytes and
// readyline_ring_buffer_peak_bytes report what rings returns at each
// scrape; until it is called they have no series. rings must be safe for
// concurrent use.
func (m *Metrics) WatchRings(rings func() []Ring) {
	m.rings.Store(&rings)
}

// Record adds a finished pod start to the histograms and counters. Moments
// the timeline lacks leave their histograms untouched, and so do, in a
// timeline marked api_lag (the API delivered its status late), the
// measures that end at an observation of the API's: a container's ready
// (and a startup probe known only from the status), and a start that did
// not end Ready. The conditions the correlator corrected (Coarse, at their
// lastTransitionTime) are measured as it gives them.
//
// Every histogram observation is offered as an exemplar of the pod's
// trace: trace_id TraceIDForPod, span_id the pod.startup root's
// (RootSpanContext; the span that shows a phase has a random id, not known
// here). The SDK keeps one exemplar per series and bucket, a uniform pick
// among the observations since the last scrape, and the last one kept
// until a later observation replaces it; /metrics shows them in the
// OpenMetrics format (see Handler). The ids are derived from the UID, so
// they are offered whether or not the trace reaches an OTLP endpoint.
// RecordRecovery records a return to Ready after a pod's start
// (readyline_pod_ready_again_duration_seconds), its exemplar the pod's trace.
func (m *Metrics) RecordRecovery(r *correlator.Recovery) {
	if d, ok := between(r.Start, r.End); ok {
		traced := oteltrace.ContextWithSpanContext(context.Background(), RootSpanContext(r.Pod.UID))
		m.readyAgain.Record(traced, d.Seconds(), metric.WithAttributes(attribute.String(LabelNamespace, r.Pod.Namespace),
			attribute.String(LabelCause, string(r.CauseKind))))
	}
}

func (m *Metrics) Record(tl *correlator.Timeline) {
	ctx := context.Background()
	// The OTel SDK's default exemplar filter (TraceBased) offers an
	// observation when its context carries a sampled span context.
	traced := oteltrace.ContextWithSpanContext(ctx, RootSpanContext(tl.Pod.UID))
	ns := attribute.String(LabelNamespace, tl.Pod.Namespace)
	outcome := attribute.String(LabelOutcome, string(tl.Outcome))
	// Each measure is recorded once, when it is complete: a partial timeline
	// (a start still in progress at its deadline) records what was over by
	// then, and the timeline that completes it what ended after ReportedAt
	// and the start itself.
	now := func(end time.Time) bool {
		switch {
		case tl.Partial:
			return !end.After(tl.End)
		case !tl.ReportedAt.IsZero():
			return end.After(tl.ReportedAt)
		}
		return true
	}

	apiLag := slices.Contains(tl.Marks, correlator.MarkAPILag)
	if !tl.Partial {
		m.starts.Add(ctx, 1, metric.WithAttributes(ns, outcome))
		if d, ok := between(tl.Start, tl.End); ok && (!apiLag || tl.Outcome == correlator.OutcomeReady) {
			m.podStartup.Record(traced, d.Seconds(), metric.WithAttributes(ns, outcome))
		}
	}
	for _, p := range tl.Phases {
		if d, ok := between(p.Start, p.End); ok && now(p.End) {
			m.podPhase.Record(traced, d.Seconds(), metric.WithAttributes(ns, attribute.String(LabelPhase, p.Name)))
		}
	}
	if d, at, ok := readyToStartContainers(tl); ok && now(at) {
		m.readyToStart.Record(traced, d.Seconds(), metric.WithAttributes(ns))
	}
	for i := range tl.ImagePulls {
		ip := &tl.ImagePulls[i]
		if d, ok := between(ip.Call.Start, ip.Call.End); ok && now(ip.Call.End) {
			m.imagePull.Record(traced, d.Seconds(), metric.WithAttributes(
				attribute.String(LabelOutcome, pullOutcome(ip)), attribute.String(LabelImageSize, ImageSizeBucket(ip.Size))))
			if !ip.Call.Err && ip.Size > 0 && d >= minThroughputPull {
				m.pullRate.Record(traced, float64(ip.Size)/d.Seconds(), metric.WithAttributes(
					attribute.String(LabelImageSize, ImageSizeBucket(ip.Size))))
			}
		}
	}
	for ci := range tl.Containers {
		c := &tl.Containers[ci]
		kind := attribute.String(LabelContainerKind, string(c.Kind))
		for ai := range c.Attempts {
			for _, st := range containerSteps(&c.Attempts[ai], apiLag) {
				if !now(st.end) {
					continue
				}
				m.containerPhase.Record(traced, st.d.Seconds(),
					metric.WithAttributes(ns, kind, attribute.String(LabelPhase, st.phase)))
			}
		}
	}
}

// ReadyToStartContainers is the time from PodScheduled to
// PodReadyToStartContainers, both as observed in the API (ms precision).
// ok is false when either was not observed.
func ReadyToStartContainers(tl *correlator.Timeline) (d time.Duration, ok bool) {
	d, _, ok = readyToStartContainers(tl)
	return d, ok
}

// readyToStartContainers is ReadyToStartContainers and when it ended.
func readyToStartContainers(tl *correlator.Timeline) (d time.Duration, ready time.Time, ok bool) {
	var scheduled time.Time
	for _, c := range tl.Conditions {
		switch c.Type {
		case correlator.CondPodScheduled:
			scheduled = c.Observed
		case correlator.CondPodReadyToStartContainers:
			ready = c.Observed
		}
	}
	d, ok = between(scheduled, ready)
	return d, ready, ok
}

type containerStep struct {
	phase string
	d     time.Duration
	end   time.Time
}

// containerSteps are the container_phase durations of one attempt; with
// apiLag (the API's observations late) not those that end at one.
func containerSteps(a *correlator.ContainerAttempt, apiLag bool) []containerStep {
	var steps []containerStep
	add := func(phase string, from, to time.Time) {
		if d, ok := between(from, to); ok {
			steps = append(steps, containerStep{phase, d, to})
		}
	}
	add(ContainerPhaseCreateToStart, a.Created, a.Started)
	if p := a.Process; p != nil && !p.Exit.IsZero() {
		add(ContainerPhaseRun, p.Exec, p.Exit)
	} else if !a.Finished.IsZero() {
		add(ContainerPhaseRun, a.Started, a.Finished)
	}
	if h := a.PostStart; h != nil {
		add(ContainerPhasePostStart, h.Start, h.End)
	}
	for _, p := range a.Probes {
		if p.Kind == correlator.ProbeStartup && p.Result == correlator.ProbeSuccess && !(apiLag && p.Inferred) {
			end := p.End
			if end.IsZero() {
				end = p.Start
			}
			add(ContainerPhaseStartupProbe, a.Started, end)
			break
		}
	}
	if !apiLag {
		add(ContainerPhaseReady, a.Started, a.ReadyObserved)
	}
	add(ContainerPhaseKubeletReaction, a.Exit(), a.NextCreated)
	return steps
}

// between is b - a when both are known and b is not before a.
func between(a, b time.Time) (time.Duration, bool) {
	if a.IsZero() || b.IsZero() || b.Before(a) {
		return 0, false
	}
	return b.Sub(a), true
}

// AddDropped counts n events dropped by source (the package or stage that
// dropped them) for reason; both must come from a small fixed set. n = 0
// makes the series exist before the first drop, so that rate() sees that
// one too.
func (m *Metrics) AddDropped(source, reason string, n int) {
	if n < 0 {
		return
	}
	m.dropped.Add(context.Background(), int64(n), metric.WithAttributes(
		attribute.String(LabelSource, source), attribute.String(LabelReason, reason)))
}

// AddAlerts counts n pod starts that broke the alert rule name, one of
// AlertNames; n = 0 makes the series exist before the first alert.
func (m *Metrics) AddAlerts(name string, n int) {
	if n < 0 {
		return
	}
	m.alerts.Add(context.Background(), int64(n), metric.WithAttributes(attribute.String(LabelAlert, name)))
}

// ExportFailed counts one failed trace export request.
func (m *Metrics) ExportFailed() {
	m.exportFailures.Add(context.Background(), 1)
}

// Handler serves /metrics and, when health is not nil, /healthz
// (HealthHandler). Mount other handlers (Store.Handler) next to it with an
// http.ServeMux of your own. readyline run passes nil: it serves its
// health on a listener of its own, which the pod network cannot reach,
// because whoever can reach /metrics could otherwise hold the connections
// the kubelet's probes need.
//
// /metrics answers in the format the scraper's Accept header asks for: the
// Prometheus text format by default, OpenMetrics text for
// "application/openmetrics-text" (the histograms' buckets then carry their
// exemplars, "# {trace_id=...,span_id=...} value timestamp"), or protobuf
// (which carries them too). The text format has no exemplars.
func (m *Metrics) Handler(health func() error) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{
		ErrorLog:          slog.NewLogLogger(m.logger.Handler(), slog.LevelWarn),
		ErrorHandling:     promhttp.ContinueOnError,
		EnableOpenMetrics: true,
	}))
	if health != nil {
		mux.Handle("GET /healthz", HealthHandler(health))
	}
	return mux
}

// HealthHandler answers 200 "ok" while health returns nil, and 503
// "unhealthy: " and the error otherwise.
func HealthHandler(health func() error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if err := health(); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "unhealthy: %v\n", err)
			return
		}
		fmt.Fprintln(w, "ok")
	})
}

// Metrics counts a TraceExporter's failures and drops, and an Alerter's
// alerts and drops.
var (
	_ ExportObserver = (*Metrics)(nil)
	_ AlertObserver  = (*Metrics)(nil)
)
