package chart_test

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	"sigs.k8s.io/yaml"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
)

// everything turns on every optional part of the chart.
var everything = map[string]any{
	"capabilities":      true,
	"extraCapabilities": []any{"SYS_ADMIN"},
	"podMonitor":        map[string]any{"enabled": true, "interval": "30s"},
	"serviceMonitor":    map[string]any{"enabled": true},
	"prometheusRule":    map[string]any{"enabled": true, "labels": map[string]any{"release": "prometheus"}},
	"pluginRBAC":        map[string]any{"enabled": true},
}

// TestLint is `helm lint readyline/` with the defaults and with every part
// turned on: no warning nor error (the informational messages are logged).
func TestLint(t *testing.T) {
	for name, values := range map[string]map[string]any{"defaults": nil, "everything": everything} {
		t.Run(name, func(t *testing.T) {
			l := lint.RunAll(chartDir, values, "readyline")
			for _, m := range l.Messages {
				if m.Severity >= support.WarningSev {
					t.Error(m.Error())
				} else {
					t.Log(m.Error())
				}
			}
		})
	}
}

// TestLintCatchesAnError: the lint above can fail, on a chart whose
// template renders no valid YAML.
func TestLintCatchesAnError(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(chartDir)); err != nil {
		t.Fatal(err)
	}
	broken := []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [broken\n")
	if err := os.WriteFile(dir+"/templates/broken.yaml", broken, 0o644); err != nil {
		t.Fatal(err)
	}
	if l := lint.RunAll(dir, nil, "readyline"); l.HighestSeverity < support.ErrorSev {
		t.Errorf("helm lint of a chart with a broken template: highest severity %d, messages %v", l.HighestSeverity, l.Messages)
	}
}

// TestEverythingRenders: with every part on, each object is a valid
// Kubernetes object of its kind (strictly decoded when client-go knows the
// kind), the monitors select the DaemonSet's pods, and the ServiceMonitor
// scrapes as the PodMonitor does (honorLabels, a node label).
func TestEverythingRenders(t *testing.T) {
	r := mustRender(t, everything)
	var kinds []string
	for _, k := range r.order {
		kinds = append(kinds, strings.Fields(k)[0])
	}
	for _, want := range []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "RoleBinding", "Role", "ConfigMap",
		"DaemonSet", "NetworkPolicy", "Service", "PodMonitor", "ServiceMonitor", "PrometheusRule"} {
		if !slices.Contains(kinds, want) {
			t.Errorf("no %s rendered: %v", want, r.order)
		}
	}
	if unknown := slices.Sorted(slices.Values(strictAll(t, r))); !slices.Equal(unknown, []string{"APIService", "PodMonitor", "PrometheusRule", "ServiceMonitor"}) {
		t.Errorf("kinds client-go does not know: %v, want the Prometheus Operator's three and the aggregator's APIService", unknown)
	}
	var ds appsv1.DaemonSet
	strict(t, r.objects["DaemonSet readyline/readyline"], &ds)
	podLabels := labels.Set(ds.Spec.Template.Labels)
	c := ds.Spec.Template.Spec.Containers[0]
	if caps := c.SecurityContext.Capabilities.Add; len(caps) != 5 || caps[4] != "SYS_ADMIN" {
		t.Errorf("extraCapabilities: capabilities added %v", caps)
	}

	svc := r.objects["Service readyline/readyline-metrics"]
	if sel := labels.SelectorFromSet(toLabels(dig(svc, "spec", "selector"))); !sel.Matches(podLabels) {
		t.Errorf("the metrics Service selects %v, not the DaemonSet's pods %v", sel, podLabels)
	}
	if dig(svc, "spec", "clusterIP") != "None" || dig(svc, "spec", "ports", 0, "targetPort") != "metrics" {
		t.Errorf("the metrics Service: %v", dig(svc, "spec"))
	}
	pm, sm := r.objects["PodMonitor readyline/readyline"], r.objects["ServiceMonitor readyline/readyline"]
	if sel := labels.SelectorFromSet(toLabels(dig(pm, "spec", "selector", "matchLabels"))); !sel.Matches(podLabels) {
		t.Errorf("the PodMonitor selects %v, not the DaemonSet's pods", sel)
	}
	if sel := labels.SelectorFromSet(toLabels(dig(sm, "spec", "selector", "matchLabels"))); !sel.Matches(toLabels(dig(svc, "metadata", "labels"))) {
		t.Errorf("the ServiceMonitor selects %v, not the metrics Service", sel)
	}
	pe, se := dig(pm, "spec", "podMetricsEndpoints", 0).(map[string]any), dig(sm, "spec", "endpoints", 0).(map[string]any)
	for _, field := range []string{"port", "path", "honorLabels", "relabelings"} {
		if !equalJSON(pe[field], se[field]) {
			t.Errorf("the ServiceMonitor's %s %v, the PodMonitor's %v", field, se[field], pe[field])
		}
	}
	if pe["interval"] != "30s" || se["interval"] != nil {
		t.Errorf("intervals: PodMonitor %v, ServiceMonitor %v; want 30s and none", pe["interval"], se["interval"])
	}
	if dig(r.objects["PrometheusRule readyline/readyline"], "metadata", "labels", "release") != "prometheus" {
		t.Errorf("prometheusRule.labels not on the PrometheusRule")
	}
}

