package exporter

import (
	"context"
	"slices"
	"sync"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// queuedTrace is the unit of export: the spans made from one timeline (a
// pod start's trace, or the completion of one reported at its deadline).
// Its spans travel together in one request and leave the queue together.
type queuedTrace struct {
	seq   uint64 // order of arrival, from 1
	id    trace.TraceID
	pod   string // namespace/name, for logs
	spans []sdktrace.ReadOnlySpan
	bytes int64 // otlpSize(spans)
}

// exportQueue is the FIFO of traces waiting for the endpoint, bounded by
// the OTLP size of what it holds (otlpSize). The traces at its head form
// the current batch: the one in a request now, or the one that failed and
// waits to be sent again. A trace leaves the queue when a request that
// carried it succeeded, or when it is dropped: the oldest go first when a
// new trace would exceed the budget, but never one in a request (that
// request ends within ExportTimeout).
//
// exportQueue is safe for concurrent use.
type exportQueue struct {
	budget int64
	ready  chan struct{} // gets a value when a trace is pushed

	mu           sync.Mutex
	traces       []*queuedTrace
	bytes        int64
	batch        int   // the first batch traces are the current batch
	sending      bool  // the current batch is in a request
	sendingBytes int64 // the current batch's bytes while it is in a request
	lastSeq      uint64
	changed      chan struct{} // closed and replaced when a trace leaves
}

func newExportQueue(budget int64) *exportQueue {
	return &exportQueue{budget: budget, ready: make(chan struct{}, 1), changed: make(chan struct{})}
}

// push appends t and returns what that dropped: the oldest traces not in a
// request, as many as t needs, or t itself when it would not fit even
// then.
func (q *exportQueue) push(t *queuedTrace) (dropped []*queuedTrace) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.lastSeq++
	t.seq = q.lastSeq
	if q.sendingBytes+t.bytes > q.budget {
		return []*queuedTrace{t}
	}
	from := 0 // the oldest trace that may be dropped
	if q.sending {
		from = q.batch
	}
	to := from
	freed := int64(0)
	for q.bytes-freed+t.bytes > q.budget {
		freed += q.traces[to].bytes
		to++
	}
	if to > from {
		dropped = slices.Clone(q.traces[from:to])
		q.traces = slices.Delete(q.traces, from, to)
		q.bytes -= freed
		if !q.sending { // the failed batch loses its oldest traces
			q.batch = max(0, q.batch-(to-from))
		}
		q.signalChanged()
	}
	q.traces = append(q.traces, t)
	q.bytes += t.bytes
	select {
	case q.ready <- struct{}{}:
	default:
	}
	return dropped
}

// take returns the current batch and marks it in a request; it forms a new
// batch from the head when there is none: whole traces, at most maxSpans
// spans unless the first trace alone has more. A batch that failed is
// returned as it was, less what push dropped meanwhile. take returns nil
// when the queue is empty. Every take must be followed by one done.
func (q *exportQueue) take(maxSpans int) []*queuedTrace {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.traces) == 0 {
		return nil
	}
	if q.batch == 0 {
		spans := 0
		for q.batch < len(q.traces) {
			n := len(q.traces[q.batch].spans)
			if q.batch > 0 && spans+n > maxSpans {
				break
			}
			spans += n
			q.batch++
		}
	}
	q.sending = true
	q.sendingBytes = 0
	for _, t := range q.traces[:q.batch] {
		q.sendingBytes += t.bytes
	}
	return slices.Clone(q.traces[:q.batch])
}

// done ends the request of the batch take returned: sent removes the
// batch (it was accepted, or rejected for good), otherwise the batch stays
// at the head to be sent again.
func (q *exportQueue) done(sent bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.sending, q.sendingBytes = false, 0
	if !sent {
		return
	}
	for _, t := range q.traces[:q.batch] {
		q.bytes -= t.bytes
	}
	clear(q.traces[:q.batch]) // let the spans go
	q.traces = q.traces[q.batch:]
	q.batch = 0
	q.signalChanged()
}

// drain empties the queue and returns what it held. It must not be called
// while a batch is in a request.
func (q *exportQueue) drain() []*queuedTrace {
	q.mu.Lock()
	defer q.mu.Unlock()
	left := q.traces
	q.traces, q.bytes, q.batch = nil, 0, 0
	if len(left) > 0 {
		q.signalChanged()
	}
	return left
}

// len returns the number of traces queued and their bytes.
func (q *exportQueue) len() (traces int, bytes int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.traces), q.bytes
}

// last is the sequence number of the latest trace pushed.
func (q *exportQueue) last() uint64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.lastSeq
}

// waitLeft waits until every trace pushed up to seq has left the queue
// (sent or dropped), or ctx ends.
func (q *exportQueue) waitLeft(ctx context.Context, seq uint64) error {
	for {
		q.mu.Lock()
		left := len(q.traces) == 0 || q.traces[0].seq > seq
		changed := q.changed
		q.mu.Unlock()
		if left {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (q *exportQueue) signalChanged() {
	close(q.changed)
	q.changed = make(chan struct{})
}
