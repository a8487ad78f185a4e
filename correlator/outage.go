package correlator

import (
	"time"

	"github.com/readyline/readyline/collector/event"
)

// Outages of the pod watch. The watch says when it breaks and when it has
// relisted (event.SourceStatus of event.SourcePodWatch). While it is down
// the node goes on: pods are created (the API server may well be up for
// the kubelet and down only for readyline's watch), start and become Ready,
// and their kernel events and CRI calls come in for pods readyline has not
// seen. So:
//
//   - held events (orphans.go) are not expired while the watch is down, and
//     get OrphanTTL from its return: the pods they belong to show up in the
//     relist. They stay bounded by MaxPods, MaxProcessesPerPod and
//     MaxOrphanBytes.
//   - a pod first seen already Ready is traced, not taken for a start that
//     happened before readyline, when the node saw its start from the
//     sandbox on (sawStartOnNode) and the watch was down at some moment
//     between the pod's first node fact and its first sight.
//
// What the API delivered late (the conditions' observations) is apilag.go.

// maxOutages bounds the outages remembered.
const maxOutages = 16

// podWatch is what the correlator knows of the pod watch's outages; times
// are event times, except upAt.
type podWatch struct {
	down  bool
	since time.Time // the current outage's beginning
	// upAt is the correlator's clock at the latest return: held events get
	// OrphanTTL from it.
	upAt time.Time
	// outages are the latest outages ended, oldest first.
	outages []outage
}

type outage struct{ from, to time.Time }

// noteSource takes a source's status; the pod watch's changes its outages.
func (c *Correlator) noteSource(e *event.SourceStatus) {
	if e.Source != event.SourcePodWatch {
		return
	}
	w := &c.watch
	from := e.Time
	if !e.Since.IsZero() && e.Since.Before(from) {
		from = e.Since
	}
	switch {
	case !e.Up && !w.down:
		w.down, w.since = true, from
	case !e.Up && from.Before(w.since):
		w.since = from
	case e.Up && w.down:
		w.down = false
		w.outages = append(w.outages, outage{from: w.since, to: e.Time})
		if len(w.outages) > maxOutages {
			w.outages = w.outages[1:]
		}
		w.upAt = c.clock.now
	}
}

// orphanTTLFrom is the moment held events' OrphanTTL runs from: their first
// event, or the pod watch's return when later. ok is false while the watch
// is down: nothing held expires then.
func (c *Correlator) orphanTTLFrom(o *orphanEvents) (time.Time, bool) {
	if c.watch.down {
		return time.Time{}, false
	}
	return latest(o.first, c.watch.upAt), true
}

// watchMissedStart reports whether the pod watch was down at some moment
// between the first of a pod's node facts (early) and its first sight at
// seen: the pod may have started, and become Ready, out of the watch's
// sight though in the node's.
func (c *Correlator) watchMissedStart(early []event.Event, seen time.Time) bool {
	var first time.Time
	for _, ev := range early {
		first = earliest(first, sightOf(ev))
	}
	if first.IsZero() {
		return false
	}
	w := &c.watch
	if w.down && !w.since.After(seen) {
		return true
	}
	for _, o := range w.outages {
		if !o.from.After(seen) && !o.to.Before(first) {
			return true
		}
	}
	return false
}
