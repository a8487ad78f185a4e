package collector

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"
)

// readRing reads a BPF ring buffer until ctx is done, handing each record
// to handle from the calling goroutine (the slice is reused: copy what you
// keep). Programs that wake their reader only once the buffer fills up
// need it to look every poll too; 0 waits for wakeups alone. It returns
// nil on cancellation.
func readRing(ctx context.Context, m *ebpf.Map, poll time.Duration, handle func([]byte)) error {
	return readRingTicking(ctx, m, poll, handle, 0, nil, nil)
}

// readRingTicking is readRing that also calls tick from the same goroutine,
// between records, once every period has passed (within about poll of it
// when no record comes, so poll must be set): the source's periodic work
// that must be ordered with its records, such as reporting the buffer's
// losses.
//
// drained, when set, is called from the same goroutine with a time before
// which every record committed to the buffer has been handed to handle:
// whenever the buffer is found empty (after a record, or when a poll ends
// with nothing left), so at least every poll.
func readRingTicking(ctx context.Context, m *ebpf.Map, poll time.Duration, handle func([]byte), period time.Duration, tick func(time.Time), drained func(time.Time)) error {
	rd, err := ringbuf.NewReader(m)
	if err != nil {
		return fmt.Errorf("opening ring buffer reader: %w", err)
	}
	stop := make(chan struct{})
	defer close(stop)
	// Close may come while a record is handled: AvailableBytes, which reads
	// the ring unlocked, must not run after it.
	var closing sync.Mutex
	closed := false
	go func() {
		select {
		case <-ctx.Done():
		case <-stop:
		}
		closing.Lock()
		defer closing.Unlock()
		closed = true
		rd.Close()
	}()
	empty := func() bool {
		closing.Lock()
		defer closing.Unlock()
		return !closed && rd.AvailableBytes() == 0
	}
	var until time.Time // the deadline set
	deadline := func() {
		if poll > 0 {
			until = time.Now().Add(poll)
			rd.SetDeadline(until)
		}
	}
	deadline()
	next := time.Now().Add(period)
	ticked := func() {
		if tick == nil {
			return
		}
		if now := time.Now(); !now.Before(next) {
			next = now.Add(period)
			tick(now)
		}
	}
	var rec ringbuf.Record
	for {
		if err := rd.ReadInto(&rec); err != nil {
			switch {
			case errors.Is(err, os.ErrDeadlineExceeded):
				// The reader read to the end after its wait ended, at
				// until less the millisecond epoll may round off (records
				// that came meanwhile were returned first).
				if drained != nil {
					drained(until.Add(-time.Millisecond))
				}
				deadline()
				ticked()
				continue
			case errors.Is(err, ringbuf.ErrClosed):
				return nil
			}
			return fmt.Errorf("reading ring buffer: %w", err)
		}
		handle(rec.RawSample)
		if drained != nil {
			// Stamped before the look: a record committed after the
			// stamp may be there or not, one committed before is read.
			if at := time.Now(); empty() {
				drained(at)
			}
		}
		ticked()
	}
}

// every calls f every period until ctx is done.
func every(ctx context.Context, period time.Duration, f func()) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}
