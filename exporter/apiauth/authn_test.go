package apiauth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// t0 is the tests' clock at start.
var t0 = time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)

// clock is a settable clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// authority is a CA that issues client certificates.
type authority struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func newAuthority(t *testing.T, name string) *authority {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: t0.Add(-time.Hour), NotAfter: t0.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &authority{cert: cert, key: key}
}

func (a *authority) pem() string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: a.cert.Raw}))
}

// issue returns a certificate for cn and orgs, valid from t0 for an hour,
// for usage, and its key.
func (a *authority) issue(t *testing.T, cn string, orgs []string, usage x509.ExtKeyUsage) tls.Certificate {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore: t0.Add(-time.Minute), NotAfter: t0.Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

// fakeCluster is an API server's client CA and tokens: the fake clientset
// answers TokenReviews of tokens (token -> user) and counts its calls.
type fakeCluster struct {
	client *fake.Clientset
	ca     *authority
	tokens map[string]authenticationv1.UserInfo

	mu    sync.Mutex
	calls map[string]int // by resource
	down  bool           // every call fails
}

func newFakeCluster(t *testing.T) *fakeCluster {
	t.Helper()
	f := &fakeCluster{ca: newAuthority(t, "kubernetes"), calls: map[string]int{}, tokens: map[string]authenticationv1.UserInfo{
		"alice-token": {Username: "alice", UID: "uid-alice", Groups: []string{"team", "system:authenticated"},
			Extra: map[string]authenticationv1.ExtraValue{"authentication.kubernetes.io/credential-id": {"JTI=1"}}},
	}}
	f.client = fake.NewClientset(&corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ClientCANamespace, Name: ClientCAConfigMap},
		Data:       map[string]string{clientCAKey: f.ca.pem()},
	})
	f.client.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.calls[a.GetResource().Resource]++
		if f.down {
			return true, nil, apierrors.NewServiceUnavailable("the API server is down")
		}
		if a.GetResource().Resource != "tokenreviews" {
			return false, nil, nil
		}
		review := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview).DeepCopy()
		u, ok := f.tokens[review.Spec.Token]
		review.Status = authenticationv1.TokenReviewStatus{Authenticated: ok, User: u}
		if !ok {
			review.Status.Error = "invalid bearer token"
		}
		return true, review, nil
	})
	return f
}

func (f *fakeCluster) count(resource string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[resource]
}

func (f *fakeCluster) setDown(down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = down
}

