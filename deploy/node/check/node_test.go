//go:build e2e

package check

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/readyline/readyline/deploy/e2e"
)

// testContext returns a context that ends after d or when the test ends.
func testContext(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// TestLocalNodeReady: the node is Ready and schedulable, runs the kubelet
// and containerd versions deploy/node builds, has its primary address as
// InternalIP, and CoreDNS is available.
func TestLocalNodeReady(t *testing.T) {
	ctx := testContext(t, time.Minute)
	node, err := env.Client.CoreV1().Nodes().Get(ctx, env.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("node %s: %v", env.NodeName, err)
	}
	ready := false
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			ready = c.Status == corev1.ConditionTrue
		}
	}
	if !ready {
		t.Errorf("node %s is not Ready: %+v", node.Name, node.Status.Conditions)
	}
	if node.Spec.Unschedulable || len(node.Spec.Taints) > 0 {
		t.Errorf("node is not schedulable: unschedulable=%v taints=%v", node.Spec.Unschedulable, node.Spec.Taints)
	}
	// node.sh's defaults, or the older kubelet and containerd that
	// K8S_KUBELET_VERSION and CONTAINERD_VERSION ask it for (make test-compat).
	info := node.Status.NodeInfo
	kubelet, runtime := e2e.KubernetesVersion, "v2.4.2"
	if v := os.Getenv("K8S_KUBELET_VERSION"); v != "" {
		kubelet = v
	}
	if v := os.Getenv("CONTAINERD_VERSION"); v != "" {
		runtime = v
	}
	t.Logf("kubelet %s, container runtime %s, control plane %s", info.KubeletVersion, info.ContainerRuntimeVersion, e2e.KubernetesVersion)
	if info.KubeletVersion != kubelet {
		t.Errorf("kubelet version %q, want %s", info.KubeletVersion, kubelet)
	}
	if want := "containerd://" + strings.TrimPrefix(runtime, "v"); info.ContainerRuntimeVersion != want {
		t.Errorf("container runtime %q, want %s", info.ContainerRuntimeVersion, want)
	}
	internalIP := ""
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			internalIP = a.Address
		}
	}
	if internalIP == "" || strings.HasPrefix(internalIP, "127.") {
		t.Errorf("node InternalIP = %q, want the primary address", internalIP)
	}

	dns, err := env.Client.AppsV1().Deployments("kube-system").Get(ctx, "coredns", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("CoreDNS deployment: %v", err)
	}
	if dns.Status.AvailableReplicas < 1 {
		t.Errorf("CoreDNS has %d available replicas", dns.Status.AvailableReplicas)
	}
}

// TestLocalNodeServiceAccountToken runs kubectl in a pod with no kubeconfig, so that it
// uses the in-cluster configuration every in-cluster client uses: the projected
// service-account token, the cluster CA from kube-root-ca.crt and the kubernetes
// Service (through kube-proxy). The API server must see the pod as its
// namespace's default ServiceAccount. Its logs are read through the kubelet.
// (busybox wget cannot be used: its built-in TLS shares no cipher suite with
// the API server.)
func TestLocalNodeServiceAccountToken(t *testing.T) {
	t.Parallel()
	ns := env.TestNamespace(t, "node-check-whoami")
	ctx := testContext(t, 2*time.Minute)
	const name = "whoami"
	kubectl, err := e2e.Tool("kubectl")
	if err != nil {
		t.Fatal(err)
	}
	hostPath := corev1.HostPathFile
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "whoami", Image: "localhost/busybox:local", ImagePullPolicy: corev1.PullNever,
				Command: []string{"sh", "-c", `set -e
sa=/var/run/secrets/kubernetes.io/serviceaccount
test -s $sa/token && test -s $sa/ca.crt && test "$(cat $sa/namespace)" = "$NAMESPACE"
/kubectl auth whoami -o json`},
				Env: []corev1.EnvVar{{Name: "NAMESPACE", ValueFrom: &corev1.EnvVarSource{
					FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}},
				VolumeMounts: []corev1.VolumeMount{{Name: "kubectl", MountPath: "/kubectl", ReadOnly: true}},
			}},
			Volumes: []corev1.Volume{{Name: "kubectl", VolumeSource: corev1.VolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: kubectl, Type: &hostPath}}}},
		},
	}
	if _, err := env.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	done, err := e2e.WaitForPod(ctx, env.Client, ns, name, func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
	if err != nil {
		t.Fatal(err)
	}
	logs, err := env.Client.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		t.Fatalf("pod logs (through the kubelet): %v", err)
	}
	if done.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("pod %s: %s; logs:\n%s", done.Status.Phase, e2e.DescribeStatus(done), logs)
	}
	var review struct {
		Status struct {
			UserInfo struct {
				Username string `json:"username"`
			} `json:"userInfo"`
		} `json:"status"`
	}
	if err := json.Unmarshal(logs, &review); err != nil {
		t.Fatalf("decoding SelfSubjectReview %q: %v", logs, err)
	}
	if want := "system:serviceaccount:" + ns + ":default"; review.Status.UserInfo.Username != want {
		t.Errorf("the API server sees the pod as %q, want %q", review.Status.UserInfo.Username, want)
	}
}
