package correlator

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/readyline/readyline/collector/event"
)

// floodStart feeds c the start of a pod that never gets Ready: its
// entrypoint forks procs processes, each exec'ing with argvBytes of argv
// (a fresh string each, as decoded from the kernel), every other one
// exiting. Its events are stamped from start on, 1 ms apart, with a tick
// every second. It returns the pod's UID.
func floodStart(c *Correlator, i, procs, argvBytes int, start time.Time) string {
	return floodStartEvery(c, i, procs, argvBytes, start, time.Millisecond, "/app", "--serve")
}

// floodStartEvery is floodStart with its events step apart, its entrypoint
// forked and exec'ing entry.
func floodStartEvery(c *Correlator, i, procs, argvBytes int, start time.Time, step time.Duration, entry ...string) string {
	uid := fmt.Sprintf("00000000-0000-4000-9000-%012x", i)
	cid := fmt.Sprintf("%064x", 0xf100d00+i)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("flood-%d", i), Namespace: "tenant", UID: types.UID(uid),
			CreationTimestamp: metav1.NewTime(start.Truncate(time.Second))},
		Spec:   corev1.PodSpec{NodeName: "vm", Containers: []corev1.Container{{Name: "app", Image: "app"}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	now := start
	next := func() time.Time {
		now = now.Add(step)
		if now.Truncate(time.Second) != now.Add(-step).Truncate(time.Second) {
			c.Handle(&event.Tick{Time: now})
		}
		return now
	}
	c.Handle(&event.PodUpdate{Time: next(), Action: event.PodAdded, Pod: pod})
	c.Handle(&event.ContainerInfo{Time: next(), ContainerID: cid, PodUID: uid, PodName: pod.Name, Namespace: pod.Namespace,
		ContainerName: "app", CreatedAt: now, StartedAt: now.Add(step), State: "running"})
	proc := func(pid, ppid uint32) event.Process {
		return event.Process{PID: pid, PPID: ppid, ContainerID: cid, PodUID: uid, Scope: event.ScopePod}
	}
	c.Handle(&event.ProcessFork{Time: next(), Process: proc(1000, shimPID)})
	c.Handle(&event.ProcessExec{Time: next(), Process: proc(1000, shimPID), Filename: entry[0], Argv: entry})
	for k := range procs {
		pid := uint32(1001 + k)
		c.Handle(&event.ProcessFork{Time: next(), Process: proc(pid, 1000)})
		arg := strings.Repeat(string(rune('a'+k%26)), argvBytes-len("worker")-1)
		c.Handle(&event.ProcessExec{Time: next(), Process: proc(pid, 1000), Filename: "/worker", Argv: []string{"worker", arg}})
		if k%2 == 1 {
			c.Handle(&event.ProcessExit{Time: next(), Process: proc(pid, 1000)})
		}
	}
	return uid
}

// TestFactBudgetFlood: starts that never get Ready, each with 4096
// processes of 512 bytes of argv, hold at most the budget; each keeps its
// entrypoint, and its timeline says what went.
func TestFactBudgetFlood(t *testing.T) {
	const budget = 1 << 20
	c := New(Config{MaxFactBytes: budget})
	var uids []string
	for i := range 8 {
		uids = append(uids, floodStart(c, i, 4096, 512, t0.Add(time.Duration(i)*10*time.Second)))
		if st := c.Stats(); st.FactBytes+st.HeldBytes > budget {
			t.Fatalf("after %d starts the facts take %d bytes, over the budget of %d", i+1, st.FactBytes+st.HeldBytes, budget)
		}
	}
	st := c.Stats()
	t.Logf("8 starts of 4096 processes: %d bytes held in a budget of %d; %d facts dropped, %d argv", st.FactBytes, budget, st.Trimmed, st.ArgvTrimmed)
	if st.Trimmed == 0 || st.ArgvTrimmed == 0 || st.FactBytes < budget/2 {
		t.Errorf("stats %+v", st)
	}
	for _, uid := range uids {
		tl, ok := c.Snapshot(Query{UID: uid})
		if !ok {
			t.Fatalf("%s not in progress", uid)
		}
		a := findContainer(t, tl, "app").Attempts
		if len(a) != 1 || a[0].Process == nil || !slices.Equal(a[0].Process.Argv, []string{"/app", "--serve"}) {
			t.Errorf("%s: the entrypoint was lost: %+v", tl.Pod.Name, a)
		}
		if !slices.Contains(tl.Marks, MarkTrimmed) || len(tl.Missing) == 0 || !strings.Contains(tl.Missing[len(tl.Missing)-1], "memory budget") {
			t.Errorf("%s: marks %v, missing %q", tl.Pod.Name, tl.Marks, tl.Missing)
		}
	}
}

// TestFactBudgetSparesSmallStarts: a start that holds less than its share
// loses nothing to starts that hold more: its timeline is the one it has
// alone.
func TestFactBudgetSparesSmallStarts(t *testing.T) {
	alone := lifecycleDemoNamed(t, "demo").run(Config{})
	c := New(Config{MaxFactBytes: 2 << 20})
	var got []*Timeline
	for _, ev := range lifecycleDemoNamed(t, "demo").events {
		got = append(got, c.Handle(ev)...)
		if ev.When().Equal(at(7.3)) { // the sidecar is up: trims while the demo is in progress
			for i := range 4 {
				floodStartEvery(c, i, 4096, 512, at(7.31), 50*time.Microsecond, "/app")
			}
			if c.Stats().Trimmed == 0 {
				t.Fatal("the flood took nothing")
			}
		}
	}
	for s := 21; s < 30 && len(got) == 0; s++ {
		got = append(got, c.Handle(&event.Tick{Time: at(float64(s))})...)
	}
	if len(got) != 1 {
		t.Fatalf("%d timelines", len(got))
	}
	if a, b := mustJSON(t, alone), mustJSON(t, got[0]); a != b {
		t.Errorf("the timeline differs beside a flood:\n%s\n%s", a, b)
	}
}

// TestFactBudgetReplays: the same events trim the same facts.
func TestFactBudgetReplays(t *testing.T) {
	run := func() string {
		c := New(Config{MaxFactBytes: 1 << 20})
		for i := range 3 {
			floodStart(c, i, 2048, 512, t0.Add(time.Duration(i)*time.Second))
		}
		return mustJSON(t, c.Flush())
	}
	if a, b := run(), run(); a != b {
		t.Error("two replays of the same events gave different timelines")
	}
}

// trimAll has every tracked start lose what the tiers up to last may take.
func trimAll(c *Correlator, last int) {
	for _, p := range c.sortedPods() {
		plan := p.trimPlan()
		for tier := range last + 1 {
			plan.trim(c, tier, func() bool { return true })
		}
		plan.apply()
	}
}

// TestTrimProcessesKeepsTimeline: dropping every process no rule reads
// (their argv, then themselves) leaves the lifecycle demo's timeline as it
// was, but for the mark.
func TestTrimProcessesKeepsTimeline(t *testing.T) {
	sc := lifecycleDemoNamed(t, "demo")
	want := sc.run(Config{})
	c := New(Config{})
	ready := len(sc.events) - 1
	for _, ev := range sc.events[:ready] {
		c.Handle(ev)
	}
	trimAll(c, tierLive)
	p := c.pods[sc.uid]
	if p.budget.argv == 0 || p.budget.procs == 0 {
		t.Fatalf("nothing trimmed: %+v", p.budget)
	}
	var got []*Timeline
	for _, ev := range sc.events[ready:] {
		got = append(got, c.Handle(ev)...)
	}
	for s := 21; s < 30 && len(got) == 0; s++ {
		got = append(got, c.Handle(&event.Tick{Time: at(float64(s))})...)
	}
	if len(got) != 1 || !slices.Equal(got[0].Marks, []Mark{MarkTrimmed}) || len(got[0].Missing) != 1 {
		t.Fatalf("timelines %+v", got)
	}
	t.Log(got[0].Missing[0])
	got[0].Marks, got[0].Missing = nil, nil
	if a, b := mustJSON(t, want), mustJSON(t, got[0]); a != b {
		t.Errorf("the timeline changed:\n%s\n%s", a, b)
	}
	if st := c.Stats(); st.FactBytes != 0 {
		t.Errorf("%d bytes still counted after the start completed", st.FactBytes)
	}
}

// TestTrimReparents: a process dropped hands its children to its parent:
// a grandchild of the entrypoint that runs the probe's command stays the
// entrypoint's, not a probe run.
func TestTrimReparents(t *testing.T) {
	sc := newScenario(t, "reparent", corev1.PodSpec{Containers: []corev1.Container{
		{Name: "app", Image: "app", ReadinessProbe: execProbe(0, 10, "cat", "/tmp/healthy")}}})
	sc.cond(corev1.PodScheduled, 0)
	sc.update(0.05)
	sc.sandboxUp(0.5)
	sc.runtime(1.05, idMain, "app", 0, 1.0, 1.08, 0, 0)
	sc.exec(1.1, idMain, 10, shimPID, "app")
	sc.fork(1.2, idMain, 11, 10)
	sc.exec(1.21, idMain, 11, 10, "sh", "-c", "cat /tmp/healthy; sleep 100")
	sc.fork(1.3, idMain, 12, 11)
	sc.exec(1.31, idMain, 12, 11, "cat", "/tmp/healthy")
	sc.exit(1.32, idMain, 12, 0)
	sc.exit(1.4, idMain, 11, 0)
	sc.fork(2, idMain, 13, 10)
	sc.fork(2.5, idMain, 14, 13) // 13's child, exec'ing after 13 is gone
	sc.exit(2.6, idMain, 13, 0)
	sc.exec(3, idMain, 14, 13, "cat", "/tmp/healthy")
	sc.exec(5.1, idMain, 50, 880, "cat", "/tmp/healthy") // the kubelet's probe
	sc.exit(5.12, idMain, 50, 0)
	sc.status(false, running("app", idMain, 1.08, true, true))
	sc.cond(corev1.ContainersReady, 6)
	sc.cond(corev1.PodReady, 6)
	sc.update(6)
	want := sc.run(Config{})
	if n := len(findContainer(t, want, "app").Attempts[0].Probes); n != 1 {
		t.Fatalf("%d probe runs without a trim, want 1", n)
	}

	c := New(Config{})
	ready := len(sc.events) - 1
	for _, ev := range sc.events[:ready] {
		c.Handle(ev)
	}
	plan := c.pods[sc.uid].trimPlan()
	plan.trim(c, tierExited, func() bool { return true }) // 11, 12 and 13; 14 lives
	plan.apply()
	if n := c.pods[sc.uid].budget.procs; n != 3 {
		t.Fatalf("%d processes dropped, want 3", n)
	}
	var got []*Timeline
	for _, ev := range sc.events[ready:] {
		got = append(got, c.Handle(ev)...)
	}
	got = append(got, c.Flush()...)
	probes := findContainer(t, got[0], "app").Attempts[0].Probes
	if len(probes) != 1 || !probes[0].Start.Equal(at(5.1)) {
		t.Errorf("probes %+v, want the one at 5.1 s", probes)
	}
}

// execProbeFlap: a readiness probe that fails every second for 10 minutes,
// each run an ExecSync call and its exec session.
func execProbeFlap(t testing.TB) *scenario {
	sc := newScenario(t, "failing-probe", corev1.PodSpec{Containers: []corev1.Container{
		{Name: "app", Image: "app", ReadinessProbe: execProbe(0, 1, "cat", "/tmp/ready")}}})
	sc.cond(corev1.PodScheduled, 0)
	sc.update(0.05)
	sc.sandboxUp(0.5)
	sc.runtime(1.05, idMain, "app", 0, 1.0, 1.08, 0, 0)
	sc.exec(1.1, idMain, 10, shimPID, "app", "--serve")
	sc.status(false, running("app", idMain, 1.08, true, false))
	sc.update(1.2)
	for i := range 600 {
		s := 2 + float64(i)
		sc.call(s, s+0.02, event.CRIExecSync, func(c *event.CRICall) {
			c.ContainerID, c.Cmd, c.Err = idMain, []string{"cat", "/tmp/ready"}, true
		})
		sc.exec(s+0.005, idMain, uint32(100+i), 880, "cat", "/tmp/ready")
		sc.exit(s+0.015, idMain, uint32(100+i), 1)
		if i%60 == 0 {
			sc.ticks(s, s)
		}
	}
	sc.ticks(602, 603)
	return sc
}

// TestFactBudgetProbeRuns: a start that holds more than the budget once its
// processes are gone loses its oldest probe runs but its first ones and
// its latest.
func TestFactBudgetProbeRuns(t *testing.T) {
	c := New(Config{Timeout: time.Hour})
	for _, ev := range execProbeFlap(t).events {
		c.Handle(ev)
	}
	full := c.Flush()[0]
	const budget = 128 << 10
	c = New(Config{Timeout: time.Hour, MaxFactBytes: budget})
	for _, ev := range execProbeFlap(t).events {
		c.Handle(ev)
		if st := c.Stats(); st.FactBytes+st.HeldBytes > budget {
			t.Fatalf("%d bytes held, over %d", st.FactBytes+st.HeldBytes, budget)
		}
	}
	tls := c.Flush()
	if len(tls) != 1 {
		t.Fatalf("%d timelines", len(tls))
	}
	p0, p1 := findContainer(t, full, "app").Attempts[0], findContainer(t, tls[0], "app").Attempts[0]
	n0, n1 := len(p0.Probes)+p0.ProbesOmitted[ProbeReadiness].Attempts, len(p1.Probes)+p1.ProbesOmitted[ProbeReadiness].Attempts
	t.Logf("%d probe runs kept of %d; %s", n1, n0, tls[0].Missing)
	if n0 != 600 || n1 >= n0 || n1 < 50 {
		t.Fatalf("probe runs %d of %d", n1, n0)
	}
	for i := range keepProbeRuns {
		if a, b := p0.Probes[i], p1.Probes[i]; !a.Start.Equal(b.Start) || a.Call == nil || b.Call == nil {
			t.Errorf("probe run %d: %+v, want %+v", i, b, a)
		}
	}
	if a, b := p0.Probes[len(p0.Probes)-1], p1.Probes[len(p1.Probes)-1]; !a.Start.Equal(b.Start) {
		t.Errorf("the latest probe run %v, want %v", b.Start, a.Start)
	}
	if p := c.Stats(); p.Trimmed == 0 || !slices.Contains(tls[0].Marks, MarkTrimmed) ||
		!strings.Contains(strings.Join(tls[0].Missing, ";"), "exec sessions, ExecSync calls and connections") {
		t.Errorf("stats %+v, marks %v, missing %q", p, tls[0].Marks, tls[0].Missing)
	}
}

// TestFactBudgetRefuses: when what the starts hold is all entrypoints, a
// fact that does not fit is refused and counted, an exec taken without its
// argv when that fits, and the budget holds.
func TestFactBudgetRefuses(t *testing.T) {
	const budget = 32 << 10
	c := New(Config{MaxFactBytes: budget, MaxPodBytes: 1 << 20}) // the pods fit theirs (TestPodObjectsBudget)
	big := strings.Repeat("x", 480)
	proc := func(i int) event.Process {
		return event.Process{PID: 1000, PPID: shimPID, ContainerID: fmt.Sprintf("%064x", i), PodUID: fmt.Sprintf("00000000-0000-4000-9000-%012x", i), Scope: event.ScopePod}
	}
	held := func() {
		t.Helper()
		if st := c.Stats(); st.FactBytes+st.HeldBytes > budget {
			t.Fatalf("%d bytes held, over %d", st.FactBytes+st.HeldBytes, budget)
		}
	}
	exec := func(i int) { // with 480 bytes of argv
		c.Handle(&event.ProcessExec{Time: t0.Add(time.Second + time.Millisecond), Process: proc(i), Filename: "/app", Argv: []string{"/app", big}})
	}
	const pods = 160
	for i := range pods { // forked: records without argv
		uid := proc(i).PodUID
		c.Handle(&event.PodUpdate{Time: t0.Add(time.Duration(i) * time.Millisecond), Action: event.PodAdded, Pod: &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i), Namespace: "tenant", UID: types.UID(uid), CreationTimestamp: metav1.NewTime(t0)},
			Spec:       corev1.PodSpec{NodeName: "vm", Containers: []corev1.Container{{Name: "app", Image: "app"}}},
		}})
		c.Handle(&event.ContainerInfo{Time: t0.Add(time.Second), ContainerID: proc(i).ContainerID, PodUID: uid, ContainerName: "app",
			CreatedAt: t0.Add(time.Second), StartedAt: t0.Add(time.Second), State: "running"})
		c.Handle(&event.ProcessFork{Time: t0.Add(time.Second), Process: proc(i)})
		if i < 8 {
			exec(i)
		}
		held()
	}
	for i := 8; i < pods; i++ {
		exec(i)
		held()
	}
	st := c.Stats()
	if st.Trimmed == 0 || st.ArgvTrimmed == 0 {
		t.Fatalf("nothing refused: %+v", st)
	}
	var bare, whole, none int
	tls := c.Flush()
	for _, tl := range tls {
		switch p := findContainer(t, tl, "app").Attempts[0].Process; {
		case p == nil:
			none++
		case p.Argv == nil:
			bare++
			if !strings.Contains(strings.Join(tl.Missing, ";"), "the argv of 1 process that began when nothing more could go") {
				t.Errorf("%s: missing %q", tl.Pod.Name, tl.Missing)
			}
		default:
			whole++
			if slices.Contains(tl.Marks, MarkTrimmed) {
				t.Errorf("%s, which fit: marks %v, missing %q", tl.Pod.Name, tl.Marks, tl.Missing)
			}
		}
	}
	t.Logf("%d entrypoints whole, %d without argv, %d not seen; %+v", whole, bare, none, st)
	if whole == 0 || bare == 0 || whole+bare+none != pods {
		t.Errorf("%d entrypoints whole, %d without argv, %d not seen", whole, bare, none)
	}
	if last := tls[len(tls)-1]; none > 0 && !strings.Contains(strings.Join(last.Missing, ";"), "nothing more could go") {
		t.Errorf("the last start: marks %v, missing %q", last.Marks, last.Missing)
	}
}

