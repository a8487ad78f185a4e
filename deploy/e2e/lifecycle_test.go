//go:build e2e

package e2e

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/deploy/e2e/jaeger"
)

// kernelSlack is how far a time readyline converted from the kernel's boot
// clock may be off the host's wall clock, which the runtime, the kubelet
// and this test's watch read: the conversion's offset is re-sampled every
// 5 s (collector.BootClock).
const kernelSlack = 5 * time.Millisecond

// TestLifecycleDemo applies the seed's lifecycle-demo pod under readyline
// and holds three accounts of its start to each other: the API server's
// (the five conditions turn True in the documented order, the regular init
// container ends before the sidecar starts, the sidecar's startupProbe
// holds back Initialized and the main container), readyline's timeline
// against it (checkAgainstAPI), and readyline's trace in Jaeger, which
// adds what only the kernel saw (processes, exec probe attempts).
func TestLifecycleDemo(t *testing.T) {
	t.Parallel()
	s := startAndTrace(t, "lifecycle-demo.yaml", "lifecycle-demo", ConditionTrue(corev1.PodReady), 15)
	rec, ready := s.rec, s.end
	logTimeline(t, rec)

	// The API: conditions, by the time each was first observed True in
	// the watch stream.
	var prev time.Time
	var prevType corev1.PodConditionType
	at := map[corev1.PodConditionType]time.Time{}
	for _, c := range LifecycleConditions {
		ts, ok := rec.ConditionTrueAt(c)
		if !ok {
			t.Fatalf("condition %s was never observed True", c)
		}
		at[c] = ts
		if ts.Before(prev) {
			t.Errorf("%s observed True %v before %s", c, prev.Sub(ts), prevType)
		}
		prev, prevType = ts, c
		t.Logf("%-26s True after %6.3fs (observed)", c, ts.Sub(at[corev1.PodScheduled]).Seconds())
	}
	// init-regular sleeps 5 s before anything can be Initialized; the sidecar's
	// and nginx's startupProbes wait initialDelaySeconds: 5 each.
	if d := at[corev1.PodInitialized].Sub(at[corev1.PodReadyToStartContainers]); d < 5*time.Second {
		t.Errorf("Initialized only %v after PodReadyToStartContainers; init-regular alone sleeps 5s", d)
	}
	if d := at[corev1.ContainersReady].Sub(at[corev1.PodInitialized]); d < 4*time.Second {
		t.Errorf("ContainersReady only %v after Initialized; nginx's startupProbe waits 5s", d)
	}
	// The same order in the API's own (1 s) lastTransitionTime.
	for i := 1; i < len(LifecycleConditions); i++ {
		a, _ := Condition(ready.Pod, LifecycleConditions[i-1])
		b, _ := Condition(ready.Pod, LifecycleConditions[i])
		if b.LastTransitionTime.Before(&a.LastTransitionTime) {
			t.Errorf("lastTransitionTime of %s (%v) is before %s (%v)", b.Type, b.LastTransitionTime, a.Type, a.LastTransitionTime)
		}
	}
	// The regular init container terminated (exit 0) before the sidecar started:
	// in the first event showing the sidecar running, and by the runtime's times.
	first, ok := rec.First(func(p *corev1.Pod) bool { return ContainerRunning(p, "init-sidecar") })
	if !ok {
		t.Fatal("init-sidecar was never observed running")
	}
	regular, _ := ContainerStatus(first.Pod, "init-regular")
	if regular.State.Terminated == nil || regular.State.Terminated.ExitCode != 0 {
		t.Errorf("when init-sidecar was first seen running, init-regular was %+v; want terminated with exit 0", regular.State)
	}
	if ev, both := rec.First(func(p *corev1.Pod) bool {
		return ContainerRunning(p, "init-regular") && (ContainerRunning(p, "init-sidecar") || ContainerRunning(p, "nginx"))
	}); both {
		t.Errorf("init-regular ran alongside later containers: %s", DescribeStatus(ev.Pod))
	}
	final := ready.Pod
	regular, _ = ContainerStatus(final, "init-regular")
	sidecar, _ := ContainerStatus(final, "init-sidecar")
	nginx, _ := ContainerStatus(final, "nginx")
	if regular.State.Terminated == nil || sidecar.State.Running == nil || nginx.State.Running == nil {
		t.Fatalf("final container states: %s", DescribeStatus(final))
	}
	if sidecar.State.Running.StartedAt.Before(&regular.State.Terminated.FinishedAt) {
		t.Errorf("init-sidecar started at %v, before init-regular finished at %v",
			sidecar.State.Running.StartedAt, regular.State.Terminated.FinishedAt)
	}
	// nginx is only created once the sidecar is started, which its startupProbe
	// (initialDelaySeconds: 5) delays; times have 1 s resolution.
	if d := nginx.State.Running.StartedAt.Sub(sidecar.State.Running.StartedAt.Time); d < 4*time.Second {
		t.Errorf("nginx started %v after init-sidecar; the sidecar's startupProbe should hold it back ~5s", d)
	}
	if sidecar.Started == nil || !*sidecar.Started || !nginx.Ready {
		t.Errorf("sidecar started=%v, nginx ready=%v", sidecar.Started, nginx.Ready)
	}
	t.Logf("Ready %.3fs after PodScheduled", at[corev1.PodReady].Sub(at[corev1.PodScheduled]).Seconds())

	// readyline's timeline says the same.
	if s.tl.Outcome != correlator.OutcomeReady {
		t.Errorf("readyline's outcome %s (%s), want ready", s.tl.Outcome, s.tl.Reason)
	}
	checkAgainstAPI(t, s.tl, ready.Pod)
	// init-regular is sh -c 'sleep 5': its process, as the kernel saw it,
	// lasts the sleep at least, and lies inside its container's life as
	// the runtime tells it (created before the process, finished after).
	if att := attemptOf(s.tl, "init-regular", regular.ContainerID); att == nil || att.Process == nil || att.Process.Exit.IsZero() {
		t.Errorf("init-regular's process is not in readyline's timeline: %+v", att)
	} else {
		p := att.Process
		if d := p.Exit.Sub(p.Exec); d < 5*time.Second {
			t.Errorf("init-regular's process ran %v by the kernel's clock, shorter than its sleep 5", d)
		}
		if p.Exec.Before(att.Created.Add(-kernelSlack)) || p.Exit.After(att.Finished.Add(kernelSlack)) {
			t.Errorf("init-regular's process ran %v to %v, outside its container's life %v to %v (runtime)", p.Exec, p.Exit, att.Created, att.Finished)
		}
	}

	// The trace.
	st := newSpanTree(t, s.tr)
	root := st.one("pod.startup")
	if got := tagString(root, "readyline.outcome"); got != "ready" {
		t.Errorf("outcome %q", got)
	}
	regularSpan := st.one("init init-regular")
	proc := st.child(regularSpan, "process sh")
	if code := tagString(proc, "process.exit.code"); code != "0" {
		t.Errorf("init-regular's process exit code %q, want 0", code)
	}
	sidecarSpan := st.one("sidecar init-sidecar")
	if !end(proc).Before(start(sidecarSpan)) {
		t.Errorf("init-sidecar started %v, before init-regular's process exited %v", start(sidecarSpan), end(proc))
	}
	// init-sidecar counts as started once its exec startupProbe succeeded:
	// only then does the kubelet create nginx.
	probes := st.children(sidecarSpan, "startupProbe")
	if len(probes) == 0 {
		t.Fatal("no startupProbe attempt under init-sidecar")
	}
	var success jaeger.Span
	for _, p := range probes {
		if tagString(p, "readyline.probe.result") == "success" {
			success = p
			break
		}
	}
	if success.SpanID == "" {
		t.Fatalf("no successful startupProbe attempt among %d", len(probes))
	}
	if tagString(success, "readyline.probe.handler") != "exec" || tagString(success, "readyline.inferred") == "true" {
		t.Errorf("the sidecar's startupProbe should be a kernel-seen exec attempt: %+v", success.Tags)
	}
	// initialDelaySeconds: 5 counts whole seconds from the API's (1 s) startedAt.
	if d := start(success).Sub(start(st.child(sidecarSpan, "process sh"))); d < 4*time.Second {
		t.Errorf("first startupProbe %v after the sidecar's process: initialDelaySeconds is 5", d)
	}
	nginxSpan := st.one("container nginx")
	if !start(nginxSpan).After(end(success)) {
		t.Errorf("nginx created %v, before init-sidecar's startupProbe succeeded %v", start(nginxSpan), end(success))
	}
	initialized := st.one("condition Initialized")
	cause, err := time.Parse(time.RFC3339Nano, tagString(initialized, "readyline.condition.cause_time"))
	if err != nil {
		t.Fatalf("Initialized cause_time: %v", err)
	}
	if !start(nginxSpan).After(cause) {
		t.Errorf("nginx created %v, before Initialized's cause %v", start(nginxSpan), cause)
	}
	if len(st.children(nginxSpan, "startupProbe")) == 0 || len(st.children(nginxSpan, "readinessProbe")) == 0 {
		t.Errorf("nginx lacks startup/readiness probe spans")
	}
	want := []string{"PodScheduled", "PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready"}
	if got := st.conditionOrder(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("conditions in the trace %v, want %v", got, want)
	}
}

