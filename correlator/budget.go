package correlator

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/readyline/readyline/collector/event"
)

// The fact budget. What the pod starts in progress hold of the node's
// events (process records with their filename and argv, the kubelet's CRI
// calls with their commands, its TCP connections), and the events held for
// pods not seen yet (orphans.go), are bounded together by
// Config.MaxFactBytes, by their approximate size in memory (approxSize,
// recordBytes): per start MaxProcessesPerPod is not a node-wide bound, and
// a few thousand starts that never get Ready, each with thousands of
// processes of 512-byte argv, would hold gigabytes.
//
// Past the budget the oldest detail goes first, from the starts that hold
// the most: first from those over their share (the budget over the starts
// in progress), then from any. In this order:
//
//  1. the argv and filename of processes no rule reads them of: neither a
//     container's entrypoint, nor an exec session (a probe or hook the
//     kubelet ran, matched by its command), nor the runtime's own; the
//     timeline is the same without them;
//  2. those processes themselves, the exited first, the oldest first (their
//     children are re-parented to their parent, so that what is a member of
//     the entrypoint's tree or of an exec session stays one);
//  3. the oldest probe runs (exec sessions, ExecSync calls, connections),
//     past the first keepProbeRuns of each container (of each port for
//     connections): the first attempts, the postStart hook among them,
//     and the latest stay.
//
// The entrypoints, the runtime's processes, the kubelet's other CRI calls
// and the first probe runs are never dropped: when only they are left, a
// new fact that does not fit is refused. Every fact dropped or refused is
// counted (Stats.Trimmed, Stats.ArgvTrimmed; an exec that does not fit is
// taken without its argv when that fits), and the start's timeline is
// marked MarkTrimmed with a Missing line that says what went.
//
// A trim frees an eighth of the budget at once, so that its cost (a pass
// over every start's facts) is paid once per that many bytes; one that
// could not get there is not tried again before a sixteenth of the budget
// was taken. Every choice follows the order of the facts and of the starts
// (size, first sight, UID): a replay trims the same facts.

// factBudget is what the pod starts in progress hold of Config.MaxFactBytes
// (the held events are c.held).
type factBudget struct {
	bytes int
	// sinceTrim: the bytes taken since the last trim; short: that trim
	// could not free what it aimed at.
	sinceTrim int
	short     bool
}

// podBudget is what one start holds of the budget, and what the budget
// took from it.
type podBudget struct {
	bytes int
	// pods: what of bytes are its pod objects (takePods).
	pods int
	// argv: processes whose argv and filename were dropped; bare: execs
	// taken without them; procs: processes dropped; probes: probe runs
	// (exec sessions, ExecSync calls, connections) dropped; refused:
	// facts not taken.
	argv, bare, procs, probes, refused int
}

// keepProbeRuns is how many of the first exec sessions and ExecSync calls
// of each container, and connections to each port, a trim never drops.
const keepProbeRuns = 4

// recordBase is about what a process record takes without its strings:
// the struct, its exit code, its slot in the list and its entry in the map
// by pid, both as they grow (a heap profile of BenchmarkFactBudgetFlood).
var recordBase = int(reflect.TypeFor[procRecord]().Size()) + 8 + 16 + 64

// recordBytes is about what r takes in memory.
func recordBytes(r *procRecord) int {
	n := recordBase + len(r.filename) + len(r.cniContainerID) + len(r.cniCommand)
	for _, a := range r.argv {
		n += 16 + len(a)
	}
	return n
}

// factBytes is what the budget covers: the starts' facts and the held
// events.
func (c *Correlator) factBytes() int { return c.budget.bytes + c.held.bytes }

// record has p take a node event within the budget: a fact that would go
// past it is taken only if a trim makes room.
func (c *Correlator) record(p *podState, ev event.Event) {
	if size := p.newBytes(ev); size > 0 && !c.admit(size) {
		// An exec may fit without its argv (of a process already forked:
		// none), and an entrypoint's start then still shows.
		exec, ok := ev.(*event.ProcessExec)
		if !ok {
			p.budget.refused++
			c.stats.Trimmed++
			return
		}
		bare := *exec
		bare.Argv, bare.Filename, bare.ArgvTruncated = nil, "", false
		if size := p.newBytes(&bare); size > 0 && !c.admit(size) {
			p.budget.refused++
			c.stats.Trimmed++
			return
		}
		p.budget.bare++
		c.stats.ArgvTrimmed++
		ev = &bare
	}
	old, oldBytes := p.procRecordOf(ev), 0
	if old != nil {
		oldBytes = recordBytes(old)
	}
	calls, conns := len(p.calls), len(p.conns)
	c.stats.Overflow += p.record(ev)
	delta := 0
	if len(p.calls) > calls || len(p.conns) > conns {
		delta += approxSize(ev)
	}
	switch r := p.procRecordOf(ev); {
	case r == nil:
	case r == old:
		delta += recordBytes(r) - oldBytes
	default: // a new process
		delta += recordBytes(r)
	}
	c.take(p, delta)
}

