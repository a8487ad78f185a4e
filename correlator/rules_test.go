package correlator

import (
	"encoding/json"

	"github.com/readyline/readyline/collector/event"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// lifecycleDemo is the seed's lifecycle-demo pod: a regular init container
// (sleep 5), a sidecar with an exec startupProbe (initialDelaySeconds 5), and
// nginx with httpGet startup/readiness/liveness probes. The times follow the
// recorded kind timeline.
func lifecycleDemo(t testing.TB) *scenario { return lifecycleDemoNamed(t, "lifecycle-demo") }

func lifecycleDemoNamed(t testing.TB, name string) *scenario {
	sc := newScenario(t, name, corev1.PodSpec{
		InitContainers: []corev1.Container{
			{Name: "init-regular", Image: "busybox", Command: []string{"sh", "-c", "sleep 5"}},
			{Name: "init-sidecar", Image: "busybox", RestartPolicy: always(),
				Command:      []string{"sh", "-c", "touch /tmp/ready; while true; do sleep 1; done"},
				StartupProbe: execProbe(5, 1, "sh", "-c", "test -f /tmp/ready")},
		},
		Containers: []corev1.Container{{Name: "nginx", Image: "nginx",
			StartupProbe: httpProbe(5, 1), ReadinessProbe: httpProbe(0, 1), LivenessProbe: httpProbe(0, 5)}},
	})
	sc.cond(corev1.PodScheduled, 0)
	sc.update(0.05)
	sc.sandboxUp(0.5)
	sc.cond(corev1.PodReadyToStartContainers, 0.6)
	sc.status(true, corev1.ContainerStatus{Name: "init-regular"})
	sc.update(0.9)

	// init-regular: sh -c 'sleep 5'
	sc.runtime(1.05, idInit, "init-regular", 0, 1.0, 1.08, 0, 0)
	sc.fork(1.09, idInit, 200, shimPID)
	sc.exec(1.1, idInit, 200, shimPID, "sh", "-c", "sleep 5")
	sc.fork(1.11, idInit, 201, 200)
	sc.exec(1.12, idInit, 201, 200, "sleep", "5")
	sc.exit(6.12, idInit, 201, 0)
	sc.exit(6.13, idInit, 200, 0)
	sc.runtime(6.9, idInit, "init-regular", 0, 1.0, 1.08, 6.13, 0)

	// init-sidecar, started 0.87 s after init-regular exited.
	sc.runtime(7.05, idSidecar, "init-sidecar", 0, 7.0, 7.08, 0, 0)
	sc.exec(7.1, idSidecar, 300, shimPID, "sh", "-c", "touch /tmp/ready; while true; do sleep 1; done")
	sc.status(true, terminated("init-regular", idInit, 0, 0))
	sc.status(true, running("init-sidecar", idSidecar, 7.08, false, false))
	sc.update(7.3)
	// The startupProbe's first attempt after initialDelaySeconds=5, via runc exec.
	sc.fork(12.09, idSidecar, 309, 880)
	sc.fork(12.095, idSidecar, 310, 309)
	sc.exec(12.1, idSidecar, 310, shimPID, "sh", "-c", "test -f /tmp/ready")
	sc.exit(12.12, idSidecar, 310, 0)
	sc.status(true, running("init-sidecar", idSidecar, 7.08, true, true))
	sc.cond(corev1.PodInitialized, 13.0)
	sc.update(13.0)

	// nginx: http probes, known only from the status flips.
	sc.runtime(13.25, idMain, "nginx", 0, 13.2, 13.28, 0, 0)
	sc.exec(13.3, idMain, 400, shimPID, "httpd", "-f", "-p", "80")
	sc.status(false, running("nginx", idMain, 13.28, false, false))
	sc.update(13.5)
	sc.status(false, running("nginx", idMain, 13.28, true, false))
	sc.update(19.0)
	sc.status(false, running("nginx", idMain, 13.28, true, true))
	sc.cond(corev1.ContainersReady, 20.0)
	sc.cond(corev1.PodReady, 20.0)
	sc.update(20.0)
	return sc
}

func TestLifecycleDemo(t *testing.T) {
	tl := lifecycleDemo(t).run(Config{})
	if tl.Outcome != OutcomeReady || !tl.End.Equal(at(20)) || !tl.Start.Equal(t0) {
		t.Fatalf("outcome %s %v..%v, want ready t0..20s", tl.Outcome, tl.Start, tl.End)
	}

	// Init order: init-regular runs to completion, then the sidecar starts.
	regular := findContainer(t, tl, "init-regular")
	sidecar := findContainer(t, tl, "init-sidecar")
	nginx := findContainer(t, tl, "nginx")
	if regular.Kind != KindInit || sidecar.Kind != KindSidecar || nginx.Kind != KindMain {
		t.Errorf("kinds %s %s %s", regular.Kind, sidecar.Kind, nginx.Kind)
	}
	r := regular.Attempts[0]
	if r.Process == nil || r.Process.Argv[2] != "sleep 5" || r.ExitCode == nil || *r.ExitCode != 0 {
		t.Fatalf("init-regular attempt %+v", r)
	}
	approx(t, "init-regular process", r.Process.Exit.Sub(r.Process.Exec), 5030*time.Millisecond)
	if !r.Finished.Before(sidecar.Attempts[0].Created) {
		t.Errorf("init-regular finished %v, sidecar created %v", r.Finished, sidecar.Attempts[0].Created)
	}
	approx(t, "kubelet reaction", r.NextCreated.Sub(r.Finished), 870*time.Millisecond)

	// The sidecar's startupProbe: one exec attempt, seen in the kernel.
	s := sidecar.Attempts[0]
	if len(s.Probes) != 1 || s.Probes[0].Kind != ProbeStartup || s.Probes[0].Result != ProbeSuccess || s.Probes[0].Inferred {
		t.Fatalf("sidecar probes %+v", s.Probes)
	}
	if !s.Probes[0].Start.Equal(at(12.1)) {
		t.Errorf("startup probe at %v, want 12.1 s", s.Probes[0].Start)
	}
	if s.PostStart != nil {
		t.Errorf("sidecar has no postStart, got %+v", s.PostStart)
	}

	// nginx: started after Initialized; http probes inferred from flips.
	n := nginx.Attempts[0]
	if !n.Created.After(findCondition(t, tl, CondInitialized).Observed) {
		t.Errorf("nginx created %v before Initialized", n.Created)
	}
	if len(n.Probes) != 2 || n.Probes[0].Kind != ProbeStartup || !n.Probes[0].Inferred || n.Probes[1].Kind != ProbeReadiness {
		t.Errorf("nginx probes %+v", n.Probes)
	}

	// The five conditions, in order, with causes below the API.
	var order []string
	for _, c := range tl.Conditions {
		order = append(order, c.Type)
	}
	want := []string{CondPodScheduled, CondPodReadyToStartContainers, CondInitialized, CondContainersReady, CondReady}
	if len(order) != 5 {
		t.Fatalf("conditions %v", order)
	}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("condition order %v, want %v", order, want)
		}
	}
	init := findCondition(t, tl, CondInitialized)
	if !init.Cause.Equal(at(12.12)) {
		t.Errorf("Initialized caused at %v (%s), want the probe's exit at 12.12 s", init.Cause, init.CauseEvent)
	}
	approx(t, "Initialized lag", init.Lag(), 880*time.Millisecond)
	if ptsc := findCondition(t, tl, CondPodReadyToStartContainers); !ptsc.Cause.Equal(at(0.55)) {
		t.Errorf("PodReadyToStartContainers caused at %v, want the pause exec", ptsc.Cause)
	}

	// Phases and insights.
	phases := map[string]Phase{}
	for _, p := range tl.Phases {
		phases[p.Name] = p
	}
	approx(t, "wait before sandbox", phases[PhaseWaitSandbox].Duration(), 450*time.Millisecond)
	approx(t, "init phase", phases[PhaseInit].Duration(), 11120*time.Millisecond)
	if !hasInsight(tl, InsightProbeDelay, "startupProbe initialDelaySeconds=5 left init-sidecar idle 5.0s") {
		t.Errorf("no initialDelay insight for the sidecar: %+v", tl.Insights)
	}
	if !hasInsight(tl, InsightKubeletReaction, "created init-sidecar 870ms after init-regular exited") {
		t.Errorf("no kubelet reaction insight: %+v", tl.Insights)
	}
	if len(tl.CriticalPath) < 4 || tl.CriticalPath[len(tl.CriticalPath)-1].Name != "container/nginx" {
		t.Errorf("critical path %+v", tl.CriticalPath)
	}
}

