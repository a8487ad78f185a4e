package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/readyline/readyline/exporter/apiclient"
	corev1 "k8s.io/api/core/v1"
)

// web serves the pages of the readyline on the node of pod namespace/name
// on address:localPort, as the kubeconfig's user, and prints the URL of
// the pod's page on stdout, alone on its line, until ctx ends.
//
// A browser cannot send the kubeconfig's credentials, so the plugin does:
// it forwards each request of the browser to the daemon's secure API with
// them, through the port-forward. Only a URL under a random path (printed
// once, to the user) is forwarded: another user of the machine, or a web
// page that points the browser at the port, cannot guess it, and cannot
// read the pod starts as the user.
func (ds *daemonSet) web(ctx context.Context, namespace, name, address string, localPort uint16, stdout, stderr io.Writer) error {
	pod, daemon, err := ds.daemonOf(ctx, namespace, name)
	if err != nil {
		return err
	}
	why := "reaching the API of the readyline on node " + daemon.Spec.NodeName
	return ds.withAPI(ctx, daemon, why, func(ctx context.Context, api *apiclient.Client) error {
		target, err := url.Parse(api.BaseURL)
		if err != nil {
			return err
		}
		what := fmt.Sprintf("the readyline on node %s (pod %s/%s)", daemon.Spec.NodeName, daemon.Namespace, daemon.Name)
		return servePages(ctx, target, ds.transport, what, namespace, name, address, localPort, stdout, stderr, func(ctx context.Context) error {
			return checkTimeline(ctx, api, pod)
		})
	})
}

// web serves the pages of the start of pod namespace/name as web does,
// through the API server: readyline.dev's podstarts/NAME/web, which
// readyline-api reads on the pod's node for the user. The kubeconfig's
// credential goes to the API server alone.
func (a *podStartsAPI) web(ctx context.Context, namespace, name, address string, localPort uint16, stdout, stderr io.Writer) error {
	if a.host == nil {
		return errors.New("no API server to reach readyline.dev's pages through")
	}
	// The start must be there, and the user may read it: else the page
	// would say so, after the URL.
	if _, err := a.rest.Get().AbsPath("/apis", podStartsGroupVersion, "namespaces", namespace, "podstarts", name).DoRaw(ctx); err != nil {
		return apiError(err, "pod "+namespace+"/"+name)
	}
	target := *a.host
	target.Path = strings.TrimSuffix(target.Path, "/") + "/apis/" + podStartsGroupVersion + "/namespaces/" + url.PathEscape(namespace) +
		"/podstarts/" + url.PathEscape(name) + "/web"
	target.RawPath = ""
	return servePages(ctx, &target, a.transport, "readyline.dev (the API server)", namespace, name, address, localPort, stdout, stderr, nil)
}

// servePages serves target's pages on address:localPort under a random
// path, with transport's credentials, printing the URL of pod
// namespace/name's page, until ctx ends. check, when not nil, tells
// whether the page will show the start (a warning when not).
func servePages(ctx context.Context, target *url.URL, transport http.RoundTripper, what, namespace, name, address string, localPort uint16,
	stdout, stderr io.Writer, check func(context.Context) error) error {
	ln, err := net.Listen("tcp", net.JoinHostPort(address, strconv.Itoa(int(localPort))))
	if err != nil {
		return fmt.Errorf("listening for the browser: %w", err)
	}
	secret := "/" + rand.Text()
	srv := &http.Server{
		Handler:           pageProxy(secret, target, transport, what, stderr),
		ReadHeaderTimeout: 10 * time.Second,
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()

	port := ln.Addr().(*net.TCPAddr).Port
	base := "http://" + net.JoinHostPort(urlHost(address), strconv.Itoa(port)) + secret
	fmt.Fprintln(stdout, pageURL(base, namespace, name))
	fmt.Fprintf(stderr, "Serving the pages of %s as you on %s; Ctrl-C ends it\n", what, net.JoinHostPort(address, strconv.Itoa(port)))
	if check != nil {
		if err := check(ctx); err != nil {
			fmt.Fprintf(stderr, "warning: %v\n", err)
		}
	}
	select {
	case <-ctx.Done(): // Ctrl-C, or the forward ended
	case err := <-done:
		return fmt.Errorf("serving the browser: %w", err)
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if srv.Shutdown(sctx) != nil {
		srv.Close()
	}
	return nil
}

// pageProxy forwards the requests under prefix to target (the daemon's
// secure API, or the web subresource of readyline.dev), the prefix
// replaced by target's path, with the credentials transport adds, and
// answers any other with 404. what names target in messages.
func pageProxy(prefix string, target *url.URL, transport http.RoundTripper, what string, stderr io.Writer) http.Handler {
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.URL.Path = strings.TrimSuffix(target.Path, "/") + strings.TrimPrefix(r.In.URL.Path, prefix)
			r.Out.URL.RawPath = ""
			// Whatever a browser may send, the daemon gets the user's
			// credentials only.
			r.Out.Header.Del("Cookie")
			r.Out.Header.Del("Authorization")
		},
		Transport: transport,
		ModifyResponse: func(resp *http.Response) error {
			// The daemon's redirects to its own absolute paths (/ to /ui/).
			if loc := resp.Header.Get("Location"); strings.HasPrefix(loc, "/") && !strings.HasPrefix(loc, "//") {
				resp.Header.Set("Location", prefix+loc)
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			fmt.Fprintf(stderr, "error: %s did not answer %s: %v\n", what, strings.TrimPrefix(r.URL.Path, prefix), err)
			http.Error(w, what+" did not answer: see kubectl readyline's messages", http.StatusBadGateway)
		},
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != prefix && !strings.HasPrefix(r.URL.Path, prefix+"/") {
			http.NotFound(w, r)
			return
		}
		if r.URL.Path == prefix {
			http.Redirect(w, r, prefix+"/ui/", http.StatusFound)
			return
		}
		proxy.ServeHTTP(w, r)
	})
}

// pageURL is the daemon's page of the pod namespace/name under base.
func pageURL(base, namespace, name string) string {
	return base + "/ui/pods/" + url.PathEscape(namespace) + "/" + url.PathEscape(name)
}

// urlHost is the host of a URL that reaches a listener on address: a
// wildcard address is reached on loopback.
func urlHost(address string) string {
	switch address {
	case "", "0.0.0.0":
		return "127.0.0.1"
	case "::":
		return "::1"
	}
	return address
}

// errNoTimeline is what checkTimeline returns when the daemon keeps no
// start of the pod.
var errNoTimeline = errors.New("keeps no start of the pod")

// checkTimeline asks the daemon through api whether it keeps the start of
// pod that the user may read: the page would say it does not, and this
// says it where the user looks.
func checkTimeline(ctx context.Context, api *apiclient.Client, pod *corev1.Pod) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := api.Timeline(ctx, pod.Namespace, pod.Name, string(pod.UID))
	switch {
	case err == nil:
		return nil
	case errors.Is(err, apiclient.ErrNotFound):
		return fmt.Errorf("the readyline %w %s/%s (none in progress, and it keeps the last --keep starts that ended, of those it saw since it started): the page will say so", errNoTimeline, pod.Namespace, pod.Name)
	}
	return fmt.Errorf("the daemon's API, asked for %s/%s: %w", pod.Namespace, pod.Name, err)
}
