package correlator

import (
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/readyline/readyline/collector/event"
)

// down and up are a source's statuses at s seconds; since, when not 0, is
// where a Down's loss began.
func down(s float64, source, reason string, since float64, lost uint64) *event.SourceStatus {
	st := &event.SourceStatus{Time: at(s), Source: source, Reason: reason, Lost: lost}
	if since != 0 {
		st.Since = at(since)
	}
	return st
}

func up(s float64, source string) *event.SourceStatus {
	return &event.SourceStatus{Time: at(s), Source: source, Up: true}
}

// withStatuses puts each status into events before the first event that
// happened after it, keeping the events' own order.
func withStatuses(events []event.Event, statuses ...*event.SourceStatus) []event.Event {
	for _, st := range statuses {
		i := 0
		for i < len(events) && !events[i].When().After(st.Time) {
			i++
		}
		events = append(events[:i], append([]event.Event{st}, events[i:]...)...)
	}
	return events
}

func window(reason string, from, to float64, lost uint64) BlindWindow {
	w := BlindWindow{Reason: reason, From: at(from), Lost: lost}
	if to >= 0 {
		w.To = at(to)
	}
	return w
}

// TestGaps: a source's blind windows mark the starts they overlap, and
// only those (readyPod's start: 0 s to Ready at 1.8 s).
func TestGaps(t *testing.T) {
	const open = -1 // a window's To: still blind
	for _, tc := range []struct {
		name     string
		statuses []*event.SourceStatus
		want     []SourceGap
		text     []string
	}{
		{name: "none"},
		{name: "before the start",
			statuses: []*event.SourceStatus{down(-5, event.SourceKubeletCalls, "no_kubelet", 0, 0), up(-4, event.SourceKubeletCalls)}},
		{name: "after the end",
			statuses: []*event.SourceStatus{down(2, event.SourceRuntime, event.ReasonDisconnected, 0, 0), up(2.5, event.SourceRuntime)}},
		{name: "inside",
			statuses: []*event.SourceStatus{down(0.5, event.SourceKubeletCalls, "kubelet_restarted", 0, 0), up(1.2, event.SourceKubeletCalls)},
			want:     []SourceGap{{Source: event.SourceKubeletCalls, Windows: []BlindWindow{window("kubelet_restarted", 0.5, 1.2, 0)}}},
			text:     []string{"cri_calls: kubelet_restarted 01:51:18.500–01:51:19.200: kubelet calls in this window are not seen"}},
		{name: "across the start",
			statuses: []*event.SourceStatus{down(-3, event.SourceKubeletCalls, "no_kubelet", 0, 0), up(0.4, event.SourceKubeletCalls)},
			want:     []SourceGap{{Source: event.SourceKubeletCalls, Windows: []BlindWindow{window("no_kubelet", -3, 0.4, 0)}}}},
		{name: "still blind",
			statuses: []*event.SourceStatus{down(1, event.SourcePodWatch, event.ReasonDisconnected, 0, 0)},
			want:     []SourceGap{{Source: event.SourcePodWatch, Windows: []BlindWindow{window(event.ReasonDisconnected, 1, open, 0)}}},
			text:     []string{"pod_watch: disconnected since 01:51:19.000 (still blind): pod updates in this window are seen late or not at all"}},
		{name: "ring loss, known after the fact",
			statuses: []*event.SourceStatus{down(1.5, event.SourceProcess, event.ReasonRingFull, 0.5, 120), up(1.5, event.SourceProcess)},
			want:     []SourceGap{{Source: event.SourceProcess, Windows: []BlindWindow{window(event.ReasonRingFull, 0.5, 1.5, 120)}}},
			text:     []string{"process: ring_full 01:51:18.500–01:51:19.500 (120 records lost): process execs and exits in this window may be missing"}},
		{name: "ring losing every second is one window",
			statuses: []*event.SourceStatus{
				down(0.5, event.SourceProcess, event.ReasonRingFull, -0.5, 10), up(0.5, event.SourceProcess),
				down(1.5, event.SourceProcess, event.ReasonRingFull, 0.5, 20), up(1.5, event.SourceProcess),
				down(2.5, event.SourceProcess, event.ReasonRingFull, 1.5, 30), up(2.5, event.SourceProcess),
			},
			want: []SourceGap{{Source: event.SourceProcess, Windows: []BlindWindow{window(event.ReasonRingFull, -0.5, 2.5, 60)}}}},
		{name: "two windows, several reasons, two sources",
			statuses: []*event.SourceStatus{
				down(0.1, event.SourceRuntime, event.ReasonDisconnected, 0, 0),
				down(0.2, event.SourceRuntime, event.ReasonStreamBehind, 0, 3),
				up(0.3, event.SourceRuntime),
				down(1.1, event.SourceProcess, event.ReasonRingFull, 1.0, 5), up(1.1, event.SourceProcess),
				down(1.4, event.SourceRuntime, event.ReasonDisconnected, 0, 0),
			},
			want: []SourceGap{
				{Source: event.SourceRuntime, Windows: []BlindWindow{
					window("disconnected,stream_behind", 0.1, 0.3, 3), window(event.ReasonDisconnected, 1.4, open, 0)}},
				{Source: event.SourceProcess, Windows: []BlindWindow{window(event.ReasonRingFull, 1.0, 1.1, 5)}},
			},
			text: []string{
				"cri: disconnected,stream_behind 01:51:18.100–01:51:18.300, disconnected since 01:51:19.400 (still blind) (3 records lost): runtime state changes in these windows are seen late or not at all",
				"process: ring_full 01:51:19.000–01:51:19.100 (5 records lost): process execs and exits in this window may be missing",
			}},
		{name: "tcp blind, no probe connections to miss",
			statuses: []*event.SourceStatus{down(0.5, event.SourceTCP, event.ReasonRingFull, 0.2, 4), up(0.5, event.SourceTCP)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := readyPod(t, "gaps")
			sc.events = withStatuses(sc.events, tc.statuses...)
			tl := sc.run(Config{})
			if !reflect.DeepEqual(tl.Gaps, tc.want) {
				t.Errorf("gaps %+v, want %+v", tl.Gaps, tc.want)
			}
			if tc.text == nil {
				return
			}
			var text []string
			for _, g := range tl.Gaps {
				text = append(text, g.String())
			}
			if !reflect.DeepEqual(text, tc.text) {
				t.Errorf("gaps say\n%s\nwant\n%s", strings.Join(text, "\n"), strings.Join(tc.text, "\n"))
			}
		})
	}
}

