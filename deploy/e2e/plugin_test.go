//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
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
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/readyline/readyline/correlator"
)

// The roles of deploy/plugin-rbac/roles.yaml.
const (
	pluginPodsClusterRole = "readyline-plugin-pods"
	pluginRole            = "readyline-plugin"
)

// testKubectlPlugin runs kubectl-readyline (make plugin) as the users it is
// meant for: ServiceAccounts with nothing but deploy/plugin-rbac's roles,
// each with a token from the TokenRequest API in a kubeconfig of its own,
// and a user of a client certificate the cluster's CA signed (CSR API),
// against the DaemonSet of deploy/local and pod, the lifecycle-demo that
// traceFromDaemonSet started (Ready and exported: the daemon keeps it).
// The users may get pods in pod's namespace only, through a RoleBinding of
// the ClusterRole, as deploy/plugin-rbac suggests for a team. Nobody has
// pods/exec: each reads the starts of pod's namespace through the daemon's
// secure API, and is refused another namespace's, by the API server and by
// the daemon itself; the admin's client certificate reads both.
func testKubectlPlugin(t *testing.T, pod *corev1.Pod) {
	ctx := testContext(t, 8*time.Minute)
	plugin := buildPlugin(t, ctx)
	applyPluginRoles(t, ctx)
	users := newNamespace(t)
	user := pluginUser(t, ctx, users, "plugin-user", pod.Namespace, pluginRole)
	// Enough to find the readyline pod, not to port-forward to it.
	noForward := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "readyline-plugin-no-forward-" + users, Namespace: ReadylineNamespace},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list"}}},
	}
	createRBAC(t, ctx, noForward)
	noForwardUser := pluginUser(t, ctx, users, "plugin-no-forward", pod.Namespace, noForward.Name)
	ns, name := pod.Namespace, pod.Name
	// A start in a namespace the readers may not read, kept by the daemon:
	// the admin (a client certificate of system:masters) reads it.
	other := newNamespace(t)
	secret := createPod(t, ctx, other, "not-yours", func(*corev1.Pod) {})
	if _, err := WaitForPod(ctx, env.Client, other, secret.Name, ConditionTrue(corev1.PodReady)); err != nil {
		t.Fatal(err)
	}
	admin := waitKept(t, ctx, plugin, env.Kubeconfig, other, secret.Name)

	t.Run("rbac", func(t *testing.T) { checkPluginRBAC(t, ctx, users, "plugin-user", ns, other) })

	t.Run("explain", func(t *testing.T) {
		r := runPlugin(t, ctx, plugin, user, "explain", "-n", ns, name)
		r.wantOK(t)
		for _, want := range []string{ns + "/" + name, "conditions", "PodReadyToStartContainers"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("the waterfall does not have %q:\n%s", want, r.stdout)
			}
		}
	})

	t.Run("explain-json", func(t *testing.T) {
		r := runPlugin(t, ctx, plugin, user, "explain", "-n", ns, name, "--output", "json")
		r.wantOK(t)
		var tl correlator.Timeline
		if err := json.Unmarshal([]byte(r.stdout), &tl); err != nil {
			t.Fatalf("explain -o json: %v\n%s", err, r.stdout)
		}
		if tl.Pod.UID != string(pod.UID) || tl.Outcome != correlator.OutcomeReady {
			t.Errorf("explain -o json: pod %+v, outcome %q; want UID %s, ready", tl.Pod, tl.Outcome, pod.UID)
		}
	})

	t.Run("list", func(t *testing.T) {
		// No -n: the namespace of the kubeconfig's context, which is pod's.
		r := runPlugin(t, ctx, plugin, user, "list")
		r.wantOK(t)
		found := false
		for line := range strings.Lines(r.stdout) {
			f := strings.Fields(line)
			found = found || len(f) >= 3 && f[0] == name && f[1] == env.NodeName && f[2] == "ready"
		}
		if !found {
			t.Errorf("list has no line %q on node %s, ready:\n%s", name, env.NodeName, r.stdout)
		}
		// All namespaces: the daemon lists the user's only.
		starts := listAll(t, ctx, plugin, user)
		if !slices.ContainsFunc(starts, func(s listedStart) bool {
			return s.UID == string(pod.UID) && s.Node == env.NodeName && s.Namespace == ns && s.Name == name
		}) {
			t.Errorf("list -A -o json has no start of %s/%s (%s) on %s: %+v", ns, name, pod.UID, env.NodeName, starts)
		}
		if i := slices.IndexFunc(starts, func(s listedStart) bool { return s.Namespace != ns }); i >= 0 {
			t.Errorf("list -A as a reader of %s lists %s/%s", ns, starts[i].Namespace, starts[i].Name)
		}
		if !slices.ContainsFunc(admin, func(s listedStart) bool { return s.Namespace == ns && s.Name == name }) {
			t.Errorf("list -A as admin has no %s/%s: %+v", ns, name, admin)
		}
	})

	t.Run("refused-elsewhere", func(t *testing.T) {
		r := runPlugin(t, ctx, plugin, user, "explain", "-n", other, secret.Name)
		r.wantFailure(t, "forbidden", "may not get pods in namespace "+other)
		// The daemon itself, asked directly through a port-forward with
		// the reader's token: the user may not read other's start, nor
		// list it; without a credential, nothing.
		checkDaemonRefuses(t, ctx, tokenOf(t, user), ns, name, other, secret.Name)
	})

	t.Run("client-certificate", func(t *testing.T) {
		certUser := certificateUser(t, ctx, users, ns)
		r := runPlugin(t, ctx, plugin, certUser, "explain", "-n", ns, name)
		r.wantOK(t)
		starts := listAll(t, ctx, plugin, certUser)
		if !slices.ContainsFunc(starts, func(s listedStart) bool { return s.UID == string(pod.UID) }) {
			t.Errorf("list -A as the certificate's user has no start of %s/%s: %+v", ns, name, starts)
		}
		if i := slices.IndexFunc(starts, func(s listedStart) bool { return s.Namespace != ns }); i >= 0 {
			t.Errorf("list -A as a certificate's reader of %s lists %s/%s", ns, starts[i].Namespace, starts[i].Name)
		}
	})

	t.Run("no-pods-portforward", func(t *testing.T) {
		r := runPlugin(t, ctx, plugin, noForwardUser, "explain", "-n", ns, name)
		r.wantFailure(t, "forbidden", "create pods/portforward in namespace "+ReadylineNamespace, "ask for pods/portforward")
		r = runPlugin(t, ctx, plugin, noForwardUser, "explain", "--web", "-n", ns, name)
		r.wantFailure(t, "forbidden", "create pods/portforward in namespace "+ReadylineNamespace)
	})

	t.Run("not-found", func(t *testing.T) {
		r := runPlugin(t, ctx, plugin, user, "explain", "-n", ns, "no-such-pod")
		r.wantFailure(t, "pod "+ns+"/no-such-pod not found")
	})

	t.Run("not-scheduled", func(t *testing.T) {
		p := createPod(t, ctx, ns, "never-scheduled", func(p *corev1.Pod) {
			p.Spec.NodeSelector = map[string]string{"readyline.dev/no-such-node": "true"}
		})
		// On no node, no daemon has seen it: the plugin tells it from the
		// pod, as the user (who may not list Events here), in the
		// scheduler's words once it said them.
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			got, err := env.Client.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			c, ok := Condition(got, corev1.PodScheduled)
			return ok && c.Status == corev1.ConditionFalse, nil
		})
		if err != nil {
			t.Fatalf("the scheduler never said %s/%s was unschedulable: %v", ns, p.Name, err)
		}
		r := runPlugin(t, ctx, plugin, user, "explain", "-n", ns, p.Name, "--output", "json")
		r.wantOK(t)
		var tl correlator.Timeline
		if err := json.Unmarshal([]byte(r.stdout), &tl); err != nil {
			t.Fatalf("explain -o json: %v\n%s", err, r.stdout)
		}
		if want := "not scheduled yet: the scheduler: Unschedulable: 0/1 nodes are available"; tl.Pod.UID != string(p.UID) || !strings.HasPrefix(tl.Waiting, want) {
			t.Errorf("explain of a pod no node matches: %s waiting %q, want %s and %q", tl.Pod.UID, tl.Waiting, p.UID, want)
		}
	})

	t.Run("in-progress", func(t *testing.T) {
		// Running on the node but never Ready: the daemon derives its
		// start as of now, through the same check of who may read it, with
		// what it waits on.
		p := createPod(t, ctx, ns, "never-ready", func(p *corev1.Pod) {
			p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{
				ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"false"}}},
				PeriodSeconds: 1,
			}
		})
		if _, err := WaitForPod(ctx, env.Client, ns, p.Name, func(p *corev1.Pod) bool { return ContainerRunning(p, "main") }); err != nil {
			t.Fatal(err)
		}
		r := runPlugin(t, ctx, plugin, user, "explain", "-n", ns, p.Name)
		r.wantOK(t)
		for _, want := range []string{ns + "/never-ready  STARTING for", "where the time went"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("the waterfall of a start in progress does not have %q:\n%s", want, r.stdout)
			}
		}
		// Before its first probe ran the status says it; after, the probe
		// that holds it in the kubelet's words.
		if !strings.Contains(r.stdout, "waiting: main: running, not ready") && !strings.Contains(r.stdout, "waiting: main: readinessProbe failing ×") {
			t.Errorf("the waterfall of a start in progress does not say what holds main:\n%s", r.stdout)
		}
	})

	t.Run("web", func(t *testing.T) { testPluginWeb(t, ctx, plugin, user, pod) })
	t.Run("secrets-readers", func(t *testing.T) { testSecretReaders(t, ctx, plugin, users) })
}

