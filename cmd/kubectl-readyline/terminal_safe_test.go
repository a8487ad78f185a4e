package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter/apiclient"
	"github.com/readyline/readyline/exporter/waterfall"
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
	s := startSummary{Node: "n1", TimelineSummary: apiclient.TimelineSummary{Namespace: "team", Name: hostile, Outcome: "ready\x1b[8m", Start: t0, End: t0.Add(time.Second)}}
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

// TestExplainEscapes: the waterfall of a start whose text a pod wrote
// reaches the terminal escaped, and so does what a daemon says when it
// refuses.
func TestExplainEscapes(t *testing.T) {
	failed := startOf("team", "web", t0, time.Second)
	failed.Outcome, failed.Reason = correlator.OutcomeFailed, hostile
	conn := &fakeConn{apis: map[string]http.Handler{"rl-n1": daemonAPI([]string{"team"}, failed)}}
	ds := testDaemonSet(t, conn, nil, userPod("team", "web", "n1"), daemonPod("rl-n1", "n1", corev1.PodRunning, true, t0))
	tl, err := ds.explain(context.Background(), "team", "web")
	if err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	if err := waterfall.Render(&stdout, tl, 80); err != nil {
		t.Fatal(err)
	}
	// The daemon's JSON made the byte that is not UTF-8 U+FFFD.
	if out, want := stdout.String(), strings.TrimSuffix(hostileEscaped, `\xff`); raw(out) || !strings.Contains(out, want) {
		t.Errorf("the waterfall:\n%q\nwant %q escaped", out, hostile)
	}

	conn.apis["rl-n1"] = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, fmt.Sprintf("forbidden: %s", hostile), http.StatusForbidden)
	})
	_, err = ds.explain(context.Background(), "team", "web")
	if err == nil || raw(err.Error()) || !strings.Contains(err.Error(), hostileEscaped) {
		t.Errorf("a refusal: %q, want %q escaped", err, hostile)
	}
}

// raw says whether s has one of the sequences of rawTerminal as it is.
func raw(s string) bool {
	for _, r := range []string{"\x1b", "\x07", "\r", "\x7f", "\u009b", "\xff"} {
		if strings.Contains(s, r) {
			return true
		}
	}
	return false
}
