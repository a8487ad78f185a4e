package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/readyline/readyline/collector/testenv"
)

// TestIntegrationEventsJSON runs `readyline events --pods-only` against the
// real kernel and checks the JSON lines of a process in a container cgroup.
func TestIntegrationEventsJSON(t *testing.T) {
	testenv.RequirePrivileged(t)
	const (
		uid = "5a6b7c8d-9e0f-4a1b-8c2d-3e4f5a6b7c8d"
		cid = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	)
	cg := testenv.NewCgroup(t, "kubepods/besteffort/pod"+uid+"/"+cid)

	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var stderr syncBuffer
	go func() {
		done <- runEvents(ctx, []string{"--pods-only"}, pw, &stderr)
		pw.Close()
	}()
	lines := make(chan map[string]any, 1000)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Errorf("not a JSON line: %q: %v", sc.Text(), err)
				continue
			}
			lines <- m
		}
	}()

	// Wait for the tracer to attach, then run a container process.
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(stderr.String(), "process tracer attached"); {
		if time.Now().After(deadline) {
			t.Fatalf("tracer not attached: %s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd := cg.Command(t, "sh", "-c", "exit 4")
	cmd.Run()
	pid := float64(cmd.Process.Pid)

	var exec, exit map[string]any
	sawUp := false
	timeout := time.After(10 * time.Second)
	for exec == nil || exit == nil {
		select {
		case m := <-lines:
			if m["type"] == "source" { // the stream says when it lost records
				sawUp = sawUp || (m["source"] == "process" && m["up"] == true)
				continue
			}
			if m["scope"] != "pod" {
				t.Errorf("--pods-only let through a process outside pods: %v", m)
			}
			if m["pid"] != pid { // another pod's process: a node may be running
				continue
			}
			switch m["type"] {
			case "exec":
				exec = m
			case "exit":
				exit = m
			}
		case <-timeout:
			t.Fatalf("no exec and exit line for pid %v; stderr: %s", pid, stderr.String())
		}
	}
	if !sawUp {
		t.Error("no source line saying the process source is up")
	}
	for _, f := range []string{"type", "time", "pid", "ppid", "cgroup_id", "container_id", "pod_uid", "filename", "argv"} {
		if _, ok := exec[f]; !ok {
			t.Errorf("exec line lacks %q: %v", f, exec)
		}
	}
	for _, f := range []string{"exit_code", "signal"} {
		if _, ok := exit[f]; !ok {
			t.Errorf("exit line lacks %q: %v", f, exit)
		}
	}
	if exec["container_id"] != cid || exec["pod_uid"] != uid || exec["scope"] != "pod" {
		t.Errorf("exec attributed to %v/%v (%v), want %s/%s", exec["pod_uid"], exec["container_id"], exec["scope"], uid, cid)
	}
	if argv, _ := exec["argv"].([]any); !slices.Equal(argv, []any{"sh", "-c", "exit 4"}) {
		t.Errorf("argv %v", exec["argv"])
	}
	if ts, err := time.Parse(time.RFC3339Nano, exec["time"].(string)); err != nil || time.Since(ts) > time.Minute {
		t.Errorf("time %v: %v", exec["time"], err)
	}
	if exit["exit_code"] != float64(4) || exit["signal"] != float64(0) {
		t.Errorf("exit %v", exit)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("runEvents: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("runEvents did not return after cancellation")
	}
	if !strings.Contains(stderr.String(), `"msg":"stopped"`) {
		t.Errorf("no shutdown summary in the logs: %s", stderr.String())
	}
}

// syncBuffer is a strings.Builder safe for one writer and concurrent readers.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
