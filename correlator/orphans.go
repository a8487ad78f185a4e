package correlator

import (
	"cmp"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/readyline/readyline/collector/event"
)

// Held events: the node's facts of a pod not seen in the API yet (orphans,
// by pod UID) and events naming an id or address no pod is known for yet
// (the owner index's pending, by key). They wait for their pod for
// OrphanTTL (outage.go: longer while the pod watch is down), within bounds:
// MaxPods keys in each map, MaxProcessesPerPod events a key and
// MaxOrphanBytes in all, itself a part of MaxFactBytes (budget.go).

type orphanEvents struct {
	first  time.Time
	events []event.Event
	bytes  int
}

// heldTotal is what both maps hold.
type heldTotal struct{ events, bytes int }

// hold keeps ev among m's events for key; past a bound it is dropped and
// counted (Stats.Overflow).
func (c *Correlator) hold(m map[string]*orphanEvents, key string, ev event.Event) {
	size := approxSize(ev)
	o := m[key]
	switch {
	case o == nil && len(m) >= c.cfg.MaxPods,
		o != nil && len(o.events) >= c.cfg.MaxProcessesPerPod,
		c.held.bytes+size > c.cfg.MaxOrphanBytes:
		c.stats.Overflow++
		return
	case !c.admit(size): // the node-wide budget (budget.go)
		c.stats.Trimmed++
		return
	case o == nil:
		o = &orphanEvents{first: c.clock.now}
		m[key] = o
	}
	o.events = append(o.events, ev)
	o.bytes += size
	c.held.events++
	c.held.bytes += size
}

// release takes key's events out of m.
func (c *Correlator) release(m map[string]*orphanEvents, key string) (*orphanEvents, bool) {
	o, ok := m[key]
	if !ok {
		return nil, false
	}
	delete(m, key)
	c.held.events -= len(o.events)
	c.held.bytes -= o.bytes
	return o, true
}

// rehold puts back, as o (its first time kept), the events of o released
// that must still wait.
func (c *Correlator) rehold(m map[string]*orphanEvents, key string, o *orphanEvents, events []event.Event) {
	o.events, o.bytes = events, 0
	for _, ev := range events {
		o.bytes += approxSize(ev)
	}
	m[key] = o
	c.held.events += len(o.events)
	c.held.bytes += o.bytes
}

// approxSize is about what ev takes in memory: its struct and its strings.
func approxSize(ev event.Event) int {
	n := int(reflect.TypeOf(ev).Elem().Size()) + 16 // and its slot in the slice
	str := func(ss ...string) {
		for _, s := range ss {
			n += len(s)
		}
	}
	list := func(ss []string) {
		for _, s := range ss {
			n += 16 + len(s)
		}
	}
	proc := func(p *event.Process) { str(p.Comm, p.Cgroup, p.ContainerID, p.PodUID) }
	switch e := ev.(type) {
	case *event.ProcessExec:
		proc(&e.Process)
		str(e.Filename, e.CNIContainerID, e.CNICommand)
		list(e.Argv)
	case *event.ProcessExit:
		proc(&e.Process)
		str(e.Filename)
	case *event.ProcessFork:
		proc(&e.Process)
	case *event.CRICall:
		str(string(e.Method), e.PodSandboxID, e.ContainerID, e.PodUID, e.ContainerName, e.Image, e.ImageRef)
		list(e.Cmd)
	case *event.ContainerInfo:
		str(e.ContainerID, e.SandboxID, e.PodUID, e.PodName, e.Namespace, e.ContainerName, e.State, e.Reason, e.Image, e.PodIP)
	case *event.TCPConnection:
		str(e.Saddr, e.Daddr, string(e.Result), e.Error)
	}
	return n
}

// OrphanKinds says what events were, by kind and count, the commonest
// first: "exit 12, ExecSync 3, exec 2" (a CRI call by its method).
func OrphanKinds(events []event.Event) string {
	counts := map[string]int{}
	for _, ev := range events {
		kind := string(ev.Type())
		if call, ok := ev.(*event.CRICall); ok {
			kind = call.Method.Short()
		}
		counts[kind]++
	}
	kinds := slices.Collect(maps.Keys(counts))
	slices.SortFunc(kinds, func(a, b string) int { return cmp.Or(cmp.Compare(counts[b], counts[a]), cmp.Compare(a, b)) })
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s %d", k, counts[k])
	}
	return strings.Join(parts, ", ")
}

