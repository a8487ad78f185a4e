package bpf

import (
	"testing"
	"time"

	"github.com/cilium/ebpf"

	"github.com/readyline/readyline/collector/testenv"
)

// TestRingWakeupAndPoll: the README's "the reader is woken only when a
// quarter of the ring is waiting and otherwise polls every 100 ms". The
// collector's readers of all three rings poll at these intervals.
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

// TestRingWakeupBytesLoaded: each loader hands its programs a quarter of
// its ring as the wakeup threshold (a program left at the compiled-in
// default would wake the reader at 256 KiB of whatever ring it has, or,
// as goprobe did, at every record).
func TestRingWakeupBytesLoaded(t *testing.T) {
	testenv.RequirePrivileged(t)
	const ring = 1 << 16
	check := func(name string, v *ebpf.Variable) {
		t.Helper()
		var got uint64
		if err := v.Get(&got); err != nil {
			t.Fatalf("%s: reading wakeup_bytes: %v", name, err)
		}
		if got != ring/wakeupFraction {
			t.Errorf("%s: wakeup_bytes = %d with a %d-byte ring, want %d", name, got, ring, ring/wakeupFraction)
		}
	}
	gp, err := LoadGoProbeProgram(GoProbeOptions{RingBufferBytes: ring})
	if err != nil {
		t.Fatal(err)
	}
	defer gp.Close()
	check("goprobe", gp.objs.WakeupBytes)
	pp, err := LoadProcessProgram(ProcessOptions{RingBufferBytes: ring})
	if err != nil {
		t.Fatal(err)
	}
	defer pp.Close()
	check("process", pp.objs.WakeupBytes)
	tp, err := LoadTCPProgram(TCPOptions{RingBufferBytes: ring})
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	check("tcp", tp.objs.WakeupBytes)
}
