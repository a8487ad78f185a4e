package exporter

import (
	"time"

	"github.com/readyline/readyline/correlator"
)

// Sources and reasons of the drops a TraceExporter reports to its
// ExportObserver (readyline_events_dropped_total{source,reason}). Each drop
// is one pod start's trace (or the completion of one).
const (
	DropSourceTraces = "trace_exporter"
	// DropReasonQueue: the timeline queue (QueueSize) was full.
	DropReasonQueue = "queue_full"
	// DropReasonClosed: Export was called after Run returned.
	DropReasonClosed = "closed"
	// DropReasonShutdown: the trace was not sent within ShutdownTimeout
	// once Run's context ended.
	DropReasonShutdown = "shutdown_timeout"
	// DropReasonQueueBytes: the trace was built but dropped, the oldest
	// first, to keep the traces waiting for the endpoint within QueueBytes
	// (the endpoint was down or slow for that long).
	DropReasonQueueBytes = "queue_bytes"
	// DropReasonRejected: the endpoint refused the request that carried the
	// trace as invalid; sending it again would not help.
	DropReasonRejected = "rejected"
)

// ExportObserver is told what the trace exporter loses, so that it shows in
// the metrics; *Metrics implements it. Implementations must be safe for
// concurrent use and must not block.
type ExportObserver interface {
	// ExportFailed counts one export request that failed. A batch sent
	// again after a failure counts once per request.
	ExportFailed()
	// AddDropped counts n items dropped by source for reason.
	AddDropped(source, reason string, n int)
}

// dropWarnInterval is the least time between two warnings about drops: a
// queue that is full tends to flap between full and not full.
const dropWarnInterval = time.Minute

// drop counts a timeline dropped before it became spans.
func (e *TraceExporter) drop(reason string, tl *correlator.Timeline) {
	total := e.dropped.Add(1)
	if e.cfg.Observer != nil {
		e.cfg.Observer.AddDropped(DropSourceTraces, reason, 1)
	}
	now := time.Now().UnixNano()
	last := e.lastDropWarn.Load()
	if (last == 0 || now-last >= int64(dropWarnInterval)) && e.lastDropWarn.CompareAndSwap(last, now) {
		e.logger.Warn("dropping pod start traces: export queue full or exporter closed; further drops are counted and logged at most once a minute",
			"reason", reason, "pod", tl.Pod.Name, "namespace", tl.Pod.Namespace, "endpoint", e.endpoint, "dropped_total", total)
	}
}

// dropQueued counts the timelines left in the queue as dropped.
func (e *TraceExporter) dropQueued(reason string) {
	for {
		select {
		case job := <-e.jobs:
			e.drop(reason, job.tl)
		default:
			return
		}
	}
}

// lose counts built traces dropped unsent. The first queue_bytes drop of an
// outage is logged (and at most one a minute when the endpoint is slow
// rather than down).
func (e *TraceExporter) lose(reason string, traces []*queuedTrace) {
	spans := 0
	for _, t := range traces {
		spans += len(t.spans)
	}
	e.droppedTraces.Add(uint64(len(traces)))
	e.droppedSpans.Add(uint64(spans))
	if e.cfg.Observer != nil {
		e.cfg.Observer.AddDropped(DropSourceTraces, reason, len(traces))
	}
	if reason != DropReasonQueueBytes {
		return
	}
	now := time.Now().UnixNano()
	if last := e.bytesWarned.Load(); last == 0 && e.bytesWarned.CompareAndSwap(0, now) {
		queued, bytes := e.queue.len()
		e.logger.Warn("export queue full: dropping the oldest pod start traces to stay within --export-queue-bytes; further drops until the endpoint takes traces again are only counted",
			"endpoint", e.endpoint, "queue_bytes_limit", e.cfg.QueueBytes, "queued_bytes", bytes, "queued_traces", queued,
			"dropped", len(traces), "oldest_dropped", traces[0].pod, "trace_id", traces[0].id.String())
	}
}
