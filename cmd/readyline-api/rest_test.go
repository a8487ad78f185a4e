package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/readyline/readyline/exporter/apiauth"
	"github.com/readyline/readyline/exporter/apiauth/pkitest"
	"github.com/readyline/readyline/exporter/apiclient"
	"github.com/readyline/readyline/exporter/podstartapi"
)

// testPKI is a CA and the certificates of the node API: the daemons'
// serving one and the aggregator's client one, as pki.sh makes them.
type testPKI struct {
	ca              *pkitest.CA
	caFile          string
	node            tls.Certificate
	clientCert, key string
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	dir := t.TempDir()
	ca := pkitest.NewCA(t, dir, "test")
	node := ca.Issue(t, dir, "node", pkitest.Spec{CommonName: apiauth.NodeServerName, DNSNames: []string{apiauth.NodeServerName}, Usage: x509.ExtKeyUsageServerAuth})
	client := ca.Issue(t, dir, "client", pkitest.Spec{CommonName: apiauth.AggregatorName, Usage: x509.ExtKeyUsageClientAuth})
	return &testPKI{ca: ca, caFile: ca.File, node: node.Certificate, clientCert: client.CertFile, key: client.KeyFile}
}

// fakeDaemon is a node API that keeps what it was sent.
type fakeDaemon struct {
	srv  *httptest.Server
	mu   sync.Mutex
	reqs []*http.Request
	cns  []string
}

func startFakeDaemon(t *testing.T, p *testPKI, h http.HandlerFunc) *fakeDaemon {
	t.Helper()
	d := &fakeDaemon{}
	pool := p.ca.Pool()
	d.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.mu.Lock()
		d.reqs = append(d.reqs, r.Clone(context.Background()))
		d.cns = append(d.cns, r.TLS.VerifiedChains[0][0].Subject.CommonName)
		d.mu.Unlock()
		h(w, r)
	}))
	d.srv.TLS = &tls.Config{Certificates: []tls.Certificate{p.node}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	d.srv.StartTLS()
	t.Cleanup(d.srv.Close)
	return d
}

