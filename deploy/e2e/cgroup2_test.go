//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/readyline/readyline/deploy/e2e/jaeger"
)

// Cgroup2NodeEnv names the cgroup v2-only node (deploy/cgroup2/node-vm.sh:
// a VM with the systemd cgroup driver, joined to the local node's control
// plane) that TestCgroup2Node runs on. make test-cgroup2 boots it and sets
// this.
const Cgroup2NodeEnv = "READYLINE_E2E_CGROUP2_NODE"

// cgroup2Overlay is readyline as the DaemonSet on that node only.
const cgroup2Overlay = "deploy/cgroup2/readyline"

// factTags are the span attributes that tell what happened in a pod start,
// not when, nor on which node, nor how often a probe was tried: the facts
// two nodes must agree on. (Times, ids, pids, byte counts, attempt counts
// and lags are left out: they differ between a fast node and an emulated
// one.)
var factTags = []string{
	"k8s.container.name",
	"readyline.container.kind",
	"readyline.container.exit_code",
	"readyline.container.not_created",
	"process.exit.code",
	"readyline.outcome",
	"readyline.condition.type",
	"readyline.probe.kind",
	"readyline.probe.handler",
	"readyline.hook.handler",
	"readyline.hook.exit_code",
	"container.image.name",
	"readyline.image.pull.outcome",
	"readyline.waiting.reason",
	"readyline.phase.source",
	"readyline.blind",
	"readyline.missing",
	"readyline.partial",
	"readyline.inferred",
}

// traceFacts returns a trace's facts, one line per distinct span of
// readyline's (not the local node's kubelet's own, which make test-cgroup2
// runs with its tracing on, as make test does): its name and its factTags,
// sorted.
func traceFacts(tr *jaeger.Trace) []string {
	seen := map[string]bool{}
	for _, s := range tr.Spans {
		if tr.ServiceName(s) != "readyline" {
			continue
		}
		line := s.OperationName
		for _, k := range factTags {
			if v, ok := s.Tag(k); ok {
				line += fmt.Sprintf(" %s=%v", k, v)
			}
		}
		seen[line] = true
	}
	facts := make([]string, 0, len(seen))
	for f := range seen {
		facts = append(facts, f)
	}
	sort.Strings(facts)
	return facts
}

// TestCgroup2Node: on a node with cgroup v2 only and the systemd cgroup
// driver (the nodes of a 1.35+ cluster: containerd gives each container a
// cgroup namespace of its own there, and the pods' cgroups are systemd
// slices and scopes), readyline as the DaemonSet traces the seed's
// lifecycle-demo and poststart-demo, a crash loop and a pull with the same
// facts as the local node's readyline traces the same pods on the local
// node (cgroup v1 hybrid, cgroupfs): each pod runs once on each node, and
// the two traces' facts (traceFacts) are compared line by line.
func TestCgroup2Node(t *testing.T) {
	vm := os.Getenv(Cgroup2NodeEnv)
	if vm == "" {
		t.Skipf("CGROUP V2 NODE TEST NOT RUN: %s names no node; `make test-cgroup2` boots one (deploy/cgroup2) and sets it", Cgroup2NodeEnv)
	}
	readyline(t) // the local node's
	ctx := testContext(t, 20*time.Minute)
	deployOnNode(t, ctx, vm)

	example := func(file string) string {
		b, err := os.ReadFile(env.ExamplePath(file))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	restarted := func(p *corev1.Pod) bool {
		cs, ok := ContainerStatus(p, "app")
		return ok && cs.RestartCount >= 2
	}
	// The crash loop is reported at the start timeout, mid-loop: whether the
	// container is running then (a container span without an exit code)
	// and whether a readiness probe attempt fell within one of its
	// one-second runs are when the report came, not what happened.
	crashloopRace := func(f string) bool {
		return strings.HasPrefix(f, "readinessProbe ") ||
			strings.HasPrefix(f, "container app ") && !strings.Contains(f, "exit_code=")
	}
	for _, c := range []struct {
		name, manifest string
		done           func(*corev1.Pod) bool
		race           func(fact string) bool
	}{
		{"lifecycle-demo", example("lifecycle-demo.yaml"), ConditionTrue(corev1.PodReady), nil},
		{"poststart-demo", example("poststart-demo.yaml"), ConditionTrue(corev1.PodReady), nil},
		{"crashloop", crashloopManifest, restarted, crashloopRace},
		{"image-pull", example("image-pull.yaml"), ConditionTrue(corev1.PodReady), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var local, onVM []string
			// Both at once (the group returns when both have).
			t.Run("nodes", func(t *testing.T) {
				t.Run(env.NodeName, func(t *testing.T) {
					t.Parallel()
					local = startOnNode(t, ctx, env.NodeName, c.name, c.manifest, c.done)
				})
				t.Run(vm, func(t *testing.T) {
					t.Parallel()
					onVM = startOnNode(t, ctx, vm, c.name, c.manifest, c.done)
				})
			})
			if t.Failed() {
				return
			}
			if c.race != nil {
				local = slices.DeleteFunc(local, c.race)
				onVM = slices.DeleteFunc(onVM, c.race)
			}
			onlyLocal, onlyVM := setDiff(local, onVM), setDiff(onVM, local)
			for _, f := range onlyLocal {
				t.Errorf("only on %s: %s", env.NodeName, f)
			}
			for _, f := range onlyVM {
				t.Errorf("only on %s: %s", vm, f)
			}
			t.Logf("%d facts on %s, %d on %s, %d the same", len(local), env.NodeName, len(onVM), vm, len(local)-len(onlyLocal))
		})
	}
}

