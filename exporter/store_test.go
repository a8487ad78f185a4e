package exporter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter/apiclient"
)

func TestStoreAPIRoundTrip(t *testing.T) {
	s := NewStore(StoreLimits{Timelines: 10})
	s.Add(lifecycleDemo())
	s.Add(initFailureNever())
	srv := httptest.NewServer(ServeEveryPod(s.Handler(nil)))
	defer srv.Close()
	ctx := context.Background()

	got, err := apiclient.FetchTimeline(ctx, srv.URL, "default", "lifecycle-demo")
	if err != nil {
		t.Fatal(err)
	}
	if want := lifecycleDemo(); !reflect.DeepEqual(got, want) {
		t.Errorf("round trip changed the timeline:\n got %+v\nwant %+v", got, want)
	}

	if _, err := apiclient.FetchTimeline(ctx, srv.URL, "default", "nope"); !errors.Is(err, apiclient.ErrNotFound) {
		t.Errorf("missing pod: %v, want apiclient.ErrNotFound", err)
	}

	list, err := apiclient.ListTimelines(ctx, srv.URL+"/")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Name != "init-container-failure-never" || list[1].Name != "lifecycle-demo" {
		t.Fatalf("list %+v, want newest first", list)
	}
	if list[0].Outcome != correlator.OutcomeFailed || list[0].DurationSeconds != 1.63 || list[1].UID != lifecycleUID {
		t.Errorf("summaries %+v", list)
	}
}

// TestStoreAPIPretty: programs get compact answers; curl, wget and
// ?pretty=true indented ones, as from the Kubernetes API server.
func TestStoreAPIPretty(t *testing.T) {
	s := NewStore(StoreLimits{Timelines: 10})
	s.Add(lifecycleDemo())
	h := ServeEveryPod(s.Handler(nil))
	for _, tc := range []struct {
		path, agent string
		indented    bool
	}{
		{"/api/v1/timelines/default/lifecycle-demo", "Go-http-client/1.1", false},
		{"/api/v1/timelines/default/lifecycle-demo", "kubectl-readyline/v0.1 (linux/amd64)", false},
		{"/api/v1/timelines/default/lifecycle-demo", "curl/8.5.0", true},
		{"/api/v1/timelines/default/lifecycle-demo", "Wget/1.21.3", true},
		{"/api/v1/timelines/default/lifecycle-demo?pretty=true", "Go-http-client/1.1", true},
		{"/api/v1/timelines/default/lifecycle-demo?pretty=false", "curl/8.5.0", false},
		{"/api/v1/timelines", "Go-http-client/1.1", false},
		{"/api/v1/timelines?pretty=1", "Go-http-client/1.1", true},
		{"/api/v1/timelines?pretty=True", "Go-http-client/1.1", true},
		{"/api/v1/timelines?pretty=nope", "curl/8.5.0", false},
		{"/api/v1/timelines", "Mozilla/5.0 (X11; Linux x86_64)", false},
	} {
		r := httptest.NewRequest("GET", tc.path, nil)
		r.Header.Set("User-Agent", tc.agent)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		body := w.Body.String()
		if w.Code != 200 || !json.Valid(w.Body.Bytes()) {
			t.Fatalf("%s as %s: %d %s", tc.path, tc.agent, w.Code, body)
		}
		if indented := strings.Contains(body, "\n  \""); indented != tc.indented {
			t.Errorf("%s as %s: indented %v, want %v:\n%.200s", tc.path, tc.agent, indented, tc.indented, body)
		}
	}
}

func TestStoreEvictionBound(t *testing.T) {
	s := NewStore(StoreLimits{Timelines: 3})
	for i := range 10 {
		tl := lifecycleDemo()
		tl.Pod.UID = fmt.Sprintf("uid-%d", i)
		tl.Pod.Name = fmt.Sprintf("pod-%d", i)
		s.Add(tl)
		if s.Len() > 3 {
			t.Fatalf("after %d adds the store holds %d", i+1, s.Len())
		}
	}
	for i := range 10 {
		_, ok := s.Get("default", fmt.Sprintf("pod-%d", i))
		_, okUID := s.GetUID(fmt.Sprintf("uid-%d", i))
		if want := i >= 7; ok != want || okUID != want {
			t.Errorf("pod-%d stored %v/%v, want %v", i, ok, okUID, want)
		}
	}
	if n := len(s.byName); n != 3 {
		t.Errorf("name index holds %d entries, want 3", n)
	}
}

