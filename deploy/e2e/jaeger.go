//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Jaeger's query API is read with package jaeger's Client (Env.Jaeger for
// the node's); what is here sends spans to it and names readyline's traces.

// TraceIDFromPodUID returns the trace id readyline uses for a pod: the pod
// UID's 16 bytes in hex (the UUID without dashes).
func TraceIDFromPodUID(uid string) string { return strings.ReplaceAll(strings.ToLower(uid), "-", "") }

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
