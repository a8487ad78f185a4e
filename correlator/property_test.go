package correlator

import (
	"fmt"
	"math/rand"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/readyline/readyline/collector/event"
)

// TestPropertyRandomStarts feeds random but plausible pod starts (random
// container counts, sidecars, hooks, probes, crash loops with back-off, a
// sidecar crashing after Initialized, a sandbox recreated, failed
// RunPodSandbox calls before a sandbox, readiness gates, delays, and the
// sources' events reordered within small windows) and checks what must
// hold of every timeline: no negative lag, no cause after its observation,
// no phase ending before it starts, a critical path in order that sums to
// no more than the start, at most one timeline per pod, every failed call
// kept and none taken for a sandbox.
func TestPropertyRandomStarts(t *testing.T) {
	seeds := 400
	if testing.Short() {
		seeds = 50
	}
	for seed := range seeds {
		r := rand.New(rand.NewSource(int64(seed)))
		var events []event.Event
		uids := map[string]string{}
		sandboxes := map[string][]string{}
		failedCalls := map[string]int{}
		for p := range 1 + r.Intn(3) {
			name := fmt.Sprintf("rand-%d-%d", seed, p)
			sc := randomStart(t, r, name, p)
			uids[sc.uid], sandboxes[sc.uid], failedCalls[sc.uid] = name, sc.sandboxes, sc.failedSandboxCalls
			events = append(events, sc.events...)
		}
		events = jumble(r, events)
		checkSnapshots(t, r, seed, events)
		got := feed(New(Config{}), events, 3*time.Minute)
		seen := map[string]int{}
		for _, tl := range got {
			seen[tl.Pod.UID]++
			what := fmt.Sprintf("seed %d %s", seed, tl.Pod.Name)
			checkTimeline(t, what, tl)
			sbs := sandboxes[tl.Pod.UID]
			if tl.Sandbox == nil || tl.Sandbox.ID != sbs[len(sbs)-1] || len(tl.EarlierSandboxes) != len(sbs)-1 {
				t.Errorf("%s: sandbox %+v and %d earlier, want %s and %d earlier", what, tl.Sandbox, len(tl.EarlierSandboxes), sbs[len(sbs)-1], len(sbs)-1)
			}
			// A failed call is no sandbox: it is kept by the one it was a try for.
			failed := 0
			if tl.Sandbox != nil {
				failed = len(tl.Sandbox.FailedCalls)
			}
			for _, e := range tl.EarlierSandboxes {
				failed += len(e.FailedCalls)
			}
			if failed != failedCalls[tl.Pod.UID] {
				t.Errorf("%s: %d failed RunPodSandbox calls kept, want %d", what, failed, failedCalls[tl.Pod.UID])
			}
		}
		for uid, n := range seen {
			if n > 1 {
				t.Errorf("seed %d: %d timelines for %s", seed, n, uids[uid])
			}
		}
		if len(seen) != len(uids) {
			t.Errorf("seed %d: %d pods started, %d timelines", seed, len(uids), len(seen))
		}
	}
}

// checkSnapshots feeds events and, at a few random points on the way,
// checks the snapshot of every start in progress as checkTimeline does:
// what a reader asks while it starts holds the same properties.
func checkSnapshots(t *testing.T, r *rand.Rand, seed int, events []event.Event) {
	t.Helper()
	c := New(Config{})
	for i, ev := range events {
		c.Handle(ev)
		if r.Intn(len(events)/6+1) != 0 && i != len(events)-1 {
			continue
		}
		for _, p := range c.sortedPods() {
			tl, ok := c.Snapshot(Query{UID: p.uid, Namespace: p.pod.Namespace, Name: p.pod.Name})
			if ok {
				checkTimeline(t, fmt.Sprintf("seed %d %s at +%v", seed, tl.Pod.Name, ev.When().Sub(t0)), tl)
			}
		}
	}
}

