package collector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"

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
	// Pace, when set with an IdlePoll longer than Poll, has the reader
	// look every IdlePoll instead while it is idle (Pace). A reader that
	// waits on a thread of its own (no netpoller) keeps to Poll.
	Pace     *Pace
	IdlePoll time.Duration
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
	// Logger, when set, is told when the ring cannot be waited for in
	// the netpoller.
	Logger *slog.Logger
}

// readRing reads a BPF ring buffer until ctx is done, handing each record
// to handle, and calling opts' callbacks, from the calling goroutine (the
// slice is reused: copy what you keep). It returns nil on cancellation.
//
// It waits for the kernel's wakeups in the Go runtime's netpoller
// (ringWaiter), and reads the ring without blocking once woken or when
// the poll is due. The ring reader's own wait is a blocking epoll_wait on
// the goroutine's thread: with each of the three rings' readers in one for
// most of every 100 ms poll, the runtime's sysmon took their processor
// back after 10 ms each time and, reset by that, polled every 20 µs again:
// its sleeps were 9% of the daemon's CPU on a busy node, and the context
// switches of the rest a tenth more. A ring whose file cannot be polled
// there falls back to that wait.
func readRing(ctx context.Context, m *ebpf.Map, opts ringOptions, handle func([]byte)) error {
	rd, err := ringbuf.NewReader(m)
	if err != nil {
		return fmt.Errorf("opening ring buffer reader: %w", err)
	}
	w, werr := newRingWaiter(m)
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
		if w != nil {
			w.close()
		}
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
	var until time.Time // the end of the current wait; zero without a poll
	if werr != nil && opts.Logger != nil {
		opts.Logger.Warn("the ring buffer's reader waits on a thread of its own", "error", werr)
	}
	var paced *paceWaiter
	if w != nil && opts.Pace != nil && opts.Poll > 0 && opts.IdlePoll > opts.Poll {
		paced = &paceWaiter{cut: w.cut}
		defer opts.Pace.join(paced)()
	}
	wait := func() error {
		until = time.Time{}
		poll := opts.Poll
		if paced != nil && !opts.Pace.Fast() {
			poll = opts.IdlePoll
		}
		if poll > 0 {
			until = time.Now().Add(poll)
		}
		if w == nil {
			rd.SetDeadline(until)
			return nil
		}
		err := w.wait(until, paced)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			err = nil
		}
		// Read what is there, then stop: the next wait is the netpoller's.
		rd.SetDeadline(time.Unix(0, 1))
		return err
	}
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
		if err := wait(); err != nil {
			if pending() < 0 {
				return nil
			}
			return fmt.Errorf("waiting for the ring buffer: %w", err)
		}
		// Every record committed before this stamp is read by the end of
		// the drain below (a wait on the reader's own epoll ends at until,
		// less the millisecond epoll may round off).
		drainedAt := time.Now()
		if w == nil && !until.IsZero() {
			drainedAt = until.Add(-time.Millisecond)
		}
		for {
			if err := rd.ReadInto(&rec); err != nil {
				switch {
				case errors.Is(err, os.ErrDeadlineExceeded):
					if opts.Drained != nil {
						opts.Drained(drainedAt)
					}
				case errors.Is(err, ringbuf.ErrClosed):
					return nil
				default:
					return fmt.Errorf("reading ring buffer: %w", err)
				}
				break
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
		ticked()
	}
}

// ringWaiter waits for a ring buffer's wakeups in the Go runtime's
// netpoller: a duplicate of the map's file descriptor, non-blocking, as an
// os.File (the kernel's poll of a ring buffer says readable when records
// wait, and a wakeup notifies its waiters).
type ringWaiter struct {
	f  *os.File
	rc syscall.RawConn
}

func newRingWaiter(m *ebpf.Map) (*ringWaiter, error) {
	fd, err := unix.FcntlInt(uintptr(m.FD()), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("duplicating the ring buffer's fd: %w", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("the ring buffer's fd: %w", err)
	}
	f := os.NewFile(uintptr(fd), "ringbuf")
	// A file the netpoller could not take has no deadlines.
	if err := f.SetReadDeadline(time.Time{}); err != nil {
		f.Close()
		return nil, fmt.Errorf("the ring buffer in the netpoller: %w", err)
	}
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &ringWaiter{f: f, rc: rc}, nil
}

// wait returns once the kernel woke the ring's readers (or had already,
// since the last wait), or with os.ErrDeadlineExceeded at until (zero:
// no deadline) or when cut; at once when paced was kicked since the last.
func (w *ringWaiter) wait(until time.Time, paced *paceWaiter) error {
	if err := w.f.SetReadDeadline(until); err != nil {
		return err
	}
	// After the deadline is set: a kick before it is seen here, a kick
	// after it cuts the wait.
	if paced != nil && paced.kicked.Swap(false) {
		return nil
	}
	asked := false
	err := w.rc.Read(func(uintptr) bool {
		done := asked // the first call waits, the next is after a wakeup
		asked = true
		return done
	})
	// A kick that cut this wait, or came since, is served by the look
	// that follows (its drained mark is stamped after this): the next
	// wait waits.
	if paced != nil {
		paced.kicked.Store(false)
	}
	return err
}

// cut ends the wait in progress (os.ErrDeadlineExceeded) from another
// goroutine; a wait not yet begun sets its own deadline.
func (w *ringWaiter) cut() { w.f.SetReadDeadline(time.Unix(0, 1)) }

func (w *ringWaiter) close() { w.f.Close() }

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

	// pace, when set, has the reader look every ringIdlePoll while it is
	// idle (Pace); NodeSources sets it before run.
	pace *Pace

	clockOff    atomic.Int64
	kernelDrops atomic.Uint64
	fill        ringUsage
}

// ringIdlePoll is how often a paced ring reader looks at its ring while the
// pace is idle (Pace): records then wait up to that long, or until
// the ring is a quarter full, and the ring's losses are told about that
// late.
const ringIdlePoll = time.Second

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
	opts := ringOptions{Poll: r.poll, Pace: r.pace, IdlePoll: ringIdlePoll,
		Usage: &r.fill, Drained: (&drainNotice{source: r.name, emit: emit}).at, Logger: r.logger}
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
