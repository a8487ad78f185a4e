package exporter

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter/waterfall"
)

// lateReady is what the correlator makes of a pod seen at its creation
// whose status the watch then delivered 60 s late (an outage): Ready 1 s
// after creation, the kubelet's conditions at their lastTransitionTime,
// Coarse, with when they came; the containers' status flips as observed.
func lateReady() *correlator.Timeline {
	delivered := at(60600)
	return &correlator.Timeline{
		Pod:     correlator.PodRef{UID: "3a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d", Namespace: "default", Name: "late-ready"},
		Start:   t0,
		End:     at(1000),
		Outcome: correlator.OutcomeReady,
		Marks:   []correlator.Mark{correlator.MarkAPILag},
		Missing: []string{"when the API showed PodReadyToStartContainers, Ready: the watch delivered them up to 59.6s after their lastTransitionTime (1 s), which stands in"},
		Phases: []correlator.Phase{
			{Name: correlator.PhaseWaitSandbox, Start: at(50), End: at(200), Source: "api"},
			{Name: correlator.PhaseSandbox, Start: at(200), End: at(600), Source: "kernel"},
			{Name: correlator.PhaseContainers, Start: at(800), End: at(880), Source: "kernel"},
		},
		Sandbox: &correlator.Sandbox{ID: "5b00", Created: at(500), PauseStart: at(550), Ready: at(600),
			Call: &correlator.CRICall{Method: "runtime.v1.RuntimeService/RunPodSandbox", Start: at(200), End: at(600)}},
		Containers: []correlator.Container{{Name: "app", Kind: correlator.KindMain, Attempts: []correlator.ContainerAttempt{{
			ContainerID: "3c00", Created: at(800), Started: at(900),
			Process:         &correlator.Process{PID: 400, Exec: at(880)},
			StartedObserved: delivered, ReadyObserved: delivered,
		}}}},
		Conditions: []correlator.ConditionTransition{
			{Type: correlator.CondPodScheduled, Observed: at(50), LastTransitionTime: t0},
			{Type: correlator.CondPodReadyToStartContainers, Observed: at(600), LastTransitionTime: t0, Cause: at(600),
				CauseEvent: "RunPodSandbox returned", Coarse: true, Delivered: delivered},
			{Type: correlator.CondReady, Observed: at(1000), LastTransitionTime: at(1000), Cause: at(880),
				CauseEvent: "app ready (entrypoint exec)", Coarse: true, Delivered: delivered},
		},
	}
}

// uncorrected is tl as it was before the correlator knew of late
// deliveries: each condition at its delivery.
func uncorrected(tl *correlator.Timeline) *correlator.Timeline {
	c := *tl
	c.Marks = nil
	c.Conditions = slices.Clone(tl.Conditions)
	for i := range c.Conditions {
		if d := c.Conditions[i].Delivered; !d.IsZero() {
			c.Conditions[i].Observed, c.Conditions[i].Coarse, c.Conditions[i].Delivered = d, false, time.Time{}
		}
	}
	c.End = tl.Conditions[len(tl.Conditions)-1].Observed
	return &c
}

// TestAPILagNoAlert: a start whose status came 60 s late breaks no rule:
// the measures end at the conditions' lastTransitionTime. The same start
// measured at the late deliveries would.
func TestAPILagNoAlert(t *testing.T) {
	rules := []AlertRule{{"PodReadyToStartContainers", 5 * time.Second}, {"Ready", 30 * time.Second}, {"pod.sandbox", 5 * time.Second}}
	if a := CheckAlerts(lateReady(), rules); len(a) != 0 {
		t.Errorf("alerts %+v for a start of 1 s delivered late", a)
	}
	if a := CheckAlerts(uncorrected(lateReady()), rules); len(a) != 2 {
		t.Errorf("uncorrected: %d alerts, want the two the late delivery would fire", len(a))
	}
	for _, c := range lateReady().Conditions {
		if c.Lag() != 0 {
			t.Errorf("%s has a lag of %v", c.Type, c.Lag())
		}
	}
}

// TestAPILagMetrics: the histograms take the corrected conditions and skip
// the container measures that end at a late observation.
func TestAPILagMetrics(t *testing.T) {
	m, err := NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	m.Record(lateReady())
	mfs := scrape(t, m.Handler(nil))
	if h := series(t, mfs, "readyline_pod_ready_to_start_containers_seconds", map[string]string{"namespace": "default"}).GetHistogram(); h.GetSampleCount() != 1 || !near(h.GetSampleSum(), 0.55) {
		t.Errorf("ready_to_start count %d sum %v, want one sample of 0.55 s", h.GetSampleCount(), h.GetSampleSum())
	}
	if h := series(t, mfs, "readyline_pod_startup_duration_seconds", map[string]string{"namespace": "default", "outcome": "ready"}).GetHistogram(); h.GetSampleCount() != 1 || !near(h.GetSampleSum(), 1) {
		t.Errorf("startup count %d sum %v, want 1 s", h.GetSampleCount(), h.GetSampleSum())
	}
	for _, s := range mfs["readyline_container_phase_duration_seconds"].GetMetric() {
		if l := labels(s); l["phase"] == ContainerPhaseReady {
			t.Errorf("container ready sample %v from an observation 60 s late", s.GetHistogram().GetSampleSum())
		}
	}
}

// TestMarksOnTraceAndWaterfall: the root span carries the marks, what they
// leave out and the clock steps; a late condition says when it came; the
// waterfall says both.
func TestMarksOnTraceAndWaterfall(t *testing.T) {
	tl := lateReady()
	tl.Marks = append(tl.Marks, correlator.MarkClockStep)
	tl.ClockSteps = []correlator.ClockStep{{At: at(700), Step: -time.Hour}}
	spans, _ := exportToMemory(t, TraceConfig{}, tl)
	var root, ready map[string]string
	for _, s := range spans {
		attrs := map[string]string{}
		for _, kv := range s.Attributes {
			attrs[string(kv.Key)] = kv.Value.Emit()
		}
		switch s.Name {
		case SpanPodStartup:
			root = attrs
		case ConditionSpanName(correlator.CondReady):
			ready = attrs
		}
	}
	if root == nil || ready == nil {
		t.Fatalf("root %v, Ready %v", root, ready)
	}
	if root[string(AttrMarks)] != `["api_lag","clock_step"]` || root[string(AttrClockStepsMS)] != "[-3600000]" || !strings.Contains(root[string(AttrMissing)], "lastTransitionTime") {
		t.Errorf("root attributes %v", root)
	}
	if ready[string(AttrConditionDelivered)] != at(60600).Format(time.RFC3339Nano) || ready[string(AttrConditionCoarse)] != "true" || ready[string(AttrConditionLagMS)] != "" {
		t.Errorf("Ready attributes %v", ready)
	}
	var b bytes.Buffer
	if err := waterfall.Render(&b, tl, 100); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"api_lag", "clock_step: -1h0m0s at +0.700s", "missing: when the API showed"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("waterfall lacks %q:\n%s", want, b.String())
		}
	}
}
