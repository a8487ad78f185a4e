package exporter

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	rlevent "github.com/readyline/readyline/collector/event"
	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter/waterfall"
)

// TestSpansInsideParents: for the fixtures and every timeline of the
// correlator's recordings of the demo pods and of image pulls, each span lies inside its
// parent and inside the root of its trace (the builder clamps, see
// spanBuilder); at least one span had to be clipped, so the check bites.
func TestSpansInsideParents(t *testing.T) {
	// What lands within the grace after Ready (a liveness probe, the
	// runtime's word), and a CNI plugin a few ms before the call (clocks).
	late := kernelTimeline()
	nginx := &late.Containers[2].Attempts[0]
	nginx.Probes = append(nginx.Probes, correlator.ProbeAttempt{Kind: correlator.ProbeLiveness, Handler: "exec",
		Start: at(29000), End: at(29010), Result: correlator.ProbeSuccess, ExitCode: intp(0)})
	late.Sandbox.CNI[0].Exec = at(295)
	tls := []*correlator.Timeline{lifecycleDemo(), kernelTimeline(), late, initFailureNever(), postStartDemo(), probeRetries(), restarts(), restartsFailedCalls(), stuckCrashLoop()}
	tls = append(tls, replayRecording(t, "../correlator/testdata/recordings/demo-node.jsonl")...)
	tls = append(tls, pullsTimeline())
	for _, tl := range replayRecording(t, "../correlator/testdata/recordings/pulls-node.jsonl") {
		if tl.ReportedAt.IsZero() { // a completion's parent is its report's root
			tls = append(tls, tl)
		}
	}
	clipped := 0
	for _, tl := range tls {
		spans, _ := exportToMemory(t, TraceConfig{}, tl)
		byID := map[trace.SpanID]tracetest.SpanStub{}
		var root tracetest.SpanStub
		for _, s := range spans {
			byID[s.SpanContext.SpanID()] = s
			if !s.Parent.IsValid() {
				root = s
			}
		}
		inside := func(s, p tracetest.SpanStub) bool {
			return !s.StartTime.Before(p.StartTime) && !s.EndTime.After(p.EndTime) && !s.EndTime.Before(s.StartTime)
		}
		for _, s := range spans {
			for _, kv := range s.Attributes {
				if kv.Key == AttrClipped {
					clipped++
				}
			}
			if !s.Parent.IsValid() {
				continue
			}
			p, ok := byID[s.Parent.SpanID()]
			if !ok {
				t.Errorf("%s: span %q has no exported parent", tl.Pod.Name, s.Name)
				continue
			}
			if !inside(s, p) {
				t.Errorf("%s: span %q %v..%v outside its parent %q %v..%v", tl.Pod.Name, s.Name,
					s.StartTime.Sub(tl.Start), s.EndTime.Sub(tl.Start), p.Name, p.StartTime.Sub(tl.Start), p.EndTime.Sub(tl.Start))
			}
			if !inside(s, root) {
				t.Errorf("%s: span %q outside the root", tl.Pod.Name, s.Name)
			}
		}
	}
	if clipped == 0 {
		t.Error("no span was clipped: the inputs do not exercise the rule")
	}
}

