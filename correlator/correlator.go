package correlator

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/readyline/readyline/collector/event"
)

// Config tunes a Correlator. Zero fields take the defaults.
type Config struct {
	// Timeout ends a pod start that has not reached Ready, failure or
	// deletion this long after the pod was first seen. Default 10 min.
	Timeout time.Duration
	// Grace is how long a finished pod start waits for late events (process
	// exits, runtime timestamps) before its timeline is built. Kernel events
	// reach the correlator at most ~100 ms late. Default 1 s.
	Grace time.Duration
	// OrphanTTL is how long events for a pod not (yet) seen in the API are
	// kept in case the pod shows up, and how long a deleted pod's late events
	// (the exits of its killed processes) are still recognised. Default 30 s.
	// While the pod watch is down nothing waiting expires, and after its
	// return it gets OrphanTTL from then (outage.go).
	// Events of what looks like a static pod (a node-side UID of the form of
	// a kubelet config hash) wait up to Timeout instead: its mirror pod may
	// come much later (static.go).
	OrphanTTL time.Duration
	// MaxPods bounds the pod starts tracked at once, and the pods whose start
	// has ended that are remembered until the API deletes them (a node runs
	// far fewer). Default 4096.
	MaxPods int
	// MaxProcessesPerPod bounds the processes remembered per pod start
	// (a pod that forks wildly is cut off, not the daemon). Default 4096.
	MaxProcessesPerPod int
	// MaxOrphanBytes bounds the events kept for pods not (yet) seen in the
	// API, and for ids and addresses no pod is known for, by their
	// approximate size in memory: while the pod watch is down they are kept
	// until it is back (outage.go), not OrphanTTL. Default half of
	// MaxFactBytes, at most all of it.
	MaxOrphanBytes int
	// MaxFactBytes bounds, node-wide, what the pod starts in progress keep
	// of the node's events (processes and their argv, CRI calls, TCP
	// connections) and the events kept for pods not seen yet, by their
	// approximate size in memory: past it the oldest detail goes, counted
	// and marked (budget.go). Default 32 MiB.
	MaxFactBytes int
	// MaxPodBytes bounds the pod objects (stripped) that the starts in
	// progress hold, apart from the facts: they are never trimmed, and a
	// new pod past it is not tracked (Stats.Overflow). Default
	// MaxFactBytes.
	MaxPodBytes int
	// Orphaned, when set, is told of the events held for a pod (or an id)
	// that never showed up, as they are dropped (Stats.Orphaned and
	// UnknownTeardown count them): which pod they claimed, since when,
	// what they were (OrphanKinds) and how many of them were a loss
	// (Stats.Orphaned; the rest are a teardown no start needs).
	Orphaned func(key string, first time.Time, events []event.Event, lost int)
}

func (c Config) withDefaults() Config {
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Minute
	}
	if c.Grace <= 0 {
		c.Grace = time.Second
	}
	if c.OrphanTTL <= 0 {
		c.OrphanTTL = 30 * time.Second
	}
	if c.MaxPods <= 0 {
		c.MaxPods = 4096
	}
	if c.MaxProcessesPerPod <= 0 {
		c.MaxProcessesPerPod = 4096
	}
	if c.MaxFactBytes <= 0 {
		c.MaxFactBytes = 32 << 20
	}
	if c.MaxPodBytes <= 0 {
		c.MaxPodBytes = c.MaxFactBytes
	}
	switch {
	case c.MaxOrphanBytes <= 0:
		c.MaxOrphanBytes = c.MaxFactBytes / 2
	case c.MaxOrphanBytes > c.MaxFactBytes:
		c.MaxOrphanBytes = c.MaxFactBytes
	}
	return c
}

