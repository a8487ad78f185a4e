//go:build e2e

package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/readyline/readyline/correlator"
)

// applyWrong applies deploy/examples/wrong/<file> in a new namespace and
// returns the namespace and the recorder of pod name.
func applyWrong(t *testing.T, file, name string) (string, *PodRecorder) {
	t.Helper()
	ns := newNamespace(t)
	rec := recordPod(t, ns, name)
	if _, err := env.ApplyFile(testContext(t, time.Minute), ns, env.ExamplePath(filepath.Join("wrong", file))); err != nil {
		t.Fatal(err)
	}
	return ns, rec
}

// checkPicture asserts what every timeline must hold: no negative lag, no
// cause after its observation, no phase ending before it starts, a critical
// path in order that sums to no more than the start.
func checkPicture(t *testing.T, tl *correlator.Timeline) {
	t.Helper()
	for _, c := range tl.Conditions {
		if !c.Cause.IsZero() && c.Cause.After(c.Observed) && !c.Coarse {
			t.Errorf("%s caused at %v, after its observation %v", c.Type, c.Cause, c.Observed)
		}
		if c.Lag() < 0 {
			t.Errorf("%s has a negative lag %v", c.Type, c.Lag())
		}
	}
	for _, p := range tl.Phases {
		if !p.Start.IsZero() && !p.End.IsZero() && p.End.Before(p.Start) {
			t.Errorf("phase %s ends %v before it starts", p.Name, p.Start.Sub(p.End))
		}
	}
	var sum time.Duration
	for i, s := range tl.CriticalPath {
		sum += s.End.Sub(s.Start)
		if i > 0 && s.Start.Before(tl.CriticalPath[i-1].End) {
			t.Errorf("critical path step %s starts before %s ends", s.Name, tl.CriticalPath[i-1].Name)
		}
	}
	if total := tl.End.Sub(tl.Start); sum > total {
		t.Errorf("critical path sums to %v, more than the start's %v", sum, total)
	}
}

// TestRestartsSandboxKilledAndRecreated: the pod's pause process is killed
// while its container waits 20 s for its readiness probe; the kubelet makes
// a new sandbox and restarts the container in it. The timeline is the final
// sandbox's, lists the first, says "sandbox changed", and shows no negative
// lag (before: the earliest sandbox was taken, pod.wait_sandbox read 6.5 s,
// PodReadyToStartContainers lagged -5.9 s).
func TestRestartsSandboxKilledAndRecreated(t *testing.T) {
	t.Parallel()
	d := readyline(t)
	ctx := testContext(t, 4*time.Minute)
	const name = "sandbox-killed"
	ns, rec := startPod(t, ctx, name, `apiVersion: v1
kind: Pod
metadata: {name: sandbox-killed}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: localhost/busybox:local
    imagePullPolicy: Never
    command: ["sleep", "3600"]
    readinessProbe:
      exec: {command: ["true"]}
      initialDelaySeconds: 20
      periodSeconds: 2
`)
	running, err := rec.WaitFor(ctx, func(p *corev1.Pod) bool { return ContainerRunning(p, "app") })
	if err != nil {
		t.Fatal(err)
	}
	pause, err := pauseOf(running.Pod.UID)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pause, syscall.SIGKILL); err != nil {
		t.Fatalf("killing the sandbox's pause process %d: %v", pause, err)
	}
	if _, err := rec.WaitFor(ctx, ConditionTrue(corev1.PodReady)); err != nil {
		t.Fatal(err)
	}
	tl := waitForOutcome(t, d, ns, name, correlator.OutcomeReady, time.Minute)
	checkPicture(t, tl)
	if len(tl.EarlierSandboxes) == 0 || tl.Sandbox == nil || tl.Sandbox.ID == tl.EarlierSandboxes[0].ID {
		t.Fatalf("sandbox %+v, earlier %+v: want the new sandbox, the killed one listed before it", tl.Sandbox, tl.EarlierSandboxes)
	}
	found := false
	for _, in := range tl.Insights {
		found = found || in.Kind == correlator.InsightSandboxChanged
	}
	if !found {
		t.Errorf("no sandbox-changed insight: %+v", tl.Insights)
	}
	// pod.wait_sandbox is the wait before the first sandbox, not until the
	// second: it ends by the killed sandbox's creation (the runtime's
	// time; the phase ends at its RunPodSandbox call's entry, kernelSlack).
	first := tl.EarlierSandboxes[0].Created
	if first.IsZero() {
		first = tl.Sandbox.Created // the runtime told only the second's
	}
	for _, p := range tl.Phases {
		if p.Name == correlator.PhaseWaitSandbox && p.End.After(first.Add(kernelSlack)) {
			t.Errorf("pod.wait_sandbox ends %v, after the first sandbox was created %v: the wait until the second", p.End, first)
		}
	}
	t.Logf("killed pause %d; sandboxes %s -> %s; ready after %v", pause, short(tl.EarlierSandboxes[0].ID), short(tl.Sandbox.ID), tl.End.Sub(tl.Start).Round(time.Millisecond))
}

