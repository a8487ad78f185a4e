package correlator

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/readyline/readyline/collector/event"
)

// stuckPod is a one-container pod whose sandbox is up at 0.3 s.
func stuckPod(t *testing.T, name string, c corev1.Container) *scenario {
	sc := newScenario(t, name, corev1.PodSpec{Containers: []corev1.Container{c}})
	sc.cond(corev1.PodScheduled, 0)
	sc.update(0.05)
	sc.sandboxUp(0.3)
	sc.cond(corev1.PodReadyToStartContainers, 0.4)
	sc.cond(corev1.PodInitialized, 0.05)
	sc.status(false, waiting(c.Name, "ContainerCreating", ""))
	sc.update(0.5)
	return sc
}

func wantWaiting(t *testing.T, got []WaitingReason, want ...WaitingReason) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("waiting %+v, want %+v", got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Reason != w.Reason || g.Message != w.Message || !g.First.Equal(w.First) || !g.Last.Equal(w.Last) || g.Times != w.Times {
			t.Errorf("waiting[%d] = %s %q %v..%v ×%d, want %s %q %v..%v ×%d", i,
				g.Reason, g.Message, g.First.Sub(t0), g.Last.Sub(t0), g.Times,
				w.Reason, w.Message, w.First.Sub(t0), w.Last.Sub(t0), w.Times)
		}
	}
}

// TestCrashLoopBackOffTimeout: a container that exits 3 each time it runs
// is held in CrashLoopBackOff for 10 s, 20 s, 40 s (the kubelet's back-off
// doubling from 10 s). The three back-offs are one entry from the first to
// the last update that showed it, with the latest message, and the
// timeout's reason names the container, its state and its last exit.
func TestCrashLoopBackOffTimeout(t *testing.T) {
	sc := stuckPod(t, "crashloop", corev1.Container{Name: "app", Command: []string{"false"}})
	msg := func(backoff int) string {
		return fmt.Sprintf("back-off %ds restarting failed container=app pod=default/crashloop(%s)", backoff, sc.uid)
	}
	ids := []string{idMain, idMain2, idInit}
	s := 1.0
	for i, backoff := range []int{10, 20, 40} {
		id := ids[i]
		sc.runtime(s, id, "app", uint32(i), s-0.05, s, s+0.5, 3)
		sc.exec(s+0.01, id, uint32(2000+i), shimPID, "false")
		sc.exit(s+0.5, id, uint32(2000+i), 3)
		sc.status(false, running("app", id, s, false, false))
		sc.update(s + 0.1)
		sc.status(false, lastExit(waiting("app", "CrashLoopBackOff", msg(backoff)), id, 3, int32(i+1)))
		sc.update(s + 0.6)
		sc.update(s + 5) // an update for something else: the same back-off
		s += 0.6 + float64(backoff)
	}
	tl := sc.run(Config{Timeout: 40 * time.Second})
	if tl.Outcome != OutcomeTimeout {
		t.Fatalf("outcome %s", tl.Outcome)
	}
	app := findContainer(t, tl, "app")
	if len(app.Attempts) != 3 {
		t.Errorf("%d attempts, want 3", len(app.Attempts))
	}
	// Attempts at 1, 11.6, 32.2: back-off shown from 1.6 to 37.2.
	wantWaiting(t, app.Waiting, WaitingReason{Reason: "CrashLoopBackOff", Message: msg(40), First: at(1.6), Last: at(37.2), Times: 3})
	want := "not Ready within 40s: app: CrashLoopBackOff (" + msg(40) + "), last exit 3"
	if tl.Reason != want {
		t.Errorf("reason\n %q, want\n %q", tl.Reason, want)
	}
}

