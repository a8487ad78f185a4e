package correlator

import (
	"fmt"
	"runtime"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/readyline/readyline/collector/event"
)

// The per-event costs of a busy node (issue 28): 110 pods Ready, each
// probed. The events are shaped as the sources emit them (collector's
// ProcessSource after attribution, its KubeletCallSource, its PodWatch after
// event.StripPod); decoding and attributing a process event is measured in
// collector (BenchmarkProcessEventPath). Event time moves on
// by perEventGap per event, so the correlator's expiry pass (every
// expireEvery of event time: every pod, orphan and index entry) is paid in
// its share, once every 100 events; the daemon's ticks are left out.

// busyNodePods is the pods of a full node (the kubelet's default maxPods).
const busyNodePods = 110

// perEventGap is the event time between two events in these benchmarks.
const perEventGap = time.Millisecond

// The budgets each benchmark asserts, in CPU ns/op (meter) and allocs/op:
// about 4-5x the CPU time it measured on the 2-core development VM
// (-benchtime 1s -count 3, nice 19, the machine shared with other work),
// so that a busy machine passes and a regression to a slow path (a
// timeline derived per event, a scan of every pod per event) fails; and
// for allocations, no more than one per event beyond what was measured,
// a regression to building strings or records per event failing.
const (
	budgetProcessReadyNs       = 1200 // measured 210-290 CPU ns per exec/exit pair
	budgetProcessReadyAllocs   = 1    // measured 0
	budgetProcessStartNs       = 7000 // measured 1470-1670 (GC included: records are kept)
	budgetProcessStartAllocs   = 4    // measured 2 (the process record, its share of map growth)
	budgetProbeRunNs           = 2200 // measured 450-500 per call + exec + exit
	budgetProbeRunAllocs       = 2    // measured 0
	budgetPodUpdateNs          = 5500 // measured 980-1370
	budgetPodUpdateAllocs      = 6    // measured 3 (the pod's probe ports, its spec order)
	budgetExpireStartingNs     = 4500 // measured 890 (41 600 when every pass sorted every start)
	budgetExpireStartingAllocs = 1
)

// probedPod is the start of a pod like most on a busy node: one container
// with an exec readiness probe and an HTTP liveness probe, its own pod IP,
// ids and pids, starting off seconds after t0.
type probedPod struct {
	sc           *scenario
	sandbox, cid string
	appPID       uint32
}

func newProbedPod(b *testing.B, i int, off float64) *probedPod {
	sc := newScenario(b, fmt.Sprintf("web-%d", i), corev1.PodSpec{Containers: []corev1.Container{{
		Name: "app", Image: "registry.example/web:1.2",
		Ports:          []corev1.ContainerPort{{ContainerPort: 8080}},
		ReadinessProbe: execProbe(0, 10, "test", "-f", "/tmp/ready"),
		LivenessProbe:  httpProbeOn(0, 10, intstr.FromInt32(8080)),
	}}})
	pp := &probedPod{sc: sc, sandbox: fmt.Sprintf("5b%062x", i), cid: fmt.Sprintf("3c%062x", i), appPID: uint32(10000 + 100*i)}
	sc.pod.Status.HostIP = "10.0.0.1"
	sc.pod.Status.HostIPs = []corev1.HostIP{{IP: "10.0.0.1"}}
	sc.cond(corev1.PodScheduled, off)
	sc.update(off + 0.05)
	sc.exec(off+0.55, pp.sandbox, pp.appPID, shimPID, "pause")
	sc.runtime(off+0.6, pp.sandbox, "", 0, off+0.5, 0, 0, 0)
	ip := fmt.Sprintf("10.244.%d.%d", i/200, 2+i%200)
	sc.events[len(sc.events)-1].(*event.ContainerInfo).PodIP = ip
	sc.pod.Status.PodIP = ip
	sc.pod.Status.PodIPs = []corev1.PodIP{{IP: ip}}
	sc.cond(corev1.PodReadyToStartContainers, off+0.6)
	sc.update(off + 0.7)
	sc.runtime(off+1.05, pp.cid, "app", 0, off+1.0, off+1.08, 0, 0)
	sc.exec(off+1.1, pp.cid, pp.appPID+1, shimPID, "web", "--port", "8080")
	sc.status(false, running("app", pp.cid, off+1.08, true, false))
	sc.update(off + 1.2)
	pp.probe(off+1.5, pp.appPID+2)
	sc.status(false, running("app", pp.cid, off+1.08, true, true))
	sc.cond(corev1.ContainersReady, off+1.6)
	sc.cond(corev1.PodReady, off+1.6)
	sc.update(off + 1.6)
	return pp
}

