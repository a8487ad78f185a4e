package chart_test

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The differences between the chart and the kustomizations that the tests
// below allow, and nothing else (the chart's README lists them):
//
//   - Helm's standard labels (helm.sh/chart, app.kubernetes.io/instance,
//     managed-by, version) on every object's metadata, with the values of
//     the release;
//   - no Namespace object: `helm install --create-namespace` makes it, and
//     the chart's NOTES say how to give it deploy/base's Pod Security label.
//
// Everything else is equal, field by field: the ConfigMap's name too, which
// the chart hashes as kustomize's configMapGenerator does.

// TestDefaultsAreDeployBaseAndAggregated: `helm template readyline
// readyline/ -n readyline` renders what deploy/base with the deploy/aggregated
// component builds, and the two Secrets of certificates that
// deploy/aggregated/pki.sh makes for kustomize (the APIService's caBundle
// too, which pki.sh patches in): TestAggregatedAPICertificates checks those.
func TestDefaultsAreDeployBaseAndAggregated(t *testing.T) {
	got := mustRender(t, nil).objects
	for _, k := range []string{"Secret readyline/readyline-node-api", "Secret readyline/readyline-api-certs"} {
		if _, ok := got[k]; !ok {
			t.Errorf("the chart does not render %s", k)
		}
		delete(got, k)
	}
	api := deepCopy(got["APIService /v1alpha1.readyline.dev"])
	if spec, ok := api["spec"].(map[string]any); ok {
		delete(spec, "caBundle")
	}
	got["APIService /v1alpha1.readyline.dev"] = api
	checkEquivalent(t, got, kustomize(t, overlay(t, "", "base", "aggregated")), "readyline")
}

// TestWithoutAggregatedAPIIsDeployBase: aggregatedAPI.enabled false and
// secureAPI.enabled true render what `kubectl kustomize deploy/base` builds.
func TestWithoutAggregatedAPIIsDeployBase(t *testing.T) {
	checkEquivalent(t, mustRender(t, baseOnly(nil)).objects, kustomize(t, filepath.Join(deployDir, "base")), "readyline")
}

// baseOnly is values with aggregatedAPI.enabled false and secureAPI.enabled
// true: what the kustomizations over deploy/base alone render (deploy/base
// keeps the per-node secure API; deploy/aggregated turns it off). Each
// render of the aggregated API makes new certificates.
func baseOnly(values map[string]any) map[string]any {
	out := maps.Clone(values)
	if out == nil {
		out = map[string]any{}
	}
	out["aggregatedAPI"] = map[string]any{"enabled": false}
	out["secureAPI"] = map[string]any{"enabled": true}
	return out
}

