package main

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/readyline/readyline/collector/event"
	"github.com/readyline/readyline/collector/podevents"
	"github.com/readyline/readyline/correlator"
)

// eventReads reads the Events of the starts that need them, as the
// correlator says (correlator.WantEvents), and hands them to the loop as
// event.PodEvents. A start in progress has them read 5 s in, then 10,
// 20, 40 and 80 s in (the interval doubles) and every 60 s after; a start
// that ended other than Ready at once; a start asked about (explain) at
// most every eventsAskedEvery. All reads share the reader's rate limit.
type eventReads struct {
	reader *podevents.Reader
	logger *slog.Logger
	// wants goes from the loop to the reading goroutine (Run).
	wants chan correlator.EventsWanted
	// next and every are the loop's: when each start is due, and its
	// current interval.
	next  map[string]time.Time
	every map[string]time.Duration
	ended map[string]bool

	mu    sync.Mutex
	asked map[string]time.Time // explain's reads, by pod (readForQuestion)
	down  string               // the reason the source is down, "" while up
}

// Intervals of the reads of a start in progress.
const (
	eventsFirstEvery = 5 * time.Second
	eventsMaxEvery   = time.Minute
	eventsAskedEvery = 5 * time.Second
	// eventsQuestionWait bounds what a question waits for the pod's Events
	// before it is answered without fresh ones.
	eventsQuestionWait = 500 * time.Millisecond
)

func newEventReads(reader *podevents.Reader, logger *slog.Logger) *eventReads {
	return &eventReads{reader: reader, logger: logger, wants: make(chan correlator.EventsWanted, 64),
		next: map[string]time.Time{}, every: map[string]time.Duration{}, ended: map[string]bool{}, asked: map[string]time.Time{}}
}

// schedule is the loop's side: it queues the reads due among wants (at
// now), without waiting: a read that finds the queue full is due again at
// the next tick. A start that ended is read once.
func (r *eventReads) schedule(wants []correlator.EventsWanted, now time.Time) {
	if r == nil {
		return
	}
	live := make(map[string]bool, len(wants))
	for _, w := range wants {
		uid := w.UID
		live[uid] = true
		if r.ended[uid] || (!w.Ended && now.Before(r.next[uid])) {
			continue
		}
		select {
		case r.wants <- w:
		default:
			continue
		}
		every := min(max(2*r.every[uid], eventsFirstEvery), eventsMaxEvery)
		r.every[uid], r.next[uid], r.ended[uid] = every, now.Add(every), w.Ended
	}
	for uid := range r.next {
		if !live[uid] {
			delete(r.next, uid)
			delete(r.every, uid)
			delete(r.ended, uid)
		}
	}
}

// Run reads what schedule queued and emits it, with the source's status
// as it changes (first Up, at once: the correlator then waits for the
// Events of starts that end other than Ready), until ctx is done.
func (r *eventReads) Run(ctx context.Context, emit func(event.Event)) error {
	emit(&event.SourceStatus{Time: time.Now().UTC(), Source: event.SourcePodEvents, Up: true})
	for {
		select {
		case <-ctx.Done():
			return nil
		case w := <-r.wants:
			for _, ev := range r.read(ctx, w.Query, podevents.Background, emit, w.Claims...) {
				emit(ev)
			}
		}
	}
}

// read reads the Events of the pod q names (and of its claims) and says,
// with emit, when the source goes down or comes back.
func (r *eventReads) read(ctx context.Context, q correlator.Query, why bool, emit func(event.Event), claims ...string) []*event.PodEvents {
	evs, err := r.reader.Read(ctx, q.Namespace, q.Name, q.UID, why, claims...)
	if err != nil && ctx.Err() != nil {
		return nil
	}
	reason := ""
	if err != nil {
		reason = "error"
		if len(evs) > 0 && strings.HasPrefix(evs[0].Err, event.ReasonForbidden) {
			reason = event.ReasonForbidden
		}
	}
	r.mu.Lock()
	changed := reason != r.down
	r.down = reason
	r.mu.Unlock()
	if changed {
		now := time.Now().UTC()
		if reason == "" {
			emit(&event.SourceStatus{Time: now, Source: event.SourcePodEvents, Up: true})
		} else {
			r.logger.Warn("the pods' Events cannot be read: starts are explained without the kubelet's own words", "error", err)
			emit(&event.SourceStatus{Time: now, Source: event.SourcePodEvents, Reason: reason})
		}
	}
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		r.logger.Debug("reading a pod's Events", "namespace", q.Namespace, "pod", q.Name, "error", err)
	}
	return evs
}

// readForQuestion reads the Events of the pod a question names, unless
// they were read for a question less than eventsAskedEvery ago, within
// eventsQuestionWait: what explain shows is then the kubelet's latest word.
func (r *eventReads) readForQuestion(ctx context.Context, q correlator.Query, emit func(event.Event)) []*event.PodEvents {
	if r == nil {
		return nil
	}
	key := q.UID + "/" + q.Namespace + "/" + q.Name
	now := time.Now()
	r.mu.Lock()
	last, seen := r.asked[key]
	if !seen || now.Sub(last) >= eventsAskedEvery {
		r.asked[key] = now
		for k, t := range r.asked {
			if now.Sub(t) >= eventsAskedEvery {
				delete(r.asked, k)
			}
		}
	}
	r.mu.Unlock()
	if seen && now.Sub(last) < eventsAskedEvery {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, eventsQuestionWait)
	defer cancel()
	return r.read(ctx, q, podevents.Asked, emit)
}
