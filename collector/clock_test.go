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

func TestNewBootClockMatchesWallClock(t *testing.T) {
	c := NewBootClock()
	var boot unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &boot); err != nil {
		t.Fatal(err)
	}
	got, now := c.Time(uint64(boot.Nano())), time.Now()
	if d := now.Sub(got); d < 0 || d > 50*time.Millisecond {
		t.Fatalf("boot time now converts to %v, %v from time.Now()", got, d)
	}
}

// TestReadClocks: the pair is the boot clock's offset (what the kernel
// sources add to event times) and boot time moves forward.
func TestReadClocks(t *testing.T) {
	wall, boot := ReadClocks()
	if boot <= 0 || wall.Location() != time.UTC {
		t.Fatalf("ReadClocks = %v, %v", wall, boot)
	}
	off := NewBootClock().Offset
	if d := time.Duration(wall.UnixNano() - int64(boot) - off); d < -5*time.Millisecond || d > 5*time.Millisecond {
		t.Errorf("wall - boot is %v from the boot clock's offset", d)
	}
	if now := time.Now(); now.Sub(wall) < 0 || now.Sub(wall) > 50*time.Millisecond {
		t.Errorf("wall %v, time.Now %v", wall, now)
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
