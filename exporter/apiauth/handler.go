package apiauth

import (
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/readyline/readyline/exporter"
)

// Handler serves h (the store's API and pages) to the API server's users:
// a request without a credential authn accepts is refused (401), one that
// asks to impersonate (kubectl's --as) too (403), and every other reaches
// h with its user's exporter.PodReader, which asks authz. Its
// Authorization header does not reach h. logger (may be nil) gets a Debug
// line per refusal.
func Handler(authn *Authenticator, authz *Authorizer, h http.Handler, logger *slog.Logger) http.Handler {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if impersonates(r) {
			logger.Debug("refused a request that impersonates", "path", r.URL.Path)
			http.Error(w, "readyline's API answers you as yourself and does not impersonate: ask without --as, --as-group and --as-uid", http.StatusForbidden)
			return
		}
		u, err := authn.Authenticate(r)
		if err != nil {
			logger.Debug("refused a request", "path", r.URL.Path, "error", err)
			if !errors.Is(err, ErrUnauthenticated) {
				http.Error(w, err.Error(), http.StatusServiceUnavailable)
				return
			}
			// Bearer, not Basic: a browser asks for no password.
			w.Header().Set("WWW-Authenticate", `Bearer realm="readyline"`)
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		r.Header.Del("Authorization")
		ctx := exporter.WithPodReader(r.Context(), authz.Reader(r.Context(), u))
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}

// impersonates says whether r asks to act as another user (the API
// server's Impersonate-* headers).
func impersonates(r *http.Request) bool {
	for k := range r.Header {
		if strings.HasPrefix(http.CanonicalHeaderKey(k), "Impersonate-") {
			return true
		}
	}
	return false
}
