package correlator

import (
	"time"

	"github.com/readyline/readyline/collector/event"
)

// When a finished start is built.
//
// A pod start is over when the API shows its outcome (Ready, a failure, its
// deletion), and by then the node facts that led to it have happened: the
// kubelet ran the probe that passed, got its CRI calls' answers and saw its
// containers start before it wrote the status that said so. They may still
// be on their way, in a kernel ring buffer or in the daemon's queue. The
// kernel sources say how far they have read (event.Drained), so a finished
// start is built as soon as
//
//   - every kernel source that says so and is not blind has drained past
//     the moment the outcome was seen (later facts belong to the pod's life,
//     not its start), and
//   - the runtime has told the start of each container the API shows
//     running or terminated (its times are the runtime's own; while the
//     runtime's source is blind the start waits for it, gaps.go);
//
// and at the latest Config.Grace after it finished, as before, when a
// source never says it drained (a recording made before Drained existed,
// `readyline events`) or falls behind.

// noteDrained moves a source's drained mark on.
func (c *Correlator) noteDrained(e *event.Drained) {
	if !e.Time.After(c.drained[e.Source]) {
		return
	}
	c.drained[e.Source] = e.Time
	if len(c.regaining) > 0 {
		c.lastExpire = time.Time{} // a recovery may be complete now: look at once
		return
	}
	for _, p := range c.pods {
		if p.outcome != "" {
			c.lastExpire = time.Time{} // a start may be complete now: look at once
			return
		}
	}
}

// regaining is a return to Ready of a started pod (afterState.regained)
// waiting for the facts up to it: seen is when the update that told it was
// seen, stamp when the correlator took it (for the grace period).
type regaining struct{ seen, stamp time.Time }

// finishRecoveries builds the returns to Ready whose facts are in, as a
// finished start's (caughtUp), or whose grace period is over.
func (c *Correlator) finishRecoveries() {
	for _, uid := range sortedKeys(c.regaining) {
		r := c.regaining[uid]
		a := c.ended[uid].after
		if a != nil && !c.drainedPast(r.seen) && c.clock.now.Sub(r.stamp) < c.cfg.Grace {
			continue
		}
		delete(c.regaining, uid)
		if a == nil {
			continue
		}
		if rec := a.finishRecovery(); rec != nil {
			c.recoveries = append(c.recoveries, *rec)
		}
	}
}

// noteRingSource has a kernel source that says it is Up waited for until
// it drains: one that sees and has not said how far is not caught up.
func (c *Correlator) noteRingSource(e *event.SourceStatus) {
	switch e.Source {
	case event.SourceProcess, event.SourceKubeletCalls, event.SourceTCP:
		if _, ok := c.drained[e.Source]; !ok && e.Up {
			c.drained[e.Source] = time.Time{}
		}
	}
}

// caughtUp reports whether p's facts are all in before its grace period
// ends (see above). Without a single mark (a recording made before them),
// never: the grace period alone decides.
func (c *Correlator) caughtUp(p *podState) bool {
	return !p.doneSeen.IsZero() && c.drainedPast(p.doneSeen) && p.runtimeTold()
}

// drainedPast reports whether every kernel source that says how far it read
// and is not blind has read past seen. Without a single mark, never.
func (c *Correlator) drainedPast(seen time.Time) bool {
	marked := false
	for source, at := range c.drained {
		marked = marked || !at.IsZero()
		if at.Before(seen) && !c.blindNow(source) {
			return false
		}
	}
	return marked
}

// blindNow reports whether source is in a blind window that has not ended.
func (c *Correlator) blindNow(source string) bool {
	ws := c.blind[source]
	return len(ws) > 0 && ws[len(ws)-1].To.IsZero()
}

// runtimeTold reports whether the runtime's word on the start of each
// container the API shows started or ended is in.
func (p *podState) runtimeTold() bool {
	for id, f := range p.status {
		r := p.runtime[id]
		switch {
		case !f.terminated.IsZero():
			if r == nil || r.FinishedAt.IsZero() {
				return false
			}
		case !f.running.IsZero():
			if r == nil || r.StartedAt.IsZero() {
				return false
			}
		}
	}
	return true
}
