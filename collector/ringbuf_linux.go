package collector

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
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
	return readRingTicking(ctx, m, poll, handle, 0, nil, nil, nil)
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
//
// usage, when set, is told the ring's size and, after each record, how full
// the ring was when that record was read.
func readRingTicking(ctx context.Context, m *ebpf.Map, poll time.Duration, handle func([]byte), period time.Duration, tick func(time.Time), drained func(time.Time), usage *ringUsage) error {
	rd, err := ringbuf.NewReader(m)
	if err != nil {
		return fmt.Errorf("opening ring buffer reader: %w", err)
	}
	usage.sized(m.MaxEntries())
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
	// pending is what waits in the ring, -1 once it is closed.
	pending := func() int {
		closing.Lock()
		defer closing.Unlock()
		if closed {
			return -1
		}
		return rd.AvailableBytes()
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
		if drained != nil || usage != nil {
			// Stamped before the look: a record committed after the
			// stamp may be there or not, one committed before is read.
			at := time.Now()
			n := pending()
			if n >= 0 {
				// The record was in the ring too: its 8-byte header and
				// its data, padded to 8 bytes.
				usage.saw(n + 8 + (len(rec.RawSample)+7)&^7)
			}
			if n == 0 && drained != nil {
				drained(at)
			}
		}
		ticked()
	}
}

// RingUsage is how a source's kernel ring buffer is used: its size and the
// most it held when its reader looked (after each record read, what was
// still waiting plus that record), since the source started. A peak near
// the size means the next burst may be lost: raise the ring's flag.
type RingUsage struct {
	Size, Peak uint64
}

// ringUsage follows a ring's RingUsage; a nil one follows nothing. The
// reader writes it, Stats reads it from any goroutine.
type ringUsage struct {
	size, peak atomic.Uint64
}

func (u *ringUsage) sized(size uint32) {
	if u != nil {
		u.size.Store(uint64(size))
	}
}

// saw takes a fill level seen by the reader.
func (u *ringUsage) saw(n int) {
	if u == nil {
		return
	}
	for {
		p := u.peak.Load()
		if uint64(n) <= p || u.peak.CompareAndSwap(p, uint64(n)) {
			return
		}
	}
}

// usage is the RingUsage so far.
func (u *ringUsage) usage() RingUsage {
	return RingUsage{Size: u.size.Load(), Peak: min(u.peak.Load(), u.size.Load())}
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
