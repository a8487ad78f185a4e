//go:build e2e

// Package kind installs, upgrades and uninstalls the Helm chart
// (deploy/helm/readyline) on the two-node kind cluster of `make kind-up`
// (deploy/kind), with the Helm library's actions, as `helm install`, `helm
// upgrade` and `helm uninstall` do. It skips unless READYLINE_E2E_KIND=1, and
// fails when that is set and the cluster is not there.
//
// It lives in deploy/helm's module, not in deploy/e2e/kind: Helm would pull
// newer golang.org/x modules into readyline's go.mod, which the daemon links.
package kind

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/kube"
	releasei "helm.sh/helm/v4/pkg/release"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

const (
	// release and namespace are where the test installs the chart: the
	// release name of the README's `helm install readyline`, in a namespace
	// of its own (deploy/kind's readyline namespace keeps Jaeger and
	// Prometheus), which Install makes as --create-namespace does.
	release   = "readyline"
	namespace = "readyline-helm"
	// kindNamespace is deploy/kind's.
	kindNamespace = "readyline"
)

var (
	repoRoot   string
	kubeconfig string
)

func TestMain(m *testing.M) {
	if os.Getenv("READYLINE_E2E_KIND") != "1" {
		fmt.Println("skipping the chart's kind test: READYLINE_E2E_KIND=1 runs it on the cluster of make kind-up")
		os.Exit(0)
	}
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		os.Exit(1)
	}
	repoRoot = root
	state := os.Getenv("KIND_STATE")
	if state == "" {
		state = "/var/lib/readyline-kind" // deploy/kind/kind.sh's
	}
	kubeconfig = filepath.Join(state, "kubeconfig")
	if _, err := os.Stat(kubeconfig); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: the kind cluster is not up (make kind-up):", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// cluster holds the clients of the kind cluster.
type cluster struct {
	client  kubernetes.Interface
	dynamic dynamic.Interface
	mapper  meta.RESTMapper
	disco   discovery.DiscoveryInterface
}

func connect(t *testing.T) *cluster {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{}
	if c.client, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if c.dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	c.disco = c.client.Discovery()
	groups, err := restmapper.GetAPIGroupResources(c.disco)
	if err != nil {
		t.Fatal(err)
	}
	c.mapper = restmapper.NewDiscoveryRESTMapper(groups)
	return c
}

