package exporter

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	cri "github.com/readyline/readyline/collector/event"
	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter/waterfall"
)

const otherPodUID = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"

// pullsTimeline is lifecycleDemo whose nginx image was pulled twice: a
// first attempt that waited 0.7 s behind another pod's redis pull in the
// serialized puller and failed, then, after 1 s of back-off, a 3.8 s pull
// of a 50 MB image.
func pullsTimeline() *correlator.Timeline {
	tl := lifecycleDemo()
	sha := "sha256:" + strings.Repeat("cd", 32)
	tl.ImagePulls = []correlator.ImagePull{
		{
			Container: "nginx", Image: "nginx:1.27", Attempt: 1, Puller: correlator.PullerSerialAssumed,
			Call:        correlator.CRICall{Method: cri.CRIPullImage, Start: at(16000), End: at(17000), Err: true},
			ErrorReason: "ErrImagePull", Error: "not found",
			Wait: &correlator.PullWait{Start: at(15300), End: at(16000), Need: at(15240), NeedEvent: "StartContainer returned",
				Behind: []correlator.PullBehind{{PodUID: otherPodUID, Image: "redis:7", Start: at(14000), End: at(15990)}}},
		},
		{
			Container: "nginx", Image: "nginx:1.27", Attempt: 2, Puller: correlator.PullerSerialAssumed, Ref: sha, Size: 50_000_000,
			Call:    correlator.CRICall{Method: cri.CRIPullImage, Start: at(18000), End: at(21800)},
			BackOff: time.Second,
		},
	}
	nginx := &tl.Containers[2]
	nginx.Waiting = append(nginx.Waiting, correlator.WaitingReason{Reason: "ImagePullBackOff",
		Message: `Back-off pulling image "nginx:1.27": ErrImagePull: not found`, First: at(17100), Last: at(17900), Times: 1})
	return tl
}

func TestImagePullSpans(t *testing.T) {
	spans, _ := exportToMemory(t, TraceConfig{}, pullsTimeline())
	st := newSpanTree(t, spans)
	var pulls []int
	for i, s := range spans {
		if s.Name == SpanImagePull {
			pulls = append(pulls, i)
		}
	}
	if len(pulls) != 2 {
		t.Fatalf("%d image.pull spans, want 2", len(pulls))
	}
	failed, ok := spans[pulls[0]], spans[pulls[1]]
	if failed.StartTime.After(ok.StartTime) {
		failed, ok = ok, failed
	}
	wantInterval(t, failed, at(16000), at(17000))
	wantAttrs(t, failed, map[string]string{
		"container.image.name": "nginx", "k8s.container.name": "nginx",
		"readyline.image.pull.outcome": "failure", "readyline.image.pull.attempt": "1",
		"readyline.image.pull.error_reason": "ErrImagePull", "readyline.image.pull.error": "not found",
		"readyline.image.size_bucket": "N/A", "readyline.image.puller": "serial_assumed",
		"readyline.image.pull.wait_ms": "700",
	})
	if failed.Status.Code != codes.Error || failed.Status.Description != "pulling nginx:1.27 failed: ErrImagePull: not found" {
		t.Errorf("failed pull status %+v", failed.Status)
	}
	if _, has := attrMap(failed.Attributes)["readyline.image.size_bytes"]; has {
		t.Errorf("failed pull has a size: %v", failed.Attributes)
	}
	wantInterval(t, ok, at(18000), at(21800))
	wantAttrs(t, ok, map[string]string{
		"readyline.image.pull.outcome": "success", "readyline.image.pull.attempt": "2",
		"readyline.image.size_bytes": "50000000", "readyline.image.size_bucket": "10MB-100MB",
		"container.image.id": "sha256:" + strings.Repeat("cd", 32), "readyline.image.pull.back_off_ms": "1000",
	})
	if ok.Status.Code == codes.Error {
		t.Errorf("successful pull has status %+v", ok.Status)
	}
	st.child(ok, string(cri.CRIPullImage))

	wait := st.child(st.root, SpanImagePullWait)
	wantInterval(t, wait, at(15300), at(16000))
	wantAttrs(t, wait, map[string]string{
		"readyline.image.pull.wait.behind.image": "redis:7", "readyline.image.pull.wait.behind.pod_uid": otherPodUID,
		"readyline.image.pull.wait.pulls_ahead": "1", "readyline.image.pull.wait.need_event": "StartContainer returned",
		"k8s.container.name": "nginx",
	})
	if len(wait.Links) != 1 || wait.Links[0].SpanContext.TraceID() != TraceIDForPod(otherPodUID) ||
		wait.Links[0].SpanContext.SpanID() != RootSpanID(TraceIDForPod(otherPodUID)) {
		t.Errorf("wait links %+v, want the other pod's root span", wait.Links)
	}
	backOff := st.child(st.root, SpanImagePullBackOff)
	wantInterval(t, backOff, at(17000), at(18000))
	wantAttrs(t, backOff, map[string]string{"readyline.waiting.reason": "ImagePullBackOff", "readyline.image.pull.back_off_ms": "1000"})
}

