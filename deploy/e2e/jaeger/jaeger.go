// Package jaeger is the tests' one client of Jaeger's query API (the HTTP
// API its UI reads: /api/traces, /api/services), and the traces it
// answers with. deploy/e2e reads the local node's Jaeger with it, the kind
// tests the cluster's through the API server's service proxy, and the
// exporter's integration tests the Jaeger they start; it has no build tag
// so that those unit tests can import it.
package jaeger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Trace is a trace as Jaeger's query API (/api/traces/{id}) returns it.
type Trace struct {
	TraceID   string             `json:"traceID"`
	Spans     []Span             `json:"spans"`
	Processes map[string]Process `json:"processes"`
}

// Span is one span of a Trace. StartTime and Duration are in microseconds.
type Span struct {
	TraceID       string         `json:"traceID"`
	SpanID        string         `json:"spanID"`
	OperationName string         `json:"operationName"`
	References    []SpanRef      `json:"references"`
	StartTime     int64          `json:"startTime"`
	Duration      int64          `json:"duration"`
	Tags          []KeyValue     `json:"tags"`
	ProcessID     string         `json:"processID"`
	Logs          []SpanLogEntry `json:"logs"`
}

// SpanRef links a span to its parent (CHILD_OF) or another span.
type SpanRef struct {
	RefType string `json:"refType"`
	TraceID string `json:"traceID"`
	SpanID  string `json:"spanID"`
}

// SpanLogEntry is a span event.
type SpanLogEntry struct {
	Timestamp int64      `json:"timestamp"`
	Fields    []KeyValue `json:"fields"`
}

// KeyValue is a span attribute (tag) or a resource attribute.
type KeyValue struct {
	Key   string `json:"key"`
	Type  string `json:"type"`
	Value any    `json:"value"`
}

// Process is the resource (service) of spans.
type Process struct {
	ServiceName string     `json:"serviceName"`
	Tags        []KeyValue `json:"tags"`
}

// Tag returns the value of the span's attribute key.
func (s Span) Tag(key string) (any, bool) {
	for _, kv := range s.Tags {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return nil, false
}

// ServiceName returns the service name of span s in trace t.
func (t *Trace) ServiceName(s Span) string { return t.Processes[s.ProcessID].ServiceName }

// SpanByName returns the first span named op.
func (t *Trace) SpanByName(op string) (Span, bool) {
	for _, s := range t.Spans {
		if s.OperationName == op {
			return s, true
		}
	}
	return Span{}, false
}

// ErrTraceNotFound is returned for a trace Jaeger does not have.
var ErrTraceNotFound = errors.New("trace not found")

// errNotFound is a 404 of the query API.
var errNotFound = errors.New("jaeger answered 404 Not Found")

// Client reads one Jaeger's query API. It is safe for concurrent use.
type Client struct {
	// get returns the body of GET path (the query API's, with its query
	// string), errNotFound for a 404.
	get func(ctx context.Context, path string) ([]byte, error)
}

// NewClient returns a Client of the query API at queryURL, over HTTP
// ("http://127.0.0.1:16686").
func NewClient(queryURL string) *Client {
	return &Client{get: func(ctx context.Context, path string) ([]byte, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, queryURL+path, nil)
		if err != nil {
			return nil, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, fmt.Errorf("querying Jaeger: %w", err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, fmt.Errorf("reading Jaeger's answer: %w", err)
		}
		if resp.StatusCode == http.StatusNotFound {
			return nil, errNotFound
		}
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("jaeger answered %s: %s", resp.Status, body)
		}
		return body, nil
	}}
}

// NewClientVia returns a Client that GETs the query API's paths with get,
// which returns the body of an answer 200 and an error for any other: the
// kind tests' GET through the API server's service proxy, for one.
func NewClientVia(get func(ctx context.Context, path string) ([]byte, error)) *Client {
	return &Client{get: get}
}

// Up returns nil when the query API answers (its list of services).
func (c *Client) Up(ctx context.Context) error {
	_, err := c.get(ctx, "/api/services")
	return err
}

// Trace returns trace traceID (32 hex digits), as the UI shows it (its
// spans adjusted: duplicate span ids made unique, clock skew corrected),
// or ErrTraceNotFound.
func (c *Client) Trace(ctx context.Context, traceID string) (*Trace, error) {
	return c.trace(ctx, traceID, "")
}

// RawTrace is Trace as Jaeger stores it, no adjuster run: a span sent
// twice is there twice.
func (c *Client) RawTrace(ctx context.Context, traceID string) (*Trace, error) {
	return c.trace(ctx, traceID, "?raw=true")
}

func (c *Client) trace(ctx context.Context, traceID, query string) (*Trace, error) {
	traces, err := c.traces(ctx, "/api/traces/"+traceID+query)
	if errors.Is(err, errNotFound) || (err == nil && len(traces) == 0) {
		return nil, fmt.Errorf("%w: %s", ErrTraceNotFound, traceID)
	}
	if err != nil {
		return nil, err
	}
	return &traces[0], nil
}

// Search runs a trace search (/api/traces?service=...&operation=...&start=...&end=...,
// times in µs; SearchQuery makes one).
func (c *Client) Search(ctx context.Context, q url.Values) ([]Trace, error) {
	return c.traces(ctx, "/api/traces?"+q.Encode())
}

func (c *Client) traces(ctx context.Context, path string) ([]Trace, error) {
	body, err := c.get(ctx, path)
	if err != nil {
		return nil, err
	}
	var out struct {
		Data []Trace `json:"data"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, fmt.Errorf("decoding Jaeger's answer: %w", err)
	}
	return out.Data, nil
}

// SearchQuery asks for the traces of service with spans named op that
// started between from and to (a second of margin each side).
func SearchQuery(service, op string, from, to time.Time) url.Values {
	return url.Values{"service": {service}, "operation": {op}, "limit": {"1000"},
		"start": {fmt.Sprint(from.Add(-time.Second).UnixMicro())}, "end": {fmt.Sprint(to.Add(time.Second).UnixMicro())}}
}

// WaitForTrace polls Trace until the trace exists and has at least
// minSpans spans (spans of one trace may arrive in several batches).
func (c *Client) WaitForTrace(ctx context.Context, traceID string, minSpans int, timeout time.Duration) (*Trace, error) {
	var trace *Trace
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		trace, lastErr = c.Trace(ctx, traceID)
		if lastErr != nil {
			return false, nil // not there yet, or Jaeger restarting: keep trying until the timeout
		}
		return len(trace.Spans) >= minSpans, nil
	})
	if err != nil {
		if trace != nil {
			return trace, fmt.Errorf("trace %s has %d spans, want %d: %w", traceID, len(trace.Spans), minSpans, err)
		}
		return nil, fmt.Errorf("trace %s: %w (last error: %v)", traceID, err, lastErr)
	}
	return trace, nil
}
