package collector

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/readyline/readyline/collector/event"
	"github.com/readyline/readyline/collector/kubeapi"
	"github.com/readyline/readyline/collector/redact"
)

// LastAppliedAnnotation is the annotation kubectl apply writes: a copy of the
// whole manifest, which PodWatch strips (StripPod) with every other field
// readyline does not read.
const LastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// Errors of the pod watch's configuration.
var (
	// ErrNoNodeName is returned when no node name was given.
	ErrNoNodeName = errors.New("node name is empty: set --node-name or NODE_NAME (downward API spec.nodeName)")
	// ErrNoKubeconfig is returned by RESTConfig outside a pod when no
	// kubeconfig was given; it wraps rest.ErrNotInCluster.
	ErrNoKubeconfig = errors.New("no kubeconfig: pass --kubeconfig or set KUBECONFIG when not running in a pod")
)

// RESTConfig returns the configuration to reach the API server: the
// kubeconfig file at path if it is not empty, else the files listed in
// $KUBECONFIG, else the in-cluster configuration of a pod's service
// account. It never falls back to ~/.kube/config: a node daemon running as
// root should not silently use an administrator's credentials.
func RESTConfig(path string) (*rest.Config, error) {
	var files []string
	if path == "" {
		files = filepath.SplitList(os.Getenv(clientcmd.RecommendedConfigPathEnvVar))
	}
	if path == "" && len(files) == 0 {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			if errors.Is(err, rest.ErrNotInCluster) {
				return nil, fmt.Errorf("%w: %w", ErrNoKubeconfig, err)
			}
			return nil, fmt.Errorf("loading in-cluster config: %w", err)
		}
		return withUserAgent(cfg), nil
	}
	rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: path, Precedence: files}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		what := path
		if what == "" {
			what = "$" + clientcmd.RecommendedConfigPathEnvVar
		}
		return nil, fmt.Errorf("loading kubeconfig %s: %w", what, err)
	}
	return withUserAgent(cfg), nil
}

func withUserAgent(cfg *rest.Config) *rest.Config {
	cfg.UserAgent = "readyline"
	return cfg
}