// TestGapsTCPForHTTPProbes: the tcp source's blindness marks a pod whose
// probes are connections it follows.
func TestGapsTCPForHTTPProbes(t *testing.T) {
	sc := newScenario(t, "web", corev1.PodSpec{Containers: []corev1.Container{{Name: "app",
		Ports: []corev1.ContainerPort{{ContainerPort: 8080}}, ReadinessProbe: httpProbe(0, 1)}}})
	sc.pod.Spec.Containers[0].ReadinessProbe.HTTPGet.Port.IntVal = 8080
	sc.cond(corev1.PodScheduled, 0)
	sc.update(0.05)
	sc.sandboxUp(0.3)
	sc.runtime(1, idMain, "app", 0, 0.9, 1, 0, 0)
	sc.status(false, running("app", idMain, 1, true, true))
	sc.cond(corev1.PodReady, 1.8)
	sc.update(1.8)
	sc.events = withStatuses(sc.events, down(0.5, event.SourceTCP, event.ReasonRingFull, 0.2, 4), up(0.5, event.SourceTCP))
	tl := sc.run(Config{})
	want := []SourceGap{{Source: event.SourceTCP, Windows: []BlindWindow{window(event.ReasonRingFull, 0.2, 0.5, 4)}}}
	if !reflect.DeepEqual(tl.Gaps, want) {
		t.Errorf("gaps %+v, want %+v", tl.Gaps, want)
	}
}

