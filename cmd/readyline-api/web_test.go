package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/readyline/readyline/exporter"
	"github.com/readyline/readyline/exporter/apiauth"
	"github.com/readyline/readyline/exporter/podstartapi"
)

// TestWebReadsTheNodesPagesForTheUser: podstarts/NAME/web/PATH reads the
// daemon's page at PATH on the start's node, for the API server's user
// (named, no credential: the request's own headers stay behind), answers
// with the pages' Content-Security-Policy whatever the node said, sends
// web and web/ to the start's page, and reaches nothing of the daemon but
// its pages and timelines.
func TestWebReadsTheNodesPagesForTheUser(t *testing.T) {
	p := newTestPKI(t)
	d := startFakeDaemon(t, p, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ui/pods/team/web":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Header().Set("Set-Cookie", "x=1")
			w.Write([]byte(`<html><a href="../../">back</a></html>`))
		case "/ui":
			w.Header().Set("Location", "ui/")
			w.WriteHeader(http.StatusMovedPermanently)
		default:
			http.NotFound(w, r)
		}
	})
	ip, port := d.addr(t)
	nodes, err := newNodeClient(p.caFile, p.clientCert, p.key, port, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	store := newSummaries(10, nil)
	store.ReplaceNode("n1", []*podstartapi.PodStart{start("team", "web", "u1", "n1", "ready", time.Now())})
	web := &podStartWeb{starts: &podStarts{store: store, nodes: nodes, logger: discard(), ips: func(string) (string, bool) { return ip, true }}}
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{"team"}}
	ctx := genericapirequest.WithUser(genericapirequest.WithNamespace(context.Background(), "team"), alice)

	serve := func(path, reqPath string) *httptest.ResponseRecorder {
		t.Helper()
		h, err := web.Connect(ctx, "web", &podstartapi.PodStartWebOptions{Path: path}, nil)
		if err != nil {
			t.Fatalf("connect %q: %v", path, err)
		}
		req := httptest.NewRequest(http.MethodGet, reqPath+"?path=x", nil)
		req.Header.Set("Authorization", "Bearer alices-token")
		req.Header.Set("X-Remote-User", "system:kube-aggregator")
		req.Header.Set("Cookie", "session=1")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	const base = "/apis/readyline.dev/v1alpha1/namespaces/team/podstarts/web/web"
	rec := serve("/ui/pods/team/web", base+"/ui/pods/team/web")
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `href="../../"`) || rec.Header().Get("Content-Type") != "text/html; charset=utf-8" {
		t.Errorf("the start's page: %d %v %q", rec.Code, rec.Header(), rec.Body)
	}
	if rec.Header().Get("Content-Security-Policy") != exporter.UIContentSecurityPolicy || rec.Header().Get("X-Content-Type-Options") != "nosniff" ||
		rec.Header().Get("Set-Cookie") != "" {
		t.Errorf("the page's headers %v: want the UI's CSP, nosniff, and no cookie of the node's", rec.Header())
	}
	if rec := serve("/ui", base+"/ui"); rec.Code != http.StatusMovedPermanently || rec.Header().Get("Location") != "ui/" {
		t.Errorf("web/ui: %d to %q, want the daemon's relative redirect", rec.Code, rec.Header().Get("Location"))
	}
	for reqPath, want := range map[string]string{base: "web/ui/pods/team/web", base + "/": "ui/pods/team/web"} {
		if rec := serve("", reqPath); rec.Code != http.StatusFound || rec.Header().Get("Location") != want {
			t.Errorf("%s: %d to %q, want %s", reqPath, rec.Code, rec.Header().Get("Location"), want)
		}
	}
	for _, path := range []string{"/metrics", "/debug/pprof/", "/api/v1/events", "/uix"} {
		if _, err := web.Connect(ctx, "web", &podstartapi.PodStartWebOptions{Path: path}, nil); !apierrors.IsNotFound(err) {
			t.Errorf("web%s: %v, want 404: only the daemon's pages and timelines", path, err)
		}
	}
	if _, err := web.Connect(ctx, "nothere", &podstartapi.PodStartWebOptions{Path: "/ui/"}, nil); !apierrors.IsNotFound(err) {
		t.Errorf("web of no start: %v, want 404", err)
	}

	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.reqs) != 2 {
		for _, r := range d.reqs {
			t.Logf("the node got %s", r.URL)
		}
		t.Fatalf("the node got %d requests, want 2", len(d.reqs))
	}
	for i, r := range d.reqs {
		if r.Header.Get("Authorization") != "" || r.Header.Get("Cookie") != "" || r.Header.Get(apiauth.HeaderUser) != "alice" ||
			r.URL.Query().Has("path") || d.cns[i] != apiauth.AggregatorName {
			t.Errorf("the node got %s %v (client %s): want alice named, no credential, no cookie, no path parameter", r.URL, r.Header, d.cns[i])
		}
	}
}