// TestPostStartDemo applies the seed's poststart-demo pod, whose postStart
// hook sleeps 15 s, under readyline. The API keeps showing the container as
// waiting/ContainerCreating while the hook runs, although the runtime
// started it at the beginning (startedAt lies ~15 s in the past when the
// running state first appears); readyline sees the hook in the kernel, and
// the stamps agree: the API still showed ContainerCreating when the hook
// ended, and running (and ContainersReady) only after.
func TestPostStartDemo(t *testing.T) {
	t.Parallel()
	s := startAndTrace(t, "poststart-demo.yaml", "poststart-demo", ConditionTrue(corev1.PodReady), 8)
	rec := s.rec
	logTimeline(t, rec)

	running, ok := rec.First(func(p *corev1.Pod) bool { return ContainerRunning(p, "main") })
	if !ok {
		t.Fatal("the container was never observed running")
	}
	creating, ok := rec.First(func(p *corev1.Pod) bool { return ContainerWaitingReason(p, "main") == "ContainerCreating" })
	if !ok {
		t.Fatal("the container was never observed waiting with reason ContainerCreating")
	}
	t.Logf("ContainerCreating observed for %.3fs", running.ObservedAt.Sub(creating.ObservedAt).Seconds())
	// The sandbox was ready while the container still showed ContainerCreating:
	// what held the status back was the hook, not the sandbox.
	if _, ok := rec.First(func(p *corev1.Pod) bool {
		return ConditionStatus(p, corev1.PodReadyToStartContainers) == corev1.ConditionTrue &&
			ContainerWaitingReason(p, "main") == "ContainerCreating"
	}); !ok {
		t.Error("never observed PodReadyToStartContainers=True with the container still ContainerCreating")
	}
	st, _ := ContainerStatus(running.Pod, "main")
	lag := running.ObservedAt.Sub(st.State.Running.StartedAt.Time)
	t.Logf("running observed %.3fs after the runtime's startedAt", lag.Seconds())
	if lag < 13*time.Second {
		t.Errorf("running state appeared %v after startedAt; the hook should have delayed it ~15s", lag)
	}

	// readyline: the hook, seen in the kernel, and the API's view bracketing it.
	checkAgainstAPI(t, s.tl, s.end.Pod)
	main := containerOf(s.tl, "main")
	if main == nil || len(main.Attempts) == 0 || main.Attempts[0].PostStart == nil {
		t.Fatalf("no postStart hook in readyline's timeline: %+v", main)
	}
	hook := main.Attempts[0].PostStart
	if hook.Inferred || hook.End.IsZero() {
		t.Errorf("the exec hook should be seen in the kernel, start and end: %+v", hook)
	}
	if d := hook.End.Sub(hook.Start); d < 15*time.Second {
		t.Errorf("postStart hook %v, shorter than its sleep 15", d)
	}
	// Up to the hook's end the API still said ContainerCreating (the last
	// update observed before it), and running only after it.
	var shown *PodEvent
	for _, ev := range rec.Events() {
		if ev.ObservedAt.Before(hook.End.Add(-kernelSlack)) {
			shown = &ev
		}
	}
	if shown == nil || ContainerWaitingReason(shown.Pod, "main") != "ContainerCreating" || running.ObservedAt.Before(hook.End.Add(-kernelSlack)) {
		was := "nothing"
		if shown != nil {
			was = DescribeStatus(shown.Pod)
		}
		t.Errorf("the hook ran %v to %v; the API showed running from %v, and when the hook ended: %s", hook.Start, hook.End, running.ObservedAt, was)
	}
	for _, c := range s.tl.Conditions {
		if c.Type == string(corev1.ContainersReady) && c.Observed.Before(hook.End.Add(-kernelSlack)) {
			t.Errorf("ContainersReady observed at %v, before the hook ended at %v: the hook holds the status write back", c.Observed, hook.End)
		}
	}

	// The trace has the hook, from the kernel.
	tr := newSpanTree(t, s.tr)
	hookSpan := tr.child(tr.one("container main"), "postStart")
	if tagString(hookSpan, "readyline.inferred") == "true" || dur(hookSpan) < 15*time.Second {
		t.Errorf("postStart span of %v, inferred=%s: want the kernel's, 15 s at least", dur(hookSpan), tagString(hookSpan, "readyline.inferred"))
	}
}
