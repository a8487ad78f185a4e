package collector

import (
	"time"

	"github.com/readyline/readyline/collector/event"
)

// The kernel ring buffers' sizes when a source's config says 0 (the
// daemon's --*ring-buffer-size defaults). Each ring is mapped twice into
// readyline (its data pages once more after themselves, so that a record
// that wraps reads in one piece), so it counts twice in readyline's RSS:
// 3.5 MiB for these, 14 MiB for the 4, 2 and 1 MiB they were before.
// bench-node's burst (100 pods at once, each with an init container and an
// exec readiness probe; the readers poll every 100 ms) took at most 70 KiB
// of the process ring, 52 KiB of the kubelet calls' and 0.5 KiB of the TCP
// one's: the defaults are 15, 10 and 256 times that, and
// readyline_ring_buffer_peak_bytes says when a node needs more.
const (
	DefaultProcessRingBytes      = 1 << 20
	DefaultKubeletCallsRingBytes = 512 << 10
	DefaultTCPRingBytes          = 256 << 10
)

// DefaultKubeletCallsInFlight is how many of the kubelet's calls the
// kernel side follows at once, between their entry and their return, when
// the config says 0. The kubelet makes a few dozen at once (an ExecSync per
// exec probe due, a pod worker's call per pod starting): 2048 leaves room
// for 110 pods' worth many times over, in 2.5 MiB of kernel memory (the
// compiled-in 16384 took 20 MiB, charged to readyline's memory cgroup). A
// call forgotten past it is counted: its return makes an entry_missed drop.
const DefaultKubeletCallsInFlight = 2048

// ringLossEvery is how often a ring buffer's drop counter is read for the
// source's statuses: at most one Down/Up pair per source and period.
const ringLossEvery = time.Second

// ringLoss turns a ring buffer's cumulative drop counter into the source's
// SourceStatus events. The kernel only counts: a loss is known after the
// fact, at the next read of the counter, and lies somewhere since the
// previous read that found none. So each read that finds new drops makes a
// Down (Since the previous read, Lost the new drops, reason ring_full)
// followed at once by an Up; reads that find none make nothing. Not safe for
// concurrent use: the source's reading goroutine owns it.
type ringLoss struct {
	source string
	// checked is the previous read; reported the drops already reported.
	checked  time.Time
	reported uint64
}

// start is the first read, when the reader starts: Up, after a Down for
// what the kernel dropped since the programs were attached at attached
// (records it buffered until the reader came, if the buffer filled up).
func (r *ringLoss) start(attached, now time.Time, drops uint64) []event.Event {
	r.checked = attached
	if evs := r.check(now, drops); evs != nil {
		return evs
	}
	return []event.Event{&event.SourceStatus{Time: now, Source: r.source, Up: true}}
}

// check reads the counter's value drops at now and returns the Down/Up
// pair of the records lost since the previous read, or nil. A counter
// lower than reported started over (the programs were reloaded): all of
// it is new.
func (r *ringLoss) check(now time.Time, drops uint64) []event.Event {
	since := r.checked
	if since.IsZero() || since.After(now) {
		since = now
	}
	r.checked = now
	if drops < r.reported {
		r.reported = 0
	}
	if drops == r.reported {
		return nil
	}
	down := &event.SourceStatus{Time: now, Source: r.source, Reason: event.ReasonRingFull, Lost: drops - r.reported}
	if since.Before(now) {
		down.Since = since
	}
	r.reported = drops
	return []event.Event{down, &event.SourceStatus{Time: now, Source: r.source, Up: true}}
}

// follow emits a ring source's first statuses (from its drop counter as
// poll reads it now) and returns the tick, for readRingTicking, that checks
// the counter again and emits what it finds.
func (r *ringLoss) follow(attached time.Time, poll func() (uint64, bool), emit func(event.Event)) func(time.Time) {
	drops, _ := poll()
	for _, st := range r.start(attached, time.Now().UTC(), drops) {
		emit(st)
	}
	return func(now time.Time) {
		if n, ok := poll(); ok {
			for _, st := range r.check(now.UTC(), n) {
				emit(st)
			}
		}
	}
}
