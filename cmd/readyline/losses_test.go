package main

import (
	"maps"
	"testing"

	"github.com/readyline/readyline/collector"
	"github.com/readyline/readyline/collector/event"
)

// TestLossCounter: each poll adds what every count grew by since the last,
// never twice; the first poll makes each series exist (with what was lost
// before it); a count that went down started over.
func TestLossCounter(t *testing.T) {
	ring, decode := uint64(0), uint64(0)
	l := &lossCounter{sources: []lossSource{lossesOf{event.SourceProcess, func() []collector.Loss {
		return []collector.Loss{{Reason: event.ReasonRingFull, N: ring}, {Reason: event.ReasonDecodeError, N: decode}}
	}}}}
	poll := func() map[string]int {
		got := map[string]int{}
		l.poll(func(source, reason string, n int) {
			if _, twice := got[reason]; twice || source != event.SourceProcess {
				t.Errorf("%s %s added again, or by another source", source, reason)
			}
			got[reason] = n
		})
		return got
	}
	ring = 5
	for i, step := range []struct {
		ring, decode uint64
		want         map[string]int
	}{
		{5, 0, map[string]int{event.ReasonRingFull: 5, event.ReasonDecodeError: 0}}, // series made, at 0 too
		{5, 0, map[string]int{}},
		{12, 1, map[string]int{event.ReasonRingFull: 7, event.ReasonDecodeError: 1}},
		{12, 1, map[string]int{}},
		{3, 1, map[string]int{event.ReasonRingFull: 3}}, // started over
		{4, 2, map[string]int{event.ReasonRingFull: 1, event.ReasonDecodeError: 1}},
	} {
		ring, decode = step.ring, step.decode
		if got := poll(); !maps.Equal(got, step.want) {
			t.Errorf("poll %d (ring %d, decode %d): added %v, want %v", i, ring, decode, got, step.want)
		}
	}
	var none *lossCounter
	none.poll(func(string, string, int) { t.Error("a nil lossCounter added") })
}

// lossesOf is a lossSource named name whose counts losses returns.
type lossesOf struct {
	name   string
	losses func() []collector.Loss
}

func (l lossesOf) Name() string             { return l.name }
func (l lossesOf) Losses() []collector.Loss { return l.losses() }
