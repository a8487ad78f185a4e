package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/readyline/readyline/collector"
	"github.com/readyline/readyline/collector/event"
	"github.com/readyline/readyline/collector/kubeapi"
	"github.com/readyline/readyline/collector/podevents"
	"github.com/readyline/readyline/collector/secrets"
	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter"
)

// runConfig is the validated configuration of `readyline run`, the daemon.
type runConfig struct {
	log         logConfig
	nodeName    string
	kubeconfig  string
	criEndpoint string
	metricsAddr string
	apiAddr     string
	healthAddr  string
	secureAPI   secureAPIConfig
	nodeAPI     nodeAPIConfig
	record      string // a file name in recordDir
	recordDir   string
	keep        uint
	keepBytes   int64
	pprof       bool
	trace       exporter.TraceConfig
	process     processFlags
	tcpRing     uint // --tcp-ring-buffer-size
	callsRing   uint // --cri-calls-ring-buffer-size
	inFlight    uint // --cri-calls-in-flight
	correlator  correlator.Config
	alerts      alertRules
}

func parseRunConfig(args []string, stderr io.Writer) (runConfig, error) {
	var c runConfig
	fs := newFlagSet("readyline run", stderr)
	c.log.register(fs)
	fs.String(&c.nodeName, "node-name", os.Getenv("NODE_NAME"), "this node's name (default: $NODE_NAME from the downward API, else the host name)")
	fs.String(&c.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, else the in-cluster config)")
	fs.String(&c.criEndpoint, "cri-endpoint", "", "container runtime socket, unix:///path (default: containerd's or CRI-O's default socket, whichever answers)")
	fs.String(&c.trace.Endpoint, "otlp-endpoint", "", "where traces go: host:port (OTLP gRPC) or http://host:4318 (OTLP HTTP) (default: the OTEL_EXPORTER_OTLP_* variables, else localhost:4317)")
	fs.String(&c.trace.Protocol, "otlp-protocol", "", "grpc or http/protobuf (default: from the endpoint)")
	fs.Bool(&c.trace.Insecure, "otlp-insecure", false, "no TLS for a host:port endpoint")
	fs.Bytes(&c.trace.QueueBytes, "export-queue-bytes", 16<<20, "the most pod start traces waiting for the OTLP endpoint may take while it is down or slow, by their size as OTLP requests (about 8Ki a pod; the heap they hold is ~2.3 times that), the oldest dropped first: a `size` in bytes, or e.g. 16Mi")
	fs.String(&c.metricsAddr, "metrics-addr", ":9464", fmt.Sprintf("serve Prometheus /metrics here (empty: off); at most %d connections at once from one address, %d in all",
		podNetworkHTTPLimits.MaxConnsPerClient, podNetworkHTTPLimits.MaxConns))
	registerHealthAddr(fs, &c.healthAddr)
	fs.String(&c.apiAddr, "api-addr", defaultAPIAddr, "serve the timeline API that 'readyline explain' reads, and the waterfall pages under /ui/, here: every start, unauthenticated; unix:PATH, a socket only root may use, or a TCP host:port (empty: off)")
	c.secureAPI.register(fs)
	c.nodeAPI.register(fs)
	fs.Bool(&c.pprof, "pprof", false, "also serve Go's profiles (net/http/pprof) under /debug/pprof/ on the timeline API's address, for a heap or CPU profile of the daemon")
	registerRecordFlags(fs, &c.record, &c.recordDir)
	fs.Uint(&c.keep, "keep", 256, "how many recent pod starts the timeline API keeps")
	fs.Bytes(&c.keepBytes, "keep-bytes", 32<<20, "the most memory those pod starts may hold (their JSON, deflated, as they are kept), the oldest dropped first: a `size` in bytes, or e.g. 32Mi")
	c.process.register(fs)
	fs.Uint(&c.tcpRing, "tcp-ring-buffer-size", collector.DefaultTCPRingBytes,
		"the kubelet's probe connections' kernel ring buffer size in bytes (a power of two, at least 4096); see readyline_ring_buffer_peak_bytes{source=\"tcp\"}")
	fs.Uint(&c.callsRing, "cri-calls-ring-buffer-size", collector.DefaultKubeletCallsRingBytes,
		"the kubelet calls' kernel ring buffer size in bytes (a power of two, at least 4096); see readyline_ring_buffer_peak_bytes{source=\"cri_calls\"}")
	fs.Uint(&c.inFlight, "cri-calls-in-flight", collector.DefaultKubeletCallsInFlight,
		"how many of the kubelet's calls the kernel follows at once between entry and return (~1.2 KiB of kernel memory each); past it the oldest is forgotten and counted in readyline_events_dropped_total{source=\"cri_calls\",reason=\"entry_missed\"}")
	registerCorrelatorFlags(fs, &c.correlator)
	c.alerts.register(fs)
	if err := fs.parse(args); err != nil {
		return c, err
	}
	if err := c.process.validate(stderr); err != nil {
		return c, err
	}
	if err := validateCorrelatorFlags(c.correlator, stderr); err != nil {
		return c, err
	}
	if err := validateRecordName(c.record, c.recordDir, stderr); err != nil {
		return c, err
	}
	if err := c.nodeAPI.validate(); err != nil {
		fmt.Fprintln(stderr, err)
		return c, errUsage
	}
	if err := c.secureAPI.validate(); err != nil {
		fmt.Fprintln(stderr, err)
		return c, errUsage
	}
	for _, f := range []struct {
		name string
		n    uint
	}{{"tcp-ring-buffer-size", c.tcpRing}, {"cri-calls-ring-buffer-size", c.callsRing}} {
		if _, err := ringBytes(f.name, f.n, stderr); err != nil {
			return c, err
		}
	}
	if c.inFlight < 64 || c.inFlight > 1<<20 {
		fmt.Fprintf(stderr, "--cri-calls-in-flight: %d is not between 64 and 1048576\n", c.inFlight)
		return c, errUsage
	}
	if c.nodeName == "" {
		h, err := os.Hostname()
		if err != nil {
			fmt.Fprintln(stderr, "--node-name: not set and no host name:", err)
			return c, errUsage
		}
		c.nodeName = strings.ToLower(h)
	}
	c.trace.NodeName, c.trace.ServiceVersion = c.nodeName, version
	// The correlator joins pod processes, and CNI plugins to their sandbox.
	c.process.cfg.PodsOnly, c.process.cfg.KeepCNI = true, true
	return c, nil
}