func TestImageSizeBucket(t *testing.T) {
	for _, tc := range []struct {
		size uint64
		want string
	}{
		{0, "N/A"},
		{1, "0-10MB"},
		{10 << 20, "0-10MB"}, // the kubelet's bounds are exclusive below
		{10<<20 + 1, "10MB-100MB"},
		{50_000_000, "10MB-100MB"},
		{1 << 30, "500MB-1GB"},
		{3 << 30, "1GB-5GB"},
		{200 << 30, "GT100GB"},
	} {
		if got := ImageSizeBucket(tc.size); got != tc.want {
			t.Errorf("ImageSizeBucket(%d) = %q, want %q", tc.size, got, tc.want)
		}
	}
}

func TestImagePullMetric(t *testing.T) {
	m, err := NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	m.Record(pullsTimeline())
	mfs := scrape(t, m.Handler(nil))
	const name = "readyline_image_pull_duration_seconds"
	for _, tc := range []struct {
		labels map[string]string
		sum    float64
	}{
		{map[string]string{LabelOutcome: PullOutcomeFailure, LabelImageSize: "N/A"}, 1.0},
		{map[string]string{LabelOutcome: PullOutcomeSuccess, LabelImageSize: "10MB-100MB"}, 3.8},
	} {
		h := series(t, mfs, name, tc.labels).GetHistogram()
		if h.GetSampleCount() != 1 || !near(h.GetSampleSum(), tc.sum) {
			t.Errorf("%v: count %d sum %v, want 1 and %v", tc.labels, h.GetSampleCount(), h.GetSampleSum(), tc.sum)
		}
	}
	// Throughput: the successful pull's 50 MB over 3.8 s; the failed one
	// has none.
	rate := series(t, mfs, "readyline_image_pull_throughput_bytes_per_second", map[string]string{LabelImageSize: "10MB-100MB"}).GetHistogram()
	if rate.GetSampleCount() != 1 || !near(rate.GetSampleSum(), 50e6/3.8) {
		t.Errorf("throughput: count %d sum %v, want 1 and %v", rate.GetSampleCount(), rate.GetSampleSum(), 50e6/3.8)
	}
	// The kubelet's bounds are all there, so the two histograms compare.
	h := series(t, mfs, name, map[string]string{LabelOutcome: PullOutcomeSuccess, LabelImageSize: "10MB-100MB"}).GetHistogram()
	bounds := map[float64]bool{}
	for _, b := range h.GetBucket() {
		bounds[b.GetUpperBound()] = true
	}
	for _, kubelet := range []float64{1, 5, 10, 20, 30, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600} {
		if !bounds[kubelet] {
			t.Errorf("no bucket bound %v", kubelet)
		}
	}

	// A partial timeline records the pulls over by its end, the completion
	// only those after it: each pull once.
	m2, _ := NewMetrics(nil)
	part := pullsTimeline()
	part.Partial, part.End, part.Outcome = true, at(20000), correlator.OutcomeTimeout
	m2.Record(part)
	done := pullsTimeline()
	done.ReportedAt = at(20000)
	m2.Record(done)
	mfs = scrape(t, m2.Handler(nil))
	for _, outcome := range []string{PullOutcomeFailure, PullOutcomeSuccess} {
		size := "N/A"
		if outcome == PullOutcomeSuccess {
			size = "10MB-100MB"
		}
		if n := series(t, mfs, name, map[string]string{LabelOutcome: outcome, LabelImageSize: size}).GetHistogram().GetSampleCount(); n != 1 {
			t.Errorf("%s recorded %d times", outcome, n)
		}
	}
}