// startOnNode runs manifest's pod on node in a new namespace, waits until
// done says its start is over and its trace is whole (its pod.startup span
// carries an outcome), and returns the trace's facts.
func startOnNode(t *testing.T, ctx context.Context, node, pod, manifest string, done func(*corev1.Pod) bool) []string {
	t.Helper()
	objs, err := DecodeManifest([]byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() == "Pod" {
			if err := unstructured.SetNestedField(o.Object, node, "spec", "nodeName"); err != nil {
				t.Fatal(err)
			}
		}
	}
	ns := newNamespace(t)
	rec := recordPod(t, ns, pod)
	if _, err := env.ApplyObjects(ctx, ns, objs); err != nil {
		t.Fatal(err)
	}
	ev, err := rec.WaitFor(ctx, done)
	if err != nil {
		t.Fatalf("%s on %s: %v (last: %s)", pod, node, err, lastStatus(rec))
	}
	id := TraceIDFromPodUID(string(ev.Pod.UID))
	var tr *jaeger.Trace
	for {
		tr, err = env.Jaeger.Trace(ctx, id)
		if err == nil && hasOutcome(tr) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s on %s: no whole trace %s: %v (last error %v)", pod, node, id, ctx.Err(), err)
		case <-time.After(2 * time.Second):
		}
	}
	facts := traceFacts(tr)
	t.Logf("%s on %s: trace %s, %d spans, %d facts:\n  %s", pod, node, id, len(tr.Spans), len(facts), strings.Join(facts, "\n  "))
	return facts
}

func hasOutcome(tr *jaeger.Trace) bool {
	for _, s := range tr.Spans {
		if _, ok := s.Tag("readyline.outcome"); ok && s.OperationName == "pod.startup" {
			return true
		}
	}
	return false
}

func lastStatus(rec *PodRecorder) string {
	evs := rec.Events()
	if len(evs) == 0 {
		return "no update seen"
	}
	return DescribeStatus(evs[len(evs)-1].Pod)
}

// setDiff returns the lines of a that are not in b (both sorted).
func setDiff(a, b []string) []string {
	var d []string
	for _, x := range a {
		if _, found := slices.BinarySearch(b, x); !found {
			d = append(d, x)
		}
	}
	return d
}

// deployOnNode applies cgroup2Overlay and waits until its pod on node is
// Ready; the test's cleanup deletes it.
func deployOnNode(t *testing.T, ctx context.Context, node string) {
	t.Helper()
	dir := filepath.Join(env.RepoRoot, cgroup2Overlay)
	if _, err := env.Kubectl(ctx, nil, "apply", "-k", dir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if _, err := env.Kubectl(ctx, nil, "delete", "-k", dir, "--ignore-not-found", "--wait=true"); err != nil {
			t.Errorf("deleting %s: %v", cgroup2Overlay, err)
		}
	})
	deadline := time.Now().Add(10 * time.Minute)
	for {
		pods, err := env.Client.CoreV1().Pods(ReadylineNamespace).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
		if err == nil {
			for i := range pods.Items {
				if p := &pods.Items[i]; isDaemonSetPod(p) && ConditionTrue(corev1.PodReady)(p) {
					t.Logf("readyline's pod %s Ready on %s", p.Name, node)
					return
				}
			}
		}
		if time.Now().After(deadline) {
			var states []string
			if pods != nil {
				for i := range pods.Items {
					states = append(states, pods.Items[i].Name+": "+DescribeStatus(&pods.Items[i]))
				}
			}
			t.Fatalf("readyline's DaemonSet pod on %s not Ready in 10 min (%v; %v)", node, err, states)
		}
		time.Sleep(2 * time.Second)
	}
}