// Stats counts what the correlator did with its input.
type Stats struct {
	Events    uint64 // events handled
	Timelines uint64 // timelines completed
	// Tracked is the number of pod starts in progress.
	Tracked int
	// Orphaned counts events dropped because their pod never showed up.
	Orphaned uint64
	// AfterStart counts events for pods whose start is already complete:
	// their life goes on, but readyline traces only the start. Not a loss.
	AfterStart uint64
	// UnknownTeardown counts the kubelet's calls that stop or remove a
	// sandbox or container by an id no pod was ever known for, once they
	// have waited OrphanTTL: the teardown of a pod deleted before readyline
	// watched (its garbage collector's, minutes later on a busy node), and
	// the runtime's reports of such a pod's sandbox and containers when its
	// end is among its events (showsEnd).
	// Not a loss: readyline learns the ids of every container created
	// while it watches, so no start it could trace is in them.
	UnknownTeardown uint64
	// Overflow counts events dropped by the MaxPods / MaxProcessesPerPod /
	// MaxOrphanBytes bounds.
	Overflow uint64
	// Trimmed counts the facts the MaxFactBytes budget took from pod starts
	// or refused, ArgvTrimmed the processes whose argv it dropped;
	// FactBytes is what the starts in progress hold of it (budget.go).
	Trimmed, ArgvTrimmed uint64
	FactBytes            int
	// PodBytes is what the starts in progress hold of pod objects
	// (stripped), within MaxPodBytes.
	PodBytes int
	// Held is the number of events kept for pods not seen in the API yet
	// (or ids no pod is known for), HeldBytes their approximate size.
	Held, HeldBytes int
	// Forgotten counts ended pods forgotten before the API deleted them,
	// because MaxPods of them were remembered.
	Forgotten uint64
	// ClockSteps counts the steps of the wall clock the ticks showed
	// (clock.go); ClockStep is the latest one (negative: back).
	ClockSteps uint64
	ClockStep  time.Duration
}

// Correlator builds pod start timelines from events. It is deterministic:
// its only clock is the one the events carry, the daemon's ticks' monotonic
// reading (or, in recordings without one, the latest event time seen), so
// that timeouts do not follow steps of the wall clock (clock.go). Not safe
// for concurrent use.
//
// A pod has one start per incarnation (UID): once its start has ended, the
// pod is remembered until the API reports its deletion, however long it
// lives, so a readiness flap or a crash loop never opens a second start.
type Correlator struct {
	cfg   Config
	clock clock
	pods  map[string]*podState
	// ended: pods whose start is over (completed here, or already started
	// when first seen), until their deletion; their events are not orphans.
	ended map[string]endedPod
	// gone: pods forgotten after their deletion, for goneTTL: the teardown
	// of a busy node (containers reaped, the runtime's last word) can come
	// later still, and is no loss.
	gone    map[string]time.Time
	orphans map[string]*orphanEvents
	// aliases: a static pod's config hash -> its mirror pod's UID, the
	// key of its state in pods and ended (static.go).
	aliases map[string]string
	// index: which pod an id or IP belongs to; cni: recent CNI plugin
	// processes; sandboxCalls: recent RunPodSandbox calls of every pod.
	index        ownerIndex
	cni          cniBuffer
	sandboxCalls []sandboxCall
	// pullCalls: recent PullImage calls of every pod on the node, for the
	// waits in the kubelet's serialized puller (pulls.go).
	pullCalls []pullCall
	// pullSamples: the progress of the pulls in flight or recently
	// ended, read while their calls ran (pull_samples.go).
	pullSamples pullSamples
	// lastExpire: expiry runs at most every expireEvery of event time,
	// and its sweep of what is gone (expire) every forgetEvery.
	lastExpire, lastForget time.Time
	// held: what orphans and index.pending hold (orphans.go); watch: the
	// pod watch's outages (outage.go).
	held  heldTotal
	watch podWatch
	// budget: what the starts hold of MaxFactBytes (budget.go); podBytes:
	// their pod objects, within MaxPodBytes.
	budget   factBudget
	podBytes int
	// blind: each source's recent blind windows, oldest first (gaps.go).
	blind map[string][]BlindWindow
	// drained: how far each kernel source has said it read (drained.go).
	drained map[string]time.Time
	// recoveries: the returns to Ready after a loss not yet taken
	// (after.go, TakeRecoveries); regaining: the ended pods whose return
	// to Ready waits for the node's facts (finishRecoveries).
	recoveries []Recovery
	regaining  map[string]regaining
	// eventsReadable: the pod_events source said Up once; the starts that
	// end other than Ready then wait for their Events (kubelet_events.go).
	eventsReadable bool
	stats          Stats
}

// expireEvery is the resolution of grace periods and timeouts; forgetEvery
// that of the TTLs of what is gone or unused (orphans, ended pods, the
// owner index), which are tens of seconds and more: sweeping those maps
// walks every pod's entries, and on a node of 110 pods probed every second
// doing it ten times a second was most of the correlator's idle work.
const (
	expireEvery = 100 * time.Millisecond
	forgetEvery = time.Second
)

