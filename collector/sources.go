package collector

import (
	"context"

	"github.com/readyline/readyline/collector/event"
)

// Source is a source as the daemon runs it and accounts for it, whatever
// it watches: its name, its events, what it lost and its kernel ring
// buffer. Name, Losses and Ring are safe for concurrent use, also with
// Run. NodeSources.Sources returns the node's sources so.
type Source interface {
	// Name is the source in its events, the metrics and the logs (an
	// event.Source* word).
	Name() string
	// Run hands the source's events to emit until ctx is done and
	// returns nil on cancellation (each source's Run says more).
	Run(ctx context.Context, emit func(event.Event)) error
	// Losses are the source's cumulative loss counts (its Stats' Losses).
	Losses() []Loss
	// Ring is the usage of the source's kernel ring buffer; ok is false
	// for a source that has none.
	Ring() (u RingUsage, ok bool)
}

// Name is event.SourceRuntime.
func (s *RuntimeSource) Name() string { return event.SourceRuntime }

// Losses are Stats().Losses().
func (s *RuntimeSource) Losses() []Loss { return s.Stats().Losses() }

// Ring is not ok: the runtime's API has no ring buffer.
func (s *RuntimeSource) Ring() (RingUsage, bool) { return RingUsage{}, false }

// Name is event.SourcePodWatch.
func (w *PodWatch) Name() string { return event.SourcePodWatch }

// Losses are Stats().Losses(), which need none of its counters: not read
// (Stats counts the informer's cache, a list of its pods, and the losses
// are polled every second).
func (w *PodWatch) Losses() []Loss { return PodWatchStats{}.Losses() }

// Ring is not ok: the watch has no ring buffer.
func (w *PodWatch) Ring() (RingUsage, bool) { return RingUsage{}, false }