// overlay writes a kustomization in a temporary directory: resource (a
// directory of deploy/) with the components of deploy/ named, and extra
// YAML after them; it returns the directory.
func overlay(t *testing.T, extra, resource string, components ...string) string {
	t.Helper()
	dir := t.TempDir()
	// kustomize takes a base and components by a relative path only.
	rel := func(name string) string {
		abs, err := filepath.Abs(filepath.Join(deployDir, name))
		if err != nil {
			t.Fatal(err)
		}
		r, err := filepath.Rel(dir, abs)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - " + rel(resource) + "\n"
	if len(components) > 0 {
		k += "components:\n"
		for _, c := range components {
			k += "  - " + rel(c) + "\n"
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k+extra), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestCapabilitiesAreDeployCapabilities: capabilities=true renders what
// deploy/capabilities builds (no privileged, four capabilities).
func TestCapabilitiesAreDeployCapabilities(t *testing.T) {
	got := mustRender(t, baseOnly(map[string]any{"capabilities": true})).objects
	checkEquivalent(t, got, kustomize(t, filepath.Join(deployDir, "capabilities")), "readyline")
	sc := dig(got["DaemonSet readyline/readyline"], "spec", "template", "spec", "containers", 0, "securityContext")
	if dig(sc, "privileged") != false || !slices.Equal(toStrings(dig(sc, "capabilities", "add")), []string{"BPF", "PERFMON", "DAC_READ_SEARCH", "SYS_PTRACE"}) {
		t.Errorf("capabilities=true: securityContext %v", sc)
	}
}

// TestConfigIsConfigMapGeneratorMerge: settings given as values render what
// an overlay of deploy/base that merges them into its configMapGenerator
// builds (the way deploy/kind sets its OTLP endpoint): the same data under
// the same hashed name, which the DaemonSet's pods read, so that a changed
// setting rolls them as it does with kustomize.
func TestConfigIsConfigMapGeneratorMerge(t *testing.T) {
	dir := overlay(t, `configMapGenerator:
  - name: readyline
    behavior: merge
    literals:
      - READYLINE_OTLP_ENDPOINT=jaeger.readyline.svc:4317
      - READYLINE_OTLP_INSECURE=false
      - READYLINE_LOG_LEVEL=debug
      - READYLINE_ALERT=PodReadyToStartContainers=3s,pod.sandbox=2s
      - READYLINE_RECORD=events.jsonl
`, "base")
	values := map[string]any{"config": map[string]any{
		"otlpEndpoint": "jaeger.readyline.svc:4317",
		"otlpInsecure": false,
		"logLevel":     "debug",
		"alerts":       map[string]any{"PodReadyToStartContainers": "3s", "pod.sandbox": "2s"},
		"env":          map[string]any{"READYLINE_RECORD": "events.jsonl"},
	}}
	got := mustRender(t, baseOnly(values)).objects
	checkEquivalent(t, got, kustomize(t, dir), "readyline")
	if a, b := configMapName(t, got), configMapName(t, mustRender(t, baseOnly(nil)).objects); a == b {
		t.Errorf("other settings, the same ConfigMap %s: the DaemonSet would not roll", a)
	}
}

// TestPluginRBACIsDeployPluginRBAC: pluginRBAC.enabled adds what
// deploy/plugin-rbac builds, and changes nothing else.
func TestPluginRBACIsDeployPluginRBAC(t *testing.T) {
	got := added(t, mustRender(t, baseOnly(map[string]any{"pluginRBAC": map[string]any{"enabled": true}})), mustRender(t, baseOnly(nil)))
	checkEquivalent(t, got, kustomize(t, filepath.Join(deployDir, "plugin-rbac")), "readyline")
	// Neither gives the plugin's users get pods in every namespace: they
	// read the starts of the namespaces they may view, or where they are
	// bound per namespace.
	for k, o := range got {
		if o["kind"] == "ClusterRoleBinding" {
			t.Errorf("pluginRBAC's defaults bind %s cluster-wide", k)
		}
	}
}

// TestMonitoringIsDeployAlerts: prometheusRule.enabled and podMonitor.enabled
// add what deploy/alerts builds (its PrometheusRule holds the groups of
// rules.yaml), and change nothing else.
func TestMonitoringIsDeployAlerts(t *testing.T) {
	values := map[string]any{"prometheusRule": map[string]any{"enabled": true}, "podMonitor": map[string]any{"enabled": true}}
	got := added(t, mustRender(t, baseOnly(values)), mustRender(t, baseOnly(nil)))
	checkEquivalent(t, got, kustomize(t, filepath.Join(deployDir, "alerts")), "readyline")
}

// checkEquivalent fails unless got (the chart's objects) and want (a
// kustomization's) are the same objects, field by field, but for the
// differences allowed above.
func checkEquivalent(t *testing.T, got, want map[string]object, release string) {
	t.Helper()
	labels := helmLabels(t, release)
	for _, k := range slices.Sorted(maps.Keys(want)) {
		w := want[k]
		g, ok := got[k]
		if w["kind"] == "Namespace" {
			if ok {
				t.Errorf("the chart renders %s: helm install --create-namespace makes it", k)
			}
			continue
		}
		if !ok {
			t.Errorf("the chart does not render %s", k)
			continue
		}
		g, err := withoutHelmLabels(g, labels)
		if err != nil {
			t.Errorf("%s: %v", k, err)
		}
		if d := cmp.Diff(w, g); d != "" {
			t.Errorf("%s differs from the kustomization's (-kustomize +chart):\n%s", k, d)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok {
			t.Errorf("the chart renders %s, which the kustomization does not", k)
		}
	}
	if !t.Failed() {
		t.Logf("%d objects equal: %s", len(got), strings.Join(slices.Sorted(maps.Keys(got)), ", "))
	}
}

// added returns the objects of a that b has not, failing the test when an
// object of both differs.
func added(t *testing.T, a, b *release) map[string]object {
	t.Helper()
	out := map[string]object{}
	for k, o := range a.objects {
		if bo, ok := b.objects[k]; !ok {
			out[k] = o
		} else if d := cmp.Diff(bo, o); d != "" {
			t.Errorf("%s changed (-defaults +values):\n%s", k, d)
		}
	}
	for k := range b.objects {
		if _, ok := a.objects[k]; !ok {
			t.Errorf("%s is gone", k)
		}
	}
	return out
}

// configMapName is the name of the one ConfigMap of objs, which the
// DaemonSet's container must read.
func configMapName(t *testing.T, objs map[string]object) string {
	t.Helper()
	var names []string
	for _, o := range objs {
		if o["kind"] == "ConfigMap" {
			names = append(names, dig(o, "metadata", "name").(string))
		}
	}
	if len(names) != 1 {
		t.Fatalf("ConfigMaps %v, want one", names)
	}
	for _, o := range objs {
		if o["kind"] == "DaemonSet" {
			if ref := dig(o, "spec", "template", "spec", "containers", 0, "envFrom", 0, "configMapRef", "name"); ref != names[0] {
				t.Errorf("the DaemonSet reads ConfigMap %v, the chart renders %s", ref, names[0])
			}
		}
	}
	return names[0]
}

func toStrings(v any) []string {
	l, _ := v.([]any)
	out := make([]string, len(l))
	for i, s := range l {
		out[i] = fmt.Sprint(s)
	}
	return out
}