// daemon is `readyline run`: sources -> correlator -> exporters.
type daemon struct {
	cfg     runConfig
	logger  *slog.Logger
	events  chan event.Event
	metrics *exporter.Metrics
	traces  *exporter.TraceExporter
	alerter *exporter.Alerter // nil without --alert
	store   *exporter.Store
	rec     *event.Writer
	recFile *os.File
	losses  *lossCounter // the sources' drops, polled every second; nil in tests
	live    *liveStarts  // the API's questions about starts in progress
	reads   *eventReads  // the pods' Events, read when their starts need them
	// secrets removes the pods' Secret values from every event before it
	// is recorded or correlated; nil in tests that feed no pods.
	secrets *secrets.Scrubber
	// pace has the kernel sources read their rings every poll while the
	// correlator is busy (a start open within its timeout, or one built
	// once its facts are in), every second otherwise; pullPace has the
	// pull sampler look while any start is open, however long its pull.
	// nil (always fast) in tests.
	pace, pullPace *collector.Pace

	mu      sync.Mutex
	healthy error // nil while the correlator loop runs
	// watchdog fails the health when the correlator loop stalls; nil in
	// tests that do not look.
	watchdog *loopWatchdog
}

// daemonGCPercent is the daemon's GOGC when the environment sets none:
// the heap may grow half past what is live, not double, which holds
// megabytes less RSS for a little more CPU per pod start (make bench-node
// measures both; the README's "What it costs" has its figures).
const daemonGCPercent = 50