// TestGapsReportAndCompletion: a start reported at its deadline while a
// source is blind says so (still blind); the timeline that completes it
// has the window closed.
func TestGapsReportAndCompletion(t *testing.T) {
	sc := newScenario(t, "slow", corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}})
	sc.cond(corev1.PodScheduled, 0)
	sc.update(0.05)
	sc.sandboxUp(0.3)
	sc.runtime(1, idMain, "app", 0, 0.9, 1, 0, 0)
	sc.ticks(2, 14)
	sc.status(false, running("app", idMain, 1, true, true))
	sc.cond(corev1.PodReady, 15)
	sc.update(15)
	sc.events = withStatuses(sc.events, down(8, event.SourceKubeletCalls, "kubelet_restarted", 0, 0), up(12, event.SourceKubeletCalls))
	got := feed(New(Config{Timeout: 10 * time.Second}), sc.events, 3*time.Second)
	if len(got) != 2 || !got[0].Partial {
		t.Fatalf("%d timelines, want the report at 10 s and the completion", len(got))
	}
	open := []SourceGap{{Source: event.SourceKubeletCalls, Windows: []BlindWindow{window("kubelet_restarted", 8, -1, 0)}}}
	if !reflect.DeepEqual(got[0].Gaps, open) {
		t.Errorf("report's gaps %+v, want %+v", got[0].Gaps, open)
	}
	closed := []SourceGap{{Source: event.SourceKubeletCalls, Windows: []BlindWindow{window("kubelet_restarted", 8, 12, 0)}}}
	if !reflect.DeepEqual(got[1].Gaps, closed) {
		t.Errorf("completion's gaps %+v, want %+v", got[1].Gaps, closed)
	}
}

// TestGapsBounded: a source that flaps for hours keeps at most
// maxBlindWindows windows, those no tracked start can overlap are
// forgotten, and merging never makes a window the source saw in.
func TestGapsBounded(t *testing.T) {
	c := New(Config{Timeout: time.Minute})
	// 1000 outages 5 s apart, each 1 s long.
	for i := range 1000 {
		s := float64(5 * i)
		c.Handle(down(s, event.SourceRuntime, event.ReasonDisconnected, 0, 0))
		c.Handle(up(s+1, event.SourceRuntime))
	}
	ws := c.blind[event.SourceRuntime]
	// Nothing tracked: only those that ended in the last minute (Timeout)
	// are kept, from 4935..4936 s to 4995..4996 s.
	if len(ws) != 13 || !ws[0].From.Equal(at(4935)) || !ws[len(ws)-1].To.Equal(at(4996)) {
		t.Fatalf("%d windows %v..%v, want the 13 of the last minute", len(ws), ws[0].From.Sub(t0), ws[len(ws)-1].To.Sub(t0))
	}

	// A start tracked since 5000 s keeps its windows, however many: at
	// most maxBlindWindows, the oldest merged.
	sc := newScenario(t, "stuck", corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}})
	sc.pod.CreationTimestamp.Time = at(5000)
	sc.cond(corev1.PodScheduled, 5000)
	sc.update(5000)
	c = New(Config{Timeout: time.Hour})
	for _, ev := range sc.events {
		c.Handle(ev)
	}
	for i := range 1000 {
		s := 5001 + float64(5*i)
		c.Handle(down(s, event.SourceRuntime, event.ReasonDisconnected, 0, 0))
		c.Handle(up(s+1, event.SourceRuntime))
	}
	ws = c.blind[event.SourceRuntime]
	if len(ws) != maxBlindWindows {
		t.Fatalf("%d windows, want %d", len(ws), maxBlindWindows)
	}
	if !ws[0].From.Equal(at(5001)) || !ws[len(ws)-1].To.Equal(at(5001+5*999+1)) {
		t.Errorf("windows %v..%v, want all from the first outage to the last", ws[0].From.Sub(t0), ws[len(ws)-1].To.Sub(t0))
	}
	for i := 1; i < len(ws); i++ {
		if !ws[i].From.Equal(ws[i-1].To.Add(4 * time.Second)) {
			t.Errorf("window %d: %v..%v after %v: only the oldest merge", i, ws[i].From.Sub(t0), ws[i].To.Sub(t0), ws[i-1].To.Sub(t0))
		}
	}
}