func TestAlertBreakdownNamesPulls(t *testing.T) {
	tl := pullsTimeline()
	alerts := CheckAlerts(tl, []AlertRule{{Name: correlator.CondReady, Threshold: 5 * time.Second}})
	if len(alerts) != 1 {
		t.Fatalf("alerts %+v", alerts)
	}
	want := "image pulls: nginx:1.27 4.8s (50.0 MB, 13.2 MB/s), 1 of 2 attempts failed, 1.0s back-off, waited 700ms behind other pods' pulls (last redis:7)"
	if !strings.Contains(alerts[0].Message, want) {
		t.Errorf("message %q\nwant it to contain %q", alerts[0].Message, want)
	}
	// PodReadyToStartContainers is set before the pulls: pulls in its
	// window are named as not holding it, none outside it.
	if s := sandboxBreakdown(tl, at(0), at(20000)); !strings.Contains(s, "image pulls: nginx:1.27") || !strings.Contains(s, "they do not hold PodReadyToStartContainers") {
		t.Errorf("sandbox breakdown %q", s)
	}
	if s := sandboxBreakdown(tl, at(0), at(800)); strings.Contains(s, "image pulls") {
		t.Errorf("sandbox breakdown before the pulls %q", s)
	}
}

func TestWaterfallImagePulls(t *testing.T) {
	var buf bytes.Buffer
	if err := waterfall.Render(&buf, pullsTimeline(), 160); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"image.pull.wait behind redis:7", "image.pull nginx:1.27 ✗ ErrImagePull", "image.pull.back_off", "image.pull nginx:1.27 #2"} {
		if !strings.Contains(out, want) {
			t.Errorf("waterfall has no %q:\n%s", want, out)
		}
	}
}

// TestPullsAfterTheDeadline: a start reported in progress at 17.5 s: its
// completion tells the pull that returned after the deadline, with its
// back-off cut to the deadline, and not the failed attempt the report
// could have told.
func TestPullsAfterTheDeadline(t *testing.T) {
	report, done := reportedAndCompleted()
	deadline := at(17500)
	report.End, done.ReportedAt = deadline, deadline
	done.ImagePulls = pullsTimeline().ImagePulls
	spans, _ := exportToMemory(t, TraceConfig{}, report, done)
	st := newSpanTree(t, spans)
	c := st.child(st.root, SpanPodStartupCompleted)
	pull := st.child(c, SpanImagePull)
	wantInterval(t, pull, at(18000), at(21800))
	wantAttrs(t, pull, map[string]string{"readyline.image.pull.attempt": "2"})
	backOff := st.child(c, SpanImagePullBackOff)
	wantInterval(t, backOff, deadline, at(18000))
	wantAttrs(t, backOff, map[string]string{"readyline.clipped": "true"})
	for _, s := range spans {
		if s.Name == SpanImagePullWait || (s.Name == SpanImagePull && s.StartTime.Before(deadline)) {
			t.Errorf("%s %v..%v told again after the deadline", s.Name, s.StartTime, s.EndTime)
		}
	}
}

