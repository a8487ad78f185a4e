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
