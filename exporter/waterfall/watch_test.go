package waterfall

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	cri "github.com/readyline/readyline/collector/event"
	"github.com/readyline/readyline/correlator"
)

// TestWatchDrawsOnNewFacts: a start in progress is drawn first, then only
// when it took new facts or its pull new bytes, and once more when it
// ended; the watch ends then.
func TestWatchDrawsOnNewFacts(t *testing.T) {
	now := time.Now()
	answers := []correlator.Timeline{
		{Outcome: correlator.OutcomeStarting, Facts: 3, AsOf: now},
		{Outcome: correlator.OutcomeStarting, Facts: 3, AsOf: now},
		{Outcome: correlator.OutcomeStarting, Facts: 5, AsOf: now},
		{Outcome: correlator.OutcomeStarting, Facts: 5, AsOf: now, InFlight: pulled(0)},
		{Outcome: correlator.OutcomeStarting, Facts: 5, AsOf: now, InFlight: pulled(0)},
		{Outcome: correlator.OutcomeStarting, Facts: 5, AsOf: now, InFlight: pulled(12e6)}, // bytes moved
		{Outcome: correlator.OutcomeReady},                                                 // ended: no longer a snapshot
		{Outcome: correlator.OutcomeReady},                                                 // never asked
	}
	asked := 0
	var drawn []int
	var agains []bool
	err := Watch(context.Background(), func(context.Context) (*correlator.Timeline, error) {
		tl := answers[asked]
		asked++
		return &tl, nil
	}, func(tl *correlator.Timeline, again bool) error {
		drawn = append(drawn, asked)
		agains = append(agains, again)
		return nil
	})
	if err != nil || asked != 7 {
		t.Fatalf("watch: %v after %d asks, want nil after 7", err, asked)
	}
	if want := []int{1, 3, 6, 7}; !slices.Equal(drawn, want) || agains[0] || !agains[1] {
		t.Errorf("drawn after asks %v (again %v), want %v, the first not again", drawn, agains, want)
	}
	// The first fetch failing is the error.
	boom := errors.New("no daemon")
	if err := Watch(context.Background(), func(context.Context) (*correlator.Timeline, error) { return nil, boom },
		func(*correlator.Timeline, bool) error { return nil }); !errors.Is(err, boom) {
		t.Errorf("a first fetch failing: %v", err)
	}
}

// pulled is a PullImage in flight that has written n bytes.
func pulled(n int64) []correlator.InFlightCall {
	return []correlator.InFlightCall{{Method: cri.CRIPullImage, Image: "registry/big:1", Progress: &cri.PullProgress{Bytes: n, Total: 270e6}}}
}
