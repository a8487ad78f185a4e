package collector

import (
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/cilium/ebpf"

	"github.com/readyline/readyline/bpf"
	"github.com/readyline/readyline/collector/testenv"
)

// TestRingWaiterNetpoll: a ring buffer is waited for in the netpoller, not
// on a thread of its own: the wait ends at its deadline when nothing wakes
// it, and at the kernel's wakeup (a ring of one page wakes its reader at
// a quarter, about one exec record) long before.
func TestRingWaiterNetpoll(t *testing.T) {
	testenv.RequirePrivileged(t)
	prog, err := bpf.LoadProcessProgram(bpf.ProcessOptions{RingBufferBytes: uint32(os.Getpagesize())})
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	w, err := newRingWaiter(prog.Events())
	if err != nil {
		t.Fatalf("the ring buffer cannot be polled in the netpoller: %v", err)
	}
	defer w.close()

	// Woken: an exec's record fills a quarter of the ring.
	// The deadline is far: a nil error is the wakeup, the deadline's is
	// os.ErrDeadlineExceeded.
	done := make(chan error, 1)
	go func() { done <- w.wait(time.Now().Add(time.Minute)) }()
	for i := 0; ; i++ {
		if err := exec.Command("/bin/true").Run(); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("wait after an exec: %v, want a wakeup", err)
			}
		case <-time.After(100 * time.Millisecond):
			if i < 50 {
				continue
			}
			t.Fatal("no wakeup after 50 execs")
		}
		break
	}

	// Not woken: a ring no program writes to waits until its deadline.
	quiet, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.RingBuf, MaxEntries: uint32(os.Getpagesize())})
	if err != nil {
		t.Fatal(err)
	}
	defer quiet.Close()
	wq, err := newRingWaiter(quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer wq.close()
	// Stamped after the wait returned: never before the deadline it was given.
	deadline := time.Now().Add(200 * time.Millisecond)
	err = wq.wait(deadline)
	if returned := time.Now(); !errors.Is(err, os.ErrDeadlineExceeded) || returned.Before(deadline) {
		t.Errorf("wait on a quiet ring: %v %v before its deadline, want the deadline's error at or after it", err, deadline.Sub(returned))
	}
	// Closed: a wait in progress ends.
	go func() { time.Sleep(50 * time.Millisecond); wq.close() }()
	if err := wq.wait(time.Time{}); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("wait on a closed ring: %v, want the file's closing", err)
	}
}