// dropUnclaimed drops the held events that waited their time for a pod
// that never showed up (OrphanTTL; a static pod's config hash, the start
// Timeout): the teardown of a pod deleted before readyline watched is
// counted as such (Stats.UnknownTeardown), the rest as lost
// (Stats.Orphaned), and Config.Orphaned is told of them.
func (c *Correlator) dropUnclaimed() {
	for _, m := range []map[string]*orphanEvents{c.orphans, c.index.pending} {
		for key, o := range m {
			ttl := c.cfg.OrphanTTL
			if looksLikeConfigHash(key) {
				ttl = max(ttl, c.cfg.Timeout)
			}
			if from, ok := c.orphanTTLFrom(o); ok && c.clock.now.Sub(from) >= ttl {
				ended := showsEnd(o.events)
				lost := 0
				for _, ev := range o.events {
					if isTeardown(ev) || ended && isRuntimeReport(ev) {
						c.stats.UnknownTeardown++
					} else {
						c.stats.Orphaned++
						lost++
					}
				}
				if c.cfg.Orphaned != nil && len(o.events) > 0 {
					c.cfg.Orphaned(key, o.first, o.events, lost)
				}
				c.release(m, key)
			}
		}
	}
}

// isTeardown: ev is the kubelet stopping or removing a sandbox or a
// container.
func isTeardown(ev event.Event) bool {
	call, ok := ev.(*event.CRICall)
	if !ok {
		return false
	}
	switch call.Method {
	case event.CRIStopPodSandbox, event.CRIRemovePodSandbox, event.CRIStopContainer, event.CRIRemoveContainer:
		return true
	}
	return false
}

// showsEnd: events (of one pod never seen) hold its end: the kubelet
// stopping or removing its sandbox or a container, or the runtime
// reporting its sandbox not ready or a container exited.
func showsEnd(events []event.Event) bool {
	for _, ev := range events {
		if isTeardown(ev) {
			return true
		}
		if info, ok := ev.(*event.ContainerInfo); ok && (info.State == "exited" || info.State == "notready") {
			return true
		}
	}
	return false
}

// isRuntimeReport: ev is the runtime telling of a sandbox or a container.
// Those of a pod never seen whose end is among its events are the remains
// of a pod deleted before readyline saw it (the runtime source's first
// sync lists what the kubelet has not removed yet, in whatever state the
// teardown left it): no start needs them.
func isRuntimeReport(ev event.Event) bool {
	_, ok := ev.(*event.ContainerInfo)
	return ok
}

// knows reports whether uid (or the static pod it is the config hash of) is
// a pod the correlator tracks or remembers.
func (c *Correlator) knows(uid string) bool {
	uid = c.resolve(uid)
	if _, ok := c.pods[uid]; ok {
		return true
	}
	if _, ok := c.ended[uid]; ok {
		return true
	}
	_, ok := c.gone[uid]
	return ok
}

// goneTTL is how long a pod forgotten after its deletion is remembered as
// gone (its ids in the owner index with it); at most maxGone such pods are
// (the oldest forgotten first). An hour: the kubelet's garbage collector
// stops and removes a deleted pod's sandbox and containers by id, one call
// after another, once a minute at most; on a busy node a pass takes
// minutes (bench-node's churn, 100 pods deleted at once, StopPodSandbox
// and RemovePodSandbox each 2-3 s: a round's last sandboxes went over 10
// minutes after their pods, and with ten minutes here, 980 such calls were
// counted as events of unknown pods).
const (
	goneTTL = time.Hour
	maxGone = 4096
)

// rememberGone notes uid as forgotten after its deletion.
func (c *Correlator) rememberGone(uid string) {
	if len(c.gone) >= maxGone {
		oldest := ""
		for id, at := range c.gone {
			if oldest == "" || at.Before(c.gone[oldest]) {
				oldest = id
			}
		}
		delete(c.gone, oldest)
		c.index.knownMayShrink()
	}
	c.gone[uid] = c.clock.now
}
