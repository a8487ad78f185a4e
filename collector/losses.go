package collector

import "github.com/readyline/readyline/collector/event"

// Loss is how many records a source lost for one reason (an event.Reason*
// word) since it started: a cumulative count, for
// readyline_events_dropped_total{source,reason}. Each source's Stats says
// which counts are losses through its Losses method, so the daemon adds up
// every source alike.
type Loss struct {
	Reason string
	N      uint64
}

// Losses are the runtime events the source dropped because Run fell
// behind the stream (a resync follows: states are caught up, the moments
// they changed are not), and the Observe calls dropped because their queue
// was full (the next list finds those containers, later).
func (s RuntimeStats) Losses() []Loss {
	return []Loss{
		{event.ReasonStreamBehind, s.EventsDropped},
		{event.ReasonObserveQueueFull, s.ObserveDropped},
	}
}

// Losses is empty: the watch drops nothing it could count. A broken watch
// is a blind window instead (its SourceStatus events), and the relist that
// ends it catches up with the pods' states, not with each update missed.
func (s PodWatchStats) Losses() []Loss { return nil }
