package main

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"golang.org/x/net/netutil"
)

// httpLimits bound what one client of the daemon's HTTP servers (--metrics-addr,
// --api-addr, --health-addr) can hold. The clients are a Prometheus scraper
// or two, the kubelet's probes (through `readyline health`) and 'readyline
// explain' on the node; every request is a GET without a body, and the
// largest answer is one timeline's JSON (a few MiB at most, see --keep-bytes).
type httpLimits struct {
	// ReadHeaderTimeout bounds a new connection's wait for its request
	// headers, so a connection that says nothing is closed.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request (no endpoint takes a body).
	ReadTimeout time.Duration
	// WriteTimeout bounds a response from the end of its request's headers:
	// a /metrics scrape or a timeline, on a node's network, takes well
	// under a second; a client that reads slower is cut off.
	WriteTimeout time.Duration
	// IdleTimeout closes a kept-alive connection waiting for its next
	// request. Prometheus reuses its connection when it scrapes more often
	// than this; otherwise it reconnects, which costs one handshake.
	IdleTimeout time.Duration
	// ShutdownTimeout bounds the wait for requests in flight at shutdown;
	// the connections still open then are closed.
	ShutdownTimeout time.Duration
	// MaxHeaderBytes bounds the request headers (net/http allows 4 KiB
	// more before it answers 431). Our clients send a few hundred bytes.
	MaxHeaderBytes int
	// MaxConns bounds the connections served at once (each is a goroutine
	// and two 4 KiB buffers); further ones wait in the kernel's accept
	// queue until one closes.
	MaxConns int
	// MaxConnsPerClient bounds the connections served at once from one
	// remote IP address (0: no bound); one more is closed as soon as it is
	// accepted. Without it, one client that keeps MaxConns connections
	// open, and reconnects each one the server closes, holds every slot.
	MaxConnsPerClient int
}

// defaultHTTPLimits are the limits of the daemon's HTTP servers.
var defaultHTTPLimits = httpLimits{
	ReadHeaderTimeout: 5 * time.Second,
	ReadTimeout:       10 * time.Second,
	WriteTimeout:      30 * time.Second,
	IdleTimeout:       30 * time.Second,
	ShutdownTimeout:   2 * time.Second,
	MaxHeaderBytes:    8 << 10,
	MaxConns:          64,
}

// podNetworkHTTPLimits are the limits of a server the pod network reaches
// (--metrics-addr): any pod can connect, so one pod gets a few of its
// connections, not all. Prometheus keeps one connection to a target; a
// second scraper comes from another address.
var podNetworkHTTPLimits = func() httpLimits {
	l := defaultHTTPLimits
	l.MaxConnsPerClient = 4
	return l
}()

// newHTTPServer returns a server of h with the limits l; serve it with
// serveHTTP.
func newHTTPServer(h http.Handler, l httpLimits) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		ReadTimeout:       l.ReadTimeout,
		WriteTimeout:      l.WriteTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    l.MaxHeaderBytes,
	}
}

// serveHTTP serves srv on ln, at most l.MaxConns connections at once and
// l.MaxConnsPerClient from one address, over TLS when srv.TLSConfig is set,
// until ctx is done; then it waits
// l.ShutdownTimeout for the requests in flight and closes what is left. It
// returns nil after a shutdown.
func serveHTTP(ctx context.Context, srv *http.Server, ln net.Listener, l httpLimits) error {
	if l.MaxConnsPerClient > 0 {
		ln = limitPerClient(ln, l.MaxConnsPerClient)
	}
	if l.MaxConns > 0 {
		ln = netutil.LimitListener(ln, l.MaxConns)
	}
	if srv.TLSConfig != nil {
		// TLS outermost: net/http tells a TLS connection (r.TLS, the
		// client's certificate) by its type, which a limiter's wrapper of
		// it would hide.
		ln = tls.NewListener(ln, srv.TLSConfig)
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.ShutdownTimeout)
		defer cancel()
		if srv.Shutdown(sctx) != nil {
			srv.Close()
		}
	}()
	err := srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		<-stopped
		return nil
	}
	return err
}

// withUI serves the waterfall pages (/ui/) beside the explain API, on its
// address, and sends a browser that asks for / to them.
func withUI(api, ui http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/ui", ui)
	mux.Handle("/ui/", ui)
	mux.Handle("GET /{$}", http.RedirectHandler("/ui/", http.StatusFound))
	mux.Handle("/", api)
	return mux
}

// withPprof serves Go's profiles under /debug/pprof/ beside h when on. They
// name functions and allocation sites, never memory contents; they are off
// by default, and the API they join listens on loopback unless told not to.
func withPprof(h http.Handler, on bool) http.Handler {
	if !on {
		return h
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.Handle("/", h)
	return mux
}
