package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter"
	"github.com/readyline/readyline/exporter/apiauth"
)

// countingListener counts the connections it has accepted and not yet
// closed, and the most it ever had open at once.
type countingListener struct {
	net.Listener
	open, peak atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	n := l.open.Add(1)
	for p := l.peak.Load(); n > p && !l.peak.CompareAndSwap(p, n); p = l.peak.Load() {
	}
	return &countedConn{Conn: c, l: l}, nil
}

type countedConn struct {
	net.Conn
	l    *countingListener
	once sync.Once
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.open.Add(-1) })
	return err
}

// startTestServer serves an "ok" handler the way the daemon serves its
// endpoints (newHTTPServer, serveHTTP) with limits l, and stops it at the
// end of the test.
func startTestServer(t *testing.T, l httpLimits) (addr string, ln *countingListener) {
	t.Helper()
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln = &countingListener{Listener: raw}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serveHTTP(ctx, newHTTPServer(h, l), ln, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serveHTTP after shutdown: %v", err)
		}
	})
	return raw.Addr().String(), ln
}

// fastLimits are defaultHTTPLimits with the timeouts shortened for a test;
// the sizes are the daemon's.
func fastLimits() httpLimits {
	l := defaultHTTPLimits
	l.ReadHeaderTimeout, l.IdleTimeout = 500*time.Millisecond, 300*time.Millisecond
	return l
}

// TestHTTPServerClosesIdleConnections: 300 clients each make one request on
// a kept-alive connection and then say nothing. The server must close every
// one of them within IdleTimeout (plus slack) of its response, and never
// serve more than MaxConns at once: the others wait to be accepted until
// a slot frees.
func TestHTTPServerClosesIdleConnections(t *testing.T) {
	// The slack is for a loaded machine (the server's idle timer fires
	// late, the client reads late): a server that keeps idle connections
	// open does so for the whole budget, so 5 s still tells them apart.
	const clients, slack = 300, 5 * time.Second
	l := fastLimits()
	addr, ln := startTestServer(t, l)
	// Every client waits for at most the rounds of MaxConns before it.
	rounds := (clients + l.MaxConns - 1) / l.MaxConns
	budget := time.Duration(rounds)*(l.IdleTimeout+slack) + 5*time.Second

	errs := make(chan error, clients)
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() { errs <- idleClient(addr, l.IdleTimeout+slack, budget) })
	}
	wg.Wait()
	close(errs)
	failed := 0
	for err := range errs {
		if err != nil {
			if failed++; failed <= 5 {
				t.Error(err)
			}
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d idle connections not closed by the server in time", failed, clients)
	}
	if p := ln.peak.Load(); p > int64(l.MaxConns) {
		t.Errorf("%d connections served at once, more than MaxConns %d", p, l.MaxConns)
	}
	// The server's side of a close is counted when its goroutine gets to it.
	for deadline := time.Now().Add(5 * time.Second); ln.open.Load() != 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if n := ln.open.Load(); n != 0 {
		t.Errorf("%d connections still open on the server side 5 s after every client saw its close", n)
	}
}

// idleClient makes one kept-alive request and waits, silent, for the server
// to close the connection: it must within idle of the response.
func idleClient(addr string, idle, budget time.Duration) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(budget))
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: readyline\r\n\r\n"); err != nil {
		return fmt.Errorf("writing request: %w", err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return fmt.Errorf("reading response: %w", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.Close {
		return errors.New("the server closed at once; want a kept-alive connection")
	}
	answered := time.Now()
	_, err = br.ReadByte()
	waited := time.Since(answered)
	switch {
	case err == nil:
		return errors.New("the server sent more after the response")
	case errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || isReset(err):
		if waited > idle {
			return fmt.Errorf("closed %v after the response, more than %v", waited, idle)
		}
		return nil
	default:
		return fmt.Errorf("still open %v after the response: %w", waited, err)
	}
}

func isReset(err error) bool { return strings.Contains(err.Error(), "connection reset") }

// TestHTTPServerClosesSilentConnections: a connection that never sends its
// request headers is closed after ReadHeaderTimeout.
func TestHTTPServerClosesSilentConnections(t *testing.T) {
	l := fastLimits()
	addr, _ := startTestServer(t, l)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// A server that keeps a silent connection open does so past the read
	// deadline, which leaves a loaded machine 5 s of slack to close it.
	start := time.Now()
	c.SetDeadline(start.Add(l.ReadHeaderTimeout + 5*time.Second))
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !isReset(err) {
		t.Fatalf("silent connection: %v after %v, want it closed by the server", err, time.Since(start))
	}
	t.Logf("silent connection closed after %v (ReadHeaderTimeout %v)", time.Since(start), l.ReadHeaderTimeout)
}

// TestHTTPServerRejectsLargeHeaders: request headers over MaxHeaderBytes
// (and net/http's 4 KiB of slack) get 431.
func TestHTTPServerRejectsLargeHeaders(t *testing.T) {
	l := fastLimits()
	addr, _ := startTestServer(t, l)
	for _, tc := range []struct {
		size int
		want int
	}{
		{size: 512, want: http.StatusOK},
		{size: l.MaxHeaderBytes + 8<<10, want: http.StatusRequestHeaderFieldsTooLarge},
	} {
		req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Padding", strings.Repeat("a", tc.size))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%d-byte header: %v", tc.size, err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%d-byte header: %s, want %d", tc.size, resp.Status, tc.want)
		}
	}
}