// TestWaitingReasons: each reason the kubelet's reason cache gives a
// container that cannot start, as the watch shows it, and the reason of
// the timeout.
func TestWaitingReasons(t *testing.T) {
	never := `Container image "localhost/x:1" is not present with pull policy of Never`
	pullErr := `failed to pull and unpack image "docker.io/library/nope:1": not found`
	backOff := `Back-off pulling image "nope:1"`
	config := `secret "db" not found`
	for _, tc := range []struct {
		name  string
		steps []struct {
			s               float64
			reason, message string
		}
		want       []WaitingReason
		wantReason string
	}{
		{
			name: "ErrImageNeverPull",
			steps: []struct {
				s               float64
				reason, message string
			}{{1, "ErrImageNeverPull", never}, {6, "ErrImageNeverPull", never}, {25, "ErrImageNeverPull", never}},
			want:       []WaitingReason{{Reason: "ErrImageNeverPull", Message: never, First: at(1), Last: at(25), Times: 1}},
			wantReason: "not Ready within 40s: app: ErrImageNeverPull (" + never + ")",
		},
		{
			// The kubelet shows the pull's error, then its back-off, and
			// again at each retry (images/image_manager.go EnsureImageExists).
			name: "ImagePullBackOff after ErrImagePull",
			steps: []struct {
				s               float64
				reason, message string
			}{
				{1, "ErrImagePull", pullErr}, {2, "ImagePullBackOff", backOff}, {8, "ImagePullBackOff", backOff},
				{12, "ErrImagePull", pullErr}, {13, "ImagePullBackOff", backOff}, {30, "ImagePullBackOff", backOff},
			},
			want: []WaitingReason{
				{Reason: "ErrImagePull", Message: pullErr, First: at(1), Last: at(1), Times: 1},
				{Reason: "ImagePullBackOff", Message: backOff, First: at(2), Last: at(8), Times: 1},
				{Reason: "ErrImagePull", Message: pullErr, First: at(12), Last: at(12), Times: 1},
				{Reason: "ImagePullBackOff", Message: backOff, First: at(13), Last: at(30), Times: 1},
			},
			wantReason: "not Ready within 40s: app: ImagePullBackOff (" + backOff + ")",
		},
		{
			name: "CreateContainerConfigError",
			steps: []struct {
				s               float64
				reason, message string
			}{{1, "CreateContainerConfigError", config}, {25, "CreateContainerConfigError", config}},
			want:       []WaitingReason{{Reason: "CreateContainerConfigError", Message: config, First: at(1), Last: at(25), Times: 1}},
			wantReason: "not Ready within 40s: app: CreateContainerConfigError (" + config + ")",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := stuckPod(t, "stuck-"+strings.ToLower(tc.name[:5]), corev1.Container{Name: "app", Image: "nope:1"})
			for _, st := range tc.steps {
				sc.status(false, waiting("app", st.reason, st.message))
				sc.update(st.s)
			}
			tl := sc.run(Config{Timeout: 40 * time.Second})
			if tl.Outcome != OutcomeTimeout {
				t.Fatalf("outcome %s", tl.Outcome)
			}
			app := findContainer(t, tl, "app")
			wantWaiting(t, app.Waiting, tc.want...)
			if tl.Reason != tc.wantReason {
				t.Errorf("reason\n %q, want\n %q", tl.Reason, tc.wantReason)
			}
		})
	}
}

// TestWaitingReasonsBounded: a container alternating between two reasons
// for a long time keeps the first and the latest reasons and counts the
// others.
func TestWaitingReasonsBounded(t *testing.T) {
	sc := stuckPod(t, "alternating", corev1.Container{Name: "app"})
	const n = 50
	for i := range n {
		reason := "ErrImagePull"
		if i%2 == 1 {
			reason = "ImagePullBackOff"
		}
		sc.status(false, waiting("app", reason, fmt.Sprint(i)))
		sc.update(1 + float64(i))
	}
	tl := sc.run(Config{Timeout: time.Minute})
	app := findContainer(t, tl, "app")
	if len(app.Waiting) != maxWaitingReasons || app.WaitingOmitted != n-maxWaitingReasons {
		t.Fatalf("%d waiting reasons, %d omitted; want %d, %d", len(app.Waiting), app.WaitingOmitted, maxWaitingReasons, n-maxWaitingReasons)
	}
	if first, last := app.Waiting[0], app.Waiting[len(app.Waiting)-1]; first.Message != "0" || last.Message != fmt.Sprint(n-1) {
		t.Errorf("kept %q .. %q, want the first and the latest", first.Message, last.Message)
	}
	for i := 1; i < len(app.Waiting); i++ {
		if !app.Waiting[i-1].First.Before(app.Waiting[i].First) {
			t.Errorf("waiting reasons out of order at %d", i)
		}
	}
	if want := "not Ready within 1m0s: app: ImagePullBackOff (49)"; tl.Reason != want {
		t.Errorf("reason %q, want %q", tl.Reason, want)
	}
}

