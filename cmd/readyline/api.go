package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/rest"

	"github.com/readyline/readyline/collector/kubeapi"
	"github.com/readyline/readyline/exporter/apiauth"
)

// Where the daemon serves its API (DESIGN.md, "Who may read what"):
//
//   - --api-addr, by default a unix socket only root reaches: every start,
//     to `readyline explain` on the node. Root on the node reads the node's
//     memory anyway, so this widens nobody's access. A TCP address is no
//     such boundary: a port-forward to the pod, and with hostNetwork every
//     process of the node, reaches its loopback.
//   - --secure-api-addr, TLS on the pod's loopback: the starts of the pods
//     each of the API server's users may get, to kubectl readyline through
//     a port-forward (exporter/apiauth). Off unless set (deploy/base sets
//     it; deploy/aggregated and the chart's default leave it off): each
//     user's own API credential reaches the node there, which
//     readyline.dev's node API (--node-api-addr) never needs.
const defaultAPIAddr = "unix:/run/readyline/api.sock"

// unixPrefix marks an address that is a unix socket's path.
const unixPrefix = "unix:"

// unixPath is the path of a unix: address (unix:/run/x or unix:///run/x).
func unixPath(addr string) (string, bool) {
	path, ok := strings.CutPrefix(addr, unixPrefix)
	return strings.TrimPrefix(path, "//"), ok
}

// unixTransport is an HTTP transport whose every connection is to the
// unix socket at path, whatever the URL's host.
func unixTransport(path string) *http.Transport {
	return &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}
}

// listen listens on addr: "unix:PATH", a socket that only its owner (the
// daemon's user, root) may connect to, or a TCP host:port.
func listen(addr string) (net.Listener, error) {
	path, ok := unixPath(addr)
	if !ok {
		return net.Listen("tcp", addr)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	// A daemon that did not stop cleanly (killed, its container restarted
	// on the same emptyDir) leaves its socket; a file that is no socket
	// is not ours to remove.
	if fi, err := os.Lstat(path); err == nil && fi.Mode().Type() == fs.ModeSocket {
		os.Remove(path)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	// Connecting takes write permission: the owner's only.
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// serveLocalAPI serves every start (apiHandler) on --api-addr, with a Warn
// when that is a TCP address, which is no boundary.
func (d *daemon) serveLocalAPI() func(context.Context) error {
	if !strings.HasPrefix(d.cfg.apiAddr, unixPrefix) {
		d.logger.Warn("the local API serves every namespace's pod starts to whoever reaches its TCP address, port-forwards to this pod included: "+
			"give --api-addr a unix: socket, and kubectl readyline --secure-api-addr", "api", d.cfg.apiAddr)
	}
	return d.serve(d.cfg.apiAddr, d.apiHandler(), defaultHTTPLimits)
}

// secureAPIConfig is where and how the API is served to the API server's
// users.
type secureAPIConfig struct {
	addr     string
	certFile string
	keyFile  string
}

func (c *secureAPIConfig) register(fs *flagSet) {
	fs.String(&c.addr, "secure-api-addr", "",
		"serve the timeline API and the waterfall pages here over TLS to the API server's users, each the starts of the pods they may get "+
			"(a client certificate of the cluster's client CA or a bearer token; TokenReview and SubjectAccessReview): "+
			"what kubectl readyline --via nodes reaches through a port-forward, e.g. 127.0.0.1:9467 (empty, the default: off; "+
			"users' own credentials come to the node there: prefer readyline.dev, --node-api-addr)")
	fs.String(&c.certFile, "tls-cert-file", "", "the secure API's serving certificate, PEM (default: one made at start, signed by itself)")
	fs.String(&c.keyFile, "tls-private-key-file", "", "the key of --tls-cert-file, PEM")
}

// reviewQPS and reviewBurst are the rate limits of the secure API's
// reviews: a list of every namespace's starts asks once a namespace.
const (
	reviewQPS   = 50
	reviewBurst = 100
)

// serveSecureAPI serves the timeline API and the pages on --secure-api-addr
// (apiauth), asking the API server of rc. The reviews have their own
// client and rate limit: a burst of readers neither waits for the pod
// watch and the alerts (5 requests a second) nor delays them.
func (d *daemon) serveSecureAPI(rc *rest.Config) (func(context.Context) error, error) {
	c := d.cfg.secureAPI
	cfg, err := apiauth.Serving(c.certFile, c.keyFile, []string{os.Getenv("POD_NAME")}, time.Now())
	if err != nil {
		return nil, err
	}
	cfg.NextProtos = []string{"http/1.1"} // the limits of serve.go are HTTP/1's
	client, err := reviewClient(rc)
	if err != nil {
		return nil, err
	}
	logger := d.logger.With("source", "secure_api")
	authn := apiauth.NewAuthenticator(apiauth.AuthenticatorConfig{
		Tokens: client.TokenReviews(), ClientCA: client.ConfigMaps(apiauth.ClientCANamespace),
	}, logger)
	authz := apiauth.NewAuthorizer(apiauth.AuthorizerConfig{Access: client.SubjectAccessReviews()})
	h := apiauth.Handler(authn, authz, d.storeHandler(), logger)
	return func(ctx context.Context) error {
		ln, err := net.Listen("tcp", c.addr)
		if err != nil {
			return err
		}
		srv := newHTTPServer(h, defaultHTTPLimits)
		srv.TLSConfig = cfg
		// A client that drops the handshake (a port-forward's probe) is
		// no news.
		srv.ErrorLog = slog.NewLogLogger(logger.Handler(), slog.LevelDebug)
		return serveHTTP(ctx, srv, ln, defaultHTTPLimits) // TLS from srv.TLSConfig
	}, nil
}

// reviewClient is a client of rc's API server for the reviews of an API's
// readers, with its own rate limits.
func reviewClient(rc *rest.Config) (*kubeapi.Client, error) {
	reviews := rest.CopyConfig(rc)
	reviews.QPS, reviews.Burst = reviewQPS, reviewBurst
	return kubeapi.New(reviews)
}

// storeHandler is the store's API and pages, for the request's reader.
func (d *daemon) storeHandler() http.Handler {
	return withUI(d.store.Handler(d.logger), d.store.UIHandler(d.logger))
}

// validate checks the flags of the secure API.
func (c *secureAPIConfig) validate() error {
	if (c.certFile == "") != (c.keyFile == "") {
		return errors.New("--tls-cert-file and --tls-private-key-file go together")
	}
	if strings.HasPrefix(c.addr, unixPrefix) {
		return fmt.Errorf("--secure-api-addr %s: want a TCP host:port, which a port-forward reaches", c.addr)
	}
	return nil
}
