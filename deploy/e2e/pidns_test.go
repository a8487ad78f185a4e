//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/readyline/readyline/deploy/e2e/jaeger"
)

// TestPIDNamespaceNode runs the node the way kind does, in a PID namespace
// of its own (NODE_PIDNS=1), and readyline in that namespace: as the
// DaemonSet (deploy/local, a hostPID pod), then as `readyline run` entered
// into it from the host (which needs nothing but the working tree). readyline
// must number pids as the node does, find the kubelet in the node's /proc,
// and still trace the seed's lifecycle-demo. Then the node goes back to its
// normal mode and the host must be clean.
//
// Not parallel: it restarts the node twice (sequential tests run before
// the parallel ones are released).
func TestPIDNamespaceNode(t *testing.T) {
	ctx := testContext(t, 15*time.Minute)
	resume := pauseSharedDaemon(t)
	start := time.Now()
	t.Cleanup(func() { backToNormalMode(t, resume) })
	if err := env.NodeUp(ctx, true); err != nil {
		t.Fatal(err)
	}
	t.Logf("the node switched into its own PID namespace in %v", time.Since(start).Round(time.Millisecond))

	kubeletInside := checkKubeletInNodeNamespace(t)
	// A subtest: its DaemonSet is deleted when it ends, even if it fails.
	t.Run("daemonset", func(t *testing.T) { daemonSetInNode(t, kubeletInside) })
	readylineRunInNode(t, kubeletInside)
}

// readylineRunInNode: `readyline run` entered into the node's PID and mount
// namespaces from the host, what a hostPID pod on a kind node sees.
func readylineRunInNode(t *testing.T, kubeletInside int) {
	ctx := testContext(t, 5*time.Minute)
	wrap, err := env.InNode()
	if err != nil {
		t.Fatal(err)
	}
	d, err := env.StartDaemonWith(ctx, "readyline-pidns", DaemonOptions{Wrap: wrap})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := d.Stop(); err != nil {
			t.Errorf("readyline in the node's namespace: %v (log %s)", err, d.Log)
		}
	}()
	if pids, err := NSpids(d.PID); err != nil || len(pids) != 2 {
		t.Errorf("readyline (host pid %d) NSpid %v, %v: want it one level down, in the node's namespace", d.PID, pids, err)
	}
	log, err := os.ReadFile(d.Log)
	if err != nil {
		t.Fatal(err)
	}
	if probed := probedKubeletPIDs(string(log)); len(probed) != 1 || probed[0] != kubeletInside {
		t.Errorf("readyline probed the kubelet as pids %v, want [%d] (its pid in the node's namespace); log %s", probed, kubeletInside, d.Log)
	}

	ns := newNamespace(t)
	rec := recordPod(t, ns, "lifecycle-demo")
	applyExample(t, ns, "lifecycle-demo.yaml")
	ev, err := rec.WaitFor(ctx, ConditionTrue(corev1.PodReady))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := env.Jaeger.WaitForTrace(ctx, TraceIDFromPodUID(string(ev.Pod.UID)), 15, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("lifecycle-demo Ready; trace %s with %d spans", tr.TraceID, len(tr.Spans))
	st := newSpanTree(t, tr)
	if got := tagString(st.one("pod.startup"), "readyline.outcome"); got != "ready" {
		t.Errorf("outcome %q, want ready", got)
	}
	st.one("runtime.v1.RuntimeService/RunPodSandbox")
	sh := st.child(st.one("init init-regular"), "process sh")
	if code := tagString(sh, "process.exit.code"); code != "0" {
		t.Errorf("init-regular's process exit code %q, want 0", code)
	}
	checkRunningProcessSpan(t, st, st.one("container nginx"))
}

