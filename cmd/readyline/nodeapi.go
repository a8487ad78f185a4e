package main

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"k8s.io/client-go/rest"

	"github.com/readyline/readyline/exporter/apiauth"
	"github.com/readyline/readyline/exporter/apiclient"
)

// nodeAPIConfig is where readyline's aggregated API server (cmd/readyline-api)
// reads this node's starts: mutual TLS with certificates of the chart's CA,
// the reader named in headers, no user's credential (DESIGN.md, "Who may
// read what").
type nodeAPIConfig struct {
	addr     string
	certFile string
	keyFile  string
	caFile   string
}

func (c *nodeAPIConfig) register(fs *flagSet) {
	fs.String(&c.addr, "node-api-addr", "",
		"serve the starts to readyline's aggregated API server (kubectl get podstarts) here, over mutual TLS, and to nobody else (empty: off)")
	fs.String(&c.certFile, "node-api-cert-file", "/etc/readyline/node-api/tls.crt",
		"the node API's serving certificate, for the name "+apiauth.NodeServerName+", PEM")
	fs.String(&c.keyFile, "node-api-key-file", "/etc/readyline/node-api/tls.key", "the key of --node-api-cert-file, PEM")
	fs.String(&c.caFile, "node-api-client-ca-file", "/etc/readyline/node-api/client-ca.crt",
		"the CA of the aggregated API server's client certificate (CN "+apiauth.AggregatorName+"), PEM")
}

func (c *nodeAPIConfig) validate() error {
	if c.addr != "" && (c.certFile == "" || c.keyFile == "" || c.caFile == "") {
		return errors.New("--node-api-addr needs --node-api-cert-file, --node-api-key-file and --node-api-client-ca-file")
	}
	return nil
}

// nodeAPIFilesPoll is how often the node API looks for its certificates
// until they are there: a Secret mounted optional appears in the pod's
// volume within the kubelet's sync, with no restart.
const nodeAPIFilesPoll = 10 * time.Second

// serveNodeAPI serves the store's API on --node-api-addr to the aggregated
// API server alone (apiauth.ForwardedHandler), asking the API server of rc
// what each reader it names may read. Until the certificates are there it
// waits for them (logged once): a node without them is one the aggregator
// cannot read, nothing more.
func (d *daemon) serveNodeAPI(rc *rest.Config) (func(context.Context) error, error) {
	c := d.cfg.nodeAPI
	client, err := reviewClient(rc)
	if err != nil {
		return nil, err
	}
	logger := d.logger.With("source", "node_api")
	authz := apiauth.NewAuthorizer(apiauth.AuthorizerConfig{Access: client.SubjectAccessReviews()})
	h := apiauth.ForwardedHandler(authz, d.withEventsShare(d.storeHandler()), logger)
	return func(ctx context.Context) error {
		if !waitForFiles(ctx, logger, c.certFile, c.keyFile, c.caFile) {
			return nil
		}
		cfg, err := apiauth.ForwardedServing(c.certFile, c.keyFile, c.caFile)
		if err != nil {
			return err
		}
		ln, err := net.Listen("tcp", c.addr)
		if err != nil {
			return err
		}
		logger.Info("serving the node API to the aggregated API server", "addr", c.addr)
		srv := newHTTPServer(h, defaultHTTPLimits)
		cfg.NextProtos = []string{"http/1.1"} // the limits of serve.go are HTTP/1's
		srv.TLSConfig = cfg
		// A client without the aggregator's certificate fails in the
		// handshake: no news.
		srv.ErrorLog = slog.NewLogLogger(logger.Handler(), slog.LevelDebug)
		return serveHTTP(ctx, srv, ln, defaultHTTPLimits)
	}, nil
}

// withEventsShare takes the share of the cluster's Events reads the
// aggregator sends with its list (apiclient.EventsShareParam): the
// background reads of this node's Events keep to it. It is only heard
// here, from the aggregator's certificate, and it can only lower the
// node's own rate. The last share stays while the aggregator is away: an
// aggregator down in an incident does not lift the bound.
func (d *daemon) withEventsShare(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v := r.URL.Query().Get(apiclient.EventsShareParam); v != "" && r.URL.Path == "/api/v1/timelines" && d.reads != nil {
			if qps, err := strconv.ParseFloat(v, 64); err == nil && qps > 0 && !math.IsInf(qps, 0) {
				d.reads.reader.SetShare(qps)
			}
		}
		h.ServeHTTP(w, r)
	})
}

// waitForFiles returns true once every file exists, false when ctx ends
// first.
func waitForFiles(ctx context.Context, logger *slog.Logger, files ...string) bool {
	t := time.NewTicker(nodeAPIFilesPoll)
	defer t.Stop()
	for logged := false; ; {
		missing := ""
		for _, f := range files {
			if _, err := os.Stat(f); err != nil {
				missing = f
				break
			}
		}
		if missing == "" {
			return true
		}
		if !logged {
			logger.Info("the node API waits for its certificates (the readyline-node-api Secret)", "missing", missing)
			logged = true
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
}
