package collector

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

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
	go func() { done <- w.wait(time.Now().Add(time.Minute), nil) }()
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
	err = wq.wait(deadline, nil)
	if returned := time.Now(); !errors.Is(err, os.ErrDeadlineExceeded) || returned.Before(deadline) {
		t.Errorf("wait on a quiet ring: %v %v before its deadline, want the deadline's error at or after it", err, deadline.Sub(returned))
	}
	// Closed: a wait in progress ends.
	go func() { time.Sleep(50 * time.Millisecond); wq.close() }()
	if err := wq.wait(time.Time{}, nil); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("wait on a closed ring: %v, want the file's closing", err)
	}
}

// BenchmarkIdleRingsWakeups: the three rings of an idle node, each polled
// every 100 ms as the sources do, every-poll and, as the daemon has them
// while no pod start is open, paced (Pace: every ringIdlePoll). Reports
// the process's CPU time and context switches a second (all its
// threads': each is a thread put to sleep and woken) and the polls a
// second.
func BenchmarkIdleRingsWakeups(b *testing.B) {
	testenv.RequirePrivileged(b)
	for _, c := range []struct {
		name string
		pace *Pace
	}{{"every-poll", nil}, {"paced", NewPace()}} {
		b.Run(c.name, func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			var polls atomic.Int64
			for range 3 {
				ring := quietRing(b)
				wg.Go(func() {
					opts := ringOptions{Poll: 100 * time.Millisecond, Pace: c.pace, IdlePoll: ringIdlePoll,
						Drained: func(time.Time) { polls.Add(1) }}
					if err := readRing(ctx, ring, opts, func([]byte) {}); err != nil {
						b.Error(err)
					}
				})
			}
			defer func() { cancel(); wg.Wait() }()
			time.Sleep(300 * time.Millisecond) // the readers are in their waits
			start, polls0, sw0, cpu0 := time.Now(), polls.Load(), contextSwitches(b), processCPU(b)
			for b.Loop() {
				time.Sleep(2 * time.Second)
			}
			secs := time.Since(start).Seconds()
			b.ReportMetric(float64(contextSwitches(b)-sw0)/secs, "switches/s")
			b.ReportMetric(float64((processCPU(b)-cpu0).Microseconds())/secs, "cpu-µs/s")
			b.ReportMetric(float64(polls.Load()-polls0)/secs, "polls/s")
		})
	}
}

// quietRing is a ring buffer no program writes to.
func quietRing(tb testing.TB) *ebpf.Map {
	ring, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.RingBuf, MaxEntries: uint32(os.Getpagesize())})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ring.Close() })
	return ring
}

// TestRingReaderPaced: a paced reader waits its idle poll while the pace
// is idle, looks at once when it turns fast and every poll while it is,
// goes back to its idle poll when it turns idle again, and looks once when
// kicked.
func TestRingReaderPaced(t *testing.T) {
	testenv.RequirePrivileged(t)
	pace := NewPace()
	polls := make(chan time.Time, 1000)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		opts := ringOptions{Poll: 20 * time.Millisecond, Pace: pace, IdlePoll: time.Hour,
			Drained: func(at time.Time) { polls <- at }}
		done <- readRing(ctx, quietRing(t), opts, func([]byte) {})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	count := func(d time.Duration) int {
		n := 0
		for end := time.After(d); ; {
			select {
			case <-polls:
				n++
			case <-end:
				return n
			}
		}
	}
	if n := count(300 * time.Millisecond); n != 0 {
		t.Fatalf("%d polls while idle, with an idle poll of an hour", n)
	}
	// lookAfter has the reader look once after do (its drained mark is
	// stamped after its wait: not before do).
	lookAfter := func(what string, do func()) {
		t.Helper()
		before := time.Now()
		do()
		select {
		case at := <-polls:
			if at.Before(before) {
				t.Fatalf("looked at %v, before %s at %v", at, what, before)
			}
		case <-time.After(time.Minute):
			t.Fatalf("no look within a minute of %s", what)
		}
	}
	lookAfter("the pace turned fast", func() { pace.SetFast(true) })
	if n := count(time.Second); n < 5 {
		t.Fatalf("%d polls in a second of a fast pace, polling every 20 ms", n)
	}
	pace.SetFast(false)
	count(100 * time.Millisecond) // the wait armed fast ends
	if n := count(300 * time.Millisecond); n != 0 {
		t.Fatalf("%d polls idle again, with an idle poll of an hour", n)
	}
	lookAfter("a kick", pace.Kick)
	if n := count(300 * time.Millisecond); n != 0 {
		t.Fatalf("%d polls after the kick's, idle, with an idle poll of an hour", n)
	}
}

// TestRingWaiterKickedBeforeItWaits: a kick that comes before the wait has
// set its deadline ends that wait at once, not at its deadline.
func TestRingWaiterKickedBeforeItWaits(t *testing.T) {
	testenv.RequirePrivileged(t)
	w, err := newRingWaiter(quietRing(t))
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	paced := &paceWaiter{cut: w.cut}
	paced.kick()
	done := make(chan error, 1)
	go func() { done <- w.wait(time.Now().Add(time.Hour), paced) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("kicked wait: %v, want nil", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("a wait kicked before it began waited on")
	}
	// Kicked once: the next wait is to its deadline.
	deadline := time.Now().Add(50 * time.Millisecond)
	if err := w.wait(deadline, paced); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the wait after the kicked one: %v, want its deadline", err)
	}
}

// contextSwitches sums the context switches of the process's threads.
func contextSwitches(tb testing.TB) int64 {
	tasks, err := filepath.Glob("/proc/self/task/*/status")
	if err != nil {
		tb.Fatal(err)
	}
	var n int64
	for _, f := range tasks {
		data, err := os.ReadFile(f)
		if err != nil {
			continue // a thread gone
		}
		for line := range strings.Lines(string(data)) {
			k, v, ok := strings.Cut(line, ":")
			if ok && strings.HasSuffix(k, "ctxt_switches") {
				c, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				n += c
			}
		}
	}
	return n
}

// processCPU is the process's CPU time so far, user and system.
func processCPU(tb testing.TB) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
