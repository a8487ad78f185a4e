//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
)

// AcceptOpenMetrics is the Accept header of a scraper that wants
// exemplars: the OpenMetrics text format (Prometheus asks for it first).
const AcceptOpenMetrics = "application/openmetrics-text; version=1.0.0"

// Exemplar is a sample of an OpenMetrics exposition with its exemplar,
// as readyline writes them on its histograms' buckets.
type Exemplar struct {
	// Metric and Labels are the sample's: <histogram>_bucket and its
	// labels, le included.
	Metric string
	Labels map[string]string
	// TraceID and SpanID are the exemplar's trace_id and span_id (hex);
	// Value is the observation.
	TraceID, SpanID string
	Value           float64
	Line            string
}

var (
	// name{labels} value # {exemplar labels} value timestamp
	exemplarLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)\{(.*)\} (\S+) # \{(.*)\} (\S+) (\S+)$`)
	labelPair    = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)
)

// ScrapeExemplars fetches metricsURL/metrics as OpenMetrics and returns
// its exemplars (prometheus/common's parser reads none).
func ScrapeExemplars(ctx context.Context, metricsURL string) ([]Exemplar, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, metricsURL+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", AcceptOpenMetrics)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scraping readyline: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("reading readyline's metrics: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("readyline's /metrics answered %s: %s", resp.Status, body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/openmetrics-text") {
		return nil, fmt.Errorf("readyline's /metrics answered %q to Accept %q", ct, AcceptOpenMetrics)
	}
	var out []Exemplar
	for line := range strings.Lines(string(body)) {
		line = strings.TrimSuffix(line, "\n")
		if strings.HasPrefix(line, "#") || !strings.Contains(line, " # {") {
			continue
		}
		m := exemplarLine.FindStringSubmatch(line)
		if m == nil {
			return nil, fmt.Errorf("an exemplar not in the OpenMetrics form: %s", line)
		}
		v, err := strconv.ParseFloat(m[5], 64)
		if err != nil {
			return nil, fmt.Errorf("exemplar value in %s: %w", line, err)
		}
		ex := labelPairs(m[4])
		out = append(out, Exemplar{Metric: m[1], Labels: labelPairs(m[2]),
			TraceID: ex["trace_id"], SpanID: ex["span_id"], Value: v, Line: line})
	}
	return out, nil
}

func labelPairs(s string) map[string]string {
	l := map[string]string{}
	for _, m := range labelPair.FindAllStringSubmatch(s, -1) {
		l[m[1]] = m[2]
	}
	return l
}

// SameID reports whether two hex trace or span ids are the same id:
// Jaeger's v1 API may write them without their leading zeros (its model
// formats a trace id's high half, and in older releases a span id, with
// %x).
func SameID(a, b string) bool {
	return strings.TrimLeft(strings.ToLower(a), "0") == strings.TrimLeft(strings.ToLower(b), "0")
}
