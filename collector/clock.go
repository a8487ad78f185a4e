package collector

import (
	"time"

	"golang.org/x/sys/unix"

	"github.com/readyline/readyline/collector/event"
)

// BootClock converts CLOCK_BOOTTIME nanoseconds, the clock of
// bpf_ktime_get_boot_ns, to wall-clock time. It is the one place readyline
// turns kernel time into time.Time. The zero value maps boot time 0 to the
// Unix epoch; use NewBootClock.
type BootClock struct {
	// Offset is wall-clock (CLOCK_REALTIME) minus CLOCK_BOOTTIME, in ns.
	Offset int64
}

// NewBootClock samples the offset between CLOCK_REALTIME and
// CLOCK_BOOTTIME, keeping the tightest of a few bracketed readings. Call it
// again to follow wall-clock steps (NTP).
func NewBootClock() BootClock {
	best, bestWindow := int64(0), int64(-1)
	for range 5 {
		var r1, b, r2 unix.Timespec
		_ = unix.ClockGettime(unix.CLOCK_REALTIME, &r1)
		_ = unix.ClockGettime(unix.CLOCK_BOOTTIME, &b)
		_ = unix.ClockGettime(unix.CLOCK_REALTIME, &r2)
		window := r2.Nano() - r1.Nano()
		if bestWindow < 0 || window < bestWindow {
			best, bestWindow = r1.Nano()+window/2-b.Nano(), window
		}
	}
	return BootClock{Offset: best}
}

// bootTimeNS reads CLOCK_BOOTTIME, the clock of bpf_ktime_get_boot_ns and
// of /proc's process start times, in ns.
func bootTimeNS() uint64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts)
	return uint64(ts.Nano())
}

// Time returns the wall-clock time (UTC) of a CLOCK_BOOTTIME reading.
func (c BootClock) Time(bootNS uint64) time.Time {
	return time.Unix(0, c.Offset+int64(bootNS)).UTC()
}

// ReadClocks reads the wall clock and CLOCK_BOOTTIME together: boot is
// read between two wall-clock readings and wall is their middle, so that
// wall - boot is the offset BootClock adds to kernel times at that moment.
// The daemon's ticks carry both (event.Tick): the correlator keeps its
// timeouts on boot, which no wall-clock step moves, and counts elapsed
// suspend time as time passed, as the kernel's event times do.
func ReadClocks() (wall time.Time, boot time.Duration) {
	var r1, b, r2 unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_REALTIME, &r1)
	_ = unix.ClockGettime(unix.CLOCK_BOOTTIME, &b)
	_ = unix.ClockGettime(unix.CLOCK_REALTIME, &r2)
	return time.Unix(0, r1.Nano()+(r2.Nano()-r1.Nano())/2).UTC(), time.Duration(b.Nano())
}

// stepWatch is how far the wall clock may move against CLOCK_BOOTTIME before
// ClockWatch ticks at once: below the correlator's 1 s step threshold, far
// above the microseconds reading the two clocks takes.
const stepWatch = 500 * time.Millisecond

// ClockWatch makes the daemon's ticks and tells a step of the wall clock as
// soon as it happened: the daemon asks it before handing each event to the
// correlator, so the correlator learns of a step before the first event
// stamped on the stepped clock. The zero value reads the real clocks. Not
// safe for concurrent use.
type ClockWatch struct {
	// Read reads the wall clock and CLOCK_BOOTTIME; nil is ReadClocks.
	Read func() (time.Time, time.Duration)
	off  int64
	set  bool
	// at is time.Now() when off was read (nil Read only): its wall and
	// monotonic readings, which one vDSO call gives, tell at no system
	// call that the wall clock has not moved against the monotonic one,
	// nor so against CLOCK_BOOTTIME but across a suspend (see Stepped).
	at time.Time
}

// Tick reads the clocks.
func (w *ClockWatch) Tick() *event.Tick {
	read := w.Read
	if read == nil {
		read = ReadClocks
	}
	wall, boot := read()
	w.off, w.set = wall.UnixNano()-int64(boot), true
	if w.Read == nil {
		w.at = time.Now()
	}
	return &event.Tick{Time: wall, Mono: boot}
}

// Stepped returns a tick when the wall clock moved by more than 500 ms
// against CLOCK_BOOTTIME since the last tick (or when there was none), and
// nil otherwise. With the real clocks it first compares the wall clock with
// the monotonic one (time.Now, vDSO: the daemon asks before every event,
// and the three system calls of ReadClocks were 5% of its steady CPU), and
// reads CLOCK_BOOTTIME only when they moved apart by more than a tenth of
// that: by a step, or by a suspend, which moves the monotonic clock alone.
func (w *ClockWatch) Stepped() *event.Tick {
	read := w.Read
	if read == nil {
		if now := time.Now(); w.set && !w.at.IsZero() {
			if d := now.UnixNano() - w.at.UnixNano() - int64(now.Sub(w.at)); d < int64(stepWatch/10) && d > -int64(stepWatch/10) {
				return nil
			}
		}
		read = ReadClocks
	}
	wall, boot := read()
	if w.Read == nil {
		w.at = time.Now()
	}
	if d := wall.UnixNano() - int64(boot) - w.off; w.set && d < int64(stepWatch) && d > -int64(stepWatch) {
		return nil
	}
	w.off, w.set = wall.UnixNano()-int64(boot), true
	return &event.Tick{Time: wall, Mono: boot}
}
