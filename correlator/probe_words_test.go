package correlator

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/readyline/readyline/collector/event"
)

// unhealthy is the kubelet's Unhealthy Event of container name, as the
// API server folds it: count failures from first to last.
func (sc *scenario) unhealthy(s float64, name, message string, count int32, first, last float64) {
	sc.events = append(sc.events, &event.PodEvents{Time: at(s), PodUID: sc.uid, Namespace: sc.pod.Namespace, Name: sc.pod.Name,
		Events: []event.PodEvent{{Type: "Warning", Reason: reasonUnhealthy, Message: message, FieldPath: "spec.containers{" + name + "}",
			Component: "kubelet", Count: count, First: at(first).Truncate(time.Second), Last: at(last).Truncate(time.Second)}}})
}

// notReadyWeb is a pod whose container web (pid 700) runs from 1.0 s and
// whose readiness probe, spec's, fails from then on; the status says
// running, not ready.
func notReadyWeb(t *testing.T, probe *corev1.Probe) *scenario {
	sc := newScenario(t, "web", corev1.PodSpec{Containers: []corev1.Container{{Name: "web", ReadinessProbe: probe,
		Ports: []corev1.ContainerPort{{ContainerPort: 8080}}}}})
	sc.cond(corev1.PodScheduled, 0)
	sc.cond(corev1.PodInitialized, 0)
	sc.update(0.05)
	sc.sandboxCallFor(0.2, 0.3, sandboxID, 0, 100)
	sc.runIn(1.0, sandboxID, idMain, "web", 0, 0.95, 1.0, 0, 0, "")
	sc.exec(1.01, idMain, 700, shimPID, "web")
	sc.status(false, running("web", idMain, 1, true, false))
	sc.cond(corev1.PodReadyToStartContainers, 0.4)
	sc.update(1.2)
	return sc
}

// TestReadinessHTTP404InTheKubeletsWords: an httpGet readiness probe that
// answers 404 is accepted by the kernel (unknown); the kubelet's Unhealthy
// Event says why it failed, with its count: the attempts take its words,
// the waiting line says them, and the time is the failing probe's.
func TestReadinessHTTP404InTheKubeletsWords(t *testing.T) {
	sc := notReadyWeb(t, httpProbeOn(0, 1, intstr.FromInt32(8080)))
	for s := 2.0; s <= 30; s++ {
		sc.conn(s, s+0.002, podIP, 8080, event.TCPEstablished)
	}
	sc.unhealthy(30.5, "web", "Readiness probe failed: HTTP probe failed with statuscode: 404", 104, 2, 30)
	sc.ticks(1, 31)
	tl := snapshotAt(t, sc, 31)
	if want := "web: readinessProbe failing ×104: HTTP probe failed with statuscode: 404"; !strings.Contains(tl.Waiting, want) {
		t.Errorf("waiting %q, want %q", tl.Waiting, want)
	}
	probes := findContainer(t, tl, "web").Attempts[0].Probes
	if len(probes) != 29 {
		t.Fatalf("%d probe attempts, want 29", len(probes))
	}
	for _, pa := range probes {
		if pa.Result != ProbeFailure || pa.Message != "HTTP probe failed with statuscode: 404" {
			t.Errorf("attempt at +%v: %s %q, want failure in the kubelet's words", pa.Start.Sub(t0), pa.Result, pa.Message)
			break
		}
	}
	if d := shareOf(tl, ShareProbeFailing); d < 27*time.Second {
		t.Errorf("probe.failing %v of the breakdown %+v, want the 28 s of failures", d, tl.Breakdown)
	}
	if d := shareOf(tl, ShareRun); d > 2*time.Second {
		t.Errorf("run %v of the breakdown, want the failing probe's time not called running: %+v", d, tl.Breakdown)
	}
}

// TestReadinessWithoutEventsStaysUnknown: with no Event, an accepted
// connection says nothing of its result: no words are made up.
func TestReadinessWithoutEventsStaysUnknown(t *testing.T) {
	sc := notReadyWeb(t, httpProbeOn(0, 1, intstr.FromInt32(8080)))
	for s := 2.0; s <= 10; s++ {
		sc.conn(s, s+0.002, podIP, 8080, event.TCPEstablished)
	}
	sc.ticks(1, 11)
	tl := snapshotAt(t, sc, 11)
	if !strings.Contains(tl.Waiting, "web: running, not ready") || strings.Contains(tl.Waiting, "failing") {
		t.Errorf("waiting %q", tl.Waiting)
	}
	for _, pa := range findContainer(t, tl, "web").Attempts[0].Probes {
		if pa.Result != ProbeUnknown {
			t.Errorf("attempt at +%v: %s, want unknown", pa.Start.Sub(t0), pa.Result)
		}
	}
}

// execTimeouts emits n runs of an exec readiness probe (sleep 5, timeout
// 1 s) that the runtime killed at its timeout: ExecSync returns after 1 s
// with an error, the command exits by SIGKILL.
func execTimeouts(sc *scenario, from float64, n int) {
	pid := uint32(800)
	for i := range n {
		s := from + float64(i)*2
		sc.call(s-0.005, s+1.002, event.CRIExecSync, func(c *event.CRICall) {
			c.ContainerID, c.Cmd, c.Err = idMain, []string{"sleep", "5"}, true
		})
		sc.exec(s, idMain, pid, shimPID, "sleep", "5")
		sc.kill(s+1.0, idMain, pid, 9)
		pid++
	}
}