// endedPod is a pod whose start is over.
type endedPod struct {
	since time.Time
	// traced: its start made a timeline here (its later events count as
	// AfterStart); otherwise it was already started when first seen.
	traced bool
	// deleted: when the API reported the deletion; the pod is forgotten
	// OrphanTTL later, once its last processes have been reaped.
	deleted time.Time
	// hash: a static pod's config hash, its alias until it is forgotten.
	hash string
	// after follows the pod's life after a start traced here (after.go).
	after *afterState
}

// New returns a Correlator.
func New(cfg Config) *Correlator {
	return &Correlator{
		cfg:       cfg.withDefaults(),
		pods:      make(map[string]*podState),
		ended:     make(map[string]endedPod),
		gone:      make(map[string]time.Time),
		orphans:   make(map[string]*orphanEvents),
		aliases:   make(map[string]string),
		index:     newOwnerIndex(),
		blind:     make(map[string][]BlindWindow),
		drained:   make(map[string]time.Time),
		regaining: make(map[string]regaining),
	}
}

// Stats returns the counters so far.
func (c *Correlator) Stats() Stats {
	s := c.stats
	s.Tracked = len(c.pods)
	s.Held, s.HeldBytes = c.held.events, c.held.bytes
	return s
}

// Busy reports whether the node's facts are wanted promptly: a pod start
// is open and within its Timeout, or one is over (or a started pod has
// regained Ready) and waits for the facts up to then to be built. A start
// past its Timeout, stuck or crash-looping, is not: its facts can come a
// second late, as can those of a pod that lost Ready (its Recovery waits
// for them when it is Ready again). The daemon paces the kernel sources'
// reading by it (collector.Pace). It looks at every start: call it on pod
// updates and ticks, not on every event.
func (c *Correlator) Busy() bool {
	if len(c.regaining) > 0 {
		return true
	}
	for _, p := range c.pods {
		if p.outcome != "" || p.reportedAt.IsZero() {
			return true
		}
	}
	return false
}

// Ending counts the starts that are over (Ready, failed, deleted) and the
// returns to Ready that wait for the facts up to their end: when it grows,
// the daemon has the kernel sources drain now (collector.Pace.Kick) rather
// than at their next poll, and the start is built as soon as they did. It
// looks at every start: call it on pod updates.
func (c *Correlator) Ending() int {
	n := len(c.regaining)
	for _, p := range c.pods {
		if p.outcome != "" {
			n++
		}
	}
	return n
}

// Handle takes the next event and returns the timelines it completed, if
// any (pod starts whose grace period or timeout the event's time passed).
func (c *Correlator) Handle(ev event.Event) []*Timeline {
	c.stats.Events++
	if t, ok := ev.(*event.Tick); ok {
		if step, stepped := c.clock.tick(t); stepped {
			c.stats.ClockSteps++
			c.stats.ClockStep = step
		}
	} else {
		ev = c.clock.normalize(ev)
		c.clock.advance(ev.When())
	}
	learned := c.index.learnFrom(ev, c.clock.now)
	switch e := ev.(type) {
	case *event.PodUpdate:
		c.handlePod(e)
	case *event.Tick:
	case *event.Drained:
		c.noteDrained(e)
	case *event.PullSample:
		c.notePullSample(e)
	case *event.SourceStatus:
		c.noteSource(e)       // the pod watch's outages keep held events (outage.go)
		c.noteSourceStatus(e) // blind windows mark the starts they overlap (gaps.go)
		c.noteRingSource(e)   // kernel sources are waited for (drained.go)
		if e.Source == event.SourcePodEvents && e.Up {
			c.eventsReadable = true
		}
	default:
		if isCNIProcess(ev) {
			c.cni.record(ev, c.clock.now)
			break
		}
		if call, ok := ev.(*event.CRICall); ok && call.Method == event.CRIRunPodSandbox {
			c.noteSandboxCall(call)
		}
		if call, ok := ev.(*event.CRICall); ok && call.Method == event.CRIPullImage {
			c.notePullCall(call)
		}
		uid := podUIDOf(ev)
		if uid == "" {
			var key string
			if uid, key = c.index.lookup(ev, c.clock.now); uid == "" {
				if key != "" {
					c.park(key, ev)
				}
				break // a host process, or nothing that names a pod
			}
		}
		c.route(uid, ev)
	}
	for _, key := range learned {
		c.unpark(key)
	}
	return c.expire()
}