// TestReleaseNameAndNamespace: installed as release "tracer" in namespace
// "observability", every object is named after the release, the namespaced
// ones are in that namespace (but the client CA's RoleBinding, in
// kube-system), and every reference between them holds: the bindings name
// the ServiceAccount the pods run as, the pods read the ConfigMap rendered,
// the NetworkPolicy selects the pods.
func TestReleaseNameAndNamespace(t *testing.T) {
	r, err := render(t, "tracer", "observability", map[string]any{"pluginRBAC": map[string]any{"enabled": true}})
	if err != nil {
		t.Fatal(err)
	}
	const full = "tracer-readyline"
	for _, k := range r.order {
		o := r.objects[k]
		name, _ := dig(o, "metadata", "name").(string)
		ns, _ := dig(o, "metadata", "namespace").(string)
		// The APIService's name is the group's: one per cluster.
		if !strings.HasPrefix(name, full) && k != "APIService /v1alpha1.readyline.dev" {
			t.Errorf("%s: not named after the release (%s)", k, full)
		}
		switch {
		case k == "RoleBinding kube-system/"+full+"-client-ca", k == "RoleBinding kube-system/"+full+"-api-auth-reader":
		case o["kind"] == "APIService":
			if ref := dig(o, "spec", "service"); dig(ref, "name") != full+"-api" || dig(ref, "namespace") != "observability" {
				t.Errorf("%s routes to Service %v, want observability/%s-api", k, ref, full)
			}
		case o["kind"] == "ClusterRole" || o["kind"] == "ClusterRoleBinding":
			if ns != "" {
				t.Errorf("%s: a cluster-scoped object with a namespace", k)
			}
		case ns != "observability":
			t.Errorf("%s: not in the release's namespace", k)
		}
		if dig(o, "metadata", "labels", "app.kubernetes.io/instance") != "tracer" {
			t.Errorf("%s: no app.kubernetes.io/instance=tracer", k)
		}
		if subjects, ok := dig(o, "subjects").([]any); ok && !strings.Contains(k, "plugin") {
			sa := full // the daemon's, or readyline-api's for its bindings
			if strings.Contains(k, full+"-api") {
				sa = full + "-api"
			}
			if len(subjects) != 1 || dig(subjects, 0, "name") != sa || dig(subjects, 0, "namespace") != "observability" {
				t.Errorf("%s binds %v, want ServiceAccount observability/%s", k, subjects, sa)
			}
		}
		// Two roles the cluster has: the client CA's reader, and the
		// reviews of system:auth-delegator.
		if ref, ok := dig(o, "roleRef", "name").(string); ok && ref != "extension-apiserver-authentication-reader" && ref != "system:auth-delegator" {
			if _, found := r.objects[dig(o, "roleRef", "kind").(string)+" "+nsOf(dig(o, "roleRef", "kind").(string), ns)+"/"+ref]; !found {
				t.Errorf("%s refers to %s %s, which the chart does not render", k, dig(o, "roleRef", "kind"), ref)
			}
		}
	}
	var ds appsv1.DaemonSet
	strict(t, r.objects["DaemonSet observability/"+full], &ds)
	if ds.Spec.Template.Spec.ServiceAccountName != full {
		t.Errorf("the pods run as %q, want %s", ds.Spec.Template.Spec.ServiceAccountName, full)
	}
	configMapName(t, r.objects)
	sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil || !sel.Matches(labels.Set(ds.Spec.Template.Labels)) {
		t.Errorf("the DaemonSet's selector %v does not select its pods %v (%v)", sel, ds.Spec.Template.Labels, err)
	}
	for _, name := range []string{full + "-metrics", full + "-node-api"} {
		np := r.objects["NetworkPolicy observability/"+name]
		if sel := labels.SelectorFromSet(toLabels(dig(np, "spec", "podSelector", "matchLabels"))); !sel.Matches(labels.Set(ds.Spec.Template.Labels)) {
			t.Errorf("NetworkPolicy %s selects %v, not the pods", name, sel)
		}
	}
	// readyline-api: its pods run as its ServiceAccount, read its Secret,
	// are its Service's and the node API's NetworkPolicy's peers, and find
	// the daemons by the DaemonSet's pod labels.
	var api appsv1.Deployment
	strict(t, r.objects["Deployment observability/"+full+"-api"], &api)
	apiPod := labels.Set(api.Spec.Template.Labels)
	if spec := api.Spec.Template.Spec; spec.ServiceAccountName != full+"-api" || spec.Volumes[0].Secret.SecretName != full+"-api-certs" {
		t.Errorf("readyline-api's pods run as %q and read Secret %v", spec.ServiceAccountName, spec.Volumes[0].Secret)
	}
	if sel := labels.SelectorFromSet(toLabels(dig(r.objects["Service observability/"+full+"-api"], "spec", "selector"))); !sel.Matches(apiPod) {
		t.Errorf("readyline-api's Service selects %v, not its pods %v", sel, apiPod)
	}
	if sel := labels.SelectorFromSet(toLabels(dig(r.objects["NetworkPolicy observability/"+full+"-node-api"], "spec", "ingress", 0, "from", 0, "podSelector", "matchLabels"))); !sel.Matches(apiPod) {
		t.Errorf("the node API's NetworkPolicy admits %v, not readyline-api's pods %v", sel, apiPod)
	}
	daemons := ""
	for _, a := range api.Spec.Template.Spec.Containers[0].Args {
		daemons, _ = strings.CutPrefix(a, "--daemon-selector=")
		if daemons != a {
			break
		}
	}
	if sel, err := labels.Parse(daemons); err != nil || !sel.Matches(labels.Set(ds.Spec.Template.Labels)) {
		t.Errorf("readyline-api looks for daemons by %q, not the DaemonSet's pods %v (%v)", daemons, ds.Spec.Template.Labels, err)
	}
	if v := ds.Spec.Template.Spec.Volumes[0]; v.Secret == nil || v.Secret.SecretName != full+"-node-api" {
		t.Errorf("the daemons' node-api volume %+v, want Secret %s-node-api", v, full)
	}
	for _, want := range []string{"rollout status daemonset/" + full, "--readyline-namespace observability", full + "-plugin-pods"} {
		if !strings.Contains(r.notes, want) {
			t.Errorf("NOTES.txt lacks %q:\n%s", want, r.notes)
		}
	}
}