// daemonMaxProcs is the daemon's GOMAXPROCS when the environment sets none.
// Its work is many small pieces (an event, a drained mark, a tick) handed
// from goroutine to goroutine; with a second P each hand-over woke an idle
// thread to run it, and on a node of 110 pods probed every second that
// waking was most of its CPU: bench-node's steady state measured 2.9% of
// a core with two, 1.2% with one. System calls and cgo still leave the P
// to another thread; a burst of starts is what the ring buffers absorb.
const daemonMaxProcs = 1

// runtimeDefaults sets the daemon's GOGC (daemonGCPercent) and GOMAXPROCS
// (daemonMaxProcs), each unless the environment (lookup) sets it.
func runtimeDefaults(lookup func(string) (string, bool)) {
	if _, ok := lookup("GOGC"); !ok {
		debug.SetGCPercent(daemonGCPercent)
	}
	if _, ok := lookup("GOMAXPROCS"); !ok {
		runtime.GOMAXPROCS(daemonMaxProcs)
	}
}

// defaultMemProfileRate is runtime.MemProfileRate's default.
const defaultMemProfileRate = 512 * 1024

// profileMemory samples allocations for the heap profile only when --pprof
// serves it. Go samples from its first allocation, and the packages' init
// alone allocates enough for the 1.4 MiB table of sampled call stacks; the
// DaemonSet sets GODEBUG=memprofilerate=0, which the runtime reads before
// any of them, and --pprof turns sampling back on from here.
func profileMemory(pprof bool) {
	switch {
	case !pprof:
		runtime.MemProfileRate = 0
	case runtime.MemProfileRate == 0:
		runtime.MemProfileRate = defaultMemProfileRate
	}
}

// runDaemon runs readyline on this node until ctx is done.
func runDaemon(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseRunConfig(args, stderr)
	if err != nil {
		return err
	}
	runtimeDefaults(os.LookupEnv)
	profileMemory(cfg.pprof)
	logger, err := cfg.log.logger(stderr)
	if err != nil {
		return err
	}
	d := &daemon{cfg: cfg, logger: logger, events: make(chan event.Event, 8192), store: exporter.NewStore(exporter.StoreLimits{Timelines: int(cfg.keep), Bytes: cfg.keepBytes}),
		pace: collector.NewPace(), pullPace: collector.NewPace()}
	d.watchdog = newLoopWatchdog(correlatorStall, func() int { return len(d.events) })
	return d.run(ctx)
}