func isCNIProcess(ev event.Event) bool {
	switch e := ev.(type) {
	case *event.ProcessExec:
		return e.Scope == event.ScopeCNI
	case *event.ProcessExit:
		return e.Scope == event.ScopeCNI
	}
	return false
}

// deriveContext is what a timeline is derived with beyond its pod.
func (c *Correlator) deriveContext() *deriveContext {
	return &deriveContext{cni: &c.cni, sandboxCalls: c.sandboxCalls, pullCalls: c.pullCalls, pullSamples: c.pullSamples}
}

// park keeps an event naming an id or IP no pod is known for (yet).
func (c *Correlator) park(key string, ev event.Event) { c.hold(c.index.pending, key, ev) }

// unpark routes the events that waited for key's owner. Connections wait
// under their IP and are looked up again, by address and port: on the
// node's IP, or a pod's own, only a port names the pod; one that still
// names nobody keeps waiting.
func (c *Correlator) unpark(key string) {
	key = pendingKey(key)
	o, ok := c.release(c.index.pending, key)
	if !ok {
		return
	}
	var still []event.Event
	for _, ev := range o.events {
		uid := c.index.owner(key)
		if _, isConn := ev.(*event.TCPConnection); isConn {
			uid, _ = c.index.lookup(ev, c.clock.now)
		}
		if uid == "" {
			still = append(still, ev)
			continue
		}
		c.route(uid, ev)
	}
	if len(still) > 0 {
		c.rehold(c.index.pending, key, o, still)
	}
}

// Flush completes every pod start in progress (at shutdown, or at the end
// of a replay) and returns their timelines; starts that reached no outcome
// end as timeouts at the correlator's clock ("still starting when readyline
// stopped").
func (c *Correlator) Flush() []*Timeline {
	var out []*Timeline
	for _, p := range c.sortedPods() {
		if p.outcome == "" {
			p.finish(OutcomeTimeout, c.clock.now, "still starting when readyline stopped") // what holds it: derive.go
		}
		out = append(out, c.complete(p))
	}
	return out
}

// report returns the timeline of a start still in progress at its report
// deadline (Config.Timeout): outcome timeout, Partial, up to now. The
// deadline is for reporting, not an outcome: the pod stays tracked, and its
// Ready (or failure, or deletion), when it comes, completes the start in a
// timeline with ReportedAt set.
func (c *Correlator) report(p *podState, reason string) *Timeline {
	p.reportedAt = c.clock.now
	tl := p.timeline(c.deriveContext(), ending{OutcomeTimeout, c.clock.now, reason})
	tl.Partial = true
	tl.Gaps = c.gaps(p, tl)
	c.clock.present(tl, tl.Start)
	return tl
}

// sortedPods are the starts tracked, oldest first (olderFirst).
func (c *Correlator) sortedPods() []*podState {
	pods := make([]*podState, 0, len(c.pods))
	for _, p := range c.pods {
		pods = append(pods, p)
	}
	slices.SortFunc(pods, olderFirst)
	return pods
}

// olderFirst orders starts by first sight, then UID.
func olderFirst(a, b *podState) int {
	if c := a.firstSeen.Compare(b.firstSeen); c != 0 {
		return c
	}
	return strings.Compare(a.uid, b.uid)
}

func podUIDOf(ev event.Event) string {
	switch e := ev.(type) {
	case *event.ProcessExec:
		return e.PodUID
	case *event.ProcessExit:
		return e.PodUID
	case *event.ProcessFork:
		return e.PodUID
	case *event.ContainerInfo:
		return e.PodUID
	case *event.CRICall:
		return e.PodUID
	case *event.PodEvents:
		return e.PodUID
	}
	return ""
}

