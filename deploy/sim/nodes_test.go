//go:build sim

package sim

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter/apiauth"
	"github.com/readyline/readyline/exporter/apiauth/pkitest"
	"github.com/readyline/readyline/exporter/apiclient"
)

// The simulated cluster: every node runs podsPerNode pods (the kubelet's
// default maxPods) in namespaces namespaces; stuckPerNode of them are
// stuck starting (an image that cannot be pulled: a registry outage), the
// Events of which the daemons read.
const (
	podsPerNode  = 110
	namespaces   = 50
	stuckPerNode = 20
)

// nodeName and nodeIP name node n and its daemon pod's address: a
// loopback address of its own, so that one listener answers for every
// node and tells them apart.
func nodeName(n int) string { return fmt.Sprintf("node-%05d", n) }

func nodeIP(n int) string { return fmt.Sprintf("127.1.%d.%d", n/250, n%250+1) }

// pod is one pod of node n.
type pod struct{ namespace, name, uid string }

func podOf(n, i int) pod {
	return pod{fmt.Sprintf("team-%02d", (n+i)%namespaces), fmt.Sprintf("app-%d-%d", n, i),
		fmt.Sprintf("%08x-0000-4000-8000-%012x", n, i)}
}

// summaries is what node n's daemon answers readyline-api's list with:
// its pods' starts, the stuck ones waiting on their image (for a while,
// in seconds).
func summaries(n int, t0 time.Time, waited int) []byte {
	list := apiclient.TimelineList{Timelines: make([]apiclient.TimelineSummary, podsPerNode)}
	for i := range podsPerNode {
		p := podOf(n, i)
		s := apiclient.TimelineSummary{Namespace: p.namespace, Name: p.name, UID: p.uid,
			Outcome: correlator.OutcomeReady, Start: t0.Add(-time.Duration(i) * time.Minute)}
		s.End = s.Start.Add(4200 * time.Millisecond)
		s.DurationSeconds = 4.2
		if i < stuckPerNode {
			s.Outcome, s.End, s.DurationSeconds = correlator.OutcomeStarting, time.Time{}, 0
			s.Waiting = fmt.Sprintf(`app: PullImage "registry.example/app:1.2": running for %ds, not returned yet`, waited)
		}
		list.Timelines[i] = s
	}
	b, _ := json.Marshal(list)
	return b
}

// changingEvery: one node in changingEvery has a pull in flight whose
// "running for" its daemon says anew at each list; the others' lists do
// not change from one poll to the next.
const changingEvery = 10

// fakeNodes is the node API of the simulated daemons, on one listener
// (every node's address, one port), over mutual TLS as the daemons serve
// it: it answers each node's list with the summaries recorded for it (an
// ETag as the daemon's: a list asked with it, unchanged, is 304) and
// keeps the Events share readyline-api sent each.
type fakeNodes struct {
	port int
	srv  *http.Server

	mu     sync.RWMutex
	bodies map[string][2]answer // by node IP: the answers it alternates between
	turn   map[string]int
	shares map[string]float64
	lists  atomic.Int64
	full   atomic.Int64 // lists answered in full, not 304
}

type answer struct {
	body []byte
	etag string
}

func answerOf(body []byte) answer {
	return answer{body: body, etag: fmt.Sprintf(`"%x"`, sha256.Sum256(body))}
}

func startFakeNodes(tb testing.TB, ca *pkitest.CA, dir string) *fakeNodes {
	tb.Helper()
	serving := ca.Issue(tb, dir, "node", pkitest.Spec{CommonName: apiauth.NodeServerName,
		DNSNames: []string{apiauth.NodeServerName}, Usage: x509.ExtKeyUsageServerAuth})
	f := &fakeNodes{bodies: map[string][2]answer{}, turn: map[string]int{}, shares: map[string]float64{}}
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		tb.Fatal(err)
	}
	f.port = ln.Addr().(*net.TCPAddr).Port
	f.srv = &http.Server{Handler: http.HandlerFunc(f.serve), ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: log.New(io.Discard, "", 0), // handshakes cut by a stopped readyline-api
		TLSConfig: &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{serving.Certificate},
			ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool(), NextProtos: []string{"http/1.1"}}}
	go func() { _ = f.srv.ServeTLS(ln, "", "") }()
	tb.Cleanup(func() { _ = f.srv.Close() })
	return f
}

func (f *fakeNodes) serve(w http.ResponseWriter, r *http.Request) {
	local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	host, _, _ := net.SplitHostPort(fmt.Sprint(local))
	if cn := r.TLS.VerifiedChains[0][0].Subject.CommonName; cn != apiauth.AggregatorName || r.URL.Path != "/api/v1/timelines" {
		http.Error(w, "the simulated nodes answer the aggregator's lists alone", http.StatusForbidden)
		return
	}
	f.mu.Lock()
	answers, ok := f.bodies[host]
	a := answers[f.turn[host]%2]
	f.turn[host]++
	if v, err := strconv.ParseFloat(r.URL.Query().Get(apiclient.EventsShareParam), 64); err == nil {
		f.shares[host] = v
	}
	f.mu.Unlock()
	if !ok {
		http.Error(w, "no node at "+host, http.StatusNotFound)
		return
	}
	f.lists.Add(1)
	w.Header().Set("ETag", a.etag)
	if r.Header.Get("If-None-Match") == a.etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	f.full.Add(1)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(a.body)
}

// share is the Events share node n was sent last (0: none yet).
func (f *fakeNodes) share(n int) float64 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.shares[nodeIP(n)]
}

// addNodes makes nodes [from, to): their daemon pods in the API server,
// running at their addresses as the aggregator finds them, and their
// answers.
func (f *fakeNodes) addNodes(tb testing.TB, client kubernetes.Interface, from, to int, t0 time.Time) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(32)
	for n := from; n < to; n++ {
		a := answerOf(summaries(n, t0, 190))
		answers := [2]answer{a, a}
		if n%changingEvery == 0 {
			answers[1] = answerOf(summaries(n, t0, 195))
		}
		f.mu.Lock()
		f.bodies[nodeIP(n)] = answers
		f.mu.Unlock()
		g.Go(func() error { return createDaemonPod(ctx, client, n) })
	}
	if err := g.Wait(); err != nil {
		tb.Fatalf("making the daemon pods of nodes %d-%d: %v", from, to-1, err)
	}
}

// daemonNamespace and daemonLabels are readyline-api's defaults.
const daemonNamespace = "readyline"

var daemonLabels = map[string]string{"app.kubernetes.io/name": "readyline", "app.kubernetes.io/component": "node"}

func createDaemonPod(ctx context.Context, client kubernetes.Interface, n int) error {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "readyline-" + nodeName(n), Namespace: daemonNamespace, Labels: daemonLabels},
		Spec: corev1.PodSpec{NodeName: nodeName(n), Containers: []corev1.Container{{Name: "readyline", Image: "readyline"}},
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}},
	}
	created, err := client.CoreV1().Pods(daemonNamespace).Create(ctx, p, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		return err
	}
	created.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: nodeIP(n), PodIPs: []corev1.PodIP{{IP: nodeIP(n)}}}
	_, err = client.CoreV1().Pods(daemonNamespace).UpdateStatus(ctx, created, metav1.UpdateOptions{})
	return err
}