func (d *daemon) run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var err error
	if d.metrics, err = exporter.NewMetrics(d.logger); err != nil {
		return err
	}
	d.cfg.trace.Observer = d.metrics
	if d.traces, err = exporter.NewTraceExporter(d.cfg.trace, d.logger); err != nil {
		return err
	}
	d.metrics.WatchExportQueue(d.traces.Queued)
	if d.cfg.record != "" {
		if d.recFile, err = openRecording(d.cfg.recordDir, d.cfg.record); err != nil {
			return err
		}
		d.rec = event.NewWriter(d.recFile)
	}

	procs, err := collector.NewProcessSource(d.cfg.process.cfg, d.logger.With("source", "process"))
	if err != nil {
		return err
	}
	rc, err := collector.RESTConfig(d.cfg.kubeconfig)
	if err != nil {
		return err
	}
	client, err := kubeapi.New(rc)
	if err != nil {
		return err
	}
	pods, err := collector.NewPodWatch(collector.PodWatchConfig{NodeName: d.cfg.nodeName, Pods: client.Pods(metav1.NamespaceAll), Argv: d.cfg.process.cfg.Argv},
		d.logger.With("source", "pods"))
	if err != nil {
		return err
	}
	if len(d.cfg.alerts) > 0 {
		d.alerter, err = exporter.NewAlerter(exporter.AlerterConfig{Rules: d.cfg.alerts, NodeName: d.cfg.nodeName,
			Events: func(ns string) exporter.EventClient { return client.Events(ns) }, Observer: d.metrics}, d.logger.With("source", "alerts"))
		if err != nil {
			return err
		}
	}
	rt, err := collector.NewRuntimeSource(collector.RuntimeConfig{Endpoint: d.cfg.criEndpoint}, d.logger.With("source", event.SourceRuntime))
	if err != nil {
		return err
	}
	// The values of the pods' Secrets, read where the node holds them: the
	// environment the kubelet gave the runtime, the files of the volumes.
	d.secrets = secrets.New(secrets.Config{Env: rt, Files: &collector.KubeletVolumes{}}, d.logger.With("source", "secrets"))
	// The kernel-level view of the kubelet is optional: without it, the
	// timelines fall back on the runtime's and the API's times.
	calls, err := collector.NewKubeletCallSource(collector.KubeletCallConfig{RingBufferBytes: uint32(d.cfg.callsRing), MaxCallsInFlight: uint32(d.cfg.inFlight),
		Argv: d.cfg.process.cfg.Argv}, d.logger.With("source", event.SourceKubeletCalls))
	if err != nil {
		d.logger.Warn("kubelet calls are not traced: the kernel refused the uprobe programs; sandbox and container phases use the runtime's times", "error", err)
	}
	tcp, err := collector.NewTCPSource(collector.TCPConfig{RingBufferBytes: uint32(d.cfg.tcpRing)}, d.logger.With("source", "tcp"))
	if err != nil {
		d.logger.Warn("httpGet/tcpSocket probe attempts are not traced: the kernel refused the TCP program; they are inferred from the API's status flips", "error", err)
	}
	node := collector.NodeSources{Process: procs, Runtime: rt, Pods: pods, Calls: calls, TCP: tcp, Logger: d.logger, Pace: d.pace}
	sources := node.Sources()
	d.watchSources(sources, node.Refused(time.Now().UTC()))
	reader, err := podevents.NewReader(podevents.Config{
		Events: func(ns string) podevents.EventLister { return client.Events(ns) }, Argv: d.cfg.process.cfg.Argv},
		d.logger.With("source", event.SourcePodEvents))
	if err != nil {
		return err
	}
	d.reads = newEventReads(reader, d.logger.With("source", event.SourcePodEvents))
	var inFlight func() ([]*event.CRICall, error)
	if calls != nil {
		inFlight = func() ([]*event.CRICall, error) { return calls.CallsInFlight() } // all of them: a live question's
	}
	d.live = newLiveStarts(inFlight, func(ctx context.Context, q correlator.Query) []*event.PodEvents {
		return d.reads.readForQuestion(ctx, q, d.emitter(ctx))
	})
	d.live.pulls = (&pullProgress{endpoint: rt.Endpoint, read: d.metrics.CountPullProgressRead}).Progress
	d.store.SetLive(d.live)
	var secureAPI func(context.Context) error
	if d.cfg.secureAPI.addr != "" {
		if secureAPI, err = d.serveSecureAPI(rc); err != nil {
			return err
		}
	}
	var nodeAPI func(context.Context) error
	if d.cfg.nodeAPI.addr != "" {
		if nodeAPI, err = d.serveNodeAPI(rc); err != nil {
			return err
		}
	}

	err = d.pipeline(ctx, cancel, func(ctx context.Context, g *group) {
		for _, s := range sources {
			g.Go(ctx, s.Name()+" source", func(ctx context.Context) error { return s.Run(ctx, d.emitter(ctx)) })
		}
		g.Go(ctx, "pod events", func(ctx context.Context) error { return d.reads.Run(ctx, d.emitter(ctx)) })
		if calls != nil {
			// The pulls' samples read through the API's reader and its
			// cache: a page open on a pull and the sampler share the
			// content store's reads.
			samples := collector.NewPullSampler(collector.PullSamplerConfig{InFlight: calls.PullsInFlight, Progress: d.live.pulls, Pace: d.pullPace},
				d.logger.With("source", "pull_samples"))
			g.Go(ctx, "pull samples", func(ctx context.Context) error { return samples.Run(ctx, d.emitter(ctx)) })
		}
		g.Go(ctx, "binary pages", func(ctx context.Context) error { trimBinaryPages(ctx, d.logger); return nil })
		if d.cfg.metricsAddr != "" {
			g.Go(ctx, "metrics server", d.serve(d.cfg.metricsAddr, d.metrics.Handler(nil), podNetworkHTTPLimits))
		}
		if d.cfg.apiAddr != "" {
			g.Go(ctx, "api server", d.serveLocalAPI())
		}
		if secureAPI != nil {
			g.Go(ctx, "secure api server", secureAPI)
		}
		if nodeAPI != nil {
			g.Go(ctx, "node api server", nodeAPI)
		}
		if d.cfg.healthAddr != "" {
			g.Go(ctx, "health server", d.serve(d.cfg.healthAddr, healthHandler(d.health), healthHTTPLimits))
		}
		d.logger.Info("readyline running", "node", d.cfg.nodeName, "otlp", d.traces.Endpoint(),
			"metrics", d.cfg.metricsAddr, "api", d.cfg.apiAddr, "secure_api", d.cfg.secureAPI.addr, "node_api", d.cfg.nodeAPI.addr, "health", d.cfg.healthAddr,
			"record", d.cfg.record, "alerts", d.cfg.alerts.String())
	})
	if d.rec != nil {
		err = errors.Join(err, d.rec.Flush(), d.recFile.Close())
	}
	return err
}