func (c *Correlator) handlePod(e *event.PodUpdate) {
	if e.Pod == nil {
		return
	}
	uid := string(e.Pod.UID)
	hash, mirror := mirrorHash(e.Pod)
	if mirror && c.aliases[hash] != uid {
		c.aliases[hash] = uid
		c.index.knownMayShrink()
	}
	if p, ok := c.pods[uid]; ok {
		c.observe(p, e)
		return
	}
	if ep, ok := c.ended[uid]; ok {
		if ep.traced {
			c.stats.AfterStart++
		}
		if ep.after != nil {
			if r := ep.after.observe(e); r != nil {
				// Ready lost again before it was built: a later return
				// waits from its own update, not from this one's.
				delete(c.regaining, uid)
				c.recoveries = append(c.recoveries, *r)
			}
			if !ep.after.regained.IsZero() {
				if _, ok := c.regaining[uid]; !ok {
					c.regaining[uid] = regaining{seen: e.Time, stamp: c.clock.now}
				}
			}
		}
		if e.Action == event.PodDeleted && ep.deleted.IsZero() {
			ep.deleted = c.clock.now
			c.ended[uid] = ep
		}
		return
	}
	nodeUID := uid
	if mirror {
		nodeUID = hash
	}
	keys := []string{uid}
	if nodeUID != uid {
		keys = append(keys, nodeUID)
	}
	var early []event.Event // node facts that came before the pod
	for _, key := range keys {
		if o, ok := c.orphans[key]; ok {
			early = append(early, o.events...)
		}
	}
	// A pod first seen Ready (or done) started before readyline saw it and
	// is not traced, except when its node facts show its start from the
	// sandbox on and the API could not show it earlier: a static pod's
	// mirror pod comes after the start, often already Ready (static.go), a
	// pod may start during an outage of the pod watch (outage.go); the
	// start itself happened in view.
	apiMissed := mirror || c.watchMissedStart(early, e.Time)
	started := alreadyStarted(e.Pod) && !(apiMissed && sawStartOnNode(early))
	if e.Action == event.PodDeleted || started {
		ep := endedPod{since: c.clock.now, hash: hash}
		if e.Action == event.PodDeleted {
			ep.deleted = c.clock.now
		}
		c.end(uid, ep)
		for _, key := range keys {
			c.release(c.orphans, key)
		}
		return
	}
	if len(c.pods) >= c.cfg.MaxPods || !c.podsFit(podBytes(e.Pod)) {
		// Past MaxPods, or past the pods' budget (budget.go takePods:
		// event.StripPod bounds one pod, so this takes hundreds of large
		// pods in progress at once).
		c.stats.Overflow++
		return
	}
	p := newPodState(e, nodeUID, c.cfg.MaxProcessesPerPod)
	p.since = c.clock.stamp(e.Time)
	c.pods[uid] = p
	c.observe(p, e)
	for _, key := range keys {
		c.release(c.orphans, key)
	}
	for _, ev := range early {
		c.record(p, ev) // within the budget (budget.go)
	}
}

// observe has p take a pod update, and stamps the outcome it may reach on
// the correlator's clock (its grace period runs from that stamp).
func (c *Correlator) observe(p *podState, e *event.PodUpdate) {
	p.observe(e)
	c.takePods(p)
	if p.outcome != "" && p.doneStamp.IsZero() {
		p.doneStamp = c.clock.stamp(p.doneAt)
		p.doneSeen = e.Time
		c.lastExpire = time.Time{} // the kernel sources may be past it already
	}
}

