package main

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/readyline/readyline/exporter/apiclient"
)

// TestPodStartsAPI reads readyline.dev as the plugin does when the API
// server serves it: discovery finds podstarts, explain takes the timeline
// the node gave, list the summaries with their nodes; 404 and 403 mean
// what they say, and a start whose node did not answer says why.
func TestPodStartsAPI(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/apis/readyline.dev/v1alpha1":
			w.Write([]byte(`{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"readyline.dev/v1alpha1","resources":[{"name":"podstarts","namespaced":true,"kind":"PodStart","verbs":["get","list","watch"]}]}`))
		case "/apis/readyline.dev/v1alpha1/namespaces/team/podstarts/web":
			w.Write([]byte(`{"metadata":{"namespace":"team","name":"web"},"spec":{"nodeName":"n1"},"status":{"outcome":"ready",
				"timeline":{"pod":{"namespace":"team","name":"web","uid":"u1"},"outcome":"ready","start":"2026-12-06T10:00:00Z","end":"2026-12-06T10:00:04Z"}}}`))
		case "/apis/readyline.dev/v1alpha1/namespaces/team/podstarts/lost":
			w.Write([]byte(`{"metadata":{"namespace":"team","name":"lost","annotations":{"readyline.dev/timeline":"node n2 did not answer: timeout"}},"spec":{"nodeName":"n2"},"status":{"outcome":"starting"}}`))
		case "/apis/readyline.dev/v1alpha1/namespaces/team/podstarts":
			w.Write([]byte(`{"items":[{"metadata":{"namespace":"team","name":"web","uid":"u1"},"spec":{"nodeName":"n1"},
				"status":{"outcome":"starting","startTime":"2026-12-06T10:00:00Z","waitingOn":"web: readinessProbe failing ×2"}}]}`))
		case "/apis/readyline.dev/v1alpha1/namespaces/other/podstarts/db":
			w.WriteHeader(http.StatusForbidden)
			w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,"message":"podstarts.readyline.dev \"db\" is forbidden"}`))
		default:
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`))
		}
	}))
	defer srv.Close()
	client, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	api, err := findPodStartsAPI(client.Discovery(), client.Discovery().RESTClient())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tl, err := api.explain(ctx, "team", "web")
	if err != nil || tl.Pod.UID != "u1" || tl.End.Sub(tl.Start) != 4*time.Second {
		t.Fatalf("explain team/web: %+v (%v)", tl, err)
	}
	if _, err := api.explain(ctx, "team", "lost"); err == nil || !strings.Contains(err.Error(), "node n2 did not answer") {
		t.Errorf("a start without its timeline: %v, want the annotation's why", err)
	}
	if _, err := api.explain(ctx, "team", "none"); !errors.Is(err, apiclient.ErrNotFound) {
		t.Errorf("no start: %v, want not found", err)
	}
	if _, err := api.explain(ctx, "other", "db"); !errors.Is(err, errForbidden) {
		t.Errorf("refused: %v, want forbidden", err)
	}
	list, err := api.list(ctx, "team")
	if err != nil || len(list) != 1 || list[0].Node != "n1" || list[0].Waiting != "web: readinessProbe failing ×2" || list[0].End.IsZero() {
		t.Fatalf("list team: %+v (%v)", list, err)
	}

	// An API server without readyline.dev: the plugin reads the nodes.
	bare := httptest.NewServer(http.NotFoundHandler())
	defer bare.Close()
	none, _ := kubernetes.NewForConfig(&rest.Config{Host: bare.URL})
	if api, err := findPodStartsAPI(none.Discovery(), none.Discovery().RESTClient()); err == nil || api != nil {
		t.Errorf("an API server without readyline.dev: %v, %v", api, err)
	}
}
