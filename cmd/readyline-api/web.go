package main

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/readyline/readyline/exporter"
	"github.com/readyline/readyline/exporter/apiauth"
	"github.com/readyline/readyline/exporter/podstartapi"
)

// podStartWeb is podstarts/NAME/web/PATH: the pages of the daemon on the
// start's node, read there for the request's user, as pods/proxy reads a
// pod's. `kubectl proxy` and `kubectl readyline explain --web` reach them
// through the API server, which authenticates the user; RBAC's get on
// podstarts/web lets them in, and the daemon shows each what they may read
// (its list: the node's starts of the namespaces they may view).
type podStartWeb struct{ starts *podStarts }

var _ rest.Connecter = (*podStartWeb)(nil)

func (*podStartWeb) New() runtime.Object      { return &podstartapi.PodStartWebOptions{} }
func (*podStartWeb) Destroy()                 {}
func (*podStartWeb) ConnectMethods() []string { return []string{http.MethodGet} }

func (*podStartWeb) NewConnectOptions() (runtime.Object, bool, string) {
	return &podstartapi.PodStartWebOptions{}, true, "path"
}

// webPath: a path of the daemon's that the web subresource reaches: its pages
// and its timelines' JSON, which the pages link to. Nothing else of it.
func webPath(p string) bool {
	return p == "/ui" || strings.HasPrefix(p, "/ui/") || p == "/api/v1/timelines" || strings.HasPrefix(p, "/api/v1/timelines/")
}

func (w *podStartWeb) Connect(ctx context.Context, name string, opts runtime.Object, _ rest.Responder) (http.Handler, error) {
	ns, _ := genericapirequest.NamespaceFrom(ctx)
	gr := podstartapi.SchemeGroupVersion.WithResource(podstartapi.Resource).GroupResource()
	ps, ok := w.starts.store.Get(ns, name)
	if !ok {
		return nil, apierrors.NewNotFound(gr, name)
	}
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewUnauthorized("no user in the request")
	}
	reader := &apiauth.User{Name: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups(), Extra: u.GetExtra()}
	path := opts.(*podstartapi.PodStartWebOptions).Path
	if path != "" && path != "/" && !webPath(path) {
		return nil, apierrors.NewNotFound(gr, name+"/web"+path)
	}
	ip, ok := w.starts.ips(ps.Spec.NodeName)
	if !ok {
		return nil, apierrors.NewServiceUnavailable("no daemon answers for node " + ps.Spec.NodeName)
	}
	page := "ui/pods/" + url.PathEscape(ns) + "/" + url.PathEscape(name)
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		h := rw.Header()
		// The pages run no script and load nothing: said again here, for
		// every answer, as the API server's origin serves them.
		h.Set("Content-Security-Policy", exporter.UIContentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		if path == "" || path == "/" {
			// web and web/: the start's page, relative to either.
			to := "web/" + page
			if strings.HasSuffix(r.URL.Path, "/") {
				to = page
			}
			// Relative as written (http.Redirect would root it at this
			// request's path, which a proxy in front may not share).
			h.Set("Location", to)
			rw.WriteHeader(http.StatusFound)
			return
		}
		q := r.URL.Query()
		q.Del("path")
		tctx, cancel := context.WithTimeout(r.Context(), timelineTimeout)
		defer cancel()
		resp, err := w.starts.nodes.do(tctx, ip, path, q, reader, r.Header.Get("Accept"), "")
		if err != nil {
			w.starts.logger.Debug("a node did not give a page", "node", ps.Spec.NodeName, "path", path, "error", err)
			http.Error(rw, "the readyline on node "+ps.Spec.NodeName+" did not answer", http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for _, k := range []string{"Content-Type", "Cache-Control"} {
			if v := resp.Header.Get(k); v != "" {
				h.Set(k, v)
			}
		}
		// The daemon's redirects are relative (ui to ui/): kept so.
		if loc := resp.Header.Get("Location"); loc != "" && !strings.HasPrefix(loc, "/") && !strings.Contains(loc, "://") {
			h.Set("Location", loc)
		}
		rw.WriteHeader(resp.StatusCode)
		io.Copy(rw, io.LimitReader(resp.Body, maxTimelineBytes))
	}), nil
}
