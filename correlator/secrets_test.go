package correlator

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/readyline/readyline/collector/event"
	"github.com/readyline/readyline/collector/redact"
)

// Secrets of TestNoSecretsInTimeline's pod.
const (
	rootPassword = "s3cr3t-root"
	hookPassword = "hunter2"
)

// TestNoSecretsInTimeline: a MySQL pod whose readiness probe passes the
// root password (from its env) to mysqladmin and whose postStart hook
// calls curl -u admin:hunter2. The kernel and the kubelet's calls report
// the commands redacted (as the collector does); the correlator matches
// them to the spec's commands, redacted the same way, and its Timeline
// holds neither secret.
func TestNoSecretsInTimeline(t *testing.T) {
	probeCmd := []string{"sh", "-c", "mysqladmin ping -h 127.0.0.1 -u root -p$MYSQL_ROOT_PASSWORD"}
	hookCmd := []string{"sh", "-c", "curl -u admin:" + hookPassword + " http://x/"}
	sc := newScenario(t, "mysql", app(corev1.Container{
		Env:            []corev1.EnvVar{{Name: "MYSQL_ROOT_PASSWORD", Value: rootPassword}},
		ReadinessProbe: execProbe(0, 1, probeCmd...),
		Lifecycle:      &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: hookCmd}}},
	}))
	startApp(sc, 1.0, 1.3)
	// The hook: ExecSync, the runtime's sh -c and its curl child.
	sc.call(1.15, 1.5, event.CRIExecSync, func(c *event.CRICall) { c.ContainerID, c.Cmd = idMain, redact.Argv(hookCmd) })
	sc.exec(1.2, idMain, 510, shimPID, redact.Argv(hookCmd)...)
	sc.fork(1.21, idMain, 511, 510)
	sc.exec(1.22, idMain, 511, 510, redact.Argv([]string{"curl", "-u", "admin:" + hookPassword, "http://x/"})...)
	sc.exit(1.4, idMain, 511, 0)
	sc.exit(1.41, idMain, 510, 0)
	// Two readiness attempts; the shell expands the password for mysqladmin.
	for i, s := range []float64{2, 3} {
		pid := uint32(600 + 2*i)
		sc.call(s-0.01, s+0.2, event.CRIExecSync, func(c *event.CRICall) { c.ContainerID, c.Cmd = idMain, redact.Argv(probeCmd) })
		sc.exec(s, idMain, pid, shimPID, redact.Argv(probeCmd)...)
		sc.fork(s+0.01, idMain, pid+1, pid)
		sc.exec(s+0.02, idMain, pid+1, pid, redact.Argv([]string{"mysqladmin", "ping", "-h", "127.0.0.1", "-u", "root", "-p" + rootPassword})...)
		sc.exit(s+0.1, idMain, pid+1, 0)
		sc.exit(s+0.11, idMain, pid, 0)
	}
	readyAt(sc, 3.3)
	tl := sc.run(Config{})

	a := findContainer(t, tl, "app").Attempts[0]
	if h := a.PostStart; h == nil || h.Inferred || h.Call == nil {
		t.Fatalf("postStart %+v, want the exec hook seen with its ExecSync", h)
	}
	if want := []string{"sh", "-c", "curl -u admin:" + redact.Marker + " http://x/"}; !slices.Equal(a.PostStart.Command, want) {
		t.Errorf("hook command %q, want %q", a.PostStart.Command, want)
	}
	wantProbes(t, a, "[readiness@1.99/success readiness@2.99/success]")
	b, err := json.Marshal(tl)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{rootPassword, hookPassword} {
		if strings.Contains(string(b), secret) {
			t.Errorf("Timeline JSON holds %q:\n%s", secret, b)
		}
	}
	if c := sc.pod.Spec.Containers[0]; c.Lifecycle.PostStart.Exec.Command[2] != hookCmd[2] {
		t.Errorf("the pod spec was modified: %q", c.Lifecycle.PostStart.Exec.Command)
	}
}

// TestReplayOfRedactedRecording: the demo recording, its pods given a
// literal env value and re-recorded (event.Writer redacts them), replays to
// the same timelines: the correlator needs no env value, and the spec's
// commands it matches are redacted on both sides.
func TestReplayOfRedactedRecording(t *testing.T) {
	f, err := os.Open("testdata/recordings/demo-node.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var buf bytes.Buffer
	w := event.NewWriter(&buf)
	r := event.NewReader(f)
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if u, ok := ev.(*event.PodUpdate); ok {
			for i := range u.Pod.Spec.Containers {
				c := &u.Pod.Spec.Containers[i]
				c.Env = append(c.Env, corev1.EnvVar{Name: "DB_PASSWORD", Value: hookPassword})
			}
		}
		if err := w.Write(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), hookPassword) {
		t.Fatal("the re-recording holds the env value")
	}
	redacted := filepath.Join(t.TempDir(), "redacted.jsonl")
	if err := os.WriteFile(redacted, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(replayFile(t, "testdata/recordings/demo-node.jsonl", goldenConfig))
	got, _ := json.Marshal(replayFile(t, redacted, goldenConfig))
	if !bytes.Equal(got, want) {
		t.Error("the redacted recording replays to other timelines")
	}
}