// take accounts n more bytes (fewer when negative) held by p.
func (c *Correlator) take(p *podState, n int) {
	p.budget.bytes += n
	c.budget.bytes += n
	if n > 0 {
		c.budget.sinceTrim += n
	}
	c.stats.FactBytes = c.budget.bytes
}

// takePods accounts the pod objects p holds (its first and its latest,
// stripped: event.StripPod bounds each). A tenant's pods are held like
// facts, but never trimmed: they have a budget of their own,
// Config.MaxPodBytes, which a new pod must fit (podsFit) to be tracked.
func (c *Correlator) takePods(p *podState) {
	n := podBytes(p.pod)
	if p.firstPod != p.pod {
		n += podBytes(p.firstPod)
	}
	c.podBytes += n - p.budget.pods
	p.budget.pods = n
	c.stats.PodBytes = c.podBytes
}

// podBytes is about what a stripped pod takes in memory: its encoding's
// size, and the Go structs of its containers around it (a heap profile of
// TestPodObjectsBudget: 1.8 times the encoding for a pod of 16 large
// containers).
func podBytes(pod *corev1.Pod) int {
	return pod.Size() + 1024*(len(pod.Spec.InitContainers)+len(pod.Spec.Containers)) + 512
}

// podsFit reports whether a new pod of size bytes fits the pods' budget.
func (c *Correlator) podsFit(size int) bool { return c.podBytes+size <= c.cfg.MaxPodBytes }

// forgetFacts gives back what p held: its start is complete.
func (c *Correlator) forgetFacts(p *podState) {
	c.take(p, -p.budget.bytes)
	c.podBytes -= p.budget.pods
	p.budget.pods = 0
	c.stats.PodBytes = c.podBytes
}

// admit reports whether size more bytes fit the budget, trimming to make
// room when they do not.
func (c *Correlator) admit(size int) bool {
	if c.factBytes()+size <= c.cfg.MaxFactBytes {
		return true
	}
	if !c.budget.short || c.budget.sinceTrim >= c.cfg.MaxFactBytes/16 {
		c.trim(c.cfg.MaxFactBytes - c.cfg.MaxFactBytes/8 - size)
	}
	return c.factBytes()+size <= c.cfg.MaxFactBytes
}

// procRecordOf returns the latest record of the process a process event is
// about, nil when there is none (or ev is no process event).
func (p *podState) procRecordOf(ev event.Event) *procRecord {
	var proc *event.Process
	switch e := ev.(type) {
	case *event.ProcessFork:
		proc = &e.Process
	case *event.ProcessExec:
		proc = &e.Process
	case *event.ProcessExit:
		proc = &e.Process
	default:
		return nil
	}
	if cp := p.procs[proc.ContainerID]; cp != nil {
		return cp.byPID[proc.PID]
	}
	return nil
}

// newBytes is about what recording ev would add to p (record's rules).
func (p *podState) newBytes(ev event.Event) int {
	live := p.procRecordOf(ev) // the process ev is about, when it is known and alive
	if live != nil && !live.exit.IsZero() {
		live = nil
	}
	switch e := ev.(type) {
	case *event.CRICall, *event.TCPConnection:
		return approxSize(ev)
	case *event.ProcessFork:
		return recordBase
	case *event.ProcessExec:
		n := recordBytes(&procRecord{filename: e.Filename, argv: e.Argv})
		switch {
		case live == nil:
			return n
		case live.exec.IsZero():
			return n - recordBase
		}
	case *event.ProcessExit:
		if live == nil {
			return recordBase + len(e.Filename)
		}
	}
	return 0
}