// pauseOf finds the pause process of pod uid on the host: the process
// whose executable is /pause in a cgroup naming the pod.
func pauseOf(uid types.UID) (int, error) {
	return podProcess(uid, "pause", func(cmdline []byte) bool { return bytes.HasPrefix(cmdline, []byte("/pause")) })
}

// podProcess finds a process of pod uid on the host: one whose command line
// (NUL-separated, as /proc has it) is, by is, the process named what, in a
// cgroup naming the pod.
func podProcess(uid types.UID, what string, is func(cmdline []byte) bool) (int, error) {
	cg := strings.ReplaceAll(string(uid), "-", "_")
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		cmdline, err := os.ReadFile(filepath.Join(p, "cmdline"))
		if err != nil || !is(cmdline) {
			continue
		}
		groups, err := os.ReadFile(filepath.Join(p, "cgroup"))
		if err != nil || !(bytes.Contains(groups, []byte(cg)) || bytes.Contains(groups, []byte(uid))) {
			continue
		}
		return strconv.Atoi(filepath.Base(p))
	}
	return 0, fmt.Errorf("no %s process of pod %s", what, uid)
}

func short(id string) string { return id[:min(len(id), 12)] }

// TestRestartsSidecarRestartsOnce: a sidecar that crashes 3 s after it
// started, then runs. Initialized's cause is the sidecar's first start (what
// let the main container start), never its restart after the condition was
// reported (before: +-4.500s), and pod.init does not overlap the main
// container.
func TestRestartsSidecarRestartsOnce(t *testing.T) {
	t.Parallel()
	d := readyline(t)
	ns, rec := applyWrong(t, "sidecar-restart.yaml", "sidecar-restart")
	ctx := testContext(t, 3*time.Minute)
	if _, err := rec.WaitFor(ctx, func(p *corev1.Pod) bool {
		cs, ok := initStatus(p, "sidecar")
		return ok && cs.RestartCount >= 1 && ConditionStatus(p, corev1.PodReady) == corev1.ConditionTrue
	}); err != nil {
		t.Fatal(err)
	}
	tl := waitForOutcome(t, d, ns, "sidecar-restart", correlator.OutcomeReady, time.Minute)
	checkPicture(t, tl)
	var sidecar, app *correlator.Container
	for i := range tl.Containers {
		switch tl.Containers[i].Name {
		case "sidecar":
			sidecar = &tl.Containers[i]
		case "app":
			app = &tl.Containers[i]
		}
	}
	if sidecar == nil || app == nil || len(app.Attempts) == 0 {
		t.Fatalf("containers %+v", tl.Containers)
	}
	init := conditionOf(tl, correlator.CondInitialized)
	if init == nil || init.Cause.IsZero() || !init.Cause.Before(app.Attempts[0].Created) {
		t.Errorf("Initialized %+v: want caused by the sidecar's first start, before app was created at %v", init, app.Attempts[0].Created)
	}
	for _, p := range tl.Phases {
		if p.Name == correlator.PhaseInit && p.End.After(app.Attempts[0].Created) {
			t.Errorf("pod.init ends %v after app was created", p.End.Sub(app.Attempts[0].Created))
		}
	}
	if len(sidecar.Attempts) < 2 {
		t.Errorf("sidecar attempts %d, want its restart inside the start (app is Ready 20 s in)", len(sidecar.Attempts))
	}
	t.Logf("sidecar attempts %d; Initialized caused at +%v by %q", len(sidecar.Attempts), init.Cause.Sub(tl.Start), init.CauseEvent)
}

func initStatus(p *corev1.Pod, name string) (corev1.ContainerStatus, bool) {
	for _, cs := range p.Status.InitContainerStatuses {
		if cs.Name == name {
			return cs, true
		}
	}
	return corev1.ContainerStatus{}, false
}

func conditionOf(tl *correlator.Timeline, typ string) *correlator.ConditionTransition {
	for i := range tl.Conditions {
		if tl.Conditions[i].Type == typ {
			return &tl.Conditions[i]
		}
	}
	return nil
}

