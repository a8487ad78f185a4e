package alerts_test

import (
	"net/http/httptest"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/readyline/readyline/collector/event"
	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter"
)

// ruleFile is the part of a Prometheus rule file the checks below read.
type ruleFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Alert       string            `json:"alert"`
			Expr        string            `json:"expr"`
			For         string            `json:"for"`
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		} `json:"rules"`
	} `json:"groups"`
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestPrometheusRuleMatchesRules: the PrometheusRule carries exactly the
// groups of rules.yaml.
func TestPrometheusRuleMatchesRules(t *testing.T) {
	var plain map[string]any
	readYAML(t, "rules.yaml", &plain)
	var pr struct {
		APIVersion string         `json:"apiVersion"`
		Kind       string         `json:"kind"`
		Metadata   map[string]any `json:"metadata"`
		Spec       map[string]any `json:"spec"`
	}
	readYAML(t, "prometheusrule.yaml", &pr)
	if pr.APIVersion != "monitoring.coreos.com/v1" || pr.Kind != "PrometheusRule" || pr.Metadata["name"] != "readyline" {
		t.Errorf("prometheusrule.yaml is %s %s %v, want a monitoring.coreos.com/v1 PrometheusRule named readyline", pr.APIVersion, pr.Kind, pr.Metadata["name"])
	}
	if len(plain) != 1 || len(pr.Spec) != 1 {
		t.Errorf("rules.yaml has keys %v and the PrometheusRule's spec %v, want groups alone", keys(plain), keys(pr.Spec))
	}
	if !reflect.DeepEqual(plain["groups"], pr.Spec["groups"]) {
		t.Error("prometheusrule.yaml's spec.groups differ from rules.yaml's groups; regenerate it: deploy/alerts/test.sh generate")
	}
}

func keys(m map[string]any) []string {
	var k []string
	for key := range m {
		k = append(k, key)
	}
	slices.Sort(k)
	return k
}

// TestRulesMatchTheExporter: every rule reads metrics readyline exports,
// by labels they have; a histogram rule's threshold is one of its bucket
// bounds (a quantile is interpolated inside its bucket: a threshold between
// bounds would not mean "that many pods took longer").
func TestRulesMatchTheExporter(t *testing.T) {
	var rf ruleFile
	readYAML(t, "rules.yaml", &rf)

	m, err := exporter.NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	m.Record(&correlator.Timeline{
		Pod: correlator.PodRef{UID: "u", Namespace: "ns", Name: "p"}, Start: t0, End: t0.Add(7 * time.Second),
		Outcome: correlator.OutcomeReady,
		Conditions: []correlator.ConditionTransition{
			{Type: correlator.CondPodScheduled, Observed: t0},
			{Type: correlator.CondPodReadyToStartContainers, Observed: t0.Add(6 * time.Second)},
		},
	})
	m.AddDropped(event.SourceProcess, event.ReasonRingFull, 1)
	m.ExpectSources(event.SourceProcess)
	m.ExportFailed()
	exported := scrapeNames(t, m)

	metric := regexp.MustCompile(`\b(readyline_[a-z_]+)\b`)
	by := regexp.MustCompile(`(?:sum|min|max) by \(([a-z_, ]+)\)`)
	threshold := regexp.MustCompile(`\)\s*>\s*([0-9.]+)\s*$`)
	comparison := regexp.MustCompile(`\)\s*(?:>|==)\s*[0-9.]+\s*$`)
	alerts := map[string][]string{}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			alerts[g.Name] = append(alerts[g.Name], r.Alert)
			if r.Alert == "" || r.For == "" || r.Labels["severity"] == "" {
				t.Errorf("rule %q: want an alert name, a for duration and a severity label", r.Alert)
			}
			for _, name := range metric.FindAllStringSubmatch(r.Expr, -1) {
				labels, ok := exported[name[1]]
				if !ok {
					t.Errorf("%s reads %s, which readyline does not export", r.Alert, name[1])
					continue
				}
				for _, grp := range by.FindAllStringSubmatch(r.Expr, -1) {
					for _, l := range regexp.MustCompile(`[a-z_]+`).FindAllString(grp[1], -1) {
						// node comes from the scrape target (README.md).
						if l != "node" && !labels[l] {
							t.Errorf("%s groups by %s, which %s does not have", r.Alert, l, name[1])
						}
					}
				}
			}
			if !comparison.MatchString(r.Expr) {
				t.Errorf("%s: no '> threshold' or '== value' at the end of %q", r.Alert, r.Expr)
			}
			if !strings.Contains(r.Expr, "histogram_quantile") {
				continue
			}
			th := threshold.FindStringSubmatch(r.Expr)
			if th == nil {
				t.Errorf("%s: no '> threshold' at the end of %q", r.Alert, r.Expr)
				continue
			}
			v, _ := strconv.ParseFloat(th[1], 64)
			if !slices.Contains(exporter.DurationBuckets, v) {
				t.Errorf("%s: threshold %vs is not a bucket bound %v", r.Alert, v, exporter.DurationBuckets)
			}
		}
	}
	want := map[string][]string{
		"readyline.pod-startup": {"ReadylineSlowPodReadyToStartContainers", "ReadylineNodeSlowPodReadyToStartContainers"},
		"readyline.health":      {"ReadylineEventsDropped", "ReadylineSourceDown", "ReadylineTraceExportFailing"},
	}
	if !reflect.DeepEqual(alerts, want) {
		t.Errorf("alerting rules %v, want %v", alerts, want)
	}
}

// scrapeNames gathers m's metrics as the Prometheus text format names them,
// with their label names.
func scrapeNames(t *testing.T, m *exporter.Metrics) map[string]map[string]bool {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler(nil).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("GET /metrics: %d", rec.Code)
	}
	out := map[string]map[string]bool{}
	line := regexp.MustCompile(`(?m)^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{([^}]*)\})? `)
	label := regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="`)
	for _, l := range line.FindAllStringSubmatch(rec.Body.String(), -1) {
		if out[l[1]] == nil {
			out[l[1]] = map[string]bool{}
		}
		for _, lb := range label.FindAllStringSubmatch(l[2], -1) {
			out[l[1]][lb[1]] = true
		}
	}
	return out
}