// watchSources sets up the loss accounting of the sources that run, their
// rings' metrics, and readyline_source_up, 0 until a source says Up. A
// source the kernel refused is blind for good: its Down load_failed
// (refused) goes to the correlator, which marks every start with it, and
// to the gauge.
func (d *daemon) watchSources(sources []collector.Source, refused []event.Event) {
	d.losses = &lossCounter{}
	for _, s := range sources {
		d.metrics.ExpectSources(s.Name())
		d.losses.sources = append(d.losses.sources, s)
	}
	d.metrics.WatchRings(func() []exporter.Ring {
		var rings []exporter.Ring
		for _, s := range sources {
			if u, ok := s.Ring(); ok {
				rings = append(rings, exporter.Ring{Source: s.Name(), Size: u.Size, Peak: u.Peak})
			}
		}
		return rings
	})
	for _, st := range refused {
		d.events <- st
	}
}

// pipeline runs the sources (started by sources on the group it is given),
// the correlator loop and the exporters until ctx ends, and returns their
// errors; cancel ends ctx when one of them fails. The exporters start first
// and stop last, with a context of their own: when ctx ends, the sources
// stop, the correlator flushes the pod starts still in progress ("still
// starting when readyline stopped") and only then are the exporters told to
// stop, so that those timelines are exported within the trace exporter's
// ShutdownTimeout instead of being dropped by an exporter already closed.
func (d *daemon) pipeline(ctx context.Context, cancel context.CancelFunc, sources func(context.Context, *group)) error {
	exportCtx, stopExport := context.WithCancel(context.WithoutCancel(ctx))
	defer stopExport()
	exporters := &group{cancel: cancel}
	exporters.Go(exportCtx, "traces", d.traces.Run)
	if d.alerter != nil {
		exporters.Go(exportCtx, "alerts", d.alerter.Run)
	}
	srcs := &group{cancel: cancel}
	sources(ctx, srcs)
	d.correlate(ctx)
	cancel()
	err := srcs.Wait()
	stopExport()
	return errors.Join(err, exporters.Wait())
}

