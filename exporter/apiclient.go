package exporter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter/termtext"
)

// ErrUnauthorized is wrapped by an APIError of a daemon that did not
// accept the request's credential, or got none (401).
var ErrUnauthorized = errors.New("unauthorized")

// APIError is a daemon's answer other than 200 OK: its status and the
// first line of what it said, terminal-safe (termtext). errors.Is sees ErrNotFound in a 404,
// ErrForbidden in a 403 and ErrUnauthorized in a 401.
type APIError struct {
	Status  int
	Message string
}

func (e *APIError) Error() string {
	msg := http.StatusText(e.Status)
	if e.Message != "" {
		msg = e.Message
	}
	return fmt.Sprintf("%d %s", e.Status, msg)
}

// Is makes the sentinel of its status match.
func (e *APIError) Is(target error) bool {
	switch e.Status {
	case http.StatusNotFound:
		return target == ErrNotFound
	case http.StatusForbidden:
		return target == ErrForbidden
	case http.StatusUnauthorized:
		return target == ErrUnauthorized
	}
	return false
}

// APIClient reads the API of a daemon (Store.Handler): at BaseURL (e.g.
// "http://127.0.0.1:9465", or "https://127.0.0.1:PORT" through a
// port-forward) with HTTP, http.DefaultClient when nil, which carries the
// credentials the daemon asks for. It is safe for concurrent use.
type APIClient struct {
	BaseURL string
	HTTP    *http.Client
}

// Timeline returns the latest start of pod namespace/name; when uid is not
// empty, of the pod of that name with this UID (an earlier pod's start
// under the same name is not it). It returns an error wrapping
// ErrNotFound when the daemon keeps none.
func (c *APIClient) Timeline(ctx context.Context, namespace, name, uid string) (*correlator.Timeline, error) {
	return c.timeline(ctx, namespace, name, url.Values{"uid": {uid}})
}

// KeptTimeline is Timeline of the timeline the daemon exported and keeps
// (a start reported at its deadline, or ended), not of the start in
// progress.
func (c *APIClient) KeptTimeline(ctx context.Context, namespace, name, uid string) (*correlator.Timeline, error) {
	return c.timeline(ctx, namespace, name, url.Values{"uid": {uid}, "kept": {"1"}})
}

func (c *APIClient) timeline(ctx context.Context, namespace, name string, q url.Values) (*correlator.Timeline, error) {
	u := c.url("/api/v1/timelines/" + url.PathEscape(namespace) + "/" + url.PathEscape(name))
	for k, v := range q {
		if len(v) == 0 || v[0] == "" {
			q.Del(k)
		}
	}
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	var tl correlator.Timeline
	if err := c.get(ctx, u, &tl); err != nil {
		return nil, fmt.Errorf("fetching timeline of %s/%s: %w", namespace, name, err)
	}
	return &tl, nil
}

// Timelines returns the summaries of the pod starts the daemon keeps of
// namespace ("": of all), newest first.
func (c *APIClient) Timelines(ctx context.Context, namespace string) ([]TimelineSummary, error) {
	u := c.url("/api/v1/timelines")
	if namespace != "" {
		u += "?" + url.Values{"namespace": {namespace}}.Encode()
	}
	var l timelineList
	if err := c.get(ctx, u, &l); err != nil {
		return nil, fmt.Errorf("listing timelines: %w", err)
	}
	return l.Timelines, nil
}

func (c *APIClient) url(path string) string {
	return strings.TrimRight(c.BaseURL, "/") + path
}

// maxErrorBytes bounds the message read from an answer other than 200.
const maxErrorBytes = 512

func (c *APIClient) get(ctx context.Context, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	client := c.HTTP
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body := io.LimitReader(resp.Body, maxTimelineBytes)
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(body, maxErrorBytes))
		line, _, _ := strings.Cut(strings.TrimSpace(string(msg)), "\n")
		// Printed in a terminal.
		return &APIError{Status: resp.StatusCode, Message: termtext.Escape(line)}
	}
	if err := json.NewDecoder(body).Decode(v); err != nil {
		return fmt.Errorf("decoding response: %w", err)
	}
	return nil
}