// TestPprofOnlyWhenAsked: the profiles are served beside the API with
// --pprof, and without it the API is all there is.
func TestPprofOnlyWhenAsked(t *testing.T) {
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "api") })
	for _, on := range []bool{false, true} {
		srv := httptest.NewServer(withPprof(api, on))
		get := func(path string) (int, string) {
			resp, err := http.Get(srv.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b)
		}
		code, body := get("/debug/pprof/heap?debug=1")
		if on && (code != http.StatusOK || !strings.Contains(body, "heap profile")) {
			t.Errorf("--pprof: heap profile: %d %.80q", code, body)
		}
		if !on && body != "api" {
			t.Errorf("no --pprof: /debug/pprof/heap served %d %.80q, want the API's answer", code, body)
		}
		if _, body := get("/v1/timelines"); body != "api" {
			t.Errorf("pprof %v: the API answered %.80q", on, body)
		}
		srv.Close()
	}
}

// TestAPIAddressServesUI: the daemon's API address serves the explain API,
// the waterfall pages beside it, and sends a browser at / to them.
func TestAPIAddressServesUI(t *testing.T) {
	d := &daemon{store: exporter.NewStore(exporter.StoreLimits{Timelines: 8})}
	d.store.Add(&correlator.Timeline{
		Pod:   correlator.PodRef{UID: "u1", Namespace: "ns", Name: "web"},
		Start: time.Unix(1000, 0), End: time.Unix(1002, 0), Outcome: correlator.OutcomeReady,
		Phases: []correlator.Phase{{Name: correlator.PhaseSchedule, Start: time.Unix(1000, 0), End: time.Unix(1001, 0)}},
	})
	srv := httptest.NewServer(d.apiHandler())
	defer srv.Close()
	for _, tc := range []struct{ path, contentType, body string }{
		{"/api/v1/timelines", "application/json", `"name":"web"`},
		{"/api/v1/timelines/ns/web", "application/json", `"pod.schedule"`},
		{"/ui/", "text/html; charset=utf-8", `href="pods/ns/web"`},
		{"/ui/pods/ns/web", "text/html; charset=utf-8", `data-name="pod.schedule"`},
		{"/", "text/html; charset=utf-8", "Pod starts"}, // redirected to /ui/
	} {
		resp, err := http.Get(srv.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != tc.contentType || !strings.Contains(string(b), tc.body) {
			t.Errorf("GET %s: %s %s, want %s with %q in\n%.300s", tc.path, resp.Status, resp.Header.Get("Content-Type"), tc.contentType, tc.body, b)
		}
	}
}

// TestHTTPServerTLSShowsClientCertificates: behind the connection limits, a
// TLS server still sees its clients' certificates (r.TLS): net/http tells a
// TLS connection by its type, which a limiter wrapping it would hide, and
// the secure API authenticates client certificates from it.
func TestHTTPServerTLSShowsClientCertificates(t *testing.T) {
	serverCfg, err := apiauth.Serving("", "", nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	clientCfg, err := apiauth.Serving("", "", nil, time.Now()) // any certificate will do as the client's
	if err != nil {
		t.Fatal(err)
	}
	certs := make(chan int, 1)
	srv := newHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := -1
		if r.TLS != nil {
			n = len(r.TLS.PeerCertificates)
		}
		certs <- n
	}), defaultHTTPLimits)
	srv.TLSConfig = serverCfg
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serveHTTP(ctx, srv, ln, defaultHTTPLimits) }()
	defer func() {
		cancel()
		<-done
	}()
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
		InsecureSkipVerify: true, Certificates: clientCfg.Certificates}}}
	resp, err := client.Get("https://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if n := <-certs; n != 1 {
		t.Errorf("the handler saw %d client certificates (-1: no TLS state), want 1", n)
	}
}
