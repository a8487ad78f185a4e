package collector

import (
	"time"

	"github.com/readyline/readyline/collector/event"
)

// drainEvery is how often at most a ring source says it has drained: a
// start waiting for it waits at most that much, or a poll, longer.
const drainEvery = 20 * time.Millisecond

// drainNotice turns a ring reader's drained calls into event.Drained in
// the source's stream, at most one per drainEvery.
type drainNotice struct {
	source string
	emit   func(event.Event)
	limit  drainLimit
}

func (d *drainNotice) at(t time.Time) {
	if d.limit.due(t) {
		d.emit(&event.Drained{Time: t.UTC(), Source: d.source})
	}
}

// drainLimit lets one drained mark through per drainEvery.
type drainLimit struct{ last time.Time }

func (l *drainLimit) due(t time.Time) bool {
	if !l.last.IsZero() && t.Sub(l.last) < drainEvery {
		return false
	}
	l.last = t
	return true
}
