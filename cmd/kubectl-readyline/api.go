package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"

	"github.com/go-logr/logr"
	"github.com/readyline/readyline/exporter/apiclient"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// The plugin reads a daemon's secure API (readyline run --secure-api-addr)
// through a port-forward to its pod (pods/portforward), over TLS, with the
// kubeconfig's own credentials: the daemon asks the API server who they are
// and what they may get, and answers with the starts of those pods only.
// No pods/exec: exec in readyline's pod is root on every node.

// errOldDaemon is wrapped when a readyline pod does not serve the secure
// API: one older than the plugin, or run with another --secure-api-addr.
var errOldDaemon = errors.New("no secure API")

// daemonTransport returns what carries the kubeconfig's credentials of cfg
// to a daemon's secure API: its client certificate, bearer token, token
// file or exec or auth provider, as client-go sends them to the API
// server. The daemon's certificate is its own (made when it starts): what
// vouches for it is the route, a port-forward the API server opens to the
// readyline pod the plugin named, so it is not checked against the API
// server's CA. Impersonation (--as) is refused: the daemon answers each
// user as who they are.
func daemonTransport(cfg *rest.Config) (http.RoundTripper, error) {
	if imp := cfg.Impersonate; imp.UserName != "" || imp.UID != "" || len(imp.Groups) > 0 || len(imp.Extra) > 0 {
		return nil, errors.New("readyline's API answers you as yourself and does not impersonate: ask without --as, --as-group and --as-uid")
	}
	c := rest.CopyConfig(cfg)
	c.TLSClientConfig.CAFile, c.TLSClientConfig.CAData = "", nil
	c.TLSClientConfig.ServerName = ""
	c.TLSClientConfig.Insecure = true
	// The API server's proxy is not on the way to 127.0.0.1.
	c.Proxy = nil
	return rest.TransportFor(c)
}

// forwardLog keeps what a port forwarder logs about a connection it
// could not forward ("failed to connect to localhost:9467 inside
// namespace ..."), instead of printing it: the plugin says it in its own
// words. It is a logr.LogSink, used through the context of Forward.
type forwardLog struct {
	mu   sync.Mutex
	last error
}

func (l *forwardLog) Init(logr.RuntimeInfo)          {}
func (l *forwardLog) Enabled(int) bool               { return false }
func (l *forwardLog) Info(int, string, ...any)       {}
func (l *forwardLog) WithValues(...any) logr.LogSink { return l }
func (l *forwardLog) WithName(string) logr.LogSink   { return l }
func (l *forwardLog) Error(err error, msg string, _ ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.last = fmt.Errorf("%s: %w", msg, err)
}

func (l *forwardLog) err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last
}

// withAPI forwards a free port of 127.0.0.1 to the secure API of daemon,
// calls f with a client of it and a context that ends with ctx or when
// the forward does, and ends the forward once f returns. why says what
// for ("asking the readyline on node n1"). The errors say what went wrong
// in the user's terms: RBAC refusing pods/portforward, a forward lost, a
// daemon that has no secure API (errOldDaemon), or the daemon's answer
// (an apiclient.Error: 401, 403, 404).
func (ds *daemonSet) withAPI(ctx context.Context, daemon *corev1.Pod, why string, f func(ctx context.Context, api *apiclient.Client) error) error {
	log := &forwardLog{}
	fctx, stop := context.WithCancel(klog.NewContext(ctx, logr.New(log)))
	defer stop()
	ready := make(chan uint16, 1)
	ended := make(chan struct{})
	var forwardErr error
	go func() {
		defer close(ended)
		forwardErr = ds.conn.Forward(fctx, daemon, "127.0.0.1", 0, ds.apiPort, func(port uint16) { ready <- port })
	}()
	var port uint16
	select {
	case port = <-ready:
	case <-ended:
		return ds.streamError(ctx, cmp.Or(forwardErr, errors.New("the port-forward ended before it listened")), "pods/portforward", daemon, why)
	}
	octx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-ended:
			cancel()
		case <-octx.Done():
		}
	}()
	api := &apiclient.Client{BaseURL: "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port))), HTTP: &http.Client{Transport: ds.transport}}
	err := f(octx, api)
	lost := false // the forward ended before f did
	select {
	case <-ended:
		lost = true
	default:
	}
	stop()
	<-ended
	var answer *apiclient.Error
	switch {
	case err == nil && lost && forwardErr != nil && ctx.Err() == nil:
		return ds.streamError(ctx, forwardErr, "pods/portforward", daemon, why)
	case err == nil, errors.As(err, &answer):
		return err
	case ctx.Err() != nil:
		return context.Cause(ctx)
	case log.err() != nil:
		return fmt.Errorf("%s (pod %s/%s): %w on port %d: it is older than this plugin (upgrade readyline: before its secure API, kubectl readyline exec'd into it), "+
			"or serves it on another port (--api-port, readyline run --secure-api-addr) (%v)", why, daemon.Namespace, daemon.Name, errOldDaemon, ds.apiPort, log.err())
	}
	return fmt.Errorf("%s (pod %s/%s): %w", why, daemon.Namespace, daemon.Name, err)
}

// answerError explains err, a daemon's answer other than 200 to a request
// for what ("pod team/web", "its list"), after who ("the readyline on
// node n1").
func answerError(err error, who string, daemon *corev1.Pod, what string) error {
	var answer *apiclient.Error
	if !errors.As(err, &answer) {
		return err
	}
	who = fmt.Sprintf("%s (pod %s/%s)", who, daemon.Namespace, daemon.Name)
	switch answer.Status {
	case http.StatusUnauthorized:
		return fmt.Errorf("%s did not accept the kubeconfig's credentials (%w: %s): it takes a client certificate of the cluster's client CA or a bearer token the API server accepts",
			who, apiclient.ErrUnauthorized, answer.Message)
	case http.StatusForbidden:
		return fmt.Errorf("%w: %s refused %s: %s; readyline shows a pod's start to whom may get that pod",
			errForbidden, who, what, answer.Message)
	case http.StatusServiceUnavailable:
		return fmt.Errorf("%s could not ask the API server whether you may read %s: %s", who, what, answer.Message)
	}
	return fmt.Errorf("%s answered %s for %s", who, answer, what)
}