// TestValuesReachTheObjects: each value of values.yaml changes what it says.
func TestValuesReachTheObjects(t *testing.T) {
	values := map[string]any{
		"image":             map[string]any{"repository": "registry.example/readyline", "tag": "v1.2.3", "pullPolicy": "Always"},
		"imagePullSecrets":  []any{map[string]any{"name": "pull"}},
		"resources":         map[string]any{"requests": map[string]any{"cpu": "50m", "memory": "100Mi"}, "limits": map[string]any{"memory": "512Mi"}},
		"priorityClassName": "",
		"tolerations":       []any{map[string]any{"key": "dedicated", "operator": "Equal", "value": "tracing", "effect": "NoSchedule"}},
		"nodeSelector":      map[string]any{"kubernetes.io/os": "linux"},
		"affinity":          map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{map[string]any{"key": "tracing", "operator": "Exists"}}}}}}},
		"podLabels":         map[string]any{"team": "platform"},
		"podAnnotations":    map[string]any{"example.com/owner": "platform"},
		"serviceAccount":    map[string]any{"annotations": map[string]any{"example.com/role": "tracer"}},
		"config": map[string]any{
			"otlpEndpoint": "http://collector:4318", "otlpInsecure": false, "logLevel": "debug",
			"alerts": map[string]any{"PodReadyToStartContainers": "off", "Ready": "30s"},
			"env":    map[string]any{"READYLINE_KEEP_BYTES": "64Mi", "READYLINE_LOG_LEVEL": "warn"},
		},
		"networkPolicy": map[string]any{
			"scrapeNamespaceLabel": "kubernetes.io/metadata.name=monitoring",
			"extraFrom":            []any{map[string]any{"ipBlock": map[string]any{"cidr": "10.0.0.0/16"}}},
		},
	}
	r := mustRender(t, values)
	strictAll(t, r)
	var ds appsv1.DaemonSet
	strict(t, r.objects["DaemonSet readyline/readyline"], &ds)
	spec, c := ds.Spec.Template.Spec, ds.Spec.Template.Spec.Containers[0]
	for what, ok := range map[string]bool{
		"image":             c.Image == "registry.example/readyline:v1.2.3" && c.ImagePullPolicy == "Always",
		"imagePullSecrets":  len(spec.ImagePullSecrets) == 1 && spec.ImagePullSecrets[0].Name == "pull",
		"resources":         c.Resources.Requests.Cpu().String() == "50m" && c.Resources.Limits.Memory().String() == "512Mi",
		"priorityClassName": spec.PriorityClassName == "",
		"tolerations":       len(spec.Tolerations) == 1 && spec.Tolerations[0].Key == "dedicated",
		"nodeSelector":      spec.NodeSelector["kubernetes.io/os"] == "linux",
		"affinity":          spec.Affinity != nil && spec.Affinity.NodeAffinity != nil,
		"podLabels":         ds.Spec.Template.Labels["team"] == "platform" && ds.Spec.Template.Labels["app.kubernetes.io/name"] == "readyline",
		"podAnnotations":    ds.Spec.Template.Annotations["example.com/owner"] == "platform" && ds.Spec.Template.Annotations["prometheus.io/port"] == "9464",
		"serviceAccount":    dig(r.objects["ServiceAccount readyline/readyline"], "metadata", "annotations", "example.com/role") == "tracer",
	} {
		if !ok {
			t.Errorf("%s not in effect: %+v", what, spec)
		}
	}
	cm := r.objects["ConfigMap readyline/"+configMapName(t, r.objects)]
	want := map[string]any{
		"READYLINE_OTLP_ENDPOINT": "http://collector:4318", "READYLINE_OTLP_INSECURE": "false",
		"READYLINE_LOG_LEVEL":    "warn", // config.env wins
		"READYLINE_ALERT":        "PodReadyToStartContainers=off,Ready=30s",
		"READYLINE_CRI_ENDPOINT": "unix:///run/containerd/containerd.sock", "READYLINE_KEEP_BYTES": "64Mi",
		"READYLINE_NODE_API_ADDR": ":9468", "READYLINE_SECURE_API_ADDR": "",
	}
	if !equalJSON(cm["data"], want) {
		t.Errorf("ConfigMap data %v, want %v", cm["data"], want)
	}
	from := dig(r.objects["NetworkPolicy readyline/readyline-metrics"], "spec", "ingress", 0, "from")
	wantFrom := []any{
		map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": "monitoring"}}},
		map[string]any{"podSelector": map[string]any{}},
		map[string]any{"ipBlock": map[string]any{"cidr": "10.0.0.0/16"}},
	}
	if !equalJSON(from, wantFrom) {
		t.Errorf("NetworkPolicy from %v, want %v", from, wantFrom)
	}

	digest := "sha256:" + strings.Repeat("ab", 32)
	r = mustRender(t, map[string]any{"image": map[string]any{"digest": digest}})
	if img := dig(r.objects["DaemonSet readyline/readyline"], "spec", "template", "spec", "containers", 0, "image"); img != "localhost/readyline@"+digest {
		t.Errorf("image.digest: image %v", img)
	}
}