// TestFactBudgetHeldEvents: events held for pods not seen yet count in the
// budget, at most MaxOrphanBytes of it, and take room from the starts.
func TestFactBudgetHeldEvents(t *testing.T) {
	const budget = 1 << 20
	c := New(Config{MaxFactBytes: budget})
	if c.cfg.MaxOrphanBytes != budget/2 {
		t.Errorf("MaxOrphanBytes %d, want half the budget", c.cfg.MaxOrphanBytes)
	}
	floodStart(c, 0, 4096, 512, t0)
	for k := range 4096 {
		c.Handle(&event.ProcessExec{Time: t0.Add(10*time.Second + time.Duration(k)*time.Millisecond),
			Process:  event.Process{PID: uint32(k), PPID: 1, ContainerID: "c", PodUID: "00000000-0000-4000-8000-00000000dead", Scope: event.ScopePod},
			Filename: "/x", Argv: []string{"x", strings.Repeat("y", 500)}})
	}
	st := c.Stats()
	if st.FactBytes+st.HeldBytes > budget || st.HeldBytes > budget/2 || st.HeldBytes < budget/4 {
		t.Errorf("starts hold %d, held events %d, of %d", st.FactBytes, st.HeldBytes, budget)
	}
	if c := New(Config{MaxFactBytes: budget, MaxOrphanBytes: 2 * budget}); c.cfg.MaxOrphanBytes != budget {
		t.Errorf("MaxOrphanBytes %d over MaxFactBytes", c.cfg.MaxOrphanBytes)
	}
}

