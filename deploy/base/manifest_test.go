package base_test

import (
	"os"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

func decode(t *testing.T, file string, into any) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, into); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

func readylineContainer(t *testing.T, ds *appsv1.DaemonSet) *corev1.Container {
	t.Helper()
	for i := range ds.Spec.Template.Spec.Containers {
		if c := &ds.Spec.Template.Spec.Containers[i]; c.Name == "readyline" {
			return c
		}
	}
	t.Fatal("daemonset.yaml: no container named readyline")
	return nil
}

// TestProbesExecHealth: every probe of the DaemonSet runs `readyline
// health`, which asks the daemon on loopback in its pod; none reaches a
// port of the pod network, where any pod could hold its connections.
func TestProbesExecHealth(t *testing.T) {
	var ds appsv1.DaemonSet
	decode(t, "daemonset.yaml", &ds)
	c := readylineContainer(t, &ds)
	for name, p := range map[string]*corev1.Probe{"startupProbe": c.StartupProbe, "livenessProbe": c.LivenessProbe, "readinessProbe": c.ReadinessProbe} {
		switch {
		case p == nil:
			t.Errorf("no %s", name)
		case p.HTTPGet != nil || p.TCPSocket != nil || p.GRPC != nil:
			t.Errorf("%s probes a port of the pod network: %+v", name, p.ProbeHandler)
		case p.Exec == nil || !slices.Equal(p.Exec.Command, []string{"/readyline", "health"}):
			t.Errorf("%s: %+v, want exec /readyline health", name, p.ProbeHandler)
		case p.TimeoutSeconds < 4:
			t.Errorf("%s: timeoutSeconds %d, below readyline health's own 3 s and its start", name, p.TimeoutSeconds)
		}
	}
}

// TestNetworkPolicyAdmitsScrapersOnly: the NetworkPolicy selects the
// DaemonSet's pods and lets in only the metrics port the Prometheus
// annotations name, from a labelled namespace or readyline's own, never by
// a label of the connecting pod's alone nor by address.
func TestNetworkPolicyAdmitsScrapersOnly(t *testing.T) {
	var ds appsv1.DaemonSet
	decode(t, "daemonset.yaml", &ds)
	var np networkingv1.NetworkPolicy
	decode(t, "networkpolicy.yaml", &np)

	sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if err != nil {
		t.Fatal(err)
	}
	if sel.Empty() || !sel.Matches(labels.Set(ds.Spec.Template.Labels)) {
		t.Errorf("podSelector %v does not select the DaemonSet's pods %v", sel, ds.Spec.Template.Labels)
	}
	if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) {
		t.Errorf("policyTypes %v, want [Ingress]", np.Spec.PolicyTypes)
	}
	c := readylineContainer(t, &ds)
	var metrics *corev1.ContainerPort
	for i := range c.Ports {
		if c.Ports[i].Name == "metrics" {
			metrics = &c.Ports[i]
		}
	}
	if metrics == nil || ds.Spec.Template.Annotations["prometheus.io/port"] != "9464" || metrics.ContainerPort != 9464 {
		t.Fatalf("the metrics port %+v and the prometheus.io/port annotation %q disagree with --metrics-addr :9464",
			metrics, ds.Spec.Template.Annotations["prometheus.io/port"])
	}
	if len(np.Spec.Ingress) == 0 {
		t.Fatal("no ingress rule: nothing may scrape")
	}
	for _, rule := range np.Spec.Ingress {
		if len(rule.Ports) != 1 || rule.Ports[0].Port == nil || rule.Ports[0].Port.String() != metrics.Name {
			t.Errorf("ingress rule opens %v, want the metrics port only", rule.Ports)
		}
		if len(rule.From) == 0 {
			t.Error("ingress rule from anywhere")
		}
		for _, peer := range rule.From {
			switch {
			case peer.IPBlock != nil:
				t.Errorf("peer by address %v: the base cannot know the scrapers' addresses", peer.IPBlock)
			case peer.NamespaceSelector != nil && peer.PodSelector != nil:
				t.Errorf("peer %+v: a pod label is the tenant's to set", peer)
			case peer.NamespaceSelector != nil && peer.NamespaceSelector.MatchLabels["readyline.dev/scrape-metrics"] != "true":
				t.Errorf("namespace peer %v, want readyline.dev/scrape-metrics=true", peer.NamespaceSelector)
			case peer.PodSelector != nil && len(peer.PodSelector.MatchLabels)+len(peer.PodSelector.MatchExpressions) > 0:
				t.Errorf("pod peer %v: readyline's namespace is readyline's, all of it or none", peer.PodSelector)
			}
		}
	}
}
