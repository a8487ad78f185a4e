package collector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"

	"github.com/readyline/readyline/collector/event"
)

// ringOptions says what readRing does besides handing records over. The
// zero value waits for the kernel's wakeups and calls nothing but handle.
type ringOptions struct {
	// Poll is how long the reader waits for a wakeup before it looks at
	// the ring anyway: programs that wake their reader only once the ring
	// fills up need it. 0 waits for wakeups alone; Tick and Drained are
	// then called only after records.
	Poll time.Duration
	// Tick, when set, is called once every TickEvery (within about Poll of
	// it when no record comes): the source's periodic work that must be
	// ordered with its records, such as reporting the ring's losses.
	Tick      func(now time.Time)
	TickEvery time.Duration
	// Drained, when set, is called with a time before which every record
	// committed to the ring has been handed to handle: whenever the ring
	// is found empty (after a record, or when a poll ends with nothing
	// left), so at least every Poll.
	Drained func(before time.Time)
	// Usage, when set, is told the ring's size and, after each record,
	// how full the ring was when that record was read.
	Usage *ringUsage
}

// readRing reads a BPF ring buffer until ctx is done, handing each record
// to handle, and calling opts' callbacks, from the calling goroutine (the
// slice is reused: copy what you keep). It returns nil on cancellation.
func readRing(ctx context.Context, m *ebpf.Map, opts ringOptions, handle func([]byte)) error {
	rd, err := ringbuf.NewReader(m)
	if err != nil {
		return fmt.Errorf("opening ring buffer reader: %w", err)
	}
	opts.Usage.sized(m.MaxEntries())
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
		if opts.Poll > 0 {
			until = time.Now().Add(opts.Poll)
			rd.SetDeadline(until)
		}
	}
	deadline()
	next := time.Now().Add(opts.TickEvery)
	ticked := func() {
		if opts.Tick == nil {
			return
		}
		if now := time.Now(); !now.Before(next) {
			next = now.Add(opts.TickEvery)
			opts.Tick(now)
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
				if opts.Drained != nil {
					opts.Drained(until.Add(-time.Millisecond))
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
		if opts.Drained != nil || opts.Usage != nil {
			// Stamped before the look: a record committed after the
			// stamp may be there or not, one committed before is read.
			at := time.Now()
			n := pending()
			if n >= 0 {
				// The record was in the ring too: its 8-byte header and
				// its data, padded to 8 bytes.
				opts.Usage.saw(n + 8 + (len(rec.RawSample)+7)&^7)
			}
			if n == 0 && opts.Drained != nil {
				opts.Drained(at)
			}
		}
		ticked()
	}
}

// ringSource is what the kernel sources share around their ring buffer:
// the boot clock their records' times are converted with, re-sampled
// every ringClockEvery; the ring's fill; and, when readDrops is set, the
// kernel's count of records a full ring lost, told as the source's
// statuses each second (ringLoss) and logged at most every
// ringClockEvery. A source sets the fields above clockOff in its
// constructor, samples the clock, and calls run from its Run; the
// counters are safe to read from any goroutine meanwhile.
type ringSource struct {
	// name is the source in the statuses and drained marks it emits
	// (event.SourceProcess, ...); lost says what a full ring loses, in
	// its log ("process events").
	name, lost string
	logger     *slog.Logger
	events     *ebpf.Map
	// poll is ringOptions.Poll: how long the reader waits for the kernel
	// to wake it before it looks anyway.
	poll time.Duration
	// attached is when the programs were attached: records are buffered
	// from then on, and a loss before run is a loss since then.
	attached time.Time
	// readDrops reads the kernel's count of records the ring lost; nil
	// when the source tells its losses otherwise.
	readDrops func() (uint64, error)

	clockOff    atomic.Int64
	kernelDrops atomic.Uint64
	fill        ringUsage
}

// ringClockEvery is how often a ring source re-samples the boot clock
// (following wall-clock steps) and logs the drops counted meanwhile (the
// statuses tell each second's).
const ringClockEvery = 5 * time.Second

// sampleClock (re)samples the boot clock's offset; call it once before run.
func (r *ringSource) sampleClock() { r.clockOff.Store(NewBootClock().Offset) }

// clock is the boot clock to convert the records' times with now.
func (r *ringSource) clock() BootClock { return BootClock{Offset: r.clockOff.Load()} }

// run reads the ring until ctx is done, handing each record to handle
// from the calling goroutine (the slice is reused: copy what you keep),
// and emits, from the same goroutine and in order with what handle emits,
// the source's statuses (Up first, then a Down and an Up for each second
// in which the ring lost records; with readDrops only) and its drained
// marks (event.Drained, at most one per drainEvery). It returns nil on
// cancellation.
func (r *ringSource) run(ctx context.Context, emit func(event.Event), handle func([]byte)) error {
	housekept := make(chan struct{})
	hctx, stop := context.WithCancel(ctx)
	defer func() { stop(); <-housekept }()
	go func() {
		defer close(housekept)
		r.housekeeping(hctx)
	}()
	opts := ringOptions{Poll: r.poll, Usage: &r.fill, Drained: (&drainNotice{source: r.name, emit: emit}).at}
	if r.readDrops != nil {
		loss := ringLoss{source: r.name}
		opts.Tick, opts.TickEvery = loss.follow(r.attached, r.pollDrops, emit), ringLossEvery
	}
	err := readRing(ctx, r.events, opts, handle)
	r.pollDrops()
	return err
}

// housekeeping re-samples the clock and logs kernel drops every
// ringClockEvery until ctx is done.
func (r *ringSource) housekeeping(ctx context.Context) {
	var logged uint64
	every(ctx, ringClockEvery, func() {
		r.sampleClock()
		if n := r.kernelDrops.Load(); n > logged {
			r.logger.Warn("kernel ring buffer full: "+r.lost+" lost", "lost", n-logged, "total", n)
			logged = n
		}
	})
}

// pollDrops reads the kernel's drop counter into kernelDrops and returns
// it; ok is false when it could not be read (or there is none).
func (r *ringSource) pollDrops() (n uint64, ok bool) {
	if r.readDrops == nil {
		return 0, false
	}
	n, err := r.readDrops()
	if err != nil {
		return 0, false
	}
	r.kernelDrops.Store(n)
	return n, true
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