// TestPostStartBlocksNextContainer: the seed's poststart-demo (a 15 s exec
// hook) plus a second container that the hook holds back.
func TestPostStartBlocksNextContainer(t *testing.T) {
	sc := newScenario(t, "poststart-demo", corev1.PodSpec{Containers: []corev1.Container{
		{Name: "main", Command: []string{"sh", "-c", "sleep 3600"},
			Lifecycle: &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "sleep 15"}}}}},
		{Name: "second", Command: []string{"sleep", "3600"}},
	}})
	sc.cond(corev1.PodScheduled, 0)
	sc.cond(corev1.PodInitialized, 0)
	sc.update(0.05)
	sc.sandboxUp(0.4)
	sc.cond(corev1.PodReadyToStartContainers, 0.6)
	sc.update(0.6)
	sc.runtime(1.05, idMain, "main", 0, 1.0, 1.1, 0, 0)
	sc.exec(1.12, idMain, 500, shimPID, "sh", "-c", "sleep 3600")
	sc.fork(1.13, idMain, 501, 500)
	sc.exec(1.14, idMain, 501, 500, "sleep", "3600")
	// The hook: runc exec of sh -c 'sleep 15', whose child sleeps.
	sc.exec(1.2, idMain, 510, shimPID, "sh", "-c", "sleep 15")
	sc.fork(1.21, idMain, 511, 510)
	sc.exec(1.22, idMain, 511, 510, "sleep", "15")
	sc.exit(16.22, idMain, 511, 0)
	sc.exit(16.23, idMain, 510, 0)
	sc.runtime(16.35, idMain2, "second", 0, 16.3, 16.4, 0, 0)
	sc.exec(16.42, idMain2, 600, shimPID, "sleep", "3600")
	sc.status(false, running("main", idMain, 1.1, true, true))
	sc.status(false, running("second", idMain2, 16.4, true, true))
	sc.cond(corev1.ContainersReady, 17.2)
	sc.cond(corev1.PodReady, 17.2)
	sc.update(17.2)
	tl := sc.run(Config{})

	main := findContainer(t, tl, "main").Attempts[0]
	h := main.PostStart
	if h == nil || h.Inferred || h.Handler != "exec" {
		t.Fatalf("postStart %+v", h)
	}
	approx(t, "hook", h.End.Sub(h.Start), 15030*time.Millisecond)
	if main.Process == nil || main.Process.PID != 500 {
		t.Errorf("entrypoint %+v: the hook's sh must not be taken for it", main.Process)
	}
	if len(main.Probes) != 0 {
		t.Errorf("probes %+v: the hook is not a probe", main.Probes)
	}
	second := findContainer(t, tl, "second").Attempts[0]
	if !second.Created.After(h.End) {
		t.Errorf("second created %v, before the hook ended %v", second.Created, h.End)
	}
	if !hasInsight(tl, InsightPostStartWait, "second was created 15.1s after main's postStart hook began") {
		t.Errorf("no postStart insight: %+v", tl.Insights)
	}
	// ContainersReady: caused by second's process start, reported 0.8 s later;
	// main's own readiness (its process at 1.12 s) was held back by the hook.
	cr := findCondition(t, tl, CondContainersReady)
	if !cr.Cause.Equal(at(16.42)) {
		t.Errorf("ContainersReady cause %v (%s)", cr.Cause, cr.CauseEvent)
	}
}