// BenchmarkFactBudgetFlood is the flood: starts that never get
// Ready, each with 4096 processes of 512 bytes of argv, within the default
// budget. It reports what the correlator's heap holds after them, and what
// the budget counts (fact-MiB; the rest of the heap is the maps, the pods
// and Go's size classes).
func BenchmarkFactBudgetFlood(b *testing.B) {
	for _, bc := range []struct {
		starts int
		budget int
	}{{4, 1 << 40}, {64, 0}} {
		name := fmt.Sprintf("starts=%d/budget=default", bc.starts)
		if bc.budget > 0 {
			name = fmt.Sprintf("starts=%d/budget=none", bc.starts)
		}
		b.Run(name, func(b *testing.B) {
			var heap, facts float64
			for b.Loop() {
				base := heapInUse()
				c := New(Config{MaxFactBytes: bc.budget})
				for i := range bc.starts {
					floodStart(c, i, 4096, 512, t0.Add(time.Duration(i)*10*time.Second))
				}
				heap = float64(heapInUse()-base) / (1 << 20)
				st := c.Stats()
				facts = float64(st.FactBytes+st.HeldBytes) / (1 << 20)
				runtime.KeepAlive(c)
			}
			b.ReportMetric(heap, "heap-MiB")
			b.ReportMetric(facts, "fact-MiB")
		})
	}
}

