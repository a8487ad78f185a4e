package bpf

import (
	"testing"
	"time"
)

// TestRingWakeupAndPoll: the README's "the reader is woken only when a
// quarter of the ring is waiting and otherwise polls every 100 ms". The
// process and tcp loaders set wakeup_bytes to MaxEntries/wakeupFraction
// (goprobe wakes at each record); the collector's readers of all three
// rings poll at these intervals.
func TestRingWakeupAndPoll(t *testing.T) {
	if wakeupFraction != 4 {
		t.Errorf("the reader is woken at 1/%d of the ring, the README says a quarter", wakeupFraction)
	}
	for name, every := range map[string]time.Duration{"process": ProcessPollInterval, "cri_calls": GoCallPollInterval, "tcp": TCPPollInterval} {
		if every != 100*time.Millisecond {
			t.Errorf("the %s ring is polled every %v, the README says 100 ms", name, every)
		}
	}
}