// helmConfig is Helm's action configuration for the kind cluster, releases
// kept as Secrets in namespace (Helm's default driver), Helm's log in the
// test's.
func helmConfig(t *testing.T) *action.Configuration {
	t.Helper()
	flags := genericclioptions.NewConfigFlags(true)
	flags.KubeConfig = &kubeconfig
	ns := namespace
	flags.Namespace = &ns
	cfg := action.NewConfiguration(action.ConfigurationSetLogger(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err := cfg.Init(flags, namespace, "secret"); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestHelmInstallUpgradeUninstall installs the chart as the README says
// (helm install readyline deploy/helm/readyline -n readyline-helm
// --create-namespace --wait), its OTLP endpoint set to deploy/kind's Jaeger;
// its DaemonSet must be Ready on both nodes with every daemon running with
// that endpoint under the chart's RBAC. An upgrade that changes an alert
// threshold must roll every pod (new UIDs) and the new daemons must run with
// the new threshold. The uninstall must leave nothing of the release: no
// object it rendered, no pod or ControllerRevision of its DaemonSet, no
// release record, nothing labelled as it in any namespace or cluster-wide,
// and nothing in its namespace but what Kubernetes puts in every namespace.
//
// deploy/kind's own readyline (deploy/base's objects in namespace readyline,
// whose cluster-wide names the chart's defaults share) is deleted first, so
// that no node runs two readylines, and applied again at the end.
func TestHelmInstallUpgradeUninstall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	c := connect(t)
	nodes, err := c.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := helmConfig(t)
	t.Cleanup(func() { cleanUp(t, c, cfg) })
	makeRoom(t, ctx, c)

	chrt, err := loader.Load(filepath.Join(repoRoot, "deploy", "helm", "readyline"))
	if err != nil {
		t.Fatal(err)
	}
	values := func(threshold string) map[string]any {
		return map[string]any{"config": map[string]any{
			"otlpEndpoint": "jaeger." + kindNamespace + ".svc:4317",
			"alerts":       map[string]any{"PodReadyToStartContainers": threshold},
		}}
	}

	// helm install --create-namespace --wait
	install := action.NewInstall(cfg)
	install.ReleaseName, install.Namespace, install.CreateNamespace = release, namespace, true
	install.WaitStrategy, install.Timeout = kube.StatusWatcherStrategy, 5*time.Minute
	t0 := time.Now()
	r, err := install.RunWithContext(ctx, chrt, values("5s"))
	if err != nil {
		t.Fatalf("helm install: %v", err)
	}
	first := asRelease(t, r)
	t.Logf("helm install: revision %d, %v", first.Version, time.Since(t0).Round(100*time.Millisecond))
	before := readyEverywhere(t, ctx, c, len(nodes.Items))
	for _, p := range before {
		checkDaemon(t, ctx, c, p.name, "PodReadyToStartContainers=5s")
	}
	checkPodStarts(t, ctx, c, nodes.Items)
	caBefore := secretKey(t, ctx, c, release+"-api-certs", "ca.crt")

	// helm upgrade --wait with another threshold: a new ConfigMap name in the
	// pod template, so every pod is replaced.
	upgrade := action.NewUpgrade(cfg)
	upgrade.Namespace = namespace
	upgrade.WaitStrategy, upgrade.Timeout = kube.StatusWatcherStrategy, 5*time.Minute
	t0 = time.Now()
	r, err = upgrade.RunWithContext(ctx, release, chrt, values("3s"))
	if err != nil {
		t.Fatalf("helm upgrade: %v", err)
	}
	second := asRelease(t, r)
	t.Logf("helm upgrade: revision %d, %v", second.Version, time.Since(t0).Round(100*time.Millisecond))
	after := readyEverywhere(t, ctx, c, len(nodes.Items), before...)
	for _, p := range after {
		checkDaemon(t, ctx, c, p.name, "PodReadyToStartContainers=3s")
	}
	// The upgrade kept the aggregated API's certificates (the chart looks
	// its Secrets up), and the API still answers through them.
	if caAfter := secretKey(t, ctx, c, release+"-api-certs", "ca.crt"); string(caAfter) != string(caBefore) {
		t.Errorf("helm upgrade made a new CA for readyline.dev: the daemons' and readyline-api's would not match until restarted")
	}
	apiServiceAvailable(t, ctx, c)
	oldCM, newCM := configMapOf(t, first), configMapOf(t, second)
	if oldCM == newCM {
		t.Fatalf("the upgrade kept ConfigMap %s: the new threshold would not roll the pods", oldCM)
	}
	if _, err := c.client.CoreV1().ConfigMaps(namespace).Get(ctx, oldCM, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the first revision's ConfigMap %s is still there after the upgrade (%v)", oldCM, err)
	}

	// helm uninstall --wait
	uninstall := action.NewUninstall(cfg)
	uninstall.WaitStrategy, uninstall.Timeout = kube.StatusWatcherStrategy, 3*time.Minute
	t0 = time.Now()
	if _, err := uninstall.Run(release); err != nil {
		t.Fatalf("helm uninstall: %v", err)
	}
	t.Logf("helm uninstall: %v", time.Since(t0).Round(100*time.Millisecond))
	nothingLeft(t, ctx, c, first, second)
}

// makeRoom deletes deploy/kind's readyline (the objects of deploy/base, those
// labelled app.kubernetes.io/part-of=readyline, but its Namespace) and waits
// until its pods are gone, and deletes a release a killed run left.
func makeRoom(t *testing.T, ctx context.Context, c *cluster) {
	t.Helper()
	un := action.NewUninstall(helmConfig(t))
	un.IgnoreNotFound, un.WaitStrategy, un.Timeout = true, kube.StatusWatcherStrategy, 2*time.Minute
	if resp, err := un.Run(release); err != nil {
		t.Fatalf("uninstalling a release an earlier run left: %v", err)
	} else if resp != nil {
		t.Logf("uninstalled release %s, left in %s by an earlier run", release, namespace)
	}
	objs := kustomize(t, filepath.Join(repoRoot, "deploy", "kind"))
	var base []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetLabels()["app.kubernetes.io/part-of"] == "readyline" && o.GetKind() != "Namespace" {
			base = append(base, o)
		}
	}
	policy := metav1.DeletePropagationForeground
	for _, o := range base {
		res, err := c.resource(o.GroupVersionKind(), o.GetNamespace())
		if err != nil {
			t.Fatal(err)
		}
		err = res.Delete(ctx, o.GetName(), metav1.DeleteOptions{PropagationPolicy: &policy})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("deleting deploy/kind's %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
	// The kubelets stop the daemons within terminationGracePeriodSeconds.
	gone(t, ctx, c, 2*time.Minute, "deploy/kind's readyline pods", func() (int, error) {
		pods, err := c.client.CoreV1().Pods(kindNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=readyline"})
		if err != nil {
			return 0, err
		}
		return len(pods.Items), nil
	})
	t.Logf("deleted deploy/kind's readyline: %d objects", len(base))
}

// cleanUp uninstalls the release if the test did not, deletes its namespace,
// and applies deploy/kind again, as make kind-up does, waiting for its
// DaemonSet.
func cleanUp(t *testing.T, c *cluster, cfg *action.Configuration) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	un := action.NewUninstall(cfg)
	un.IgnoreNotFound, un.WaitStrategy, un.Timeout = true, kube.StatusWatcherStrategy, 2*time.Minute
	if _, err := un.Run(release); err != nil {
		t.Errorf("helm uninstall (cleanup): %v", err)
	}
	deleteNamespace(t, ctx, c, namespace, 3*time.Minute)
	for _, args := range [][]string{
		{"kubectl", "apply", "-k", filepath.Join(repoRoot, "deploy", "kind")},
		{"kubectl", "-n", kindNamespace, "rollout", "status", "daemonset/readyline", "--timeout=180s"},
	} {
		cmd := exec.CommandContext(ctx, filepath.Join(repoRoot, "deploy", "kind", "kind.sh"), args...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("putting deploy/kind back: kind.sh %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// daemonPod is one pod of the chart's DaemonSet.
type daemonPod struct{ name, uid, node string }

// readyEverywhere waits until the chart's DaemonSet is Ready on every node
// (n of them), with pods none of which is one of old, and returns its pods.
func readyEverywhere(t *testing.T, ctx context.Context, c *cluster, n int, old ...daemonPod) []daemonPod {
	t.Helper()
	var pods []daemonPod
	var status string
	err := wait.PollUntilContextTimeout(ctx, time.Second, 4*time.Minute, true, func(ctx context.Context) (bool, error) {
		ds, err := c.client.AppsV1().DaemonSets(namespace).Get(ctx, release, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		s := ds.Status
		status = fmt.Sprintf("generation %d observed %d, desired %d, ready %d, updated %d",
			ds.Generation, s.ObservedGeneration, s.DesiredNumberScheduled, s.NumberReady, s.UpdatedNumberScheduled)
		if s.ObservedGeneration != ds.Generation || int(s.DesiredNumberScheduled) != n || int(s.NumberReady) != n || int(s.UpdatedNumberScheduled) != n {
			return false, nil
		}
		if pods, err = podsOf(ctx, c); err != nil || len(pods) != n {
			return false, nil
		}
		for _, p := range pods {
			if slices.ContainsFunc(old, func(o daemonPod) bool { return o.uid == p.uid }) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("DaemonSet %s/%s Ready on %d nodes with none of the pods %v: %v (%s; pods %v)", namespace, release, n, old, err, status, pods)
	}
	for _, p := range pods {
		t.Logf("readyline on %s: pod %s (uid %s)", p.node, p.name, p.uid)
	}
	return pods
}

// podsOf lists the running, Ready, not terminating pods of the chart's
// DaemonSet.
func podsOf(ctx context.Context, c *cluster) ([]daemonPod, error) {
	list, err := c.client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{
		LabelSelector: "app.kubernetes.io/name=readyline,app.kubernetes.io/component=node-agent"})
	if err != nil {
		return nil, err
	}
	var pods []daemonPod
	for _, p := range list.Items {
		ready := false
		for _, cond := range p.Status.Conditions {
			ready = ready || (cond.Type == "Ready" && cond.Status == "True")
		}
		if p.DeletionTimestamp == nil && ready {
			pods = append(pods, daemonPod{p.Name, string(p.UID), p.Spec.NodeName})
		}
	}
	return pods, nil
}

// checkDaemon: the daemon in pod runs with deploy/kind's Jaeger as its OTLP
// endpoint and the alert rules alerts (its "readyline running" log line),
// its pod watch synced (pods list and watch granted by the chart's
// ClusterRole), and the API server refused it nothing.
func checkDaemon(t *testing.T, ctx context.Context, c *cluster, pod, alerts string) {
	t.Helper()
	var running map[string]any
	var logs []byte
	err := wait.PollUntilContextTimeout(ctx, time.Second, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		logs, err = c.client.CoreV1().Pods(namespace).GetLogs(pod, &corev1.PodLogOptions{Container: "readyline"}).DoRaw(ctx)
		if err != nil {
			return false, nil
		}
		running = nil
		synced := false
		sc := bufio.NewScanner(bytes.NewReader(logs))
		for sc.Scan() {
			var rec map[string]any
			if json.Unmarshal(sc.Bytes(), &rec) != nil {
				continue
			}
			switch rec["msg"] {
			case "readyline running":
				running = rec
			case "pod watch synced":
				synced = true
			}
		}
		return running != nil && synced, nil
	})
	if err != nil {
		t.Fatalf("%s: no \"readyline running\" and \"pod watch synced\" in its log: %v\n%s", pod, err, logs)
	}
	if got, want := fmt.Sprint(running["otlp"]), "jaeger."+kindNamespace+".svc:4317"; !strings.Contains(got, want) {
		t.Errorf("%s sends to %q, want %s", pod, got, want)
	}
	if got := fmt.Sprint(running["alerts"]); got != alerts {
		t.Errorf("%s runs with alerts %q, want %q", pod, got, alerts)
	}
	if bytes.Contains(logs, []byte("forbidden")) {
		t.Errorf("the API server refused %s something:\n%s", pod, logs)
	}
	t.Logf("%s: running, otlp %v, alerts %v", pod, running["otlp"], running["alerts"])
}

// nothingLeft fails unless the uninstall left nothing of the release's
// revisions.
func nothingLeft(t *testing.T, ctx context.Context, c *cluster, revisions ...*releasev1.Release) {
	t.Helper()
	// Every object any revision rendered.
	var rendered []*unstructured.Unstructured
	for _, r := range revisions {
		objs, err := decode([]byte(r.Manifest))
		if err != nil {
			t.Fatal(err)
		}
		rendered = append(rendered, objs...)
	}
	for _, o := range rendered {
		res, err := c.resource(o.GroupVersionKind(), o.GetNamespace())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := res.Get(ctx, o.GetName(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s %s/%s is left (%v)", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}
	// The release's records (Helm's Secrets).
	secrets, err := c.client.CoreV1().Secrets(namespace).List(ctx, metav1.ListOptions{LabelSelector: "owner=helm,name=" + release})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets.Items {
		t.Errorf("Helm's record %s is left", s.Name)
	}
	// What the objects made (pods, ControllerRevisions) goes with them, in
	// the garbage collector's time: anything labelled as the release or as
	// readyline, in any namespace the chart writes to and cluster-wide, and
	// anything labelled as the release anywhere.
	gone(t, ctx, c, 2*time.Minute, "readyline's objects", func() (int, error) {
		left, err := c.leftovers(ctx)
		for _, o := range left {
			t.Logf("left: %s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName())
		}
		return len(left), err
	})
	// The namespace holds only what every namespace has. Helm does not delete
	// a namespace --create-namespace made (its docs say so): cleanUp does.
	left, err := c.listIn(ctx, namespace, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range left {
		switch {
		case o.GetKind() == "ServiceAccount" && o.GetName() == "default",
			o.GetKind() == "ConfigMap" && o.GetName() == "kube-root-ca.crt",
			o.GetKind() == "Event":
		default:
			t.Errorf("%s %s is left in namespace %s", o.GetKind(), o.GetName(), namespace)
		}
	}
	if !t.Failed() {
		t.Logf("helm uninstall left none of the %d objects the release rendered, nor anything they made", len(rendered))
	}
}

// deleteNamespace deletes namespace ns and waits until it is gone.
func deleteNamespace(t *testing.T, ctx context.Context, c *cluster, ns string, timeout time.Duration) {
	t.Helper()
	if err := c.client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting namespace %s: %v", ns, err)
	}
	gone(t, ctx, c, timeout, "namespace "+ns, func() (int, error) {
		_, err := c.client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return 0, nil
		}
		return 1, err
	})
}

// gone polls count until it returns 0.
func gone(t *testing.T, ctx context.Context, c *cluster, timeout time.Duration, what string, count func() (int, error)) {
	t.Helper()
	var n int
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		var err error
		n, err = count()
		return err == nil && n == 0, nil
	})
	if err != nil {
		t.Fatalf("%s: %d still there after %v", what, n, timeout)
	}
}

// resource is the dynamic client of objects of kind gvk in namespace ns.
func (c *cluster) resource(gvk schema.GroupVersionKind, ns string) (dynamic.ResourceInterface, error) {
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, fmt.Errorf("mapping %s: %w", gvk, err)
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return c.dynamic.Resource(m.Resource).Namespace(ns), nil
	}
	return c.dynamic.Resource(m.Resource), nil
}

// leftovers lists the objects labelled as the release in any namespace or
// cluster-wide, and those labelled as readyline (app.kubernetes.io/name, which
// the DaemonSet's pods and ControllerRevisions carry too) cluster-wide, in the
// release's namespace and in kube-system. (deploy/kind's namespace may hold
// ConfigMaps of deploy/base that kubectl apply -k left behind.)
func (c *cluster) leftovers(ctx context.Context) ([]*unstructured.Unstructured, error) {
	resources, err := c.listable()
	if err != nil {
		return nil, err
	}
	asRelease := "app.kubernetes.io/managed-by=Helm,app.kubernetes.io/instance=" + release
	asReadyline := "app.kubernetes.io/name=readyline"
	type query struct{ ns, selector string }
	seen := map[string]bool{}
	var out []*unstructured.Unstructured
	for _, r := range resources {
		queries := []query{{"", asReadyline}} // cluster-scoped: every object
		if r.Namespaced {
			queries = []query{{"", asRelease}, {namespace, asReadyline}, {"kube-system", asReadyline}}
		}
		for _, q := range queries {
			var ri dynamic.ResourceInterface = c.dynamic.Resource(r.gvr)
			if q.ns != "" {
				ri = c.dynamic.Resource(r.gvr).Namespace(q.ns)
			}
			l, err := ri.List(ctx, metav1.ListOptions{LabelSelector: q.selector})
			if err != nil {
				return nil, fmt.Errorf("listing %s: %w", r.gvr, err)
			}
			for _, o := range items(l) {
				if o.GetKind() == "Namespace" && o.GetName() == kindNamespace {
					continue // deploy/kind's, which makeRoom keeps
				}
				if !seen[string(o.GetUID())] {
					seen[string(o.GetUID())] = true
					out = append(out, o)
				}
			}
		}
	}
	return out, nil
}

// listIn lists every object in namespace ns (Events too) with selector.
func (c *cluster) listIn(ctx context.Context, ns, selector string) ([]*unstructured.Unstructured, error) {
	resources, err := c.listable()
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, r := range resources {
		if r.Namespaced {
			l, err := c.dynamic.Resource(r.gvr).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
			if err != nil {
				return nil, fmt.Errorf("listing %s in %s: %w", r.gvr, ns, err)
			}
			out = append(out, items(l)...)
		}
	}
	return out, nil
}

type apiResource struct {
	metav1.APIResource
	gvr schema.GroupVersionResource
}

// listable returns the resources the API server lists, each in its
// preferred version.
func (c *cluster) listable() ([]apiResource, error) {
	lists, err := c.disco.ServerPreferredResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, err
	}
	var out []apiResource
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			return nil, err
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") {
				continue
			}
			out = append(out, apiResource{r, gv.WithResource(r.Name)})
		}
	}
	return out, nil
}

func items(l *unstructured.UnstructuredList) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, len(l.Items))
	for i := range l.Items {
		out[i] = &l.Items[i]
	}
	return out
}

// configMapOf is the name of the ConfigMap release r rendered.
func configMapOf(t *testing.T, r *releasev1.Release) string {
	t.Helper()
	objs, err := decode([]byte(r.Manifest))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() == "ConfigMap" {
			return o.GetName()
		}
	}
	t.Fatalf("revision %d rendered no ConfigMap", r.Version)
	return ""
}

func asRelease(t *testing.T, r releasei.Releaser) *releasev1.Release {
	t.Helper()
	rel, ok := r.(*releasev1.Release)
	if !ok {
		t.Fatalf("a release of type %T", r)
	}
	return rel
}

// kustomize is `kubectl kustomize dir` with kustomize's library.
func kustomize(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize %s: %v", dir, err)
	}
	b, err := m.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// decode splits a YAML stream into objects.
func decode(b []byte) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, doc := range strings.Split("\n"+string(b), "\n---") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			return nil, err
		}
		if len(m) > 0 {
			out = append(out, &unstructured.Unstructured{Object: m})
		}
	}
	return out, nil
}

// testWriter writes Helm's log into the test's.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