// probe appends one run of the readiness probe at s: what the node
// reports of `runc exec`, as recorded on a kind node
// (testdata/recordings/e2e-flap.jsonl): the kubelet's ExecSync call, by
// container id only, and inside it the exec and exit of the probe's
// command in the container's cgroup. runc's own processes run in the
// shim's cgroup, outside the pod: the process source reports no pod for
// them, and with PodsOnly (the daemon's default) does not emit them.
func (pp *probedPod) probe(s float64, pid uint32) {
	cid := pp.cid
	pp.sc.exec(s+0.03, cid, pid, pid-1, "test", "-f", "/tmp/ready")
	pp.sc.exit(s+0.031, cid, pid, 0)
	pp.sc.call(s, s+0.06, event.CRIExecSync, func(c *event.CRICall) {
		c.ContainerID, c.Cmd = cid, []string{"test", "-f", "/tmp/ready"}
	})
}

// busyNode is a correlator that has traced the starts of n probed pods to
// Ready and now follows their lives (after.go), at event time now.
type busyNode struct {
	c    *Correlator
	pods []*probedPod
	now  time.Time
}

func newBusyNode(b *testing.B, n int) *busyNode {
	var all []event.Event
	node := &busyNode{c: New(Config{})}
	for i := range n {
		pp := newProbedPod(b, i, 0.1*float64(i))
		node.pods = append(node.pods, pp)
		all = append(all, pp.sc.events...)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].When().Before(all[j].When()) })
	for _, ev := range all {
		node.c.Handle(ev)
	}
	node.now = all[len(all)-1].When()
	for range 3 { // past every grace period
		node.now = node.now.Add(time.Second)
		node.c.Handle(&event.Tick{Time: node.now})
	}
	if st := node.c.Stats(); st.Timelines != uint64(n) || st.Tracked != 0 {
		b.Fatalf("%d timelines, %d starts in progress, want %d and 0", st.Timelines, st.Tracked, n)
	}
	for _, pp := range node.pods {
		if _, ok := node.c.After(pp.sc.uid); !ok {
			b.Fatalf("pod %s is not followed after Ready", pp.sc.pod.Name)
		}
	}
	return node
}

// next is the time of the next event.
func (node *busyNode) next() time.Time {
	node.now = node.now.Add(perEventGap)
	return node.now
}

// execExit hands the correlator a process's exec and then its exit, each
// stamped with the node's next event time.
func (node *busyNode) execExit(exec *event.ProcessExec, exit *event.ProcessExit) {
	exec.Time = node.next()
	node.c.Handle(exec)
	exit.Time = node.next()
	node.c.Handle(exit)
}

// assertBudget fails b when its cost per op exceeds the budget.
func assertBudget(b *testing.B, ns float64, allocs uint64, maxNs float64, maxAllocs uint64) {
	b.Helper()
	if ns > maxNs {
		b.Errorf("%.0f ns/op, budget %.0f", ns, maxNs)
	}
	if allocs > maxAllocs {
		b.Errorf("%d allocs/op, budget %d", allocs, maxAllocs)
	}
}

// meter runs a benchmark's loop and asserts its budget on its figures per
// op: allocations as testing.B counts them (it does not hand its count to
// the benchmark), leaving out what setup runs with the timer stopped, and
// the process's CPU time (reported as cpu-ns/op; wall time where the
// platform has no rusage): on a machine shared with other work the wall
// time per op is the machine's load as much as the code's.
type meter struct {
	b        *testing.B
	excluded uint64
	cpuOut   time.Duration
}

// measure runs op b.N times with allocations reported, then asserts the
// budget on CPU ns/op and allocs/op.
func (m *meter) measure(maxNs float64, maxAllocs uint64, op func(i int)) {
	b := m.b
	b.Helper()
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cpu0, haveCPU := processCPU()
	i := 0
	for b.Loop() {
		op(i)
		i++
	}
	cpu1, _ := processCPU()
	runtime.ReadMemStats(&after)
	ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	if haveCPU {
		ns = float64((cpu1 - cpu0 - m.cpuOut).Nanoseconds()) / float64(b.N)
		b.ReportMetric(ns, "cpu-ns/op")
	}
	assertBudget(b, ns, (after.Mallocs-before.Mallocs-m.excluded)/uint64(b.N), maxNs, maxAllocs)
}

