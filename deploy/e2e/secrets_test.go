//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/readyline/readyline/collector/redact"
	"github.com/readyline/readyline/correlator"
)

// The values of secretPod's Secrets: shapes redact's table does not know
// (no flag name, no token prefix, no userinfo), each only where a Secret
// put it.
const (
	secretDBPassword = "Xq7ruby-kettle91"    // secretKeyRef, $(DB_PASSWORD) in the args
	secretVendorKey  = "zz9plural-alpha2026" // envFrom with a prefix, $VENDOR_KEY in a script
	secretFileToken  = "lilac-harbor-3346x"  // a Secret volume, $(cat ...) in a script
)

var secretValues = []string{secretDBPassword, secretVendorKey, secretFileToken}

// createSecretPod creates the Secrets and a pod that carries their values
// into command lines the three ways a pod does: the kubelet's expansion of
// $(DB_PASSWORD) in its args, a script's child run with $VENDOR_KEY, and a
// child run with a secret volume's file read by $(cat ...).
func createSecretPod(t *testing.T, ctx context.Context, ns, name string) *corev1.Pod {
	t.Helper()
	for secret, data := range map[string]map[string]string{
		"db":     {"password": secretDBPassword},
		"vendor": {"KEY": secretVendorKey},
		"creds":  {"token": secretFileToken + "\n"},
	} {
		if _, err := env.Client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secret}, StringData: data},
			metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return createPod(t, ctx, ns, name, func(p *corev1.Pod) {
		c := &p.Spec.Containers[0]
		c.Command = []string{"/bin/sh", "-c"}
		c.Args = []string{
			`/bin/sh -c 'exit 0' child-env "region=eu;vendor=$VENDOR_KEY"
/bin/sh -c 'exit 0' child-file "$(cat /etc/creds/token)"
exec sleep 3600`,
			"db-client", // $0
			"--db=mysql://app@db/shop?pw=$(DB_PASSWORD)",
		}
		c.Env = []corev1.EnvVar{{Name: "DB_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "password"}}}}
		c.EnvFrom = []corev1.EnvFromSource{{Prefix: "VENDOR_", SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "vendor"}}}}
		c.VolumeMounts = []corev1.VolumeMount{{Name: "creds", MountPath: "/etc/creds", ReadOnly: true}}
		p.Spec.Volumes = []corev1.Volume{{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds"}}}}
	})
}

// checkNoSecretValue fails when any of secretValues is in what (a JSON
// answer, a trace, a recording, a page, a waterfall).
func checkNoSecretValue(t *testing.T, what string, b []byte) {
	t.Helper()
	for _, v := range secretValues {
		if n := strings.Count(string(b), v); n > 0 {
			i := strings.Index(string(b), v)
			t.Errorf("%s holds the Secret's value %q %d times: ...%s...", what, v, n, b[max(0, i-120):min(len(b), i+len(v)+40)])
		}
	}
}

// TestSecretValuesNeverLeave: a pod's Secret values, carried into its
// command lines in shapes the redactor's table does not know, are in none
// of what readyline keeps or sends: the timeline its API serves (to root
// on the node: the kernel's argv), the trace in Jaeger, the recording.
// Where a value was, the argv says redact.Marker; the spec's view says
// $(DB_PASSWORD). The readers' views are TestDaemonSet's (kubectl-plugin).
func TestSecretValuesNeverLeave(t *testing.T) {
	t.Parallel()
	d := readyline(t)
	ctx := testContext(t, 4*time.Minute)
	ns := newNamespace(t)
	pod := createSecretPod(t, ctx, ns, "db-client")
	if _, err := WaitForPod(ctx, env.Client, ns, pod.Name, ConditionTrue(corev1.PodReady)); err != nil {
		t.Fatal(err)
	}
	tl, err := d.Timeline(ctx, ns, pod.Name, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(tl)
	checkNoSecretValue(t, "the timeline", b)
	var app *correlator.Process
	for _, c := range tl.Containers {
		for _, a := range c.Attempts {
			if a.Process != nil {
				app = a.Process
			}
		}
	}
	if app == nil {
		t.Fatalf("no process of the container in %s", b)
	}
	if !slices.Contains(app.Argv, "--db=mysql://app@db/shop?pw="+redact.Marker) {
		t.Errorf("the kernel's argv %q: the value not replaced where it was", app.Argv)
	}
	if !slices.Contains(app.SpecArgv, "--db=mysql://app@db/shop?pw=$(DB_PASSWORD)") {
		t.Errorf("the spec's view %q", app.SpecArgv)
	}

	tr, err := env.Jaeger.WaitForTrace(ctx, TraceIDFromPodUID(string(pod.UID)), 3, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	tb, _ := json.Marshal(tr)
	checkNoSecretValue(t, "the trace", tb)

	// The recording holds the children's execs once flushed (every second).
	var rec []byte
	deadline := time.Now().Add(30 * time.Second)
	for {
		rec, err = os.ReadFile(d.Record)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(rec), `"child-file"`) || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	checkNoSecretValue(t, "the recording", rec)
	// JSON may write the marker's < and > as \u003c and \u003e.
	unescaped := strings.NewReplacer(`\u003c`, "<", `\u003e`, ">").Replace(string(rec))
	for _, want := range []string{`"region=eu;vendor=` + redact.Marker + `"`, `"child-file","` + redact.Marker + `"`} {
		if !strings.Contains(unescaped, want) {
			t.Errorf("the recording has no exec with %s: the children were not seen, or not scrubbed", want)
		}
	}
}

// roleUser is boundUser for a reader bound to the built-in ClusterRole
// role (view, edit, admin) in podNamespace, with the readyline-plugin Role
// to reach the daemons; for edit and admin it also waits until RBAC lets
// them exec into the pods there (the daemon keeps its answers 10 s).
func roleUser(t *testing.T, ctx context.Context, users, name, podNamespace, role string) string {
	t.Helper()
	kubeconfig := boundUser(t, ctx, users, name, podNamespace, role, pluginRole)
	if role != "view" {
		waitMay(t, ctx, fmt.Sprintf("system:serviceaccount:%s:%s", users, name),
			authorizationv1.ResourceAttributes{Namespace: podNamespace, Verb: "create", Resource: "pods", Subresource: "exec"})
	}
	return kubeconfig
}

// waitMay waits until RBAC lets user do what attr says.
func waitMay(t *testing.T, ctx context.Context, user string, attr authorizationv1.ResourceAttributes) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		review, err := env.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: &attr}}, metav1.CreateOptions{})
		return err == nil && review.Status.Allowed, nil
	})
	if err != nil {
		t.Fatalf("RBAC does not let %s %s %s/%s in %s: %v", user, attr.Verb, attr.Resource, attr.Subresource, attr.Namespace, err)
	}
}