// listedStart is an entry of `kubectl readyline list -o json`.
type listedStart struct {
	Node, Namespace, Name, UID string
}

// listAll runs `list -A -o json` as the user of kubeconfig.
func listAll(t *testing.T, ctx context.Context, plugin, kubeconfig string) []listedStart {
	t.Helper()
	r := runPlugin(t, ctx, plugin, kubeconfig, "list", "-A", "-o", "json")
	r.wantOK(t)
	var l struct{ Timelines []listedStart }
	if err := json.Unmarshal([]byte(r.stdout), &l); err != nil {
		t.Fatalf("list -A -o json: %v\n%s", err, r.stdout)
	}
	return l.Timelines
}

// waitKept waits until the daemon keeps the start of pod namespace/name,
// asking with `explain` as the user of kubeconfig, and returns what
// `list -A` lists to that user then.
func waitKept(t *testing.T, ctx context.Context, plugin, kubeconfig, namespace, name string) []listedStart {
	t.Helper()
	var r pluginResult
	err := wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		r = runPlugin(t, ctx, plugin, kubeconfig, "explain", "-n", namespace, name)
		return r.code == 0, nil
	})
	if err != nil {
		t.Fatalf("the daemon never kept %s/%s: %s", namespace, name, r.stderr)
	}
	return listAll(t, ctx, plugin, kubeconfig)
}

