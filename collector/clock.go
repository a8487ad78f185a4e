package collector

import (
	"time"

	"golang.org/x/sys/unix"
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
