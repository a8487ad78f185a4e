package exporter

import (
	"bytes"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/readyline/readyline/correlator"
)

// Media types a scraper asks /metrics for.
const (
	acceptOpenMetrics = "application/openmetrics-text; version=1.0.0"
	acceptText        = "text/plain; version=0.0.4"
)

// get fetches /metrics from h with the Accept header accept ("" sends
// none) and returns the body and its Content-Type.
func get(t *testing.T, h http.Handler, accept string) (body, contentType string) {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics (Accept %q): %s", accept, resp.Status)
	}
	return string(b), resp.Header.Get("Content-Type")
}

// omExemplar is a bucket sample of an OpenMetrics exposition with its
// exemplar.
type omExemplar struct {
	metric  string            // the sample's name, e.g. readyline_pod_startup_duration_seconds_bucket
	labels  map[string]string // the sample's labels, le included
	trace   map[string]string // the exemplar's labels: trace_id, span_id
	value   float64           // the exemplar's value
	rawLine string
}

var (
	// name{labels} value # {exemplar labels} value timestamp
	omExemplarLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)\{(.*)\} (\S+) # \{(.*)\} (\S+) (\S+)$`)
	omLabel        = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)
)

func omLabels(s string) map[string]string {
	l := map[string]string{}
	for _, m := range omLabel.FindAllStringSubmatch(s, -1) {
		l[m[1]] = m[2]
	}
	return l
}

// omExemplars returns the samples of an OpenMetrics exposition that carry
// an exemplar. prometheus/common's parser does not read exemplars.
func omExemplars(t *testing.T, body string) []omExemplar {
	t.Helper()
	var out []omExemplar
	for line := range strings.Lines(body) {
		line = strings.TrimSuffix(line, "\n")
		if strings.HasPrefix(line, "#") || !strings.Contains(line, " # {") {
			continue
		}
		m := omExemplarLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("an exemplar line not in the OpenMetrics form: %s", line)
		}
		v, err := strconv.ParseFloat(m[5], 64)
		if err != nil {
			t.Fatalf("exemplar value in %s: %v", line, err)
		}
		if _, err := strconv.ParseFloat(m[6], 64); err != nil {
			t.Fatalf("exemplar timestamp in %s: %v", line, err)
		}
		out = append(out, omExemplar{metric: m[1], labels: omLabels(m[2]), trace: omLabels(m[4]), value: v, rawLine: line})
	}
	return out
}

// exemplarHistograms are the histograms whose observations carry their
// pod's trace as exemplar.
var exemplarHistograms = []string{
	"readyline_pod_startup_duration_seconds",
	"readyline_pod_ready_to_start_containers_seconds",
	"readyline_pod_phase_duration_seconds",
	"readyline_container_phase_duration_seconds",
	"readyline_image_pull_duration_seconds",
	"readyline_image_pull_throughput_bytes_per_second",
}

