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
