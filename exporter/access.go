package exporter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/readyline/readyline/exporter/apiclient"
)

// PodReader says which pod starts the user of one request to the API may
// read: a start is shown only to whom may get its pod (DESIGN.md, "Who may
// read what"). The daemon's authenticated API (exporter/apiauth) gives
// every request the reader of its user (WithPodReader); the local API,
// which only root on the node reaches, gives EveryPod. The handlers of
// Store ask it before they answer, and a request without one reads
// nothing.
type PodReader interface {
	// MayRead returns nil when the user may read the starts of pod
	// namespace/name. Name "" asks for every pod of namespace, and
	// namespace "" for every namespace. A refusal wraps
	// apiclient.ErrForbidden (a 403); any other error means the answer is
	// not known (the API server did not answer), and the caller refuses
	// too.
	MayRead(namespace, name string) error
	// MayExec returns nil when the user may exec into pod namespace/name
	// (create pods/exec): who may read the argv the kernel saw of its
	// processes (ReaderView), which they could read by exec anyway. Errors
	// as MayRead's.
	MayExec(namespace, name string) error
}

// everyPod is the PodReader of EveryPod.
type everyPod struct{}

func (everyPod) MayRead(string, string) error { return nil }
func (everyPod) MayExec(string, string) error { return nil }

// EveryPod may read every start: what the local API serves to root on the
// node, who can read the node's memory anyway.
var EveryPod PodReader = everyPod{}

type podReaderKey struct{}

// WithPodReader returns ctx with the reader of its request's user.
func WithPodReader(ctx context.Context, r PodReader) context.Context {
	return context.WithValue(ctx, podReaderKey{}, r)
}

// ServeEveryPod serves h to readers who may read every start (EveryPod).
func ServeEveryPod(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(WithPodReader(r.Context(), EveryPod)))
	})
}

// errNoReader is the refusal of a request that came without a PodReader:
// a handler of the store served without apiauth or ServeEveryPod.
var errNoReader = fmt.Errorf("%w: the API was served without an access check (no PodReader in the request's context)", apiclient.ErrForbidden)

// noReader refuses everything.
type noReader struct{}

func (noReader) MayRead(string, string) error { return errNoReader }
func (noReader) MayExec(string, string) error { return errNoReader }

// podReaderOf returns the PodReader of r's user, or one that refuses
// everything.
func podReaderOf(r *http.Request) PodReader {
	if pr, ok := r.Context().Value(podReaderKey{}).(PodReader); ok && pr != nil {
		return pr
	}
	return noReader{}
}

// mayRead checks that the user of r may read the starts of pod
// namespace/name; when not, it answers with why (403, or 503 when the
// API server could not tell) and returns false. A handler calls it
// before it looks the start up, so that a refusal says nothing about
// whether there is one.
func mayRead(w http.ResponseWriter, r *http.Request, logger *slog.Logger, namespace, name string) bool {
	err := podReaderOf(r).MayRead(namespace, name)
	if err == nil {
		return true
	}
	logger.Debug("refused a pod's start", "namespace", namespace, "pod", name, "error", err)
	http.Error(w, err.Error(), accessStatus(err))
	return false
}

// accessStatus is the HTTP status of a PodReader's error.
func accessStatus(err error) int {
	if errors.Is(err, apiclient.ErrForbidden) {
		return http.StatusForbidden
	}
	return http.StatusServiceUnavailable
}

// readable returns the items whose pods (pod says which) pr's user may
// read, in their order (not nil). It asks once for every namespace, then once for
// each namespace of the items, and only where that is refused for each
// pod. When whether the user may read some pod is not known, it returns
// that error: the caller answers with it instead of a list that would
// silently miss starts.
func readable[T any](pr PodReader, items []T, pod func(T) (namespace, name string)) ([]T, error) {
	if _, ok := pr.(noReader); ok {
		return nil, errNoReader // a bug to tell, not an empty list
	}
	if len(items) == 0 {
		return []T{}, nil // nothing to ask about
	}
	if pr.MayRead("", "") == nil {
		return items, nil
	}
	namespaces := map[string]error{}
	out := make([]T, 0, len(items))
	for _, it := range items {
		ns, name := pod(it)
		err, seen := namespaces[ns]
		if !seen {
			err = pr.MayRead(ns, "")
			namespaces[ns] = err
		}
		if err != nil {
			err = pr.MayRead(ns, name)
		}
		switch {
		case err == nil:
			out = append(out, it)
		case !errors.Is(err, apiclient.ErrForbidden):
			return nil, err
		}
	}
	return out, nil
}
