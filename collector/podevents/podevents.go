package podevents

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/readyline/readyline/collector/event"
	"github.com/readyline/readyline/collector/redact"
)

// EventLister lists Events: kubeapi's, or a fake clientset's in tests.
type EventLister interface {
	List(ctx context.Context, opts metav1.ListOptions) (*corev1.EventList, error)
}

// Config configures a Reader.
type Config struct {
	// Events returns the Events of a namespace.
	Events func(namespace string) EventLister
	// QPS and Burst bound the reads, all pods together (default 2 and 5):
	// the API server cannot select Events by node, so each node reads the
	// Events of its own pods one pod at a time, and only when a start
	// needs them.
	QPS   float64
	Burst int
	// Timeout bounds one read (default 5 s).
	Timeout time.Duration
	// Argv is what of a command line in a message leaves the node
	// (readyline run's --argv): each message goes through its Message.
	Argv redact.Policy
}

func (c Config) withDefaults() Config {
	if c.QPS <= 0 {
		c.QPS = 2
	}
	if c.Burst <= 0 {
		c.Burst = 5
	}
	if c.Timeout <= 0 {
		c.Timeout = 5 * time.Second
	}
	return c
}

// Reader reads the Events of one pod at a time from the API server
// (a list with a field selector on the pod's UID or name), bounded in reads
// per second. Reads of its own (Background) and reads a reader asked for
// have a limit each: the cluster's share of a node (SetShare) bounds the
// first. It is safe for concurrent use.
type Reader struct {
	cfg        Config
	asked      *rate.Limiter
	background *rate.Limiter
	logger     *slog.Logger
}

// Why a read is made.
const (
	// Background: a start in progress, or one that ended other than
	// Ready, needs the kubelet's words.
	Background = false
	// Asked: someone asked about the pod (readyline explain, a timeline
	// read through readyline.dev).
	Asked = true
)

// NewReader returns a Reader.
func NewReader(cfg Config, logger *slog.Logger) (*Reader, error) {
	if cfg.Events == nil {
		return nil, fmt.Errorf("pod events: no Events client")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cfg = cfg.withDefaults()
	return &Reader{cfg: cfg, logger: logger,
		asked:      rate.NewLimiter(rate.Limit(cfg.QPS), cfg.Burst),
		background: rate.NewLimiter(rate.Limit(cfg.QPS), cfg.Burst)}, nil
}

// SetShare bounds the background reads at qps, this node's share of the
// cluster's budget (readyline-api sends it with each poll: the budget
// divided among the nodes with starts in progress), when under the
// node's own QPS; qps <= 0 gives the node's own back. A share under the
// own QPS reads one at a time (burst 1): a thousand nodes that each
// saved a burst would spend it together when an incident starts.
func (r *Reader) SetShare(qps float64) {
	limit, burst := rate.Limit(r.cfg.QPS), r.cfg.Burst
	if qps > 0 && qps < r.cfg.QPS {
		limit, burst = rate.Limit(qps), 1
	}
	if r.background.Limit() != limit {
		r.background.SetLimit(limit)
		r.background.SetBurst(burst)
	}
}

// Share is the background reads' rate now.
func (r *Reader) Share() float64 { return float64(r.background.Limit()) }

// maxEventsListed bounds one read: a pod with more Events (a crash loop
// of hours has few, the API server de-duplicates them by count) is cut,
// and the cut counted in PodEvents.Omitted.
const maxEventsListed = 500

// Read reads the Events of the pod namespace/name with uid, or, with uid
// empty, of every pod of that name (one PodEvents per pod UID). It waits
// for the rate limit of why (Background or Asked) within ctx. A read the API server refuses is a
// PodEvents with Err (forbidden: the daemon may not list Events), and the
// error; the caller reports it. With claims (the names of the pod's
// PersistentVolumeClaims, uid set), their Events are read too, one list
// each, into PodEvents.Claims.
func (r *Reader) Read(ctx context.Context, namespace, name, uid string, why bool, claims ...string) ([]*event.PodEvents, error) {
	limit := r.background
	if why == Asked {
		limit = r.asked
	}
	if err := limit.Wait(ctx); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	sel := fields.Set{"involvedObject.kind": "Pod", "involvedObject.name": name}
	if uid != "" {
		sel = fields.Set{"involvedObject.uid": uid}
	}
	list, err := r.cfg.Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: sel.String(), Limit: maxEventsListed})
	now := time.Now().UTC()
	if err != nil {
		reason := "error"
		if apierrors.IsForbidden(err) {
			reason = event.ReasonForbidden
		}
		return []*event.PodEvents{{Time: now, PodUID: uid, Namespace: namespace, Name: name, Err: reason + ": " + err.Error()}},
			fmt.Errorf("listing the events of pod %s/%s: %w", namespace, name, err)
	}
	out := Of(list, namespace, name, uid, now, r.cfg.Argv)
	if uid != "" && len(claims) > 0 {
		r.readClaims(ctx, out[0], claims)
	}
	return out, nil
}

