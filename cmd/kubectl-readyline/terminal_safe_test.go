package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// hostile is what a pod, or a daemon that does not escape, can put in a
// name or a waterfall: a title change, a screen clear, a carriage return,
// a C1 CSI, DEL and a byte that is not UTF-8.
const (
	hostile        = "web\x1b]0;owned\x07\x1b[2J\r\u009b31m\x7f\xff"
	hostileEscaped = `web\x1b]0;owned\a\x1b[2J\r\u009b31m\x7f\xff`
	// rawTerminal are the bytes of hostile a terminal acts on, and the
	// invalid one.
	rawTerminal = "\x1b\x07\r\x7f\u009b\xff"
)

// TestListEscapesNames: the table prints what the daemons answered with
// its control characters escaped, and still aligned.
func TestListEscapesNames(t *testing.T) {
	s := startSummary{Node: "n1", Namespace: "team", Name: hostile, Outcome: "ready\x1b[8m", Start: t0, End: t0.Add(time.Second)}
	var stdout bytes.Buffer
	if err := printStarts(&stdout, io.Discard, []startSummary{s}, "", t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	out := stdout.String()
	if i := strings.IndexAny(out, rawTerminal); i >= 0 {
		t.Errorf("the list writes %q raw:\n%s", out[i:i+1], out)
	}
	for _, want := range []string{hostileEscaped, `ready\x1b[8m`} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in the list:\n%s", want, out)
		}
	}
}

// TestExplainEscapesStream: the waterfall streamed from a readyline pod
// reaches the terminal with its newlines and its control characters
// escaped (a readyline that escapes already leaves nothing to do), and so
// does what it wrote on stderr; -o json is JSON and goes through as it is.
func TestExplainEscapesStream(t *testing.T) {
	conn := &fakeConn{answer: func(_ *corev1.Pod, args []string, stdout, stderr io.Writer) error {
		io.WriteString(stdout, "team/"+hostile+"  Ready in 1s\n  process "+hostile+"\n")
		io.WriteString(stderr, "warning: "+hostile+"\n")
		return nil
	}}
	ds := testDaemonSet(t, conn, nil, userPod("team", "web", "n1"), daemonPod("rl-n1", "n1", corev1.PodRunning, true, t0))
	var stdout, stderr bytes.Buffer
	if err := ds.explain(context.Background(), "team", "web", nil, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if want := "team/" + hostileEscaped + "  Ready in 1s\n  process " + hostileEscaped + "\n"; stdout.String() != want {
		t.Errorf("stdout %q, want %q", stdout.String(), want)
	}
	if want := "warning: " + hostileEscaped + "\n"; stderr.String() != want {
		t.Errorf("stderr %q, want %q", stderr.String(), want)
	}

	json := `{"pod":{"name":"web\u001b"}}` + "\n"
	conn.answer = func(_ *corev1.Pod, _ []string, stdout, _ io.Writer) error {
		_, err := io.WriteString(stdout, json)
		return err
	}
	stdout.Reset()
	if err := ds.explain(context.Background(), "team", "web", []string{"--json"}, &stdout, io.Discard); err != nil {
		t.Fatal(err)
	}
	if stdout.String() != json {
		t.Errorf("-o json: %q, want the daemon's JSON as it is", stdout.String())
	}
}
