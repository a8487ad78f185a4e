package correlator

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/readyline/readyline/collector/event"
)

// wantedAt feeds sc's events and then a tick every second up to e, and
// returns the ticks (seconds from t0) at which WantEvents listed sc's pod.
func wantedAt(c *Correlator, sc *scenario, e float64) []float64 {
	var got []float64
	check := func(s float64) {
		for _, w := range c.WantEvents() {
			if w.UID == sc.uid {
				got = append(got, s)
			}
		}
	}
	for _, ev := range sc.events {
		c.Handle(ev)
		if tk, ok := ev.(*event.Tick); ok {
			check(tk.Time.Sub(t0).Seconds())
		}
	}
	for s := 1.0; s <= e; s++ {
		if at(s).After(sc.events[len(sc.events)-1].When()) {
			c.Handle(&event.Tick{Time: at(s)})
			check(s)
		}
	}
	return got
}

// TestEventsWantedFiveSecondsIn: the README's "in progress after 5 s ...;
// a start that is Ready within 5 s costs no call". A start first seen at
// 0 s is listed from the tick at 5 s on, not at 4 s; one Ready at 4.5 s
// is never listed.
func TestEventsWantedFiveSecondsIn(t *testing.T) {
	slow := newScenario(t, "slow", corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}})
	slow.cond(corev1.PodScheduled, 0)
	slow.update(0)
	got := wantedAt(New(Config{}), slow, 8)
	if want := []float64{5, 6, 7, 8}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("a start in progress was wanted at %v s, want %v (from 5 s in)", got, want)
	}

	quick := newScenario(t, "quick", corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}})
	quick.cond(corev1.PodScheduled, 0)
	quick.update(0)
	quick.ticks(1, 4)
	quick.status(false, running("app", idMain, 1, true, true))
	quick.cond(corev1.ContainersReady, 4.5)
	quick.cond(corev1.PodReady, 4.5)
	quick.pod.Status.Phase = corev1.PodRunning
	quick.update(4.5)
	if got := wantedAt(New(Config{}), quick, 30); len(got) != 0 {
		t.Errorf("a start Ready at 4.5 s was wanted at %v s, want never", got)
	}
}

// failedAt2s is a pod whose one container (restartPolicy Never) exits 1:
// the API shows it Failed at 2.0 s.
func failedAt2s(t *testing.T, name string) *scenario {
	sc := startedApp(t, name, corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "app"}}})
	sc.events = append([]event.Event{&event.SourceStatus{Time: at(-1), Source: event.SourcePodEvents, Up: true}}, sc.events...)
	sc.exit(1.5, idMain, 700, 1)
	sc.status(false, terminated("app", idMain, 1, 0))
	sc.pod.Status.Phase = corev1.PodFailed
	sc.update(2.0)
	return sc
}

// endsAt feeds events and ticks every second to e, and returns the tick
// at which the pod's timeline came out (-1: none).
func endsAt(c *Correlator, events []event.Event, e float64) float64 {
	for _, ev := range events {
		if len(c.Handle(ev)) > 0 {
			return ev.When().Sub(t0).Seconds()
		}
	}
	for s := 3.0; s <= e; s++ {
		if len(c.Handle(&event.Tick{Time: at(s)})) > 0 {
			return s
		}
	}
	return -1
}

// TestEndedStartWaitsThreeSecondsForEvents: the README's "ended other
// than Ready (the timeline waits up to 3 s for them)". A start that failed
// at 2.0 s, with the pod_events source up, is derived at 5 s (3 s on)
// when its Events never come, and as soon as they do when they come.
func TestEndedStartWaitsThreeSecondsForEvents(t *testing.T) {
	sc := failedAt2s(t, "failed-unread")
	if got := endsAt(New(Config{}), sc.events, 10); got != 2.0+maxEventsWait.Seconds() || maxEventsWait != 3*time.Second {
		t.Errorf("without its Events the failed start ended at %v s, want 5 s (3 s after it failed)", got)
	}
	sc = failedAt2s(t, "failed-read")
	sc.events = append(sc.events, &event.PodEvents{Time: at(2.4), PodUID: sc.uid, Namespace: "default", Name: sc.pod.Name})
	if got := endsAt(New(Config{}), sc.events, 10); got != 3 {
		t.Errorf("with its Events read at 2.4 s the failed start ended at %v s, want at the next tick, 3 s", got)
	}
}

// TestKubeletEventsKeepTheLatest64: the README's "bounded (64 a pod)":
// 70 different Events read at once keep the latest 64.
func TestKubeletEventsKeepTheLatest64(t *testing.T) {
	var evs []event.PodEvent
	for i := range 70 {
		evs = append(evs, event.PodEvent{Type: "Normal", Reason: "Pulled", Message: fmt.Sprintf("event %d", i), Last: at(float64(i))})
	}
	var k kubeletEvents
	k.take(&event.PodEvents{Time: at(80), Events: evs})
	if len(k.list) != 64 || event.MaxPodEvents != 64 {
		t.Fatalf("kept %d Events of 70, want 64", len(k.list))
	}
	if k.list[0].Message != "event 6" || k.list[63].Message != "event 69" {
		t.Errorf("kept %q to %q, want the latest: event 6 to event 69", k.list[0].Message, k.list[63].Message)
	}
}
