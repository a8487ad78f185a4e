package apiauth

import (
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/readyline/readyline/exporter"
)

// issueServer returns a serving certificate of a for dnsName.
func (a *authority) issueServer(t *testing.T, dnsName string) tls.Certificate {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(3), Subject: pkix.Name{CommonName: dnsName}, DNSNames: []string{dnsName},
		NotBefore: t0.Add(-time.Minute), NotAfter: t0.Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

// writePair writes cert and its key as PEM files in dir.
func writePair(t *testing.T, dir, name string, cert tls.Certificate) (string, string) {
	t.Helper()
	keyDER, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// TestForwardedHandler serves a store's API as a daemon serves it to the
// aggregated API server (ForwardedServing, ForwardedHandler) and asks it
// as the aggregator does, and as others would: a client without a
// certificate of the chart's CA gets no TLS connection; another CN, a
// bearer token or Impersonate-* headers are refused; the aggregator's own
// requests list the starts and read no timeline; a timeline is read as the
// user the X-Remote-* headers name, who is asked about (all of them: name,
// groups, extra) and sees only what they may.
func TestForwardedHandler(t *testing.T) {
	f := newFakeCluster(t)
	asked := f.reviews(grants{"team": {"team"}})
	c := &clock{now: t0}
	store := exporter.NewStore(exporter.StoreLimits{})
	for _, p := range [][2]string{{"team", "web"}, {"other", "secret"}} {
		store.Add(startOf(p[0], p[1]))
	}

	ca := newAuthority(t, "readyline")
	dir := t.TempDir()
	certFile, keyFile := writePair(t, dir, "node", ca.issueServer(t, NodeServerName))
	caFile := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(caFile, []byte(ca.pem()), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := ForwardedServing(certFile, keyFile, caFile)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Time = c.Now
	srv := httptest.NewUnstartedServer(ForwardedHandler(f.authorizer(c, 0), store.Handler(nil), nil))
	srv.TLS = cfg
	srv.StartTLS()
	defer srv.Close()

	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	client := func(certs ...tls.Certificate) *http.Client {
		return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
			RootCAs: roots, ServerName: NodeServerName, Certificates: certs, Time: c.Now,
		}}}
	}
	get := func(cl *http.Client, path string, h http.Header) (int, string, error) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		for k, v := range h {
			req.Header[k] = v
		}
		resp, err := cl.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), nil
	}
	aggregator := client(ca.issue(t, AggregatorName, nil, x509.ExtKeyUsageClientAuth))
	alice := http.Header{}
	SetForwardedUser(alice, &User{Name: "alice", UID: "uid-alice", Groups: []string{"team", "system:authenticated"},
		Extra: map[string][]string{"authentication.kubernetes.io/credential-id": {"JTI=1"}}})

	// Strangers.
	if _, _, err := get(client(), "/api/v1/timelines", nil); err == nil {
		t.Error("a client without a certificate got a TLS connection")
	}
	if _, _, err := get(client(newAuthority(t, "elsewhere").issue(t, AggregatorName, nil, x509.ExtKeyUsageClientAuth)), "/api/v1/timelines", nil); err == nil {
		t.Error("a client certificate of another CA got a TLS connection")
	}
	for who, tc := range map[string]struct {
		cl *http.Client
		h  http.Header
	}{
		"another CN":     {client(ca.issue(t, "readyline-node", nil, x509.ExtKeyUsageClientAuth)), alice},
		"a bearer token": {aggregator, http.Header{"Authorization": {"Bearer alice-token"}, HeaderUser: {"alice"}}},
		"impersonation":  {aggregator, http.Header{"Impersonate-User": {"admin"}, HeaderUser: {"alice"}}},
	} {
		status, body, err := get(tc.cl, "/api/v1/timelines/team/web", tc.h)
		if err != nil || status != http.StatusForbidden || strings.Contains(body, "uid-web") {
			t.Errorf("%s: %d %q (%v), want 403", who, status, body, err)
		}
	}
	if f.count("tokenreviews") != 0 {
		t.Error("a bearer token was reviewed: it should be refused unread")
	}

	// The aggregator's own: the list, no timeline.
	status, body, err := get(aggregator, "/api/v1/timelines", nil)
	if err != nil || status != http.StatusOK || !strings.Contains(body, `"secret"`) || !strings.Contains(body, `"web"`) {
		t.Errorf("the aggregator's list: %d %s (%v), want both starts", status, body, err)
	}
	if status, _, _ := get(aggregator, "/api/v1/timelines/team/web", nil); status != http.StatusForbidden {
		t.Errorf("the aggregator's own timeline read: %d, want 403", status)
	}

	// A reader: what they may get, asked as all of them.
	if status, body, _ := get(aggregator, "/api/v1/timelines/team/web", alice); status != http.StatusOK || !strings.Contains(body, "uid-web") {
		t.Errorf("alice's team/web: %d %s", status, body)
	}
	if status, _, _ := get(aggregator, "/api/v1/timelines/other/secret", alice); status != http.StatusForbidden {
		t.Errorf("alice's other/secret: %d, want 403", status)
	}
	var sawAlice bool
	for _, spec := range *asked {
		if spec.User == "alice" && spec.UID == "uid-alice" && len(spec.Groups) == 2 &&
			len(spec.Extra["authentication.kubernetes.io/credential-id"]) == 1 {
			sawAlice = true
		}
	}
	if !sawAlice {
		t.Errorf("no review asked as the whole of alice: %+v", *asked)
	}
}