// emitter hands a source's events to the correlator loop.
func (d *daemon) emitter(ctx context.Context) func(event.Event) {
	return func(ev event.Event) {
		select {
		case d.events <- ev:
		case <-ctx.Done():
		}
	}
}

// correlate is the one goroutine that feeds the correlator, in arrival
// order, with a Tick every second so timeouts fire on a quiet node (the
// first one at once: the correlator's clock is the ticks' CLOCK_BOOTTIME,
// which no step of the wall clock moves), and one before any event that
// arrives after the wall clock stepped. When ctx
// ends it takes the events the sources had already handed over, flushes the
// pod starts in progress and delivers them (without alerts) before it
// returns; the exporters must still be running then.
func (d *daemon) correlate(ctx context.Context) {
	cfg := d.cfg.correlator
	// Which pods the events dropped as unknown_pod claimed: a pod deleted
	// before the daemon saw it, or one the pod watch missed. The teardown
	// of a pod deleted before the daemon watched (unknown_teardown in the
	// stopping line) is no loss, and told as such, at debug.
	cfg.Orphaned = func(uid string, first time.Time, events []event.Event, lost int) {
		attrs := []any{"pod_uid", uid, "since", first, "events", len(events), "kinds", correlator.OrphanKinds(events)}
		if lost == 0 {
			d.logger.Debug("the teardown of a pod deleted before readyline watched it, let go", attrs...)
			return
		}
		d.logger.Info("events of a pod never seen in the API, dropped", append(attrs, "lost", lost)...)
	}
	c := correlator.New(cfg)
	tick := time.NewTicker(loopTick)
	defer tick.Stop()
	var last correlator.Stats
	countCorrelatorDrops(d.metrics, last, last, true) // the series exist from the start
	handle := func(ev event.Event) {
		d.watchdog.Beat()
		if d.secrets != nil {
			d.secrets.Scrub(ev) // before anything keeps or sends it
		}
		if d.rec != nil {
			if err := d.rec.Write(ev); err != nil {
				d.logger.Error("recording stopped", "error", err)
				d.rec = nil
			}
		}
		switch ev := ev.(type) {
		case *event.SourceStatus:
			d.metrics.ObserveSource(ev) // readyline_source_up: what the correlator is told
		case *event.CRICall:
			d.metrics.CountKubeletCall(ev.Method) // readyline_kubelet_calls_total
		}
		_, update := ev.(*event.PodUpdate)
		ending := 0
		if update {
			ending = c.Ending()
		}
		for _, tl := range c.Handle(ev) {
			d.deliver(ctx, tl, true)
		}
		for _, r := range c.TakeRecoveries() {
			d.deliverRecovery(ctx, &r)
		}
		switch ev.(type) {
		case *event.PodUpdate, *event.Tick: // what opens and closes starts, and a second's
			d.pace.SetFast(c.Busy()) // every poll while a start is open or one waits for its facts
		}
		if update && c.Ending() > ending {
			d.pace.Kick() // a start just ended: its drained marks now, not at the next poll
		}
		st := c.Stats()
		d.pullPace.SetFast(st.Tracked > 0)
		countCorrelatorDrops(d.metrics, st, last, false)
		if st.ClockSteps > last.ClockSteps {
			d.logger.Warn("the wall clock stepped: timeouts go on, times before the step are moved onto the clock after it and the pod starts across it are marked clock_step",
				"step", st.ClockStep.String(), "steps", st.ClockSteps)
		}
		last = st
	}
	var clock collector.ClockWatch
	handle(clock.Tick())
	for {
		select {
		case ev := <-d.events:
			if t := clock.Stepped(); t != nil {
				handle(t)
			}
			handle(ev)
		case req := <-d.live.pending():
			handle(clock.Tick()) // as of now, not the last second's tick
			req.answer(c, handle)
		case <-tick.C:
			handle(clock.Tick())
			d.reads.schedule(c.WantEvents(), time.Now())
			d.losses.poll(d.metrics.AddDropped)
			if d.rec != nil {
				d.rec.Flush()
			}
		case <-ctx.Done():
			d.mu.Lock()
			d.healthy = errors.New("stopping")
			d.mu.Unlock()
			// What the sources handed over before they stopped (bounded by
			// the channel's capacity: they stop sending once ctx is done).
		drain:
			for range cap(d.events) {
				select {
				case ev := <-d.events:
					if t := clock.Stepped(); t != nil {
						handle(t)
					}
					handle(ev)
				default:
					break drain
				}
			}
			st := c.Stats()
			var sec secrets.Stats
			if d.secrets != nil {
				sec = d.secrets.Stats()
			}
			d.logger.Info("stopping", "pod_starts_in_progress", st.Tracked, "timelines", st.Timelines, "events", st.Events,
				"after_start", st.AfterStart, "unknown_teardown", st.UnknownTeardown,
				"secret_values_removed", sec.Removed, "secret_reads_failed", sec.ReadErrors, "commands_hidden", sec.Hidden)
			// ctx is done: the flushed timelines are exported under a
			// context that is not, within the exporters' own shutdown budget.
			fctx := context.WithoutCancel(ctx)
			for _, tl := range c.Flush() {
				d.deliver(fctx, tl, false)
			}
			return
		}
	}
}