// TestPostStartSingleContainerStatusLag is poststart-demo itself: the API
// reports the container running ~15 s after its process started.
func TestPostStartSingleContainerStatusLag(t *testing.T) {
	sc := newScenario(t, "poststart-demo", corev1.PodSpec{Containers: []corev1.Container{
		{Name: "main", Command: []string{"sh", "-c", "sleep 3600"},
			Lifecycle: &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "sleep 15"}}}}},
	}})
	sc.cond(corev1.PodScheduled, 0)
	sc.cond(corev1.PodInitialized, 0)
	sc.update(0.05)
	sc.sandboxUp(0.4)
	sc.cond(corev1.PodReadyToStartContainers, 0.6)
	sc.update(0.6)
	sc.runtime(1.05, idMain, "main", 0, 1.0, 1.1, 0, 0)
	sc.exec(1.12, idMain, 500, shimPID, "sh", "-c", "sleep 3600")
	sc.exec(1.2, idMain, 510, shimPID, "sh", "-c", "sleep 15")
	sc.exit(16.2, idMain, 510, 0)
	sc.status(false, running("main", idMain, 1.1, true, true))
	sc.cond(corev1.ContainersReady, 16.5)
	sc.cond(corev1.PodReady, 16.5)
	sc.update(16.5)
	tl := sc.run(Config{})
	cr := findCondition(t, tl, CondContainersReady)
	approx(t, "ContainersReady lag", cr.Lag(), 15380*time.Millisecond)
	if !hasInsight(tl, InsightStatusLag, "ContainersReady was reported 15.4s after main ready (entrypoint exec)") {
		t.Errorf("no status lag insight: %+v", tl.Insights)
	}
	if !hasInsight(tl, InsightPostStartWait, "main's postStart hook ran 15.0s") {
		t.Errorf("no hook insight: %+v", tl.Insights)
	}
}

