package exporter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/readyline/readyline/correlator"
)

// EventComponent is the source component (and reporting controller) of the
// Kubernetes Events readyline creates.
const EventComponent = "readyline"

// Source and reasons of the Events an Alerter drops
// (readyline_events_dropped_total{source="alerts",reason}).
const (
	DropSourceAlerts     = "alerts"
	DropReasonRateLimit  = "rate_limited"
	DropReasonAPIError   = "api_error"
	DropReasonAlertQueue = "queue_full"
)

// AlertObserver counts what an Alerter decides; *Metrics implements it.
// Implementations must be safe for concurrent use and must not block.
type AlertObserver interface {
	// AddAlerts counts n pod starts that broke the rule name (n may be 0:
	// the series then exists before the first alert).
	AddAlerts(name string, n int)
	// AddDropped counts n Events dropped by source for reason.
	AddDropped(source, reason string, n int)
}

// EventClient creates the Events of one namespace, with the signature of
// client-go's typed Event client: a kubeapi.Events, or a fake clientset's
// CoreV1().Events(namespace) in tests.
type EventClient interface {
	Create(ctx context.Context, event *corev1.Event, opts metav1.CreateOptions) (*corev1.Event, error)
}

// AlerterConfig configures an Alerter. Only Rules is required.
type AlerterConfig struct {
	// Rules are the thresholds, at most one per name (see ParseAlertRule).
	Rules []AlertRule
	// NodeName is the Events' source host and reporting instance.
	NodeName string
	// Events returns the client that creates the Kubernetes Events of a
	// namespace. Nil: alerts are counted, logged and marked on the traces,
	// but no Event is created.
	Events func(namespace string) EventClient
	// Observer, when set, counts alerts and dropped Events.
	Observer AlertObserver
	// EventsPerMinute and Burst size the token bucket that bounds the
	// Events created by this node (defaults 10 and 20): a node-wide slowdown
	// makes every pod slow, and its Events must not flood the API server.
	EventsPerMinute float64
	Burst           int
	// RememberAlerts bounds the (pod UID, rule) pairs remembered so that a
	// pod never gets two Events for the same rule (default 4096).
	RememberAlerts int
	// QueueSize bounds the Events waiting for the API server (default 64).
	QueueSize int
	// Timeout bounds one create request (default 10 s).
	Timeout time.Duration
	// RetryBackoff is the wait before a busy API server is asked again
	// (default 1 s; twice that before the third try).
	RetryBackoff time.Duration
	// Now is the clock of the token bucket and the Events' timestamps;
	// nil is time.Now.
	Now func() time.Time
}

