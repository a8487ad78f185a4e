package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"

	"github.com/readyline/readyline/collector/kubeapi/kubeapitest"
	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter"
	"github.com/readyline/readyline/exporter/apiclient"
)

// testDaemon is a daemon whose store keeps a start of team/web and of
// other/db.
func testDaemon(t *testing.T, args ...string) *daemon {
	t.Helper()
	cfg, err := parseRunConfig(args, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	d := &daemon{cfg: cfg, logger: slog.New(slog.DiscardHandler), store: exporter.NewStore(exporter.StoreLimits{})}
	for _, p := range []correlator.PodRef{{Namespace: "team", Name: "web", UID: "u1"}, {Namespace: "other", Name: "db", UID: "u2"}} {
		d.store.Add(&correlator.Timeline{Pod: p, Start: time.Unix(1000, 0), End: time.Unix(1001, 0), Outcome: correlator.OutcomeReady})
	}
	return d
}

// serveUntilDone runs serve until the test ends.
func serveUntilDone(t *testing.T, serve func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serving: %v", err)
		}
	})
}

// TestLocalAPIOnUnixSocket: the local API listens on a socket only its
// owner may use (replacing one a killed daemon left), serves every start
// there, and `readyline explain` reads it.
func TestLocalAPIOnUnixSocket(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "run", "api.sock")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	stale, err := listen("unix:" + path)
	if err != nil {
		t.Fatal(err)
	}
	// A killed daemon does not unlink its socket.
	stale.(interface{ SetUnlinkOnClose(bool) }).SetUnlinkOnClose(false)
	stale.Close()

	d := testDaemon(t, "--api-addr", "unix://"+path)
	serveUntilDone(t, d.serveLocalAPI())
	var fi os.FileInfo
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if fi, err = os.Stat(path); err == nil && fi.Mode()&os.ModeSocket != 0 || time.Now().After(deadline) {
			break
		}
	}
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket %v (%v), want mode 0600", fi, err)
	}
	var stdout bytes.Buffer
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		stdout.Reset()
		err = runExplain(context.Background(), []string{"--api-addr", "unix:" + path}, &stdout, io.Discard)
		if err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil || !strings.Contains(stdout.String(), "team/web") || !strings.Contains(stdout.String(), "other/db") {
		t.Errorf("readyline explain over the socket: %v\n%s", err, stdout.String())
	}
}

// TestSecureAPIServesEachUserTheirs runs the secure API against an API
// server that knows one token, whose user may get the pods of team: the
// user reads team's starts over TLS, not other's, and without the token
// nothing.
func TestSecureAPIServesEachUserTheirs(t *testing.T) {
	apiServer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/apis/authentication.k8s.io/v1/tokenreviews":
			var tr authenticationv1.TokenReview
			kubeapitest.Decode(t, body, &tr)
			tr.Status.Authenticated = tr.Spec.Token == "alice-token"
			tr.Status.User = authenticationv1.UserInfo{Username: "alice", Groups: []string{"system:authenticated"}}
			kubeapitest.WriteObject(t, w, http.StatusCreated, &tr)
		case "/apis/authorization.k8s.io/v1/subjectaccessreviews":
			var sar authorizationv1.SubjectAccessReview
			kubeapitest.Decode(t, body, &sar)
			sar.Status.Allowed = sar.Spec.User == "alice" && sar.Spec.ResourceAttributes.Namespace == "team"
			kubeapitest.WriteObject(t, w, http.StatusCreated, &sar)
		default:
			http.NotFound(w, r) // no client CA: certificates are refused
		}
	}))
	defer apiServer.Close()

	d := testDaemon(t, "--secure-api-addr", "127.0.0.1:0")
	// Listen on a free port: the flag's :0 would not say which.
	ln, err := listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d.cfg.secureAPI.addr = ln.Addr().String()
	ln.Close()
	serve, err := d.serveSecureAPI(&rest.Config{Host: apiServer.URL})
	if err != nil {
		t.Fatal(err)
	}
	serveUntilDone(t, serve)

	client := func(token string) *apiclient.Client {
		var rt http.RoundTripper = &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
		if token != "" {
			rt = transport.NewBearerAuthRoundTripper(token, rt)
		}
		return &apiclient.Client{BaseURL: "https://" + d.cfg.secureAPI.addr, HTTP: &http.Client{Transport: rt}}
	}
	ctx := context.Background()
	var list []apiclient.TimelineSummary
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		list, err = client("alice-token").Timelines(ctx, "")
		if err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil || len(list) != 1 || list[0].Name != "web" {
		t.Errorf("alice's list %+v (%v), want team/web only", list, err)
	}
	if _, err := client("alice-token").Timeline(ctx, "other", "db", ""); !errors.Is(err, apiclient.ErrForbidden) {
		t.Errorf("alice on other/db: %v, want 403", err)
	}
	if _, err := client("").Timelines(ctx, ""); !errors.Is(err, apiclient.ErrUnauthorized) {
		t.Errorf("no token: %v, want 401", err)
	}
}

// TestSecureAPIFlags: the TLS files go in pairs, and the secure API
// listens on TCP, which a port-forward reaches.
func TestSecureAPIFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--tls-cert-file", "/x.crt"},
		{"--tls-private-key-file", "/x.key"},
		{"--secure-api-addr", "unix:/run/x.sock"},
	} {
		var stderr bytes.Buffer
		if _, err := parseRunConfig(args, &stderr); !errors.Is(err, errUsage) || stderr.Len() == 0 {
			t.Errorf("%v: %v (%q), want a usage error", args, err, stderr.String())
		}
	}
	c, err := parseRunConfig(nil, io.Discard)
	if err != nil || c.apiAddr != "unix:/run/readyline/api.sock" || c.secureAPI.addr != "" {
		t.Errorf("defaults: api %q, secure api %q (%v)", c.apiAddr, c.secureAPI.addr, err)
	}
}

// TestHealthOnUnixSocket: the daemon serves its health on a unix socket,
// which a port-forward to its pod does not reach, and `readyline health`
// (the probes' command) asks it there.
func TestHealthOnUnixSocket(t *testing.T) {
	addr := "unix:" + filepath.Join(t.TempDir(), "health.sock")
	d := testDaemon(t, "--health-addr", addr)
	serveUntilDone(t, d.serve(addr, healthHandler(func() error { return nil }), healthHTTPLimits))
	var stdout, stderr bytes.Buffer
	code := 1
	for deadline := time.Now().Add(5 * time.Second); code != 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		stdout.Reset()
		stderr.Reset()
		code = run([]string{"health", "--health-addr", addr}, &stdout, &stderr)
	}
	if code != 0 || stdout.String() != "ok\n" {
		t.Errorf("readyline health over %s: exit %d, stdout %q, stderr %q", addr, code, stdout.String(), stderr.String())
	}
	if c, _ := parseRunConfig(nil, io.Discard); c.healthAddr != "unix:/run/readyline/health.sock" {
		t.Errorf("--health-addr defaults to %q, want the socket beside the API's", c.healthAddr)
	}
}
