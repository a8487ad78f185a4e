package apiauth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"
)

// SelfSignedValidity is how long a self-signed serving certificate is
// valid: longer than a daemon runs between two rollouts.
const SelfSignedValidity = 365 * 24 * time.Hour

// Serving returns the TLS configuration of the authenticated API: TLS 1.3,
// the certificate of certFile and keyFile (PEM, e.g. a Secret's tls.crt
// and tls.key) when given, else one made now and signed by itself, for
// localhost and hosts. It asks every client for a certificate and leaves
// its verification to Authenticate, which follows the cluster's client CA
// as it changes (a tls.Config's ClientCAs could not).
func Serving(certFile, keyFile string, hosts []string, now time.Time) (*tls.Config, error) {
	var cert tls.Certificate
	var err error
	switch {
	case certFile != "" && keyFile != "":
		cert, err = tls.LoadX509KeyPair(certFile, keyFile)
	case certFile != "" || keyFile != "":
		err = errors.New("a certificate file needs its key file, and the key file its certificate")
	default:
		cert, err = selfSigned(hosts, now)
	}
	if err != nil {
		return nil, fmt.Errorf("the API's serving certificate: %w", err)
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequestClientCert,
	}, nil
}

// selfSigned makes an ECDSA P-256 key and a certificate of it signed by
// itself, for serving on localhost and hosts (names or IP addresses).
func selfSigned(hosts []string, now time.Time) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "readyline"},
		NotBefore:    now.Add(-time.Hour), // a client's clock a little behind
		NotAfter:     now.Add(SelfSignedValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if h != "" {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