func (c AlerterConfig) withDefaults() AlerterConfig {
	if c.EventsPerMinute <= 0 {
		c.EventsPerMinute = 10
	}
	if c.Burst <= 0 {
		c.Burst = 20
	}
	if c.RememberAlerts <= 0 {
		c.RememberAlerts = 4096
	}
	if c.QueueSize <= 0 {
		c.QueueSize = 64
	}
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Second
	}
	if c.RetryBackoff <= 0 {
		c.RetryBackoff = time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// AlerterStats are an Alerter's counters since it was created.
type AlerterStats struct {
	Alerts      uint64 // rule breaches counted (one per pod and rule)
	Duplicates  uint64 // breaches of a pod and rule already alerted on
	Events      uint64 // Events the API server accepted
	RateLimited uint64 // Events not created: the token bucket was empty
	QueueFull   uint64 // Events not created: the queue was full
	Failed      uint64 // Events the API server refused or did not answer
}

// Alerter checks every finished pod start against the rules and, for each
// rule broken, counts it and has a Warning Event created on the pod (reason
// Slow<Name>, e.g. SlowPodReadyToStartContainers, with the breakdown as its
// message). A pod gets at most one Event per rule, and Events are
// rate-limited node-wide; what is not sent is counted as dropped.
//
// Observe decides and enqueues without blocking; Run creates the Events.
// API failures are counted and logged once per outage. Alerter is safe for
// concurrent use; Run must be called once.
type Alerter struct {
	cfg    AlerterConfig
	logger *slog.Logger
	queue  chan *corev1.Event
	closed atomic.Bool
	down   bool // Run's goroutine only: the last create failed

	mu      sync.Mutex
	limiter *rate.Limiter
	seen    map[string]struct{} // uid "/" rule
	order   []string            // seen's keys in order, a ring once RememberAlerts long
	next    int                 // the oldest key in order once it is a ring

	alerts, duplicates, events, rateLimited, queueFull, failed atomic.Uint64
}

// NewAlerter checks the rules. A nil logger discards logs.
func NewAlerter(cfg AlerterConfig, logger *slog.Logger) (*Alerter, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cfg = cfg.withDefaults()
	names := map[string]bool{}
	for _, r := range cfg.Rules {
		m, ok := findMeasure(r.Name)
		if !ok {
			return nil, fmt.Errorf("alert rule %s: %w", r, ErrUnknownAlert)
		}
		if r.Threshold <= 0 {
			return nil, fmt.Errorf("alert rule %s: the threshold must be positive", r)
		}
		if names[m.name] {
			return nil, fmt.Errorf("alert rule %s: two rules for %s", r, m.name)
		}
		names[m.name] = true
	}
	a := &Alerter{
		cfg:     cfg,
		logger:  logger,
		queue:   make(chan *corev1.Event, cfg.QueueSize),
		limiter: rate.NewLimiter(rate.Limit(cfg.EventsPerMinute/60), cfg.Burst),
		// seen and order grow with the alerts: a node without slow
		// starts holds nothing (preallocated, 270 KiB).
		seen: make(map[string]struct{}),
	}
	if cfg.Observer != nil {
		for _, r := range cfg.Rules {
			cfg.Observer.AddAlerts(r.Name, 0)
		}
	}
	return a, nil
}

// Rules returns the rules the Alerter checks.
func (a *Alerter) Rules() []AlertRule { return append([]AlertRule(nil), a.cfg.Rules...) }

// Observe checks a finished pod start and returns the rules it broke, for
// the trace exporter to mark (see TraceExporter.Export). A breach of a pod
// and rule seen before is returned again but neither counted nor sent
// twice. Observe never blocks.
func (a *Alerter) Observe(tl *correlator.Timeline) []Alert {
	alerts := CheckAlerts(tl, a.cfg.Rules)
	if len(alerts) == 0 {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.cfg.Now()
	for i := range alerts {
		al := &alerts[i]
		if !a.remember(tl.Pod.UID + "/" + al.Name) {
			a.duplicates.Add(1)
			continue
		}
		a.alerts.Add(1)
		if a.cfg.Observer != nil {
			a.cfg.Observer.AddAlerts(al.Name, 1)
		}
		a.logger.Info("slow pod start", "namespace", tl.Pod.Namespace, "pod", tl.Pod.Name, "uid", tl.Pod.UID,
			"trace_id", TraceIDForPod(tl.Pod.UID).String(), "alert", al.Name, "took", correlator.FormatDuration(al.Took),
			"threshold", al.Threshold.String(), "message", al.Message)
		if a.cfg.Events == nil {
			continue
		}
		switch {
		case a.closed.Load():
			a.drop(DropReasonClosed, nil)
		case !a.limiter.AllowN(now, 1):
			a.drop(DropReasonRateLimit, &a.rateLimited)
		default:
			select {
			case a.queue <- a.event(tl, al, now):
			default:
				a.drop(DropReasonAlertQueue, &a.queueFull)
			}
		}
	}
	return alerts
}

// remember records key and reports whether it is new. The oldest key is
// forgotten once RememberAlerts are held.
func (a *Alerter) remember(key string) bool {
	if _, ok := a.seen[key]; ok {
		return false
	}
	a.seen[key] = struct{}{}
	if len(a.order) < a.cfg.RememberAlerts {
		a.order = append(a.order, key)
		return true
	}
	delete(a.seen, a.order[a.next])
	a.order[a.next] = key
	a.next = (a.next + 1) % len(a.order)
	return true
}

func (a *Alerter) drop(reason string, counter *atomic.Uint64) {
	if counter != nil {
		counter.Add(1)
	}
	if a.cfg.Observer != nil {
		a.cfg.Observer.AddDropped(DropSourceAlerts, reason, 1)
	}
}

// event builds the Warning Event of one alert on the pod.
func (a *Alerter) event(tl *correlator.Timeline, al *Alert, now time.Time) *corev1.Event {
	ts := metav1.NewTime(now)
	name := tl.Pod.Name
	if len(name) > 200 {
		name = name[:200]
	}
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{
			// The name scheme of client-go's recorders: unique per pod and moment.
			Name:      fmt.Sprintf("%s.%x", name, now.UnixNano()),
			Namespace: tl.Pod.Namespace,
		},
		InvolvedObject: corev1.ObjectReference{
			Kind: "Pod", APIVersion: "v1",
			Namespace: tl.Pod.Namespace, Name: tl.Pod.Name, UID: types.UID(tl.Pod.UID),
		},
		Reason:              al.Reason,
		Message:             eventMessage(tl, al),
		Type:                corev1.EventTypeWarning,
		Source:              corev1.EventSource{Component: EventComponent, Host: a.cfg.NodeName},
		FirstTimestamp:      ts,
		LastTimestamp:       ts,
		Count:               1,
		ReportingController: EventComponent,
		ReportingInstance:   a.cfg.NodeName,
	}
}

// eventMessage is an alert's message for its Event, followed by where the
// pod start can be read: "<message>. Trace <trace id> (kubectl readyline
// explain -n <namespace> <pod>)". The message is cut, never the pointer, to
// keep it within maxAlertMessage.
func eventMessage(tl *correlator.Timeline, al *Alert) string {
	open := fmt.Sprintf(". Trace %s (kubectl readyline explain -n %s %s)", TraceIDForPod(tl.Pod.UID), tl.Pod.Namespace, tl.Pod.Name)
	return truncateMessage(al.Message, maxAlertMessage-len(open)) + open
}

// Run creates the queued Events until ctx ends; what is still queued then
// is counted as dropped. It returns nil on cancellation.
func (a *Alerter) Run(ctx context.Context) error {
	defer func() {
		a.closed.Store(true)
		for {
			select {
			case <-a.queue:
				a.drop(DropReasonClosed, nil)
			default:
				return
			}
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev := <-a.queue:
			a.create(ctx, ev)
		}
	}
}

// createTries is how many times an Event is sent when the API server
// answers as a busy one does (a timeout, 429, 500, 503), while it is not
// known to be down: a node's alert is not lost to one slow moment.
const createTries = 3

// transientAPIError: an answer worth another try, unlike a refusal.
func transientAPIError(err error) bool {
	var netErr net.Error
	return apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) ||
		errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netErr)
}