// TestPartsTurnOff: rbac.create, serviceAccount.create and
// networkPolicy.enabled false leave their objects out, and the pods run as
// the ServiceAccount named.
func TestPartsTurnOff(t *testing.T) {
	r := mustRender(t, map[string]any{
		"rbac":           map[string]any{"create": false},
		"serviceAccount": map[string]any{"create": false, "name": "mine"},
		"networkPolicy":  map[string]any{"enabled": false},
		"aggregatedAPI":  map[string]any{"enabled": false},
	})
	var kinds []string
	for _, k := range r.order {
		kinds = append(kinds, strings.Fields(k)[0])
	}
	if !slices.Equal(kinds, []string{"ConfigMap", "DaemonSet"}) {
		t.Errorf("rendered %v, want the ConfigMap and the DaemonSet only", r.order)
	}
	if sa := dig(r.objects["DaemonSet readyline/readyline"], "spec", "template", "spec", "serviceAccountName"); sa != "mine" {
		t.Errorf("serviceAccountName %v, want mine", sa)
	}
	// The aggregated API without rbac.create: its ServiceAccount, but no
	// grant.
	r = mustRender(t, map[string]any{"rbac": map[string]any{"create": false}})
	for _, k := range r.order {
		if kind := strings.Fields(k)[0]; strings.HasPrefix(kind, "Role") || strings.HasPrefix(kind, "ClusterRole") {
			t.Errorf("rbac.create false renders %s", k)
		}
	}
	if _, ok := r.objects["ServiceAccount readyline/readyline-api"]; !ok {
		t.Errorf("rbac.create false: no ServiceAccount for readyline-api: %v", r.order)
	}
	if _, err := render(t, "readyline", "readyline", map[string]any{"serviceAccount": map[string]any{"create": false}}); err == nil ||
		!strings.Contains(err.Error(), "serviceAccount.name") {
		t.Errorf("serviceAccount.create false without a name: %v, want an error naming serviceAccount.name", err)
	}
}

