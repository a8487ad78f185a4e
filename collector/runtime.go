package collector

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/readyline/readyline/collector/event"
)

// DefaultCRIEndpoints are the runtime sockets a RuntimeSource without an
// endpoint tries, in order: containerd's, then CRI-O's.
var DefaultCRIEndpoints = []string{
	"unix:///run/containerd/containerd.sock",
	"unix:///var/run/containerd/containerd.sock",
	"unix:///run/crio/crio.sock",
	"unix:///var/run/crio/crio.sock",
}

// Errors of the runtime source.
var (
	// ErrRuntimeUnavailable is returned while no container runtime answers.
	ErrRuntimeUnavailable = errors.New("container runtime unavailable")
	// ErrContainerNotFound is returned by Lookup for an id that is neither a
	// container nor a pod sandbox of the runtime (nor one it removed
	// recently while readyline was watching).
	ErrContainerNotFound = errors.New("no such container or pod sandbox")
	// ErrBadCRIEndpoint is returned for an endpoint that is not a unix socket.
	ErrBadCRIEndpoint = errors.New("unsupported CRI endpoint: want unix:///path/to.sock or an absolute socket path")
)

// Labels the kubelet puts on every sandbox and container it creates.
const (
	labelPodUID        = "io.kubernetes.pod.uid"
	labelPodName       = "io.kubernetes.pod.name"
	labelPodNamespace  = "io.kubernetes.pod.namespace"
	labelContainerName = "io.kubernetes.container.name"
)

// Values of event.ContainerInfo.State.
const (
	StateCreated  = "created"
	StateRunning  = "running"
	StateExited   = "exited"
	StateUnknown  = "unknown"
	StateReady    = "ready"
	StateNotReady = "notready"
)

// RuntimeClient is the part of the CRI runtime service a RuntimeSource uses.
// runtimeapi.RuntimeServiceClient implements it; tests implement fakes.
type RuntimeClient interface {
	Version(ctx context.Context, in *runtimeapi.VersionRequest, opts ...grpc.CallOption) (*runtimeapi.VersionResponse, error)
	ListPodSandbox(ctx context.Context, in *runtimeapi.ListPodSandboxRequest, opts ...grpc.CallOption) (*runtimeapi.ListPodSandboxResponse, error)
	PodSandboxStatus(ctx context.Context, in *runtimeapi.PodSandboxStatusRequest, opts ...grpc.CallOption) (*runtimeapi.PodSandboxStatusResponse, error)
	ListContainers(ctx context.Context, in *runtimeapi.ListContainersRequest, opts ...grpc.CallOption) (*runtimeapi.ListContainersResponse, error)
	ContainerStatus(ctx context.Context, in *runtimeapi.ContainerStatusRequest, opts ...grpc.CallOption) (*runtimeapi.ContainerStatusResponse, error)
	GetContainerEvents(ctx context.Context, in *runtimeapi.GetEventsRequest, opts ...grpc.CallOption) (grpc.ServerStreamingClient[runtimeapi.ContainerEventResponse], error)
}

// ImageClient is the part of the CRI image service a RuntimeSource uses
// (ImageSize). runtimeapi.ImageServiceClient implements it.
type ImageClient interface {
	ImageStatus(ctx context.Context, in *runtimeapi.ImageStatusRequest, opts ...grpc.CallOption) (*runtimeapi.ImageStatusResponse, error)
}