// TestGapsRecording replays a recording with every source's statuses:
// e2e-slow-ready (a start reported at its 60 s deadline, Ready 15 s later)
// with, written into it, each source's first Up, ring losses before, during
// and after the start (and one of the tcp source, which follows no
// connection of this pod), a kubelet restart, a runtime outage, an API
// outage across the report and a kubelet restart after the start. The
// report and the completion carry exactly the windows they overlap.
func TestGapsRecording(t *testing.T) {
	tls := replayFile(t, "testdata/recordings/gaps-slow-ready.jsonl", configFor("gaps-slow-ready"))
	if len(tls) != 2 || !tls[0].Partial || tls[1].ReportedAt.IsZero() {
		t.Fatalf("%d timelines, want the report at the deadline and its completion", len(tls))
	}
	say := func(tl *Timeline) string {
		var s []string
		for _, g := range tl.Gaps {
			s = append(s, g.String())
		}
		return strings.Join(s, "\n")
	}
	for i, want := range []string{
		// The report, at 15:30:58.4: the API server is still down.
		`process: ring_full 15:29:58.900–15:29:59.900 (37 records lost): process execs and exits in this window may be missing
cri_calls: kubelet_restarted 15:30:20.000–15:30:23.500: kubelet calls in this window are not seen
cri: disconnected 15:30:40.000–15:30:41.000: runtime state changes in this window are seen late or not at all
pod_watch: disconnected since 15:30:55.000 (still blind): pod updates in this window are seen late or not at all`,
		// The completion: the API outage ended; a later ring loss too.
		`process: ring_full 15:29:58.900–15:29:59.900, ring_full 15:31:05.000–15:31:06.000 (45 records lost): process execs and exits in these windows may be missing
cri_calls: kubelet_restarted 15:30:20.000–15:30:23.500: kubelet calls in this window are not seen
cri: disconnected 15:30:40.000–15:30:41.000: runtime state changes in this window are seen late or not at all
pod_watch: disconnected 15:30:55.000–15:31:00.000: pod updates in this window are seen late or not at all`,
	} {
		if got := say(tls[i]); got != want {
			t.Errorf("timeline %d (%s %v..%v) says\n%s\nwant\n%s", i, tls[i].Outcome, tls[i].Start.Format(time.TimeOnly),
				tls[i].End.Format(time.TimeOnly), got, want)
		}
	}
	for _, tl := range tls {
		for _, g := range tl.Gaps {
			if g.Source == event.SourceTCP {
				t.Errorf("tcp gap %s: the pod has no probe connections", g)
			}
		}
	}
}

// TestGapsWaitForTheRuntime: containerd restarts while the pod starts; the
// kubelet creates and starts app (CRI calls seen) while readyline's CRI
// source still reconnects, and the pod is Ready at 1.8 s. The runtime's
// list after the reconnect (at 4 s, past the 1 s grace) brings app's
// created and started times: the finished start waits for it, up to the
// source's Up, and has them; its gap says the runtime was blind.
func TestGapsWaitForTheRuntime(t *testing.T) {
	sc := newScenario(t, "restart", corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}})
	sc.cond(corev1.PodScheduled, 0)
	sc.update(0.05)
	sc.sandboxUp(0.3)
	sc.events = append(sc.events, down(0.5, event.SourceRuntime, event.ReasonDisconnected, 0, 0))
	sc.exec(1.01, idMain, 1100, shimPID, "sleep", "3600")
	sc.cond(corev1.PodReadyToStartContainers, 0.5)
	sc.cond(corev1.PodInitialized, 0.05)
	sc.status(false, running("app", idMain, 1, true, true))
	sc.cond(corev1.ContainersReady, 1.8)
	sc.cond(corev1.PodReady, 1.8)
	sc.update(1.8)
	for s := 2.5; s < 4; s += 0.5 {
		sc.events = append(sc.events, &event.Tick{Time: at(s)})
	}
	sc.runtime(4, idMain, "app", 0, 0.9, 1, 0, 0)
	sc.events = append(sc.events, up(4.01, event.SourceRuntime))
	tl := sc.run(Config{})
	if len(tl.Containers) != 1 || len(tl.Containers[0].Attempts) != 1 {
		t.Fatalf("containers %+v", tl.Containers)
	}
	if a := tl.Containers[0].Attempts[0]; !a.Created.Equal(at(0.9)) || !a.Started.Equal(at(1)) {
		t.Errorf("app created %v started %v, want the runtime's %v and %v from its list after the reconnect", a.Created, a.Started, at(0.9), at(1))
	}
	want := []SourceGap{{Source: event.SourceRuntime, Windows: []BlindWindow{window(event.ReasonDisconnected, 0.5, 4.01, 0)}}}
	if !reflect.DeepEqual(tl.Gaps, want) {
		t.Errorf("gaps %+v, want %+v", tl.Gaps, want)
	}
}