func TestStoreLatestStartWins(t *testing.T) {
	s := NewStore(StoreLimits{Timelines: 3})
	mk := func(uid string, start time.Time) *correlator.Timeline {
		tl := lifecycleDemo()
		tl.Pod.UID, tl.Start = uid, start
		return tl
	}
	newer, older := mk("new", t0.Add(time.Hour)), mk("old", t0)
	s.Add(newer)
	s.Add(older) // arrives later (late data) but started earlier
	if got, _ := s.Get("default", "lifecycle-demo"); got.Pod.UID != "new" {
		t.Errorf("got the start of %s, want the latest one", got.Pod.UID)
	}
	// Replacing the newer start's timeline (same UID) keeps it the answer.
	s.Add(mk("new", t0.Add(time.Hour)))
	if got, _ := s.Get("default", "lifecycle-demo"); got.Pod.UID != "new" {
		t.Errorf("after replace: %s", got.Pod.UID)
	}
	// Evicting the newer one falls back to the older one still stored.
	s.Add(mk("x1", t0))
	tlA := lifecycleDemo()
	tlA.Pod.Name, tlA.Pod.UID = "other", "a"
	s.Add(tlA) // evicts "old"
	tlB := lifecycleDemo()
	tlB.Pod.Name, tlB.Pod.UID = "other2", "b"
	s.Add(tlB) // evicts "new"
	if got, ok := s.Get("default", "lifecycle-demo"); !ok || got.Pod.UID != "x1" {
		t.Errorf("after evicting the latest: %v %v, want x1", got, ok)
	}
}

func TestStoreConcurrent(t *testing.T) {
	s := NewStore(StoreLimits{Timelines: 50})
	srv := httptest.NewServer(ServeEveryPod(s.Handler(nil)))
	defer srv.Close()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 100 {
				tl := lifecycleDemo()
				tl.Pod.UID = fmt.Sprintf("%d-%d", w, i)
				tl.Pod.Name = fmt.Sprintf("pod-%d", i%20)
				s.Add(tl)
				s.Get("default", tl.Pod.Name)
				s.List()
			}
		})
	}
	wg.Go(func() {
		for range 20 {
			if _, err := apiclient.ListTimelines(context.Background(), srv.URL); err != nil {
				t.Error(err)
			}
		}
	})
	wg.Wait()
	if s.Len() != 50 {
		t.Errorf("len %d", s.Len())
	}
}

// TestStoreByteBudget: timelines are evicted, oldest first, once their
// estimated size passes the byte budget, whatever the count allows; the
// latest is kept even when it alone is over.
func TestStoreByteBudget(t *testing.T) {
	one := newStoreEntry(lifecycleDemo()).size
	if b, _ := json.Marshal(lifecycleDemo()); one <= 0 || one > int64(len(b))/2 {
		t.Fatalf("stored size %d, want under half the JSON's %d", one, len(b))
	}
	s := NewStore(StoreLimits{Timelines: 100, Bytes: 3*one + one/2})
	for i := range 10 {
		tl := lifecycleDemo()
		tl.Pod.UID, tl.Pod.Name = fmt.Sprintf("uid-%d", i), fmt.Sprintf("pod-%d", i)
		s.Add(tl)
		if s.Bytes() > 3*one+one/2 {
			t.Fatalf("after %d adds the store holds %d bytes, over its budget %d", i+1, s.Bytes(), 3*one+one/2)
		}
	}
	if s.Len() != 3 {
		t.Errorf("%d timelines of %d bytes in a budget of %d, want 3", s.Len(), one, 3*one+one/2)
	}
	for i := 7; i < 10; i++ {
		if _, ok := s.GetUID(fmt.Sprintf("uid-%d", i)); !ok {
			t.Errorf("uid-%d, one of the latest, evicted", i)
		}
	}
	// Replacing a timeline (same UID) counts its new size, not both.
	before := s.Bytes()
	tl := lifecycleDemo()
	tl.Pod.UID, tl.Pod.Name = "uid-9", "pod-9"
	s.Add(tl)
	if s.Len() != 3 || s.Bytes() != before {
		t.Errorf("after replacing one: %d timelines, %d bytes; want 3 and %d", s.Len(), s.Bytes(), before)
	}

	// One timeline larger than the whole budget is still kept, alone. Its
	// reason does not compress.
	big := lifecycleDemo()
	big.Pod.UID, big.Pod.Name = "big", "big"
	var reason strings.Builder
	for i := range 64 * one {
		fmt.Fprintf(&reason, "%x", (i*2654435761)>>7)
	}
	big.Reason = reason.String()
	size := newStoreEntry(big).size
	s.Add(big)
	if got, ok := s.GetUID("big"); !ok || s.Len() != 1 || s.Bytes() != size || size <= 3*one+one/2 || got.Reason != big.Reason {
		t.Errorf("a timeline over the budget: stored %v, %d timelines, %d bytes (its size %d); want it alone, whole", ok, s.Len(), s.Bytes(), size)
	}
}