func checkTimeline(t *testing.T, what string, tl *Timeline) {
	t.Helper()
	checkBreakdown(t, what, tl)
	// A kill is a fact that happened: no attempt that runs is called killed.
	for _, c := range tl.Containers {
		for _, a := range c.Attempts {
			if a.KilledBy != "" && a.Exit().IsZero() && a.Finished.IsZero() {
				t.Errorf("%s: %s attempt %d runs and is called killed by its %s", what, c.Name, a.Attempt, a.KilledBy)
			}
		}
	}
	for _, c := range tl.Conditions {
		if !c.Cause.IsZero() && c.Cause.After(c.Observed) {
			t.Errorf("%s: %s caused %v (%s) after its observation %v", what, c.Type, c.Cause.Sub(t0), c.CauseEvent, c.Observed.Sub(t0))
		}
		if c.Lag() < 0 {
			t.Errorf("%s: %s lag %v", what, c.Type, c.Lag())
		}
	}
	for _, p := range tl.Phases {
		if p.End.Before(p.Start) {
			t.Errorf("%s: phase %s ends %v before it starts %v", what, p.Name, p.End.Sub(t0), p.Start.Sub(t0))
		}
	}
	for _, c := range tl.Containers {
		for _, a := range c.Attempts {
			if a.BackOff < 0 {
				t.Errorf("%s: %s attempt %d back-off %v", what, c.Name, a.Attempt, a.BackOff)
			}
			if p := a.Process; p != nil && p.Signal != 0 && p.ExitCode != nil {
				t.Errorf("%s: %s killed by signal %d with exit code %d", what, c.Name, p.Signal, *p.ExitCode)
			}
		}
	}
	if tl.Sandbox != nil {
		for _, e := range tl.EarlierSandboxes {
			if e.ID != "" && e.ID == tl.Sandbox.ID {
				t.Errorf("%s: the final sandbox %s is listed as earlier", what, e.ID)
			}
		}
	}
	var sum time.Duration
	for i, s := range tl.CriticalPath {
		if s.End.Before(s.Start) || s.Start.Before(tl.Start) || s.End.After(tl.End) {
			t.Errorf("%s: step %s %v..%v outside the start %v..%v", what, s.Name, s.Start.Sub(t0), s.End.Sub(t0), tl.Start.Sub(t0), tl.End.Sub(t0))
		}
		if i > 0 && s.Start.Before(tl.CriticalPath[i-1].End) {
			t.Errorf("%s: step %s starts before %s ended", what, s.Name, tl.CriticalPath[i-1].Name)
		}
		sum += s.End.Sub(s.Start)
	}
	if sum > tl.End.Sub(tl.Start) {
		t.Errorf("%s: critical path sums to %v, more than the start's %v", what, sum, tl.End.Sub(tl.Start))
	}
}

// jumble orders the streams by time, then lets the events of different
// sources overtake each other within 300 ms, the way the kernel's ring
// buffer, the uprobes, the runtime and the watch deliver them (each source
// keeps its own order: an exit never comes before its exec).
func jumble(r *rand.Rand, events []event.Event) []event.Event {
	sort.SliceStable(events, func(i, j int) bool { return events[i].When().Before(events[j].When()) })
	for i := 0; i+1 < len(events); i++ {
		a, b := events[i], events[i+1]
		if sourceOf(a) != sourceOf(b) && b.When().Sub(a.When()) < 300*time.Millisecond && r.Intn(3) == 0 {
			events[i], events[i+1] = b, a
		}
	}
	return events
}

func sourceOf(ev event.Event) string {
	switch ev.(type) {
	case *event.ProcessExec, *event.ProcessExit, *event.ProcessFork:
		return "kernel"
	case *event.CRICall:
		return "uprobe"
	case *event.ContainerInfo:
		return "runtime"
	}
	return "watch"
}