// TestStartupProbeGatesReadiness: startup and readiness run the same
// command; attempts before the startup success are startup attempts.
func TestStartupProbeGatesReadiness(t *testing.T) {
	cmd := []string{"cat", "/tmp/ok"}
	sc := newScenario(t, "gated", corev1.PodSpec{Containers: []corev1.Container{{Name: "app",
		Command: []string{"app"}, StartupProbe: execProbe(0, 1, cmd...), ReadinessProbe: execProbe(0, 2, cmd...),
		LivenessProbe: execProbe(0, 10, cmd...)}}})
	sc.cond(corev1.PodScheduled, 0)
	sc.update(0.05)
	sc.sandboxUp(0.3)
	sc.runtime(1.0, idMain, "app", 0, 0.9, 1.0, 0, 0)
	sc.exec(1.0, idMain, 700, shimPID, "app")
	pid := uint32(710)
	probe := func(s float64, code int) {
		sc.exec(s, idMain, pid, shimPID, cmd...)
		sc.exit(s+0.01, idMain, pid, code)
		pid++
	}
	probe(2, 1)    // startup: fails
	probe(3, 1)    // startup: fails
	probe(4, 0)    // startup: succeeds
	probe(5, 0)    // readiness (startup + 1 s: closer to readiness' first run)
	probe(14.1, 0) // liveness: 10 s after startup success
	sc.status(false, running("app", idMain, 1.0, true, true))
	sc.cond(corev1.ContainersReady, 5.5)
	sc.cond(corev1.PodReady, 5.5)
	sc.update(5.5)
	sc.update(14.2)
	tl := sc.run(Config{})
	probes := findContainer(t, tl, "app").Attempts[0].Probes
	var kinds []ProbeKind
	var results []ProbeResult
	for _, p := range probes {
		kinds = append(kinds, p.Kind)
		results = append(results, p.Result)
	}
	wantKinds := []ProbeKind{ProbeStartup, ProbeStartup, ProbeStartup, ProbeReadiness, ProbeLiveness}
	wantResults := []ProbeResult{ProbeFailure, ProbeFailure, ProbeSuccess, ProbeSuccess, ProbeSuccess}
	for i := range wantKinds {
		if i >= len(kinds) || kinds[i] != wantKinds[i] || results[i] != wantResults[i] {
			t.Fatalf("probes %v %v, want %v %v", kinds, results, wantKinds, wantResults)
		}
	}
	cr := findCondition(t, tl, CondContainersReady)
	if !cr.Cause.Equal(at(5.01)) {
		t.Errorf("ContainersReady cause %v (%s), want the readiness success at 5.01 s", cr.Cause, cr.CauseEvent)
	}
}

