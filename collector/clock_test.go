package collector

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestBootClockTime(t *testing.T) {
	c := BootClock{Offset: 1_700_000_000_000_000_000}
	got := c.Time(1_500_000_001)
	want := time.Unix(1_700_000_001, 500_000_001).UTC()
	if !got.Equal(want) || got.Location() != time.UTC {
		t.Fatalf("Time = %v, want %v in UTC", got, want)
	}
}

// slewBound is how far CLOCK_REALTIME may drift from CLOCK_BOOTTIME over
// elapsed while NTP slews it: at most 500 ppm (the kernel's MAXFREQ), plus
// a microsecond of rounding.
func slewBound(elapsed time.Duration) time.Duration {
	return elapsed/2000 + time.Microsecond
}

// TestNewBootClockMatchesWallClock: a boot time read now converts to the
// wall clock's time now. Each side's stamp is bracketed, not raced: the
// offset NewBootClock picks is off by at most the time it took (each of
// its readings brackets the boot clock between two wall-clock reads), and
// the boot clock is read between two time.Now; so the converted time lies
// in [before - that, after + that], however long the scheduler held the
// test anywhere in between.
func TestNewBootClockMatchesWallClock(t *testing.T) {
	began := time.Now()
	c := NewBootClock()
	sampling := time.Since(began)
	var boot unix.Timespec
	before := time.Now()
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &boot); err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	slack := sampling + slewBound(after.Sub(began))
	got := c.Time(uint64(boot.Nano()))
	if got.Before(before.Add(-slack)) || got.After(after.Add(slack)) {
		t.Fatalf("boot time now converts to %v, outside [%v, %v] (the read bracketed by time.Now, widened by the %v NewBootClock took)",
			got, before.Add(-slack), after.Add(slack), sampling)
	}
}

// TestReadClocks: the pair is the boot clock's offset (what the kernel
// sources add to event times) and boot time moves forward. Bracketed as
// above: wall is the middle of two wall-clock reads made inside the call,
// so it lies between time.Now before and after it; wall - boot is off the
// true offset by at most the call's duration, NewBootClock's by at most
// its own.
func TestReadClocks(t *testing.T) {
	began := time.Now()
	off := NewBootClock().Offset
	sampling := time.Since(began)
	before := time.Now()
	wall, boot := ReadClocks()
	after := time.Now()
	if boot <= 0 || wall.Location() != time.UTC {
		t.Fatalf("ReadClocks = %v, %v", wall, boot)
	}
	if wall.Before(before) || wall.After(after) {
		t.Errorf("wall %v outside the call, [%v, %v]", wall, before, after)
	}
	bound := sampling + after.Sub(before) + slewBound(after.Sub(began))
	if d := time.Duration(wall.UnixNano() - int64(boot) - off); d < -bound || d > bound {
		t.Errorf("wall - boot is %v from the boot clock's offset, more than the %v the two reads took", d, bound)
	}
	time.Sleep(time.Millisecond)
	if _, later := ReadClocks(); later <= boot {
		t.Errorf("boot time went from %v to %v", boot, later)
	}
}

// TestClockWatchStepped: a tick at once when the wall clock moved against
// the boot clock, not while both run alike.
func TestClockWatchStepped(t *testing.T) {
	wall := time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)
	boot := time.Hour
	w := &ClockWatch{Read: func() (time.Time, time.Duration) { return wall, boot }}
	if w.Stepped() == nil {
		t.Fatal("no tick before the first one: nothing to compare with")
	}
	if tk := w.Tick(); !tk.Time.Equal(wall) || tk.Mono != boot {
		t.Fatalf("tick %+v", tk)
	}
	wall, boot = wall.Add(3*time.Second), boot+3*time.Second+100*time.Millisecond // slewed, not stepped
	if tk := w.Stepped(); tk != nil {
		t.Errorf("tick %+v without a step", tk)
	}
	wall = wall.Add(-time.Hour)
	tk := w.Stepped()
	if tk == nil || !tk.Time.Equal(wall) || tk.Mono != boot {
		t.Fatalf("step back an hour: tick %+v", tk)
	}
	if w.Stepped() != nil {
		t.Error("a second tick for the same step")
	}
}

// TestClockWatchSteppedReadsNoClockWhenNothingMoved: with the real clocks,
// an unmoved wall clock is told by time.Now alone (the daemon asks before
// every event): the boot clock is not read, so nothing is re-based.
func TestClockWatchSteppedReadsNoClockWhenNothingMoved(t *testing.T) {
	var w ClockWatch
	w.Tick()
	at := w.at
	for range 1000 {
		if tk := w.Stepped(); tk != nil {
			t.Fatalf("a tick %+v, the wall clock did not step", tk)
		}
	}
	if !w.at.Equal(at) || w.at.IsZero() {
		t.Errorf("the clocks were read again (at %v, was %v): the cheap path was not taken", w.at, at)
	}
}