// PodClient lists and watches pods, with the signatures of client-go's
// typed pod client: a kubeapi.Pods, or a fake clientset's
// CoreV1().Pods("") in tests.
type PodClient interface {
	List(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// PodWatchConfig configures a PodWatch.
type PodWatchConfig struct {
	// NodeName is the node whose pods are watched (--node-name / NODE_NAME,
	// resolved by the caller). Required.
	NodeName string
	// Kubeconfig is a kubeconfig path handed to RESTConfig ("" = $KUBECONFIG,
	// then in-cluster). Ignored when Pods is set.
	Kubeconfig string
	// Pods, when set, is used instead of a client built from Kubeconfig. It
	// must list and watch all namespaces: the watch adds the node's field
	// selector.
	Pods PodClient
	// QueueLength bounds the updates stamped but not yet emitted; when full,
	// the watch waits for emit. 0 = 1024.
	QueueLength int
	// Argv is what of the command lines of a pod's spec (its containers',
	// probes' and hooks') leaves the watch: all of them (the default; what
	// readyline exports of them it redacts), or with redact.ProgramOnly
	// (--argv=none) their programs' names only.
	Argv redact.Policy
}

func (c PodWatchConfig) withDefaults() PodWatchConfig {
	if c.QueueLength <= 0 {
		c.QueueLength = 1024
	}
	return c
}

// PodWatch reports every add, update and delete of the pods scheduled to one
// node, as the API server's watch delivers them, each stamped with the time
// it was observed. It holds this node's pods only (a spec.nodeName field
// selector), and no resync.
type PodWatch struct {
	node   string
	pods   PodClient
	logger *slog.Logger
	qlen   int
	argv   redact.Policy

	updates, skipped atomic.Uint64
	// forgotten counts the pods dropped from the cache when they ended
	// (podHandler.forget); cached, once Run runs, says how many it holds.
	forgotten atomic.Uint64
	cached    atomic.Pointer[func() int]
	synced    atomic.Bool

	// now is time.Now; tests replace it.
	now func() time.Time

	// queue carries the updates and statuses to Run's goroutine; set by Run.
	queue chan event.Event

	healthMu sync.Mutex
	down     bool // a Warn was logged and the API server did not answer since
	up       bool // an Up status was sent and no Down since
}

// PodWatchStats counts what a PodWatch did. Safe to read while it runs.
type PodWatchStats struct {
	Updates uint64 // PodUpdates emitted
	Skipped uint64 // relisted pods with an unchanged resourceVersion, or other nodes' pods
	Synced  bool   // the initial list was delivered
	// Forgotten counts the pods dropped from the watch's cache when they
	// ended (Succeeded or Failed); Cached is how many it holds now.
	Forgotten uint64
	Cached    int
}

// NewPodWatch checks cfg and prepares the watch; it does not contact the API
// server (Run does, and retries while it is unreachable). A nil logger
// discards logs.
func NewPodWatch(cfg PodWatchConfig, logger *slog.Logger) (*PodWatch, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.NodeName == "" {
		return nil, ErrNoNodeName
	}
	pods := cfg.Pods
	if pods == nil {
		rc, err := RESTConfig(cfg.Kubeconfig)
		if err != nil {
			return nil, err
		}
		client, err := kubeapi.New(rc)
		if err != nil {
			return nil, err
		}
		pods = client.Pods(metav1.NamespaceAll)
	}
	cfg = cfg.withDefaults()
	return &PodWatch{node: cfg.NodeName, pods: pods, logger: logger, qlen: cfg.QueueLength, argv: cfg.Argv, now: time.Now}, nil
}

// Stats returns the counters so far.
func (w *PodWatch) Stats() PodWatchStats {
	st := PodWatchStats{Updates: w.updates.Load(), Skipped: w.skipped.Load(), Synced: w.synced.Load(), Forgotten: w.forgotten.Load()}
	if f := w.cached.Load(); f != nil {
		st.Cached = (*f)()
	}
	return st
}

// NodeSelector is the field selector that restricts a watch to the pods
// scheduled to node.
func NodeSelector(node string) fields.Selector {
	return fields.OneTermEqualSelector("spec.nodeName", node)
}

// Run watches until ctx is done and hands each PodUpdate to emit, in the
// order the watch delivered them, from one goroutine (the caller's). The
// pods of the initial list arrive as adds. A relist after a broken watch
// emits only pods whose resourceVersion changed, and deletes of pods that
// vanished meanwhile (with their last known state). While the API server
// is unreachable Run logs one Warn and keeps retrying with back-off; it
// returns nil on cancellation after the informer stopped, and never calls
// emit after returning. Call it once.
//
// The source's statuses come in the same stream: Up once the initial list
// is delivered; Down "disconnected" at the first failed list or watch of
// an outage, and Up when the API server answers a list or watch again
// (the updates that follow catch up with what the outage hid, stamped when
// they arrive).
func (w *PodWatch) Run(ctx context.Context, emit func(event.Event)) error {
	ctx, cancel := context.WithCancel(klog.NewContext(ctx, logr.FromSlogHandler(w.logger.Handler())))
	defer cancel()
	queue := make(chan event.Event, w.qlen)
	w.queue = queue

	informer := cache.NewSharedIndexInformerWithOptions(w.listWatch(), &corev1.Pod{},
		cache.SharedIndexInformerOptions{ObjectDescription: "pods on node " + w.node})
	if err := informer.SetTransform(w.transform); err != nil {
		return fmt.Errorf("setting pod transform: %w", err)
	}
	if err := informer.SetWatchErrorHandlerWithContext(w.watchError); err != nil {
		return fmt.Errorf("setting watch error handler: %w", err)
	}
	h := &podHandler{node: w.node, now: w.now, logger: w.logger, skipped: &w.skipped,
		out: func(u *event.PodUpdate) { w.send(ctx, u) }, forget: func(pod *corev1.Pod) {
			// The update is on its way (the event holds it): the cache
			// need not.
			if err := informer.GetIndexer().Delete(pod); err == nil {
				w.forgotten.Add(1)
			}
		}}
	cached := func() int { return len(informer.GetStore().ListKeys()) }
	w.cached.Store(&cached)
	reg, err := informer.AddEventHandler(h)
	if err != nil {
		return fmt.Errorf("adding pod event handler: %w", err)
	}

	var wg sync.WaitGroup
	wg.Go(func() { informer.RunWithContext(ctx) })
	defer wg.Wait() // after cancel: the informer and its handler are gone

	w.logger.Info("watching pods", "node", w.node)
	synced := reg.HasSyncedChecker().Done()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-synced:
			synced = nil
			w.synced.Store(true)
			w.logger.Info("pod watch synced", "node", w.node, "pods", len(informer.GetStore().ListKeys()))
			if st := w.syncedStatus(); st != nil {
				emit(st)
			}
		case ev := <-queue:
			if _, ok := ev.(*event.PodUpdate); ok {
				w.updates.Add(1)
			}
			emit(ev)
		}
	}
}