// TestExemplarsNameThePodsTrace: scraped as OpenMetrics, every bucket a
// pod start's observation fell in carries an exemplar with that pod's trace
// id and its pod.startup root span id, exactly those of the trace the
// exporter built for it; and nothing else carries one.
func TestExemplarsNameThePodsTrace(t *testing.T) {
	// Two pods, in two namespaces: lifecycle-demo in default (with image
	// pulls, the one pod that observes readyline_image_pull_duration_seconds,
	// whose series have no namespace), the failed init in demo.
	tls := []*correlator.Timeline{pullsTimeline(), initFailureNever()}
	m, err := NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tls {
		m.Record(tl)
	}

	// The roots of the traces the exporter builds from the same timelines.
	spans, _ := exportToMemory(t, TraceConfig{}, tls...)
	roots := map[string]trace.SpanContext{} // by namespace
	for _, s := range spans {
		if s.Name != SpanPodStartup {
			continue
		}
		for _, kv := range s.Attributes {
			if kv.Key == semconv.K8SNamespaceNameKey {
				roots[kv.Value.AsString()] = s.SpanContext
			}
		}
	}
	if len(roots) != 2 {
		t.Fatalf("roots of the exported traces by namespace: %v, want default and demo", roots)
	}
	want := func(e omExemplar) trace.SpanContext {
		if ns, ok := e.labels[LabelNamespace]; ok {
			return roots[ns]
		}
		return roots["default"] // the pulls
	}

	body, ct := get(t, m.Handler(nil), acceptOpenMetrics)
	if !strings.HasPrefix(ct, "application/openmetrics-text") || !strings.HasSuffix(body, "# EOF\n") {
		t.Fatalf("Accept %q: Content-Type %q, body ending %q: want OpenMetrics", acceptOpenMetrics, ct, body[max(0, len(body)-20):])
	}
	exs := omExemplars(t, body)
	perFamily := map[string]int{}
	byBucket := map[string]omExemplar{} // series labels with le -> exemplar
	for _, e := range exs {
		family, ok := strings.CutSuffix(e.metric, "_bucket")
		if !ok || !slices.Contains(exemplarHistograms, family) {
			t.Errorf("an exemplar on %s, which is not a pod start histogram's bucket: %s", e.metric, e.rawLine)
			continue
		}
		perFamily[family]++
		sc := want(e)
		if e.trace["trace_id"] != sc.TraceID().String() || e.trace["span_id"] != sc.SpanID().String() || len(e.trace) != 2 {
			t.Errorf("exemplar %v, want trace_id %s span_id %s (the pod.startup root of the pod's trace): %s",
				e.trace, sc.TraceID(), sc.SpanID(), e.rawLine)
		}
		byBucket[e.metric+seriesKey(e.labels)] = e
	}
	for _, family := range exemplarHistograms {
		if perFamily[family] == 0 {
			t.Errorf("%s: no exemplar", family)
		}
	}

	// Every bucket the observations fell in has one, with a value inside
	// the bucket; the others have none.
	mfs := scrape(t, m.Handler(nil))
	for _, family := range exemplarHistograms {
		for _, s := range mfs[family].GetMetric() {
			lower, below := 0.0, uint64(0)
			buckets := s.GetHistogram().GetBucket()
			for i, b := range buckets {
				l := labels(s)
				l["le"] = omFloat(b.GetUpperBound())
				e, has := byBucket[family+"_bucket"+seriesKey(l)]
				switch observed := b.GetCumulativeCount() > below; {
				case observed && !has:
					t.Errorf("%s%v: %d observations, no exemplar", family, l, b.GetCumulativeCount()-below)
				case !observed && has:
					t.Errorf("%s%v: no observation, an exemplar %s", family, l, e.rawLine)
				case has && (e.value <= lower && i > 0 || e.value > b.GetUpperBound()):
					t.Errorf("%s%v: exemplar value %v outside (%v, %v]", family, l, e.value, lower, b.GetUpperBound())
				}
				lower, below = b.GetUpperBound(), b.GetCumulativeCount()
			}
		}
	}
}

// omFloat is a bucket bound as the OpenMetrics exposition writes it: 0.25,
// 1.0, +Inf.
func omFloat(f float64) string {
	if math.IsInf(f, 1) {
		return "+Inf"
	}
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return s
}

// seriesKey is labels in a canonical order.
func seriesKey(l map[string]string) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString("," + k + "=" + strconv.Quote(l[k]))
	}
	return "{" + b.String() + "}"
}

// TestMetricsTextFormatUnchanged: a scraper that does not ask for
// OpenMetrics gets the Prometheus text format as before exemplars were
// recorded: no exemplar, parseable, the samples the registry's own text
// encoding gives.
func TestMetricsTextFormatUnchanged(t *testing.T) {
	m, err := NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	m.Record(pullsTimeline())
	m.Record(initFailureNever())

	mfs, err := m.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var enc bytes.Buffer
	e := expfmt.NewEncoder(&enc, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if strings.HasPrefix(mf.GetName(), "readyline_") {
			if err := e.Encode(mf); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, accept := range []string{"", acceptText, "*/*"} {
		body, ct := get(t, m.Handler(nil), accept)
		if !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
			t.Errorf("Accept %q: Content-Type %q, want the text format", accept, ct)
		}
		if strings.Contains(body, "# {") {
			t.Errorf("Accept %q: exemplars in the text format", accept)
		}
		var got strings.Builder
		for line := range strings.Lines(body) {
			if strings.Contains(line, "readyline_") {
				got.WriteString(line)
			}
		}
		if got.String() != enc.String() {
			t.Errorf("Accept %q: the readyline_ lines differ from the registry's text encoding\n got:\n%s\nwant:\n%s", accept, got.String(), enc.String())
		}
	}
	// And it still parses (scrape sends no Accept header).
	if h := series(t, scrape(t, m.Handler(nil)), "readyline_pod_startup_duration_seconds",
		map[string]string{"namespace": "default", "outcome": "ready"}).GetHistogram(); h.GetSampleCount() != 1 {
		t.Errorf("startup histogram count %d, want 1", h.GetSampleCount())
	}
}
