package main

import (
	"fmt"
	"sync/atomic"
	"time"
)

// correlatorStall is how long the correlator loop may go without coming
// round before the daemon's health fails. Nothing it does per event takes
// more than milliseconds (a timeline's derivation, its deflated copy for
// the API); its tick comes every second.
const correlatorStall = 30 * time.Second

// loopWatchdog tells when the correlator loop has stopped coming round.
// The loop calls Beat each time it takes an event or a tick, and the
// health endpoint asks Check, which fails once the last beat is older than
// the stall it was made with. The loop's ticker fires every second, so a
// loop that is free beats at least that often even on a quiet node: a beat
// older than the stall means the loop has been inside one event that long
// (blocked, or starved of CPU) while its tick, and maybe events, waited.
// Until it comes round, the sources block on its channel and the kernel's
// ring buffers overflow; only a restart gets it going, so the liveness
// probe fails and the kubelet restarts the daemon.
//
// Beat and Check are safe for concurrent use; a nil loopWatchdog never
// fails.
type loopWatchdog struct {
	stall time.Duration
	// waiting is how many events wait for the loop, for the message.
	waiting func() int
	now     func() time.Time
	base    time.Time
	// last is the last beat, in ns since base (monotonic); 0 before the
	// first, when the loop has not started and there is nothing to judge.
	last atomic.Int64
}

// newLoopWatchdog returns a watchdog that fails after stall without a
// beat; waiting counts the events queued for the loop.
func newLoopWatchdog(stall time.Duration, waiting func() int) *loopWatchdog {
	w := &loopWatchdog{stall: stall, waiting: waiting, now: time.Now}
	w.base = w.now()
	return w
}

// Beat records that the loop came round.
func (w *loopWatchdog) Beat() {
	if w == nil {
		return
	}
	w.last.Store(max(int64(w.now().Sub(w.base)), 1))
}

// Check returns an error when the loop has not come round for the stall.
func (w *loopWatchdog) Check() error {
	if w == nil {
		return nil
	}
	last := w.last.Load()
	if last == 0 {
		return nil
	}
	since := w.now().Sub(w.base) - time.Duration(last)
	if since < w.stall {
		return nil
	}
	return fmt.Errorf("the correlator loop has not come round for %v (more than %v; %d events waiting for it)",
		since.Round(time.Second), w.stall, w.waiting())
}