// RuntimeConfig configures a RuntimeSource. The zero value auto-detects the
// runtime.
type RuntimeConfig struct {
	// Endpoint is the runtime's socket (--cri-endpoint): unix:///path or
	// /path. "" tries DefaultCRIEndpoints and uses the first that answers.
	Endpoint string
	// Client, when set, is used instead of dialing Endpoint (tests), with
	// Images for ImageSize (nil: ImageSize fails).
	Client RuntimeClient
	Images ImageClient
	// PollInterval is how often sandboxes and containers are listed when the
	// runtime has no event stream; 0 = 1 s.
	PollInterval time.Duration
	// ResyncInterval is how often they are listed anyway, to fill gaps in the
	// event stream; 0 = 10 s.
	ResyncInterval time.Duration
	// CallTimeout bounds each call to the runtime; 0 = 2 s.
	CallTimeout time.Duration
	// RetryInterval is the first wait before reconnecting to an unavailable
	// runtime; it doubles up to 30 s. 0 = 1 s.
	RetryInterval time.Duration
	// CacheSize bounds the cached ids; removed containers are evicted first,
	// oldest removal first. 0 = 4096.
	CacheSize int
	// RemovedTTL is how long a removed container stays in the cache (so
	// late questions about it are still answered); 0 = 10 min.
	RemovedTTL time.Duration
}

const maxRetryInterval = 30 * time.Second

// RuntimeSource knows what the container runtime says about each container
// and pod sandbox on the node: the pod and container it belongs to (CRI
// labels) and the runtime's own timestamps. Run reports every container and
// sandbox when it appears and when its state changes; Lookup and Observe
// answer about single ids. Lookup, Observe, Endpoint and Stats are safe for
// concurrent use, also while Run runs.
type RuntimeSource struct {
	cfg    RuntimeConfig
	logger *slog.Logger
	now    func() time.Time

	conn    atomic.Pointer[runtimeConn] // nil while no runtime answers
	cache   *runtimeCache
	observe chan string
	// queued: the ids in observe, each queued once (a container's
	// processes all name it before the runtime's word on it is in).
	queuedMu sync.Mutex
	queued   map[string]struct{}
	dirty    chan struct{}

	emitted, events, eventsDropped, resyncs, slowLists, lookups, observeDropped atomic.Uint64
	streaming, needResync                                                       atomic.Bool
	// behindSince: when the event stream's reader first dropped an event
	// since the last resync (Unix ns), 0 when it did not; behindReported:
	// the drops already told in a stream_behind status (Run's own).
	behindSince    atomic.Int64
	behindReported uint64
	// pace, when set, has Run list every runtimeIdleResync, not every
	// ResyncInterval, while the event stream runs and no pod start is
	// open (Pace); NodeSources sets it before Run.
	pace *Pace
}

// runtimeIdleResync is how often a paced RuntimeSource lists everything
// while its event stream runs and no pod start is open: a list of a
// hundred pods' sandboxes and containers is the source's biggest cost on
// a steady node, and only fills the stream's gaps.
const runtimeIdleResync = time.Minute

// runtimeConn is one connection to the runtime.
type runtimeConn struct {
	client   RuntimeClient
	images   ImageClient // nil when the runtime's image service is not known
	endpoint string
	runtime  string // name and version
	close    func()
}

// RuntimeStats counts what a RuntimeSource did. Safe to read while it runs.
type RuntimeStats struct {
	Emitted        uint64 // ContainerInfo events handed to emit
	Events         uint64 // events received from the runtime's stream
	EventsDropped  uint64 // events dropped because Run fell behind (a resync follows)
	Resyncs        uint64 // full lists of sandboxes and containers
	SlowLists      uint64 // periodic lists that timed out while the stream went on
	Lookups        uint64 // ids answered by the runtime, not the cache
	ObserveDropped uint64 // Observe calls dropped: queue full
	Cached         int    // ids in the cache
	Streaming      bool   // the runtime's event stream is in use (else polling)
}

func (c RuntimeConfig) withDefaults() RuntimeConfig {
	if c.PollInterval == 0 {
		c.PollInterval = time.Second
	}
	if c.ResyncInterval == 0 {
		c.ResyncInterval = 10 * time.Second
	}
	if c.CallTimeout == 0 {
		c.CallTimeout = 2 * time.Second
	}
	if c.RetryInterval == 0 {
		c.RetryInterval = time.Second
	}
	if c.CacheSize == 0 {
		c.CacheSize = 4096
	}
	if c.RemovedTTL == 0 {
		c.RemovedTTL = 10 * time.Minute
	}
	return c
}