// setClientCA puts ca's certificate in the client CA ConfigMap.
func (f *fakeCluster) setClientCA(t *testing.T, ca *authority) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ClientCANamespace, Name: ClientCAConfigMap},
		Data: map[string]string{clientCAKey: ca.pem()}}
	if _, err := f.client.CoreV1().ConfigMaps(ClientCANamespace).Update(t.Context(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func (f *fakeCluster) authenticator(c *clock) *Authenticator {
	return NewAuthenticator(AuthenticatorConfig{
		Tokens: f.client.AuthenticationV1().TokenReviews(), ClientCA: f.client.CoreV1().ConfigMaps(ClientCANamespace), Now: c.Now,
	}, nil)
}

// request is a request over TLS with the client certificate cert (none
// when its Certificate is nil) and bearer token (none when "").
func request(cert tls.Certificate, token string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "https://127.0.0.1/api/v1/timelines", nil)
	r.TLS = &tls.ConnectionState{}
	if cert.Leaf != nil {
		r.TLS.PeerCertificates = []*x509.Certificate{cert.Leaf}
	}
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	return r
}

// TestAuthenticateClientCertificate: a client certificate of the
// cluster's client CA for client authentication is its CN, in its O
// groups and system:authenticated; another CA's, one for servers, an
// expired one or one without CN is not, and then a bearer token is tried.
// The CA is read once per interval, and kept when a read fails.
func TestAuthenticateClientCertificate(t *testing.T) {
	f := newFakeCluster(t)
	c := &clock{now: t0}
	authn := f.authenticator(c)

	u, err := authn.Authenticate(request(f.ca.issue(t, "bob", []string{"dev", "ops"}, x509.ExtKeyUsageClientAuth), ""))
	if err != nil {
		t.Fatal(err)
	}
	if u.Name != "bob" || !slices.Equal(u.Groups, []string{"dev", "ops", "system:authenticated"}) {
		t.Errorf("user %+v, want bob in dev, ops and system:authenticated", u)
	}

	other := newAuthority(t, "not-the-cluster")
	for _, tc := range []struct {
		what string
		cert tls.Certificate
		want string
	}{
		{"another CA's", other.issue(t, "mallory", []string{"system:masters"}, x509.ExtKeyUsageClientAuth), `the client certificate of "mallory" is not one of the cluster's client CA`},
		{"a server's", f.ca.issue(t, "kube-apiserver", nil, x509.ExtKeyUsageServerAuth), "incompatible key usage"},
		{"without CN", f.ca.issue(t, "", []string{"system:masters"}, x509.ExtKeyUsageClientAuth), "names no user"},
	} {
		_, err := authn.Authenticate(request(tc.cert, ""))
		if !errors.Is(err, ErrUnauthenticated) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s certificate: %v, want ErrUnauthenticated saying %q", tc.what, err, tc.want)
		}
		// The token decides then, as in the API server.
		if u, err := authn.Authenticate(request(tc.cert, "alice-token")); err != nil || u.Name != "alice" {
			t.Errorf("%s certificate and alice's token: %+v, %v, want alice", tc.what, u, err)
		}
	}

	if n := f.count("configmaps"); n != 1 {
		t.Errorf("the client CA was read %d times within its interval, want once", n)
	}

	// Past the interval it is read again; when that fails, the CA read
	// before verifies nothing more (it may have been removed): no
	// certificate is verified until it is read again, TTL later.
	c.Add(DefaultClientCAInterval)
	f.setDown(true)
	dave := f.ca.issue(t, "dave", nil, x509.ExtKeyUsageClientAuth)
	if _, err := authn.Authenticate(request(dave, "")); err == nil || !strings.Contains(err.Error(), "cannot be verified") {
		t.Errorf("with the API server down: %v, want no certificate verified", err)
	}
	if n := f.count("configmaps"); n != 2 {
		t.Errorf("the client CA was read %d times, want twice (once more past the interval)", n)
	}
	f.setDown(false)
	c.Add(DefaultTTL)
	if u, err := authn.Authenticate(request(dave, "")); err != nil || u.Name != "dave" {
		t.Errorf("TTL after the failure: %+v, %v, want dave", u, err)
	}

	// A CA removed from the ConfigMap is refused from its next read on,
	// at most DefaultClientCAInterval later.
	f.setClientCA(t, newAuthority(t, "rotated"))
	if u, err := authn.Authenticate(request(dave, "")); err != nil || u.Name != "dave" {
		t.Errorf("within the interval after the rotation: %+v, %v", u, err)
	}
	c.Add(DefaultClientCAInterval)
	if _, err := authn.Authenticate(request(dave, "")); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("a certificate of the removed CA, an interval after: %v, want refused", err)
	}
	f.setClientCA(t, f.ca)
	c.Add(DefaultClientCAInterval)

	expiring := f.ca.issue(t, "carol", nil, x509.ExtKeyUsageClientAuth)
	c.Add(2 * time.Hour)
	if _, err := authn.Authenticate(request(expiring, "")); !errors.Is(err, ErrUnauthenticated) || !strings.Contains(err.Error(), "expired") {
		t.Errorf("an expired certificate: %v, want ErrUnauthenticated, expired", err)
	}
}

