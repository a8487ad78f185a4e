package main

import (
	"bytes"
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter"
)

// TestExplainEscapesPodText: `readyline explain` prints what a pod
// controls with its control characters escaped, in the list (its name)
// and in its waterfall (its container's and process's names, a waiting
// message), so that neither can act on the terminal.
func TestExplainEscapesPodText(t *testing.T) {
	const (
		hostile = "\x1b]0;owned\x07\x1b[2J\r\u009b31m\x7f"
		escaped = `\x1b]0;owned\a\x1b[2J\r\u009b31m\x7f`
		raw     = "\x1b\x07\r\x7f\u009b"
	)
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	store := exporter.NewStore(exporter.StoreLimits{})
	store.Add(&correlator.Timeline{
		Pod:   correlator.PodRef{UID: "u1", Namespace: "team", Name: "web" + hostile},
		Start: start, End: at(2000), Outcome: correlator.OutcomeReady,
	})
	store.Add(&correlator.Timeline{
		Pod:   correlator.PodRef{UID: "u2", Namespace: "team", Name: "db"},
		Start: start, End: at(3000), Outcome: correlator.OutcomeReady,
		Containers: []correlator.Container{{
			Name: "app" + hostile, Kind: correlator.KindMain,
			Attempts: []correlator.ContainerAttempt{{Created: at(100), Started: at(200),
				Process: &correlator.Process{PID: 7, Filename: "/bin/sh" + hostile, Exec: at(210)}}},
			Waiting: []correlator.WaitingReason{{Reason: "ContainerCreating", Message: "msg" + hostile, First: at(50), Last: at(90), Times: 1}},
		}},
	})
	srv := httptest.NewServer(exporter.ServeEveryPod(store.Handler(nil)))
	defer srv.Close()

	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"list", nil, []string{"team/web" + escaped}},
		{"waterfall", []string{"team/db"}, []string{"app" + escaped, "sh" + escaped, "msg" + escaped}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout bytes.Buffer
			args := append([]string{"--api-addr", srv.URL, "--width", "200"}, tc.args...)
			if err := runExplain(context.Background(), args, &stdout, io.Discard); err != nil {
				t.Fatal(err)
			}
			out := stdout.String()
			if i := strings.IndexAny(out, raw); i >= 0 {
				t.Errorf("explain writes %q raw:\n%s", out[i:i+1], out)
			}
			for _, want := range tc.want {
				if !strings.Contains(out, want) {
					t.Errorf("no %q in:\n%s", want, out)
				}
			}
		})
	}
}
