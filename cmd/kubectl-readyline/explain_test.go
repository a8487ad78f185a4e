package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestExplain: explain asks the readyline on the pod's node, with the
// flags given, and streams its answer.
func TestExplain(t *testing.T) {
	conn := &fakeConn{answer: func(daemon *corev1.Pod, args []string, stdout, stderr io.Writer) error {
		fmt.Fprintf(stdout, "waterfall of %s from %s\n", args[len(args)-1], daemon.Name)
		return nil
	}}
	ds := testDaemonSet(t, conn, nil, userPod("team", "web", "n2"),
		daemonPod("rl-n1", "n1", corev1.PodRunning, true, t0), daemonPod("rl-n2", "n2", corev1.PodRunning, true, t0))
	for _, tc := range []struct {
		flags []string
		args  []string
	}{
		{nil, []string{"--uid=uid-web", "team/web"}},
		{[]string{"--width", "80"}, []string{"--width=80", "--uid=uid-web", "team/web"}},
		{[]string{"-o", "json"}, []string{"--json", "--uid=uid-web", "team/web"}},
	} {
		conn.calls = nil
		o, err := parseExplain(append(tc.flags, "web"), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		var stdout bytes.Buffer
		if err := ds.explain(context.Background(), "team", o.pod, o.explainArgs(), &stdout, io.Discard); err != nil {
			t.Fatalf("explain %v: %v", tc.flags, err)
		}
		want := []explainCall{{"rl-n2", tc.args}}
		if !slices.EqualFunc(conn.calls, want, func(a, b explainCall) bool { return a.daemon == b.daemon && slices.Equal(a.args, b.args) }) {
			t.Errorf("explain %v ran %v, want %v", tc.flags, conn.calls, want)
		}
		if got := stdout.String(); got != "waterfall of team/web from rl-n2\n" {
			t.Errorf("explain %v printed %q", tc.flags, got)
		}
	}
}

// TestExplainErrors: what goes wrong past the pod says where: the remote
// explain's own message with the node, pods/exec forbidden with the
// permission to ask for, another stream failure with the readyline pod.
func TestExplainErrors(t *testing.T) {
	objs := []runtime.Object{userPod("team", "web", "n1"), daemonPod("rl-n1", "n1", corev1.PodRunning, true, t0)}
	ctx := context.Background()

	notKept := &fakeConn{answer: func(_ *corev1.Pod, args []string, _, stderr io.Writer) error {
		fmt.Fprintf(stderr, "readyline explain: no recent start of %s on this node (the daemon keeps the last --keep pod starts; 'readyline explain' lists them)\n", args[len(args)-1])
		return exitError(1)
	}}
	err := testDaemonSet(t, notKept, nil, objs...).explain(ctx, "team", "web", nil, io.Discard, io.Discard)
	wantErr(t, err, "pod team/web is on node n1, whose readyline (pod readyline/rl-n1) answered: no recent start of team/web on this node")
	if strings.Contains(err.Error(), "readyline explain:") {
		t.Errorf("error %q repeats the remote command's prefix", err)
	}

	// What the SPDY fallback returns when the API server refuses the
	// upgrade: text, no Status.
	refused := &fakeConn{answer: func(*corev1.Pod, []string, io.Writer, io.Writer) error {
		return errors.New(`unable to upgrade connection: pods "rl-n1" is forbidden: User "someone" cannot create resource "pods/exec"`)
	}}
	err = testDaemonSet(t, refused, []string{"create pods/exec"}, objs...).explain(ctx, "team", "web", nil, io.Discard, io.Discard)
	if !errors.Is(err, errForbidden) {
		t.Errorf("exec forbidden: %v, want errForbidden", err)
	}
	wantErr(t, err, "may not create pods/exec in namespace readyline", "ask for pods/exec (verbs get and create) in namespace readyline")

	broken := &fakeConn{answer: func(*corev1.Pod, []string, io.Writer, io.Writer) error {
		return errors.New("error dialing backend: connection refused")
	}}
	err = testDaemonSet(t, broken, nil, objs...).explain(ctx, "team", "web", nil, io.Discard, io.Discard)
	if errors.Is(err, errForbidden) {
		t.Errorf("exec allowed but failing: %v, want no RBAC advice", err)
	}
	wantErr(t, err, "asking the readyline on node n1 (pod readyline/rl-n1): error dialing backend")

	err = testDaemonSet(t, &fakeConn{}, nil, userPod("team", "web", "n9")).explain(ctx, "team", "web", nil, io.Discard, io.Discard)
	wantErr(t, err, "pod team/web: no readyline pod runs on node n9")
}

// TestExplainOlderDaemon: a readyline image older than the plugin has no
// --uid; the plugin asks again by name and warns that the start may be an
// earlier pod's.
func TestExplainOlderDaemon(t *testing.T) {
	conn := &fakeConn{answer: func(daemon *corev1.Pod, args []string, stdout, stderr io.Writer) error {
		if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--uid") }) {
			fmt.Fprintln(stderr, "flag provided but not defined: -uid")
			return exitError(2)
		}
		fmt.Fprintf(stdout, "waterfall of %s\n", args[len(args)-1])
		return nil
	}}
	ds := testDaemonSet(t, conn, nil, userPod("team", "web", "n2"), daemonPod("rl-n2", "n2", corev1.PodRunning, true, t0))
	var stdout, stderr bytes.Buffer
	if err := ds.explain(context.Background(), "team", "web", nil, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if stdout.String() != "waterfall of team/web\n" {
		t.Errorf("stdout %q", stdout.String())
	}
	if !strings.Contains(stderr.String(), "older than this plugin") || !strings.Contains(stderr.String(), "uid-web") {
		t.Errorf("stderr %q: no warning naming the pod's uid", stderr.String())
	}
	if len(conn.calls) != 2 {
		t.Errorf("calls %v, want the pinned one and one by name", conn.calls)
	}
}