// TestExecProbeTimeout: an exec probe the runtime killed at its timeout is
// a timeout, not the failure its exit 137 says; the waiting line says so
// in the kubelet's words when its Event is read, else in the runtime's.
func TestExecProbeTimeout(t *testing.T) {
	probe := execProbe(0, 2, "sleep", "5")
	probe.TimeoutSeconds = 1
	sc := notReadyWeb(t, probe)
	execTimeouts(sc, 2, 10)
	sc.ticks(1, 22)
	tl := snapshotAt(t, sc, 22)
	for _, pa := range findContainer(t, tl, "web").Attempts[0].Probes {
		if pa.Result != ProbeTimeout {
			t.Errorf("attempt at +%v: %s (exit %v), want timeout", pa.Start.Sub(t0), pa.Result, pa.ExitCode)
		}
	}
	if want := "web: readinessProbe failing ×10: timed out after 1s"; !strings.Contains(tl.Waiting, want) {
		t.Errorf("without Events: waiting %q, want %q", tl.Waiting, want)
	}
	words := `command timed out: "sleep 5" timed out after 1s`
	sc.unhealthy(22.5, "web", "Readiness probe errored and resulted in unknown state: "+words, 10, 3, 21)
	sc.ticks(23, 23)
	tl = snapshotAt(t, sc, 23)
	if want := "web: readinessProbe failing ×10: " + words; !strings.Contains(tl.Waiting, want) {
		t.Errorf("with the Event: waiting %q, want %q", tl.Waiting, want)
	}
	pa := findContainer(t, tl, "web").Attempts[0].Probes[3]
	if pa.Result != ProbeTimeout || pa.Message != words {
		t.Errorf("attempt %+v, want a timeout in the kubelet's words", pa)
	}
}

// TestRunningAttemptIsNotKilled: a sidecar's startupProbe never passes;
// the kubelet killed its first attempt after failureThreshold failures
// (its Killing Event folds every kill into one), and its second attempt
// runs, 49 failures in. Only the attempt that ended was killed; the
// waiting line says the probe failing now, then the kill.
func TestRunningAttemptIsNotKilled(t *testing.T) {
	probe := execProbe(0, 1, "check-started")
	probe.FailureThreshold = 100
	sc := newScenario(t, "mesh", corev1.PodSpec{InitContainers: []corev1.Container{{Name: "proxy", RestartPolicy: always(),
		StartupProbe: probe}}, Containers: []corev1.Container{{Name: "app"}}})
	sc.cond(corev1.PodScheduled, 0)
	sc.update(0.05)
	sc.sandboxUp(0.3)
	pid := uint32(700)
	fail := func(id string, from float64, n int) {
		for k := range n {
			s := from + float64(k)
			pid++
			sc.call(s-0.01, s+0.05, event.CRIExecSync, func(c *event.CRICall) { c.ContainerID, c.Cmd, c.Err = id, []string{"check-started"}, true })
			sc.exec(s, id, pid, shimPID, "check-started")
			sc.exit(s+0.02, id, pid, 1)
		}
	}
	sc.runIn(1.0, sandboxID, idSidecar, "proxy", 0, 0.95, 1.0, 0, 0, "")
	sc.exec(1.01, idSidecar, 600, shimPID, "proxy")
	fail(idSidecar, 2, 100)
	sc.call(101.5, 101.8, event.CRIStopContainer, func(c *event.CRICall) { c.ContainerID = idSidecar })
	sc.kill(101.7, idSidecar, 600, 15)
	sc.runIn(101.8, sandboxID, idSidecar, "proxy", 0, 0.95, 1.0, 101.7, 143, "Error")
	// Restarted at once: the Event's 1 s times, widened by a second, reach
	// into the second attempt.
	second := "7a" + idSidecar[2:]
	sc.runIn(103.0, sandboxID, second, "proxy", 1, 101.9, 101.95, 0, 0, "")
	sc.exec(101.96, second, 650, shimPID, "proxy")
	f := false
	cs := running("proxy", second, 103, false, false)
	cs.Started, cs.RestartCount = &f, 1
	sc.status(true, cs)
	sc.update(103.2)
	fail(second, 104, 49)
	// The Killing Event of the first kill, read while the second runs.
	sc.events = append(sc.events, &event.PodEvents{Time: at(150), PodUID: sc.uid, Namespace: "default", Name: "mesh",
		Events: []event.PodEvent{{Type: "Normal", Reason: reasonKilling, Message: "Container proxy failed startup probe, will be restarted",
			FieldPath: "spec.initContainers{proxy}", Count: 1, First: at(101).Truncate(time.Second), Last: at(101).Truncate(time.Second)}}})
	sc.ticks(1, 153)
	tl := snapshotAt(t, sc, 153)
	atts := findContainer(t, tl, "proxy").Attempts
	if len(atts) != 2 || atts[0].KilledBy != ProbeStartup || atts[1].KilledBy != "" {
		t.Fatalf("attempts killed by %q, want the first by its startupProbe and not the running one", killedBys(atts))
	}
	want := "sidecar proxy: startupProbe failing ×49: exit code 1; killed once after its startupProbe failed 100 times in a row"
	if !strings.Contains(tl.Waiting, want) {
		t.Errorf("waiting %q, want %q", tl.Waiting, want)
	}
}

func killedBys(atts []ContainerAttempt) []ProbeKind {
	var out []ProbeKind
	for _, a := range atts {
		out = append(out, a.KilledBy)
	}
	return out
}

func shareOf(tl *Timeline, kind ShareKind) time.Duration {
	var d time.Duration
	for _, s := range tl.Breakdown {
		if s.Kind == kind {
			d += s.Duration
		}
	}
	return d
}