// TestInitFailureNeverFailsPod: restartPolicy Never and an init container
// exiting 1: the start ends failed with the exit code as the reason.
func TestInitFailureNeverFailsPod(t *testing.T) {
	sc := newScenario(t, "init-fail", corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
		InitContainers: []corev1.Container{{Name: "init-fail", Command: []string{"sh", "-c", "exit 1"}}},
		Containers:     []corev1.Container{{Name: "app", Command: []string{"sleep", "3600"}}}})
	sc.cond(corev1.PodScheduled, 0)
	sc.update(0.05)
	sc.sandboxUp(0.3)
	sc.runtime(1.0, idInit, "init-fail", 0, 0.9, 1.0, 0, 0)
	sc.exec(1.0, idInit, 800, shimPID, "sh", "-c", "exit 1")
	sc.exit(1.01, idInit, 800, 1)
	sc.status(true, terminated("init-fail", idInit, 1, 0))
	sc.pod.Status.Phase = corev1.PodFailed
	sc.update(2.0)
	tl := sc.run(Config{})
	if tl.Outcome != OutcomeFailed || tl.Reason != "init init-fail exited with code 1" {
		t.Fatalf("outcome %s %q", tl.Outcome, tl.Reason)
	}
	a := findContainer(t, tl, "init-fail").Attempts[0]
	if a.ExitCode == nil || *a.ExitCode != 1 || a.Process.ExitCode == nil || *a.Process.ExitCode != 1 {
		t.Errorf("attempt %+v", a)
	}
	if len(findContainer(t, tl, "app").Attempts) != 0 {
		t.Error("app ran after a failed init container with restartPolicy Never")
	}
}

// TestInitRetries: restartPolicy Always retries a failing init container
// with back-off; every attempt is kept.
func TestInitRetries(t *testing.T) {
	sc := newScenario(t, "init-retry", corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "wait", Command: []string{"sh", "-c", "test -f /done"}}},
		Containers:     []corev1.Container{{Name: "app", Command: []string{"sleep", "3600"}}}})
	sc.cond(corev1.PodScheduled, 0)
	sc.update(0.05)
	sc.sandboxUp(0.3)
	ids := []string{idInit, idSidecar, idMain2}
	start := []float64{1, 2.5, 15}
	for i, id := range ids {
		code := 1
		if i == len(ids)-1 {
			code = 0
		}
		s := start[i]
		sc.runtime(s, id, "wait", uint32(i), s-0.05, s, 0, 0)
		sc.exec(s+0.01, id, uint32(1000+i), shimPID, "sh", "-c", "test -f /done")
		sc.exit(s+0.02, id, uint32(1000+i), code)
		sc.status(true, terminated("wait", id, int32(code), int32(i)))
		sc.update(s + 0.5)
	}
	sc.runtime(16, idMain, "app", 0, 15.9, 16, 0, 0)
	sc.exec(16.01, idMain, 1100, shimPID, "sleep", "3600")
	sc.cond(corev1.PodInitialized, 15.6)
	sc.status(false, running("app", idMain, 16, true, true))
	sc.cond(corev1.ContainersReady, 16.5)
	sc.cond(corev1.PodReady, 16.5)
	sc.update(16.5)
	tl := sc.run(Config{})
	atts := findContainer(t, tl, "wait").Attempts
	if len(atts) != 3 {
		t.Fatalf("%d attempts, want 3", len(atts))
	}
	for i, a := range atts {
		want := 1
		if i == 2 {
			want = 0
		}
		if a.Attempt != i || a.ExitCode == nil || *a.ExitCode != want {
			t.Errorf("attempt %d: %+v", i, a)
		}
	}
	if !hasInsight(tl, InsightRetries, "wait ran 3 times (exit codes 1, 1, 0)") {
		t.Errorf("no retries insight: %+v", tl.Insights)
	}
	if init := findCondition(t, tl, CondInitialized); !init.Cause.Equal(at(15.02)) {
		t.Errorf("Initialized cause %v, want the last attempt's exit", init.Cause)
	}
}

func TestDeletedBeforeReady(t *testing.T) {
	sc := newScenario(t, "gone", corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}})
	sc.cond(corev1.PodScheduled, 0)
	sc.update(0.05)
	sc.sandboxUp(0.3)
	sc.delete(3)
	tl := sc.run(Config{})
	if tl.Outcome != OutcomeDeleted || !tl.End.Equal(at(3)) {
		t.Fatalf("outcome %s at %v", tl.Outcome, tl.End)
	}
}

func TestTimeout(t *testing.T) {
	sc := newScenario(t, "stuck", corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}})
	sc.cond(corev1.PodScheduled, 0)
	sc.update(0.05)
	tl := sc.run(Config{Timeout: 5 * time.Second})
	if tl.Outcome != OutcomeTimeout || !tl.Partial {
		t.Fatalf("outcome %s, partial %v: want a partial timeout", tl.Outcome, tl.Partial)
	}
}