// TestSchemaRefuses: values.schema.json refuses what would render a broken
// DaemonSet or be silently ignored (a misspelt key).
func TestSchemaRefuses(t *testing.T) {
	for name, values := range map[string]map[string]any{
		"misspelt key":       {"capabilites": true},
		"misspelt config":    {"config": map[string]any{"otlpEndpiont": "x:4317"}},
		"log level":          {"config": map[string]any{"logLevel": "verbose"}},
		"alert duration":     {"config": map[string]any{"alerts": map[string]any{"Ready": "5 seconds"}}},
		"alert name":         {"config": map[string]any{"alerts": map[string]any{"PodScheduled": "5s"}}},
		"capabilities type":  {"capabilities": "true"},
		"pull policy":        {"image": map[string]any{"pullPolicy": "Sometimes"}},
		"env name":           {"config": map[string]any{"env": map[string]any{"READYLINE-RECORD": "x"}}},
		"capability name":    {"capabilities": true, "extraCapabilities": []any{"cap_sys_admin"}},
		"plugin subject":     {"pluginRBAC": map[string]any{"enabled": true, "subjects": []any{map[string]any{"kind": "Team", "name": "x"}}}},
		"monitor interval":   {"podMonitor": map[string]any{"enabled": true, "interval": "often"}},
		"networkPolicy type": {"networkPolicy": map[string]any{"enabled": "yes"}},
		"scrape label":       {"networkPolicy": map[string]any{"scrapeNamespaceLabel": "monitoring"}},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := render(t, "readyline", "readyline", values); err == nil {
				t.Errorf("values %v rendered", values)
			} else {
				t.Log(err)
			}
		})
	}
}

// TestNotesSayWhatToDo: NOTES.txt names the DaemonSet to wait for, the Pod
// Security level the namespace needs, and who may scrape.
func TestNotesSayWhatToDo(t *testing.T) {
	notes := mustRender(t, nil).notes
	for _, want := range []string{
		"kubectl -n readyline rollout status daemonset/readyline",
		"pod-security.kubernetes.io/enforce=privileged",
		"kubectl readyline explain -n NAMESPACE POD\n",
		"kubectl label namespace monitoring readyline.dev/scrape-metrics=true",
		"(privileged)",
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("NOTES.txt lacks %q:\n%s", want, notes)
		}
	}
	notes = mustRender(t, map[string]any{"capabilities": true, "nameOverride": "rl"}).notes
	for _, want := range []string{"(BPF, PERFMON, DAC_READ_SEARCH, SYS_PTRACE)", "--readyline-selector app.kubernetes.io/name=rl,app.kubernetes.io/component=node-agent"} {
		if !strings.Contains(notes, want) {
			t.Errorf("NOTES.txt lacks %q:\n%s", want, notes)
		}
	}
	t.Logf("NOTES.txt:\n%s", notes)
}

