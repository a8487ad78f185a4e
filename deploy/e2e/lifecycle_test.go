//go:build e2e

package e2e

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// TestLifecycleDemo applies the seed's lifecycle-demo pod and checks the order
// of its start: the five conditions turn True in the documented order, the
// regular init container ends before the sidecar starts, and the sidecar's
// startupProbe holds back Initialized and the main container.
func TestLifecycleDemo(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	ctx := testContext(t, 3*time.Minute)
	rec := recordPod(t, ns, "lifecycle-demo")
	applyExample(t, ns, "lifecycle-demo.yaml")

	ready, err := rec.WaitFor(ctx, ConditionTrue(corev1.PodReady))
	if err != nil {
		t.Fatal(err)
	}
	logTimeline(t, rec)

	// Conditions, by the time each was first observed True in the watch stream.
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
}

// TestPostStartDemo applies the seed's poststart-demo pod, whose postStart hook
// sleeps 15 s, and checks what the seed recorded on kind: the API keeps showing
// the container as waiting/ContainerCreating for the length of the hook, although
// the runtime started it at the beginning (startedAt lies ~15 s in the past when
// the running state first appears).
func TestPostStartDemo(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	ctx := testContext(t, 3*time.Minute)
	rec := recordPod(t, ns, "poststart-demo")
	applyExample(t, ns, "poststart-demo.yaml")

	running, err := rec.WaitFor(ctx, func(p *corev1.Pod) bool { return ContainerRunning(p, "main") })
	if err != nil {
		t.Fatal(err)
	}
	logTimeline(t, rec)

	creating, ok := rec.First(func(p *corev1.Pod) bool { return ContainerWaitingReason(p, "main") == "ContainerCreating" })
	if !ok {
		t.Fatal("the container was never observed waiting with reason ContainerCreating")
	}
	window := running.ObservedAt.Sub(creating.ObservedAt)
	t.Logf("ContainerCreating observed for %.3fs", window.Seconds())
	if window < 13*time.Second || window > 25*time.Second {
		t.Errorf("container shown as ContainerCreating for %v, want the ~15s of the postStart hook (13s..25s)", window)
	}
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
}
