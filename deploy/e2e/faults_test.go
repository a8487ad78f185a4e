//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/readyline/readyline/collector/event"
	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/deploy/e2e/jaeger"
)

// The fault tests break a component every other test relies on (Jaeger,
// kube-apiserver, containerd, the process ring buffer): none is parallel, so
// each runs alone, before the parallel tests resume.

// faultPod is a pod with an init container and an exec readiness probe, the
// shape of an ordinary application's start; no service account token, so
// the kubelet can mount its volumes while the API server is away.
func faultPod(name string, initSleep int) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  terminationGracePeriodSeconds: 0
  automountServiceAccountToken: false
  initContainers:
  - {name: init, image: localhost/busybox:local, imagePullPolicy: Never, command: ["sleep", "%d"]}
  containers:
  - name: app
    image: localhost/busybox:local
    imagePullPolicy: Never
    command: ["sleep", "3600"]
    readinessProbe:
      exec: {command: ["true"]}
      periodSeconds: 1
`, name, initSleep)
}

// startFaultPod starts faultPod name (a 1 s init container) in ns, waits
// until it is Ready and returns readyline's timeline of its start.
func startFaultPod(t *testing.T, ctx context.Context, d *Daemon, ns, name string) *correlator.Timeline {
	t.Helper()
	rec := recordPod(t, ns, name)
	if _, err := env.Apply(ctx, ns, []byte(faultPod(name, 1))); err != nil {
		t.Fatal(err)
	}
	if _, err := rec.WaitFor(ctx, ConditionTrue(corev1.PodReady)); err != nil {
		t.Fatal(err)
	}
	tl, err := d.Timeline(ctx, ns, name, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return tl
}

// counterValue sums the samples of a counter (or gauge) family whose labels
// include all of want.
func counterValue(mfs map[string]*dto.MetricFamily, family string, want map[string]string) float64 {
	var sum float64
	for _, m := range mfs[family].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			if labels[k] != v {
				match = false
			}
		}
		if !match {
			continue
		}
		if c := m.GetCounter(); c != nil {
			sum += c.GetValue()
		} else if g := m.GetGauge(); g != nil {
			sum += g.GetValue()
		}
	}
	return sum
}

// spanIDsOnce fails when a span id appears twice in the trace.
func spanIDsOnce(t *testing.T, tr *jaeger.Trace) {
	t.Helper()
	seen := map[string]int{}
	for _, s := range tr.Spans {
		seen[s.SpanID]++
	}
	for id, n := range seen {
		if n > 1 {
			t.Errorf("trace %s: span %s %d times", tr.TraceID, id, n)
		}
	}
}

// blindGap returns the timeline's blind windows of source, if any.
func blindGap(tl *correlator.Timeline, source string) (correlator.SourceGap, bool) {
	for _, g := range tl.Gaps {
		if g.Source == source {
			return g, true
		}
	}
	return correlator.SourceGap{}, false
}

// TestFaultJaegerOutage stops Jaeger for 60 s while five pods start and
// become Ready, then starts it again: every pod's trace arrives, each span
// once, with one root. Before, the spans of pods finished during the outage
// were lost.
func TestFaultJaegerOutage(t *testing.T) {
	d := readyline(t)
	ctx := testContext(t, 6*time.Minute)
	ns := newNamespace(t)
	failuresBefore := counterValue(scrapeDaemon(t, d), "readyline_export_failures_total", nil)

	if err := env.NodeScript(ctx, "jaeger-down"); err != nil {
		t.Fatal(err)
	}
	down := time.Now()
	jaegerUp := false
	t.Cleanup(func() {
		if !jaegerUp {
			env.NodeScript(context.Background(), "jaeger-up")
		}
	})

	const pods = 5
	uids := make([]string, pods)
	var wg sync.WaitGroup
	for i := range pods {
		name := fmt.Sprintf("outage-%d", i)
		rec := recordPod(t, ns, name)
		if _, err := env.Apply(ctx, ns, []byte(faultPod(name, 1))); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			ev, err := rec.WaitFor(ctx, ConditionTrue(corev1.PodReady))
			if err != nil {
				t.Error(err)
				return
			}
			uids[i] = string(ev.Pod.UID)
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	// Their starts are over: the timelines are finished and waiting.
	for i := range pods {
		if _, err := d.Timeline(ctx, ns, fmt.Sprintf("outage-%d", i), time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	// A hold, not a wait: the outage under test lasts a minute.
	if rest := 60*time.Second - time.Since(down); rest > 0 {
		time.Sleep(rest)
	}
	failures := counterValue(scrapeDaemon(t, d), "readyline_export_failures_total", nil)
	if err := env.NodeScript(ctx, "jaeger-up"); err != nil {
		t.Fatal(err)
	}
	jaegerUp = true
	back := time.Now()
	t.Logf("Jaeger was down %v; export failures meanwhile: %v", back.Sub(down).Round(time.Second), failures-failuresBefore)
	if failures <= failuresBefore {
		t.Errorf("readyline_export_failures_total did not rise while Jaeger was down (%v -> %v): was the outage seen at all?", failuresBefore, failures)
	}

	// All of them within 90 s of Jaeger's return (the exporter's back-off
	// is at most 30 s).
	tctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	for i, uid := range uids {
		tr, err := env.Jaeger.WaitForTrace(tctx, TraceIDFromPodUID(uid), 5, 90*time.Second)
		if err != nil {
			t.Errorf("outage-%d: %v", i, err)
			continue
		}
		spanIDsOnce(t, tr)
		if roots := rootSpans(ctx, t, tr.TraceID); len(roots) != 1 {
			t.Errorf("outage-%d: %d root spans, want 1", i, len(roots))
		}
		t.Logf("outage-%d: trace %s, %d spans, in Jaeger %v after it came back", i, tr.TraceID, len(tr.Spans), time.Since(back).Round(time.Millisecond))
	}
	mfs := scrapeDaemon(t, d)
	if lost := counterValue(mfs, "readyline_events_dropped_total", map[string]string{"source": "trace_exporter"}); lost != 0 {
		t.Errorf("readyline_events_dropped_total{source=trace_exporter} = %v, want 0", lost)
	}
}

// TestFaultAPIServerRestart stops kube-apiserver for 20 s just after a pod
// was scheduled. A slow CNI plugin (5.5 s) makes the sandbox, the init
// container and Ready all happen during the outage: the kubelet's status
// reaches readyline only when the API is back. The start's durations come
// from the kubelet's lastTransitionTime, not from the late observation; the
// timeline says the API lagged; a PodReadyToStartContainers alert at 10 s
// does not fire (the sandbox took ~6 s, it was observed ~20 s late).
func TestFaultAPIServerRestart(t *testing.T) {
	cniBin := filepath.Join(env.NodeDir, "cnibin")
	withoutSharedDaemon(t)
	ctx := testContext(t, 6*time.Minute)
	var ns string
	chainSlowPlugin(t, ctx, cniBin, &ns)
	ns = newNamespace(t)

	t.Setenv("READYLINE_ALERT", correlatorCond+"=10s")
	t.Setenv("READYLINE_CNI_BIN_DIRS", "/usr/lib/cni,"+cniBin)
	d := ownDaemon(t, ctx, "api-outage")

	const name = "api-outage"
	rec := recordPod(t, ns, name)
	if _, err := env.Apply(ctx, ns, []byte(faultPod(name, 2))); err != nil {
		t.Fatal(err)
	}
	// The kubelet has the pod once it reports a status for it.
	if _, err := rec.WaitFor(ctx, func(p *corev1.Pod) bool { return len(p.Status.InitContainerStatuses) > 0 }); err != nil {
		t.Fatal(err)
	}
	outageAt := time.Now()
	if err := env.NodeScript(ctx, "outage", "kube-apiserver", "20"); err != nil {
		t.Fatal(err)
	}
	backAt := time.Now()
	ready, err := rec.WaitFor(ctx, ConditionTrue(corev1.PodReady))
	if err != nil {
		t.Fatal(err)
	}
	readyCond, _ := Condition(ready.Pod, corev1.PodReady)
	t.Logf("API server down %s..%s; the pod Ready at %s (lastTransitionTime), observed at %s",
		outageAt.Format("15:04:05.000"), backAt.Format("15:04:05.000"),
		readyCond.LastTransitionTime.Format("15:04:05"), ready.ObservedAt.Format("15:04:05.000"))
	if !readyCond.LastTransitionTime.Time.Before(backAt) {
		t.Fatalf("the pod became Ready at %s, after the API server was back (%s): the outage did not cover the start",
			readyCond.LastTransitionTime, backAt.Format("15:04:05.000"))
	}

	tl, err := d.Timeline(ctx, ns, name, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	logTimelineSummary(t, tl)
	if tl.Outcome != correlator.OutcomeReady {
		t.Fatalf("outcome %s (%s), want ready", tl.Outcome, tl.Reason)
	}
	// The real start: created .. Ready by the kubelet's clock, to the
	// second (lastTransitionTime is truncated), plus the observation slack.
	created := ready.Pod.CreationTimestamp.Time
	real := readyCond.LastTransitionTime.Time.Sub(created)
	if got := tl.End.Sub(tl.Start); got > real+2*time.Second {
		t.Errorf("the start took %v in readyline, but the kubelet says Ready %v after creation: the outage was counted in", got, real)
	}
	if !slices.Contains(tl.Marks, correlator.MarkAPILag) {
		t.Errorf("marks %v, missing %q: want %s", tl.Marks, tl.Missing, correlator.MarkAPILag)
	}
	for _, c := range tl.Conditions {
		if c.Type == correlatorCond && c.Lag() > 2*time.Second {
			t.Errorf("%s lag %v: a lag made of the outage", c.Type, c.Lag())
		}
	}
	if tl.Sandbox == nil || tl.Sandbox.ID == "" {
		t.Errorf("no sandbox in the timeline: the kernel and CRI facts of the outage were lost")
	}

	// No alert: neither the counter nor an Event. The timeline above is
	// served once the daemon delivered it, after the alerter judged it
	// (cmd/readyline's deliver: alerter.Observe counts an alert, then
	// store.Add), and an Event is only sent for an alert counted: no
	// wait for a late one.
	if n := alertsTotal(scrapeDaemon(t, d)); n > 0 {
		t.Errorf("readyline_alerts_total{alert=%s} = %v after the outage, want 0", correlatorCond, n)
	}
	evs, err := env.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=Slow" + correlatorCond})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs.Items) > 0 {
		t.Errorf("%d Slow%s Events: %s", len(evs.Items), correlatorCond, evs.Items[0].Message)
	}
}

// logTimelineSummary logs a timeline's outcome, conditions and marks.
func logTimelineSummary(t *testing.T, tl *correlator.Timeline) {
	t.Helper()
	t.Logf("%s: %s after %v; marks %v; missing %q; gaps %+v", tl.Pod.Name, tl.Outcome, tl.End.Sub(tl.Start).Round(time.Millisecond), tl.Marks, tl.Missing, tl.Gaps)
	for _, c := range tl.Conditions {
		t.Logf("  %-26s observed %s transition %s lag %v coarse %v", c.Type,
			c.Observed.Format("15:04:05.000"), c.LastTransitionTime.Format("15:04:05"), c.Lag(), c.Coarse)
	}
}

// TestFaultContainerdRestart restarts containerd for 5 s while a pod's init
// container runs: the pod still starts, its trace is whole where readyline
// could see and says which source was blind, and the runtime source
// reconnects.
func TestFaultContainerdRestart(t *testing.T) {
	d := readyline(t)
	ctx := testContext(t, 5*time.Minute)
	ns := newNamespace(t)
	const name = "cri-outage"
	rec := recordPod(t, ns, name)
	if _, err := env.Apply(ctx, ns, []byte(faultPod(name, 6))); err != nil {
		t.Fatal(err)
	}
	if _, err := rec.WaitFor(ctx, func(p *corev1.Pod) bool {
		cs := p.Status.InitContainerStatuses
		return len(cs) > 0 && cs[0].State.Running != nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := env.NodeScript(ctx, "outage", "containerd", "5"); err != nil {
		t.Fatal(err)
	}
	ready, err := rec.WaitFor(ctx, ConditionTrue(corev1.PodReady))
	if err != nil {
		t.Fatal(err)
	}
	tl, err := d.Timeline(ctx, ns, name, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	logTimelineSummary(t, tl)
	if tl.Outcome != correlator.OutcomeReady {
		t.Fatalf("outcome %s (%s), want ready", tl.Outcome, tl.Reason)
	}
	if got, max := tl.End.Sub(tl.Start), ready.ObservedAt.Sub(ready.Pod.CreationTimestamp.Time)+time.Second; got > max || got <= 0 {
		t.Errorf("the start took %v in readyline, want within (0, %v]", got, max)
	}
	var app *correlator.Container
	for i := range tl.Containers {
		if tl.Containers[i].Name == "app" {
			app = &tl.Containers[i]
		}
	}
	if app == nil || len(app.Attempts) == 0 || app.Attempts[0].Started.IsZero() {
		t.Errorf("app's start is not in the timeline: %+v", app)
	}
	if g, ok := blindGap(tl, event.SourceRuntime); !ok {
		t.Errorf("gaps %+v: want containerd's restart named (source %s)", tl.Gaps, event.SourceRuntime)
	} else {
		t.Logf("cri blind: %+v", g.Windows)
	}
	tr, err := env.Jaeger.WaitForTrace(ctx, TraceIDFromPodUID(string(ready.Pod.UID)), 5, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	spanIDsOnce(t, tr)
	// The runtime's stream is back.
	err = wait.PollUntilContextTimeout(ctx, time.Second, 30*time.Second, true, func(context.Context) (bool, error) {
		return counterValue(scrapeDaemon(t, d), "readyline_source_up", map[string]string{"source": event.SourceRuntime}) == 1, nil
	})
	if err != nil {
		t.Errorf("readyline_source_up{source=cri} is not 1 30 s after containerd came back")
	}
}

// TestFaultKubeletImpostor runs a pod whose process is a binary named
// kubelet (comm and exe), given a lower pid than the real kubelet's (the
// order readyline once chose by): readyline stays on the real kubelet, and
// the CRI calls of a pod started afterwards are all in its trace.
func TestFaultKubeletImpostor(t *testing.T) {
	d := readyline(t)
	ctx := testContext(t, 4*time.Minute)
	kubeletPID := nodeKubeletPID(t)
	ns := newNamespace(t)
	const name = "impostor"
	rec := recordPod(t, ns, name)
	if _, err := env.Apply(ctx, ns, []byte(`apiVersion: v1
