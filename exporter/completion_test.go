package exporter

import (
	"strconv"
	"testing"
	"time"

	"github.com/readyline/readyline/correlator"
)

// reportedAndCompleted splits the lifecycle demo into the report of a start
// still in progress at 5 s and the timeline that completes it.
func reportedAndCompleted() (report, done *correlator.Timeline) {
	done = lifecycleDemo()
	deadline := done.Start.Add(5 * time.Second)
	report = lifecycleDemo()
	report.Outcome, report.Partial, report.End, report.Reason = correlator.OutcomeTimeout, true, deadline, "not Ready within 5s"
	var early []correlator.ConditionTransition
	for _, c := range report.Conditions {
		if !c.Observed.After(deadline) {
			early = append(early, c)
		}
	}
	report.Conditions = early
	done.ReportedAt = deadline
	return report, done
}

// TestTraceOfAStartCompletedAfterItsDeadline: the report at the deadline is
// the trace with its one pod.startup root (readyline.partial); the start's
// completion adds one pod.startup.completed span under that root, from the
// deadline to Ready, with the conditions observed after the deadline, and no
// second root.
func TestTraceOfAStartCompletedAfterItsDeadline(t *testing.T) {
	report, done := reportedAndCompleted()
	spans, _ := exportToMemory(t, TraceConfig{NodeName: "vm"}, report, done)
	st := newSpanTree(t, spans) // fails unless there is exactly one root
	root := st.root
	if root.Name != SpanPodStartup {
		t.Fatalf("root %s", root.Name)
	}
	wantAttrs(t, root, map[string]string{"readyline.outcome": "timeout", "readyline.partial": "true"})
	if root.SpanContext.SpanID() != RootSpanID(TraceIDForPod(report.Pod.UID)) {
		t.Errorf("root span id %s, want the one fixed by the trace id", root.SpanContext.SpanID())
	}
	c := st.child(root, SpanPodStartupCompleted)
	wantInterval(t, c, done.ReportedAt, done.End)
	wantAttrs(t, c, map[string]string{"readyline.outcome": "ready",
		"readyline.startup.duration_ms": strconv.FormatInt(done.End.Sub(done.Start).Milliseconds(), 10)})
	var after []string
	for _, k := range st.children[c.SpanContext.SpanID()] {
		after = append(after, k.Name)
	}
	if len(after) == 0 || after[len(after)-1] != ConditionSpanName(correlator.CondReady) {
		t.Errorf("conditions after the deadline under the completion: %v, want Ready among them", after)
	}
	for _, k := range st.children[c.SpanContext.SpanID()] {
		if k.StartTime.Before(done.ReportedAt) {
			t.Errorf("%s at %v: before the deadline, already told by the report", k.Name, k.StartTime)
		}
	}
}

// TestMetricsOfAStartCompletedAfterItsDeadline: each measure is recorded
// once, when complete: the start itself at its completion only; a phase over
// before the deadline with the report only.
func TestMetricsOfAStartCompletedAfterItsDeadline(t *testing.T) {
	whole, err := NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	whole.Record(lifecycleDemo())
	split, err := NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	report, done := reportedAndCompleted()
	split.Record(report)
	afterReport := scrape(t, split.Handler(nil))
	if mf, ok := afterReport["readyline_pod_startup_duration_seconds"]; ok && len(mf.GetMetric()) > 0 && mf.GetMetric()[0].GetHistogram().GetSampleCount() > 0 {
		t.Errorf("the report of a start in progress observed its duration")
	}
	split.Record(done)
	want, got := scrape(t, whole.Handler(nil)), scrape(t, split.Handler(nil))
	for _, name := range []string{"readyline_pod_startup_duration_seconds", "readyline_pod_phase_duration_seconds",
		"readyline_pod_ready_to_start_containers_seconds", "readyline_container_phase_duration_seconds"} {
		var w, g uint64
		for _, m := range want[name].GetMetric() {
			w += m.GetHistogram().GetSampleCount()
		}
		for _, m := range got[name].GetMetric() {
			g += m.GetHistogram().GetSampleCount()
		}
		if w == 0 || g != w {
			t.Errorf("%s: %d observations from report + completion, %d from the whole start (want equal, > 0)", name, g, w)
		}
	}
}
