package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter"
	"github.com/readyline/readyline/exporter/apiauth"
	"github.com/readyline/readyline/exporter/apiclient"
	"github.com/readyline/readyline/exporter/podstartapi"
	"github.com/readyline/readyline/exporter/termtext"
)

// nodeClient asks the daemons' node API (apiauth.ForwardedHandler) over
// mutual TLS: the aggregator's client certificate, and the daemons'
// certificate for apiauth.NodeServerName, both of the chart's CA.
type nodeClient struct {
	http *http.Client
	port int
}

// maxTimelineBytes bounds a timeline read from a node, maxListBytes a
// node's list of summaries: a node answers what it holds, within its own
// budget, and a fallen one does not grow the aggregator without bound.
const (
	maxTimelineBytes = 16 << 20
	maxListBytes     = 32 << 20
)

func newNodeClient(caFile, certFile, keyFile string, port int, timeout time.Duration) (*nodeClient, error) {
	pool, err := apiauth.CAPool(caFile)
	if err != nil {
		return nil, fmt.Errorf("the nodes' CA: %w", err)
	}
	// The key is read again when it changes (a rotated Secret).
	getCert := func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		c, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("the aggregator's client certificate: %w", err)
		}
		return &c, nil
	}
	if _, err := getCert(nil); err != nil {
		return nil, err
	}
	tr := &http.Transport{
		TLSClientConfig: &tls.Config{
			MinVersion: tls.VersionTLS13, RootCAs: pool, ServerName: apiauth.NodeServerName,
			GetClientCertificate: getCert,
		},
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		TLSHandshakeTimeout: 5 * time.Second,
		MaxIdleConnsPerHost: 2,
		IdleConnTimeout:     90 * time.Second,
	}
	// A daemon's redirect is its answer, passed on or refused, never
	// followed: the aggregator's certificate and a reader's name go to the
	// node it asked, and nowhere a node points.
	noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &nodeClient{http: &http.Client{Transport: tr, Timeout: timeout, CheckRedirect: noRedirect}, port: port}, nil
}

func (c *nodeClient) url(ip, path string, q url.Values) string {
	u := url.URL{Scheme: "https", Host: net.JoinHostPort(ip, strconv.Itoa(c.port)), Path: path, RawQuery: q.Encode()}
	return u.String()
}

// get asks the daemon at ip; reader, when not nil, is the user the API
// server authenticated, whom the daemon asks about as that user.
func (c *nodeClient) get(ctx context.Context, ip, path string, q url.Values, reader *apiauth.User, limit int64) ([]byte, error) {
	resp, err := c.do(ctx, ip, path, q, reader, "", "")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return readAnswer(resp, limit)
}

// readAnswer reads a node's answer, at most limit bytes: its body when
// 200, else an apiclient.Error.
func readAnswer(resp *http.Response, limit int64) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(body)) > limit {
		return nil, fmt.Errorf("the node's answer is over %d MiB", limit>>20)
	}
	if resp.StatusCode != http.StatusOK {
		// Its first line, as apiclient keeps it: it reaches users' terminals.
		line, _, _ := strings.Cut(strings.TrimSpace(string(body[:min(len(body), 512)])), "\n")
		return nil, &apiclient.Error{Status: resp.StatusCode, Message: termtext.Escape(line)}
	}
	return body, nil
}

// do sends GET path?q to the daemon at ip, for reader when not nil, with
// accept as its Accept header and etag as its If-None-Match when not
// empty: the daemon gets its client certificate and the reader's name,
// nothing of the request that asked for it.
func (c *nodeClient) do(ctx context.Context, ip, path string, q url.Values, reader *apiauth.User, accept, etag string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url(ip, path, q), nil)
	if err != nil {
		return nil, err
	}
	if reader != nil {
		apiauth.SetForwardedUser(req.Header, reader)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if etag != "" {
		req.Header.Set("If-None-Match", etag)
	}
	return c.http.Do(req)
}

// errNotModified: the node's starts are as its answer tagged etag said.
var errNotModified = errors.New("not modified")