// create sends one Event, again after RetryBackoff (then twice that) when
// the API server answered as a busy one; a failure is counted, and logged
// when it is the first since the API server last accepted one. During an
// outage so logged, one try each.
func (a *Alerter) create(ctx context.Context, ev *corev1.Event) {
	var err error
	for try := 1; ; try++ {
		cctx, cancel := context.WithTimeout(ctx, a.cfg.Timeout)
		_, err = a.cfg.Events(ev.Namespace).Create(cctx, ev, metav1.CreateOptions{})
		cancel()
		if err == nil || a.down || try == createTries || ctx.Err() != nil || !transientAPIError(err) {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(a.cfg.RetryBackoff << (try - 1)):
		}
	}
	if err == nil {
		// Logged before it is counted: whoever sees the count (Stats)
		// sees the log line too.
		if a.down {
			a.down = false
			a.logger.Info("creating alert Events recovered", "failed", a.failed.Load())
		}
		a.logger.Debug("alert Event created", "namespace", ev.Namespace, "pod", ev.InvolvedObject.Name,
			"reason", ev.Reason, "event", ev.Name)
		a.events.Add(1)
		return
	}
	if ctx.Err() != nil {
		a.drop(DropReasonClosed, nil)
		return
	}
	if !a.down {
		a.down = true
		a.logger.Warn("cannot create alert Events on pods; further failures are only counted until one succeeds",
			"namespace", ev.Namespace, "pod", ev.InvolvedObject.Name, "reason", ev.Reason, "error", err)
	}
	a.drop(DropReasonAPIError, &a.failed)
}

// Stats returns the Alerter's counters.
func (a *Alerter) Stats() AlerterStats {
	return AlerterStats{
		Alerts: a.alerts.Load(), Duplicates: a.duplicates.Load(), Events: a.events.Load(),
		RateLimited: a.rateLimited.Load(), QueueFull: a.queueFull.Load(), Failed: a.failed.Load(),
	}
}