kind: Pod
metadata: {name: impostor}
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - name: kubelet
    image: localhost/busybox:local
    imagePullPolicy: Never
    command: ["sh", "-c", "cp /bin/busybox /tmp/kubelet; sleep 3; (exec -a sleep /tmp/kubelet 3600) & wait"]
`)); err != nil {
		t.Fatal(err)
	}
	if _, err := rec.WaitFor(ctx, func(p *corev1.Pod) bool { return ContainerRunning(p, "kubelet") }); err != nil {
		t.Fatal(err)
	}
	// PIDs wrap: hand out low pids until the impostor forks (3 s in).
	low := lowPIDBase(t, kubeletPID)
	stop := time.Now().Add(8 * time.Second)
	var impostor int
	for time.Now().Before(stop) && impostor == 0 {
		os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(low)), 0)
		time.Sleep(20 * time.Millisecond)
		for _, pid := range pidsNamed("kubelet") {
			if pid != kubeletPID {
				impostor = pid
			}
		}
	}
	if impostor == 0 {
		t.Fatal("the impostor named kubelet did not appear")
	}
	exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", impostor))
	t.Logf("the real kubelet is pid %d; the impostor pid %d (exe %s)", kubeletPID, impostor, exe)
	if impostor > kubeletPID {
		t.Logf("the impostor's pid is above the kubelet's: this run checks the other rules, not the pid order")
	}
	// readyline looks at every process named kubelet at its full rescans
	// (every 30 s while the kubelet it probes runs) and says, at Debug, the
	// ones it passes over: once it has looked at the impostor, a pod whose
	// CRI calls must be there.
	passedOver := fmt.Sprintf(`"process":"%d: `, impostor)
	if err := wait.PollUntilContextTimeout(ctx, time.Second, 45*time.Second, true, func(context.Context) (bool, error) {
		log, _ := os.ReadFile(d.Log)
		for _, line := range strings.Split(string(log), "\n") {
			if strings.Contains(line, `"a process named kubelet is not the kubelet"`) && strings.Contains(line, passedOver) {
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("readyline did not look at the impostor (pid %d) within 45 s, a full rescan and more: %v; see %s", impostor, err, d.Log)
	}
	mfs := scrapeDaemon(t, d)
	if up := counterValue(mfs, "readyline_source_up", map[string]string{"source": event.SourceKubeletCalls}); up != 1 {
		t.Errorf("readyline_source_up{source=cri_calls} = %v with the impostor running, want 1", up)
	}
	log, _ := os.ReadFile(d.Log)
	if strings.Contains(string(log), fmt.Sprintf("pid=%d", impostor)) && strings.Contains(string(log), "re-attaching") {
		t.Errorf("readyline re-attached to the impostor (pid %d): see %s", impostor, d.Log)
	}

	const victim = "after-impostor"
	tl := startFaultPod(t, ctx, d, ns, victim)
	if tl.Sandbox == nil || tl.Sandbox.Call == nil {
		t.Errorf("%s: no RunPodSandbox call in the timeline", victim)
	}
	for _, c := range tl.Containers {
		var methods []string
		if len(c.Attempts) > 0 {
			for _, call := range c.Attempts[0].Calls {
				methods = append(methods, string(call.Method.Short()))
			}
		}
		if !slices.Contains(methods, "CreateContainer") || !slices.Contains(methods, "StartContainer") {
			t.Errorf("%s: container %s has CRI calls %v, want CreateContainer and StartContainer", victim, c.Name, methods)
		}
	}
}

// nodeKubeletPID is the pid node.sh recorded for the kubelet.
func nodeKubeletPID(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(env.NodeDir, "run", "kubelet.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.Fields(string(b))[0])
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// pidsNamed lists the processes whose comm is name.
func pidsNamed(name string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if comm, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm")); err == nil && strings.TrimSpace(string(comm)) == name {
			pids = append(pids, pid)
		}
	}
	return pids
}

// lowPIDBase returns a pid below below with 64 free pids after it.
func lowPIDBase(t *testing.T, below int) int {
	t.Helper()
	used := map[int]bool{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			used[pid] = true
		}
	}
	for base := 300; base+64 < below; base += 16 {
		free := true
		for p := base + 1; p <= base+64; p++ {
			if used[p] {
				free = false
				break
			}
		}
		if free {
			return base
		}
	}
	t.Logf("no 64 free pids below the kubelet's %d", below)
	return below
}

// TestFaultProcessRingFlood runs readyline with the smallest process ring
// buffer (4 KiB) while a pod execs /bin/true in four loops, and starts a pod
// meanwhile: the kernel's drops show in readyline_events_dropped_total and
// readyline_source_up, and the pod's timeline says the process source was
// losing records during its start.
func TestFaultProcessRingFlood(t *testing.T) {
	withoutSharedDaemon(t)
	ctx := testContext(t, 4*time.Minute)
	t.Setenv("READYLINE_RING_BUFFER_SIZE", "4096")
	d := ownDaemon(t, ctx, "ring-flood")
	ns := newNamespace(t)
	frec := recordPod(t, ns, "flood")
	if _, err := env.Apply(ctx, ns, []byte(`apiVersion: v1
kind: Pod
metadata: {name: flood}
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - name: flood
    image: localhost/busybox:local
    imagePullPolicy: Never
    command: ["sh", "-c", "for i in 1 2 3 4; do (while :; do /bin/true; done) & done; wait"]
`)); err != nil {
		t.Fatal(err)
	}
	if _, err := frec.WaitFor(ctx, func(p *corev1.Pod) bool { return ContainerRunning(p, "flood") }); err != nil {
		t.Fatal(err)
	}
	// The flood overflows the ring before the victim starts: its drops
	// counted, not a sleep that may end before they begin.
	ringFull := map[string]string{"source": event.SourceProcess, "reason": event.ReasonRingFull}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return counterValue(scrapeDaemon(t, d), "readyline_events_dropped_total", ringFull) > 0, nil
	}); err != nil {
		t.Fatalf("no ring_full drops counted a minute into an exec flood with a 4 KiB ring: %v", err)
	}
	// The flood overflows the ring now and then, when the daemon's reader
	// falls behind: it may keep up for the victim's whole start on a quiet
	// machine. Stopping the daemon for 300 ms once the victim exists makes
	// the kernel drop records within its start, for sure.
	const victim = "during-flood"
	stalled, seen := make(chan error, 1), recordPod(t, ns, victim)
	go func() {
		_, err := seen.WaitFor(ctx, func(*corev1.Pod) bool { return true })
		if err == nil {
			if err = syscall.Kill(d.PID, syscall.SIGSTOP); err == nil {
				time.Sleep(300 * time.Millisecond)
				err = syscall.Kill(d.PID, syscall.SIGCONT)
			}
		}
		stalled <- err
	}()
	tl := startFaultPod(t, ctx, d, ns, victim)
	if err := <-stalled; err != nil {
		t.Fatalf("stalling the daemon during the victim's start: %v", err)
	}
	logTimelineSummary(t, tl)
	mfs := scrapeDaemon(t, d)
	drops := counterValue(mfs, "readyline_events_dropped_total", ringFull)
	t.Logf("readyline_events_dropped_total{source=process,reason=ring_full} = %v", drops)
	if drops == 0 {
		t.Errorf("no ring_full drops counted for the process source under a 4 KiB ring and an exec flood")
	}
	if g, ok := blindGap(tl, event.SourceProcess); !ok {
		t.Errorf("gaps %+v: want the process source's losses named", tl.Gaps)
	} else {
		t.Logf("process blind: %+v", g.Windows)
	}
	if err := env.Client.CoreV1().Pods(ns).Delete(ctx, "flood", metav1.DeleteOptions{}); err != nil {
		t.Errorf("deleting the flood: %v", err)
	}
}
