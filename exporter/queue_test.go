package exporter

import (
	"context"
	"slices"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// queued is a trace of n spans and the given bytes, for the queue alone.
func queued(n int, bytes int64) *queuedTrace {
	return &queuedTrace{spans: make([]sdktrace.ReadOnlySpan, n), bytes: bytes}
}

func seqs(ts []*queuedTrace) []uint64 {
	var s []uint64
	for _, t := range ts {
		s = append(s, t.seq)
	}
	return s
}

// TestExportQueue walks the queue through batches, a failure, drops and
// a trace larger than the budget.
func TestExportQueue(t *testing.T) {
	q := newExportQueue(100)
	for _, n := range []int{3, 3, 3, 10} {
		if d := q.push(queued(n, 10)); d != nil {
			t.Fatalf("dropped %v", seqs(d))
		}
	}
	check := func(what string, got, want []uint64) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", what, got, want)
		}
	}
	// Whole traces up to 6 spans; then the 10-span trace alone.
	b := q.take(6)
	check("first batch", seqs(b), []uint64{1, 2})
	q.done(false)
	q.push(queued(1, 10)) // 5: joins no failed batch
	check("the failed batch again", seqs(q.take(6)), []uint64{1, 2})
	q.done(true)
	check("next batch", seqs(q.take(6)), []uint64{3})
	q.done(true)
	check("a trace over MaxBatchSpans goes alone", seqs(q.take(6)), []uint64{4})
	q.done(false)

	// 4 (failed, not in a request) and 5 hold 20 of 100 bytes: 6 takes 95,
	// so 4 and 5 go, the failed batch with them.
	check("dropped for 6", seqs(q.push(queued(1, 95))), []uint64{4, 5})
	if n, bytes := q.len(); n != 1 || bytes != 95 {
		t.Errorf("queue %d traces, %d bytes", n, bytes)
	}
	b = q.take(6)
	check("a new batch once the failed one is dropped", seqs(b), []uint64{6})
	// In a request, 6 stays: 7 does not fit beside it and drops itself.
	check("dropped for 7", seqs(q.push(queued(1, 20))), []uint64{7})
	check("dropped for 8", seqs(q.push(queued(1, 5))), nil)
	q.done(true)
	check("too big alone", seqs(q.push(queued(1, 101))), []uint64{9})

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := q.waitLeft(ctx, 7); err != nil { // 8 is still queued, 1..7 have left
		t.Errorf("waitLeft(7): %v", err)
	}
	short, cancelShort := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancelShort()
	if err := q.waitLeft(short, 8); err == nil {
		t.Error("waitLeft(8) returned with 8 queued")
	}
	check("drain", seqs(q.drain()), []uint64{8})
	if err := q.waitLeft(ctx, 9); err != nil {
		t.Errorf("waitLeft(9) on an empty queue: %v", err)
	}
}
