//go:build e2e

package kind

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// startsNamespace holds the pods whose starts checkPodStarts reads, and
// its viewer.
const startsNamespace = "readyline-helm-starts"

// checkPodStarts reads pod starts through the chart's aggregated API as
// users do, with kubectl and no plugin: a pod pinned to each node starts;
// a ServiceAccount with view in their namespace only lists them there (the
// chart's ClusterRole aggregates into view) and is refused cluster-wide and
// in another namespace; one with view cluster-wide runs `kubectl get
// podstarts -A` and sees both, each ready on its own node, in the
// server-side table's columns.
func checkPodStarts(t *testing.T, ctx context.Context, c *cluster, nodes []corev1.Node) {
	t.Helper()
	apiServiceAvailable(t, ctx, c)
	cleanup := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		crb := c.client.RbacV1().ClusterRoleBindings()
		if err := crb.Delete(ctx, startsNamespace+"-viewer", metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting the cluster viewer's binding: %v", err)
		}
		deleteNamespace(t, ctx, c, startsNamespace, 2*time.Minute)
	}
	cleanup() // what a killed run left
	t.Cleanup(cleanup)
	if _, err := c.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: startsNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Users: view in the namespace, and view everywhere.
	nsViewer := serviceAccountKubeconfig(t, ctx, c, "ns-viewer", &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "ns-viewer", Namespace: startsNamespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "ns-viewer", Namespace: startsNamespace}},
	}, "")
	clusterViewer := serviceAccountKubeconfig(t, ctx, c, "cluster-viewer", nil, startsNamespace+"-viewer")

	// A pod on each node.
	var pods []string
	for _, n := range nodes {
		name := "on-" + n.Name
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: startsNamespace},
			Spec: corev1.PodSpec{
				NodeName:                      n.Name,
				TerminationGracePeriodSeconds: new(int64(1)),
				Tolerations:                   []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
				Containers: []corev1.Container{{
					Name: "main", Image: "localhost/busybox:local", ImagePullPolicy: corev1.PullNever,
					Command: []string{"sh", "-c", "sleep 3600"},
					ReadinessProbe: &corev1.Probe{
						ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}},
						PeriodSeconds: 1,
					},
				}},
			},
		}
		if _, err := c.client.CoreV1().Pods(startsNamespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pods = append(pods, name)
	}

	// The cluster viewer: every namespace, both starts ready on their nodes.
	var table string
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		out, err := kubectlAs(ctx, clusterViewer, "get", "podstarts", "-A")
		table = out
		if err != nil {
			return false, nil
		}
		for i, n := range nodes {
			if !slices.ContainsFunc(strings.Split(out, "\n"), func(l string) bool {
				f := strings.Fields(l)
				return len(f) >= 4 && f[0] == startsNamespace && f[1] == pods[i] && f[2] == n.Name && f[3] == "ready"
			}) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("the cluster viewer's kubectl get podstarts -A never showed %v ready on their nodes: %v\n%s", pods, err, table)
	}
	header := strings.Fields(strings.SplitN(table, "\n", 2)[0])
	if want := []string{"NAMESPACE", "NAME", "NODE", "STATUS", "DURATION", "WAITING", "ON", "AGE"}; !slices.Equal(header, want) {
		t.Errorf("kubectl get podstarts -A columns %v, want %v", header, want)
	}
	t.Logf("the cluster viewer's kubectl get podstarts -A:\n%s", table)

	// The namespace's viewer: that namespace, and nothing else.
	out, err := kubectlAs(ctx, nsViewer, "get", "podstarts", "-n", startsNamespace)
	for _, p := range pods {
		if err != nil || !strings.Contains(out, p) {
			t.Errorf("the namespace viewer's kubectl get podstarts -n %s lacks %s: %v\n%s", startsNamespace, p, err, out)
		}
	}
	for _, args := range [][]string{{"get", "podstarts", "-A"}, {"get", "podstarts", "-n", "kube-system"}, {"get", "podstarts", "-n", namespace}} {
		out, err := kubectlAs(ctx, nsViewer, args...)
		if err == nil || !strings.Contains(out, "Forbidden") {
			t.Errorf("the namespace viewer's kubectl %s: %v, want Forbidden\n%s", strings.Join(args, " "), err, out)
		}
	}
	// Its page through the API server, read on its node for the viewer.
	last := pods[len(pods)-1]
	html, err := kubectlAs(ctx, nsViewer, "get", "--raw",
		"/apis/readyline.dev/v1alpha1/namespaces/"+startsNamespace+"/podstarts/"+last+"/web/ui/pods/"+startsNamespace+"/"+last)
	if err != nil || !strings.Contains(html, "<html") || !strings.Contains(html, last) {
		t.Errorf("the namespace viewer's page of %s: %v\n%.1000s", last, err, html)
	}
	// One start whole: read from its node for the viewer.
	yaml, err := kubectlAs(ctx, nsViewer, "get", "podstart", "-n", startsNamespace, pods[len(pods)-1], "-o", "yaml")
	if err != nil || !strings.Contains(yaml, "timeline:") || !strings.Contains(yaml, "outcome: ready") {
		t.Errorf("the namespace viewer's -o yaml: %v\n%.2000s", err, yaml)
	}
}