// TestAuthenticateWithoutClientCA: when the client CA cannot be read, a
// certificate cannot be verified, which is not a refusal (the handler
// answers 503) unless a token says who it is.
func TestAuthenticateWithoutClientCA(t *testing.T) {
	f := newFakeCluster(t)
	f.setDown(true)
	c := &clock{now: t0}
	authn := f.authenticator(c)
	cert := f.ca.issue(t, "bob", nil, x509.ExtKeyUsageClientAuth)
	_, err := authn.Authenticate(request(cert, ""))
	if err == nil || errors.Is(err, ErrUnauthenticated) || !strings.Contains(err.Error(), "cannot be verified") {
		t.Errorf("a certificate without the client CA: %v, want an error that is no refusal", err)
	}
	f.setDown(false)
	if _, err := authn.Authenticate(request(cert, "")); err == nil {
		t.Error("the CA was read again before TTL after a failure")
	}
	c.Add(DefaultTTL)
	if u, err := authn.Authenticate(request(cert, "")); err != nil || u.Name != "bob" {
		t.Errorf("TTL after the failure: %+v, %v, want bob", u, err)
	}
}

// TestAuthenticateToken: a bearer token is who a TokenReview says, with
// its UID, groups and extra; a token it rejects is refused, and both
// answers are kept for TTL; a review that fails is no refusal; no
// credential at all is.
func TestAuthenticateToken(t *testing.T) {
	f := newFakeCluster(t)
	c := &clock{now: t0}
	authn := f.authenticator(c)

	for range 3 {
		u, err := authn.Authenticate(request(tls.Certificate{}, "alice-token"))
		if err != nil {
			t.Fatal(err)
		}
		if u.Name != "alice" || u.UID != "uid-alice" || !slices.Equal(u.Groups, []string{"team", "system:authenticated"}) ||
			!slices.Equal(u.Extra["authentication.kubernetes.io/credential-id"], []string{"JTI=1"}) {
			t.Errorf("user %+v", u)
		}
		_, err = authn.Authenticate(request(tls.Certificate{}, "stolen"))
		if !errors.Is(err, ErrUnauthenticated) || !strings.Contains(err.Error(), "invalid bearer token") {
			t.Errorf("a bad token: %v, want ErrUnauthenticated with the API server's reason", err)
		}
	}
	if n := f.count("tokenreviews"); n != 2 {
		t.Errorf("%d TokenReviews for 3 requests of each of 2 tokens, want 2", n)
	}
	c.Add(DefaultTTL)
	authn.Authenticate(request(tls.Certificate{}, "alice-token"))
	if n := f.count("tokenreviews"); n != 3 {
		t.Errorf("%d TokenReviews after TTL, want 3", n)
	}

	f.setDown(true)
	_, err := authn.Authenticate(request(tls.Certificate{}, "new-token"))
	if err == nil || errors.Is(err, ErrUnauthenticated) {
		t.Errorf("a review that fails: %v, want an error that is no refusal", err)
	}
	f.setDown(false)

	for _, r := range []*http.Request{request(tls.Certificate{}, ""), httptest.NewRequest(http.MethodGet, "/", nil)} {
		if _, err := authn.Authenticate(r); !errors.Is(err, ErrUnauthenticated) || !strings.Contains(err.Error(), "no client certificate and no bearer token") {
			t.Errorf("no credential: %v, want ErrUnauthenticated", err)
		}
	}
	basic := request(tls.Certificate{}, "")
	basic.SetBasicAuth("admin", "admin")
	if _, err := authn.Authenticate(basic); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("basic auth: %v, want ErrUnauthenticated", err)
	}
}

// TestAnswersBounded: the cache never holds more than its bound, and an
// expired answer is not returned.
func TestAnswersBounded(t *testing.T) {
	c := &clock{now: t0}
	a := newAnswers[int, string](time.Second, 3, c.Now)
	for i := range 10 {
		a.put(i, "v")
		if len(a.m) > 3 {
			t.Fatalf("%d answers kept, bound 3", len(a.m))
		}
	}
	if v, ok := a.get(9); !ok || v != "v" {
		t.Errorf("the last answer put: %q %v", v, ok)
	}
	c.Add(time.Second)
	if _, ok := a.get(9); ok {
		t.Error("an answer past its TTL was returned")
	}
}