// checkPluginRBAC asks the API server what a user bound as
// deploy/plugin-rbac suggests (readyline-plugin-pods in podNamespace,
// readyline-plugin in readyline's namespace) may do, verb by verb on every
// resource near what the plugin uses: exactly pods get in podNamespace,
// pods list and pods/portforward get and create in readyline's namespace;
// no pods/exec, attach or proxy anywhere.
func checkPluginRBAC(t *testing.T, ctx context.Context, users, sa, podNamespace, other string) {
	allowed := func(a access) bool {
		if a.group != "" {
			return false
		}
		switch {
		case a.resource == "pods" && a.subresource == "" && a.verb == "get":
			return a.namespace == podNamespace
		case a.resource == "pods" && a.subresource == "" && a.verb == "list":
			return a.namespace == ReadylineNamespace
		case a.resource == "pods" && a.subresource == "portforward" && (a.verb == "get" || a.verb == "create"):
			return a.namespace == ReadylineNamespace
		}
		return false
	}
	var resources []probedResource
	for _, sub := range []string{"", "exec", "attach", "portforward", "proxy", "log", "ephemeralcontainers", "status"} {
		resources = append(resources, probedResource{resource: "pods", subresource: sub, namespaced: true})
	}
	resources = append(resources,
		probedResource{resource: "services", subresource: "proxy", namespaced: true},
		probedResource{resource: "secrets", namespaced: true},
		probedResource{resource: "configmaps", namespaced: true},
		probedResource{resource: "nodes", subresource: "proxy", names: []string{env.NodeName}},
		probedResource{resource: "serviceaccounts", subresource: "token", namespaced: true},
	)
	user := "system:serviceaccount:" + users + ":" + sa
	n := checkAccess(t, ctx, user, []string{"system:serviceaccounts", "system:serviceaccounts:" + users, "system:authenticated"},
		accessesOf(resources, []string{podNamespace, ReadylineNamespace, other, "kube-system"}), allowed)
	t.Logf("%d access reviews of %s: only what deploy/plugin-rbac/roles.yaml grants allowed", n, user)
}