// testSecretReaders: the secret pod's start as the DaemonSet's readyline
// serves it to a view-bound reader (the spec's view of its command line),
// an edit-bound one and an admin (the kernel's argv, which they could read
// by exec), through kubectl readyline: none of them reads a Secret's
// value, in the JSON, the waterfall or the page.
func testSecretReaders(t *testing.T, ctx context.Context, plugin, users string) {
	ns := newNamespace(t)
	pod := createSecretPod(t, ctx, ns, "db-client")
	if _, err := WaitForPod(ctx, env.Client, ns, pod.Name, ConditionTrue(corev1.PodReady)); err != nil {
		t.Fatal(err)
	}
	waitKept(t, ctx, plugin, env.Kubeconfig, ns, pod.Name)
	specArg := "--db=mysql://app@db/shop?pw=$(DB_PASSWORD)"
	kernelArg := "--db=mysql://app@db/shop?pw=" + redact.Marker
	for _, reader := range []struct{ role, want string }{{"view", specArg}, {"edit", kernelArg}, {"admin", kernelArg}} {
		t.Run(reader.role, func(t *testing.T) {
			kubeconfig := roleUser(t, ctx, users, "secret-"+reader.role, ns, reader.role)
			r := runPlugin(t, ctx, plugin, kubeconfig, "explain", "-n", ns, pod.Name, "-o", "json")
			r.wantOK(t)
			checkNoSecretValue(t, reader.role+"'s explain -o json", []byte(r.stdout))
			var tl correlator.Timeline
			if err := json.Unmarshal([]byte(r.stdout), &tl); err != nil {
				t.Fatal(err)
			}
			var argv []string
			for _, c := range tl.Containers {
				for _, a := range c.Attempts {
					if a.Process != nil {
						argv = a.Process.Argv
					}
				}
			}
			if !slices.Contains(argv, reader.want) {
				t.Errorf("%s reads the command line %q, want one with %q", reader.role, argv, reader.want)
			}
			text := runPlugin(t, ctx, plugin, kubeconfig, "explain", "-n", ns, pod.Name)
			text.wantOK(t)
			checkNoSecretValue(t, reader.role+"'s waterfall", []byte(text.stdout))
			if reader.role != "view" {
				return
			}
			page, stop, err := PluginWeb(ctx, plugin, "--kubeconfig", kubeconfig, "-n", ns, pod.Name)
			if err != nil {
				t.Fatal(err)
			}
			defer stop()
			body := httpGet(t, ctx, page)
			checkNoSecretValue(t, "the page", body)
			if !strings.Contains(html.UnescapeString(string(body)), "$(DB_PASSWORD)") {
				t.Errorf("the page does not show the spec's view ($(DB_PASSWORD)):\n%.3000s", body)
			}
		})
	}
}
