package main

import (
	"context"
	"errors"
	"time"

	"golang.org/x/time/rate"

	"github.com/readyline/readyline/collector/event"
	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter"
	"github.com/readyline/readyline/exporter/apiclient"
)

// liveStarts answers the API's questions about starts in progress from the
// correlator, which only the daemon's loop (correlate) may touch: each
// question is a liveRequest the loop answers between two events. The loop
// takes one at a time and does one derivation for it, so a question costs
// the node's events at most that; the questions themselves are limited
// (liveRate), and one the loop has not taken within the caller's context
// is dropped with exporter.ErrBusy. liveStarts is safe for concurrent use.
type liveStarts struct {
	requests chan liveRequest
	limit    *rate.Limiter
	// inFlight reads the kubelet's CRI calls in flight (nil: none known),
	// events the pod's Events (nil: none); both run on the caller's
	// goroutine, not the loop's.
	inFlight func() ([]*event.CRICall, error)
	events   func(context.Context, correlator.Query) []*event.PodEvents
	// pulls reads how far a PullImage in flight has come (nil: unknown).
	pulls func(ctx context.Context, image string, since time.Time) (*event.PullProgress, error)
}

// liveRate bounds the questions per second the loop answers, with a burst
// for a few users at once (explain --watch asks once a second).
const (
	liveRate  = 20
	liveBurst = 20
)

// liveRequest is one question for the loop: a snapshot of q, or (list) the
// starts in progress. The loop answers on reply, which has room for it.
type liveRequest struct {
	q        correlator.Query
	list     bool
	after    bool // what happened to q.UID after its start
	inFlight []*event.CRICall
	// events are the pod's Events read for the question: facts the loop
	// takes (and records) before it answers.
	events []*event.PodEvents
	reply  chan liveReply
}

type liveReply struct {
	tl     *correlator.Timeline
	starts []correlator.StartSummary
	after  *correlator.After
}

func newLiveStarts(inFlight func() ([]*event.CRICall, error), events func(context.Context, correlator.Query) []*event.PodEvents) *liveStarts {
	return &liveStarts{requests: make(chan liveRequest), limit: rate.NewLimiter(liveRate, liveBurst), inFlight: inFlight, events: events}
}

var _ exporter.LiveStarts = (*liveStarts)(nil)

// Snapshot implements exporter.LiveStarts.
func (l *liveStarts) Snapshot(ctx context.Context, q correlator.Query) (*correlator.Timeline, error) {
	req := liveRequest{q: q}
	if l.inFlight != nil {
		req.inFlight, _ = l.inFlight() // a map read failing leaves none: the rest still stands
		req.inFlight = withProgress(ctx, req.inFlight, l.pulls)
	}
	r, err := l.ask(ctx, req)
	if err != nil {
		return nil, err
	}
	if r.tl == nil {
		return nil, apiclient.ErrNotFound
	}
	// Only a start in progress on this node has its Events read, by its
	// own UID: a question about another node's pod (or none) costs no API
	// call and records nothing of it.
	if l.events == nil {
		return r.tl, nil
	}
	pod := correlator.Query{UID: r.tl.Pod.UID, Namespace: r.tl.Pod.Namespace, Name: r.tl.Pod.Name}
	if req.events = l.events(ctx, pod); len(req.events) == 0 {
		return r.tl, nil
	}
	req.q = pod
	if fresh, err := l.ask(ctx, req); err == nil && fresh.tl != nil {
		return fresh.tl, nil
	}
	return r.tl, nil
}

// InProgress implements exporter.LiveStarts.
func (l *liveStarts) InProgress(ctx context.Context) ([]correlator.StartSummary, error) {
	r, err := l.ask(ctx, liveRequest{list: true})
	return r.starts, err
}

// After implements exporter.LiveStarts.
func (l *liveStarts) After(ctx context.Context, uid string) (*correlator.After, error) {
	r, err := l.ask(ctx, liveRequest{q: correlator.Query{UID: uid}, after: true})
	if err == nil && r.after == nil {
		err = apiclient.ErrNotFound
	}
	return r.after, err
}

func (l *liveStarts) ask(ctx context.Context, req liveRequest) (liveReply, error) {
	if err := l.limit.Wait(ctx); err != nil {
		return liveReply{}, exporter.ErrBusy
	}
	req.reply = make(chan liveReply, 1)
	select {
	case l.requests <- req:
	case <-ctx.Done():
		return liveReply{}, exporter.ErrBusy
	}
	select {
	case r := <-req.reply:
		return r, nil
	case <-ctx.Done():
		return liveReply{}, errors.Join(exporter.ErrBusy, context.Cause(ctx))
	}
}

// pending is the channel of questions the loop takes; nil (never ready)
// for a nil liveStarts.
func (l *liveStarts) pending() <-chan liveRequest {
	if l == nil {
		return nil
	}
	return l.requests
}

// answer is the loop's side: it answers req from c, after handle took the
// facts that came with it.
func (req liveRequest) answer(c *correlator.Correlator, handle func(event.Event)) {
	for _, ev := range req.events {
		handle(ev)
	}
	var r liveReply
	switch {
	case req.list:
		r.starts = c.InProgress()
	case req.after:
		r.after, _ = c.After(req.q.UID)
	default:
		r.tl, _ = c.Snapshot(req.q, req.inFlight...)
	}
	req.reply <- r
}