func heapInUse() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// hostilePod is a tenant's pod made as large as the API server takes (1.5
// MiB): 128 containers of long commands, probes and ports, bound to the
// node by spec.nodeName, as the pod watch strips it.
func hostilePod(i int) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("hostile-%d", i), Namespace: "tenant",
		UID: types.UID(fmt.Sprintf("00000000-0000-4000-a000-%012x", i)), CreationTimestamp: metav1.NewTime(t0)}}
	pod.Spec.NodeName = "vm"
	cmd := []string{"sh", "-c", strings.Repeat("c", 1000)}
	for j := range 64 {
		c := corev1.Container{Name: fmt.Sprint("c", j), Image: strings.Repeat("i", 500), Command: cmd, Args: cmd,
			StartupProbe:   &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: cmd}}},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: cmd}}}}
		for k := range 100 {
			c.Ports = append(c.Ports, corev1.ContainerPort{Name: "p", ContainerPort: int32(k + 1)})
		}
		pod.Spec.Containers = append(pod.Spec.Containers, c)
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, c)
	}
	return event.StripPod(pod)
}

// TestPodObjectsBudget: the pods of the starts in progress are held within
// a budget of their own (MaxFactBytes): hostile pods past it are counted,
// not tracked, and the heap they leave stays within it.
func TestPodObjectsBudget(t *testing.T) {
	const budget = 1 << 20
	c := New(Config{MaxPodBytes: budget})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	const pods = 100
	for i := range pods {
		c.Handle(&event.PodUpdate{Time: t0.Add(time.Duration(i) * time.Millisecond), Action: event.PodAdded, Pod: hostilePod(i)})
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	st := c.Stats()
	grew := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("%d hostile pods: %d tracked, %d not; pod objects %d bytes counted, heap grew %d", pods, st.Tracked, st.Overflow, st.PodBytes, grew)
	if st.PodBytes > budget || st.Overflow == 0 || st.Tracked+int(st.Overflow) != pods {
		t.Errorf("stats %+v", st)
	}
	if grew > 2*budget {
		t.Errorf("the heap grew by %d bytes with %d pods tracked, over twice the budget (%d)", grew, st.Tracked, budget)
	}
	// Their counted bytes go back when the starts end.
	for i := range pods {
		c.Handle(&event.PodUpdate{Time: t0.Add(time.Minute), Action: event.PodDeleted, Pod: hostilePod(i)})
	}
	c.Flush()
	if st := c.Stats(); st.PodBytes != 0 || st.Tracked != 0 {
		t.Errorf("after the deletions: %+v", st)
	}
	runtime.KeepAlive(c)
}