// untimed runs setup within a measured loop, its time, CPU time and
// allocations left out.
func (m *meter) untimed(setup func()) {
	m.b.StopTimer()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cpu0, _ := processCPU()
	setup()
	cpu1, _ := processCPU()
	runtime.ReadMemStats(&after)
	m.excluded += after.Mallocs - before.Mallocs
	m.cpuOut += cpu1 - cpu0
	m.b.StartTimer()
}

func measure(b *testing.B, maxNs float64, maxAllocs uint64, op func(i int)) {
	b.Helper()
	(&meter{b: b}).measure(maxNs, maxAllocs, op)
}

// BenchmarkProcessEvent measures one exec/exit pair of a container
// process (a shell command an app runs) through Correlator.Handle, one op
// being the pair; events come round the node's pods in turn.
//
// ready: the pod's start is over; its life is followed (after.go): the
// steady state of a busy node. starting: the pod's start is in progress,
// so the process is kept for its timeline (within the fact budget); the
// start is begun afresh every 256 pairs (timer stopped), as a start keeps
// at most hundreds of processes. Left out: decoding and attribution (in
// collector), and deriving the timeline at the start's end.
func BenchmarkProcessEvent(b *testing.B) {
	b.Run("ready", func(b *testing.B) {
		node := newBusyNode(b, busyNodePods)
		exec := &event.ProcessExec{Process: event.Process{Scope: event.ScopePod, Comm: "sh", CgroupID: 8252},
			Filename: "/bin/sh", Argv: []string{"sh", "-c", "date >> /tmp/log"}}
		exit := &event.ProcessExit{Process: event.Process{Scope: event.ScopePod, Comm: "sh", CgroupID: 8252}, Filename: "/bin/sh"}
		measure(b, budgetProcessReadyNs, budgetProcessReadyAllocs, func(i int) {
			pp := node.pods[i%len(node.pods)]
			pid := uint32(200000 + i%100000)
			exec.Process.PID, exec.PPID, exec.ContainerID, exec.PodUID = pid, pp.appPID+1, pp.cid, pp.sc.uid
			exit.Process = exec.Process
			node.execExit(exec, exit)
		})
		if st := node.c.Stats(); st.Tracked != 0 || st.Orphaned != 0 || st.Held != 0 {
			b.Errorf("stats %+v: the events went elsewhere than the pods' lives", st)
		}
	})
	b.Run("starting", func(b *testing.B) {
		node := newBusyNode(b, busyNodePods)
		pp := newProbedPod(b, busyNodePods, 0)
		// The start in progress: its pod seen, its container running.
		var begin []event.Event
		for _, ev := range pp.sc.events[:len(pp.sc.events)-4] { // up to the first probe
			if pu, ok := ev.(*event.PodUpdate); ok {
				pu.Action = event.PodUpdated
			}
			begin = append(begin, ev)
		}
		start := func() {
			if p := node.c.pods[pp.sc.uid]; p != nil {
				delete(node.c.pods, p.uid)
				node.c.forgetFacts(p)
			}
			for _, ev := range begin {
				setTime(ev, node.next())
				node.c.Handle(ev)
			}
			if node.c.pods[pp.sc.uid] == nil {
				b.Fatal("the start is not in progress")
			}
		}
		start()
		exec := &event.ProcessExec{Process: event.Process{Scope: event.ScopePod, Comm: "sh", CgroupID: 8252,
			ContainerID: pp.cid, PodUID: pp.sc.uid, PPID: pp.appPID + 1}, Filename: "/bin/sh", Argv: []string{"sh", "-c", "date >> /tmp/log"}}
		exit := &event.ProcessExit{Process: exec.Process, Filename: "/bin/sh"}
		m := &meter{b: b}
		m.measure(budgetProcessStartNs, budgetProcessStartAllocs, func(i int) {
			if i > 0 && i%256 == 0 {
				m.untimed(start)
			}
			exec.Process.PID = uint32(200000 + i%256)
			exit.Process.PID = exec.Process.PID
			node.execExit(exec, exit)
		})
		if p := node.c.pods[pp.sc.uid]; p == nil || p.nprocs < 2 {
			b.Errorf("the start in progress kept no process")
		}
	})
}

// setTime moves an event of a pod's start to t (the benchmarks replay a
// start at the node's current time).
func setTime(ev event.Event, t time.Time) {
	switch e := ev.(type) {
	case *event.PodUpdate:
		e.Time = t
	case *event.ProcessExec:
		e.Time = t
	case *event.ProcessExit:
		e.Time = t
	case *event.ContainerInfo:
		e.Time = t
	case *event.CRICall:
		e.Time, e.End = t, t
	}
}