// loopTick is the correlator loop's tick: timeouts on a quiet node, the
// Event reads' schedule, the ring losses' poll and the health's beat.
const loopTick = time.Second

// countCorrelatorDrops counts what the correlator dropped between two of
// its Stats; unchanged counts are not added (the loop runs it after every
// event), but with always, which makes the series exist.
func countCorrelatorDrops(m *exporter.Metrics, st, last correlator.Stats, always bool) {
	for _, c := range []struct {
		reason    string
		now, then uint64
	}{
		{"unknown_pod", st.Orphaned, last.Orphaned},
		{"overflow", st.Overflow, last.Overflow},
		{"budget", st.Trimmed, last.Trimmed},              // facts over --max-fact-bytes
		{"budget_argv", st.ArgvTrimmed, last.ArgvTrimmed}, // processes kept without their argv
	} {
		if c.now != c.then || always {
			m.AddDropped("correlator", c.reason, int(c.now-c.then))
		}
	}
}

// deliver hands a finished timeline to the exporters. alert is false for
// the starts readyline's own shutdown cut short: they did not time out, and
// alerting on them would raise a Warning Event at every rollout.
func (d *daemon) deliver(ctx context.Context, tl *correlator.Timeline, alert bool) {
	d.metrics.Record(tl)
	var alerts []exporter.Alert
	if d.alerter != nil && alert {
		alerts = d.alerter.Observe(tl) // counted, logged and sent by the alerter; never blocks
	}
	if err := d.traces.Export(ctx, tl, alerts...); err != nil { // counted and logged by the exporter
		d.logger.Debug("trace not exported", "namespace", tl.Pod.Namespace, "pod", tl.Pod.Name, "error", err)
	}
	attrs := []any{"namespace", tl.Pod.Namespace, "pod", tl.Pod.Name, "uid", tl.Pod.UID,
		"outcome", tl.Outcome, "duration", tl.End.Sub(tl.Start).Round(time.Millisecond).String()}
	if tl.Reason != "" {
		attrs = append(attrs, "reason", tl.Reason)
	}
	if tl.Partial {
		attrs = append(attrs, "partial", true) // still starting at the deadline: a later "pod start" completes it
	}
	if !tl.ObservedSince.IsZero() {
		attrs = append(attrs, "observed_since", tl.ObservedSince.Sub(tl.Start).Round(time.Millisecond).String())
	}
	if len(tl.Marks) > 0 {
		attrs = append(attrs, "marks", tl.Marks) // api_lag, clock_step: less exact than its sources
	}
	if len(tl.Gaps) > 0 {
		blind := make([]string, len(tl.Gaps))
		for i, g := range tl.Gaps {
			blind[i] = g.Source
		}
		attrs = append(attrs, "blind", strings.Join(blind, ",")) // sources that missed part of it
	}
	if len(tl.Insights) > 0 {
		attrs = append(attrs, "insight", tl.Insights[0].Message)
	}
	d.logger.Info("pod start", attrs...)
	d.store.Add(tl)
}

