package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter/apiclient"
	"github.com/readyline/readyline/exporter/waterfall"
)

// TestExplain: explain asks the secure API of the readyline on the pod's
// node, through a port-forward to its port, for the start of that pod by
// its UID, and draws it (or prints it as JSON).
func TestExplain(t *testing.T) {
	earlier := startOf("team", "web", t0.Add(-time.Hour), time.Second)
	earlier.Pod.UID = "uid-an-earlier-web"
	conn := &fakeConn{apis: map[string]http.Handler{
		"rl-n1": daemonAPI([]string{"team"}),
		"rl-n2": daemonAPI([]string{"team"}, earlier, startOf("team", "web", t0, 1500*time.Millisecond)),
	}}
	ds := testDaemonSet(t, conn, nil, userPod("team", "web", "n2"),
		daemonPod("rl-n1", "n1", corev1.PodRunning, true, t0), daemonPod("rl-n2", "n2", corev1.PodRunning, true, t0))
	ctx := context.Background()
	tl, err := ds.explain(ctx, "team", "web")
	if err != nil {
		t.Fatal(err)
	}
	if tl.Pod.UID != "uid-web" || tl.Outcome != correlator.OutcomeReady {
		t.Errorf("explain got %+v, want the start of uid-web", tl.Pod)
	}
	if want := []string{"rl-n2 9467"}; !slices.Equal(conn.forwards, want) {
		t.Errorf("forwarded %v, want %v", conn.forwards, want)
	}

	var stdout bytes.Buffer
	waterfall := func(args ...string) string {
		t.Helper()
		stdout.Reset()
		o, err := parseExplain(append(args, "web"), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		tl, err := ds.explain(ctx, "team", o.pod)
		if err != nil {
			t.Fatal(err)
		}
		if o.output == "json" {
			writeJSON(&stdout, tl)
		} else if err := waterfall.Render(&stdout, tl, int(o.width)); err != nil {
			t.Fatal(err)
		}
		return stdout.String()
	}
	if got := waterfall("--width", "60"); !strings.Contains(got, "team/web") || !strings.Contains(got, "1.5") {
		t.Errorf("the waterfall:\n%s", got)
	}
	var fromJSON correlator.Timeline
	if err := json.Unmarshal([]byte(waterfall("-o", "json")), &fromJSON); err != nil || fromJSON.Pod.UID != "uid-web" {
		t.Errorf("-o json: %+v, %v", fromJSON.Pod, err)
	}
}

// TestExplainErrors: what goes wrong past the pod says where and why: the
// daemon keeps no start of it, refuses the user (403) or their credentials
// (401), RBAC refuses the port-forward, the readyline is older than the
// plugin (no secure API), no readyline runs on the node.
func TestExplainErrors(t *testing.T) {
	objs := []runtime.Object{userPod("team", "web", "n1"), daemonPod("rl-n1", "n1", corev1.PodRunning, true, t0)}
	ctx := context.Background()
	explain := func(conn *fakeConn, forbid ...string) error {
		_, err := testDaemonSet(t, conn, forbid, objs...).explain(ctx, "team", "web")
		return err
	}

	err := explain(&fakeConn{apis: map[string]http.Handler{"rl-n1": daemonAPI([]string{"team"})}})
	wantErr(t, err, "pod team/web is on node n1, whose readyline (pod readyline/rl-n1) answered: no recent start of team/web on this node")

	err = explain(&fakeConn{apis: map[string]http.Handler{"rl-n1": daemonAPI([]string{"other"}, startOf("team", "web", t0, time.Second))}})
	if !errors.Is(err, errForbidden) {
		t.Errorf("the daemon refusing the user: %v, want errForbidden", err)
	}
	wantErr(t, err, "whose readyline (pod readyline/rl-n1) refused pod team/web", `User "someone" may not get pods in namespace team`)

	ds := testDaemonSet(t, &fakeConn{apis: map[string]http.Handler{"rl-n1": daemonAPI([]string{"team"})}}, nil, objs...)
	ds.transport = userTransport("expired")
	_, err = ds.explain(ctx, "team", "web")
	if !errors.Is(err, apiclient.ErrUnauthorized) {
		t.Errorf("a token the daemon does not accept: %v, want ErrUnauthorized", err)
	}
	wantErr(t, err, "did not accept the kubeconfig's credentials", "the bearer token is no user's")

	// What the SPDY fallback returns when the API server refuses the
	// upgrade: text, no Status.
	err = explain(&fakeConn{refuse: errors.New(`unable to upgrade connection: pods "rl-n1" is forbidden: User "someone" cannot create resource "pods/portforward"`)},
		"create pods/portforward")
	if !errors.Is(err, errForbidden) {
		t.Errorf("port-forward forbidden: %v, want errForbidden", err)
	}
	wantErr(t, err, "may not create pods/portforward in namespace readyline", "ask for pods/portforward (verbs get and create) in namespace readyline")

	err = explain(&fakeConn{})
	if !errors.Is(err, errOldDaemon) {
		t.Errorf("a readyline without a secure API: %v, want errOldDaemon", err)
	}
	wantErr(t, err, "asking the readyline on node n1 (pod readyline/rl-n1): no secure API on port 9467: it is older than this plugin",
		"failed to connect to localhost:9467")

	_, err = testDaemonSet(t, &fakeConn{}, nil, userPod("team", "web", "n9")).explain(ctx, "team", "web")
	wantErr(t, err, "pod team/web: no readyline pod runs on node n9")
}
