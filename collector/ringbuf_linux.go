package collector

import (
	"context"
	"errors"
	"fmt"
	"os"
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
	return readRingTicking(ctx, m, poll, handle, 0, nil)
}

// readRingTicking is readRing that also calls tick from the same goroutine,
// between records, once every period has passed (within about poll of it
// when no record comes, so poll must be set): the source's periodic work
// that must be ordered with its records, such as reporting the buffer's
// losses.
func readRingTicking(ctx context.Context, m *ebpf.Map, poll time.Duration, handle func([]byte), period time.Duration, tick func(time.Time)) error {
	rd, err := ringbuf.NewReader(m)
	if err != nil {
		return fmt.Errorf("opening ring buffer reader: %w", err)
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-ctx.Done():
		case <-stop:
		}
		rd.Close()
	}()
	deadline := func() {
		if poll > 0 {
			rd.SetDeadline(time.Now().Add(poll))
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
				deadline()
				ticked()
				continue
			case errors.Is(err, ringbuf.ErrClosed):
				return nil
			}
			return fmt.Errorf("reading ring buffer: %w", err)
		}
		handle(rec.RawSample)
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