// testPluginWeb runs `explain --web`, reads the URL it prints, asks the
// daemon through the forward, and ends it with SIGINT as Ctrl-C would.
func testPluginWeb(t *testing.T, ctx context.Context, plugin, kubeconfig string, pod *corev1.Pod) {
	page, stop, err := PluginWeb(ctx, plugin, "--kubeconfig", kubeconfig, "-n", pod.Namespace, pod.Name)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if said, err := stop(); err != nil {
			t.Errorf("explain --web after SIGINT: %v, want exit status 0\n%s", err, said)
		} else if strings.Contains(said, "warning") {
			t.Errorf("explain --web warned: %s", said)
		}
	}()
	suffix := "/ui/pods/" + pod.Namespace + "/" + pod.Name
	base, ok := strings.CutSuffix(page, suffix)
	if !ok || !strings.HasPrefix(base, "http://127.0.0.1:") || strings.Count(base, "/") != 3 {
		t.Fatalf("explain --web printed %q, want http://127.0.0.1:PORT/<random>%s", page, suffix)
	}
	// Only the printed URL's random path reads as the user.
	root := base[:strings.LastIndex(base, "/")]
	if code, body, err := HTTPGet(ctx, root+suffix); err != nil || code != http.StatusNotFound {
		t.Errorf("GET %s, without the random path: %d %v, want 404\n%.300s", root+suffix, code, err, body)
	}
	body := httpGet(t, ctx, page)
	if !bytes.Contains(body, []byte(pod.Name)) || !bytes.Contains(body, []byte(string(pod.UID))) {
		t.Errorf("the page through the forward does not name %s (uid %s):\n%.2000s", pod.Name, pod.UID, body)
	}
	want := []string{"PodScheduled", "PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready"}
	if got := PageConditions(body); !slices.Equal(got, want) {
		t.Errorf("the page draws the conditions %v, want %v", got, want)
	}
	if list := httpGet(t, ctx, base+"/ui/"); !bytes.Contains(list, []byte(pod.Name)) {
		t.Errorf("/ui/ through the forward does not list %s:\n%.2000s", pod.Name, list)
	}
}

// httpGet returns the body of url, which must answer 200.
func httpGet(t *testing.T, ctx context.Context, url string) []byte {
	t.Helper()
	code, body, err := HTTPGet(ctx, url)
	if err != nil || code != http.StatusOK {
		t.Fatalf("GET %s: %d, %v\n%.2000s", url, code, err, body)
	}
	return body
}

// buildPlugin runs `make plugin` and returns bin/kubectl-readyline.
func buildPlugin(t *testing.T, ctx context.Context) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, "make", "--no-print-directory", "plugin")
	cmd.Dir = env.RepoRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make plugin: %v\n%s", err, out)
	}
	return filepath.Join(env.RepoRoot, "bin", "kubectl-readyline")
}

