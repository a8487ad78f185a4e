package collector

import (
	"sync"
	"sync/atomic"
)

// Pace is how often the kernel sources' ring readers look at their rings
// when the kernel has not woken them (it wakes them only once a ring is a
// quarter full): every poll (bpf.ProcessPollInterval, ...) while a pod
// start is open (within its report timeout) or a finished start or a
// return to Ready waits for its facts (correlator.Busy), so that they and
// the drained marks that let it be built come within one; every
// ringIdlePoll otherwise. A steady node has
// no start open most of the time, and its daemon's own polls, three rings
// ten times a second, were most of what it cost there: each a thread
// woken, a ring read, a mark handed to the correlator. The daemon says
// which it is (SetFast) as the correlator's starts open and close; a
// switch to fast cuts the readers' idle waits short at once.
//
// A nil Pace is always fast. Safe for concurrent use.
type Pace struct {
	fast  atomic.Bool
	kicks atomic.Uint64

	mu      sync.Mutex
	readers map[*paceWaiter]struct{}
}

// NewPace returns a Pace that starts idle.
func NewPace() *Pace { return &Pace{readers: map[*paceWaiter]struct{}{}} }

// Fast reports whether the readers poll at their own poll.
func (p *Pace) Fast() bool { return p == nil || p.fast.Load() }

// SetFast sets the pace; a switch to fast wakes the readers waiting idle.
func (p *Pace) SetFast(fast bool) {
	if p == nil || !p.fast.CompareAndSwap(!fast, fast) || !fast {
		return
	}
	p.Kick()
}

// Kick has every reader look at its ring now, and hand over its drained
// mark, whatever the pace: a start that has just ended (Ready, failed,
// deleted) is built once the marks past its end are in, and waiting for
// the next poll made each trace up to a poll later.
func (p *Pace) Kick() {
	if p == nil {
		return
	}
	p.kicks.Add(1)
	p.mu.Lock()
	defer p.mu.Unlock()
	for w := range p.readers {
		w.kick()
	}
}

// Kicks counts the kicks so far, a switch to fast's included.
func (p *Pace) Kicks() uint64 { return p.kicks.Load() }

// paceWaiter is a reader's side of a Pace: kick ends its wait now, or the
// next one if it is not waiting.
type paceWaiter struct {
	kicked atomic.Bool
	cut    func() // ends the wait in progress, if any
}

func (w *paceWaiter) kick() {
	w.kicked.Store(true) // before the cut: a wait armed after it sees the flag
	w.cut()
}

// join has p kick w until leave is called.
func (p *Pace) join(w *paceWaiter) (leave func()) {
	if p == nil {
		return func() {}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.readers[w] = struct{}{}
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		delete(p.readers, w)
	}
}
