package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/readyline/readyline/collector/event"
	"github.com/readyline/readyline/collector/podevents"
	"github.com/readyline/readyline/correlator"
)

// TestEventReadsSchedule: the README's "in progress 5 s (then 10, 20, 40
// and 80 s in, and every minute after)". The correlator wants a start's
// Events from 5 s in, at each tick (correlator's
// TestEventsWantedFiveSecondsIn); the reads double their interval from
// 5 s to a minute.
func TestEventReadsSchedule(t *testing.T) {
	r := newEventReads(nil, nil)
	start := time.Unix(1000, 0)
	want := correlator.EventsWanted{Query: correlator.Query{UID: "u", Namespace: "default", Name: "p"}}
	var read []float64
	for s := 5; s <= 260; s++ { // a tick a second, from 5 s in
		r.schedule([]correlator.EventsWanted{want}, start.Add(time.Duration(s)*time.Second))
		for len(r.wants) > 0 {
			<-r.wants
			read = append(read, float64(s))
		}
	}
	if got, want := fmt.Sprint(read), fmt.Sprint([]float64{5, 10, 20, 40, 80, 140, 200, 260}); got != want {
		t.Errorf("a start in progress had its Events read at %s s, want %s", got, want)
	}
	// An ended start is read once, at once.
	ended := want
	ended.UID, ended.Ended = "v", true
	r.schedule([]correlator.EventsWanted{ended}, start.Add(300*time.Second))
	r.schedule([]correlator.EventsWanted{ended}, start.Add(301*time.Second))
	if n := len(r.wants); n != 1 {
		t.Errorf("an ended start was read %d times, want once", n)
	}
}

// countingLister lists no Events and counts the lists.
type countingLister struct{ n *int }

func (l countingLister) List(context.Context, metav1.ListOptions) (*corev1.EventList, error) {
	*l.n++
	return &corev1.EventList{}, nil
}

// TestEventReadsForQuestions: the README's "asked about (at most every
// 5 s)". A second question within 5 s reads nothing; one 5 s after the
// last read reads again.
func TestEventReadsForQuestions(t *testing.T) {
	lists := 0
	reader, err := podevents.NewReader(podevents.Config{Events: func(string) podevents.EventLister { return countingLister{&lists} }}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := newEventReads(reader, slog.New(slog.DiscardHandler))
	q := correlator.Query{UID: "u", Namespace: "default", Name: "p"}
	emit := func(event.Event) {}
	r.readForQuestion(context.Background(), q, emit)
	r.readForQuestion(context.Background(), q, emit)
	if lists != 1 {
		t.Fatalf("two questions at once listed the Events %d times, want once", lists)
	}
	key := q.UID + "/" + q.Namespace + "/" + q.Name
	r.asked[key] = time.Now().Add(-4900 * time.Millisecond)
	r.readForQuestion(context.Background(), q, emit)
	if lists != 1 {
		t.Errorf("a question 4.9 s after a read listed the Events again")
	}
	r.asked[key] = time.Now().Add(-5 * time.Second)
	r.readForQuestion(context.Background(), q, emit)
	if lists != 2 {
		t.Errorf("a question 5 s after a read listed the Events %d times in all, want 2", lists)
	}
}

// TestNodeAPIEventsShare: the share the aggregator sends with its list
// bounds the node's background Events reads; a malformed or infinite one,
// or one on another path, changes nothing.
func TestNodeAPIEventsShare(t *testing.T) {
	reader, err := podevents.NewReader(podevents.Config{
		Events: func(string) podevents.EventLister { return nil }}, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := &daemon{reads: newEventReads(reader, slog.New(slog.DiscardHandler))}
	h := d.withEventsShare(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	for _, c := range []struct {
		target string
		want   float64
	}{
		{"/api/v1/timelines?waiting=1&eventsShare=Inf", 2},
		{"/api/v1/timelines?eventsShare=-1", 2},
		{"/api/v1/timelines?eventsShare=x", 2},
		{"/api/v1/timelines/default/p?eventsShare=0.01", 2},
		{"/api/v1/timelines?waiting=1&eventsShare=0.01", 0.01},
	} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, c.target, nil))
		if got := reader.Share(); got != c.want {
			t.Errorf("after %s: the background reads' rate is %v, want %v", c.target, got, c.want)
		}
	}
}
