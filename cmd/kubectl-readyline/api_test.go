package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// TestDaemonTransport: the kubeconfig's credentials reach a daemon whose
// certificate is its own, not the API server CA's: a bearer token, a
// client certificate; impersonation is refused.
func TestDaemonTransport(t *testing.T) {
	var gotAuth string
	var gotCert []string
	daemon := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth = r.Header.Get("Authorization")
		gotCert = nil
		for _, c := range r.TLS.PeerCertificates {
			gotCert = append(gotCert, c.Subject.CommonName)
		}
	}))
	daemon.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	daemon.StartTLS()
	defer daemon.Close()

	apiServerCA := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: selfSigned(t, "kubernetes").Certificate[0]})
	get := func(cfg *rest.Config) {
		t.Helper()
		rt, err := daemonTransport(cfg)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := (&http.Client{Transport: rt}).Get(daemon.URL + "/api/v1/timelines")
		if err != nil {
			t.Fatalf("through the transport: %v", err)
		}
		resp.Body.Close()
	}
	get(&rest.Config{Host: "https://api:6443", BearerToken: "alice-token", TLSClientConfig: rest.TLSClientConfig{CAData: apiServerCA, ServerName: "api"}})
	if gotAuth != "Bearer alice-token" {
		t.Errorf("Authorization %q, want alice's token", gotAuth)
	}

	cert := selfSigned(t, "bob")
	key, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	get(&rest.Config{Host: "https://api:6443", TLSClientConfig: rest.TLSClientConfig{CAData: apiServerCA,
		CertData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}),
		KeyData:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: key})}})
	if len(gotCert) != 1 || gotCert[0] != "bob" || gotAuth != "" {
		t.Errorf("client certificates %v, Authorization %q; want bob's certificate", gotCert, gotAuth)
	}

	for _, imp := range []rest.ImpersonationConfig{{UserName: "admin"}, {Groups: []string{"system:masters"}}, {UID: "1"}} {
		_, err := daemonTransport(&rest.Config{Host: "https://api:6443", BearerToken: "t", Impersonate: imp})
		if err == nil || !strings.Contains(err.Error(), "does not impersonate") {
			t.Errorf("impersonating %+v: %v, want a refusal", imp, err)
		}
	}
}

// selfSigned is a certificate for cn signed by itself, and its key.
func selfSigned(t *testing.T, cn string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
