//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// testPodStarts deploys deploy/local-aggregated: deploy/local and
// deploy/aggregated (readyline-api, its APIService, the daemon's node
// API), with pki.sh's certificates, and reads pod starts as users do:
// `kubectl get podstarts`, no plugin. A view-bound user of one namespace
// lists its starts and is refused elsewhere; a watch sees a start go from
// starting to ready; `-o yaml` carries the timeline; the node API turns
// away a user's token (its TLS handshake wants the aggregator's
// certificate).
func testPodStarts(t *testing.T) {
	ctx := testContext(t, 12*time.Minute)
	pki := func(what string) {
		t.Helper()
		kubectl, err := Tool("kubectl")
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.CommandContext(ctx, filepath.Join(env.RepoRoot, "deploy/aggregated/pki.sh"), what)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+env.Kubeconfig, "KUBECTL="+kubectl)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("pki.sh %s: %v\n%s", what, err, out)
		}
	}
	pki("secrets")
	d := deployReadyline(t, "deploy/local-aggregated")
	pki("apiservice")
	if _, err := env.Kubectl(ctx, nil, "-n", ReadylineNamespace, "rollout", "status", "deployment/readyline-api", "--timeout=180s"); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Kubectl(ctx, nil, "wait", "--for=condition=Available", "apiservice/v1alpha1.readyline.dev", "--timeout=120s"); err != nil {
		out, _ := env.Kubectl(ctx, nil, "get", "apiservice/v1alpha1.readyline.dev", "-o", "yaml")
		logs, _ := env.Kubectl(ctx, nil, "-n", ReadylineNamespace, "logs", "deployment/readyline-api", "--tail=50")
		t.Fatalf("%v\n%s\n%s", err, out, logs)
	}

	mine, other := newNamespace(t), newNamespace(t)
	viewer := viewUser(t, ctx, mine, "podstarts-viewer")
	kubectlAs := func(ctx context.Context, kubeconfig string, args ...string) (string, error) {
		kubectl, err := Tool("kubectl")
		if err != nil {
			return "", err
		}
		cmd := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	// The watch first, then the pod: it is seen starting, then ready.
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	kubectl, err := Tool("kubectl")
	if err != nil {
		t.Fatal(err)
	}
	watchCmd := exec.CommandContext(wctx, kubectl, "--kubeconfig", viewer, "get", "podstarts", "-n", mine, "-w", "--no-headers")
	stdout, err := watchCmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	watchCmd.Stderr = os.Stderr
	if err := watchCmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer watchCmd.Wait()
	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()

	slow := createPod(t, ctx, mine, "slow-ready", func(p *corev1.Pod) {
		p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{
			ProbeHandler:        corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}},
			InitialDelaySeconds: 12, PeriodSeconds: 1,
		}
	})
	createPod(t, ctx, other, "elsewhere", func(*corev1.Pod) {})
	var sawStarting, sawReady bool
	deadline := time.After(3 * time.Minute)
	for !sawReady {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the watch ended (starting seen: %v)", sawStarting)
			}
			t.Logf("watch: %s", l)
			f := strings.Fields(l)
			if len(f) < 3 || f[0] != slow.Name {
				continue
			}
			switch f[2] {
			case "starting":
				sawStarting = true
			case "ready":
				sawReady = true
			}
		case <-deadline:
			t.Fatalf("the watch did not see %s ready in 3 minutes (starting seen: %v)", slow.Name, sawStarting)
		}
	}
	if !sawStarting {
		t.Errorf("the watch saw %s ready but never starting (12 s before its readiness probe's first try)", slow.Name)
	}
	stopWatch()

	// The viewer: its namespace, and nothing else.
	out, err := kubectlAs(ctx, viewer, "get", "podstarts", "-n", mine)
	if err != nil || !strings.Contains(out, slow.Name) || !strings.Contains(out, "WAITING ON") || !strings.Contains(out, env.NodeName) {
		t.Errorf("the viewer's get podstarts -n %s: %v\n%s", mine, err, out)
	}
	for _, args := range [][]string{{"get", "podstarts", "-n", other}, {"get", "podstarts", "-A"}, {"get", "podstarts", "-n", other, "elsewhere"}} {
		out, err := kubectlAs(ctx, viewer, args...)
		if err == nil || !strings.Contains(out, "Forbidden") || strings.Contains(out, "elsewhere ") {
			t.Errorf("the viewer's %s: %v, want Forbidden\n%s", strings.Join(args, " "), err, out)
		}
	}
	// The admin: every namespace, by field.
	all, err := env.Kubectl(ctx, nil, "get", "podstarts", "-A", "--field-selector", "spec.nodeName="+env.NodeName)
	if err != nil || !strings.Contains(string(all), "elsewhere") || !strings.Contains(string(all), slow.Name) {
		t.Errorf("the admin's get podstarts -A: %v\n%s", err, all)
	}
	ready, err := env.Kubectl(ctx, nil, "get", "podstarts", "-n", mine, "--field-selector", "status.outcome=ready", "-o", "name")
	if err != nil || !strings.Contains(string(ready), slow.Name) {
		t.Errorf("podstarts -n %s with status.outcome=ready: %v\n%s", mine, err, ready)
	}
	// One start whole, read from the node for the viewer.
	yaml, err := kubectlAs(ctx, viewer, "get", "podstarts", "-n", mine, slow.Name, "-o", "yaml")
	if err != nil || !strings.Contains(yaml, "timeline:") || !strings.Contains(yaml, string(slow.UID)) || !strings.Contains(yaml, "outcome: ready") {
		t.Errorf("the viewer's -o yaml has no timeline: %v\n%.3000s", err, yaml)
	}
	// The start's page, through the API server (as kubectl proxy and
	// kubectl readyline explain --web reach it), read on the node for the
	// viewer; another namespace's is refused.
	page := "/apis/readyline.dev/v1alpha1/namespaces/" + mine + "/podstarts/" + slow.Name + "/web/ui/pods/" + mine + "/" + slow.Name
	html, err := kubectlAs(ctx, viewer, "get", "--raw", page)
	if err != nil || !strings.Contains(html, "<html") || !strings.Contains(html, slow.Name) {
		t.Errorf("the viewer's page of %s through the API server: %v\n%.1000s", slow.Name, err, html)
	}
	if out, err := kubectlAs(ctx, viewer, "get", "--raw", "/apis/readyline.dev/v1alpha1/namespaces/"+other+"/podstarts/elsewhere/web/ui/"); err == nil || !strings.Contains(out, "orbidden") {
		t.Errorf("the viewer's page of another namespace's start: %v, want Forbidden\n%.500s", err, out)
	}
	// The plugin reads the same API for the viewer, who may not
	// port-forward to readyline: its list and waterfall come through the
	// API server.
	plugin := buildPlugin(t, ctx)
	r := runPlugin(t, ctx, plugin, viewer, "list", "-n", mine, "--via", "api")
	r.wantOK(t)
	if !strings.Contains(r.stdout, slow.Name) || !strings.Contains(r.stdout, env.NodeName) {
		t.Errorf("the viewer's kubectl readyline list --via api:\n%s", r.stdout)
	}
	r = runPlugin(t, ctx, plugin, viewer, "explain", "-n", mine, slow.Name)
	r.wantOK(t)
	if !strings.Contains(r.stdout, slow.Name) || !strings.Contains(r.stdout, "ready") {
		t.Errorf("the viewer's kubectl readyline explain (auto: the API):\n%s", r.stdout)
	}
	if r := runPlugin(t, ctx, plugin, viewer, "explain", "-n", other, "elsewhere"); r.code == 0 || !strings.Contains(r.stderr, "orbidden") {
		t.Errorf("the viewer's explain of another namespace's pod: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if t.Failed() {
		logs, _ := env.Kubectl(ctx, nil, "-n", ReadylineNamespace, "logs", "deployment/readyline-api", "--tail=50")
		t.Logf("readyline-api's log:\n%s", logs)
		dl, _ := d.Logs(ctx)
		t.Logf("the daemon's log (last 3000 bytes):\n%s", tail(dl, 3000))
	}

	// The node API: a user's token, or the namespace's default
	// ServiceAccount's, gets no TLS connection (the daemon runs on the
	// host's network: its node IP).
	expiration := int64(10 * 60)
	defaultToken, err := env.Client.CoreV1().ServiceAccounts(mine).CreateToken(ctx, "default",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiration}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	for who, token := range map[string]string{"a user's token": tokenOf(t, viewer), "the default ServiceAccount's token": defaultToken.Status.Token} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+net.JoinHostPort(d.Pod.Status.PodIP, "9468")+"/api/v1/timelines", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		if resp, err := client.Do(req); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			t.Errorf("the node API answered %s without the aggregator's certificate: %d %.300s", who, resp.StatusCode, b)
		} else if !strings.Contains(err.Error(), "certificate") && !strings.Contains(err.Error(), "tls") {
			t.Errorf("the node API with %s: %v, want a TLS handshake refused for want of a certificate", who, err)
		}
	}

	// Last: it restarts the daemon and readyline-api.
	t.Run("restarts", func(t *testing.T) { checkPodStartsRestarts(t, ctx, d, viewer, mine, slow.Name) })
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// viewUser returns a kubeconfig of a ServiceAccount of namespace bound to
// the cluster's view role there and nowhere else, once RBAC lets it list
// podstarts there (the aggregated ClusterRole reaches view).
func viewUser(t *testing.T, ctx context.Context, namespace, name string) string {
	t.Helper()
	sa, err := env.Client.CoreV1().ServiceAccounts(namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	createRBAC(t, ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: namespace}},
	})
	waitMay(t, ctx, fmt.Sprintf("system:serviceaccount:%s:%s", namespace, name),
		authorizationv1.ResourceAttributes{Namespace: namespace, Verb: "watch", Group: "readyline.dev", Resource: "podstarts"})
	expiration := int64(15 * 60)
	token, err := env.Client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiration},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return writeKubeconfig(t, name, namespace, &clientcmdapi.AuthInfo{Token: token.Status.Token})
}