// TestStuckDetailOrder: the timeout names the init container that holds
// the start, and not the main containers it holds; once initialized, a
// sidecar not ready and each main container not ready, and a readiness
// gate.
func TestStuckDetailOrder(t *testing.T) {
	spec := corev1.PodSpec{
		InitContainers: []corev1.Container{
			{Name: "migrate"},
			{Name: "proxy", RestartPolicy: always(), ReadinessProbe: execProbe(0, 1, "ready")},
		},
		Containers:     []corev1.Container{{Name: "app"}, {Name: "worker"}, {Name: "ok"}},
		ReadinessGates: []corev1.PodReadinessGate{{ConditionType: "example.com/lb"}},
	}
	t.Run("init holds", func(t *testing.T) {
		sc := newScenario(t, "init-holds", spec)
		sc.cond(corev1.PodScheduled, 0)
		sc.status(true, running("migrate", idInit, 1, false, false))
		sc.status(true, waiting("proxy", "PodInitializing", ""))
		sc.status(false, waiting("app", "PodInitializing", ""))
		sc.update(1.5)
		tl := sc.run(Config{Timeout: 5 * time.Second})
		if want := "not Ready within 5s: init migrate: running; readiness gate example.com/lb not True"; tl.Reason != want {
			t.Errorf("reason\n %q, want\n %q", tl.Reason, want)
		}
	})
	t.Run("initialized", func(t *testing.T) {
		sc := newScenario(t, "initialized", spec)
		sc.cond(corev1.PodScheduled, 0)
		sc.status(true, terminated("migrate", idInit, 0, 0))
		sc.status(true, running("proxy", idSidecar, 1, true, false))
		sc.status(false, running("app", idMain, 2, false, false))
		sc.status(false, running("worker", idMain2, 2, true, false))
		sc.status(false, running("ok", sandboxID, 2, true, true))
		sc.cond(corev1.PodInitialized, 1.5)
		sc.update(2.5)
		tl := sc.run(Config{Timeout: 5 * time.Second})
		want := "not Ready within 5s: sidecar proxy: running, not ready; app: running, not started; " +
			"worker: running, not ready; readiness gate example.com/lb not True"
		if tl.Reason != want {
			t.Errorf("reason\n %q, want\n %q", tl.Reason, want)
		}
	})
	t.Run("flush", func(t *testing.T) {
		sc := stuckPod(t, "flushed", corev1.Container{Name: "app"})
		c := New(Config{})
		for _, ev := range sc.events {
			c.Handle(ev)
		}
		got := c.Flush()
		if len(got) != 1 || got[0].Reason != "still starting when readyline stopped: app: ContainerCreating" {
			t.Fatalf("flushed %+v", got)
		}
	})
}

