//go:build e2e

// Package kind holds the end-to-end tests of readyline on a two-node kind
// cluster (deploy/kind: control plane + worker), brought up by `make
// test-kind` (make kind-up) and deleted after it (make kind-down, whose
// check-clean fails the run if anything of ours is left on the host). They
// skip unless READYLINE_E2E_KIND=1, and fail when it is set and the cluster
// is not there.
//
// Each node's readyline must trace that node's pods only: kind's nodes share
// one kernel, so every readyline's eBPF programs see both nodes' processes,
// kubelets and connections.
package kind

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/readyline/readyline/deploy/e2e"
	"github.com/readyline/readyline/deploy/e2e/jaeger"
)

const (
	controlPlane = "readyline-control-plane"
	worker       = "readyline-worker"
	demoNS       = "readyline-demo"
)

var repoRoot string

func TestMain(m *testing.M) {
	if os.Getenv("READYLINE_E2E_KIND") != "1" {
		fmt.Println("skipping the kind tests: READYLINE_E2E_KIND=1 runs them on the cluster of make kind-up (make test-kind does both)")
		os.Exit(0)
	}
	root, err := e2e.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		os.Exit(1)
	}
	repoRoot = root
	if _, err := kindSh(context.Background(), nil, "kubectl", "get", "node", controlPlane, worker); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: the kind cluster is not up (make kind-up):", err)
		os.Exit(1)
	}
	if err := recordEvents(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: turning on readyline's recording:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// recordDir and recordName are where each readyline records, in its own
// mount namespace: its recording directory (--record-dir's default) and
// the file READYLINE_RECORD names there.
const (
	recordDir  = "/var/lib/readyline/recordings"
	recordName = "events.jsonl"
)

// recordEvents makes each readyline record every event it takes in
// (READYLINE_RECORD, on an emptyDir): what a node's readyline saw is then
// checked for the other node's pods, sandboxes and containers.
func recordEvents(ctx context.Context) error {
	path := recordName
	have, err := kindSh(ctx, nil, "kubectl", "-n", "readyline", "get", "daemonset", "readyline", "-o",
		`jsonpath={.spec.template.spec.containers[0].env[?(@.name=="READYLINE_RECORD")].value}`)
	if err != nil || have == path {
		return err
	}
	if have != "" { // another recording: start again from deploy/kind
		if _, err := kindSh(ctx, nil, "kubectl", "-n", "readyline", "delete", "daemonset", "readyline", "--wait=true"); err != nil {
			return err
		}
		if _, err := kindSh(ctx, nil, "kubectl", "apply", "-k", filepath.Join(repoRoot, "deploy", "kind")); err != nil {
			return err
		}
	}
	patch := `[{"op":"add","path":"/spec/template/spec/volumes/-","value":{"name":"e2e-record","emptyDir":{}}},
{"op":"add","path":"/spec/template/spec/containers/0/volumeMounts/-","value":{"name":"e2e-record","mountPath":"` + recordDir + `"}},
{"op":"add","path":"/spec/template/spec/containers/0/env/-","value":{"name":"READYLINE_RECORD","value":"` + path + `"}}]`
	if _, err := kindSh(ctx, nil, "kubectl", "-n", "readyline", "patch", "daemonset", "readyline", "--type=json", "-p", patch); err != nil {
		return err
	}
	_, err = kindSh(ctx, nil, "kubectl", "-n", "readyline", "rollout", "status", "daemonset/readyline", "--timeout=180s")
	return err
}

// recorded returns what node's readyline recorded (read from the node, through
// the daemon's /proc/PID/root). The daemon is the oldest process named
// readyline there: an explain the test ran through kubectl exec is one too,
// and may still be exiting when kubectl has returned (its /proc entry then
// vanishes under cat; this failed CI once).
func recorded(t *testing.T, node string) string {
	t.Helper()
	out, err := kindSh(context.Background(), nil, "docker", "exec", node, "sh", "-c",
		"cat /proc/$(pgrep -o -x readyline)/root"+recordDir+"/"+recordName)
	if err != nil || out == "" {
		t.Fatalf("reading %s's recording: %v", node, err)
	}
	return out
}

// idsOf returns node's pod UIDs (and static pods' config hashes), sandbox
// and container ids.
func idsOf(t *testing.T, node string) []string {
	t.Helper()
	ids := strings.Fields(kubectl(t, "get", "pods", "-A", "--field-selector", "spec.nodeName="+node, "-o",
		`jsonpath={.items[*].metadata.uid} {.items[*].metadata.annotations.kubernetes\.io/config\.hash}`))
	out, err := kindSh(context.Background(), nil, "docker", "exec", node, "sh", "-c", "crictl pods -q; crictl ps -aq")
	if err != nil {
		t.Fatal(err)
	}
	return append(ids, strings.Fields(out)...)
}

// noneOfOther fails when node's recording names anything of the other node.
func noneOfOther(t *testing.T, node, other string) {
	t.Helper()
	rec, ids := recorded(t, node), idsOf(t, other)
	for _, id := range ids {
		if strings.Contains(rec, id) {
			t.Errorf("%s's readyline recorded %s of %s", node, id, other)
		}
	}
	t.Logf("%s's recording (%d lines) names none of %s's %d pod, sandbox and container ids",
		node, strings.Count(rec, "\n"), other, len(ids))
}

// kindSh runs deploy/kind/kind.sh with args (stdin if not nil) and returns its stdout.
func kindSh(ctx context.Context, stdin []byte, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(repoRoot, "deploy", "kind", "kind.sh"), args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("kind.sh %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := kindSh(context.Background(), nil, append([]string{"kubectl"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// eventually retries f every second until it returns nil or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v: %v", what, timeout, err)
		}
		time.Sleep(time.Second)
	}
}