// send queues ev for Run's goroutine, unless ctx is done.
func (w *PodWatch) send(ctx context.Context, ev event.Event) {
	select {
	case w.queue <- ev:
	case <-ctx.Done():
	}
}

// syncedStatus is the Up of the initial list's delivery, nil when the API
// server is down again or an Up was sent already.
func (w *PodWatch) syncedStatus() *event.SourceStatus {
	w.healthMu.Lock()
	defer w.healthMu.Unlock()
	if w.up || w.down {
		return nil
	}
	w.up = true
	return &event.SourceStatus{Time: w.now(), Source: event.SourcePodWatch, Up: true}
}

// listWatch lists and watches this node's pods and tells the health
// tracking whether the API server answered. It opts out of the streaming
// watch-list: one node's pods are a small list, and client-go v0.37 waits out
// a failed watch-list's back-off (up to 30 s) without watching for
// cancellation, so Run could not return promptly while the API server is
// down. While the API server is unreachable each call retries in place
// (untilReachable), so the reflector sees no failure to back off from.
func (w *PodWatch) listWatch() cache.ListerWatcher {
	sel := NodeSelector(w.node).String()
	pods := w.pods
	return cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.FieldSelector = sel
			return untilReachable(ctx, w, func() (runtime.Object, error) { return pods.List(ctx, opts) })
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = sel
			return untilReachable(ctx, w, func() (watch.Interface, error) { return pods.Watch(ctx, opts) })
		},
	}, noWatchList{})
}

// reachRetry is how often a list or watch is tried again while the API
// server does not answer.
var reachRetry = 500 * time.Millisecond

// untilReachable calls f until the API server answers it: with a result, or
// with an API error (a status: the server is there, the reflector's back-off
// is right for it). A connection that fails is tried again every reachRetry
// until ctx ends. Left to the reflector, every failed try would double its
// back-off, up to 30 s, and the pod updates of an outage's end would wait
// that long after the server's return; here they wait reachRetry, and the
// 410 Gone of the first watch after a restart makes it relist at once.
func untilReachable[T any](ctx context.Context, w *PodWatch, f func() (T, error)) (T, error) {
	for {
		v, err := f()
		w.result(ctx, err)
		var status apierrors.APIStatus
		if err == nil || ctx.Err() != nil || errors.As(err, &status) {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(reachRetry):
		}
	}
}

// noWatchList tells the reflector not to use the streaming watch-list.
type noWatchList struct{}

func (noWatchList) IsWatchListSemanticsUnSupported() bool { return true }

// result records the outcome of a list or watch call.
func (w *PodWatch) result(ctx context.Context, err error) {
	switch {
	case err == nil:
		w.answered(ctx)
	case ctx.Err() == nil:
		w.failed(ctx, err)
	}
}

// answered ends an outage: an Info, and an Up once the watch had synced
// (before, the initial list's delivery sends it).
func (w *PodWatch) answered(ctx context.Context) {
	w.healthMu.Lock()
	if !w.down {
		w.healthMu.Unlock()
		return
	}
	w.down = false
	w.logger.Info("API server reachable again: pod updates resume", "node", w.node)
	var st *event.SourceStatus
	if w.synced.Load() {
		w.up = true
		st = &event.SourceStatus{Time: w.now(), Source: event.SourcePodWatch, Up: true}
	}
	w.healthMu.Unlock()
	if st != nil { // not under healthMu: Run, which drains the queue, takes it
		w.send(ctx, st)
	}
}

// failed logs the first failure of an outage as a Warn, and says Down;
// retries are logged at Debug.
func (w *PodWatch) failed(ctx context.Context, err error) {
	w.healthMu.Lock()
	if w.down {
		w.healthMu.Unlock()
		w.logger.Debug("API server still unreachable", "error", err)
		return
	}
	w.down, w.up = true, false
	w.logger.Warn("API server unreachable: pod updates (conditions, container statuses) are lost until it answers; retrying with back-off",
		"node", w.node, "error", err)
	st := &event.SourceStatus{Time: w.now(), Source: event.SourcePodWatch, Reason: event.ReasonDisconnected}
	w.healthMu.Unlock()
	w.send(ctx, st)
}

