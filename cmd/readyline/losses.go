package main

import (
	"math"

	"github.com/readyline/readyline/collector"
)

// lossSource is what lossCounter reads of a running source
// (collector.Source): its name (event.Source*) and its cumulative loss
// counts.
type lossSource interface {
	Name() string
	Losses() []collector.Loss
}

// lossCounter turns the sources' cumulative loss counts into increments of
// readyline_events_dropped_total{source,reason}: each poll adds what grew
// since the previous one, so nothing is counted twice; a count lower than
// before started over (a source that restarted its counters), and all of
// it is new. The first poll makes every series exist, at its count. Not
// safe for concurrent use: the correlator loop polls it.
type lossCounter struct {
	sources []lossSource
	last    map[lossKey]uint64
}

type lossKey struct{ source, reason string }

// poll reads every source's counts and adds their growth with add.
func (l *lossCounter) poll(add func(source, reason string, n int)) {
	if l == nil {
		return
	}
	if l.last == nil {
		l.last = make(map[lossKey]uint64)
	}
	for _, s := range l.sources {
		for _, loss := range s.Losses() {
			k := lossKey{s.Name(), loss.Reason}
			last, seen := l.last[k]
			l.last[k] = loss.N
			n := loss.N - last
			if loss.N < last {
				n = loss.N
			}
			if n > 0 || !seen {
				add(s.Name(), loss.Reason, int(min(n, math.MaxInt)))
			}
		}
	}
}
