package exporter

import (
	"context"
	"regexp"
	"strings"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	grpccodes "google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// send sends the export queue's batches, one request at a time and in
// order, until ctx ends or, once draining is closed, the queue is empty.
// A failed batch stays at the head of the queue and is sent again, the
// same batch, after retryWait; a request that succeeds resets the back-off.
func (e *TraceExporter) send(ctx context.Context) {
	failures := 0 // in a row
	for {
		batch := e.queue.take(e.cfg.MaxBatchSpans)
		if batch == nil {
			select {
			case <-e.queue.ready:
			case <-e.draining:
				if n, _ := e.queue.len(); n == 0 {
					return
				}
			case <-ctx.Done():
				return
			}
			continue
		}
		err := e.exportBatch(ctx, batch)
		switch {
		case err == nil:
			e.queue.done(true)
			failures = 0
			continue
		case rejected(err):
			e.queue.done(true)
			e.lose(DropReasonRejected, batch)
			e.logger.Warn("the endpoint rejected a trace export request as invalid; its traces are dropped",
				"endpoint", e.endpoint, "traces", len(batch), "pod", batch[0].pod, "trace_id", batch[0].id.String(), "error", err)
			failures = 0
			continue
		}
		e.queue.done(false)
		failures++
		if ctx.Err() != nil {
			return
		}
		wait := retryWait(e.cfg.RetryInitial, e.cfg.RetryMax, failures, e.jitter())
		e.logger.Debug("trace export failed, the batch waits to be sent again", "endpoint", e.endpoint,
			"traces", len(batch), "failures", failures, "retry_in", wait, "error", err)
		select {
		case <-e.after(wait):
		case <-e.retryNow:
		case <-ctx.Done():
			return
		}
	}
}

// exportBatch sends the spans of batch in one request and counts the
// outcome, logging one Warn when requests start failing and one Info when
// they succeed again.
//
// An OTLP request is all or nothing, so a batch that failed was not taken
// and sending it again duplicates nothing, with one exception: a request
// that timed out (ExportTimeout) or lost its connection after the endpoint
// had accepted it but before the answer arrived. Its spans then arrive
// twice, with the same span ids (a span's id is drawn once, when it is
// built, and the root's is RootSpanID of the trace id), so a backend or a
// reader can tell the copies apart from real spans.
func (e *TraceExporter) exportBatch(ctx context.Context, batch []*queuedTrace) error {
	n := 0
	for _, t := range batch {
		n += len(t.spans)
	}
	spans := make([]sdktrace.ReadOnlySpan, 0, n)
	for _, t := range batch {
		spans = append(spans, t.spans...)
	}
	rctx, cancel := context.WithTimeout(ctx, e.cfg.ExportTimeout)
	defer cancel()
	err := e.spanExp.ExportSpans(rctx, spans)
	if err != nil && partialSuccess(err) {
		// Accepted, less what the endpoint says it rejected: sending the
		// batch again would duplicate the rest.
		if e.partialWarn.CompareAndSwap(false, true) {
			e.logger.Warn("the endpoint accepted a trace export request only in part; further partial successes are logged at Debug",
				"endpoint", e.endpoint, "spans", n, "error", err)
		} else {
			e.logger.Debug("partial success of a trace export request", "endpoint", e.endpoint, "spans", n, "error", err)
		}
		err = nil
	}
	if err == nil {
		e.exportedTraces.Add(uint64(len(batch)))
		e.exportedSpans.Add(uint64(n))
		if e.down.CompareAndSwap(true, false) {
			queued, bytes := e.queue.len()
			e.logger.Info("trace export recovered", "endpoint", e.endpoint,
				"failed_exports", e.outageFails.Swap(0), "queued_traces", queued, "queued_bytes", bytes)
			e.bytesWarned.Store(0)
		} else if w := e.bytesWarned.Load(); w != 0 && time.Now().UnixNano()-w >= int64(dropWarnInterval) {
			e.bytesWarned.CompareAndSwap(w, 0)
		}
		return nil
	}
	e.failures.Add(1)
	e.failedSpans.Add(uint64(n))
	e.outageFails.Add(1)
	if e.cfg.Observer != nil {
		e.cfg.Observer.ExportFailed()
	}
	if !rejected(err) && e.down.CompareAndSwap(false, true) {
		e.logger.Warn("trace export failing: pod start traces wait in the export queue and are sent when the endpoint is back; further failures are only counted",
			"endpoint", e.endpoint, "spans", n, "queue_bytes_limit", e.cfg.QueueBytes, "error", err)
	}
	return err
}

// retryWait is the wait before sending a batch again after its n-th
// failure in a row (n >= 1): initial·2^(n-1), at most max, less r (in
// [0, 1)) times half of it, so that the nodes that lost one endpoint
// together do not all come back at the same instant.
func retryWait(initial, max time.Duration, n int, r float64) time.Duration {
	d := initial
	for i := 1; i < n && d < max; i++ {
		d *= 2
	}
	d = min(d, max)
	return d - time.Duration(r*float64(d/2))
}

// httpRejected matches how the OTLP/HTTP exporter reports an answer that
// says the request itself is wrong: it has no typed error for it, only
// "failed to send to URL: 400 Bad Request (body: ...)"; TestRejectedBatch
// holds this pattern against the exporter.
var httpRejected = regexp.MustCompile(`failed to send to \S+: (400|413) `)

// rejected reports whether err says the request was refused as invalid,
// so that sending it again would fail again: gRPC's InvalidArgument, an
// HTTP 400 or 413, or a request larger than the exporter sends. Anything
// else (the endpoint unreachable, overloaded, timing out) is worth a retry.
func rejected(err error) bool {
	if s, ok := status.FromError(err); ok && s.Code() == grpccodes.InvalidArgument {
		return true
	}
	msg := err.Error()
	return httpRejected.MatchString(msg) || strings.Contains(msg, "request message too large")
}

// partialSuccess reports whether err only tells of an OTLP partial success:
// the request was accepted and the endpoint dropped some of its spans. The
// OTLP exporters report it as an error of an internal type whose text
// starts with "OTLP partial success:".
func partialSuccess(err error) bool {
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		errs := u.Unwrap()
		for _, e := range errs {
			if !partialSuccess(e) {
				return false
			}
		}
		return len(errs) > 0
	case interface{ Unwrap() error }:
		if inner := u.Unwrap(); inner != nil {
			return partialSuccess(inner)
		}
	}
	return strings.HasPrefix(err.Error(), "OTLP partial success:")
}