// maxClaimsRead bounds the claims whose Events one read lists.
const maxClaimsRead = 4

// readClaims adds the Events of the claims of pe's pod to it; a claim's
// list that fails leaves ClaimsRead false (the claims' Events an earlier
// read had stand).
func (r *Reader) readClaims(ctx context.Context, pe *event.PodEvents, claims []string) {
	pe.ClaimsRead = true
	for _, claim := range claims[:min(len(claims), maxClaimsRead)] {
		sel := fields.Set{"involvedObject.kind": "PersistentVolumeClaim", "involvedObject.name": claim}
		list, err := r.cfg.Events(pe.Namespace).List(ctx, metav1.ListOptions{FieldSelector: sel.String(), Limit: event.MaxClaimEvents})
		if err != nil {
			r.logger.Debug("reading a claim's Events", "namespace", pe.Namespace, "claim", claim, "error", err)
			pe.Claims, pe.ClaimsRead = nil, false
			return
		}
		for i := range list.Items {
			ev := event.PodEventOf(&list.Items[i], r.cfg.Argv)
			ev.Claim = claim
			pe.Claims = append(pe.Claims, ev)
		}
	}
	slices.SortStableFunc(pe.Claims, func(a, b event.PodEvent) int { return a.Last.Compare(b.Last) })
	if n := len(pe.Claims) - event.MaxClaimEvents; n > 0 {
		pe.Claims = slices.Delete(pe.Claims, 0, n)
	}
}

// Of groups the listed Events by the pod UID they are about
// (uid when not empty: the one asked for; every one asked by name gets
// its own, even with no Events), each converted (event.PodEventOf) and the
// latest event.MaxPodEvents kept; argv is what of a command line in a
// message leaves the node.
func Of(list *corev1.EventList, namespace, name, uid string, now time.Time, argv redact.Policy) []*event.PodEvents {
	byUID := map[string]*event.PodEvents{}
	var out []*event.PodEvents
	if uid != "" {
		byUID[uid] = &event.PodEvents{Time: now, PodUID: uid, Namespace: namespace, Name: name}
		out = append(out, byUID[uid])
	}
	for i := range list.Items {
		ev := &list.Items[i]
		u := string(ev.InvolvedObject.UID)
		if u == "" || (uid != "" && u != uid) {
			continue
		}
		pe := byUID[u]
		if pe == nil {
			pe = &event.PodEvents{Time: now, PodUID: u, Namespace: namespace, Name: name}
			byUID[u] = pe
			out = append(out, pe)
		}
		pe.Events = append(pe.Events, event.PodEventOf(ev, argv))
	}
	if list.Continue != "" {
		for _, pe := range out {
			pe.Omitted++ // more than one read lists: some are not here
		}
	}
	for _, pe := range out {
		slices.SortStableFunc(pe.Events, func(a, b event.PodEvent) int { return a.Last.Compare(b.Last) })
		if n := len(pe.Events) - event.MaxPodEvents; n > 0 {
			pe.Events, pe.Omitted = slices.Delete(pe.Events, 0, n), pe.Omitted+n
		}
	}
	return out
}
