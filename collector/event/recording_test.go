package event

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRecordingRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 30, 6, 0, 0, 1, time.UTC)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "u"},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	events := []Event{
		&ProcessExec{Time: at, Process: Process{PID: 1, Scope: ScopePod}, Filename: "/bin/sh", Argv: []string{"sh"}},
		&ContainerInfo{Time: at, ContainerID: "c", PodUID: "u", ContainerName: "main", State: "running", CreatedAt: at},
		&PodUpdate{Time: at, Action: PodAdded, Pod: pod},
		&Tick{Time: at},
		&ProcessExit{Time: at, Process: Process{PID: 1, Scope: ScopePod}, ExitCode: 3},
	}
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for _, e := range events {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	r := NewReader(strings.NewReader(buf.String() + "\n\n"))
	for i, want := range events {
		got, err := r.Next()
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("event %d:\n got  %#v\n want %#v", i, got, want)
		}
	}
	if _, err := r.Next(); !errors.Is(err, io.EOF) {
		t.Errorf("after the last event: %v, want EOF", err)
	}
}

func TestRecordingBadLine(t *testing.T) {
	r := NewReader(strings.NewReader(`{"type":"tick","time":"2026-11-30T06:00:00Z"}` + "\n{oops\n"))
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("bad line: %v, want an error naming line 2", err)
	}
}