// A timeline no JSON can hold (a time past year 9999) is kept as it is and
// counted at unknownTimelineSize.
func TestStoreUnwritableTimeline(t *testing.T) {
	s := NewStore(StoreLimits{})
	tl := lifecycleDemo()
	tl.End = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	s.Add(tl)
	if got, ok := s.Get(tl.Pod.Namespace, tl.Pod.Name); !ok || got != tl || s.Bytes() != unknownTimelineSize {
		t.Errorf("stored %v (the same timeline: %v), %d bytes; want it as it is, %d", ok, got == tl, s.Bytes(), unknownTimelineSize)
	}
}

// Get decodes what Add stored: the timeline as it was, and a new copy
// each time (the UI and the API may change theirs).
func TestStoreKeepsTimelinesWhole(t *testing.T) {
	s := NewStore(StoreLimits{})
	for _, tl := range []*correlator.Timeline{lifecycleDemo(), initFailureNever()} {
		s.Add(tl)
	}
	for _, want := range []*correlator.Timeline{lifecycleDemo(), initFailureNever()} {
		got, ok := s.GetUID(want.Pod.UID)
		if !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: stored and decoded %v, not equal to what was added", want.Pod, ok)
		}
		again, _ := s.GetUID(want.Pod.UID)
		if again == got {
			t.Errorf("%s: Get returned the same timeline twice", want.Pod)
		}
	}
}

// TestStoreAPIByUID: a pod deleted and created again under its name is
// another pod: asked with its UID, the API answers that pod's start or
// none, never the earlier pod's that the name still leads to.
func TestStoreAPIByUID(t *testing.T) {
	s := NewStore(StoreLimits{Timelines: 10})
	first, second := lifecycleDemo(), lifecycleDemo()
	second.Pod.UID = "uid-second"
	s.Add(first)
	srv := httptest.NewServer(ServeEveryPod(s.Handler(nil)))
	defer srv.Close()
	ctx := context.Background()
	if _, err := apiclient.FetchTimelineUID(ctx, srv.URL, "default", "lifecycle-demo", second.Pod.UID); !errors.Is(err, apiclient.ErrNotFound) {
		t.Errorf("the new pod before its start is kept: %v, want apiclient.ErrNotFound (not the earlier pod's start)", err)
	}
	s.Add(second)
	for _, uid := range []string{first.Pod.UID, second.Pod.UID} {
		got, err := apiclient.FetchTimelineUID(ctx, srv.URL, "default", "lifecycle-demo", uid)
		if err != nil || got.Pod.UID != uid {
			t.Errorf("uid %s: got %v, %v", uid, got, err)
		}
	}
	if _, err := apiclient.FetchTimelineUID(ctx, srv.URL, "other", "lifecycle-demo", first.Pod.UID); !errors.Is(err, apiclient.ErrNotFound) {
		t.Errorf("the uid of a pod of another namespace: %v, want apiclient.ErrNotFound", err)
	}
	if got, err := apiclient.FetchTimeline(ctx, srv.URL, "default", "lifecycle-demo"); err != nil || got.Pod.UID != second.Pod.UID {
		t.Errorf("by name alone: %v, %v, want the latest start", got, err)
	}
}
