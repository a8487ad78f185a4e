package apiauth

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/readyline/readyline/exporter"
)

// The names in the certificates of the node API that the aggregated API
// server (cmd/readyline-api) reads: the CN of its client certificate, and
// the name the daemons' serving certificate holds, which it verifies
// (every daemon serves the same name: a node's IP is no name the chart
// can know ahead).
const (
	AggregatorName = "readyline-api"
	NodeServerName = "readyline-node"
)

// The headers the aggregated API server names the reader of a request in,
// as the API server names its users to it (requestheader).
const (
	HeaderUser        = "X-Remote-User"
	HeaderUID         = "X-Remote-Uid"
	HeaderGroup       = "X-Remote-Group"
	HeaderExtraPrefix = "X-Remote-Extra-"
)

// ForwardedServing returns the TLS configuration of the node API that only
// the aggregated API server reaches: TLS 1.3, the serving certificate of
// certFile and keyFile, and a client certificate that caFile's CA signed,
// demanded in the handshake. A client without one never sends a byte of
// HTTP, and nothing it could replay against another node ever reaches a
// node: a client certificate proves its key in the handshake, where a
// bearer token is a password.
func ForwardedServing(certFile, keyFile, caFile string) (*tls.Config, error) {
	if certFile == "" || keyFile == "" || caFile == "" {
		return nil, errors.New("the node API for the aggregated API server needs a serving certificate, its key and the CA of the aggregator's client certificate")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("the node API's serving certificate: %w", err)
	}
	pool, err := CAPool(caFile)
	if err != nil {
		return nil, fmt.Errorf("the aggregator's CA: %w", err)
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
	}, nil
}

// CAPool is the pool of the PEM certificates of file.
func CAPool(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s: no PEM certificate in it", file)
	}
	return pool, nil
}

// ForwardedHandler serves h (the store's API) to the aggregated API server
// alone (a verified client certificate of CN AggregatorName, see
// ForwardedServing), for the reader it names in the X-Remote-* headers:
// the API server authenticated that user and the aggregator authorized it
// to read pod starts; authz asks what else they may read (the argv the
// kernel saw, other pods' pulls) as the user. A request that names no
// reader is the aggregator's own: it may list the starts' summaries, which
// it serves to each user by RBAC, and nothing more. Any bearer token is
// refused unread: no user's credential has business on a node.
func ForwardedHandler(authz *Authorizer, h http.Handler, logger *slog.Logger) http.Handler {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := fromAggregator(r); err != nil {
			logger.Debug("refused a request", "path", r.URL.Path, "error", err)
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
		u := forwardedUser(r.Header)
		var pr exporter.PodReader
		switch {
		case u != nil:
			pr = authz.Reader(r.Context(), u)
		case r.Method == http.MethodGet && r.URL.Path == "/api/v1/timelines":
			pr = exporter.EveryPod
		default:
			http.Error(w, "the aggregator's own requests list the starts; a timeline is read for a user it names", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r.WithContext(exporter.WithPodReader(r.Context(), pr)))
	})
}

// fromAggregator returns nil when r came over a connection whose verified
// client certificate is the aggregator's, and carries no credential of its
// own.
func fromAggregator(r *http.Request) error {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
		return errors.New("this API answers the aggregated API server alone: ask through the API server (kubectl get podstarts)")
	}
	if cn := r.TLS.VerifiedChains[0][0].Subject.CommonName; cn != AggregatorName {
		return fmt.Errorf("client certificate %q is not the aggregated API server's (%q)", cn, AggregatorName)
	}
	if r.Header.Get("Authorization") != "" {
		return errors.New("a request with a credential in it is refused unread: users' credentials stay with the API server")
	}
	if impersonates(r) {
		return errors.New("the aggregator names its reader in X-Remote-* headers, never Impersonate-*")
	}
	return nil
}

// forwardedUser is the reader the X-Remote-* headers name, nil when none.
func forwardedUser(h http.Header) *User {
	name := h.Get(HeaderUser)
	if name == "" {
		return nil
	}
	u := &User{Name: name, UID: h.Get(HeaderUID), Groups: h.Values(HeaderGroup)}
	for k, v := range h {
		key, ok := strings.CutPrefix(k, HeaderExtraPrefix)
		if !ok || key == "" {
			continue
		}
		if u.Extra == nil {
			u.Extra = map[string][]string{}
		}
		if key, err := url.PathUnescape(strings.ToLower(key)); err == nil {
			u.Extra[key] = append(u.Extra[key], v...)
		}
	}
	return u
}

// SetForwardedUser names u in h's X-Remote-* headers, as ForwardedHandler
// reads them (extra keys are escaped as the API server's requestheader
// does: %-encoded, since a header name holds no '/').
func SetForwardedUser(h http.Header, u *User) {
	h.Set(HeaderUser, u.Name)
	if u.UID != "" {
		h.Set(HeaderUID, u.UID)
	}
	for _, g := range u.Groups {
		h.Add(HeaderGroup, g)
	}
	for k, vs := range u.Extra {
		for _, v := range vs {
			h.Add(HeaderExtraPrefix+url.PathEscape(k), v)
		}
	}
}
