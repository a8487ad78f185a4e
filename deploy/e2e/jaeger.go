//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
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

// ErrTraceNotFound is returned by GetTrace for a trace Jaeger does not have.
var ErrTraceNotFound = errors.New("trace not found")

// TraceIDFromPodUID returns the trace id readyline uses for a pod: the pod
// UID's 16 bytes in hex (the UUID without dashes).
func TraceIDFromPodUID(uid string) string { return strings.ReplaceAll(strings.ToLower(uid), "-", "") }

// GetTrace fetches trace traceID (32 hex digits) from Jaeger's query API at
// queryURL (e.g. JaegerQueryURL).
func GetTrace(ctx context.Context, queryURL, traceID string) (*Trace, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, queryURL+"/api/traces/"+traceID, nil)
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
		return nil, fmt.Errorf("%w: %s", ErrTraceNotFound, traceID)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("jaeger answered %s: %s", resp.Status, body)
	}
	var out struct {
		Data []Trace `json:"data"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, fmt.Errorf("decoding Jaeger's answer: %w", err)
	}
	if len(out.Data) == 0 {
		return nil, fmt.Errorf("%w: %s", ErrTraceNotFound, traceID)
	}
	return &out.Data[0], nil
}

// WaitForTrace polls GetTrace until the trace exists and has at least minSpans
// spans (spans of one trace may arrive in several batches).
func WaitForTrace(ctx context.Context, queryURL, traceID string, minSpans int, timeout time.Duration) (*Trace, error) {
	var trace *Trace
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		trace, lastErr = GetTrace(ctx, queryURL, traceID)
		if errors.Is(lastErr, ErrTraceNotFound) {
			return false, nil
		}
		if lastErr != nil {
			return false, nil // Jaeger restarting: keep trying until the timeout
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

// TestSpan is a span SendSpanOTLP sends.
type TestSpan struct {
	TraceID, SpanID string // hex; NewTraceID and NewSpanID make random ones
	Service         string
	Name            string
	Start, End      time.Time
	Attributes      map[string]string
}

// NewTraceID returns a random 16-byte trace id in hex.
func NewTraceID() string { return randomHex(16) }

// NewSpanID returns a random 8-byte span id in hex.
func NewSpanID() string { return randomHex(8) }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// SendSpanOTLP sends span to an OTLP/HTTP endpoint (e.g. OTLPHTTPEndpoint)
// using the protocol's JSON encoding.
func SendSpanOTLP(ctx context.Context, endpoint string, span TestSpan) error {
	type anyValue struct {
		StringValue string `json:"stringValue"`
	}
	type keyValue struct {
		Key   string   `json:"key"`
		Value anyValue `json:"value"`
	}
	attrs := make([]keyValue, 0, len(span.Attributes))
	for k, v := range span.Attributes {
		attrs = append(attrs, keyValue{k, anyValue{v}})
	}
	payload := map[string]any{
		"resourceSpans": []any{map[string]any{
			"resource": map[string]any{"attributes": []keyValue{{"service.name", anyValue{span.Service}}}},
			"scopeSpans": []any{map[string]any{
				"scope": map[string]any{"name": "readyline-e2e"},
				"spans": []any{map[string]any{
					"traceId":           span.TraceID,
					"spanId":            span.SpanID,
					"name":              span.Name,
					"kind":              1, // SPAN_KIND_INTERNAL
					"startTimeUnixNano": strconv.FormatInt(span.Start.UnixNano(), 10),
					"endTimeUnixNano":   strconv.FormatInt(span.End.UnixNano(), 10),
					"attributes":        attrs,
				}},
			}},
		}},
	}
	body, err := json.Marshal(payload)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint+"/v1/traces", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("sending span over OTLP/HTTP: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("OTLP/HTTP endpoint answered %s: %s", resp.Status, b)
	}
	return nil
}

// SearchQuery asks for the traces of service with spans named op that
// started between from and to (a second of margin each side).
func SearchQuery(service, op string, from, to time.Time) url.Values {
	return url.Values{"service": {service}, "operation": {op}, "limit": {"1000"},
		"start": {fmt.Sprint(from.Add(-time.Second).UnixMicro())}, "end": {fmt.Sprint(to.Add(time.Second).UnixMicro())}}
}

// SearchTraces runs a trace search of Jaeger's query API
// (/api/traces?service=...&operation=...&start=...&end=..., times in µs).
func SearchTraces(ctx context.Context, queryURL string, q url.Values) ([]Trace, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, queryURL+"/api/traces?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("searching Jaeger: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("reading Jaeger's answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("jaeger answered %s: %s", resp.Status, body)
	}
	var out struct {
		Data []Trace `json:"data"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, fmt.Errorf("decoding Jaeger's answer: %w", err)
	}
	return out.Data, nil
}
