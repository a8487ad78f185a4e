// Package apiclient reads the timeline API a readyline daemon serves
// (exporter.Store.Handler), for 'readyline explain', the kubectl plugin
// and the end-to-end tests, and holds what both sides of that API share:
// the list's wire types and the sentinel errors its statuses stand for.
// It imports neither the exporter nor OpenTelemetry, so that the daemon's
// exporters (the OTel SDK) are no dependency of a client. Client is safe
// for concurrent use.
package apiclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter/termtext"
)

// ErrNotFound says the daemon has no timeline for the pod: the client's
// errors wrap it for a 404, and the daemon's store returns it.
var ErrNotFound = errors.New("timeline not found")

// ErrForbidden says the user may not read a pod's starts: the client's
// errors wrap it for a 403, and a PodReader's refusal (exporter.PodReader)
// wraps it.
var ErrForbidden = errors.New("forbidden")

// ErrUnauthorized is wrapped by an Error of a daemon that did not accept
// the request's credential, or got none (401).
var ErrUnauthorized = errors.New("unauthorized")

// TimelineSummary is one line of the timeline list.
type TimelineSummary struct {
	Namespace string             `json:"namespace"`
	Name      string             `json:"name"`
	UID       string             `json:"uid"`
	Outcome   correlator.Outcome `json:"outcome"`
	Reason    string             `json:"reason,omitempty"`
	// Waiting is what the start waits on (correlator.Timeline.Waiting):
	// for a start in progress only when the list was asked with
	// ?waiting=1, which derives it.
	Waiting string    `json:"waiting,omitempty"`
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
	// DurationSeconds is End - Start.
	DurationSeconds float64 `json:"duration_seconds"`
}

// EventsShareParam is the query parameter of GET /api/v1/timelines with
// which readyline-api, on the node API, gives a daemon its share of the
// cluster's Events reads (reads a second): the budget divided among the
// nodes with starts in progress.
const EventsShareParam = "eventsShare"

// ServerTimingHeader is the header in which the daemon's answer about a
// pod's start says how long the daemon took to find it, by its own clock:
// "find;dur=MS" (W3C Server Timing), the wait for its loop's answer, which
// it bounds at 1.5 s, included. A client's round trip is that and the way
// there and back.
const ServerTimingHeader = "Server-Timing"

// ServerTiming is the value of ServerTimingHeader for an answer found in
// took.
func ServerTiming(took time.Duration) string {
	return "find;dur=" + strconv.FormatFloat(float64(took)/float64(time.Millisecond), 'f', 3, 64)
}

// FindTook is how long the daemon took to find its answer, as its
// ServerTimingHeader says; false when h has none.
func FindTook(h http.Header) (time.Duration, bool) {
	ms, ok := strings.CutPrefix(h.Get(ServerTimingHeader), "find;dur=")
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(ms, 64)
	if err != nil || f < 0 {
		return 0, false
	}
	return time.Duration(f * float64(time.Millisecond)), true
}

// TimelineList is the body of GET /api/v1/timelines.
type TimelineList struct {
	Timelines []TimelineSummary `json:"timelines"`
}

// Error is a daemon's answer other than 200 OK: its status and the first
// line of what it said, terminal-safe (termtext). errors.Is sees
// ErrNotFound in a 404, ErrForbidden in a 403 and ErrUnauthorized in a
// 401.
type Error struct {
	Status  int
	Message string
}

func (e *Error) Error() string {
	msg := http.StatusText(e.Status)
	if e.Message != "" {
		msg = e.Message
	}
	return fmt.Sprintf("%d %s", e.Status, msg)
}

// Is makes the sentinel of its status match.
func (e *Error) Is(target error) bool {
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

// Client reads the API of a daemon (exporter.Store.Handler): at BaseURL
// (e.g. "http://127.0.0.1:9465", or "https://127.0.0.1:PORT" through a
// port-forward) with HTTP, http.DefaultClient when nil, which carries the
// credentials the daemon asks for. It is safe for concurrent use.
type Client struct {
	BaseURL string
	HTTP    *http.Client
}

// FetchTimeline asks the daemon at baseURL (e.g. "http://127.0.0.1:9464")
// for the latest start of pod namespace/name. It returns an error wrapping
// ErrNotFound when the daemon has none.
func FetchTimeline(ctx context.Context, baseURL, namespace, name string) (*correlator.Timeline, error) {
	return FetchTimelineUID(ctx, baseURL, namespace, name, "")
}

// FetchTimelineUID is FetchTimeline for the pod of that name with uid, when
// uid is not empty: an earlier pod's start under the same name is not it.
func FetchTimelineUID(ctx context.Context, baseURL, namespace, name, uid string) (*correlator.Timeline, error) {
	return (&Client{BaseURL: baseURL}).Timeline(ctx, namespace, name, uid)
}

// ListTimelines asks the daemon at baseURL for the summaries of the pod
// starts it keeps, newest first.
func ListTimelines(ctx context.Context, baseURL string) ([]TimelineSummary, error) {
	return (&Client{BaseURL: baseURL}).Timelines(ctx, "")
}

// Timeline returns the latest start of pod namespace/name; when uid is not
// empty, of the pod of that name with this UID (an earlier pod's start
// under the same name is not it). It returns an error wrapping
// ErrNotFound when the daemon keeps none.
func (c *Client) Timeline(ctx context.Context, namespace, name, uid string) (*correlator.Timeline, error) {
	return c.timeline(ctx, namespace, name, url.Values{"uid": {uid}})
}

// KeptTimeline is Timeline of the timeline the daemon exported and keeps
// (a start reported at its deadline, or ended), not of the start in
// progress.
func (c *Client) KeptTimeline(ctx context.Context, namespace, name, uid string) (*correlator.Timeline, error) {
	return c.timeline(ctx, namespace, name, url.Values{"uid": {uid}, "kept": {"1"}})
}

func (c *Client) timeline(ctx context.Context, namespace, name string, q url.Values) (*correlator.Timeline, error) {
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
func (c *Client) Timelines(ctx context.Context, namespace string) ([]TimelineSummary, error) {
	u := c.url("/api/v1/timelines")
	if namespace != "" {
		u += "?" + url.Values{"namespace": {namespace}}.Encode()
	}
	var l TimelineList
	if err := c.get(ctx, u, &l); err != nil {
		return nil, fmt.Errorf("listing timelines: %w", err)
	}
	return l.Timelines, nil
}

func (c *Client) url(path string) string {
	return strings.TrimRight(c.BaseURL, "/") + path
}

// maxTimelineBytes bounds what the client reads of an answer.
const maxTimelineBytes = 16 << 20

// maxErrorBytes bounds the message read from an answer other than 200.
const maxErrorBytes = 512

func (c *Client) get(ctx context.Context, u string, v any) error {
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
		return &Error{Status: resp.StatusCode, Message: termtext.Escape(line)}
	}
	if err := json.NewDecoder(body).Decode(v); err != nil {
		return fmt.Errorf("decoding response: %w", err)
	}
	return nil
}