// watchError replaces client-go's default handler, which logs every failure
// at Error: a watch that ends or expires is routine (Debug), other errors
// count as failures.
func (w *PodWatch) watchError(ctx context.Context, _ *cache.Reflector, err error) {
	if ctx.Err() != nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
		w.logger.Debug("pod watch restarts", "error", err)
		return
	}
	w.failed(ctx, err)
}

// podHandler turns informer notifications into PodUpdates. The informer
// calls it from one goroutine, in delivery order.
type podHandler struct {
	node    string
	now     func() time.Time
	logger  *slog.Logger
	skipped *atomic.Uint64
	out     func(*event.PodUpdate)
	// forget drops a pod from the informer's cache (nil: none is dropped).
	forget func(*corev1.Pod)
}

func (h *podHandler) OnAdd(obj any, _ bool) {
	if pod := h.pod(obj); pod != nil {
		h.out(&event.PodUpdate{Time: h.now(), Action: event.PodAdded, Pod: pod})
		h.ended(pod)
	}
}

// ended drops a pod that ended (Succeeded or Failed) from the informer's
// cache once its update is out: the correlator holds what it reads of it
// (within its budget), and nothing reads the cache but the informer, so a
// tenant's thousands of failed pods bound to the node are not held until
// they are deleted. An update of it after this comes as an add (a relist
// too), which the correlator takes for a pod it knows.
func (h *podHandler) ended(pod *corev1.Pod) {
	if h.forget != nil && (pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed) {
		h.forget(pod)
	}
}

func (h *podHandler) OnUpdate(oldObj, newObj any) {
	pod := h.pod(newObj)
	if pod == nil {
		return
	}
	if old, ok := oldObj.(*corev1.Pod); ok && old.ResourceVersion == pod.ResourceVersion {
		h.skipped.Add(1) // a relist delivered a pod we already have
		return
	}
	h.out(&event.PodUpdate{Time: h.now(), Action: event.PodUpdated, Pod: pod})
	h.ended(pod)
}

func (h *podHandler) OnDelete(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		// The watch missed the delete; Obj is the last state we saw.
		h.logger.Debug("pod deleted while the watch was down", "key", tomb.Key)
		obj = tomb.Obj
	}
	if pod := h.pod(obj); pod != nil {
		h.out(&event.PodUpdate{Time: h.now(), Action: event.PodDeleted, Pod: pod})
	}
}

func (h *podHandler) pod(obj any) *corev1.Pod {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		h.logger.Debug("ignoring a non-pod object from the pod watch", "type", fmt.Sprintf("%T", obj))
		return nil
	}
	if pod.Spec.NodeName != h.node { // the field selector already excludes them
		h.skipped.Add(1)
		return nil
	}
	return pod
}

// transform is the informer's: StripPod, and the command lines of the
// pod's spec and the messages of its status as w.argv lets them leave
// (with --argv=none, in the informer's cache too, so that no other path
// reads them).
func (w *PodWatch) transform(obj any) (any, error) {
	obj, err := StripPod(obj)
	w.argv.StripCommands(podIn(obj))
	w.argv.StripMessages(podIn(obj))
	return obj, err
}

// podIn returns the pod obj is or holds (a cache.DeletedFinalStateUnknown),
// or nil.
func podIn(obj any) *corev1.Pod {
	if tomb, isTomb := obj.(cache.DeletedFinalStateUnknown); isTomb {
		obj = tomb.Obj
	}
	pod, _ := obj.(*corev1.Pod)
	return pod
}

// StripPod strips a pod to what readyline reads (event.StripPod) before the
// informer caches it (through transform), so that neither the cache nor
// anything downstream holds managedFields, env, kubectl's last-applied copy
// of the object or other fields readyline never reads. It accepts a
// *corev1.Pod or a cache.DeletedFinalStateUnknown holding one, changes the
// pod in place, is idempotent, and returns its argument (a
// cache.TransformFunc).
func StripPod(obj any) (any, error) {
	if pod := podIn(obj); pod != nil {
		*pod = *event.StripPod(pod)
	}
	return obj, nil
}