// health is nil while the daemon runs and its correlator loop comes round.
// deliverRecovery hands a return to Ready after a pod's start to the
// exporters: a span of the pod's trace and the histogram.
func (d *daemon) deliverRecovery(ctx context.Context, r *correlator.Recovery) {
	d.metrics.RecordRecovery(r)
	if err := d.traces.ExportRecovery(ctx, r); err != nil {
		d.logger.Debug("trace not exported", "namespace", r.Pod.Namespace, "pod", r.Pod.Name, "error", err)
	}
	d.logger.Info("pod ready again", "namespace", r.Pod.Namespace, "pod", r.Pod.Name, "uid", r.Pod.UID,
		"after", r.Duration().Round(time.Millisecond).String(), "cause", r.Cause)
}

func (d *daemon) health() error {
	d.mu.Lock()
	err := d.healthy
	d.mu.Unlock()
	if err != nil {
		return err
	}
	return d.watchdog.Check()
}

// apiHandler is what the API address serves: the timeline API that
// 'readyline explain' reads and the waterfall pages, every start of them,
// and, with --pprof, Go's profiles.
func (d *daemon) apiHandler() http.Handler {
	return withPprof(exporter.ServeEveryPod(d.storeHandler()), d.cfg.pprof)
}

// serve runs an HTTP server of h on addr (see listen), with limits l,
// until ctx is done.
func (d *daemon) serve(addr string, h http.Handler, l httpLimits) func(context.Context) error {
	return func(ctx context.Context) error {
		ln, err := listen(addr)
		if err != nil {
			return err
		}
		return serveHTTP(ctx, newHTTPServer(h, l), ln, l)
	}
}

// alertRules are the --alert thresholds: the comma-separated defaults of
// $READYLINE_ALERT (a ConfigMap sets them), then each --alert flag, which
// replaces the rule of its name; NAME=off (or NAME=0) removes it.
type alertRules []exporter.AlertRule

func (r *alertRules) register(fs *flagSet) {
	if v, ok := fs.env("alert"); ok {
		for _, s := range strings.Split(v, ",") {
			if strings.TrimSpace(s) == "" {
				continue
			}
			if err := r.Set(s); err != nil {
				fs.envErrs = append(fs.envErrs, fmt.Errorf("$%s: %w", envName("alert"), err))
			}
		}
	}
	fs.Var(r, "alert", "NAME=DURATION: a Warning Event on the pod (reason SlowNAME), readyline_alerts_total and a mark on its trace when "+
		"a pod start's NAME took longer; repeatable; NAME is one of "+strings.Join(exporter.AlertNames(), ", ")+
		"; NAME=off removes a default ($"+envName("alert")+", comma-separated)")
}

// String lists the rules as the flags would set them.
func (r *alertRules) String() string {
	s := make([]string, len(*r))
	for i, rule := range *r {
		s[i] = rule.String()
	}
	return strings.Join(s, ",")
}

// Set parses one NAME=DURATION and replaces the rule of that name.
func (r *alertRules) Set(s string) error {
	rule, err := exporter.ParseAlertRule(s)
	if err != nil {
		return err
	}
	*r = slices.DeleteFunc(*r, func(old exporter.AlertRule) bool { return old.Name == rule.Name })
	if rule.Threshold > 0 {
		*r = append(*r, rule)
	}
	return nil
}