func (d *fakeDaemon) addr(t *testing.T) (string, int) {
	host, port, err := net.SplitHostPort(d.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(port)
	return host, n
}

// TestGetSendsTheNodeNoCredential: a get of one pod start reads the
// timeline from the pod's node over mutual TLS (the aggregator's client
// certificate, the node's for readyline-node), naming the API server's
// user in X-Remote-* headers and sending no credential; the node's 403 is
// the user's 403, and a node that does not answer leaves the summary with
// why.
func TestGetSendsTheNodeNoCredential(t *testing.T) {
	p := newTestPKI(t)
	d := startFakeDaemon(t, p, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/timelines/team/web":
			w.Write([]byte(`{"pod":{"namespace":"team","name":"web","uid":"u1"},"outcome":"ready"}`))
		default:
			http.Error(w, "forbidden: User may not get pod", http.StatusForbidden)
		}
	})
	ip, port := d.addr(t)
	nodes, err := newNodeClient(p.caFile, p.clientCert, p.key, port, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	store := newSummaries(10, nil)
	t0 := time.Now()
	store.ReplaceNode("n1", []*podstartapi.PodStart{start("team", "web", "u1", "n1", "ready", t0), start("other", "db", "u2", "n1", "ready", t0),
		start("gone", "x", "u3", "n2", "ready", t0)})
	ps := &podStarts{store: store, nodes: nodes, logger: discard(), ips: func(node string) (string, bool) { return ip, node == "n1" }}

	alice := &user.DefaultInfo{Name: "alice", UID: "uid-a", Groups: []string{"team", "system:authenticated"},
		Extra: map[string][]string{"authentication.kubernetes.io/credential-id": {"JTI=9"}}}
	ctx := func(ns string) context.Context {
		return genericapirequest.WithUser(genericapirequest.WithNamespace(context.Background(), ns), alice)
	}
	obj, err := ps.Get(ctx("team"), "web", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := obj.(*podstartapi.PodStart)
	if got.Status.Timeline == nil || !strings.Contains(string(got.Status.Timeline.Raw), `"outcome":"ready"`) {
		t.Fatalf("get team/web: %+v, want the node's timeline", got)
	}
	if _, err := ps.Get(ctx("other"), "db", nil); !apierrors.IsForbidden(err) {
		t.Errorf("get other/db, which the node refused: %v, want 403", err)
	}
	if _, err := ps.Get(ctx("team"), "nothere", nil); !apierrors.IsNotFound(err) {
		t.Errorf("get of no start: %v, want 404", err)
	}
	obj, err = ps.Get(ctx("gone"), "x", nil)
	if err != nil || obj.(*podstartapi.PodStart).Annotations["readyline.dev/timeline"] == "" {
		t.Errorf("get of a start whose node does not answer: %+v (%v), want the summary and why", obj, err)
	}

	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.reqs) != 2 {
		t.Fatalf("the node got %d requests, want 2", len(d.reqs))
	}
	for i, r := range d.reqs {
		if d.cns[i] != apiauth.AggregatorName {
			t.Errorf("request %d came with client certificate %q", i, d.cns[i])
		}
		for k := range r.Header {
			if k == "Authorization" || strings.HasPrefix(k, "Impersonate-") || strings.Contains(strings.ToLower(k), "token") {
				t.Errorf("the node got header %s: a credential", k)
			}
		}
		if r.Header.Get(apiauth.HeaderUser) != "alice" || r.Header.Get(apiauth.HeaderUID) != "uid-a" || len(r.Header.Values(apiauth.HeaderGroup)) != 2 ||
			r.Header.Get(apiauth.HeaderExtraPrefix+"authentication.kubernetes.io%2Fcredential-id") != "JTI=9" {
			t.Errorf("request %d names the reader as %v", i, r.Header)
		}
		if r.URL.Query().Get("uid") == "" {
			t.Errorf("request %d asks for no UID: %s", i, r.URL)
		}
	}
}