// apiServiceAvailable waits until the API server routes readyline.dev to
// the chart's readyline-api.
func apiServiceAvailable(t *testing.T, ctx context.Context, c *cluster) {
	t.Helper()
	res := c.dynamic.Resource(schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"})
	var conds any
	err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		o, err := res.Get(ctx, "v1alpha1.readyline.dev", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		list, _ := o.Object["status"].(map[string]any)["conditions"].([]any)
		conds = list
		for _, cond := range list {
			m, _ := cond.(map[string]any)
			if m["type"] == "Available" && m["status"] == "True" {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("APIService v1alpha1.readyline.dev not Available: %v (conditions %v)", err, conds)
	}
}

// serviceAccountKubeconfig makes ServiceAccount name in startsNamespace,
// bound by binding (a RoleBinding) or, when clusterBinding is set, to view
// cluster-wide by a ClusterRoleBinding of that name; waits until RBAC lets
// it list podstarts where bound, and writes a kubeconfig of its token: no
// client certificate, the API server's address and CA only.
func serviceAccountKubeconfig(t *testing.T, ctx context.Context, c *cluster, name string, binding *rbacv1.RoleBinding, clusterBinding string) string {
	t.Helper()
	if _, err := c.client.CoreV1().ServiceAccounts(startsNamespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	scope := startsNamespace
	if clusterBinding != "" {
		scope = ""
		crb := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: clusterBinding},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: startsNamespace}},
		}
		if _, err := c.client.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	} else if _, err := c.client.RbacV1().RoleBindings(startsNamespace).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	user := fmt.Sprintf("system:serviceaccount:%s:%s", startsNamespace, name)
	err := wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		r, err := c.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: scope, Verb: "list", Group: "readyline.dev", Resource: "podstarts"},
		}}, metav1.CreateOptions{})
		return err == nil && r.Status.Allowed, nil
	})
	if err != nil {
		t.Fatalf("%s may not list podstarts in %q: %v", user, scope, err)
	}
	expiration := int64(30 * 60)
	tok, err := c.client.CoreV1().ServiceAccounts(startsNamespace).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiration}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	admin, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cluster := admin.Clusters[admin.Contexts[admin.CurrentContext].Cluster]
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["kind"] = &clientcmdapi.Cluster{Server: cluster.Server, CertificateAuthorityData: cluster.CertificateAuthorityData}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: "kind", AuthInfo: name, Namespace: startsNamespace}
	cfg.CurrentContext = name
	path := filepath.Join(t.TempDir(), name+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// kubectlAs runs the kubectl deploy/node builds with kubeconfig.
func kubectlAs(ctx context.Context, kubeconfig string, args ...string) (string, error) {
	bin, err := exec.CommandContext(ctx, filepath.Join(repoRoot, "deploy", "node", "node.sh"), "tool", "kubectl").Output()
	if err != nil {
		return "", fmt.Errorf("node.sh tool kubectl: %w", err)
	}
	out, err := exec.CommandContext(ctx, strings.TrimSpace(string(bin)), append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
	return string(out), err
}

// secretKey is key of Secret name in the release's namespace.
func secretKey(t *testing.T, ctx context.Context, c *cluster, name, key string) []byte {
	t.Helper()
	s, err := c.client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Data[key]) == 0 {
		t.Fatalf("Secret %s has no %s", name, key)
	}
	return s.Data[key]
}