// trim drops the starts' detail until the budget's facts take at most
// target bytes, or nothing more may go.
func (c *Correlator) trim(target int) {
	pods := c.sortedPods()
	sort.SliceStable(pods, func(i, j int) bool { return pods[i].budget.bytes > pods[j].budget.bytes })
	plans := make([]*trimPlan, len(pods))
	share := (target - c.held.bytes) / max(1, len(pods))
	over := func() bool { return c.factBytes() > target }
trimming:
	for _, floor := range []int{share, 0} { // a start's share first, then anything
		for tier := range trimTiers {
			for i, p := range pods {
				if !over() {
					break trimming
				}
				if p.budget.bytes <= floor {
					continue
				}
				if plans[i] == nil {
					plans[i] = p.trimPlan()
				}
				plans[i].trim(c, tier, func() bool { return over() && p.budget.bytes > floor })
			}
		}
	}
	for _, plan := range plans {
		if plan != nil {
			plan.apply()
		}
	}
	c.budget.short, c.budget.sinceTrim = over(), 0
}

// Tiers of a trim, in the order they go.
const (
	tierArgv      = iota // the argv of processes no rule reads it of
	tierExited           // those processes, exited
	tierLive             // those processes, alive
	tierProbeRuns        // probe runs past the first of each container
	trimTiers
)

// trimPlan is what a trim may take from one start, each tier's facts
// oldest first, and what it took.
type trimPlan struct {
	p     *podState
	tiers [trimTiers][]trimItem
	next  [trimTiers]int
	// dropped: the facts taken out, removed from p's lists by apply.
	dropped map[any]bool
	touched map[*containerProcs]bool
}

// trimItem is one fact a trim may take.
type trimItem struct {
	at   time.Time
	rec  *procRecord
	cp   *containerProcs
	call *event.CRICall
	conn *event.TCPConnection
	// children: processes rec forked while it lived.
	children []*procRecord
}

// trimPlan sorts p's facts into the trim's tiers.
func (p *podState) trimPlan() *trimPlan {
	plan := &trimPlan{p: p, dropped: map[any]bool{}, touched: map[*containerProcs]bool{}}
	for _, id := range sortedKeys(p.procs) {
		cp := p.procs[id]
		var started time.Time
		if rt := p.runtime[id]; rt != nil {
			started = rt.StartedAt
		}
		entry, sessions := analyzeStarted(cp, started)
		isSession := make(map[*procRecord]bool, len(sessions))
		for _, s := range sessions {
			isSession[s] = true
		}
		byParent := make(map[uint32][]*procRecord)
		for _, r := range cp.list {
			byParent[r.ppid] = append(byParent[r.ppid], r)
		}
		for i, r := range cp.list {
			if i == 0 || r == entry || isSession[r] || isRuntimeNoise(r) {
				continue // what names the container's start, and what rules read
			}
			it := trimItem{at: r.first(), rec: r, cp: cp}
			for _, ch := range byParent[r.pid] {
				if ch != r && !ch.first().Before(r.first()) && (r.exit.IsZero() || !ch.first().After(r.exit)) {
					it.children = append(it.children, ch)
				}
			}
			if len(r.argv) > 0 || r.filename != "" {
				plan.tiers[tierArgv] = append(plan.tiers[tierArgv], it)
			}
			if r.exit.IsZero() {
				plan.tiers[tierLive] = append(plan.tiers[tierLive], it)
			} else {
				plan.tiers[tierExited] = append(plan.tiers[tierExited], it)
			}
		}
		sort.SliceStable(sessions, func(i, j int) bool { return sessions[i].exec.Before(sessions[j].exec) })
		for _, s := range sessions[min(keepProbeRuns, len(sessions)):] {
			plan.tiers[tierProbeRuns] = append(plan.tiers[tierProbeRuns], trimItem{at: s.exec, rec: s, cp: cp})
		}
	}
	calls := make(map[string]int)
	for _, call := range sortedByTime(p.calls, func(c *event.CRICall) time.Time { return earliest(c.Time, c.End) }) {
		if call.Method != event.CRIExecSync {
			continue
		}
		if calls[call.ContainerID]++; calls[call.ContainerID] > keepProbeRuns {
			plan.tiers[tierProbeRuns] = append(plan.tiers[tierProbeRuns], trimItem{at: earliest(call.Time, call.End), call: call})
		}
	}
	conns := make(map[uint16]int)
	for _, conn := range sortedByTime(p.conns, func(c *event.TCPConnection) time.Time { return c.Time }) {
		if conns[conn.Dport]++; conns[conn.Dport] > keepProbeRuns {
			plan.tiers[tierProbeRuns] = append(plan.tiers[tierProbeRuns], trimItem{at: conn.Time, conn: conn})
		}
	}
	for t := range plan.tiers {
		sort.SliceStable(plan.tiers[t], func(i, j int) bool { return plan.tiers[t][i].at.Before(plan.tiers[t][j].at) })
	}
	return plan
}

