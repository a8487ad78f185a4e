package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/readyline/readyline/exporter/apiclient"
)

// runWeb runs ds.web for team/name until the test ends, and returns the
// URL it printed and what it said on stderr so far.
func runWeb(t *testing.T, ds *daemonSet, name string) (string, func() string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	outR, outW := io.Pipe()
	var stderr lockedBuffer
	done := make(chan error, 1)
	go func() {
		done <- ds.web(ctx, "team", name, "127.0.0.1", 0, outW, &stderr)
		outW.Close()
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("web after Ctrl-C: %v, want nil", err)
		}
	})
	line, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil {
		t.Fatalf("web printed no URL: %v; stderr %q", err, stderr.String())
	}
	go io.Copy(io.Discard, outR)
	return strings.TrimSpace(line), stderr.String
}

// TestWeb: --web serves the pages of the readyline on the pod's node at a
// local URL under a random path, as the user (the daemon gets their
// credentials, the browser sends none), prints the pod's page alone on
// stdout, and warns when the daemon keeps no start of the pod.
func TestWeb(t *testing.T) {
	conn := &fakeConn{apis: map[string]http.Handler{"rl-n1": daemonAPI([]string{"team"}, startOf("team", "web", t0, time.Second))}}
	ds := testDaemonSet(t, conn, nil, userPod("team", "web", "n1"), userPod("team", "gone", "n1"),
		daemonPod("rl-n1", "n1", corev1.PodRunning, true, t0))

	page, said := runWeb(t, ds, "web")
	base, ok := strings.CutSuffix(page, "/ui/pods/team/web")
	secret := strings.TrimPrefix(base[strings.LastIndex(base, "/"):], "/")
	if !ok || !strings.HasPrefix(base, "http://127.0.0.1:") || len(secret) < 20 {
		t.Fatalf("web printed %q, want http://127.0.0.1:PORT/<random>/ui/pods/team/web", page)
	}
	get := func(u string) (int, string, string) {
		t.Helper()
		client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := client.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Location"), string(body)
	}
	if code, _, body := get(page); code != http.StatusOK || !strings.Contains(body, "uid-web") {
		t.Errorf("the pod's page: %d\n%.500s", code, body)
	}
	if code, _, body := get(base + "/ui/"); code != http.StatusOK || !strings.Contains(body, "pods/team/web") {
		t.Errorf("the list page: %d\n%.500s", code, body)
	}
	if code, loc, _ := get(base + "/"); code != http.StatusFound || loc != "/"+secret+"/ui/" {
		t.Errorf("the daemon's redirect of /: %d to %q, want /%s/ui/", code, loc, secret)
	}
	root := base[:strings.LastIndex(base, "/")]
	for _, u := range []string{root + "/ui/pods/team/web", root + "/api/v1/timelines", root + "/" + secret[1:] + "/ui/"} {
		if code, _, body := get(u); code != http.StatusNotFound || strings.Contains(body, "web") {
			t.Errorf("%s, outside the random path: %d, want 404\n%.200s", u, code, body)
		}
	}
	if s := said(); !strings.Contains(s, "the readyline on node n1 (pod readyline/rl-n1) as you on 127.0.0.1:") || strings.Contains(s, "warning") {
		t.Errorf("stderr %q", s)
	}

	_, said = runWeb(t, ds, "gone")
	const warning = "warning: the readyline keeps no start of the pod team/gone"
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(said(), warning) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond) // it warns after it prints the URL
	}
	if !strings.Contains(said(), warning) {
		t.Errorf("a pod the daemon does not keep: stderr %q, want a warning", said())
	}

	refused := &fakeConn{refuse: errors.New("unable to upgrade connection: forbidden")}
	ds = testDaemonSet(t, refused, []string{"create pods/portforward"}, userPod("team", "web", "n1"),
		daemonPod("rl-n1", "n1", corev1.PodRunning, true, t0))
	err := ds.web(context.Background(), "team", "web", "127.0.0.1", 0, io.Discard, io.Discard)
	wantErr(t, err, "may not create pods/portforward in namespace readyline", "ask for pods/portforward (verbs get and create) in namespace readyline")
}

func TestURLHost(t *testing.T) {
	for addr, want := range map[string]string{"127.0.0.1": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1", "localhost": "localhost", "10.0.0.5": "10.0.0.5"} {
		if got := urlHost(addr); got != want {
			t.Errorf("urlHost(%q) = %q, want %q", addr, got, want)
		}
	}
}

// TestWebThroughTheAPIServer: with readyline.dev served, --web serves the
// start's pages from its web subresource through the API server, with the
// kubeconfig's credential sent there alone, under a random local path.
func TestWebThroughTheAPIServer(t *testing.T) {
	const webPath = "/apis/readyline.dev/v1alpha1/namespaces/team/podstarts/web"
	var mu sync.Mutex
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.URL.Path)
		mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer tok" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/apis/readyline.dev/v1alpha1":
			w.Write([]byte(`{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"readyline.dev/v1alpha1","resources":[{"name":"podstarts","namespaced":true,"kind":"PodStart","verbs":["get"]}]}`))
		case webPath:
			w.Write([]byte(`{"metadata":{"namespace":"team","name":"web"},"status":{"outcome":"ready"}}`))
		case webPath + "/web/ui/pods/team/web":
			w.Write([]byte(`<html>the page of team/web</html>`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	cfg := &rest.Config{Host: srv.URL, BearerToken: "tok"}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	api, err := findPodStartsAPI(client.Discovery(), client.Discovery().RESTClient())
	if err != nil {
		t.Fatal(err)
	}
	if err := api.reach(cfg); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- api.web(ctx, "team", "web", "127.0.0.1", 0, outW, io.Discard); outW.Close() }()
	line, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, outR)
	page := strings.TrimSpace(line)
	resp, err := http.Get(page)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "the page of team/web") {
		t.Errorf("%s: %d %q", page, resp.StatusCode, body)
	}
	root := page[:strings.Index(page[len("http://"):], "/")+len("http://")]
	if resp, err := http.Get(root + webPath + "/web/ui/pods/team/web"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("outside the random path: %v %v, want 404", resp, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("web after Ctrl-C: %v", err)
	}
	mu.Lock()
	if !slices.Contains(asked, webPath+"/web/ui/pods/team/web") {
		t.Errorf("the API server was asked %v, want the web subresource's page", asked)
	}
	mu.Unlock()
	// --web of a start the API does not have fails before any URL.
	if err := api.web(context.Background(), "team", "none", "127.0.0.1", 0, io.Discard, io.Discard); !errors.Is(err, apiclient.ErrNotFound) {
		t.Errorf("web of no start: %v, want not found", err)
	}
}