// List asks the daemon at ip for its starts' summaries, with what each in
// progress waits on, and returns them with their ETag; with etag (the
// last answer's), a node whose starts did not change answers
// errNotModified, and nothing to decode. eventsShare, when over 0, is the
// node's share of the cluster's Events reads (reads a second).
func (c *nodeClient) List(ctx context.Context, ip, etag string, eventsShare float64) ([]apiclient.TimelineSummary, string, error) {
	q := url.Values{"waiting": {"1"}}
	if eventsShare > 0 {
		q.Set(apiclient.EventsShareParam, strconv.FormatFloat(eventsShare, 'g', 4, 64))
	}
	resp, err := c.do(ctx, ip, "/api/v1/timelines", q, nil, "", etag)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotModified && etag != "" {
		return nil, etag, errNotModified
	}
	if resp.StatusCode != http.StatusOK {
		_, err := readAnswer(resp, maxListBytes)
		return nil, "", err
	}
	// Decoded as it comes: thousands of nodes' lists are not each read
	// whole into a buffer first.
	var list apiclient.TimelineList
	body := &io.LimitedReader{R: resp.Body, N: maxListBytes + 1}
	if err := json.NewDecoder(body).Decode(&list); err != nil {
		if body.N <= 0 {
			return nil, "", fmt.Errorf("the node's answer is over %d MiB", maxListBytes>>20)
		}
		return nil, "", fmt.Errorf("the node's list: %w", err)
	}
	// What follows the list (its newline) is read: the connection is
	// kept for the next poll.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	return list.Timelines, resp.Header.Get("ETag"), nil
}

// Timeline asks the daemon at ip for the timeline of pod
// namespace/name (of that UID), as reader may read it.
func (c *nodeClient) Timeline(ctx context.Context, ip, namespace, name, uid string, reader *apiauth.User) ([]byte, error) {
	q := url.Values{}
	if uid != "" {
		q.Set("uid", uid)
	}
	return c.get(ctx, ip, "/api/v1/timelines/"+url.PathEscape(namespace)+"/"+url.PathEscape(name), q, reader, maxTimelineBytes)
}

// podStartOf is the PodStart of a node's summary. A start in progress has
// no end and no duration (the table counts it from its start): a poll
// that finds it waiting on the same is no change, and no watch event.
func podStartOf(node string, s apiclient.TimelineSummary) *podstartapi.PodStart {
	if s.Outcome == correlator.OutcomeStarting {
		s.End, s.DurationSeconds = time.Time{}, 0
	}
	return &podstartapi.PodStart{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: s.Namespace, Name: s.Name, UID: types.UID(s.UID),
			CreationTimestamp: metav1.NewTime(s.Start.Truncate(time.Second)),
		},
		Spec: podstartapi.PodStartSpec{NodeName: node, PodUID: s.UID},
		Status: podstartapi.PodStartStatus{
			Outcome:   string(s.Outcome),
			StartTime: metav1.NewTime(s.Start), EndTime: endTime(s.End),
			DurationSeconds: math.Round(s.DurationSeconds*1000) / 1000,
			WaitingOn:       s.Waiting, Reason: s.Reason,
			TraceID: exporter.TraceIDForPod(s.UID).String(),
		},
	}
}

func endTime(t time.Time) *metav1.Time {
	if t.IsZero() {
		return nil
	}
	mt := metav1.NewTime(t)
	return &mt
}

// daemonPod is where a node's daemon answers.
type daemonPod struct {
	uid  types.UID
	node string
	ip   string
}

// poller asks every node's daemon for its summaries, every interval, and
// keeps them in store: a daemon that does not answer keeps what it said
// last (counted and logged), a daemon gone is forgotten after grace (a
// rollout's new pod on the node takes over before).
//
// With each ask goes the node's share of eventsBudget, the Events reads a
// second of every daemon together (0: no bound but each node's own): the
// budget divided among the nodes that had a start in progress at their
// last answer, the ones that read Events. Each node keeps to its share
// (podevents.Reader.SetShare): the cluster's reads stay within
// the budget, give or take a poll's worth of nodes turning busy.
type poller struct {
	client       *nodeClient
	store        *summaries
	interval     time.Duration
	spread       time.Duration // the first asks', over which they are spread
	grace        time.Duration
	eventsBudget float64
	logger       *slog.Logger

	synced atomic.Bool // the daemon pods are known

	mu      sync.Mutex
	running map[string]*nodePoll // by node
	busy    map[string]bool      // the nodes with a start in progress
}