// TestKubeletFailsThePod: when the kubelet fails a pod itself, it kills the
// containers (exit 137) and says why in status.reason or a DisruptionTarget
// condition: that reason wins over the exit codes.
func TestKubeletFailsThePod(t *testing.T) {
	const shutdown = "Pod was terminated in response to imminent node shutdown."
	for _, tc := range []struct {
		name            string
		reason, message string
		disruption      *corev1.PodCondition
		deleted         bool
		want            string
	}{
		{name: "activeDeadlineSeconds", reason: "DeadlineExceeded", message: "Pod was active on the node longer than the specified deadline",
			want: "DeadlineExceeded: Pod was active on the node longer than the specified deadline"},
		{name: "eviction", reason: "Evicted", message: "The node was low on resource: memory. ",
			disruption: &corev1.PodCondition{Reason: corev1.PodReasonTerminationByKubelet, Message: "The node was low on resource: memory. "},
			want:       "Evicted: The node was low on resource: memory."},
		{name: "node shutdown", reason: "Terminated", message: shutdown,
			disruption: &corev1.PodCondition{Reason: corev1.PodReasonTerminationByKubelet, Message: shutdown},
			want:       "Terminated: " + shutdown},
		{name: "disruption only", disruption: &corev1.PodCondition{Reason: "EvictionByEvictionAPI", Message: "Eviction API: evicting"},
			want: "DisruptionTarget EvictionByEvictionAPI: Eviction API: evicting"},
		{name: "scheduler preemption deletes", deleted: true,
			disruption: &corev1.PodCondition{Reason: corev1.PodReasonPreemptionByScheduler, Message: "default-scheduler: preempting to accommodate a higher priority pod"},
			want:       "pod deleted before it was Ready: DisruptionTarget PreemptionByScheduler: default-scheduler: preempting to accommodate a higher priority pod"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := stuckPod(t, "killed-"+strings.ReplaceAll(tc.name, " ", "-"), corev1.Container{Name: "app"})
			sc.pod.Spec.ActiveDeadlineSeconds = new(int64)
			*sc.pod.Spec.ActiveDeadlineSeconds = 10
			sc.runtime(1, idMain, "app", 0, 0.9, 1, 0, 0)
			sc.exec(1.01, idMain, 1100, shimPID, "sleep", "3600")
			sc.status(false, running("app", idMain, 1, true, false))
			sc.update(1.2)
			if tc.disruption != nil {
				c := *tc.disruption
				c.Type, c.Status, c.LastTransitionTime = corev1.DisruptionTarget, corev1.ConditionTrue, metav1.NewTime(at(10))
				sc.pod.Status.Conditions = append(sc.pod.Status.Conditions, c)
			}
			sc.exit(10.5, idMain, 1100, 137)
			sc.runtime(10.6, idMain, "app", 0, 0.9, 1, 10.5, 137)
			sc.status(false, terminated("app", idMain, 137, 0))
			if tc.deleted {
				now := metav1.NewTime(at(10))
				sc.pod.DeletionTimestamp = &now
			} else {
				sc.pod.Status.Phase = corev1.PodFailed
				sc.pod.Status.Reason, sc.pod.Status.Message = tc.reason, tc.message
			}
			sc.update(10.7)
			tl := sc.run(Config{})
			wantOutcome := OutcomeFailed
			if tc.deleted {
				wantOutcome = OutcomeDeleted
			}
			if tl.Outcome != wantOutcome || strings.TrimSpace(tl.Reason) != tc.want {
				t.Errorf("%s %q, want %s %q", tl.Outcome, tl.Reason, wantOutcome, tc.want)
			}
		})
	}
}

// TestPullProgressSaid: a pull in flight says how far it came, from the
// content store's answer: bytes of the total, layers, the rate since the
// call began; without its manifest, the layers in progress; a pull with no
// byte for 10 s says so, with or without bytes before.
func TestPullProgressSaid(t *testing.T) {
	start := time.Unix(1000, 0)
	asOf := start.Add(10 * time.Second)
	pull := InFlightCall{Method: event.CRIPullImage, Start: start, Image: "registry/x:1", Container: "app"}
	for _, c := range []struct {
		p    *event.PullProgress
		want string
	}{
		{nil, "PullImage registry/x:1 for app: running for 10.0s, not returned yet"},
		{&event.PullProgress{Bytes: 112e6, Total: 270e6, Layers: 7, LayersDone: 4, InProgress: 2, LastByte: asOf.Add(-time.Second)},
			"PullImage registry/x:1 for app: running for 10.0s, not returned yet, 112/270 MB, 4 of 7 layers, 11 MB/s"},
		{&event.PullProgress{Bytes: 5e5, InProgress: 2, LastByte: asOf},
			"PullImage registry/x:1 for app: running for 10.0s, not returned yet, 500 kB, 2 layers in progress, 50 kB/s"},
		{&event.PullProgress{},
			"PullImage registry/x:1 for app: running for 10.0s, not returned yet, no bytes for 10.0s"},
		{&event.PullProgress{Bytes: 3e9, Total: 4e9, Layers: 3, LastByte: asOf.Add(-45 * time.Second)},
			"PullImage registry/x:1 for app: running for 10.0s, not returned yet, 3.0 GB so far, no bytes for 45.0s"},
	} {
		pull.Progress = c.p
		if got := pull.describe(asOf.Sub(start), asOf); got != c.want {
			t.Errorf("progress %+v:\n got %q\nwant %q", c.p, got, c.want)
		}
	}
}
