package chart_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"net"
	"testing"
	"time"
)

// secretData decodes the data of Secret key of r.
func secretData(t *testing.T, r *release, key string, want ...string) map[string][]byte {
	t.Helper()
	o, ok := r.objects[key]
	if !ok {
		t.Fatalf("no %s rendered: %v", key, r.order)
	}
	data, _ := o["data"].(map[string]any)
	out := map[string][]byte{}
	for _, k := range want {
		s, _ := data[k].(string)
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil || len(b) == 0 {
			t.Fatalf("%s: %s is %q, want base64 of PEM (%v)", key, k, s, err)
		}
		out[k] = b
	}
	if len(data) != len(want) {
		t.Errorf("%s holds %d keys, want exactly %v", key, len(data), want)
	}
	return out
}

func certOf(t *testing.T, what string, pemBytes []byte) *x509.Certificate {
	t.Helper()
	b, _ := pem.Decode(pemBytes)
	if b == nil {
		t.Fatalf("%s: no PEM block", what)
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return c
}

func poolOf(t *testing.T, what string, pemBytes []byte) *x509.CertPool {
	t.Helper()
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(pemBytes) {
		t.Fatalf("%s: no certificate", what)
	}
	return p
}

// TestAggregatedAPICertificates: the certificates the chart makes for
// release "tracer" in "observability" are what each side verifies: the API
// server verifies readyline-api's serving certificate for its Service's name
// with the APIService's caBundle; readyline-api and a node complete a
// mutual TLS 1.3 handshake with their Secrets alone (the node's serving
// certificate for readyline-node, readyline-api's client one of CN
// readyline-api, each verified with the other's CA); they last
// certificates.validityDays; and no Secret holds the CA's key, so nobody in
// the cluster can issue another.
func TestAggregatedAPICertificates(t *testing.T) {
	const days = 30
	r, err := render(t, "tracer", "observability", map[string]any{
		"aggregatedAPI": map[string]any{"certificates": map[string]any{"validityDays": days}}})
	if err != nil {
		t.Fatal(err)
	}
	node := secretData(t, r, "Secret observability/tracer-readyline-node-api", "tls.crt", "tls.key", "client-ca.crt")
	api := secretData(t, r, "Secret observability/tracer-readyline-api-certs",
		"tls.crt", "tls.key", "client.crt", "client.key", "node-ca.crt", "ca.crt")

	// The API server's side.
	bundle, err := base64.StdEncoding.DecodeString(dig(r.objects["APIService /v1alpha1.readyline.dev"], "spec", "caBundle").(string))
	if err != nil {
		t.Fatalf("the APIService's caBundle: %v", err)
	}
	serving := certOf(t, "readyline-api's serving certificate", api["tls.crt"])
	if _, err := serving.Verify(x509.VerifyOptions{DNSName: "tracer-readyline-api.observability.svc",
		Roots: poolOf(t, "caBundle", bundle), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("the API server would refuse readyline-api's certificate: %v", err)
	}
	if _, err := tls.X509KeyPair(api["tls.crt"], api["tls.key"]); err != nil {
		t.Errorf("readyline-api's serving key: %v", err)
	}

	// readyline-api to a node, as cmd/readyline-api and the daemon's node
	// API (exporter/apiauth.ForwardedServing) configure TLS.
	nodeCert, err := tls.X509KeyPair(node["tls.crt"], node["tls.key"])
	if err != nil {
		t.Fatalf("the node's key pair: %v", err)
	}
	clientCert, err := tls.X509KeyPair(api["client.crt"], api["client.key"])
	if err != nil {
		t.Fatalf("readyline-api's client key pair: %v", err)
	}
	server := &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{nodeCert},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: poolOf(t, "client-ca.crt", node["client-ca.crt"])}
	client := &tls.Config{MinVersion: tls.VersionTLS13, ServerName: "readyline-node",
		RootCAs: poolOf(t, "node-ca.crt", api["node-ca.crt"]), Certificates: []tls.Certificate{clientCert}}
	if peer := handshake(t, server, client); peer == nil || peer.Subject.CommonName != "readyline-api" {
		var who any = peer
		if peer != nil {
			who = peer.Subject
		}
		t.Errorf("the node saw client %v, want CN readyline-api", who)
	}

	// Validity, and the CA's key nowhere.
	ca := certOf(t, "the CA", api["ca.crt"])
	if !ca.IsCA || !bytes.Equal(api["ca.crt"], node["client-ca.crt"]) || !bytes.Equal(api["ca.crt"], api["node-ca.crt"]) {
		t.Errorf("one CA, a CA, in each Secret: IsCA %v", ca.IsCA)
	}
	for what, c := range map[string]*x509.Certificate{"serving": serving, "node": certOf(t, "node", node["tls.crt"]),
		"client": certOf(t, "client", api["client.crt"]), "CA": ca} {
		if left := time.Until(c.NotAfter); left < (days-1)*24*time.Hour || left > days*24*time.Hour {
			t.Errorf("the %s certificate ends in %v, want %d days", what, left, days)
		}
	}
	for what, p := range map[string]tls.Certificate{"node": nodeCert, "client": clientCert} {
		if _, err := tls.X509KeyPair(api["ca.crt"], keyPEM(t, p)); err == nil {
			t.Errorf("the %s key is the CA's", what)
		}
	}
	if _, err := tls.X509KeyPair(api["ca.crt"], api["tls.key"]); err == nil {
		t.Errorf("readyline-api's serving key is the CA's")
	}
}

// handshake runs a TLS handshake between server and client over a pipe and
// returns the client certificate the server verified.
func handshake(t *testing.T, server, client *tls.Config) *x509.Certificate {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	errs := make(chan error, 1)
	srv := tls.Server(a, server)
	go func() { errs <- srv.HandshakeContext(ctx) }()
	if err := tls.Client(b, client).HandshakeContext(ctx); err != nil {
		t.Errorf("client handshake: %v", err)
	}
	if err := <-errs; err != nil {
		t.Errorf("server handshake: %v", err)
		return nil
	}
	if certs := srv.ConnectionState().PeerCertificates; len(certs) > 0 {
		return certs[0]
	}
	return nil
}

// keyPEM is the PEM of a key pair's private key.
func keyPEM(t *testing.T, c tls.Certificate) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}