// TestLateEventsWithinGrace: process events arrive after Ready (the kernel
// ring buffer is read in batches) and still land in the timeline.
func TestLateEventsWithinGrace(t *testing.T) {
	sc := lifecycleDemo(t)
	// Move the sidecar's probe events after the Ready update.
	var moved, rest = sc.events[:0:0], sc.events[:0:0]
	for _, ev := range sc.events {
		if podUIDOf(ev) != "" && ev.When().After(at(12)) && ev.When().Before(at(12.2)) {
			moved = append(moved, ev)
		} else {
			rest = append(rest, ev)
		}
	}
	if len(moved) == 0 {
		t.Fatal("test setup: nothing moved")
	}
	sc.events = append(rest, moved...)
	tl := sc.run(Config{})
	if p := findContainer(t, tl, "init-sidecar").Attempts[0].Probes; len(p) != 1 || p[0].Result != ProbeSuccess {
		t.Errorf("late probe events lost: %+v", p)
	}
}

// TestOrphansWaitForTheirPod: node events before the pod's first watch
// update are kept and joined; events for pods that never show up are
// dropped and counted.
func TestOrphansWaitForTheirPod(t *testing.T) {
	sc := lifecycleDemo(t)
	first := sc.events[0]
	sc.events = append(sc.events[1:2:2], append([]event.Event{first}, sc.events[2:]...)...)
	tl := sc.run(Config{})
	if tl.Sandbox == nil || tl.Sandbox.PauseStart.IsZero() {
		t.Fatalf("early sandbox events lost: %+v", tl.Sandbox)
	}

	c := New(Config{OrphanTTL: time.Second})
	c.Handle(&event.ProcessExec{Time: at(0), Process: event.Process{PID: 1, PodUID: "nobody"}})
	c.Handle(&event.Tick{Time: at(5)})
	if st := c.Stats(); st.Orphaned != 1 {
		t.Errorf("orphaned %d, want 1", st.Orphaned)
	}
}

// TestAlreadyReadyPodsAreIgnored: a pod Ready when first seen (readyline
// started later) has no start to reconstruct.
func TestAlreadyReadyPodsAreIgnored(t *testing.T) {
	sc := newScenario(t, "old", corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}})
	sc.cond(corev1.PodReady, 0)
	sc.update(100)
	c := New(Config{})
	for _, ev := range sc.events {
		if got := c.Handle(ev); len(got) != 0 {
			t.Fatalf("timeline for a pod that was already Ready")
		}
	}
	if c.Stats().Tracked != 0 {
		t.Error("tracking an already-Ready pod")
	}
	if got := c.Flush(); len(got) != 0 {
		t.Errorf("flush returned %d timelines", len(got))
	}
}

// TestPIDReuse: a pid reused inside a container is a new process.
func TestPIDReuse(t *testing.T) {
	sc := newScenario(t, "reuse", corev1.PodSpec{Containers: []corev1.Container{{Name: "c",
		StartupProbe: execProbe(0, 1, "check")}}})
	sc.cond(corev1.PodScheduled, 0)
	sc.update(0.05)
	sc.sandboxUp(0.3)
	sc.runtime(1, idMain, "c", 0, 0.9, 1, 0, 0)
	sc.exec(1, idMain, 50, shimPID, "server")
	sc.exec(2, idMain, 60, shimPID, "check")
	sc.exit(2.1, idMain, 60, 1)
	sc.exec(3, idMain, 60, shimPID, "check") // same pid, new process
	sc.exit(3.1, idMain, 60, 0)
	sc.status(false, running("c", idMain, 1, true, true))
	sc.cond(corev1.ContainersReady, 3.5)
	sc.cond(corev1.PodReady, 3.5)
	sc.update(3.5)
	tl := sc.run(Config{})
	p := findContainer(t, tl, "c").Attempts[0].Probes
	if len(p) != 2 || p[0].Result != ProbeFailure || p[1].Result != ProbeSuccess {
		t.Fatalf("probes %+v", p)
	}
}

// TestDeterministic: the same events give the same timeline.
func TestDeterministic(t *testing.T) {
	a := lifecycleDemo(t).run(Config{})
	b := lifecycleDemo(t).run(Config{})
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Fatalf("two runs differ:\n%s\n%s", ja, jb)
	}
}