// readylinePod returns the name of the readyline pod on node.
func readylinePod(t *testing.T, node string) string {
	t.Helper()
	name := strings.TrimSpace(kubectl(t, "-n", "readyline", "get", "pod", "-l", "app.kubernetes.io/name=readyline",
		"--field-selector", "spec.nodeName="+node, "-o", "jsonpath={.items[0].metadata.name}"))
	if name == "" {
		t.Fatalf("no readyline pod on %s", node)
	}
	return name
}

// explain runs `readyline explain args...` in node's readyline pod.
func explain(ctx context.Context, t *testing.T, node string, args ...string) (string, error) {
	return kindSh(ctx, nil, append([]string{"kubectl", "-n", "readyline", "exec", readylinePod(t, node), "--", "/readyline", "explain"}, args...)...)
}

// drops returns node's readyline_events_dropped_total series (source/reason -> value).
func drops(t *testing.T, node string) map[string]float64 {
	t.Helper()
	out := kubectl(t, "get", "--raw", "/api/v1/namespaces/readyline/pods/"+readylinePod(t, node)+":9464/proxy/metrics")
	m := map[string]float64{}
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "readyline_events_dropped_total{") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		m[line[len("readyline_events_dropped_total"):i]] = v
	}
	if len(m) == 0 {
		t.Fatalf("%s: no readyline_events_dropped_total in /metrics", node)
	}
	return m
}

// metric returns the sum of node's readyline series named name.
func metric(t *testing.T, node, name string) float64 {
	t.Helper()
	out := kubectl(t, "get", "--raw", "/api/v1/namespaces/readyline/pods/"+readylinePod(t, node)+":9464/proxy/metrics")
	var sum float64
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, name+"{") || strings.HasPrefix(line, name+" ") {
			v, _ := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			sum += v
		}
	}
	return sum
}

// grown returns the series of after that grew since before.
func grown(before, after map[string]float64) map[string]float64 {
	g := map[string]float64{}
	for k, v := range after {
		if v > before[k] {
			g[k] = v - before[k]
		}
	}
	return g
}

// clusterJaeger reads the cluster's Jaeger through the API server's
// service proxy.
var clusterJaeger = jaeger.NewClientVia(func(ctx context.Context, path string) ([]byte, error) {
	out, err := kindSh(ctx, nil, "kubectl", "get", "--raw", "/api/v1/namespaces/readyline/services/jaeger:16686/proxy"+path)
	return []byte(out), err
})

// prometheus GETs path of the cluster's Prometheus API (deploy/kind/prometheus)
// through the API server's service proxy and decodes its data into v.
func prometheus(ctx context.Context, path string, v any) error {
	out, err := kindSh(ctx, nil, "kubectl", "get", "--raw", "/api/v1/namespaces/readyline/services/prometheus:9090/proxy/api/v1/"+path)
	if err != nil {
		return err
	}
	var resp struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal([]byte(out), &resp); err != nil {
		return fmt.Errorf("prometheus %s: %w", path, err)
	}
	if resp.Status != "success" {
		return fmt.Errorf("prometheus %s: %s %s", path, resp.Status, resp.Error)
	}
	return json.Unmarshal(resp.Data, v)
}

// promAlert is one alert of Prometheus' /api/v1/alerts.
type promAlert struct {
	Labels map[string]string `json:"labels"`
	State  string            `json:"state"` // pending (expression true, within for), firing
	Value  string            `json:"value"`
}

func processTag(t *jaeger.Trace, s jaeger.Span, key string) string {
	for _, kv := range t.Processes[s.ProcessID].Tags {
		if kv.Key == key {
			return fmt.Sprint(kv.Value)
		}
	}
	return ""
}

func podUID(t *testing.T, ns, name string) string {
	t.Helper()
	return strings.TrimSpace(kubectl(t, "-n", ns, "get", "pod", name, "-o", "jsonpath={.metadata.uid}"))
}