// TestPollerKeepsWhatNodesSaid: the poller lists a node's starts into the
// store (with what each waits on), keeps them while the node does not
// answer, and the list and field selectors serve them.
func TestPollerKeepsWhatNodesSaid(t *testing.T) {
	p := newTestPKI(t)
	var mu sync.Mutex
	down := false
	var shares []string
	notModifiedAnswers := 0
	kept := time.Now().Add(-time.Hour) // a kept start's times stay
	d := startFakeDaemon(t, p, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		shares = append(shares, r.URL.Query().Get(apiclient.EventsShareParam))
		if down {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		if r.Header.Get("If-None-Match") == `"v1"` {
			notModifiedAnswers++
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("ETag", `"v1"`)
		if r.URL.Query().Get("waiting") != "1" {
			http.Error(w, "want waiting=1", http.StatusBadRequest)
			return
		}
		writeJSONList(w, []apiclient.TimelineSummary{
			{Namespace: "team", Name: "web", UID: "0f8fad5b-d9cb-469f-a165-70867728950e", Outcome: "starting", Waiting: "web: readinessProbe failing ×3", Start: kept.Add(59 * time.Minute), End: time.Now()},
			{Namespace: "team", Name: "db", UID: "u2", Outcome: "ready", Start: kept, End: kept.Add(time.Minute), DurationSeconds: 60},
		})
	})
	ip, port := d.addr(t)
	nodes, err := newNodeClient(p.caFile, p.clientCert, p.key, port, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	store := newSummaries(100, nil)
	pl := &poller{client: nodes, store: store, interval: 50 * time.Millisecond, grace: time.Hour, eventsBudget: 10, logger: discard(), running: map[string]*nodePoll{}}
	pl.setBusy("n2", true) // another node with a start in progress
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pl.sync(ctx, "n1", &daemonPod{uid: "d1", node: "n1", ip: ip})
	waitFor(t, func() bool { l, _ := store.List("", all); return len(l) == 2 })
	// A start in progress whose node says the same again (its clock aside)
	// is no change: no watch event per poll.
	_, rv := store.List("", all)
	w, err := store.Watch(ctx, rv, false, all)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // 6 polls
	select {
	case ev := <-w.ResultChan():
		t.Errorf("polls that found nothing new made a watch event: %v %+v", ev.Type, ev.Object)
	default:
	}
	w.Stop()
	mu.Lock()
	// Asked again with the answer's ETag: not modified, no body, and the
	// starts kept.
	if notModifiedAnswers < 3 {
		t.Errorf("%d polls asked with the last answer's ETag, want every one after the first", notModifiedAnswers)
	}
	down = true
	// The Events budget of 10 a second: shared with n2 from the first
	// answer on, when n1 too had a start in progress.
	if len(shares) < 2 || shares[0] != "10" || shares[1] != "5" {
		t.Errorf("the node's shares of an Events budget of 10 with n2 busy: %q, want 10 then 5", shares)
	}
	mu.Unlock()
	time.Sleep(200 * time.Millisecond)
	rest := &podStarts{store: store}
	sel := fields.OneTermEqualSelector("status.outcome", "starting")
	obj, err := rest.List(genericapirequest.WithNamespace(context.Background(), "team"), &metainternalversion.ListOptions{FieldSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	items := obj.(*podstartapi.PodStartList).Items
	if len(items) != 1 || items[0].Name != "web" || items[0].Status.WaitingOn != "web: readinessProbe failing ×3" ||
		items[0].Spec.NodeName != "n1" || items[0].Status.TraceID != "0f8fad5bd9cb469fa16570867728950e" {
		t.Fatalf("starting starts of team while the node is down: %+v", items)
	}
	table, err := rest.ConvertToTable(context.Background(), obj, nil)
	if err != nil || len(table.Rows) != 1 || table.Rows[0].Cells[4] != "web: readinessProbe failing ×3" {
		t.Fatalf("table %+v (%v)", table, err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("not within 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func writeJSONList(w http.ResponseWriter, list []apiclient.TimelineSummary) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(apiclient.TimelineList{Timelines: list})
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// TestPollerForgetsANodeGoneAfterGrace: a node whose daemon pod is gone
// keeps its starts for the grace (a rollout's new pod takes over), then
// they go; a daemon back within the grace keeps them.
func TestPollerForgetsANodeGoneAfterGrace(t *testing.T) {
	store := newSummaries(100, nil)
	pl := &poller{store: store, grace: 100 * time.Millisecond, logger: discard(), running: map[string]*nodePoll{}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	t0 := time.Now()
	store.ReplaceNode("n1", []*podstartapi.PodStart{start("team", "web", "u1", "n1", "ready", t0)})
	store.ReplaceNode("n2", []*podstartapi.PodStart{start("team", "db", "u2", "n2", "ready", t0)})
	pl.running["n1"] = &nodePoll{pod: daemonPod{uid: "d1", node: "n1"}, cancel: func() {}}
	pl.running["n2"] = &nodePoll{pod: daemonPod{uid: "d2", node: "n2"}, cancel: func() {}}

	pl.sync(ctx, "n1", nil) // gone for good
	pl.sync(ctx, "n2", nil) // gone, and back before the grace ends
	pl.mu.Lock()
	pl.running["n2"] = &nodePoll{pod: daemonPod{uid: "d3", node: "n2"}, cancel: func() {}}
	pl.mu.Unlock()
	if l, _ := store.List("", all); len(l) != 2 {
		t.Fatalf("right after the daemons went: %d starts, want both kept for the grace", len(l))
	}
	waitFor(t, func() bool { l, _ := store.List("", all); return len(l) == 1 })
	time.Sleep(200 * time.Millisecond)
	if l, _ := store.List("", all); len(l) != 1 || l[0].Spec.NodeName != "n2" {
		t.Fatalf("after the grace: %+v, want n2's start only", l)
	}
}

// TestPollerReadyOnceEveryDaemonWasAsked: a replica is ready (readyz, so
// the Service sends it lists) once it knows the daemon pods and has asked
// each one, answered or not: not with an empty store just after it started.
func TestPollerReadyOnceEveryDaemonWasAsked(t *testing.T) {
	p := newTestPKI(t)
	release := make(chan struct{})
	d := startFakeDaemon(t, p, func(w http.ResponseWriter, r *http.Request) {
		<-release
		http.Error(w, "busy", http.StatusServiceUnavailable) // asked, and no answer: ready too
	})
	ip, port := d.addr(t)
	nodes, err := newNodeClient(p.caFile, p.clientCert, p.key, port, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	pl := &poller{client: nodes, store: newSummaries(10, nil), interval: time.Hour, grace: time.Hour, logger: discard(), running: map[string]*nodePoll{}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := pl.Ready(); err == nil {
		t.Fatal("ready before the daemon pods were known")
	}
	pl.synced.Store(true)
	pl.sync(ctx, "n1", &daemonPod{uid: "d1", node: "n1", ip: ip})
	time.Sleep(100 * time.Millisecond)
	if err := pl.Ready(); err == nil || !strings.Contains(err.Error(), "n1") {
		t.Fatalf("ready while n1's daemon was being asked: %v", err)
	}
	close(release)
	waitFor(t, func() bool { return pl.Ready() == nil })
}

// TestListPages: a list with a limit comes in pages, in order, each with
// the count left and a token to the next; together they are the whole
// list, once each, a start added between two pages included if it sorts
// after the page read; a token not of this API is a 400.
func TestListPages(t *testing.T) {
	store := newSummaries(100, nil)
	var starts []*podstartapi.PodStart
	for _, ns := range []string{"a", "b"} {
		for i := range 5 {
			starts = append(starts, start(ns, fmt.Sprintf("p%d", i), ns+strconv.Itoa(i), "n1", "ready", time.Now()))
		}
	}
	store.ReplaceNode("n1", starts)
	rest := &podStarts{store: store, logger: discard()}
	ctx := context.Background()
	var got []string
	var remaining []int64
	token := ""
	for page := 0; ; page++ {
		obj, err := rest.List(ctx, &metainternalversion.ListOptions{Limit: 4, Continue: token})
		if err != nil {
			t.Fatal(err)
		}
		l := obj.(*podstartapi.PodStartList)
		for _, ps := range l.Items {
			got = append(got, ps.Namespace+"/"+ps.Name)
		}
		if l.RemainingItemCount != nil {
			remaining = append(remaining, *l.RemainingItemCount)
		}
		if page == 0 { // a start that sorts into a later page
			store.ReplaceNode("n2", []*podstartapi.PodStart{start("b", "p9", "late", "n2", "starting", time.Now())})
		}
		if token = l.Continue; token == "" {
			break
		}
	}
	want := []string{"a/p0", "a/p1", "a/p2", "a/p3", "a/p4", "b/p0", "b/p1", "b/p2", "b/p3", "b/p4", "b/p9"}
	if strings.Join(got, " ") != strings.Join(want, " ") || fmt.Sprint(remaining) != "[6 3]" {
		t.Errorf("pages of 4: %v, remaining %v; want %v, [6 3]", got, remaining, want)
	}
	// With a selector, a page has the token and no count, as the API
	// server's.
	obj, err := rest.List(ctx, &metainternalversion.ListOptions{Limit: 4, FieldSelector: fields.OneTermEqualSelector("spec.nodeName", "n1")})
	if err != nil {
		t.Fatal(err)
	}
	if l := obj.(*podstartapi.PodStartList); len(l.Items) != 4 || l.Continue == "" || l.RemainingItemCount != nil {
		t.Errorf("a page of 4 of node n1's: %d starts, continue %q, remaining %v; want 4, a token, none", len(l.Items), l.Continue, l.RemainingItemCount)
	}
	if _, err := rest.List(ctx, &metainternalversion.ListOptions{Limit: 4, Continue: "not-a-token"}); !apierrors.IsBadRequest(err) {
		t.Errorf("a foreign continue token: %v, want 400", err)
	}
}