// randomStart writes one random pod start. The kubelet's rules are kept
// (init containers in order, a sidecar started before the next, postStart
// before the next creation, conditions observed after what they report);
// everything else is drawn.
func randomStart(t *testing.T, r *rand.Rand, name string, podIdx int) *scenario {
	nInit, nMain := r.Intn(3), 1+r.Intn(3)
	var spec corev1.PodSpec
	sidecar := make([]bool, nInit)
	for i := range nInit {
		c := corev1.Container{Name: fmt.Sprintf("init-%d", i), Command: []string{fmt.Sprintf("init%d", i)}}
		if r.Intn(2) == 0 {
			sidecar[i] = true
			c.RestartPolicy = always()
			if r.Intn(2) == 0 {
				c.StartupProbe = execProbe(0, 1, fmt.Sprintf("started%d", i))
			}
		}
		spec.InitContainers = append(spec.InitContainers, c)
	}
	hook := make([]bool, nMain)
	for i := range nMain {
		c := corev1.Container{Name: fmt.Sprintf("main-%d", i), Command: []string{fmt.Sprintf("main%d", i)}}
		if r.Intn(2) == 0 {
			c.ReadinessProbe = execProbe(0, 1, fmt.Sprintf("ready%d", i))
		}
		if r.Intn(3) == 0 {
			hook[i] = true
			c.Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{fmt.Sprintf("hook%d", i)}}}}
		}
		spec.Containers = append(spec.Containers, c)
	}
	const gate corev1.PodConditionType = "example.com/gate"
	withGate := r.Intn(4) == 0
	if withGate {
		spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: gate}}
	}
	withVolume := r.Intn(3) == 0
	if withVolume {
		spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
	}
	sc := newScenario(t, name, spec)
	ids := 0
	newID := func() string {
		ids++
		return fmt.Sprintf("%02x%02x%060d", podIdx+1, ids, 0)
	}
	pid := uint32(10000 * (podIdx + 1))
	nextPID := func() uint32 { pid++; return pid }
	delay := func(max float64) float64 { return 0.01 + r.Float64()*max }
	// Sometimes the claim's volume is provisioned first: the pod is
	// scheduled once it is (whole seconds, as the Events and conditions).
	scheduled, provisioned := 0.0, false
	if withVolume && r.Intn(2) == 0 {
		scheduled, provisioned = float64(2+r.Intn(6)), true
	}
	sc.cond(corev1.PodScheduled, scheduled)
	if nInit == 0 {
		sc.cond(corev1.PodInitialized, scheduled)
	}
	sc.update(scheduled + 0.05)
	if provisioned {
		from := float64(r.Intn(int(scheduled)))
		to := from + float64(1+r.Intn(int(scheduled-from)))
		sc.events = append(sc.events, &event.PodEvents{Time: at(scheduled + 0.07), PodUID: sc.uid, Namespace: "default", Name: name, ClaimsRead: true,
			Claims: []event.PodEvent{
				{Reason: "Provisioning", Claim: "data", Component: "csi.test_n", Count: 1, First: at(from), Last: at(from)},
				{Reason: "ProvisioningSucceeded", Claim: "data", Component: "csi.test_n", Count: 1, First: at(to), Last: at(to)},
			}})
	}
	now := scheduled + 0.1 + delay(1)
	if withVolume {
		// The volume's CSI calls before the sandbox: a stage, a publish
		// that sometimes fails first.
		for _, m := range []event.CRIMethod{event.CSINodeStageVolume, event.CSINodePublishVolume} {
			fail := m == event.CSINodePublishVolume && r.Intn(2) == 0
			for {
				end := now + delay(2)
				sc.call(now, end, m, func(c *event.CRICall) { c.PodUID, c.Volume, c.Driver, c.Err = sc.uid, "pv-data", "csi.test", fail })
				now = end + delay(0.5)
				if !fail {
					break
				}
				fail = false
			}
		}
	}

	// Sandboxes: sometimes one that dies with a container in it.
	sbID := newID()
	sandbox := func(attempt uint32) {
		if r.Intn(4) == 0 {
			// A CNI error or two first: the kubelet retries on back-off.
			for range 1 + r.Intn(2) {
				end := now + delay(0.3)
				sc.call(now, end, event.CRIRunPodSandbox, func(c *event.CRICall) { c.PodUID, c.Err = sc.uid, true })
				sc.failedSandboxCalls++
				now = end + delay(1)
			}
		}
		end := now + 0.2 + delay(0.5)
		sc.sandboxCallFor(now, end, sbID, attempt, nextPID())
		if r.Intn(3) == 0 {
			// The uprobe missed the response: the call names no sandbox.
			for _, ev := range sc.events {
				if c, ok := ev.(*event.CRICall); ok && c.Method == event.CRIRunPodSandbox && c.PodSandboxID == sbID {
					c.PodSandboxID = ""
				}
			}
		}
		now = end + delay(0.2)
		sc.cond(corev1.PodReadyToStartContainers, now)
		sc.update(now)
	}
	sandbox(0)
	if r.Intn(4) == 0 {
		first := spec.InitContainers
		cname := "main-0"
		if len(first) > 0 {
			cname = first[0].Name
		}
		id, p := newID(), nextPID()
		now += delay(0.3)
		sc.runIn(now+0.05, sbID, id, cname, 0, now, now+0.02, 0, 0, "")
		sc.exec(now+0.03, id, p, shimPID, "victim")
		now += 1 + delay(3)
		sc.kill(now, sbID, sc.pausePID, 9)
		sc.kill(now+0.01, id, p, 9)
		sc.runIn(now+0.05, sbID, id, cname, 0, now-1, now-0.98, now+0.01, 137, "Error")
		if r.Intn(2) == 0 {
			sc.notTrue(corev1.PodReadyToStartContainers)
			sc.update(now + delay(0.3))
		}
		now += 1 + delay(4)
		sbID = newID()
		sandbox(1)
	}

	attemptOf := map[string]uint32{}
	// run starts one attempt of a container and returns when it is up.
	run := func(cname, cmd string) (id string, p uint32, up float64) {
		id, p = newID(), nextPID()
		created := now + delay(0.2)
		sc.runIn(created+0.05, sbID, id, cname, attemptOf[cname], created, created+0.03, 0, 0, "")
		attemptOf[cname]++
		up = created + 0.04
		sc.exec(up, id, p, shimPID, cmd)
		now = up
		return id, p, up
	}
	crash := func(cname, id string, p uint32, at float64, attempt uint32) {
		sc.exit(at, id, p, 1)
		sc.runIn(at+0.05, sbID, id, cname, attempt, 0, 0, at, 1, "Error")
		st := terminated(cname, id, 1, int32(attempt))
		sc.status(cname[:4] == "init", st)
		sc.update(at + delay(0.5))
	}
	backOff := func(n int) { now += float64(int(1)<<n)*0.5 + delay(0.3) }

	var initDone float64
	var lateSidecar []string
	sidecarPID := map[string]uint32{}
	for i := range nInit {
		cname, cmd := fmt.Sprintf("init-%d", i), fmt.Sprintf("init%d", i)
		fails := r.Intn(3)
		for f := 0; f <= fails; f++ {
			id, p, up := run(cname, cmd)
			if !sidecar[i] {
				end := up + delay(2)
				code := 1
				if f == fails {
					code = 0
				}
				sc.exit(end, id, p, code)
				sc.runIn(end+0.05, sbID, id, cname, attemptOf[cname]-1, 0, 0, end, int32(code), "")
				sc.status(true, terminated(cname, id, int32(code), int32(attemptOf[cname]-1)))
				sc.update(end + delay(0.5))
				now = end
				if code != 0 {
					backOff(f)
				}
				continue
			}
			if spec.InitContainers[i].StartupProbe != nil && f < fails && r.Intn(3) == 0 {
				// The kubelet kills it for its startupProbe: three failures
				// (failureThreshold 3), StopContainer, its exit; the
				// Killing Event is read some time later, maybe while the
				// next attempt runs.
				when := up
				for range 3 {
					when += 0.3 + delay(0.7)
					pp := nextPID()
					cmd := fmt.Sprintf("started%d", i)
					sc.call(when-0.01, when+0.03, event.CRIExecSync, func(c *event.CRICall) { c.ContainerID, c.Cmd, c.Err = id, []string{cmd}, true })
					sc.exec(when, id, pp, shimPID, cmd)
					sc.exit(when+0.02, id, pp, 1)
				}
				kill := when + delay(0.2)
				sc.call(kill, kill+0.3, event.CRIStopContainer, func(c *event.CRICall) { c.ContainerID = id })
				sc.kill(kill+0.2, id, p, 15)
				sc.runIn(kill+0.25, sbID, id, cname, attemptOf[cname]-1, 0, 0, kill+0.2, 143, "Error")
				sc.status(true, terminated(cname, id, 143, int32(attemptOf[cname]-1)))
				sc.update(kill + 0.3)
				sc.events = append(sc.events, &event.PodEvents{Time: at(kill + 0.5 + delay(5)), PodUID: sc.uid, Namespace: sc.pod.Namespace, Name: sc.pod.Name,
					Events: []event.PodEvent{{Type: "Normal", Reason: reasonKilling, Message: "Container " + cname + " failed startup probe, will be restarted",
						FieldPath: "spec.initContainers{" + cname + "}", Count: 1, First: at(kill).Truncate(time.Second), Last: at(kill).Truncate(time.Second)}}})
				now = kill + 0.3
				backOff(f)
				continue
			}
			started := up
			if spec.InitContainers[i].StartupProbe != nil {
				started = up + 0.5 + delay(2)
				pp := nextPID()
				sc.exec(started-0.01, id, pp, shimPID, fmt.Sprintf("started%d", i))
				sc.exit(started, id, pp, 0)
			}
			if f < fails && r.Intn(2) == 0 {
				// Crashes before it counted as started.
				crash(cname, id, p, up+delay(0.4), attemptOf[cname]-1)
				backOff(f)
				continue
			}
			sc.status(true, running(cname, id, up, true, true))
			sc.update(started + delay(0.3))
			now = started
			if r.Intn(3) == 0 {
				lateSidecar = append(lateSidecar, cname) // crashes later, after Initialized
				sidecarPID[cname] = p
			}
			break
		}
		initDone = now
	}
	if nInit > 0 {
		now = initDone + delay(1)
		sc.cond(corev1.PodInitialized, now)
		sc.update(now)
	}
	var lastReady float64
	for i := range nMain {
		cname, cmd := fmt.Sprintf("main-%d", i), fmt.Sprintf("main%d", i)
		fails := r.Intn(3)
		for f := 0; f <= fails; f++ {
			id, p, up := run(cname, cmd)
			if hook[i] && f == fails {
				hp, hs := nextPID(), up+delay(0.1)
				he := hs + delay(4)
				sc.exec(hs, id, hp, shimPID, fmt.Sprintf("hook%d", i))
				sc.exit(he, id, hp, 0)
				now = he
			}
			ready := now
			if spec.Containers[i].ReadinessProbe != nil && f == fails {
				ready = now + delay(3)
				pp := nextPID()
				sc.exec(ready-0.01, id, pp, shimPID, fmt.Sprintf("ready%d", i))
				sc.exit(ready, id, pp, 0)
			}
			if f < fails {
				crash(cname, id, p, up+delay(1), attemptOf[cname]-1)
				backOff(f)
				continue
			}
			sc.status(false, running(cname, id, up, true, true))
			sc.update(max(ready, now) + delay(0.2))
			lastReady = max(lastReady, ready, now)
		}
	}
	for _, cname := range lateSidecar {
		// A sidecar crashing after Initialized: its restart must not be
		// taken for Initialized's cause.
		var id string
		for _, cs := range sc.pod.Status.InitContainerStatuses {
			if cs.Name == cname {
				id = stripRuntime(cs.ContainerID)
			}
		}
		at := now + delay(1)
		sc.exit(at, id, sidecarPID[cname], 1)
		sc.runIn(at+0.05, sbID, id, cname, attemptOf[cname]-1, 0, 0, at, 1, "Error")
		now = at
		backOff(0)
		nid, _, up := run(cname, "restarted")
		sc.status(true, running(cname, nid, up, true, true))
		sc.update(up + delay(0.3))
		lastReady = max(lastReady, up)
	}
	now = max(now, lastReady) + delay(1)
	if withGate && r.Intn(2) == 0 {
		sc.cond(gate, 0.5)
	}
	sc.cond(corev1.ContainersReady, now)
	sc.update(now)
	if withGate {
		now += delay(5)
		sc.cond(gate, now)
		sc.update(now)
	}
	now += delay(0.1)
	sc.cond(corev1.PodReady, now)
	sc.update(now)
	return sc
}

// checkBreakdown: where the time went adds up to the start, to the
// nanosecond, each kind once, none negative; each critical-path step has a
// kind. (That no attempt is drawn past its process's end is the exporter's
// TestAttemptSpansEndWithTheirProcess.)
func checkBreakdown(t *testing.T, what string, tl *Timeline) {
	t.Helper()
	var sum time.Duration
	seen := map[ShareKind]bool{}
	for _, s := range tl.Breakdown {
		if s.Duration <= 0 || seen[s.Kind] {
			t.Errorf("%s: breakdown %+v: a share not positive or twice", what, tl.Breakdown)
		}
		seen[s.Kind] = true
		sum += s.Duration
	}
	if total := span(tl.Start, tl.End); total > 0 && sum != total {
		t.Errorf("%s: breakdown sums to %v, the start took %v: %+v", what, sum, total, tl.Breakdown)
	}
	for _, s := range tl.CriticalPath {
		if s.Kind == "" {
			t.Errorf("%s: critical path step %s has no kind", what, s.Name)
		}
	}
}