// checkPodStartsRestarts: readyline.dev's answers outlive what serves them.
// The node's daemon deleted mid-list: every list before, during and after
// its restart succeeds with the start (readyline-api keeps what a node said
// last), and the new daemon gives its timeline again. Each readyline-api
// replica killed in turn under a watching informer (as a controller or
// kubectl's cache watches, re-watching and listing again when told to):
// a pod started afterwards is seen starting and then ready.
func checkPodStartsRestarts(t *testing.T, ctx context.Context, d *Deployment, viewer, namespace, name string) {
	kubectlAs := func(args ...string) (string, error) {
		kubectl, err := Tool("kubectl")
		if err != nil {
			return "", err
		}
		out, err := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", viewer}, args...)...).CombinedOutput()
		return string(out), err
	}
	// The daemon, deleted mid-list.
	daemons := metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=readyline,app.kubernetes.io/component=node-agent"}
	// Deleted once the first list has the start; its grace period (15 s)
	// is its flush, then the DaemonSet makes the next.
	deleted, listed := make(chan error, 1), make(chan struct{})
	var deletedAt atomic.Int64
	go func() {
		select {
		case <-listed:
		case <-ctx.Done():
			deleted <- ctx.Err()
			return
		}
		err := env.Client.CoreV1().Pods(ReadylineNamespace).Delete(ctx, d.Pod.Name, metav1.DeleteOptions{})
		deletedAt.Store(time.Now().UnixNano())
		deleted <- err
	}()
	// Until the new daemon runs, nothing can have told readyline-api
	// otherwise: every list has the start. (The new daemon did not see it
	// start, and may then say it has no start of it: it ends there.)
	lists, during, running := 0, 0, false
	for deadline := time.Now().Add(90 * time.Second); !running; lists++ {
		if time.Now().After(deadline) {
			t.Fatalf("no new daemon running 90 s after deleting %s (%d lists)", d.Pod.Name, lists)
		}
		pods, err := env.Client.CoreV1().Pods(ReadylineNamespace).List(ctx, daemons)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			running = running || (p.UID != d.Pod.UID && p.Status.Phase == corev1.PodRunning)
		}
		out, err := kubectlAs("get", "podstarts", "-n", namespace, "-o", "name")
		if running {
			break // the list may have raced the new daemon's first answer
		}
		if err != nil || !strings.Contains(out, "/"+name+"\n") {
			t.Fatalf("list %d, the node's daemon deleted (%v): %v\n%s", lists, deletedAt.Load() != 0, err, out)
		}
		if lists == 0 {
			close(listed)
		}
		if deletedAt.Load() != 0 {
			during++
		}
		time.Sleep(300 * time.Millisecond)
	}
	if lists == 0 {
		close(listed) // a new daemon ran before the first list
	}
	if err := <-deleted; err != nil {
		t.Fatal(err)
	}
	if during == 0 {
		t.Errorf("no list ran after the daemon's deletion (%d lists in all)", lists)
	}
	t.Logf("%d lists as the node's daemon restarted (%d after its deletion, before the next ran), each with %s", lists, during, name)

	// Each replica, killed under a watch.
	gvr := schema.GroupVersionResource{Group: "readyline.dev", Version: "v1alpha1", Resource: "podstarts"}
	informer := dynamicinformer.NewFilteredDynamicInformer(env.Dynamic, gvr, namespace, 0, cache.Indexers{}, nil).Informer()
	var mu sync.Mutex
	seen := map[string][]string{} // name -> outcomes, in order
	record := func(obj any) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		outcome, _, _ := unstructured.NestedString(u.Object, "status", "outcome")
		mu.Lock()
		defer mu.Unlock()
		if o := seen[u.GetName()]; len(o) == 0 || o[len(o)-1] != outcome {
			seen[u.GetName()] = append(o, outcome)
		}
	}
	informer.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: record, UpdateFunc: func(_, obj any) { record(obj) }})
	ictx, stop := context.WithCancel(ctx)
	defer stop()
	go informer.RunWithContext(ictx)
	if !cache.WaitForCacheSync(ictx.Done(), informer.HasSynced) {
		t.Fatal("the podstarts informer did not sync")
	}
	replicas, err := env.Client.CoreV1().Pods(ReadylineNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=readyline-api"})
	if err != nil {
		t.Fatal(err)
	}
	killed := map[types.UID]bool{}
	for _, r := range replicas.Items {
		if err := env.Client.CoreV1().Pods(ReadylineNamespace).Delete(ctx, r.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		killed[r.UID] = true
		// Two replicas Ready again, neither a killed one, before the next.
		ready := 0
		for deadline := time.Now().Add(2 * time.Minute); ready < 2; time.Sleep(time.Second) {
			if time.Now().After(deadline) {
				t.Fatalf("readyline-api: %d replicas Ready 2 min after killing %s", ready, r.Name)
			}
			pods, err := env.Client.CoreV1().Pods(ReadylineNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=readyline-api"})
			if err != nil {
				continue
			}
			ready = 0
			for _, p := range pods.Items {
				if !killed[p.UID] && p.DeletionTimestamp == nil && podReady(&p) {
					ready++
				}
			}
		}
		t.Logf("killed readyline-api replica %s; two Ready again", r.Name)
	}
	after := createPod(t, ctx, namespace, "after-restarts", func(p *corev1.Pod) {
		p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{
			ProbeHandler:        corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}},
			InitialDelaySeconds: 8, PeriodSeconds: 1,
		}
	})
	var outcomes []string
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(500 * time.Millisecond) {
		mu.Lock()
		outcomes = slices.Clone(seen[after.Name])
		mu.Unlock()
		if slices.Contains(outcomes, "ready") || time.Now().After(deadline) {
			break
		}
	}
	if !slices.Contains(outcomes, "ready") {
		t.Errorf("the watching informer saw %s as %v after both replicas were killed, want it ready", after.Name, outcomes)
	} else if outcomes[0] != "starting" {
		t.Logf("the informer saw %s as %v (its first poll found it ready)", after.Name, outcomes)
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