// alreadyStarted: the pod was Ready, or done, when readyline first saw it.
func alreadyStarted(pod *corev1.Pod) bool {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return true
	}
	for _, cond := range pod.Status.Conditions {
		if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// route hands a node event to its pod, or keeps it until the pod shows up.
// uid is the pod UID the event carries: a static pod's config hash names its
// mirror pod once that is known.
func (c *Correlator) route(uid string, ev event.Event) {
	uid = c.resolve(uid)
	if p, ok := c.pods[uid]; ok {
		c.record(p, ev) // within the budget (budget.go)
		return
	}
	if ep, ok := c.ended[uid]; ok {
		if ep.traced {
			c.stats.AfterStart++
		}
		if ep.after != nil {
			ep.after.record(ev)
		}
		return
	}
	if _, ok := c.gone[uid]; ok {
		c.stats.AfterStart++ // its teardown, late
		return
	}
	c.hold(c.orphans, uid, ev)
}

// expire completes pod starts past their grace period or timeout and drops
// stale orphans and bookkeeping.
func (c *Correlator) expire() []*Timeline {
	if c.clock.now.Sub(c.lastExpire) < expireEvery {
		return nil
	}
	c.lastExpire = c.clock.now
	var out []*Timeline
	var oldest time.Time // the first sight of the oldest start still to be derived
	// Most starts have nothing due: only those with an outcome or past
	// their timeout are looked at in order (olderFirst).
	var due []*podState
	for _, p := range c.pods {
		switch {
		case p.outcome != "" || p.reportedAt.IsZero() && c.clock.now.Sub(p.since) >= c.cfg.Timeout:
			due = append(due, p)
		case p.reportedAt.IsZero():
			oldest = earliest(oldest, p.since)
		}
	}
	slices.SortFunc(due, olderFirst)
	for _, p := range due {
		if p.outcome == "" && p.reportedAt.IsZero() && c.clock.now.Sub(p.since) >= c.cfg.Timeout {
			out = append(out, c.report(p, "not Ready within "+c.cfg.Timeout.String()))
		}
		if p.outcome != "" && (c.clock.now.Sub(p.doneStamp) >= c.cfg.Grace || c.caughtUp(p)) && !c.waitsForRuntime(p) && !c.waitsForEvents(p) {
			out = append(out, c.complete(p))
			continue
		}
		if p.reportedAt.IsZero() {
			oldest = earliest(oldest, p.since)
		}
	}
	c.cni.prune(c.clock.now, oldest)
	c.finishRecoveries()
	if c.clock.now.Sub(c.lastForget) < forgetEvery {
		return out
	}
	c.lastForget = c.clock.now
	c.expirePullSamples()
	c.dropUnclaimed()
	for uid, ep := range c.ended {
		if !ep.deleted.IsZero() && c.clock.now.Sub(ep.deleted) >= c.cfg.OrphanTTL {
			c.forget(uid)
			c.rememberGone(uid)
		}
	}
	for uid, at := range c.gone {
		if c.clock.now.Sub(at) >= goneTTL {
			delete(c.gone, uid)
			c.index.knownMayShrink()
		}
	}
	c.index.forget(c.clock.now, c.cfg.Timeout, c.knows)
	return out
}

// end remembers uid as a pod whose start is over. Past MaxPods remembered,
// the longest deleted, else the longest ended, is forgotten first (a node
// that runs that many pods has lost its watch's deletions).
func (c *Correlator) end(uid string, ep endedPod) {
	if _, ok := c.ended[uid]; !ok && len(c.ended) >= c.cfg.MaxPods {
		oldest := ""
		for id, o := range c.ended {
			if oldest == "" {
				oldest = id
				continue
			}
			cur := c.ended[oldest]
			if d, od := !o.deleted.IsZero(), !cur.deleted.IsZero(); d != od {
				if d {
					oldest = id
				}
				continue
			}
			if o.since.Before(cur.since) || (o.since.Equal(cur.since) && id < oldest) {
				oldest = id
			}
		}
		c.forget(oldest)
		c.stats.Forgotten++
	}
	c.ended[uid] = ep
}

// resolve returns the UID a node-side pod UID stands for: the mirror pod's
// for a known static pod's config hash, else uid itself.
func (c *Correlator) resolve(uid string) string {
	if m, ok := c.aliases[uid]; ok {
		return m
	}
	return uid
}

// forget drops an ended pod, and its alias if it still names it.
func (c *Correlator) forget(uid string) {
	if h := c.ended[uid].hash; h != "" && c.aliases[h] == uid {
		delete(c.aliases, h)
	}
	delete(c.ended, uid)
	c.index.knownMayShrink()
}

func (c *Correlator) complete(p *podState) *Timeline {
	delete(c.pods, p.uid) // ended below: known all along
	c.forgetFacts(p)
	ep := endedPod{since: c.clock.now, traced: true, deleted: p.deletedAt}
	if p.nodeUID != p.uid {
		ep.hash = p.nodeUID
	}
	c.end(p.uid, ep)
	c.stats.Timelines++
	tl := p.timeline(c.deriveContext(), ending{p.outcome, p.doneAt, p.reason})
	c.forgetPullSamples(p.nodeUID) // on the timeline now
	tl.ReportedAt = p.reportedAt
	tl.Gaps = c.gaps(p, tl)
	if p.outcome == OutcomeReady {
		ep.after = newAfter(p, tl) // its life goes on
		c.ended[p.uid] = ep
	}
	c.clock.present(tl, tl.Start)
	return tl
}