func waitReady(t *testing.T, ns string, pods ...string) {
	t.Helper()
	args := append([]string{"-n", ns, "wait", "--for=condition=Ready", "--timeout=180s"}, prefixed("pod/", pods)...)
	kubectl(t, args...)
}

func prefixed(p string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = p + n
	}
	return out
}

func TestDaemonSetReadyOnBothNodes(t *testing.T) {
	nodes := strings.Fields(kubectl(t, "get", "nodes", "-o", "jsonpath={.items[*].metadata.name}"))
	if len(nodes) != 2 {
		t.Fatalf("nodes %v, want %s and %s", nodes, controlPlane, worker)
	}
	eventually(t, 3*time.Minute, "DaemonSet readyline Ready on both nodes", func() error {
		out := kubectl(t, "-n", "readyline", "get", "daemonset", "readyline", "-o",
			"jsonpath={.status.desiredNumberScheduled} {.status.numberReady} {.status.updatedNumberScheduled}")
		if f := strings.Fields(out); len(f) != 3 || f[0] != "2" || f[1] != "2" || f[2] != "2" {
			return fmt.Errorf("desired/ready/updated %q, want 2 2 2", out)
		}
		return nil
	})
	for _, n := range []string{controlPlane, worker} {
		t.Logf("readyline on %s: %s", n, readylinePod(t, n))
	}
}

// TestIdleNodesDropNothing watches both readylines for 45 s of an idle
// cluster: the control plane's static pods, CoreDNS and readyline itself
// running, their probes every few seconds. Nothing of it may be dropped: a
// kubelet probing a hostNetwork pod on 127.0.0.1 (kube-apiserver, etcd,
// the scheduler) is that pod's probe, not an event of an unknown pod, and
// the other node's processes and connections are never counted here.
//
// The cluster has just come up when it runs: what the pods kind-up started
// beside readyline (CoreDNS, Jaeger, Prometheus) did before readyline's pod
// watch listed them is counted, rightly, once it has waited its orphan TTL
// (30 s) for a pod that never came. So it first waits until both readylines
// have run for 90 s and then for 20 s with no drop on either node (up to
// 4 min), and logs what came meanwhile.
func TestIdleNodesDropNothing(t *testing.T) {
	nodes := []string{controlPlane, worker}
	snapshot := func() map[string]map[string]float64 {
		m := map[string]map[string]float64{}
		for _, n := range nodes {
			m[n] = drops(t, n)
		}
		return m
	}
	first := snapshot()
	for _, n := range nodes {
		out := kubectl(t, "-n", "readyline", "get", "pod", readylinePod(t, n), "-o", "jsonpath={.status.containerStatuses[0].state.running.startedAt}")
		started, err := time.Parse(time.RFC3339, strings.TrimSpace(out))
		if err != nil {
			t.Fatalf("%s's readyline: startedAt %q: %v", n, out, err)
		}
		if wait := time.Until(started.Add(90 * time.Second)); wait > 0 {
			t.Logf("%s's readyline started at %s: waiting %v for its startup's orphans to expire", n, started.Format(time.TimeOnly), wait.Round(time.Second))
			time.Sleep(wait)
		}
	}
	before := snapshot()
	for settle := time.Now().Add(4 * time.Minute); ; {
		time.Sleep(20 * time.Second)
		now, quiet := snapshot(), true
		for _, n := range nodes {
			quiet = quiet && len(grown(before[n], now[n])) == 0
		}
		before = now
		if quiet {
			break
		}
		if time.Now().After(settle) {
			t.Fatalf("readyline kept counting drops for 3 min after the cluster came up")
		}
	}
	for _, n := range nodes {
		if g := grown(first[n], before[n]); len(g) > 0 {
			t.Logf("%s: drops while the cluster settled: %v", n, g)
		}
	}
	time.Sleep(45 * time.Second)
	for _, n := range nodes {
		if g := grown(before[n], drops(t, n)); len(g) > 0 {
			t.Errorf("%s's readyline counted drops in 45 s of an idle cluster: %v", n, g)
		}
	}
}