// TestRestartsReadinessGateSetLate: Ready = ContainersReady AND every
// readiness gate. The gate is set 4 s after ContainersReady: Ready's cause is
// the gate, the gate is drawn as a condition, and its wait is a step of the
// critical path (before: "Ready was reported 8.0s after readiness gate").
func TestRestartsReadinessGateSetLate(t *testing.T) {
	t.Parallel()
	d := readyline(t)
	ns, rec := applyWrong(t, "readiness-gate.yaml", "readiness-gate")
	ctx := testContext(t, 3*time.Minute)
	if _, err := rec.WaitFor(ctx, ConditionTrue(corev1.ContainersReady)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(4 * time.Second)
	patch := fmt.Sprintf(`{"status":{"conditions":[{"type":"example.com/gate","status":"True","lastTransitionTime":%q}]}}`,
		time.Now().UTC().Format(time.RFC3339))
	if _, err := env.Client.CoreV1().Pods(ns).Patch(ctx, "readiness-gate", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
	if _, err := rec.WaitFor(ctx, ConditionTrue(corev1.PodReady)); err != nil {
		t.Fatal(err)
	}
	tl := waitForOutcome(t, d, ns, "readiness-gate", correlator.OutcomeReady, time.Minute)
	checkPicture(t, tl)
	gate, cr, ready := conditionOf(tl, "example.com/gate"), conditionOf(tl, correlator.CondContainersReady), conditionOf(tl, correlator.CondReady)
	if gate == nil || !gate.ReadinessGate || cr == nil || ready == nil {
		t.Fatalf("conditions %+v: want the gate as a condition beside ContainersReady and Ready", tl.Conditions)
	}
	if ready.Cause.Before(gate.Observed) || ready.Observed.Before(ready.Cause) {
		t.Errorf("Ready caused at %v (lag %v); the gate was observed at %v, ContainersReady at %v", ready.Cause, ready.Lag(), gate.Observed, cr.Observed)
	}
	var steps []string
	for _, s := range tl.CriticalPath {
		steps = append(steps, s.Name)
	}
	if !strings.Contains(strings.Join(steps, ","), "readinessGate/example.com/gate") {
		t.Errorf("critical path %v: want the wait for the gate in it", steps)
	}
}

// TestRestartsSharedProbePort: two containers probe port 80 and one has an
// httpGet postStart hook on it. Each kubelet connection is one container's
// probe or the hook, never both; what the gating cannot place is listed as
// ambiguous.
func TestRestartsSharedProbePort(t *testing.T) {
	t.Parallel()
	d := readyline(t)
	ns, rec := applyWrong(t, "shared-port.yaml", "shared-port")
	ctx := testContext(t, 3*time.Minute)
	if _, err := rec.WaitFor(ctx, ConditionTrue(corev1.PodReady)); err != nil {
		t.Fatal(err)
	}
	tl := waitForOutcome(t, d, ns, "shared-port", correlator.OutcomeReady, time.Minute)
	checkPicture(t, tl)
	seen := map[time.Time]string{}
	conns := 0
	claim := func(owner string, c *correlator.Connection, start time.Time) {
		if c == nil {
			return
		}
		conns++
		if other, ok := seen[start]; ok {
			t.Errorf("the connection at %v is %s and %s", start, other, owner)
		}
		seen[start] = owner
	}
	// On a busy node the hook may come before nginx listens: it fails, the
	// kubelet kills web and starts it again, with its hook again. Each
	// hook begins after it began and ends after it began; the one placed
	// is the one the test needs.
	var hook *correlator.Hook
	for _, c := range tl.Containers {
		for _, a := range c.Attempts {
			if h := a.PostStart; h != nil && c.Name == "web" {
				if hook == nil || hook.Conn == nil {
					hook = h
				}
				if !h.End.IsZero() && h.End.Before(h.Start) {
					t.Errorf("web attempt %d: postStart hook ends %v before it began", a.Attempt, h.Start.Sub(h.End))
				}
				claim("web postStart", h.Conn, h.Start)
			}
			for _, p := range a.Probes {
				claim(c.Name+" "+string(p.Kind), p.Conn, p.Start)
			}
		}
	}
	if hook == nil || hook.Handler != "httpGet" {
		t.Errorf("web's postStart hook %+v: want the httpGet hook", hook)
	}
	// Both containers' probes use port 80 and may run at the same times:
	// what the gating cannot place is listed as ambiguous, never guessed.
	for _, a := range tl.AmbiguousProbes {
		if _, ok := seen[a.Start]; ok {
			t.Errorf("the connection at %v is %s and ambiguous", a.Start, seen[a.Start])
		}
		if len(a.Candidates) < 2 {
			t.Errorf("ambiguous connection at %v with candidates %+v", a.Start, a.Candidates)
		}
	}
	if hook == nil || hook.Conn == nil || conns+len(tl.AmbiguousProbes) < 3 {
		t.Errorf("%d connections placed, %d ambiguous, hook %+v: want the hook's request placed and every probe connection accounted for", conns, len(tl.AmbiguousProbes), hook)
	}
	t.Logf("%d connections placed, %d ambiguous", conns, len(tl.AmbiguousProbes))
}
