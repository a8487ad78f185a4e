package apiauth

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/transport"

	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter"
	"github.com/readyline/readyline/exporter/apiclient"
)

// startOf is a kept start of pod namespace/name.
func startOf(namespace, name string) *correlator.Timeline {
	return &correlator.Timeline{
		Pod:   correlator.PodRef{Namespace: namespace, Name: name, UID: "uid-" + name},
		Start: t0, End: t0.Add(time.Second), Outcome: correlator.OutcomeReady,
	}
}

// TestHandlerOverTLS serves a store's API as the daemon serves it (Serving,
// Handler) and reads it as kubectl readyline does, through TLS with a
// bearer token or a client certificate: each user reads the starts of the
// pods they may get only; no credential is 401, impersonation 403 and an
// API server that cannot be asked 503, never the data.
func TestHandlerOverTLS(t *testing.T) {
	f := newFakeCluster(t)
	f.reviews(grants{"team": {"team"}})
	c := &clock{now: t0}
	store := exporter.NewStore(exporter.StoreLimits{})
	for _, p := range [][2]string{{"team", "web"}, {"other", "secret"}} {
		store.Add(startOf(p[0], p[1]))
	}
	var sawAuthorization bool
	api := store.Handler(nil)
	probe := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sawAuthorization = sawAuthorization || r.Header.Get("Authorization") != ""
		api.ServeHTTP(w, r)
	})
	srv := httptest.NewUnstartedServer(Handler(f.authenticator(c), f.authorizer(c, 0), probe, nil))
	cfg, err := Serving("", "", []string{"readyline-abcde"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	srv.TLS = cfg
	srv.StartTLS()
	defer srv.Close()

	// The daemon's certificate is its own: this test, like the plugin,
	// trusts the route to it, not a CA.
	client := func(rt func(*http.Transport) http.RoundTripper) *apiclient.Client {
		tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
		return &apiclient.Client{BaseURL: srv.URL, HTTP: &http.Client{Transport: rt(tr)}}
	}
	withToken := func(token string) *apiclient.Client {
		return client(func(tr *http.Transport) http.RoundTripper { return transport.NewBearerAuthRoundTripper(token, tr) })
	}
	withCert := func(cert tls.Certificate) *apiclient.Client {
		return client(func(tr *http.Transport) http.RoundTripper {
			tr.TLSClientConfig.Certificates = []tls.Certificate{cert}
			return tr
		})
	}
	ctx := context.Background()

	for who, cl := range map[string]*apiclient.Client{
		"alice's token": withToken("alice-token"),
		"bob's cert":    withCert(f.ca.issue(t, "bob", []string{"team"}, x509.ExtKeyUsageClientAuth)),
	} {
		list, err := cl.Timelines(ctx, "")
		if err != nil || len(list) != 1 || list[0].Name != "web" {
			t.Errorf("%s: list %+v (%v), want team/web only", who, list, err)
		}
		if _, err := cl.Timeline(ctx, "team", "web", ""); err != nil {
			t.Errorf("%s: team/web: %v", who, err)
		}
		if _, err := cl.Timeline(ctx, "other", "secret", ""); !errors.Is(err, apiclient.ErrForbidden) {
			t.Errorf("%s: other/secret: %v, want 403", who, err)
		}
	}
	if sawAuthorization {
		t.Error("the Authorization header reached the store's handler")
	}

	stranger := withCert(newAuthority(t, "elsewhere").issue(t, "bob", []string{"team"}, x509.ExtKeyUsageClientAuth))
	for who, cl := range map[string]*apiclient.Client{
		"no credential":     client(func(tr *http.Transport) http.RoundTripper { return tr }),
		"a bad token":       withToken("stolen"),
		"another CA's cert": stranger,
	} {
		if _, err := cl.Timelines(ctx, ""); !errors.Is(err, apiclient.ErrUnauthorized) || strings.Contains(err.Error(), "web") {
			t.Errorf("%s: %v, want 401", who, err)
		}
	}

	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/v1/timelines", nil)
	req.Header.Set("Impersonate-User", "admin")
	resp, err := withToken("alice-token").HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "does not impersonate") {
		t.Errorf("impersonating: %d %s, want 403", resp.StatusCode, body)
	}

	f.setDown(true)
	var apiErr *apiclient.Error
	if _, err := withToken("new-token").Timelines(ctx, ""); !errors.As(err, &apiErr) || apiErr.Status != http.StatusServiceUnavailable {
		t.Errorf("with the API server down: %v, want 503", err)
	}
}