// daemonSetInNode: the DaemonSet of deploy/local on this node. Its pod is
// hostPID, which here is the node's PID namespace, as on kind.
func daemonSetInNode(t *testing.T, kubeletInside int) {
	ctx := testContext(t, 10*time.Minute)
	// The node's containerd started afresh: the image must be imported again.
	start := time.Now()
	if err := env.BuildNodeImage(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("make node-image: %v", time.Since(start).Round(100*time.Millisecond))
	d := deployReadyline(t, "deploy/local")
	checkDaemonLog(t, d)
	log, err := d.Logs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if probed := probedKubeletPIDs(log); len(probed) != 1 || probed[0] != kubeletInside {
		t.Errorf("the DaemonSet's readyline probed the kubelet as pids %v, want [%d] (its pid in the node's namespace)", probed, kubeletInside)
	}
	pod, tr, _ := traceFromDaemonSet(t, d)
	checkDaemonSetTrace(t, d, pod, tr)
	st := newSpanTree(t, tr)
	checkRunningProcessSpan(t, st, st.one("container nginx"))
}

// checkKubeletInNodeNamespace asserts that the kubelet node.sh started runs
// in the node's PID namespace under another pid than on the host, and
// returns its pid there.
func checkKubeletInNodeNamespace(t *testing.T) int {
	t.Helper()
	kubelet, ok := env.RecordedPID("kubelet")
	init, ok2 := env.RecordedPID("node-init")
	if !ok || !ok2 {
		t.Fatalf("kubelet (%v) or node-init (%v) is not running", ok, ok2)
	}
	host, _ := PIDNamespace(os.Getpid())
	node, err := PIDNamespace(init)
	if err != nil {
		t.Fatal(err)
	}
	if k, _ := PIDNamespace(kubelet); k != node || node == host {
		t.Fatalf("kubelet in %s, node-init in %s, the host is %s", k, node, host)
	}
	pids, err := NSpids(kubelet)
	if err != nil {
		t.Fatal(err)
	}
	if len(pids) != 2 || pids[0] != kubelet || pids[1] == kubelet {
		t.Fatalf("kubelet NSpid %v: want host pid %d and another pid in the node's namespace", pids, kubelet)
	}
	// The same process, seen from inside as the kubelet's pid there.
	exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", kubelet))
	wrap, err := env.InNode()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(wrap[0], append(wrap[1:], "readlink", fmt.Sprintf("/proc/%d/exe", pids[1]))...).Output()
	if err != nil || strings.TrimSpace(string(out)) != exe {
		t.Fatalf("inside the node, pid %d runs %q (%v), want %s", pids[1], out, err, exe)
	}
	t.Logf("node %s: node-init is pid %d on the host; the kubelet is pid %d on the host and %d in the node", node, init, kubelet, pids[1])
	return pids[1]
}

// probedKubeletPIDs returns the pids readyline's (JSON) log says it
// attached the CRI probes to.
func probedKubeletPIDs(log string) []int {
	var pids []int
	for _, line := range strings.Split(log, "\n") {
		var rec struct {
			Msg string `json:"msg"`
			PID int    `json:"pid"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "probing the kubelet's CRI client" {
			pids = append(pids, rec.PID)
		}
	}
	return pids
}

// checkRunningProcessSpan asserts that the process span under a container
// that still runs carries the pid the node's namespace gives that process
// (the container's own namespace is one level further down), not its host pid.
func checkRunningProcessSpan(t *testing.T, st *spanTree, container jaeger.Span) {
	t.Helper()
	var proc jaeger.Span
	for _, s := range st.tr.Spans {
		if strings.HasPrefix(s.OperationName, "process ") && st.parent[s.SpanID] == container.SpanID {
			proc = s
		}
	}
	if proc.SpanID == "" {
		t.Errorf("no process span under %q", container.OperationName)
		return
	}
	pid, err := strconv.Atoi(tagString(proc, "process.pid"))
	if err != nil {
		t.Errorf("%q: process.pid %q", proc.OperationName, tagString(proc, "process.pid"))
		return
	}
	init, _ := env.RecordedPID("node-init")
	host, comm := hostPIDOf(init, pid)
	if host == 0 || "process "+comm != proc.OperationName {
		t.Errorf("%q has process.pid %d, but that pid in the node's namespace is %q", proc.OperationName, pid, comm)
		return
	}
	if host == pid {
		t.Errorf("%q has process.pid %d, its host pid", proc.OperationName, pid)
	}
	t.Logf("%q: process.pid %d, host pid %d", proc.OperationName, pid, host)
}

// hostPIDOf finds pid of the node's PID namespace (whose init is the host's
// pid init) in the node's /proc, reached through init's root, and returns
// its host pid (0 if none) and command name.
func hostPIDOf(init, pid int) (int, string) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/root/proc/%d/stat", init, pid))
	if err != nil {
		return 0, ""
	}
	comm, start := statCommStart(stat)
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		if c, s := statCommStart(b); c != comm || s != start {
			continue
		}
		// The node's namespace is one level below the host's.
		if pids, err := NSpids(p); err == nil && len(pids) > 1 && pids[1] == pid {
			return p, comm
		}
	}
	return 0, comm
}

// statCommStart returns the command name and start time (field 22) of a
// /proc/<pid>/stat.
func statCommStart(stat []byte) (string, string) {
	open, end := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
	if open < 0 || end < open {
		return "", ""
	}
	fields := strings.Fields(string(stat[end+1:]))
	if len(fields) < 20 {
		return "", ""
	}
	return string(stat[open+1 : end]), fields[19]
}

// pauseSharedDaemon stops the trace tests' shared daemon if one of them
// started it: it would trace the same pods into the same traces, and it
// cannot follow the node's restarts (new CA). The returned function starts
// it again, against the node back in its normal mode.
func pauseSharedDaemon(t *testing.T) (resume func()) {
	t.Helper()
	if daemonRun == nil {
		return func() {}
	}
	if err := daemonRun.Stop(); err != nil {
		t.Errorf("stopping the shared readyline: %v", err)
	}
	return func() {
		ctx, cancel := suiteContext(5 * time.Minute)
		defer cancel()
		daemonRun, daemonErr = env.StartDaemon(ctx, "readyline-after-pidns")
		if daemonErr != nil {
			t.Errorf("restarting the shared readyline: %v", daemonErr)
		}
	}
}

// backToNormalMode stops the node, asserts the host is clean, and starts
// it again in its normal mode for the other tests.
func backToNormalMode(t *testing.T, resume func()) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	// The baseline node.sh recorded before the node started; down moves it.
	before, err := LoadNodeBaseline(env.NodeDir)
	if err != nil {
		t.Error(err)
	}
	if err := env.NodeScript(ctx, "down"); err != nil { // down ends with check-clean
		t.Error(err)
	}
	if before != nil {
		problems, err := env.CheckHostClean(ctx, before)
		// Jaeger is not the node's and keeps running for the other tests.
		problems = slices.DeleteFunc(problems, func(p string) bool { return strings.Contains(p, "jaeger") })
		if err != nil || len(problems) > 0 {
			t.Errorf("the node in its own PID namespace left on the host: %v %v", problems, err)
		}
	}
	if _, alive := env.RecordedPID("node-init"); alive {
		t.Error("node-init is still running after node.sh down")
	}
	if err := env.NodeUp(ctx, false); err != nil {
		t.Fatalf("the node did not come back in its normal mode: %v", err)
	}
	if _, alive := env.RecordedPID("node-init"); alive {
		t.Error("node-init runs after NODE_PIDNS=0 node.sh up")
	}
	t.Logf("the node is back in its normal mode in %v", time.Since(start).Round(time.Millisecond))
	resume()
}