// TestSeedPodsOnWorker starts lifecycle-demo and poststart-demo on the worker
// (deploy/kind/demo-local) and checks that the worker's readyline traces
// them completely and alone: the control plane's readyline has no timeline of
// them, recorded nothing of the worker, and counts no drop while they start.
func TestSeedPodsOnWorker(t *testing.T) {
	ctx := context.Background()
	kindSh(ctx, nil, "kubectl", "delete", "namespace", demoNS, "--wait=true", "--timeout=120s", "--ignore-not-found")
	cpBefore, wBefore := drops(t, controlPlane), drops(t, worker)
	manifest := kubectl(t, "kustomize", "--load-restrictor=LoadRestrictionsNone", filepath.Join(repoRoot, "deploy", "kind", "demo-local"))
	if _, err := kindSh(ctx, []byte(manifest), "kubectl", "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	pods := []string{"lifecycle-demo", "poststart-demo"}
	waitReady(t, demoNS, pods...)
	wantSpans := map[string][]string{
		"lifecycle-demo": {"pod.sandbox", "cni bridge", "cni host-local", "runtime.v1.RuntimeService/RunPodSandbox",
			"runtime.v1.RuntimeService/CreateContainer", "runtime.v1.RuntimeService/StartContainer",
			"init init-regular", "sidecar init-sidecar", "container nginx", "process sh", "process httpd",
			"startupProbe", "readinessProbe", "condition PodReadyToStartContainers", "condition Ready"},
		"poststart-demo": {"pod.sandbox", "cni bridge", "runtime.v1.RuntimeService/CreateContainer", "container main", "process sh", "condition Ready"},
	}
	workerPod := readylinePod(t, worker)
	for _, p := range pods {
		if node := strings.TrimSpace(kubectl(t, "-n", demoNS, "get", "pod", p, "-o", "jsonpath={.spec.nodeName}")); node != worker {
			t.Fatalf("%s runs on %q, want %s", p, node, worker)
		}
		var out string
		eventually(t, 90*time.Second, "the worker's timeline of "+p, func() (err error) {
			out, err = explain(ctx, t, worker, demoNS+"/"+p)
			return err
		})
		if !strings.Contains(out, "Ready in") || !strings.Contains(out, "node "+worker) {
			t.Errorf("%s: the worker's waterfall does not say Ready on %s:\n%s", p, worker, out)
		}
		id := e2e.TraceIDFromPodUID(podUID(t, demoNS, p))
		var tr *jaeger.Trace
		eventually(t, 90*time.Second, "the trace of "+p+" in Jaeger", func() (err error) {
			tr, err = clusterJaeger.Trace(ctx, id)
			if err == nil {
				for _, want := range wantSpans[p] {
					if _, ok := tr.SpanByName(want); !ok {
						return fmt.Errorf("no span %q yet", want)
					}
				}
			}
			return err
		})
		for _, s := range tr.Spans {
			if n := processTag(tr, s, "k8s.node.name"); n != worker {
				t.Errorf("%s: span %q from k8s.node.name %q, want %s", p, s.OperationName, n, worker)
				break
			}
			if id := processTag(tr, s, "service.instance.id"); id != "readyline."+workerPod+".readyline" {
				t.Errorf("%s: span %q from service.instance.id %q, want the worker's readyline", p, s.OperationName, id)
				break
			}
		}
		t.Logf("%s: %d spans in trace %s, all from %s (%s)", p, len(tr.Spans), id, worker, workerPod)
		if out, err := explain(ctx, t, controlPlane, demoNS+"/"+p); err == nil {
			t.Errorf("the control plane's readyline has a timeline of %s, which ran on the worker:\n%s", p, out)
		}
	}
	list, err := explain(ctx, t, controlPlane)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(list, demoNS+"/") {
		t.Errorf("the control plane's readyline lists the worker's pods:\n%s", list)
	}
	t.Run("kubectl-readyline", func(t *testing.T) { testPlugin(t, ctx, pods) })
	noneOfOther(t, controlPlane, worker)
	noDropsBut(t, controlPlane, cpBefore)
	noDropsBut(t, worker, wBefore)
}

// TestStaticPodThroughMirror restarts the control plane's kube-scheduler
// (its manifest out of /etc/kubernetes/manifests and back): the control
// plane's readyline traces the static pod under its mirror pod's UID, and the
// worker's neither lists it, records anything of the control plane, nor
// counts drops.
func TestStaticPodThroughMirror(t *testing.T) {
	ctx := context.Background()
	const pod = "kube-scheduler-" + controlPlane
	wBefore := drops(t, worker)
	old := podUID(t, "kube-system", pod)
	if _, err := kindSh(ctx, nil, "docker", "exec", controlPlane, "sh", "-c",
		"mv /etc/kubernetes/manifests/kube-scheduler.yaml /kind/ && sleep 8 && mv /kind/kube-scheduler.yaml /etc/kubernetes/manifests/"); err != nil {
		t.Fatal(err)
	}
	var uid string
	eventually(t, 2*time.Minute, "a new mirror pod of kube-scheduler", func() error {
		out, err := kindSh(ctx, nil, "kubectl", "-n", "kube-system", "get", "pod", pod, "-o", "jsonpath={.metadata.uid}")
		if uid = strings.TrimSpace(out); err != nil || uid == "" || uid == old {
			return fmt.Errorf("uid %q (old %s): %v", uid, old, err)
		}
		return nil
	})
	waitReady(t, "kube-system", pod)
	var out string
	eventually(t, 90*time.Second, "the control plane's timeline of "+pod, func() (err error) {
		out, err = explain(ctx, t, controlPlane, "kube-system/"+pod)
		if err == nil && !strings.Contains(out, "uid "+uid) {
			err = fmt.Errorf("timeline of another incarnation:\n%s", out)
		}
		return err
	})
	if !strings.Contains(out, "static pod (config hash") || !strings.Contains(out, "CreateContainer") {
		t.Errorf("the control plane's waterfall of %s is not a static pod's with CRI calls:\n%s", pod, out)
	}
	// kubeadm's probes: httpGet on host 127.0.0.1, a named port; the kernel
	// sees the kubelet's connections, so the probes are observed, not
	// inferred from the status.
	if !probeObserved(out) {
		t.Errorf("the control plane's waterfall of %s has no probe seen in the kernel:\n%s", pod, out)
	}
	eventually(t, 90*time.Second, "the trace of "+pod, func() error {
		_, err := clusterJaeger.Trace(ctx, e2e.TraceIDFromPodUID(uid))
		return err
	})
	list, err := explain(ctx, t, worker)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(list, "kube-system/") {
		t.Errorf("the worker's readyline lists the control plane's pods:\n%s", list)
	}
	noneOfOther(t, worker, controlPlane)
	noDropsBut(t, worker, wBefore)
}

// noDropsBut fails when node's readyline counted drops since before, of any
// reason but unknown_pod. That one is left to the recordings (noneOfOther):
// on this machine it grows on the control plane while the cluster is idle
// (~2/s: events of its own static pods, started before the daemon, under
// config hashes that never join their mirror pods) and by one or two on a
// node whose pods were deleted just before its readyline started (their
// teardown); neither comes from the other node.
func noDropsBut(t *testing.T, node string, before map[string]float64) {
	t.Helper()
	g := grown(before, drops(t, node))
	if n := g[`{reason="unknown_pod",source="correlator"}`]; n > 0 {
		t.Logf("%s: readyline_events_dropped_total unknown_pod +%v (this node's own, see noDropsBut)", node, n)
	}
	delete(g, `{reason="unknown_pod",source="correlator"}`)
	if len(g) > 0 {
		t.Errorf("%s's readyline counted drops: %v", node, g)
	}
}

// TestCapabilities replaces the DaemonSet with deploy/kind/capabilities'
// (CAP_BPF, CAP_PERFMON, CAP_DAC_READ_SEARCH, CAP_SYS_PTRACE instead of
// privileged) and checks that the worker's readyline still traces a pod
// with its CRI calls and processes; deploy/kind is put back after.
func TestCapabilities(t *testing.T) {
	ctx := context.Background()
	apply := func(dir string) {
		t.Helper()
		kubectl(t, "apply", "-k", filepath.Join(repoRoot, "deploy", "kind", dir))
		kubectl(t, "-n", "readyline", "rollout", "status", "daemonset/readyline", "--timeout=180s")
	}
	t.Cleanup(func() { apply(".") })
	apply("capabilities")
	if priv := kubectl(t, "-n", "readyline", "get", "pod", readylinePod(t, worker), "-o",
		"jsonpath={.spec.containers[0].securityContext.privileged}"); priv == "true" {
		t.Fatalf("the capabilities DaemonSet's pod is privileged")
	}
	const ns = "readyline-caps"
	kindSh(ctx, nil, "kubectl", "delete", "namespace", ns, "--wait=true", "--timeout=120s", "--ignore-not-found")
	t.Cleanup(func() { kindSh(ctx, nil, "kubectl", "delete", "namespace", ns, "--wait=false") })
	manifest := kubectl(t, "kustomize", "--load-restrictor=LoadRestrictionsNone", filepath.Join(repoRoot, "deploy", "kind", "demo-local"))
	manifest = strings.ReplaceAll(manifest, demoNS, ns)
	if _, err := kindSh(ctx, []byte(manifest), "kubectl", "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	waitReady(t, ns, "poststart-demo")
	var out string
	eventually(t, 90*time.Second, "the worker's timeline of poststart-demo", func() (err error) {
		out, err = explain(ctx, t, worker, ns+"/poststart-demo")
		return err
	})
	for _, want := range []string{"Ready in", "CreateContainer", "StartContainer", "cni bridge", "process sh", "postStart"} {
		if !strings.Contains(out, want) {
			t.Errorf("the capabilities readyline's waterfall lacks %q:\n%s", want, out)
		}
	}
}

// TestSlowCNIAlert chains deploy/e2e/testdata/slowcni (5.5 s on ADD) after
// podnet's plugins on the worker, in a conflist that sorts first: a pod
// started there takes longer than the DaemonSet's
// PodReadyToStartContainers=5s, and the worker's readyline raises the
// Warning Event SlowPodReadyToStartContainers on it and counts it in
// readyline_alerts_total; the cluster's Prometheus, scraping readyline as
// deploy/alerts expects, finds the expression of
// ReadylineSlowPodReadyToStartContainers true for the pod's namespace.
//
// A fast pod starts in the namespace first: Prometheus' rate() needs a
// series to exist before the observation it counts, and readyline's
// histogram series of a namespace is born with the first pod start it
// measures there (deploy/alerts/README.md says so).
func TestSlowCNIAlert(t *testing.T) {
	ctx := context.Background()
	const pod, plugin = "slow-1", "e2e-slow"
	// A namespace of its own: Prometheus keeps a namespace's series (and
	// the alert they raise) for the rule's 10 minutes.
	ns := fmt.Sprintf("readyline-slow-%d", time.Now().Unix()%100000)
	dir := t.TempDir()
	build := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(dir, plugin), "./deploy/e2e/testdata/slowcni")
	build.Dir, build.Env = repoRoot, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the slow CNI plugin: %v\n%s", err, out)
	}
	podManifest := func(name string) []byte {
		return []byte(fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata:
  name: %[1]s
---
apiVersion: v1
kind: Pod
metadata:
  name: %[2]s
  namespace: %[1]s
spec:
  nodeName: %[3]s
  containers:
    - name: main
      image: localhost/busybox:local
      imagePullPolicy: Never
      command: ["sh", "-c", "sleep 3600"]
`, ns, name, worker))
	}
	t.Cleanup(func() {
		// The pod's CNI DEL runs the slow plugin too: remove it after the pod.
		kindSh(ctx, nil, "kubectl", "delete", "namespace", ns, "--wait=true", "--timeout=120s")
		kindSh(ctx, nil, "docker", "exec", worker, "rm", "-f", "/etc/cni/net.d/00-e2e-slow.conflist", "/opt/cni/bin/"+plugin)
	})
	if _, err := kindSh(ctx, podManifest("fast-1"), "kubectl", "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	waitReady(t, ns, "fast-1")
	countQuery := "query=" + url.QueryEscape(`sum(readyline_pod_ready_to_start_containers_seconds_count{namespace="`+ns+`"})`)
	eventually(t, 90*time.Second, "Prometheus scraping the worker's readyline_pod_ready_to_start_containers_seconds of "+ns, func() error {
		var v struct {
			Result []struct {
				Value []any `json:"value"`
			} `json:"result"`
		}
		if err := prometheus(ctx, "query?"+countQuery, &v); err != nil {
			return err
		}
		if len(v.Result) == 0 {
			return fmt.Errorf("no series yet")
		}
		return nil
	})
	conf, err := kindSh(ctx, nil, "docker", "exec", worker, "cat", "/etc/cni/net.d/10-podnet.conflist")
	if err != nil {
		t.Fatal(err)
	}
	var list map[string]any
	if err := json.Unmarshal([]byte(conf), &list); err != nil {
		t.Fatal(err)
	}
	plugins, _ := list["plugins"].([]any)
	list["plugins"] = append(plugins, map[string]any{"type": plugin, "sleep": "5500ms"})
	slow, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kindSh(ctx, nil, "docker", "exec", worker, "mkdir", "-p", "/opt/cni/bin"); err != nil {
		t.Fatal(err)
	}
	if _, err := kindSh(ctx, nil, "docker", "cp", filepath.Join(dir, plugin), worker+":/opt/cni/bin/"+plugin); err != nil {
		t.Fatal(err)
	}
	if _, err := kindSh(ctx, slow, "docker", "exec", "-i", worker, "sh", "-c", "cat >/etc/cni/net.d/00-e2e-slow.conflist"); err != nil {
		t.Fatal(err)
	}
	// containerd reloads /etc/cni/net.d on change, in its own time: a pod
	// started before it did gets the fast network and no alert.
	eventually(t, 60*time.Second, "containerd loading 00-e2e-slow.conflist", func() error {
		info, err := kindSh(ctx, nil, "docker", "exec", worker, "crictl", "info")
		if err != nil {
			return err
		}
		if !strings.Contains(info, plugin) { // its cniconfig lists the loaded plugins
			return fmt.Errorf("crictl info names no %s plugin yet", plugin)
		}
		return nil
	})
	before := metric(t, worker, "readyline_alerts_total")
	if _, err := kindSh(ctx, podManifest(pod), "kubectl", "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	waitReady(t, ns, pod)
	t.Cleanup(func() {
		if t.Failed() {
			out, err := explain(ctx, t, worker, ns+"/"+pod)
			t.Logf("the worker's timeline of %s (%v):\n%s", pod, err, out)
			// What the worker's daemon did about it: its alerts' counters
			// and its log lines of the pod or of alerts.
			metrics := kubectl(t, "get", "--raw", "/api/v1/namespaces/readyline/pods/"+readylinePod(t, worker)+":9464/proxy/metrics")
			for _, l := range strings.Split(metrics, "\n") {
				if strings.HasPrefix(l, "readyline_alerts") || (strings.HasPrefix(l, "readyline_dropped") && strings.Contains(l, "alert")) {
					t.Logf("worker metric: %s", l)
				}
			}
			logs, _ := kindSh(ctx, nil, "kubectl", "-n", "readyline", "logs", readylinePod(t, worker), "--tail=2000")
			for _, l := range strings.Split(logs, "\n") {
				if strings.Contains(l, pod) || strings.Contains(strings.ToLower(l), "alert") || strings.Contains(l, "pod watch") {
					t.Logf("worker log: %.400s", l)
				}
			}
		}
	})
	var msg string
	eventually(t, 90*time.Second, "the Warning Event SlowPodReadyToStartContainers on "+pod, func() error {
		msg = strings.TrimSpace(kubectl(t, "-n", ns, "get", "events", "--field-selector",
			"involvedObject.name="+pod+",reason=SlowPodReadyToStartContainers", "-o", "jsonpath={.items[*].message}"))
		if msg == "" {
			return fmt.Errorf("no Event yet")
		}
		return nil
	})
	t.Logf("Event: %s", msg)
	if !strings.Contains(msg, plugin) {
		t.Errorf("the Event does not name the slow plugin %s: %q", plugin, msg)
	}
	if after := metric(t, worker, "readyline_alerts_total"); after < before+1 {
		t.Errorf("the worker's readyline_alerts_total went %v -> %v, want +1", before, after)
	}
	const rule = "ReadylineSlowPodReadyToStartContainers"
	var alerts []promAlert
	eventually(t, 90*time.Second, "Prometheus' "+rule+" pending or firing for namespace "+ns, func() error {
		var v struct {
			Alerts []promAlert `json:"alerts"`
		}
		if err := prometheus(ctx, "alerts", &v); err != nil {
			return err
		}
		alerts = v.Alerts
		for _, a := range alerts {
			if a.Labels["alertname"] == rule && a.Labels["namespace"] == ns && (a.State == "pending" || a.State == "firing") {
				t.Logf("Prometheus: %s{namespace=%s} %s, p99 %ss", rule, ns, a.State, a.Value)
				return nil
			}
		}
		return fmt.Errorf("alerts: %+v", alerts)
	})
	for _, a := range alerts {
		if a.Labels["alertname"] == "ReadylineNodeSlowPodReadyToStartContainers" {
			t.Logf("Prometheus: %v %s, p90 %ss", a.Labels, a.State, a.Value)
		}
	}
	// From the slow bucket to the trace: the Event names it, and the
	// histogram's exemplar in Prometheus is that trace's id.
	traceID := e2e.TraceIDFromPodUID(podUID(t, ns, pod))
	if !strings.Contains(msg, "Trace "+traceID) {
		t.Errorf("the Event does not name the pod's trace %s: %q", traceID, msg)
	}
	series := `readyline_pod_ready_to_start_containers_seconds_bucket{namespace="` + ns + `"}`
	eventually(t, 60*time.Second, "Prometheus' exemplar of "+series, func() error {
		var v []struct {
			Exemplars []struct {
				Labels map[string]string `json:"labels"`
				Value  string            `json:"value"`
			} `json:"exemplars"`
		}
		q := url.Values{"query": {series}, "start": {fmt.Sprint(time.Now().Add(-10 * time.Minute).Unix())},
			"end": {fmt.Sprint(time.Now().Add(time.Minute).Unix())}}
		if err := prometheus(ctx, "query_exemplars?"+q.Encode(), &v); err != nil {
			return err
		}
		for _, s := range v {
			for _, e := range s.Exemplars {
				if e2e.SameID(e.Labels["trace_id"], traceID) {
					t.Logf("Prometheus: exemplar %v value %ss", e.Labels, e.Value)
					return nil
				}
			}
		}
		return fmt.Errorf("no exemplar with trace_id %s: %+v", traceID, v)
	})
}

// probeObserved: a waterfall has a probe row drawn from connections the
// kernel saw (● ok or ✗ failed), not only from the pod's status (◇).
func probeObserved(waterfall string) bool {
	for line := range strings.Lines(waterfall) {
		if strings.Contains(line, "Probe ×") && strings.ContainsAny(line, "●✗") {
			return true
		}
	}
	return false
}

// testPlugin reads the seed pods' starts as a user does, with kubectl
// readyline as a user with deploy/plugin-rbac's roles only: explain finds each
// pod's node and asks the worker's readyline, list merges both nodes' (the
// user's namespace only: the daemons ask the API server what the user may
// get), and explain --web serves the worker's waterfall page as the user.
func testPlugin(t *testing.T, ctx context.Context, pods []string) {
	cmd := exec.CommandContext(ctx, "make", "--no-print-directory", "plugin")
	cmd.Dir = repoRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make plugin: %v\n%s", err, out)
	}
	plugin := filepath.Join(repoRoot, "bin", "kubectl-readyline")
	kubeconfig := pluginUser(t, ctx)
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, plugin, append(args, "--kubeconfig", kubeconfig)...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("kubectl readyline %s: %v\n%s%s", strings.Join(args, " "), err, out, stderrOf(err))
		}
		return string(out)
	}
	for _, p := range pods {
		out := run("explain", "-n", demoNS, p)
		if !strings.Contains(out, demoNS+"/"+p+"  Ready in") || !strings.Contains(out, "node "+worker) {
			t.Errorf("kubectl readyline explain %s: not its start on %s:\n%s", p, worker, out)
		}
	}
	list := run("list", "-A")
	for _, p := range pods {
		if !regexp.MustCompile(`(?m)^` + demoNS + `\s+` + p + `\s+` + worker + `\s+ready\s`).MatchString(list) {
			t.Errorf("kubectl readyline list -A has no line %s %s %s ready:\n%s", demoNS, p, worker, list)
		}
	}
	// Both nodes answered (run fails on exit status 1, a node that did
	// not), with the starts of the pods the user may get only: not the
	// readyline pods' own, in readyline's namespace.
	for i, line := range strings.Split(strings.TrimSpace(list), "\n") {
		if f := strings.Fields(line); i > 0 && (len(f) == 0 || f[0] != demoNS) {
			t.Errorf("kubectl readyline list -A, as a reader of %s only, lists %q", demoNS, line)
		}
	}
	page, stop, err := e2e.PluginWeb(ctx, plugin, "--kubeconfig", kubeconfig, "-n", demoNS, pods[0])
	if err != nil {
		t.Fatal(err)
	}
	code, body, err := e2e.HTTPGet(ctx, page)
	if said, err := stop(); err != nil {
		t.Errorf("explain --web after SIGINT: %v\n%s", err, said)
	}
	if err != nil || code != 200 {
		t.Fatalf("GET %s: %d %v", page, code, err)
	}
	want := []string{"PodScheduled", "PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready"}
	if got := e2e.PageConditions(body); !slices.Equal(got, want) || !strings.Contains(string(body), "node "+worker) {
		t.Errorf("the page of %s through the forward: conditions %v (want %v), or no node %s", pods[0], got, want, worker)
	}
	t.Logf("kubectl readyline: explain, list -A and explain --web (%s, %d bytes) from %s's readyline", page, len(body), worker)
}

// pluginUser returns a kubeconfig for a ServiceAccount with only the roles
// of deploy/plugin-rbac: pods get in the demo's namespace, and in
// readyline's pods list and pods/portforward (no pods/exec: the plugin reads
// the daemons' secure API as this user).
func pluginUser(t *testing.T, ctx context.Context) string {
	const sa = "readyline-plugin-e2e"
	user := "system:serviceaccount:" + demoNS + ":" + sa
	if _, err := kindSh(ctx, nil, "kubectl", "apply", "-f", filepath.Join(repoRoot, "deploy", "plugin-rbac", "roles.yaml")); err != nil {
		t.Fatal(err)
	}
	kindSh(ctx, nil, "kubectl", "-n", demoNS, "create", "serviceaccount", sa)
	kindSh(ctx, nil, "kubectl", "-n", demoNS, "create", "rolebinding", sa, "--clusterrole=readyline-plugin-pods", "--user="+user)
	kindSh(ctx, nil, "kubectl", "-n", "readyline", "create", "rolebinding", sa, "--role=readyline-plugin", "--user="+user)
	t.Cleanup(func() {
		kindSh(context.Background(), nil, "kubectl", "-n", "readyline", "delete", "rolebinding", sa, "--ignore-not-found")
	})
	token := strings.TrimSpace(kubectl(t, "-n", demoNS, "create", "token", sa, "--duration=10m"))
	server := kubectl(t, "config", "view", "--raw", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}")
	ca := kubectl(t, "config", "view", "--raw", "--minify", "-o", "jsonpath={.clusters[0].cluster.certificate-authority-data}")
	path := filepath.Join(t.TempDir(), "kubeconfig")
	config := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: kind, cluster: {server: %q, certificate-authority-data: %q}}]
users: [{name: %s, user: {token: %q}}]
contexts: [{name: plugin, context: {cluster: kind, user: %s, namespace: %s}}]
current-context: plugin
`, server, ca, sa, token, sa, demoNS)
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	// The user may not do what the roles do not grant.
	if out, err := kindSh(ctx, nil, "kubectl", "auth", "can-i", "--as="+user, "-n", "kube-system", "get", "pods"); err == nil || strings.TrimSpace(out) != "no" {
		t.Fatalf("%s may get pods in kube-system (%q, %v): not the restricted user the test wants", user, out, err)
	}
	return path
}

// stderrOf is what a failed command printed on stderr, if exec kept it.
func stderrOf(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(ee.Stderr)
	}
	return ""
}
