// Package pkitest makes the certificates of tests: a CA, and certificates
// it signs for a name, groups, DNS names and IPs, written as PEM files
// where a process or a flag reads them.
package pkitest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// CA is a certificate authority of a test.
type CA struct {
	Cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// File is the CA's certificate, PEM.
	File string
}

var serial atomic.Int64

// validity is a day around now: a test's certificates outlive it.
func validity() (time.Time, time.Time) {
	now := time.Now()
	return now.Add(-time.Hour), now.Add(24 * time.Hour)
}

// NewCA makes a CA named cn, its certificate written in dir.
func NewCA(t testing.TB, dir, cn string) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	from, to := validity()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial.Add(1)), Subject: pkix.Name{CommonName: cn},
		NotBefore: from, NotAfter: to, IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &CA{Cert: cert, key: key, File: writePEM(t, dir, cn+"-ca.crt", "CERTIFICATE", der)}
}

// Pool is a pool of the CA alone.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// Leaf is a certificate the CA signed, and its files.
type Leaf struct {
	tls.Certificate
	CertFile, KeyFile string
}

// Spec says what a certificate is for.
type Spec struct {
	CommonName string
	Groups     []string // its subject's organizations (Kubernetes' groups)
	DNSNames   []string
	IPs        []net.IP
	Usage      x509.ExtKeyUsage
}

// Issue signs a certificate for spec, written in dir as <name>.crt and
// <name>.key.
func (ca *CA) Issue(t testing.TB, dir, name string, spec Spec) Leaf {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	from, to := validity()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial.Add(1)),
		Subject:  pkix.Name{CommonName: spec.CommonName, Organization: spec.Groups},
		DNSNames: spec.DNSNames, IPAddresses: spec.IPs, NotBefore: from, NotAfter: to,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{spec.Usage}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return Leaf{
		Certificate: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key},
		CertFile:    writePEM(t, dir, name+".crt", "CERTIFICATE", der),
		KeyFile:     writePEM(t, dir, name+".key", "PRIVATE KEY", keyDER),
	}
}

func writePEM(t testing.TB, dir, name, typ string, der []byte) string {
	t.Helper()
	f := filepath.Join(dir, name)
	if err := os.WriteFile(f, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}