// NewRuntimeSource checks cfg. It does not contact the runtime: Run connects,
// and keeps retrying while the runtime is unavailable. A nil logger
// discards logs.
func NewRuntimeSource(cfg RuntimeConfig, logger *slog.Logger) (*RuntimeSource, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Client == nil && cfg.Endpoint != "" {
		ep, err := normalizeCRIEndpoint(cfg.Endpoint)
		if err != nil {
			return nil, err
		}
		cfg.Endpoint = ep
	}
	cfg = cfg.withDefaults()
	return &RuntimeSource{
		cfg:     cfg,
		logger:  logger,
		now:     time.Now,
		cache:   newRuntimeCache(cfg.CacheSize, cfg.RemovedTTL),
		observe: make(chan string, 256),
		queued:  make(map[string]struct{}),
		dirty:   make(chan struct{}, 1),
	}, nil
}

func normalizeCRIEndpoint(ep string) (string, error) {
	path, ok := strings.CutPrefix(ep, "unix://")
	if !ok {
		path = ep
	}
	if !strings.HasPrefix(path, "/") {
		return "", fmt.Errorf("%w: %q", ErrBadCRIEndpoint, ep)
	}
	return "unix://" + path, nil
}

// Endpoint returns the endpoint of the runtime in use, or "" while none
// answers.
func (s *RuntimeSource) Endpoint() string {
	if c := s.conn.Load(); c != nil {
		return c.endpoint
	}
	return ""
}

// Stats returns the counters so far.
func (s *RuntimeSource) Stats() RuntimeStats {
	return RuntimeStats{
		Emitted:        s.emitted.Load(),
		Events:         s.events.Load(),
		EventsDropped:  s.eventsDropped.Load(),
		Resyncs:        s.resyncs.Load(),
		SlowLists:      s.slowLists.Load(),
		Lookups:        s.lookups.Load(),
		ObserveDropped: s.observeDropped.Load(),
		Cached:         s.cache.len(),
		Streaming:      s.streaming.Load(),
	}
}

