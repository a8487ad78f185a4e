//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/readyline/readyline/deploy/e2e/jaeger"
)

// The log lines of `readyline run` that say each source is up (as
// StartDaemon waits for them).
var daemonSourcesUp = []string{"process tracer attached", "pod watch synced", "probing the kubelet's CRI client", "tcp tracer attached"}

// TestDaemonSet deploys readyline the way users do, as the DaemonSet of
// deploy/base, with the local node's overlay: privileged (deploy/local),
// then with its capability set instead (deploy/local-capabilities). Each
// time the pod must become Ready under the API server's RBAC authorization,
// with every source up and nothing degraded, and the lifecycle-demo's trace
// must reach Jaeger from inside the pod, kernel-level spans included.
//
// Not parallel: the DaemonSet's daemon would see (and export) the pods of
// every test running beside it, and no other readyline may run at the same
// time: the shared daemon of the trace tests is stopped first (the next test
// that needs it starts it again), and Deploy refuses while any other
// `readyline run` is left. The daemon in the pod is such a process too
// (hostPID), so StartDaemon refuses while the DaemonSet runs. With
// deploy/local, kubectl-readyline then explains the lifecycle-demo as a
// user with only deploy/plugin-rbac's roles. With deploy/aggregated too,
// users read pod starts with `kubectl get podstarts` (testPodStarts).
func TestDaemonSet(t *testing.T) {
	withoutSharedDaemon(t)
	ctx := testContext(t, 15*time.Minute)
	t0 := time.Now()
	if err := env.BuildNodeImage(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("make node-image: %v", time.Since(t0).Round(100*time.Millisecond))
	for _, overlay := range []string{"deploy/local", "deploy/local-capabilities"} {
		t.Run(filepath.Base(overlay), func(t *testing.T) {
			d := deployReadyline(t, overlay)
			checkDaemonLog(t, d)
			if overlay == "deploy/local" {
				t.Run("rbac", func(t *testing.T) { checkReadylineRBAC(t) })
			}
			idle := measureIdle(t, d, 25*time.Second)
			pod, tr, busy := traceFromDaemonSet(t, d)
			checkDaemonSetTrace(t, d, pod, tr)
			t.Logf("%s: Ready %v after apply -k; idle %.1f mCPU, %.1f MiB; during lifecycle-demo %.1f mCPU, %.1f MiB",
				overlay, d.ReadyAfter.Round(100*time.Millisecond), CPUBetween(idle[0], idle[1]), mib(idle[1].WorkingSet),
				CPUBetween(busy[0], busy[1]), mib(max(busy[0].WorkingSet, busy[1].WorkingSet)))
			checkPagesGivenBack(t, d)
			if overlay == "deploy/local" {
				t.Run("kubectl-plugin", func(t *testing.T) { testKubectlPlugin(t, pod) })
				t.Run("restart-mid-start", func(t *testing.T) { testRestartMidStart(t, d) })
			}
		})
	}
	t.Run("aggregated", testPodStarts)
	t.Run("kind-jaeger", testKindJaeger)
}

// testKindJaeger runs deploy/kind's Jaeger (its component, with the local
// node's settings for readyline) on the local node: Jaeger v2 from the
// image's default configuration as the non-root, capability-less pod
// jaeger.yaml describes, readyline sending to it by its Service name, and
// the trace read back through `kubectl port-forward service/jaeger` as
// make jaeger-ui does. The image is the Jaeger release node.sh builds, in
// the official image's layout (no registry here).
func testKindJaeger(t *testing.T) {
	ctx := testContext(t, 5*time.Minute)
	dir := t.TempDir()
	if err := env.ImportJaegerImage(ctx, "docker.io/jaegertracing/jaeger:"+JaegerV2Version, dir); err != nil {
		t.Fatal(err)
	}
	// deploy/base with the local node's component, then deploy/kind's:
	// its OTLP endpoint (jaeger.readyline.svc:4317) wins.
	rel, err := filepath.Rel(dir, filepath.Join(env.RepoRoot, "deploy"))
	if err != nil {
		t.Fatal(err)
	}
	kustomization := fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - %[1]s/base
components:
  - %[1]s/local/component
  - %[1]s/kind/component
`, filepath.ToSlash(rel))
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(kustomization), 0o644); err != nil {
		t.Fatal(err)
	}
	d := deployReadyline(t, dir)
	if _, err := env.Kubectl(ctx, nil, "-n", ReadylineNamespace, "rollout", "status", "deployment/jaeger", "--timeout=120s"); err != nil {
		t.Fatal(err)
	}
	// Until Jaeger is up, the daemon's first exports (its own pod's start)
	// may fail: kind-up applies both at once too.
	checkDaemonLog(t, d, "trace export failing")
	queryURL, stop, err := env.PortForward(ctx, ReadylineNamespace, "service/jaeger", 16686)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	pod, tr, _ := traceFromDaemonSetTo(t, d, jaeger.NewClient(queryURL))
	checkDaemonSetTrace(t, d, pod, tr)
	if _, err := env.Jaeger.Trace(ctx, tr.TraceID); !errors.Is(err, jaeger.ErrTraceNotFound) {
		t.Errorf("the node's own Jaeger has trace %s too (%v): readyline did not send to deploy/kind's", tr.TraceID, err)
	}
}

// deployReadyline deploys overlay and deletes it when the test ends,
// waiting until its daemon is gone.
func deployReadyline(t *testing.T, overlay string) *Deployment {
	t.Helper()
	d, err := env.Deploy(testContext(t, 3*time.Minute), overlay, 2*time.Minute)
	if d == nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if d.Pod != nil {
			if logs, err := d.Logs(context.Background()); err == nil {
				writeArtifact(t, "readyline-pod.log", logs)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := d.Delete(ctx, 90*time.Second); err != nil {
			t.Errorf("deleting %s: %v", overlay, err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// checkDaemonLog: every source is up, and nothing warned but messages that
// start with one of allowed (the daemon logs one Warn per source it lost,
// e.g. for a missing capability), nothing was forbidden by RBAC.
func checkDaemonLog(t *testing.T, d *Deployment, allowed ...string) {
	t.Helper()
	var logs string
	// The sources report asynchronously; Ready only says /healthz answers.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var err error
		if logs, err = d.Logs(testContext(t, 30*time.Second)); err != nil {
			t.Fatal(err)
		}
		missing := ""
		for _, s := range daemonSourcesUp {
			if !strings.Contains(logs, s) {
				missing = s
			}
		}
		if missing == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemon never logged %q:\n%s", missing, logs)
		}
		time.Sleep(500 * time.Millisecond)
	}
	for _, line := range strings.Split(logs, "\n") {
		var rec struct {
			Level string `json:"level"`
			Msg   string `json:"msg"`
		}
		if json.Unmarshal([]byte(line), &rec) != nil {
			continue
		}
		if (rec.Level == "WARN" || rec.Level == "ERROR") && !slices.ContainsFunc(allowed, func(a string) bool { return strings.HasPrefix(rec.Msg, a) }) {
			t.Errorf("the daemon in %s degraded: %s", d.Pod.Name, line)
		}
		if strings.Contains(line, "forbidden") {
			t.Errorf("the API server refused the daemon something: %s", line)
		}
	}
}

// checkPagesGivenBack: 30 s after its start (the README's figure, by the
// daemon's own log stamps from its sources' start), the daemon in its
// container gave back most of its binary's pages
// (cmd/readyline/binary_pages.go), which it finds there by path, the binary
// being on overlayfs.
func checkPagesGivenBack(t *testing.T, d *Deployment) {
	t.Helper()
	const msg = "gave back the pages of readyline's binary it was not using"
	deadline := time.Now().Add(90 * time.Second)
	for {
		logs, err := d.Logs(testContext(t, 30*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		var started time.Time // the pod watch's first line: its sources' start, and the trim's
		for _, line := range strings.Split(logs, "\n") {
			var rec struct {
				Time time.Time `json:"time"`
				Msg  string    `json:"msg"`
				MiB  string    `json:"MiB"`
			}
			if json.Unmarshal([]byte(line), &rec) != nil {
				continue
			}
			if rec.Msg == "watching pods" && started.IsZero() {
				started = rec.Time
			}
			if rec.Msg != msg {
				continue
			}
			if mb, err := strconv.ParseFloat(rec.MiB, 64); err != nil || mb < 4 {
				t.Errorf("the daemon gave back %s MiB of its binary's pages, want most of them (>= 4 MiB): %s", rec.MiB, line)
			} else {
				t.Logf("the daemon gave back %.1f MiB of its binary's pages", mb)
			}
			// From the same moment, within a second or so (parsing its smaps).
			if after := rec.Time.Sub(started); started.IsZero() || after < 29*time.Second || after > 35*time.Second {
				t.Errorf("the daemon gave back its binary's pages %v after its sources started (%v), want 30 s", after, started)
			}
			return
		}
		if strings.Contains(logs, "the pages of readyline's binary stay mapped") {
			t.Fatalf("the daemon could not give back its binary's pages:\n%s", logs)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemon never logged %q:\n%s", msg, logs)
		}
		time.Sleep(2 * time.Second)
	}
}

// measureIdle returns the daemon's usage at the start and end of a quiet
// period (the kubelet samples every ~10 s, so it must be longer than that).
func measureIdle(t *testing.T, d *Deployment, period time.Duration) [2]ContainerUsage {
	t.Helper()
	ctx := testContext(t, period+time.Minute)
	a := usage(t, ctx, d, time.Time{})
	time.Sleep(period)
	return [2]ContainerUsage{a, usage(t, ctx, d, a.Time)}
}

// usage reads the daemon's usage, waiting for a sample newer than after.
func usage(t *testing.T, ctx context.Context, d *Deployment, after time.Time) ContainerUsage {
	t.Helper()
	for {
		u, err := d.Usage(ctx)
		if err == nil && u.Time.After(after) {
			return u
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no usage sample of the daemon after %v: %v", after, err)
		case <-time.After(time.Second):
		}
	}
}

// traceFromDaemonSet starts lifecycle-demo and returns the pod and its
// trace once the node's Jaeger has it, with the daemon's usage from the pod's creation
// to then.
func traceFromDaemonSet(t *testing.T, d *Deployment) (*corev1.Pod, *jaeger.Trace, [2]ContainerUsage) {
	t.Helper()
	return traceFromDaemonSetTo(t, d, env.Jaeger)
}

// traceFromDaemonSetTo is traceFromDaemonSet with the Jaeger that jc
// reads.
func traceFromDaemonSetTo(t *testing.T, d *Deployment, jc *jaeger.Client) (*corev1.Pod, *jaeger.Trace, [2]ContainerUsage) {
	t.Helper()
	ctx := testContext(t, 4*time.Minute)
	ns, err := env.CreateNamespace(ctx, "e2e-daemonset")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.DeleteNamespace(context.Background(), ns); err != nil {
			t.Errorf("deleting namespace %s: %v", ns, err)
		}
	})
	rec, err := RecordPod(ctx, env.Client, ns, "lifecycle-demo")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		rec.Stop()
		var b strings.Builder
		if err := rec.WriteJSONL(&b); err == nil {
			writeArtifact(t, "lifecycle-demo.jsonl", b.String())
		}
	})
	before := usage(t, ctx, d, time.Time{})
	applyExample(t, ns, "lifecycle-demo.yaml")
	ev, err := rec.WaitFor(ctx, ConditionTrue(corev1.PodReady))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := jc.WaitForTrace(ctx, TraceIDFromPodUID(string(ev.Pod.UID)), 15, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return ev.Pod, tr, [2]ContainerUsage{before, usage(t, ctx, d, time.Now())}
}

// checkDaemonSetTrace: the trace is whole (root span, outcome ready), has
// what only the kernel sees (the kubelet's CRI calls by uprobes, the
// processes by tracepoints), and came from the DaemonSet's pod.
func checkDaemonSetTrace(t *testing.T, d *Deployment, pod *corev1.Pod, tr *jaeger.Trace) {
	t.Helper()
	st := newSpanTree(t, tr)
	root := st.one("pod.startup")
	if got := tagString(root, "readyline.outcome"); got != "ready" {
		t.Errorf("outcome %q, want ready", got)
	}
	if got := tagString(root, "k8s.pod.uid"); got != string(pod.UID) {
		t.Errorf("root span's k8s.pod.uid %q, want %s", got, pod.UID)
	}
	for _, op := range []string{"runtime.v1.RuntimeService/RunPodSandbox", "runtime.v1.RuntimeService/StartContainer", "process sh", "process pause"} {
		if _, ok := tr.SpanByName(op); !ok {
			t.Errorf("no %q span: the daemon in the pod lost a kernel source", op)
		}
	}
	// Every span was sent by the daemon in the pod (its resource names it),
	// not by some readyline on the host.
	want := ReadylineNamespace + "." + d.Pod.Name + ".readyline"
	for _, s := range tr.Spans {
		p := tr.Processes[s.ProcessID]
		got := ""
		for _, kv := range p.Tags {
			if kv.Key == "service.instance.id" {
				got = fmt.Sprint(kv.Value)
			}
		}
		if p.ServiceName != "readyline" || got != want {
			t.Fatalf("span %q came from service %q instance %q, want readyline instance %q", s.OperationName, p.ServiceName, got, want)
		}
	}
	t.Logf("trace %s: %d spans from %s", tr.TraceID, len(tr.Spans), want)
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// writeArtifact writes text to artifacts/<test>-<name>.
func writeArtifact(t *testing.T, name, text string) {
	dir, err := env.ArtifactsDir()
	if err != nil {
		t.Logf("no artifacts dir: %v", err)
		return
	}
	file := filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "-")+"-"+name)
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Logf("writing %s: %v", file, err)
	}
}

// TestManifestsDryRun: every manifest under deploy/ is accepted by the API
// server as `kubectl apply --dry-run=server` would send it: each kustomization
// (the kind demo with --load-restrictor=LoadRestrictionsNone, as make kind-demo
// builds it) and each plain manifest of deploy/examples and deploy/alerts.
// Their namespaced objects go into a namespace of the test (a dry run
// cannot create the namespace it would put them in). deploy/alerts' Prometheus
// Operator objects need its CRDs: the test installs them for the dry run
// (generated as upstream does) unless they are there, and removes them again.
func TestManifestsDryRun(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	ctx := testContext(t, 10*time.Minute)
	deploy := filepath.Join(env.RepoRoot, "deploy")

	type manifest struct {
		what string
		data []byte
		// kustomized manifests name the namespace of each namespaced
		// object; a plain example is applied into the user's namespace.
		kustomized bool
	}
	var manifests []manifest
	var roots []string
	err := filepath.WalkDir(deploy, func(p string, de os.DirEntry, err error) error {
		if err != nil || de.IsDir() || de.Name() != "kustomization.yaml" {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var k struct{ Kind string }
		if err := yaml.Unmarshal(b, &k); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if k.Kind != "Component" { // components are checked through their users
			rel, _ := filepath.Rel(env.RepoRoot, filepath.Dir(p))
			roots = append(roots, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"deploy/base", "deploy/capabilities", "deploy/local", "deploy/local-capabilities", "deploy/kind", "deploy/kind/capabilities", "deploy/kind/demo"} {
		if !slices.Contains(roots, want) {
			t.Errorf("no kustomization in %s", want)
		}
	}
	for _, root := range roots {
		out, err := env.Kubectl(ctx, nil, "kustomize", "--load-restrictor=LoadRestrictionsNone", root)
		if err != nil {
			t.Errorf("%s: %v", root, err)
			continue
		}
		manifests = append(manifests, manifest{root + " (kustomize)", out, true})
	}
	for _, dir := range []string{"examples", "alerts"} {
		files, _ := filepath.Glob(filepath.Join(deploy, dir, "*.yaml"))
		for _, f := range files {
			if filepath.Base(f) == "kustomization.yaml" {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			rel, _ := filepath.Rel(env.RepoRoot, f)
			manifests = append(manifests, manifest{rel, b, false})
		}
	}

	// The CRDs the manifests need from the Prometheus Operator.
	need := map[string]bool{}
	for _, m := range manifests {
		objs, _ := DecodeManifest(m.data)
		for _, o := range objs {
			if gvk := o.GroupVersionKind(); gvk.Group == "monitoring.coreos.com" {
				need[strings.ToLower(gvk.Kind)+"s."+gvk.Group] = true
			}
		}
	}
	if len(need) > 0 {
		crds, err := MonitoringCRDs(ctx, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		for name := range need {
			crd, ok := crds[name]
			if !ok {
				t.Fatalf("the Prometheus Operator %s has no CRD %s", PrometheusOperatorAPIVersion, name)
			}
			created, err := env.EnsureCRD(ctx, crd)
			if created {
				t.Cleanup(func() {
					if err := env.DeleteCRD(context.Background(), name); err != nil {
						t.Errorf("deleting CRD %s: %v", name, err)
					}
				})
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}

	for _, m := range manifests {
		t.Run(m.what, func(t *testing.T) { dryRun(t, ctx, ns, m.what, m.data, m.kustomized) })
	}
}

// dryRun sends the Kubernetes objects of manifest to the API server with
// `kubectl apply --dry-run=server`, namespaced ones in ns. Documents that
// are no Kubernetes objects (a Prometheus rule file) are left out. With
// namespaced, every namespaced object must name its namespace (else
// `kubectl apply -k` puts it wherever the user's context points).
func dryRun(t *testing.T, ctx context.Context, ns, what string, manifest []byte, namespaced bool) {
	t.Helper()
	objs, err := DecodeManifest(manifest)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	list := map[string]any{"apiVersion": "v1", "kind": "List"}
	var items []any
	for _, o := range objs {
		if o.GetAPIVersion() == "" || o.GetKind() == "" {
			t.Logf("%s: not a Kubernetes object, left out", what)
			continue
		}
		if namespaced && o.GetNamespace() == "" {
			gvk := o.GroupVersionKind()
			mapping, err := env.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
				t.Errorf("%s: %s %s has no namespace", what, o.GetKind(), o.GetName())
			}
		}
		moveToNamespace(o, ns)
		items = append(items, o.Object)
	}
	if len(items) == 0 {
		return
	}
	list["items"] = items
	b, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	out, err := env.Kubectl(ctx, b,
		"apply", "--dry-run=server", "--validate=strict", "-n", ns, "-f", "-")
	if err != nil {
		t.Errorf("%s: %v", what, err)
		return
	}
	t.Logf("%s:\n%s", what, strings.TrimSpace(string(out)))
}

// moveToNamespace puts a namespaced object, and the ServiceAccounts a
// binding names, into ns.
func moveToNamespace(o *unstructured.Unstructured, ns string) {
	if o.GetNamespace() != "" {
		o.SetNamespace(ns)
	}
	subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
	for _, s := range subjects {
		if m, ok := s.(map[string]any); ok && m["namespace"] != nil {
			m["namespace"] = ns
		}
	}
	if subjects != nil {
		_ = unstructured.SetNestedSlice(o.Object, subjects, "subjects")
	}
}

// testRestartMidStart deletes the DaemonSet's pod while poststart-demo is
// in its 15 s hook, as a rollout does. The daemon that stops flushes the
// start in progress ("still starting when readyline stopped"); the one the
// DaemonSet starts next says from when it saw the pod
// (readyline.observed_since), and the conditions that were already True then
// carry their lastTransitionTime, marked coarse, with no lag: no lag that
// never happened ("PodReadyToStartContainers was reported 11.9s after
// sandbox created").
func testRestartMidStart(t *testing.T, d *Deployment) {
	ctx := testContext(t, 4*time.Minute)
	ns := newNamespace(t)
	rec := recordPod(t, ns, "poststart-demo")
	applyExample(t, ns, "poststart-demo.yaml")
	sandboxed, err := rec.WaitFor(ctx, ConditionTrue(corev1.PodReadyToStartContainers))
	if err != nil {
		t.Fatal(err)
	}
	// In the hook, which the API does not show (the kubelet writes no status
	// until it returns): its process runs on the node.
	inHook := func() error {
		_, err := podProcess(sandboxed.Pod.UID, "postStart hook", func(cmdline []byte) bool {
			return bytes.Contains(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}), []byte("sleep 15"))
		})
		return err
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return inHook() == nil, nil
	}); err != nil {
		t.Fatalf("poststart-demo's hook did not run within 30 s of PodReadyToStartContainers: %v", inHook())
	}
	// A hold, not a wait: the DaemonSet's next pod runs within a second of
	// the delete (it does not wait for the old one to end), and a daemon
	// that first sees the pod within 2 s of its sandbox (sightSlack) has
	// seen it from the start. The sandbox came before
	// PodReadyToStartContainers' lastTransitionTime, which the kubelet
	// stamps to the second.
	cond, _ := Condition(sandboxed.Pod, corev1.PodReadyToStartContainers)
	time.Sleep(time.Until(cond.LastTransitionTime.Add(3 * time.Second)))
	if err := inHook(); err != nil {
		t.Fatalf("poststart-demo's hook ended before the daemon could be deleted in it: %v", err)
	}
	old := d.Pod.Name
	if err := env.Client.CoreV1().Pods(ReadylineNamespace).Delete(ctx, old, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var next *corev1.Pod
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := env.Client.CoreV1().Pods(ReadylineNamespace).List(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("spec.nodeName", env.NodeName).String()})
		if err != nil {
			return false, nil
		}
		for i := range list.Items {
			p := &list.Items[i]
			if p.Name != old && p.DeletionTimestamp == nil && ConditionStatus(p, corev1.PodReady) == corev1.ConditionTrue {
				next = p
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no new readyline pod Ready after deleting %s: %v", old, err)
	}
	d.Pod = next // its log is the artifact now
	ready, err := rec.WaitFor(ctx, ConditionTrue(corev1.PodReady))
	if err != nil {
		t.Fatal(err)
	}
	traceID := TraceIDFromPodUID(string(ready.Pod.UID))
	instance := func(tr *jaeger.Trace, s jaeger.Span) string {
		for _, kv := range tr.Processes[s.ProcessID].Tags {
			if kv.Key == "service.instance.id" {
				return fmt.Sprint(kv.Value)
			}
		}
		return ""
	}
	oldID, newID := ReadylineNamespace+"."+old+".readyline", ReadylineNamespace+"."+next.Name+".readyline"
	var tr *jaeger.Trace
	var oldRoot, newRoot jaeger.Span
	err = wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		if tr, err = env.Jaeger.Trace(ctx, traceID); err != nil {
			return false, nil
		}
		oldRoot, newRoot = jaeger.Span{}, jaeger.Span{}
		for _, s := range tr.Spans {
			if s.OperationName != "pod.startup" {
				continue
			}
			switch instance(tr, s) {
			case oldID:
				oldRoot = s
			case newID:
				newRoot = s
			}
		}
		return oldRoot.SpanID != "" && newRoot.SpanID != "", nil
	})
	if err != nil {
		t.Fatalf("trace %s: want a pod.startup from the stopped daemon (%s) and from the next (%s): %v", traceID, oldID, newID, err)
	}
	if got := tagString(oldRoot, "readyline.reason"); !strings.Contains(got, "still starting when readyline stopped") {
		t.Errorf("the stopped daemon's start: reason %q, want the shutdown flush", got)
	}
	since := tagString(newRoot, "readyline.observed_since")
	if since == "" || tagString(newRoot, "readyline.outcome") != "ready" {
		t.Fatalf("the next daemon's start: outcome %q, observed_since %q; want ready, and from when it saw the pod",
			tagString(newRoot, "readyline.outcome"), since)
	}
	for _, s := range tr.Spans {
		if s.OperationName != "condition PodReadyToStartContainers" || instance(tr, s) != newID {
			continue
		}
		if tagString(s, "readyline.condition.coarse") != "true" {
			t.Errorf("PodReadyToStartContainers, True before the daemon started, is not marked coarse: %+v", s.Tags)
		}
		if lag := tagString(s, "readyline.condition.lag_ms"); lag != "" {
			t.Errorf("PodReadyToStartContainers has a lag of %s ms the daemon could not see", lag)
		}
	}
	t.Logf("readyline pod %s deleted mid-start, %s took over; it saw poststart-demo from %s", old, next.Name, since)
}
