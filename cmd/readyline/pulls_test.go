package main

import (
	"context"
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