// eventsShare is a node's share of the Events budget now (0: no budget).
func (p *poller) eventsShare() float64 {
	if p.eventsBudget <= 0 {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.eventsBudget / float64(max(1, len(p.busy)))
}

// setBusy records whether node has a start in progress.
func (p *poller) setBusy(node string, busy bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if busy {
		if p.busy == nil {
			p.busy = map[string]bool{}
		}
		p.busy[node] = true
	} else {
		delete(p.busy, node)
	}
}

type nodePoll struct {
	pod    daemonPod
	cancel context.CancelFunc
	asked  chan struct{} // closed once the daemon was asked (answered or not)
}

// sync starts, moves or stops node's poll for the daemon pod p (nil: none).
func (p *poller) sync(ctx context.Context, node string, pod *daemonPod) {
	p.mu.Lock()
	defer p.mu.Unlock()
	cur, ok := p.running[node]
	if ok && pod != nil && cur.pod == *pod {
		return
	}
	if ok {
		cur.cancel()
		delete(p.running, node)
	}
	if pod == nil {
		go p.forgetLater(ctx, node)
		return
	}
	pctx, cancel := context.WithCancel(ctx)
	np := &nodePoll{pod: *pod, cancel: cancel, asked: make(chan struct{})}
	p.running[node] = np
	go p.poll(pctx, np)
}

// forgetLater forgets node's starts after the grace, unless a daemon of
// the node answers for it again by then.
func (p *poller) forgetLater(ctx context.Context, node string) {
	select {
	case <-ctx.Done():
		return
	case <-time.After(p.grace):
	}
	p.mu.Lock()
	_, back := p.running[node]
	p.mu.Unlock()
	if !back {
		p.setBusy(node, false)
		p.store.ReplaceNode(node, nil)
		p.logger.Info("forgot a node's pod starts: no daemon answers for it", "node", node)
	}
}

// poll asks pod's daemon until ctx ends, first at a random time within
// spread: a replica that starts, or learns of every daemon at once,
// spreads its asks (and TLS handshakes) over the interval rather than
// asking thousands of nodes in the same instant, every interval.
func (p *poller) poll(ctx context.Context, np *nodePoll) {
	pod := np.pod
	if p.spread > 0 {
		select {
		case <-ctx.Done():
			return
		case <-time.After(rand.N(p.spread)):
		}
	}
	t := time.NewTicker(p.interval)
	defer t.Stop()
	failing := false
	etag := ""
	for first := true; ; first = false {
		list, tag, err := p.client.List(ctx, pod.ip, etag, p.eventsShare())
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, errNotModified):
			notModified.Add(1)
		case err != nil:
			pollErrors.Add(1)
			if !failing {
				p.logger.Warn("a node's daemon does not answer: its starts are as it said last", "node", pod.node, "ip", pod.ip, "error", err)
			}
			failing, etag = true, ""
		default:
			if failing {
				p.logger.Info("a node's daemon answers again", "node", pod.node)
			}
			failing, etag = false, tag
			starts := make([]*podstartapi.PodStart, 0, len(list))
			busy := false
			for _, s := range list {
				starts = append(starts, podStartOf(pod.node, s))
				busy = busy || s.Outcome == correlator.OutcomeStarting
			}
			p.setBusy(pod.node, busy)
			p.store.ReplaceNode(pod.node, starts)
		}
		if first {
			close(np.asked)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// errNotPolled keeps a replica out of the Service until it has asked every
// daemon once: a replica that just started would answer lists with none
// of the cluster's starts.
var errNotPolled = errors.New("not every node's daemon asked yet")

// Ready returns nil once the daemon pods are known and each was asked once
// (answered or not): readyz's check, so that the Service sends a list to a
// replica that has them.
func (p *poller) Ready() error {
	if !p.synced.Load() {
		return errNotPolled
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for node, np := range p.running {
		select {
		case <-np.asked:
		default:
			return fmt.Errorf("%w: node %s", errNotPolled, node)
		}
	}
	return nil
}

// daemonPodOf is where pod answers, when it runs and has an IP.
func daemonPodOf(pod *corev1.Pod) (*daemonPod, bool) {
	if pod.Spec.NodeName == "" || pod.Status.PodIP == "" || pod.Status.Phase != corev1.PodRunning || pod.DeletionTimestamp != nil {
		return nil, false
	}
	return &daemonPod{uid: pod.UID, node: pod.Spec.NodeName, ip: pod.Status.PodIP}, true
}

// Run follows the daemon pods of informer until ctx ends, polling each.
func (p *poller) Run(ctx context.Context, informer cache.SharedIndexInformer) error {
	p.running, p.busy = map[string]*nodePoll{}, map[string]bool{}
	onPod := func(obj any) {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		if d, ok := daemonPodOf(pod); ok {
			p.sync(ctx, d.node, d)
			return
		}
		p.mu.Lock()
		cur, ok := p.running[pod.Spec.NodeName]
		p.mu.Unlock()
		if ok && cur.pod.uid == pod.UID {
			p.sync(ctx, pod.Spec.NodeName, nil)
		}
	}
	_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    onPod,
		UpdateFunc: func(_, obj any) { onPod(obj) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				p.mu.Lock()
				cur, ok := p.running[pod.Spec.NodeName]
				p.mu.Unlock()
				if ok && cur.pod.uid == pod.UID {
					p.sync(ctx, pod.Spec.NodeName, nil)
				}
			}
		},
	})
	if err != nil {
		return err
	}
	go informer.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return errors.New("the daemon pods' informer did not sync")
	}
	p.synced.Store(true)
	<-ctx.Done()
	return nil
}
