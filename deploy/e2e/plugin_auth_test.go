//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/readyline/readyline/exporter/apiclient"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/transport"
)

// secureAPIPort is the port of the daemon's secure API in its pod
// (readyline run --secure-api-addr's default).
const secureAPIPort = 9467

// tokenOf is the bearer token of kubeconfig's current user.
func tokenOf(t *testing.T, kubeconfig string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	ctx, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok || cfg.AuthInfos[ctx.AuthInfo] == nil || cfg.AuthInfos[ctx.AuthInfo].Token == "" {
		t.Fatalf("%s has no token", kubeconfig)
	}
	return cfg.AuthInfos[ctx.AuthInfo].Token
}

// checkDaemonRefuses asks the secure API of the readyline on the node
// directly, through a port-forward (the admin's: the forward is only the
// way there), as the reader of token, who may get pod namespace/name and
// not pod otherNamespace/otherName, whose start the daemon keeps too:
// their pod's start and list are theirs, the other pod's start is
// refused, on the API and on the pages, and nobody without a credential
// the API server accepts reads anything.
func checkDaemonRefuses(t *testing.T, ctx context.Context, token, namespace, name, otherNamespace, otherName string) {
	t.Helper()
	pods, err := env.Client.CoreV1().Pods(ReadylineNamespace).List(ctx, metav1.ListOptions{
		LabelSelector: "app.kubernetes.io/name=readyline,app.kubernetes.io/component=node-agent",
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", env.NodeName).String(),
	})
	if err != nil || len(pods.Items) == 0 {
		t.Fatalf("no readyline pod on %s: %v", env.NodeName, err)
	}
	base, stop, err := env.PortForward(ctx, ReadylineNamespace, "pod/"+pods.Items[0].Name, secureAPIPort)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	base = "https://" + strings.TrimPrefix(base, "http://")
	// Its certificate is its own; the route vouches for it.
	insecure := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	as := func(token string) *apiclient.Client {
		var rt http.RoundTripper = insecure
		if token != "" {
			rt = transport.NewBearerAuthRoundTripper(token, insecure)
		}
		return &apiclient.Client{BaseURL: base, HTTP: &http.Client{Transport: rt}}
	}
	reader := as(token)

	if tl, err := reader.Timeline(ctx, namespace, name, ""); err != nil || tl.Pod.Name != name {
		t.Errorf("the reader's own pod %s/%s: %v", namespace, name, err)
	}
	if _, err := reader.Timeline(ctx, otherNamespace, otherName, ""); !errors.Is(err, apiclient.ErrForbidden) {
		t.Errorf("%s/%s as the reader: %v, want 403", otherNamespace, otherName, err)
	}
	for _, ns := range []string{"", otherNamespace} {
		list, err := reader.Timelines(ctx, ns)
		if err != nil {
			t.Fatalf("the reader's list of %q: %v", ns, err)
		}
		for _, s := range list {
			if s.Namespace != namespace {
				t.Errorf("the reader's list of %q has %s/%s", ns, s.Namespace, s.Name)
			}
		}
	}
	for path, want := range map[string]int{
		"/ui/pods/" + otherNamespace + "/" + otherName: http.StatusForbidden,
		"/ui/":                               http.StatusOK,
		"/ui/pods/" + namespace + "/" + name: http.StatusOK,
	} {
		code, body := getWith(t, ctx, reader.HTTP, base+path, nil)
		if code != want || strings.Contains(body, otherName) && code == http.StatusOK {
			t.Errorf("%s as the reader: %d, want %d and nothing of %s\n%.500s", path, code, want, otherName, body)
		}
	}

	for who, client := range map[string]*apiclient.Client{"no credential": as(""), "a token the API server rejects": as("not-a-token")} {
		if _, err := client.Timelines(ctx, ""); !errors.Is(err, apiclient.ErrUnauthorized) {
			t.Errorf("%s: %v, want 401", who, err)
		}
	}
	code, body := getWith(t, ctx, reader.HTTP, base+"/api/v1/timelines", http.Header{"Impersonate-User": {"admin"}})
	if code != http.StatusForbidden || strings.Contains(body, name) {
		t.Errorf("the reader impersonating admin: %d, want 403\n%.300s", code, body)
	}
}

// getWith GETs u with client and header, and returns the status and body.
func getWith(t *testing.T, ctx context.Context, client *http.Client, u string, header http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// certificateUser returns a kubeconfig of a user of a client certificate
// that the cluster's CA signs through the CSR API (signer
// kubernetes.io/kube-apiserver-client): CN readyline-e2e-reader-USERS, in
// the group (O) readyline-e2e-readers-USERS, which is bound as
// deploy/plugin-rbac suggests, pods get in podNamespace only. The daemon
// knows the user by the certificate only, and the group by its O.
func certificateUser(t *testing.T, ctx context.Context, users, podNamespace string) string {
	t.Helper()
	user, group := "readyline-e2e-reader-"+users, "readyline-e2e-readers-"+users
	bindPluginRoles(t, ctx, group, podNamespace, pluginRole, rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: group})
	waitAllowed(t, ctx, user, []string{group, "system:authenticated"}, podNamespace)

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	csrDER, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: user, Organization: []string{group}}}, key)
	if err != nil {
		t.Fatal(err)
	}
	expiration := int32(15 * 60)
	csrs := env.Client.CertificatesV1().CertificateSigningRequests()
	csr, err := csrs.Create(ctx, &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:           pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: csrDER}),
			SignerName:        certificatesv1.KubeAPIServerClientSignerName,
			Usages:            []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
			ExpirationSeconds: &expiration,
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ignoreNotFound(t, csrs.Delete(context.Background(), csr.Name, metav1.DeleteOptions{})) })
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "E2E", Message: "a reader of the plugin's tests",
	})
	if _, err := csrs.UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var cert []byte
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := csrs.Get(ctx, csr.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		cert = got.Status.Certificate
		return len(cert) > 0, nil
	})
	if err != nil {
		t.Fatalf("the controller-manager never signed the CSR of %s: %v", user, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(cert, []byte("CERTIFICATE")) {
		t.Fatalf("the CSR's certificate is no PEM: %.100q", cert)
	}
	return writeKubeconfig(t, user, podNamespace, &clientcmdapi.AuthInfo{
		ClientCertificateData: cert,
		ClientKeyData:         pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	})
}