func replayRecording(t testing.TB, path string) []*correlator.Timeline {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []*correlator.Timeline
	if err := correlator.New(correlator.Config{}).Replay(f, func(tl *correlator.Timeline) error { out = append(out, tl); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestKilledProcessIsNoExitZero: a process ended by a signal reads as
// killed, even with a (meaningless) exit code 0 next to the signal.
func TestKilledProcessIsNoExitZero(t *testing.T) {
	p := &correlator.Process{PID: 1, Filename: "/bin/app", Exec: at(0), Exit: at(10), ExitCode: intp(0), Signal: 9}
	if got := processErr(p); got != "killed by signal 9" {
		t.Errorf("processErr = %q", got)
	}
	for _, kv := range processAttrs(p) {
		if kv.Key == "process.exit.code" {
			t.Errorf("a killed process carries %s=%v", kv.Key, kv.Value.Emit())
		}
	}
	tl := lifecycleDemo()
	tl.Containers[0].Attempts[0].Process = p
	var buf strings.Builder
	if err := waterfall.Render(&buf, tl, 100); err != nil {
		t.Fatal(err)
	}
	if out := buf.String(); strings.Contains(out, "process app exit 0") || !strings.Contains(out, "process app signal 9") {
		t.Errorf("waterfall:\n%s", out)
	}
}

// TestAttemptSpansEndWithTheirProcess: over every recording of the
// correlator and the hand-written timelines, the span of an attempt that
// ended ends within a small grace of its process's exit or the runtime's
// finish, whichever is later: the dead container's StopContainer and
// RemoveContainer, which may come seconds later, are not drawn as its
// run. At least one attempt has such a late call, so the check bites.
func TestAttemptSpansEndWithTheirProcess(t *testing.T) {
	// A call begun while the process ran may return just after its exit
	// (the kubelet's StopContainer waits for it).
	const grace = 500 * time.Millisecond
	// The crash loop as the kubelet leaves it: each dead attempt removed
	// seconds after it exited (the runs of 0.6 s were drawn 6 s long).
	removed := stuckCrashLoop()
	for i := range removed.Containers[0].Attempts[:2] {
		a := &removed.Containers[0].Attempts[i]
		a.Calls = append(a.Calls, correlator.CRICall{Method: rlevent.CRIRemoveContainer, Start: a.Process.Exit.Add(5400 * time.Millisecond), End: a.Process.Exit.Add(5420 * time.Millisecond)})
	}
	tls := []*correlator.Timeline{lifecycleDemo(), kernelTimeline(), initFailureNever(), postStartDemo(), probeRetries(), restarts(), restartsFailedCalls(), stuckCrashLoop(), removed}
	recordings, err := filepath.Glob("../correlator/testdata/recordings/*.jsonl")
	if err != nil || len(recordings) == 0 {
		t.Fatalf("no recordings: %v", err)
	}
	for _, rec := range recordings {
		tls = append(tls, replayRecording(t, rec)...)
	}
	checked, lateCalls := 0, 0
	for _, tl := range tls {
		spans, _ := exportToMemory(t, TraceConfig{}, tl)
		type key struct {
			container string
			attempt   int64
		}
		ends := map[key]time.Time{}
		for _, s := range spans {
			var k key
			var named, counted bool
			for _, kv := range s.Attributes {
				switch kv.Key {
				case semconv.K8SContainerNameKey:
					k.container, named = kv.Value.AsString(), true
				case semconv.K8SContainerRestartCountKey:
					k.attempt, counted = kv.Value.AsInt64(), true
				}
			}
			if named && counted && strings.HasPrefix(s.Name, "container") {
				ends[k] = s.EndTime
			}
		}
		for ci := range tl.Containers {
			c := &tl.Containers[ci]
			for ai := range c.Attempts {
				a := &c.Attempts[ai]
				stop := a.Finished
				if a.Process != nil && a.Process.Exit.After(stop) {
					stop = a.Process.Exit
				}
				if stop.IsZero() {
					continue
				}
				end, ok := ends[key{c.Name, int64(a.Attempt)}]
				if !ok {
					continue // not exported: outside the root (after the start's end)
				}
				checked++
				for _, call := range a.Calls {
					if call.Start.After(stop.Add(grace)) {
						lateCalls++
						break
					}
				}
				if end.After(stop.Add(grace)) {
					t.Errorf("%s/%s attempt %d: span ends %v after its process ended", tl.Pod.Name, c.Name, a.Attempt, end.Sub(stop))
				}
			}
		}
	}
	t.Logf("%d ended attempts checked, %d with a call more than %v after their end", checked, lateCalls, grace)
	if lateCalls == 0 {
		t.Error("no attempt has a call after its end: the inputs do not exercise the rule")
	}
}