// sortedByTime returns a copy of list in the order of at (stable).
func sortedByTime[T any](list []T, at func(T) time.Time) []T {
	out := append([]T(nil), list...)
	sort.SliceStable(out, func(i, j int) bool { return at(out[i]).Before(at(out[j])) })
	return out
}

// trim takes the tier's facts, oldest first, while more must go.
func (plan *trimPlan) trim(c *Correlator, tier int, more func() bool) {
	p := plan.p
	for items := plan.tiers[tier]; plan.next[tier] < len(items) && more(); plan.next[tier]++ {
		it := items[plan.next[tier]]
		switch {
		case it.rec != nil && plan.dropped[it.rec]:
		case tier == tierArgv:
			before := recordBytes(it.rec)
			it.rec.argv, it.rec.filename = nil, ""
			c.take(p, recordBytes(it.rec)-before)
			p.budget.argv++
			c.stats.ArgvTrimmed++
		case it.rec != nil:
			plan.dropped[it.rec] = true
			plan.touched[it.cp] = true
			for _, ch := range it.children {
				ch.ppid = it.rec.ppid // still in the tree it was in
			}
			c.take(p, -recordBytes(it.rec))
			plan.count(tier, c)
		case it.call != nil:
			plan.dropped[it.call] = true
			c.take(p, -approxSize(it.call))
			plan.count(tier, c)
		case it.conn != nil:
			plan.dropped[it.conn] = true
			c.take(p, -approxSize(it.conn))
			plan.count(tier, c)
		}
	}
}

func (plan *trimPlan) count(tier int, c *Correlator) {
	if tier == tierProbeRuns {
		plan.p.budget.probes++
	} else {
		plan.p.budget.procs++
	}
	c.stats.Trimmed++
}

// apply takes the facts dropped out of the start's lists.
func (plan *trimPlan) apply() {
	if len(plan.dropped) == 0 {
		return
	}
	p := plan.p
	for _, cp := range p.procs {
		if !plan.touched[cp] {
			continue
		}
		kept := cp.list[:0]
		for _, r := range cp.list {
			if plan.dropped[r] {
				if cp.byPID[r.pid] == r {
					delete(cp.byPID, r.pid)
				}
				continue
			}
			kept = append(kept, r)
		}
		if len(kept) < len(cp.list)/2 {
			// A Go map and a slice keep the room they grew to: copied,
			// they take what is left.
			byPID := make(map[uint32]*procRecord, len(cp.byPID))
			for pid, r := range cp.byPID {
				byPID[pid] = r
			}
			cp.byPID = byPID
			cp.list = append([]*procRecord(nil), kept...)
			continue
		}
		clear(cp.list[len(kept):])
		cp.list = kept
	}
	p.calls = dropFrom(p.calls, plan.dropped)
	p.conns = dropFrom(p.conns, plan.dropped)
}

// dropFrom returns list without the elements in dropped.
func dropFrom[T comparable](list []T, dropped map[any]bool) []T {
	kept := list[:0]
	for _, x := range list {
		if !dropped[x] {
			kept = append(kept, x)
		}
	}
	clear(list[len(kept):])
	return kept
}

// markTrimmed marks tl when the budget took facts of p's start, and says
// what went.
func markTrimmed(tl *Timeline, p *podState) {
	b := p.budget
	var what []string
	if b.argv > 0 {
		what = append(what, "the argv of "+count(b.argv, "process", "processes")+" that no rule reads")
	}
	if b.bare > 0 {
		what = append(what, "the argv of "+count(b.bare, "process", "processes")+" that began when nothing more could go")
	}
	if b.procs > 0 {
		what = append(what, count(b.procs, "process", "processes")+" that were neither an entrypoint nor a probe's or hook's, the oldest first")
	}
	if b.probes > 0 {
		what = append(what, fmt.Sprintf("%d of its probes' exec sessions, ExecSync calls and connections, the oldest after the first %d of each container",
			b.probes, keepProbeRuns))
	}
	if b.refused > 0 {
		what = append(what, count(b.refused, "fact", "facts")+" that came when nothing more could go")
	}
	if len(what) == 0 {
		return
	}
	tl.Marks = append(tl.Marks, MarkTrimmed)
	tl.Missing = append(tl.Missing, "readyline's memory budget for the node's facts was full: it dropped "+strings.Join(what, "; "))
}

// count is "1 process", "2 processes".
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
