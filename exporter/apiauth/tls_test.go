package apiauth

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServing: without files, a certificate of its own for localhost and
// the hosts given, valid now; with both files, theirs; with one, an error.
func TestServing(t *testing.T) {
	now := time.Now()
	cfg, err := Serving("", "", []string{"readyline-abcde", "10.0.0.7"}, now)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(cfg.Certificates[0].Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{"localhost", "127.0.0.1", "::1", "readyline-abcde", "10.0.0.7"} {
		if err := leaf.VerifyHostname(host); err != nil {
			t.Errorf("the certificate is not for %s: %v", host, err)
		}
	}
	if now.Before(leaf.NotBefore) || now.After(leaf.NotAfter) {
		t.Errorf("the certificate is valid from %v to %v, not now", leaf.NotBefore, leaf.NotAfter)
	}

	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	f := newFakeCluster(t)
	cert := f.ca.issue(t, "readyline.readyline.svc", nil, x509.ExtKeyUsageServerAuth)
	key, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: key}), 0o600)
	cfg, err = Serving(certFile, keyFile, nil, now)
	if err != nil {
		t.Fatal(err)
	}
	if string(cfg.Certificates[0].Certificate[0]) != string(cert.Certificate[0]) {
		t.Error("Serving does not serve the certificate of the files")
	}
	if _, err := Serving(certFile, "", nil, now); err == nil || !strings.Contains(err.Error(), "needs its key") {
		t.Errorf("a certificate without its key: %v", err)
	}
}
