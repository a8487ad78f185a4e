package event

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"runtime"
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
		&Tick{Time: at, Mono: 3*time.Hour + 5*time.Nanosecond},
		&Drained{Time: at, Source: SourceProcess},
		&SourceStatus{Time: at, Source: SourceRuntime, Reason: ReasonDisconnected, Since: at.Add(-time.Second)},
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

// TestTickMonoOptional: a tick recorded before Tick.Mono existed reads with
// Mono zero, and a tick without it is written as it was then, so old and
// new recordings replay alike.
func TestTickMonoOptional(t *testing.T) {
	r := NewReader(strings.NewReader(`{"type":"tick","time":"2026-11-30T06:00:00Z"}` + "\n"))
	ev, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	if tk, ok := ev.(*Tick); !ok || tk.Mono != 0 || !tk.Time.Equal(time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)) {
		t.Errorf("old tick read as %#v", ev)
	}
	var buf bytes.Buffer
	w := NewWriter(&buf)
	if err := w.Write(&Tick{Time: time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)}); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "mono") {
		t.Errorf("a tick without a monotonic reading written as %s", buf.String())
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

// TestRecordingRedactsPods: a pod with a literal env value "hunter2", a
// valueFrom reference and a probe that passes the password is recorded
// without the secret, with the names, the reference and the rest of the
// commands; the event handed to Write is not modified.
func TestRecordingRedactsPods(t *testing.T) {
	ref := &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "password"}}
	probe := []string{"mysqladmin", "ping", "-phunter2"}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "u"},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init", Env: []corev1.EnvVar{{Name: "TOKEN", Value: "hunter2"}}}},
			Containers: []corev1.Container{{Name: "db",
				Env:     []corev1.EnvVar{{Name: "MYSQL_ROOT_PASSWORD", Value: "hunter2"}, {Name: "FROM_SECRET", ValueFrom: ref}},
				Command: []string{"mysqld"}, Args: []string{"--password=hunter2"},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: probe}}},
			}},
		}}
	var buf bytes.Buffer
	w := NewWriter(&buf)
	if err := w.Write(&PodUpdate{Action: PodAdded, Pod: pod}); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "hunter2") {
		t.Errorf("recording holds the secret:\n%s", buf.String())
	}
	if pod.Spec.Containers[0].Env[0].Value != "hunter2" || pod.Spec.Containers[0].ReadinessProbe.Exec.Command[2] != "-phunter2" {
		t.Error("Write modified the pod it was given")
	}
	ev, err := NewReader(&buf).Next()
	if err != nil {
		t.Fatal(err)
	}
	got := ev.(*PodUpdate).Pod
	c := got.Spec.Containers[0]
	if want := []corev1.EnvVar{{Name: "MYSQL_ROOT_PASSWORD", Value: Redacted}, {Name: "FROM_SECRET", ValueFrom: ref}}; !reflect.DeepEqual(c.Env, want) {
		t.Errorf("env %+v, want %+v", c.Env, want)
	}
	if got.Spec.InitContainers[0].Env[0].Value != Redacted {
		t.Errorf("init container env %+v", got.Spec.InitContainers[0].Env)
	}
	if want := []string{"mysqladmin", "ping", "-p" + Redacted}; !reflect.DeepEqual(c.ReadinessProbe.Exec.Command, want) {
		t.Errorf("probe command %q, want %q", c.ReadinessProbe.Exec.Command, want)
	}
	if !reflect.DeepEqual(c.Command, []string{"mysqld"}) || !reflect.DeepEqual(c.Args, []string{"--password=" + Redacted}) {
		t.Errorf("command %q args %q", c.Command, c.Args)
	}
}

// TestRecordingLineLimit: a line of MaxLineBytes is read; a longer one is an
// error naming its line, read without holding more than the limit (the
// reader does not grow its buffer past it).
func TestRecordingLineLimit(t *testing.T) {
	tick := `{"type":"tick","time":"2026-11-30T06:00:00Z"}`
	// JSON allows the padding: the line is exactly MaxLineBytes long.
	full := tick[:len(tick)-1] + strings.Repeat(" ", MaxLineBytes-len(tick)) + "}"
	r := NewReader(strings.NewReader(tick + "\n" + full + "\n" + full + " \n" + tick + "\n"))
	for i := 1; i <= 2; i++ {
		if _, err := r.Next(); err != nil {
			t.Fatalf("line %d (%d bytes): %v", i, MaxLineBytes, err)
		}
	}
	_, err := r.Next()
	if !errors.Is(err, ErrLineTooLong) || !strings.Contains(err.Error(), "line 3") {
		t.Fatalf("a line of %d bytes: %v, want ErrLineTooLong naming line 3", MaxLineBytes+1, err)
	}
	if _, err2 := r.Next(); !errors.Is(err2, ErrLineTooLong) {
		t.Errorf("after the error: %v, want it again", err2)
	}
}

// TestRecordingEndlessLine: a "recording" that is one endless line (here
// 64 MiB without a newline, made as it is read) stops at the limit.
func TestRecordingEndlessLine(t *testing.T) {
	endless := io.LimitReader(repeatReader('x'), 64<<20)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := NewReader(endless).Next()
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrLineTooLong) || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("endless line: %v, want ErrLineTooLong naming line 1", err)
	}
	if grown := after.TotalAlloc - before.TotalAlloc; grown > 4*MaxLineBytes {
		t.Errorf("reading it allocated %d bytes, want at most a few times MaxLineBytes", grown)
	}
}

// repeatReader reads as an endless run of one byte.
type repeatReader byte

func (b repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}