// BenchmarkProbeRun measures one run of an exec readiness probe of a
// Ready pod through Correlator.Handle, one op being its three events as
// the node reports them (probedPod.probe): the kubelet's ExecSync call
// (routed by its container id through the owner index; the pod's life
// keeps the latest calls) and the probe command's exec and exit. Pods take
// turns. Left out: decoding (collector: BenchmarkProcessEventPath for the
// exec and exit; the CRI call's record is not benchmarked), and runc's own
// processes, which the process source does not emit.
func BenchmarkProbeRun(b *testing.B) {
	node := newBusyNode(b, busyNodePods)
	// Calls are kept by the pods' lives (after.go, maxAfterCalls each):
	// the events are reused only once every pod has forgotten them.
	calls := make([]*event.CRICall, (maxAfterCalls+1)*busyNodePods)
	for i := range calls {
		calls[i] = &event.CRICall{Method: event.CRIExecSync, PID: 4242, Cmd: []string{"test", "-f", "/tmp/ready"}}
	}
	exec := &event.ProcessExec{Process: event.Process{Scope: event.ScopePod, Comm: "test", CgroupID: 8252},
		Filename: "/bin/test", Argv: []string{"test", "-f", "/tmp/ready"}}
	exit := &event.ProcessExit{Process: event.Process{Scope: event.ScopePod, Comm: "test", CgroupID: 8252}, Filename: "/bin/test"}
	measure(b, budgetProbeRunNs, budgetProbeRunAllocs, func(i int) {
		pp := node.pods[i%len(node.pods)]
		call := calls[i%len(calls)]
		call.ContainerID = pp.cid
		call.Time = node.next()
		exec.Process.PID, exec.PPID, exec.ContainerID, exec.PodUID = uint32(300000+i%100000), 299999, pp.cid, pp.sc.uid
		exit.Process = exec.Process
		node.execExit(exec, exit)
		call.End = node.next()
		node.c.Handle(call)
	})
	if st := node.c.Stats(); st.Tracked != 0 || st.Orphaned != 0 || st.Held != 0 {
		b.Errorf("stats %+v: the probes went elsewhere than the pods' lives", st)
	}
	if af, _ := node.c.After(node.pods[0].sc.uid); !af.Ready {
		b.Errorf("pod 0 not Ready after its probes")
	}
}

// BenchmarkPodUpdate measures one update of a Ready pod from the pod watch
// through Correlator.Handle: its status as stripped (event.StripPod) with
// nothing new in it (a resourceVersion bump: the kubelet's status writes,
// a label or an annotation the start does not read). Pods take turns.
// Left out: the watch's decoding and StripPod itself (collector/event:
// BenchmarkStripPod), which the informer runs before.
func BenchmarkPodUpdate(b *testing.B) {
	node := newBusyNode(b, busyNodePods)
	updates := make([]*event.PodUpdate, len(node.pods))
	for i, pp := range node.pods {
		pod := event.StripPod(pp.sc.pod.DeepCopy())
		updates[i] = &event.PodUpdate{Action: event.PodUpdated, Pod: pod}
	}
	measure(b, budgetPodUpdateNs, budgetPodUpdateAllocs, func(i int) {
		u := updates[i%len(updates)]
		u.Time = node.next()
		node.c.Handle(u)
	})
	if st := node.c.Stats(); st.Tracked != 0 || len(node.c.recoveries) != 0 {
		b.Errorf("stats %+v: an update with nothing new changed a pod", st)
	}
}

// BenchmarkExpireStarting is one expiry pass (expireEvery of event time)
// while a churning node has busyNodePods starts in progress, none of them
// due: what a round of 100 starts pays ten times a second and more (a
// drained mark looks at once when a start has its outcome).
func BenchmarkExpireStarting(b *testing.B) {
	c := New(Config{})
	var now time.Time
	for i := range busyNodePods {
		sc := newScenario(b, fmt.Sprintf("churn-%d", i), corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}})
		sc.cond(corev1.PodScheduled, 0)
		sc.update(0.01 * float64(i))
		for _, ev := range sc.events {
			c.Handle(ev)
			now = ev.When()
		}
	}
	if st := c.Stats(); st.Tracked != busyNodePods {
		b.Fatalf("%d starts in progress, want %d", st.Tracked, busyNodePods)
	}
	measure(b, budgetExpireStartingNs, budgetExpireStartingAllocs, func(int) {
		now = now.Add(expireEvery)
		c.Handle(&event.Tick{Time: now})
	})
}
