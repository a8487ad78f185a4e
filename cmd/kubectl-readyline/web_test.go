package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestWeb: --web forwards to the API port of the readyline on the pod's
// node, prints the pod's page at the forwarded port alone on stdout, and
// warns when the daemon keeps no start of the pod.
func TestWeb(t *testing.T) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/timelines/team/web" {
			http.NotFound(w, r)
		}
	}))
	defer api.Close()
	u, _ := url.Parse(api.URL)
	apiPort, _ := strconv.Atoi(u.Port())

	var forwarded string
	conn := &fakeConn{forward: func(ctx context.Context, daemon *corev1.Pod, address string, local, remote uint16, ready func(uint16)) error {
		forwarded = daemon.Name + " " + address + ":" + strconv.Itoa(int(local)) + "->" + strconv.Itoa(int(remote))
		ready(uint16(apiPort)) // the test's server stands for the forward
		return nil
	}}
	ds := testDaemonSet(t, conn, nil, userPod("team", "web", "n1"), userPod("team", "gone", "n1"),
		daemonPod("rl-n1", "n1", corev1.PodRunning, true, t0))

	var stdout, stderr bytes.Buffer
	if err := ds.web(context.Background(), "team", "web", "127.0.0.1", 0, defaultAPIPort, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if want := "rl-n1 127.0.0.1:0->9465"; forwarded != want {
		t.Errorf("forwarded %s, want %s", forwarded, want)
	}
	if want := api.URL + "/ui/pods/team/web\n"; stdout.String() != want {
		t.Errorf("stdout %q, want the page's URL alone: %q", stdout.String(), want)
	}
	if !strings.Contains(stderr.String(), "the readyline on node n1; Ctrl-C ends it") || strings.Contains(stderr.String(), "warning") {
		t.Errorf("stderr %q", stderr.String())
	}

	stderr.Reset()
	if err := ds.web(context.Background(), "team", "gone", "127.0.0.1", 0, defaultAPIPort, io.Discard, &stderr); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr.String(), "warning: the readyline keeps no start of the pod team/gone") {
		t.Errorf("a pod the daemon does not keep: stderr %q, want a warning", stderr.String())
	}

	conn.forward = func(context.Context, *corev1.Pod, string, uint16, uint16, func(uint16)) error {
		return errors.New("unable to upgrade connection: forbidden")
	}
	ds = testDaemonSet(t, conn, []string{"create pods/portforward"}, userPod("team", "web", "n1"),
		daemonPod("rl-n1", "n1", corev1.PodRunning, true, t0))
	err := ds.web(context.Background(), "team", "web", "127.0.0.1", 0, defaultAPIPort, io.Discard, io.Discard)
	wantErr(t, err, "may not create pods/portforward in namespace readyline", "ask for pods/portforward (verbs get and create) in namespace readyline")
}

func TestURLHost(t *testing.T) {
	for addr, want := range map[string]string{"127.0.0.1": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1", "localhost": "localhost", "10.0.0.5": "10.0.0.5"} {
		if got := urlHost(addr); got != want {
			t.Errorf("urlHost(%q) = %q, want %q", addr, got, want)
		}
	}
}
