package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/readyline/readyline/exporter/podstartapi"
)

func start(ns, name, uid, node, outcome string, at time.Time) *podstartapi.PodStart {
	return &podstartapi.PodStart{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)},
		Spec:       podstartapi.PodStartSpec{NodeName: node, PodUID: uid},
		Status:     podstartapi.PodStartStatus{Outcome: outcome, StartTime: metav1.NewTime(at)},
	}
}

func all(*podstartapi.PodStart) bool { return true }

// fixedClock is a clock that stands still: versions then come from the
// counter alone.
func fixedClock() time.Time { return time.Unix(1, 0) }

func next(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch closed")
		}
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no event in 5s")
	}
	return watch.Event{}
}

func TestSummariesReplaceNodeTellsChanges(t *testing.T) {
	s := newSummaries(100, fixedClock)
	t0 := time.Unix(1000, 0)
	w, err := s.Watch(context.Background(), 0, false, all)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	s.ReplaceNode("n1", []*podstartapi.PodStart{start("a", "web", "u1", "n1", "starting", t0)})
	if ev := next(t, w); ev.Type != watch.Added || ev.Object.(*podstartapi.PodStart).Name != "web" {
		t.Fatalf("first event %v %+v, want ADDED web", ev.Type, ev.Object)
	}
	// The same again: no event. Then the outcome: modified.
	s.ReplaceNode("n1", []*podstartapi.PodStart{start("a", "web", "u1", "n1", "starting", t0)})
	s.ReplaceNode("n1", []*podstartapi.PodStart{start("a", "web", "u1", "n1", "ready", t0)})
	ev := next(t, w)
	if ev.Type != watch.Modified || ev.Object.(*podstartapi.PodStart).Status.Outcome != "ready" {
		t.Fatalf("second event %v %+v, want MODIFIED ready (an unchanged report is no event)", ev.Type, ev.Object)
	}
	// The pod made again on another node: its newer start wins, and the
	// first node forgetting the old one changes nothing.
	s.ReplaceNode("n2", []*podstartapi.PodStart{start("a", "web", "u2", "n2", "starting", t0.Add(time.Minute))})
	if ev := next(t, w); ev.Type != watch.Modified || ev.Object.(*podstartapi.PodStart).Spec.NodeName != "n2" {
		t.Fatalf("third event %v %+v, want MODIFIED on n2", ev.Type, ev.Object)
	}
	if got, _ := s.List("a", all); len(got) != 1 || got[0].Spec.NodeName != "n2" {
		t.Fatalf("namespace a: %+v, want web on n2", got)
	}
	if got, _ := s.List("b", all); len(got) != 0 {
		t.Fatalf("namespace b: %+v, want none", got)
	}
	s.ReplaceNode("n1", []*podstartapi.PodStart{})
	s.ReplaceNode("n2", nil)
	if ev := next(t, w); ev.Type != watch.Deleted {
		t.Fatalf("fourth event %v, want DELETED once no node has the pod (n1's forgetting was no event)", ev.Type)
	}
	if got, _ := s.List("", all); len(got) != 0 {
		t.Fatalf("list after every node forgot: %d starts", len(got))
	}
	if got, _ := s.List("a", all); len(got) != 0 || s.sorted.Len() != 0 || len(s.owners) != 0 {
		t.Fatalf("after every node forgot: namespace a %d starts, %d keys sorted and %d indexed", len(got), s.sorted.Len(), len(s.owners))
	}
	if nodes := s.Nodes(); len(nodes) != 1 || nodes[0] != "n1" {
		t.Fatalf("nodes %v, want [n1] (n2 forgotten, n1 reported none)", nodes)
	}
}

func TestSummariesWatchResumesAndExpires(t *testing.T) {
	s := newSummaries(3, fixedClock)
	t0 := time.Unix(1000, 0)
	var rvs []uint64
	for i, name := range []string{"a", "b", "c", "d", "e"} {
		var starts []*podstartapi.PodStart
		for _, n := range []string{"a", "b", "c", "d", "e"}[:i+1] {
			starts = append(starts, start("ns", n, "u-"+n, "n1", "starting", t0))
		}
		s.ReplaceNode("n1", starts)
		_, rv := s.List("", all)
		rvs = append(rvs, rv)
		_ = name
	}
	// History holds the last 3 changes (c, d, e): from b's version the
	// watch resumes with c, d and e; from a's it is expired.
	w, err := s.Watch(context.Background(), rvs[1], false, all)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"c", "d", "e"} {
		if ev := next(t, w); ev.Object.(*podstartapi.PodStart).Name != want {
			t.Fatalf("resumed %s, want %s", ev.Object.(*podstartapi.PodStart).Name, want)
		}
	}
	w.Stop()
	if _, err := s.Watch(context.Background(), rvs[0], false, all); !apierrors.IsResourceExpired(err) {
		t.Fatalf("watch from a version before the history: %v, want 410 Expired", err)
	}
	// Versions rise with the clock, and by one when it stands still.
	for i := 1; i < len(rvs); i++ {
		if rvs[i] <= rvs[i-1] {
			t.Fatalf("versions %v do not rise", rvs)
		}
	}
}

