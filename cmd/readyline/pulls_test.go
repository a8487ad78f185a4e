package main

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/readyline/readyline/collector/event"
)

// TestWithProgress: only a PullImage in flight is asked about and given
// its progress, on a copy; the kernel map's calls stay as they were; a
// runtime that cannot tell leaves the call without.
func TestWithProgress(t *testing.T) {
	t0 := time.Unix(1000, 0)
	pulling := &event.CRICall{Method: event.CRIPullImage, Image: "registry/x:1", Time: t0}
	pulled := &event.CRICall{Method: event.CRIPullImage, Image: "registry/y:1", Time: t0, End: t0.Add(time.Second)}
	starting := &event.CRICall{Method: event.CRIStartContainer, Time: t0}
	calls := []*event.CRICall{pulling, pulled, starting}
	var asked []string
	progress := func(_ context.Context, image string, since time.Time) (*event.PullProgress, error) {
		asked = append(asked, image)
		if !since.Equal(t0) {
			t.Errorf("asked since %v, want the call's start", since)
		}
		return &event.PullProgress{Bytes: 42}, nil
	}
	got := withProgress(context.Background(), calls, progress)
	if len(asked) != 1 || asked[0] != "registry/x:1" {
		t.Errorf("asked about %q, want the pull in flight alone", asked)
	}
	if got[0].Progress == nil || got[0].Progress.Bytes != 42 || got[1] != pulled || got[2] != starting {
		t.Errorf("calls %+v: want the pull in flight with its progress, the others as they were", got)
	}
	if pulling.Progress != nil {
		t.Error("the kernel map's call was changed")
	}
	failing := func(context.Context, string, time.Time) (*event.PullProgress, error) { return nil, errNoRuntime }
	if got := withProgress(context.Background(), calls, failing); got[0] != pulling {
		t.Error("a runtime that cannot tell: the call was replaced")
	}
}

// countingStore is a content store that counts its questions.
type countingStore struct{ asked int }

func (c *countingStore) Progress(context.Context, string, time.Time) (*event.PullProgress, error) {
	c.asked++
	return &event.PullProgress{Bytes: int64(c.asked)}, nil
}
func (c *countingStore) Close() error { return nil }

// TestPullProgressFresh: a pull asked about again within a second gets the
// same answer without a question to the content store; after it, or
// another pull, asks again.
func TestPullProgressFresh(t *testing.T) {
	store := &countingStore{}
	now := time.Unix(2000, 0)
	p := &pullProgress{endpoint: func() string { return "unix:///run/containerd.sock" }, now: func() time.Time { return now },
		open: func(string) (progressReader, error) { return store, nil }}
	since := time.Unix(1990, 0)
	ask := func(image string) int64 {
		pp, err := p.Progress(context.Background(), image, since)
		if err != nil {
			t.Fatal(err)
		}
		return pp.Bytes
	}
	if a, b := ask("x:1"), ask("x:1"); a != 1 || b != 1 || store.asked != 1 {
		t.Errorf("answers %d, %d after %d questions: want one question within the second", a, b, store.asked)
	}
	if ask("y:1"); store.asked != 2 {
		t.Errorf("%d questions, want another pull asked about", store.asked)
	}
	now = now.Add(progressFresh)
	if got := ask("x:1"); got != 3 || len(p.recent) != 1 {
		t.Errorf("answer %d with %d kept, want a new question after a second and the old answers gone", got, len(p.recent))
	}
}

// slowStore is a content store whose answer takes took on the test's
// clock, and fails with err.
type slowStore struct {
	now  *time.Time
	took time.Duration
	err  error
}

func (s *slowStore) Progress(context.Context, string, time.Time) (*event.PullProgress, error) {
	*s.now = s.now.Add(s.took)
	return &event.PullProgress{}, s.err
}
func (s *slowStore) Close() error { return nil }

// TestPullProgressReadsTold: each read of the content store is told with
// its time, a failed one too; an answer given again within a second is not
// a read.
func TestPullProgressReadsTold(t *testing.T) {
	now := time.Unix(2000, 0)
	store := &slowStore{now: &now, took: 20 * time.Millisecond}
	var reads []time.Duration
	p := &pullProgress{endpoint: func() string { return "unix:///run/containerd.sock" }, now: func() time.Time { return now },
		open: func(string) (progressReader, error) { return store, nil }, read: func(d time.Duration) { reads = append(reads, d) }}
	since := time.Unix(1990, 0)
	p.Progress(context.Background(), "x:1", since)
	p.Progress(context.Background(), "x:1", since) // the same answer, within the second
	store.took, store.err = 5*time.Millisecond, errNoRuntime
	if _, err := p.Progress(context.Background(), "y:1", since); err == nil {
		t.Fatal("a failed read answered")
	}
	if want := []time.Duration{20 * time.Millisecond, 5 * time.Millisecond}; !slices.Equal(reads, want) {
		t.Errorf("reads told %v, want %v", reads, want)
	}
}