// applyPluginRoles applies deploy/plugin-rbac/roles.yaml (not its example
// bindings) and deletes it when the test ends.
func applyPluginRoles(t *testing.T, ctx context.Context) {
	t.Helper()
	objs, err := env.ApplyFile(ctx, "", filepath.Join(env.RepoRoot, "deploy", "plugin-rbac", "roles.yaml"))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := env.DeleteAndWait(ctx, 30*time.Second, objs...); err != nil {
			t.Errorf("deleting deploy/plugin-rbac's roles: %v", err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
}

// createRBAC creates role or binding obj (as cluster-admin); a namespaced
// one goes with its namespace, the rest is deleted when the test ends.
func createRBAC(t *testing.T, ctx context.Context, obj any) {
	t.Helper()
	rbac := env.Client.RbacV1()
	var err error
	switch o := obj.(type) {
	case *rbacv1.Role:
		_, err = rbac.Roles(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		t.Cleanup(func() {
			ignoreNotFound(t, rbac.Roles(o.Namespace).Delete(context.Background(), o.Name, metav1.DeleteOptions{}))
		})
	case *rbacv1.RoleBinding:
		_, err = rbac.RoleBindings(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		t.Cleanup(func() {
			ignoreNotFound(t, rbac.RoleBindings(o.Namespace).Delete(context.Background(), o.Name, metav1.DeleteOptions{}))
		})
	default:
		t.Fatalf("createRBAC: %T", obj)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func ignoreNotFound(t *testing.T, err error) {
	if err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("cleaning up: %v", err)
	}
}

// pluginUser creates ServiceAccount name in namespace users with the
// ClusterRole readyline-plugin-pods in podNamespace (a RoleBinding) and
// the Role role in readyline's namespace, waits until the API server's
// RBAC says so, and returns a kubeconfig for it in the test's temporary
// directory: the admin kubeconfig's server and CA, a token from the
// TokenRequest API, and podNamespace as its context's namespace.
func pluginUser(t *testing.T, ctx context.Context, users, name, podNamespace, role string) string {
	t.Helper()
	return boundUser(t, ctx, users, name, podNamespace, pluginPodsClusterRole, role)
}

// boundUser is pluginUser with the ClusterRole podsRole bound in
// podNamespace instead of readyline-plugin-pods (view, edit, admin).
func boundUser(t *testing.T, ctx context.Context, users, name, podNamespace, podsRole, role string) string {
	t.Helper()
	sa, err := env.Client.CoreV1().ServiceAccounts(users).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The binding's name is unique in readyline's namespace, which
	// outlives users.
	bindRoles(t, ctx, name+"-"+users, podNamespace, podsRole, role, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: users})
	username := fmt.Sprintf("system:serviceaccount:%s:%s", users, name)
	waitAllowed(t, ctx, username, nil, podNamespace)

	expiration := int64(15 * 60)
	token, err := env.Client.CoreV1().ServiceAccounts(users).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiration},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest for %s: %v", username, err)
	}
	return writeKubeconfig(t, name, podNamespace, &clientcmdapi.AuthInfo{Token: token.Status.Token})
}

// bindPluginRoles binds subject, by bindings named name, to the ClusterRole
// readyline-plugin-pods in podNamespace and to role in readyline's
// namespace.
func bindPluginRoles(t *testing.T, ctx context.Context, name, podNamespace, role string, subject rbacv1.Subject) {
	t.Helper()
	bindRoles(t, ctx, name, podNamespace, pluginPodsClusterRole, role, subject)
}

// bindRoles binds subject, by bindings named name, to the ClusterRole
// podsRole in podNamespace and to role in readyline's namespace.
func bindRoles(t *testing.T, ctx context.Context, name, podNamespace, podsRole, role string, subject rbacv1.Subject) {
	t.Helper()
	createRBAC(t, ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: podNamespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: podsRole},
		Subjects:   []rbacv1.Subject{subject},
	})
	createRBAC(t, ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ReadylineNamespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role},
		Subjects:   []rbacv1.Subject{subject},
	})
}