// TestRulesAreDeployAlerts: the chart's copy of the alerting rules is
// deploy/alerts/rules.yaml (deploy/alerts/test.sh generate writes both).
func TestRulesAreDeployAlerts(t *testing.T) {
	chart, err := os.ReadFile(chartDir + "/files/rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	alerts, err := os.ReadFile(repoPath("deploy", "alerts", "rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(chart, alerts) {
		t.Errorf("%s/files/rules.yaml is not deploy/alerts/rules.yaml: run deploy/alerts/test.sh generate", chartDir)
	}
}

// strict decodes o into a typed object, refusing unknown fields.
func strict(t *testing.T, o object, into runtime.Object) {
	t.Helper()
	if o == nil {
		t.Fatalf("no object to decode into %T", into)
	}
	b, err := yaml.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, into); err != nil {
		t.Fatalf("%s: %v", key(o), err)
	}
}

// strictAll decodes each object of r whose kind client-go knows into its
// type, refusing unknown fields; it returns the kinds it could not check.
func strictAll(t *testing.T, r *release) []string {
	t.Helper()
	var unknown []string
	for _, k := range r.order {
		o := r.objects[k]
		gv, err := schema.ParseGroupVersion(o["apiVersion"].(string))
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		typed, err := scheme.Scheme.New(gv.WithKind(o["kind"].(string)))
		if err != nil {
			unknown = append(unknown, o["kind"].(string))
			continue
		}
		strict(t, o, typed)
	}
	return unknown
}

func toLabels(v any) labels.Set {
	m, _ := v.(map[string]any)
	s := labels.Set{}
	for k, v := range m {
		s[k], _ = v.(string)
	}
	return s
}

func equalJSON(a, b any) bool {
	x, err1 := yaml.Marshal(a)
	y, err2 := yaml.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

// nsOf is the namespace a roleRef of kind points into from a binding in ns.
func nsOf(kind, ns string) string {
	if kind == "ClusterRole" {
		return ""
	}
	return ns
}

// TestSecureAPIIsOffByDefault: the per-node secure API (each user's own
// credential on the node) is off by default, and with it the grants only it
// needs (tokenreviews, the client CA); secureAPI.enabled turns it on with
// them. SubjectAccessReviews stay while either API serves a reader, and go
// when neither does.
func TestSecureAPIIsOffByDefault(t *testing.T) {
	for _, c := range []struct {
		name           string
		values         map[string]any
		addr           string
		tokens, access bool
	}{
		{"default", nil, "", false, true},
		{"secureAPI.enabled", map[string]any{"secureAPI": map[string]any{"enabled": true}}, "127.0.0.1:9467", true, true},
		{"neither API", map[string]any{"aggregatedAPI": map[string]any{"enabled": false}}, "", false, false},
	} {
		r := mustRender(t, c.values)
		rules := fmt.Sprint(dig(r.objects["ClusterRole /readyline"], "rules"))
		if strings.Contains(rules, "tokenreviews") != c.tokens || strings.Contains(rules, "subjectaccessreviews") != c.access {
			t.Errorf("%s: ClusterRole rules %s, want tokenreviews %v, subjectaccessreviews %v", c.name, rules, c.tokens, c.access)
		}
		if _, ok := r.objects["RoleBinding kube-system/readyline-client-ca"]; ok != c.tokens {
			t.Errorf("%s: the client CA's RoleBinding rendered %v, want %v", c.name, ok, c.tokens)
		}
		var cm map[string]any
		for k, o := range r.objects {
			if strings.HasPrefix(k, "ConfigMap ") {
				cm, _ = o["data"].(map[string]any)
			}
		}
		if v, ok := cm["READYLINE_SECURE_API_ADDR"]; !ok || v != c.addr {
			t.Errorf("%s: READYLINE_SECURE_API_ADDR is %v (set: %v), want %q", c.name, v, ok, c.addr)
		}
	}
}