func TestSummariesWatchMatchesAndStops(t *testing.T) {
	s := newSummaries(100, nil)
	t0 := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := s.Watch(ctx, 0, false, func(ps *podstartapi.PodStart) bool { return ps.Namespace == "mine" })
	if err != nil {
		t.Fatal(err)
	}
	s.ReplaceNode("n1", []*podstartapi.PodStart{start("other", "x", "u1", "n1", "starting", t0), start("mine", "y", "u2", "n1", "starting", t0)})
	if ev := next(t, w); ev.Object.(*podstartapi.PodStart).Namespace != "mine" {
		t.Fatalf("watch of namespace mine got %+v", ev.Object)
	}
	cancel()
	select {
	case _, ok := <-w.ResultChan():
		if ok {
			t.Fatal("an event after the watch's context ended")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the watch's channel stays open after its context ended")
	}
}

func TestSummariesSlowWatcherIsClosed(t *testing.T) {
	s := newSummaries(10, fixedClock)
	w, err := s.Watch(context.Background(), 0, false, all)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1000, 0)
	for i := range watchBuffer + 10 {
		s.ReplaceNode("n1", []*podstartapi.PodStart{start("ns", "p", "u", "n1", "starting", t0.Add(time.Duration(i)*time.Second))})
	}
	n := 0
	for range w.ResultChan() {
		n++
	}
	if n != watchBuffer {
		t.Fatalf("a watcher that never read got %d events before it was closed, want %d (its buffer)", n, watchBuffer)
	}
}

// TestSummariesWatchResumesOnTheOtherReplica: a watch that ends with one
// replica and resumes on the other with the first one's version gets what
// the second learned before that version and the first after it (a poll
// apart), and is sent to list again when the second's history does not
// reach back far enough (it started later).
func TestSummariesWatchResumesOnTheOtherReplica(t *testing.T) {
	t0 := time.Unix(1000, 0)
	now := t0
	clock := func() time.Time { return now }
	a, b := newSummaries(100, clock), newSummaries(100, clock)
	a.resumeSkew, b.resumeSkew = 10*time.Second, 10*time.Second
	y := start("ns", "y", "u-y", "n1", "starting", t0)
	z := start("ns", "z", "u-z", "n2", "starting", t0)

	now = t0.Add(20 * time.Second)
	b.ReplaceNode("n1", []*podstartapi.PodStart{y}) // b polls n1 first
	now = t0.Add(21 * time.Second)
	a.ReplaceNode("n2", []*podstartapi.PodStart{z})
	b.ReplaceNode("n2", []*podstartapi.PodStart{z})
	_, seen := a.List("", all) // the client's version, from a: z, not y
	now = t0.Add(24 * time.Second)
	a.ReplaceNode("n1", []*podstartapi.PodStart{y}) // a's poll of n1, after the client left

	w, err := b.Watch(context.Background(), seen, false, all)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	got := map[string]bool{}
	for quiet := false; !quiet; {
		select {
		case ev := <-w.ResultChan():
			got[ev.Object.(*podstartapi.PodStart).Name] = true
		case <-time.After(200 * time.Millisecond):
			quiet = true
		}
	}
	if !got["y"] {
		t.Errorf("resumed on the other replica from version %d: got %v, want y, which it learned a second before", seen, got)
	}

	// A watch from a version of a replica's first seconds (a list then a
	// watch, kubectl get -w on a replica just started): served.
	young := newSummaries(100, clock)
	young.resumeSkew = 10 * time.Second
	now = now.Add(time.Second)
	young.ReplaceNode("n1", []*podstartapi.PodStart{y})
	_, v := young.List("", all)
	if w, err := young.Watch(context.Background(), v, false, all); err != nil {
		t.Errorf("a watch from a version a second into the replica's life: %v", err)
	} else {
		w.Stop()
	}

	// A replica started after the version: expired.
	now = t0.Add(25 * time.Second)
	late := newSummaries(100, clock)
	late.resumeSkew = 10 * time.Second
	if _, err := late.Watch(context.Background(), seen, false, all); !apierrors.IsResourceExpired(err) {
		t.Errorf("a watch from before the replica started: %v, want 410 Expired", err)
	}
}

// TestSummariesWatchSendsInitialEvents: a watch of sendInitialEvents (an
// informer's list) gets every start as added, however many, then a
// bookmark marking their end at the store's version.
func TestSummariesWatchSendsInitialEvents(t *testing.T) {
	s := newSummaries(100, nil)
	var starts []*podstartapi.PodStart
	for i := range 2*watchBuffer + 5 {
		starts = append(starts, start("ns", fmt.Sprintf("p%d", i), fmt.Sprint(i), "n1", "ready", time.Now()))
	}
	s.ReplaceNode("n1", starts)
	_, rv := s.List("", all)
	w, err := s.Watch(context.Background(), rv, true, all)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for i := range len(starts) {
		if ev := next(t, w); ev.Type != watch.Added {
			t.Fatalf("initial event %d: %s, want ADDED", i, ev.Type)
		}
	}
	ev := next(t, w)
	ps, _ := ev.Object.(*podstartapi.PodStart)
	if ev.Type != watch.Bookmark || ps == nil || ps.Annotations[metav1.InitialEventsAnnotationKey] != "true" || ps.ResourceVersion != formatRV(rv) {
		t.Errorf("after the %d starts: %s %+v, want a bookmark of the initial events' end at %d", len(starts), ev.Type, ev.Object, rv)
	}
}