// waitAllowed waits until the API server's RBAC lets user (in groups) get
// pods in podNamespace and list them in readyline's namespace.
func waitAllowed(t *testing.T, ctx context.Context, user string, groups []string, podNamespace string) {
	t.Helper()
	for _, attr := range []authorizationv1.ResourceAttributes{
		{Namespace: podNamespace, Verb: "get", Resource: "pods"},
		{Namespace: ReadylineNamespace, Verb: "list", Resource: "pods"},
	} {
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			review, err := env.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
				Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: groups, ResourceAttributes: &attr},
			}, metav1.CreateOptions{})
			return err == nil && review.Status.Allowed, nil
		})
		if err != nil {
			t.Fatalf("RBAC does not let %s %s pods in %s: %v", user, attr.Verb, attr.Namespace, err)
		}
	}
}

// writeKubeconfig writes a kubeconfig for the user name with auth in the
// test's temporary directory: the admin kubeconfig's server and CA, and
// namespace as its context's namespace.
func writeKubeconfig(t *testing.T, name, namespace string, auth *clientcmdapi.AuthInfo) string {
	t.Helper()
	ca := env.Config.TLSClientConfig.CAData
	if len(ca) == 0 && env.Config.TLSClientConfig.CAFile != "" {
		var err error
		if ca, err = os.ReadFile(env.Config.TLSClientConfig.CAFile); err != nil {
			t.Fatal(err)
		}
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: env.Config.Host, CertificateAuthorityData: ca}
	cfg.AuthInfos[name] = auth
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: "local", AuthInfo: name, Namespace: namespace}
	cfg.CurrentContext = name
	path := filepath.Join(t.TempDir(), name+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// createPod creates a pod of busybox sleeping in namespace, changed by
// edit, and returns it; it is deleted when the test ends.
func createPod(t *testing.T, ctx context.Context, namespace, name string, edit func(*corev1.Pod)) *corev1.Pod {
	t.Helper()
	grace := int64(0)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{
				Name: "main", Image: "localhost/busybox:local", ImagePullPolicy: corev1.PullNever,
				Command: []string{"sleep", "3600"},
			}},
		},
	}
	edit(p)
	p, err := env.Client.CoreV1().Pods(namespace).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ignoreNotFound(t, env.Client.CoreV1().Pods(namespace).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: &grace}))
	})
	return p
}

// pluginResult is one run of kubectl-readyline.
type pluginResult struct {
	args           []string
	stdout, stderr string
	// code is the exit status.
	code int
}

// runPlugin runs `kubectl-readyline COMMAND --kubeconfig kubeconfig ARGS`.
func runPlugin(t *testing.T, ctx context.Context, plugin, kubeconfig string, command string, args ...string) pluginResult {
	t.Helper()
	args = append([]string{command, "--kubeconfig", kubeconfig}, args...)
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, plugin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	r := pluginResult{args: args}
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("kubectl-readyline %s: %v", strings.Join(args, " "), err)
	}
	r.stdout, r.stderr = stdout.String(), stderr.String()
	return r
}

func (r pluginResult) wantOK(t *testing.T) {
	t.Helper()
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("kubectl-readyline %s: exit status %d, want 0 and nothing on stderr\nstderr: %s\nstdout: %s", strings.Join(r.args, " "), r.code, r.stderr, r.stdout)
	}
}

// wantFailure: exit status 1, with every one of want on stderr.
func (r pluginResult) wantFailure(t *testing.T, want ...string) {
	t.Helper()
	if r.code != 1 {
		t.Errorf("kubectl-readyline %s: exit status %d, want 1\nstderr: %s", strings.Join(r.args, " "), r.code, r.stderr)
	}
	for _, w := range want {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("kubectl-readyline %s: stderr does not say %q:\n%s", strings.Join(r.args, " "), w, r.stderr)
		}
	}
}