// TestWaterfallPullInFlightBytes: a pull in flight is drawn open, with how
// far the runtime has come.
func TestWaterfallPullInFlightBytes(t *testing.T) {
	tl := pullsTimeline()
	tl.Outcome, tl.AsOf = correlator.OutcomeStarting, at(30000)
	tl.InFlight = []correlator.InFlightCall{{Method: cri.CRIPullImage, Start: at(20000), Image: "registry/big:1", Container: "app",
		Progress: &cri.PullProgress{Bytes: 112e6, Total: 270e6, Layers: 7, LayersDone: 4, LastByte: at(29500)}}}
	var buf bytes.Buffer
	if err := waterfall.Render(&buf, tl, 200); err != nil {
		t.Fatal(err)
	}
	if want := "PullImage registry/big:1 (in flight: 112/270 MB, 4 of 7 layers"; !strings.Contains(buf.String(), want) {
		t.Errorf("waterfall has no %q:\n%s", want, buf.String())
	}
	// A pull that waited behind other pods' pulls says so, as a finished one.
	tl.InFlight[0].Queued = &correlator.PullQueued{Start: at(16900), End: at(20000), Behind: 2}
	buf.Reset()
	if err := waterfall.Render(&buf, tl, 200); err != nil {
		t.Fatal(err)
	}
	if want := "image.pull.wait behind 2 pulls                                      16.900s   3.100s"; !strings.Contains(buf.String(), want) {
		t.Errorf("waterfall has no %q:\n%s", want, buf.String())
	}
}

// TestImagePullProgressEvents: a pull's samples are image.pull.progress
// events on its span, at their times, with the bytes, the total when
// known and the layers; one outside the span's window is left out.
func TestImagePullProgressEvents(t *testing.T) {
	tl := pullsTimeline()
	tl.ImagePulls[1].Progress = []correlator.PullSample{
		{Time: at(19000), Bytes: 3_000_000},
		{Time: at(21000), Bytes: 40_000_000, Total: 50_000_000, Layers: 5, LayersDone: 3},
		{Time: at(22500), Bytes: 50_000_000, Total: 50_000_000, Layers: 5, LayersDone: 5}, // past the span's end
	}
	spans, _ := exportToMemory(t, TraceConfig{}, tl)
	var pulls []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == SpanImagePull {
			pulls = append(pulls, s)
		}
	}
	if len(pulls) != 2 {
		t.Fatalf("%d image.pull spans, want 2", len(pulls))
	}
	var events []sdktrace.Event
	for _, s := range pulls {
		if s.StartTime.Equal(at(18000)) {
			events = s.Events
		} else if len(s.Events) != 0 {
			t.Errorf("the failed pull has events %+v, want none", s.Events)
		}
	}
	if len(events) != 2 {
		t.Fatalf("%d events on the pull, want 2: %+v", len(events), events)
	}
	for i, want := range []struct {
		at    time.Time
		attrs map[string]string
	}{
		{at(19000), map[string]string{"readyline.image.pull.progress.bytes": "3000000"}},
		{at(21000), map[string]string{"readyline.image.pull.progress.bytes": "40000000", "readyline.image.pull.progress.total_bytes": "50000000",
			"readyline.image.pull.progress.layers": "5", "readyline.image.pull.progress.layers_done": "3"}},
	} {
		ev := events[i]
		if ev.Name != EventImagePullProgress || !ev.Time.Equal(want.at) {
			t.Errorf("event %d: %s at %v, want %s at %v", i, ev.Name, ev.Time, EventImagePullProgress, want.at)
		}
		got := attrMap(ev.Attributes)
		if len(got) != len(want.attrs) {
			t.Errorf("event %d attributes %v, want %v", i, ev.Attributes, want.attrs)
		}
		for k, v := range want.attrs {
			if g, ok := got[attribute.Key(k)]; !ok || g.Emit() != v {
				t.Errorf("event %d: %s = %q, want %q", i, k, g.Emit(), v)
			}
		}
	}
}