// Run connects to the runtime and, until ctx is done, hands emit a
// ContainerInfo for every sandbox and container when it is first seen and
// whenever its state changes (once per change: not on every list, and never
// back to an earlier state), from one goroutine (the caller's). It follows
// the runtime's event stream (GetContainerEvents) and lists everything
// every ResyncInterval; a runtime
// without the stream is listed every PollInterval. A runtime that is missing
// or goes away costs one Warn per outage; Run retries quietly with back-off.
//
// The source's statuses come in the same stream: Up once a connection has
// listed everything; Down "disconnected" when the runtime stops answering
// (or does not answer at first), once per outage, and Up after the list
// that follows its return; and when the event stream outran Run, a Down
// "stream_behind" (Since the first dropped event, Lost how many) before
// the list that catches up and an Up after it.
//
// Run returns nil on cancellation after closing its connection. Call it once.
func (s *RuntimeSource) Run(ctx context.Context, emit func(event.Event)) error {
	delay := s.cfg.RetryInterval
	warned, connected := false, false
	blind := false // a Down was emitted, no Up since
	for {
		conn, err := s.connect(ctx)
		established := false
		if err == nil {
			// Up means answering the first full list, not only Version.
			up := func() {
				switch {
				case warned:
					s.logger.Info("container runtime reachable again", "endpoint", conn.endpoint, "runtime", conn.runtime)
				case !connected:
					s.logger.Info("container runtime connected", "endpoint", conn.endpoint, "runtime", conn.runtime)
				default:
					s.logger.Debug("container runtime reconnected", "endpoint", conn.endpoint)
				}
				warned, connected, blind = false, true, false
				emit(&event.SourceStatus{Time: s.now(), Source: event.SourceRuntime, Up: true})
			}
			established, err = s.serve(ctx, conn, up, emit)
			conn.close()
		}
		if ctx.Err() != nil {
			return nil
		}
		if !blind {
			blind = true
			emit(&event.SourceStatus{Time: s.now(), Source: event.SourceRuntime, Reason: event.ReasonDisconnected})
		}
		switch {
		case established:
			// It worked until now (a runtime restart?): reconnect soon.
			s.logger.Debug("container runtime connection lost; reconnecting", "error", err)
			delay = s.cfg.RetryInterval
		case !warned:
			warned = true
			s.logger.Warn("container runtime unavailable: container names and runtime timestamps are lost until it answers; retrying",
				"endpoint", cmp.Or(s.cfg.Endpoint, strings.Join(DefaultCRIEndpoints, ",")), "error", err)
		default:
			s.logger.Debug("container runtime still unavailable", "error", err)
		}
		wait := delay + rand.N(delay/5+1) // jitter: runtimes restart for all daemons at once
		if !established {
			delay = min(2*delay, max(maxRetryInterval, s.cfg.RetryInterval))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// connect returns a connection to the first runtime that answers Version.
func (s *RuntimeSource) connect(ctx context.Context) (*runtimeConn, error) {
	if s.cfg.Client != nil {
		v, err := s.version(ctx, s.cfg.Client)
		if err != nil {
			return nil, err
		}
		return &runtimeConn{client: s.cfg.Client, images: s.cfg.Images, endpoint: "client", runtime: v, close: func() {}}, nil
	}
	endpoints, auto := []string{s.cfg.Endpoint}, s.cfg.Endpoint == ""
	if auto {
		endpoints = DefaultCRIEndpoints
	}
	var errs []error
	for _, ep := range endpoints {
		if auto {
			if _, err := os.Stat(strings.TrimPrefix(ep, "unix://")); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		// No buffer pools, in the transport or the codec: see
		// unpooledCodec.
		cc, err := grpc.NewClient(ep,
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			experimental.WithBufferPool(mem.NopBufferPool{}),
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(16<<20), grpc.ForceCodecV2(unpooledCodec{})))
		if err != nil {
			errs = append(errs, fmt.Errorf("dialing %s: %w", ep, err))
			continue
		}
		client := runtimeapi.NewRuntimeServiceClient(cc)
		v, err := s.version(ctx, client)
		if err != nil {
			cc.Close()
			errs = append(errs, fmt.Errorf("%s: %w", ep, err))
			continue
		}
		return &runtimeConn{client: client, images: runtimeapi.NewImageServiceClient(cc), endpoint: ep, runtime: v, close: func() { cc.Close() }}, nil
	}
	if auto {
		return nil, fmt.Errorf("%w: none of the default sockets answers: %w", ErrRuntimeUnavailable, errors.Join(errs...))
	}
	return nil, errors.Join(errs...)
}

func (s *RuntimeSource) version(ctx context.Context, c RuntimeClient) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	v, err := c.Version(ctx, &runtimeapi.VersionRequest{})
	if err != nil {
		return "", fmt.Errorf("asking the runtime's version: %w", criError(err))
	}
	return v.RuntimeName + " " + v.RuntimeVersion, nil
}

// criError adds this package's sentinel errors to a gRPC error.
func criError(err error) error {
	switch status.Code(err) {
	case codes.NotFound:
		return fmt.Errorf("%w: %w", ErrContainerNotFound, err)
	case codes.Unavailable:
		return fmt.Errorf("%w: %w", ErrRuntimeUnavailable, err)
	}
	return err
}

type streamItem struct {
	resp *runtimeapi.ContainerEventResponse
	err  error
}

// serve follows one connection until it fails or ctx is done; established
// says whether the first full list succeeded, after which serve calls up.
func (s *RuntimeSource) serve(ctx context.Context, conn *runtimeConn, up func(), emit func(event.Event)) (established bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	events := make(chan streamItem, eventBuffer)
	readerDone := make(chan struct{})
	defer func() {
		cancel()
		<-readerDone
		s.conn.Store(nil)
		s.streaming.Store(false)
	}()
	// Subscribe before the first list, so nothing falls between the two.
	go func() {
		defer close(readerDone)
		s.readEvents(ctx, conn.client, events)
	}()

	if err := s.resync(ctx, conn.client); err != nil {
		return false, err
	}
	s.conn.Store(conn)
	// The list's news first, then Up: a start that waits for the runtime's
	// source to see again (correlator waitsForRuntime) has them when it ends.
	s.flush(emit)
	up()

	ticker := time.NewTicker(s.cfg.ResyncInterval)
	defer ticker.Stop()
	listed := s.now()
	slowLists := 0 // periodic lists in a row that timed out
	for {
		select {
		case <-ctx.Done():
			return true, nil
		case it := <-events:
			if it.err != nil {
				if status.Code(it.err) != codes.Unimplemented {
					return true, fmt.Errorf("receiving container events: %w", criError(it.err))
				}
				s.logger.Info("container runtime has no event stream (GetContainerEvents); polling",
					"endpoint", conn.endpoint, "interval", s.cfg.PollInterval)
				events = nil
				ticker.Reset(s.cfg.PollInterval)
				continue
			}
			s.streaming.Store(true)
			s.events.Add(1)
			s.applyEvent(ctx, conn.client, it.resp)
		case <-ticker.C:
			if events != nil && !s.pace.Fast() && s.now().Sub(listed) < runtimeIdleResync {
				continue // no start open: the stream tells every change, gaps wait
			}
			listed = s.now()
			err := s.resync(ctx, conn.client)
			switch {
			case err == nil:
				slowLists = 0
			case slowLists == 0 && status.Code(err) == codes.DeadlineExceeded && s.streaming.Load():
				// A runtime busy starting a hundred pods can take
				// longer than CallTimeout to list them all. The
				// stream still tells every change, and the list
				// only fills gaps: dropping the connection for it
				// would blind the source until it is back. A second
				// slow list in a row does.
				slowLists++
				s.slowLists.Add(1)
				s.logger.Info("container runtime slow to list its containers; its event stream goes on, listing again in a while",
					"endpoint", conn.endpoint, "error", err, "next", s.cfg.ResyncInterval)
			default:
				return true, err
			}
		case id := <-s.observe:
			s.observed(ctx, conn.client, id)
		case <-s.dirty:
			if s.needResync.Swap(false) {
				emit(s.behind())
				if err := s.resync(ctx, conn.client); err != nil {
					return true, err
				}
				s.flush(emit)
				emit(&event.SourceStatus{Time: s.now(), Source: event.SourceRuntime, Up: true})
			}
		}
		s.flush(emit)
	}
}

// behind is the Down status of events the stream's reader dropped since
// the last resync: from the first of them, how many.
func (s *RuntimeSource) behind() *event.SourceStatus {
	now := s.now()
	st := &event.SourceStatus{Time: now, Source: event.SourceRuntime, Reason: event.ReasonStreamBehind}
	if ns := s.behindSince.Swap(0); ns != 0 {
		if since := time.Unix(0, ns).UTC(); since.Before(now) {
			st.Since = since
		}
	}
	dropped := s.eventsDropped.Load()
	st.Lost = dropped - s.behindReported
	s.behindReported = dropped
	return st
}

// eventBuffer is how many runtime events wait for Run before the reader
// drops them.
const eventBuffer = 1024

// readEvents forwards the runtime's event stream to out until it fails.
// It never waits for Run: containerd 2.x delivers events to subscribers
// synchronously, and a subscriber that stops reading blocks the runtime's
// container operations for every pod on the node. When out is full the
// event is dropped and Run lists everything instead.
func (s *RuntimeSource) readEvents(ctx context.Context, c RuntimeClient, out chan<- streamItem) {
	stream, err := c.GetContainerEvents(ctx, &runtimeapi.GetEventsRequest{})
	for err == nil {
		var resp *runtimeapi.ContainerEventResponse
		if resp, err = stream.Recv(); err == nil {
			select {
			case out <- streamItem{resp: resp}:
			default:
				s.behindSince.CompareAndSwap(0, s.now().UnixNano())
				s.eventsDropped.Add(1)
				s.needResync.Store(true)
				s.signal()
			}
		}
	}
	select {
	case out <- streamItem{err: err}:
	case <-ctx.Done():
	}
}

// flush emits the cache's unreported state changes.
func (s *RuntimeSource) flush(emit func(event.Event)) {
	for _, info := range s.cache.take() {
		s.emitted.Add(1)
		emit(info)
	}
}

// applyEvent folds one runtime event into the cache. containerd sends with
// each event the sandbox's status and the statuses of all its containers.
func (s *RuntimeSource) applyEvent(ctx context.Context, c RuntimeClient, ev *runtimeapi.ContainerEventResponse) {
	now := s.now()
	id := ev.GetContainerId()
	s.logger.Debug("container event", "container_id", id, "type", ev.GetContainerEventType().String())
	covered := false
	sandboxID := ""
	if st := ev.GetPodSandboxStatus(); st.GetId() != "" {
		sandboxID = st.GetId()
		s.cache.put(sandboxInfo(st, now), now)
		covered = sandboxID == id
	}
	for _, cs := range ev.GetContainersStatuses() {
		s.cache.put(containerInfo(cs, sandboxID, now), now)
		covered = covered || cs.GetId() == id
	}
	if ev.GetContainerEventType() == runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT {
		s.cache.markGone(id, now)
		return
	}
	if !covered { // the runtime could not attach the status: ask
		s.observed(ctx, c, id)
	}
}

// resync lists all sandboxes and containers, asks the status of those that
// are new or changed state, and marks the ones no longer listed as removed.
func (s *RuntimeSource) resync(ctx context.Context, c RuntimeClient) error {
	s.resyncs.Add(1)
	start := s.now()
	lctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	sbs, err := c.ListPodSandbox(lctx, &runtimeapi.ListPodSandboxRequest{})
	cancel()
	if err != nil {
		return fmt.Errorf("listing pod sandboxes: %w", criError(err))
	}
	lctx, cancel = context.WithTimeout(ctx, s.cfg.CallTimeout)
	ctrs, err := c.ListContainers(lctx, &runtimeapi.ListContainersRequest{})
	cancel()
	if err != nil {
		return fmt.Errorf("listing containers: %w", criError(err))
	}
	sandboxes := slices.SortedFunc(slices.Values(sbs.GetItems()), func(a, b *runtimeapi.PodSandbox) int {
		return cmp.Compare(a.GetCreatedAt(), b.GetCreatedAt())
	})
	for _, sb := range sandboxes {
		now := s.now()
		if s.cache.unchanged(sb.GetId(), sandboxState(sb.GetState()), now) {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
		st, err := c.PodSandboxStatus(sctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sb.GetId()})
		cancel()
		info := listedSandboxInfo(sb, now)
		switch {
		case err == nil && st.GetStatus().GetId() != "":
			info = sandboxInfo(st.GetStatus(), now)
		case status.Code(err) == codes.NotFound:
			continue // removed since the list
		case err != nil:
			s.logger.Debug("asking sandbox status", "container_id", sb.GetId(), "error", err)
		}
		s.cache.put(info, now)
	}
	containers := slices.SortedFunc(slices.Values(ctrs.GetContainers()), func(a, b *runtimeapi.Container) int {
		return cmp.Compare(a.GetCreatedAt(), b.GetCreatedAt())
	})
	for _, ctr := range containers {
		now := s.now()
		if s.cache.unchanged(ctr.GetId(), containerState(ctr.GetState()), now) {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
		info, err := s.containerStatus(cctx, c, ctr, now)
		cancel()
		if err != nil {
			s.logger.Debug("asking container status", "container_id", ctr.GetId(), "error", err)
			info = listedContainerInfo(ctr, now)
		}
		s.cache.put(info, now)
	}
	now := s.now()
	s.cache.markUnseen(start, now)
	s.cache.evict(now)
	return nil
}
