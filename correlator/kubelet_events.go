package correlator

import (
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/readyline/readyline/collector/event"
)

// The kubelet explains itself in Events: why the wait before the sandbox
// lasts (FailedMount, FailedAttachVolume), what the runtime said when it
// refused the sandbox (FailedCreatePodSandBox), why it killed a container
// (Killing "Container app failed liveness probe, will be restarted",
// "FailedPostStartHook"), a probe's output (Unhealthy), its back-offs, how
// long a pull took with its wait in the puller (Pulled "... (4.5s including
// waiting)"), an eviction (Evicted) or preemption (Preempting). readyline
// reads a pod's Events when its start needs them (event.PodEvents) and
// joins them here as facts of the start.

// Reasons of the kubelet's Events that the rules read (pkg/kubelet/events).
const (
	reasonFailedMount         = "FailedMount"
	reasonFailedAttachVolume  = "FailedAttachVolume"
	reasonFailedCreateSandbox = "FailedCreatePodSandBox"
	reasonKilling             = "Killing"
	reasonFailedPostStartHook = "FailedPostStartHook"
	reasonEvicted             = "Evicted"
	reasonPreempting          = "Preempting"
	reasonPulling             = "Pulling"
	reasonPulled              = "Pulled"
	reasonUnhealthy           = "Unhealthy"
	reasonBackOff             = "BackOff"
	reasonFailed              = "Failed"
)

// kubeletEvents is what the pod's Events said, merged over every read: the
// API server keeps an Event an hour (the kube-apiserver's --event-ttl), so a
// later read may have lost what an earlier one had.
type kubeletEvents struct {
	list []event.PodEvent
	// read is when they were last read, unread why the last read failed.
	read   time.Time
	unread string
	// claims are the Events of the pod's claims, as the last read of them
	// had them (claimsRead: one was).
	claims     []event.PodEvent
	claimsRead bool
}

// take merges one read of the pod's Events. The same event (type, reason,
// container, message) is one entry with the latest count and times; at most
// event.MaxPodEvents are kept, the latest.
func (k *kubeletEvents) take(e *event.PodEvents) {
	k.read = e.Time
	if e.Err != "" {
		k.unread = e.Err
		return
	}
	k.unread = ""
	if e.ClaimsRead {
		k.claims, k.claimsRead = e.Claims, true
	}
	for _, ne := range e.Events {
		i := slices.IndexFunc(k.list, func(o event.PodEvent) bool {
			return o.Type == ne.Type && o.Reason == ne.Reason && o.FieldPath == ne.FieldPath && o.Message == ne.Message
		})
		switch {
		case i < 0:
			k.list = append(k.list, ne)
		case ne.Count >= k.list[i].Count || ne.Last.After(k.list[i].Last):
			ne.First = earliest(k.list[i].First, ne.First)
			k.list[i] = ne
		}
	}
	slices.SortStableFunc(k.list, func(a, b event.PodEvent) int { return a.Last.Compare(b.Last) })
	if n := len(k.list) - event.MaxPodEvents; n > 0 {
		k.list = slices.Delete(k.list, 0, n)
	}
}

// of returns the Events about container name ("" : the pod's own, naming
// no container), oldest first.
func (k *kubeletEvents) of(name string) []event.PodEvent {
	var out []event.PodEvent
	for _, e := range k.list {
		if e.Container() == name {
			out = append(out, e)
		}
	}
	return out
}

// latest returns the latest Event with one of the reasons (about container
// name, or any when name is "*"), and whether there is one.
func (k *kubeletEvents) latest(name string, reasons ...string) (event.PodEvent, bool) {
	for i := len(k.list) - 1; i >= 0; i-- {
		e := k.list[i]
		if slices.Contains(reasons, e.Reason) && (name == "*" || e.Container() == name) {
			return e, true
		}
	}
	return event.PodEvent{}, false
}

// volumeMessage matches the kubelet's FailedMount message for one volume
// (volumemanager/reconciler: `MountVolume.SetUp failed for volume "cfg" :
// configmap "x" not found`).
var volumeMessage = regexp.MustCompile(`for volume "([^"]+)" ?: ?(.*)$`)

// volumeWait says what the wait before the sandbox waits on, from the
// latest FailedMount or FailedAttachVolume Event: `volume cfg: configmap
// "x" not found (×5)`; "" without one.
func (k *kubeletEvents) volumeWait() string {
	e, ok := k.latest("", reasonFailedMount, reasonFailedAttachVolume)
	if !ok {
		return ""
	}
	msg := e.Message
	if m := volumeMessage.FindStringSubmatch(msg); m != nil {
		msg = "volume " + m[1] + ": " + m[2]
	}
	return msg + seenTimes(e.Count)
}

// seenTimes is " (×5)" for an Event seen 5 times, "" for once.
func seenTimes(n int32) string {
	if n <= 1 {
		return ""
	}
	return " (×" + strconv.Itoa(int(n)) + ")"
}

// sandboxError is the latest FailedCreatePodSandBox message: the runtime's
// error, as the kubelet reports it.
func (k *kubeletEvents) sandboxError() string {
	if e, ok := k.latest("", reasonFailedCreateSandbox); ok {
		return e.Message
	}
	return ""
}

// disruption is "Evicted: The node was low on resource: ..." from an
// Evicted or Preempting Event, "" without one.
func (k *kubeletEvents) disruption() string {
	if e, ok := k.latest("*", reasonEvicted, reasonPreempting); ok {
		return joinNonEmpty(": ", e.Reason, e.Message)
	}
	return ""
}

// kubeletSpamBurst is how many Events of one type the kubelet sends about
// one pod before its recorder drops the rest (client-go tools/record:
// defaultSpamBurst, one more every 5 minutes; the key is the source, the
// pod and the type, not the reason).
const kubeletSpamBurst = 25

// stoppedUnsaid says why a pod of restartPolicy Always that went Succeeded
// or Failed, with no reason in its status and no Evicted or Preempting
// Event or DisruptionTarget condition, ended: the kubelet ends such a pod only to evict it or to shut
// the node down. When the kubelet had sent kubeletSpamBurst Warning Events
// about it, its recorder dropped the later ones, the eviction's among them,
// and it says so. "" for another pod.
func (k *kubeletEvents) stoppedUnsaid(pod *corev1.Pod) string {
	if pod.Spec.RestartPolicy != "" && pod.Spec.RestartPolicy != corev1.RestartPolicyAlways ||
		pod.Status.Reason != "" || pod.DeletionTimestamp != nil || k.disruption() != "" ||
		pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
		return ""
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			return "" // the status says who stopped it
		}
	}
	s := "the kubelet stopped the pod: with restartPolicy Always it does so only to evict it or to shut the node down, and its Events say neither"
	var warnings int32
	counts := map[string]int32{}
	for _, e := range k.list {
		if e.Type == corev1.EventTypeWarning && e.Component == "kubelet" {
			warnings += max(e.Count, 1)
			counts[e.Reason] += max(e.Count, 1)
		}
	}
	if warnings >= kubeletSpamBurst {
		var parts []string
		for _, r := range slices.Sorted(maps.Keys(counts)) {
			parts = append(parts, r+" ×"+strconv.Itoa(int(counts[r])))
		}
		s += " (it had sent " + strconv.Itoa(int(warnings)) + " Warning Events about the pod, " + strings.Join(parts, ", ") +
			": past " + strconv.Itoa(kubeletSpamBurst) + " its recorder drops them, an eviction's included)"
	}
	return s
}

// killing is the kind of kill a Killing Event of container name says
// ("Container app failed liveness probe, will be restarted",
// "FailedPostStartHook"), when one was reported within [from, to] (its
// 1 s timestamps widened by a second); "" when none was, or it names no
// probe or hook (a pod deleted: "Stopping container app").
func (k *kubeletEvents) killing(name string, from, to time.Time) ProbeKind {
	for i := len(k.list) - 1; i >= 0; i-- {
		e := k.list[i]
		if e.Reason != reasonKilling || e.Container() != name {
			continue
		}
		first, last := earliest(e.First, e.Last), latest(e.First, e.Last)
		if !to.IsZero() && first.After(to.Add(time.Second)) || !from.IsZero() && last.Add(time.Second).Before(from) {
			continue
		}
		switch {
		case strings.Contains(e.Message, "failed liveness probe"):
			return ProbeLiveness
		case strings.Contains(e.Message, "failed startup probe"):
			return ProbeStartup
		case strings.Contains(e.Message, reasonFailedPostStartHook):
			return KilledPostStart
		}
	}
	return ""
}

// pulledMessage matches the kubelet's Pulled message (images/puller.go,
// image_manager.go): `Successfully pulled image "nginx:1.27" in 4.5s
// (4.6s including waiting). Image size: 123 bytes.`
var pulledMessage = regexp.MustCompile(`^Successfully pulled image "([^"]+)" in ([0-9.a-zµ]+) \(([0-9.a-zµ]+) including waiting\)`)

// pulled returns, for a pull of image, how long the kubelet said it took
// and took with its wait in the puller's queue, from its latest Pulled
// Event of that image; ok false without one.
func (k *kubeletEvents) pulled(image string) (took, withWait time.Duration, ok bool) {
	for i := len(k.list) - 1; i >= 0; i-- {
		e := k.list[i]
		if e.Reason != reasonPulled {
			continue
		}
		m := pulledMessage.FindStringSubmatch(e.Message)
		if m == nil || !sameImage(image, m[1]) {
			continue
		}
		t, err1 := time.ParseDuration(m[2])
		w, err2 := time.ParseDuration(m[3])
		if err1 == nil && err2 == nil {
			return t, w, true
		}
	}
	return 0, 0, false
}

// pullingMessage matches the kubelet's Pulling message (images/
// image_manager.go, logged as it hands the pull to the puller): `Pulling
// image "nginx:1.27"`.
var pullingMessage = regexp.MustCompile(`^Pulling image "([^"]+)"`)

// askedBy is when the kubelet had surely asked its puller for image at the
// latest, by its latest Pulling Event of image stamped at or before call:
// Events are stamped in whole seconds, truncated, so the second after the
// stamp. ok false without one.
func (k *kubeletEvents) askedBy(image string, call time.Time) (time.Time, bool) {
	for i := len(k.list) - 1; i >= 0; i-- {
		e := k.list[i]
		if e.Reason != reasonPulling || e.Last.After(call) {
			continue
		}
		if m := pullingMessage.FindStringSubmatch(e.Message); m != nil && sameImage(image, m[1]) {
			return e.Last.Truncate(time.Second).Add(time.Second), true
		}
	}
	return time.Time{}, false
}

// eventsAfter is how long a start goes on before its Events are wanted:
// past it, it is a start someone may ask about; the kubelet's Events of a
// start that is Ready within it are never read.
const eventsAfter = 5 * time.Second

// maxEventsWait bounds how long a start that ended other than Ready waits
// for its Events (Config: the pod_events source up) before its timeline
// is derived without them.
const maxEventsWait = 3 * time.Second

// EventsWanted is a start whose Events should be read (WantEvents).
type EventsWanted struct {
	Query
	// LastRead is when they were last read (zero: never): the caller paces
	// the reads of a start in progress from it.
	LastRead time.Time
	// Ended is set for a start that ended other than Ready and waits for
	// them: they should be read now.
	Ended bool
	// Claims are the pod's PersistentVolumeClaims whose Events should be
	// read too: the pod waited to be scheduled while they were provisioned
	// or bound (waitedForClaims).
	Claims []string
}

// WantEvents lists the starts whose Events the caller should read and
// hand over as event.PodEvents: those in progress for more than
// eventsAfter, and those that ended other than Ready and have not had them
// read since. It changes nothing (a replay, which reads no Events, derives
// the same timelines).
func (c *Correlator) WantEvents() []EventsWanted {
	var out []EventsWanted
	for _, p := range c.sortedPods() {
		w := EventsWanted{Query: Query{UID: p.uid, Namespace: p.pod.Namespace, Name: p.pod.Name}, LastRead: p.events.read}
		if p.waitedForClaims() {
			w.Claims = PodClaims(p.pod)
		}
		switch {
		case p.outcome == "" && (c.clock.now.Sub(p.since) >= eventsAfter || (w.Claims != nil && !p.events.claimsRead)):
		case c.waitsForEvents(p):
			w.Ended = true
		default:
			continue
		}
		out = append(out, w)
	}
	// Pods that lost Ready after their start: the kubelet says why
	// (Unhealthy, Killing, BackOff). A steady node's hundred pods are
	// looked at each second: in map order, the few wanted sorted after.
	starts := len(out)
	for uid, ep := range c.ended {
		a := ep.after
		if a == nil || a.deleting {
			continue
		}
		w := EventsWanted{Query: Query{UID: uid, Namespace: a.pod.Namespace, Name: a.pod.Name}, LastRead: a.kubelet.read}
		switch {
		case !a.ended.IsZero(): // Failed or Succeeded: why, once (an eviction)
			if !a.kubelet.read.Before(a.ended) {
				continue
			}
			w.Ended = true
		case a.ready || a.notReady.IsZero():
			continue
		}
		out = append(out, w)
	}
	slices.SortFunc(out[starts:], func(a, b EventsWanted) int { return strings.Compare(a.UID, b.UID) })
	return out
}

// waitsForEvents reports whether p, which ended other than Ready (or Ready
// after waiting for its claims, whose Events say why, unread yet), waits
// for its Events before its timeline is derived: they can be read (the
// pod_events source said Up and is not blind), they were not read since
// the outcome, and maxEventsWait has not passed.
func (c *Correlator) waitsForEvents(p *podState) bool {
	if p.outcome == "" || !c.eventsReadable || c.blindNow(event.SourcePodEvents) {
		return false
	}
	if p.outcome == OutcomeReady {
		if !p.waitedForClaims() || p.events.claimsRead {
			return false
		}
		return c.clock.now.Sub(p.doneStamp) < maxEventsWait
	}
	return p.events.read.Before(p.doneSeen) && c.clock.now.Sub(p.doneStamp) < maxEventsWait
}

// claimWait is how long a pod with claims must have waited to be scheduled
// for its claims' Events to be read: creation and PodScheduled both have
// 1 s timestamps, and a pod whose claims were bound is scheduled in well
// under a second.
const claimWait = 2 * time.Second

// waitedForClaims reports whether p has PersistentVolumeClaims and waited
// claimWait or more to be scheduled: the scheduler binds a pod only once
// its claims are bound, a provisioner's volume made first.
func (p *podState) waitedForClaims() bool {
	f, ok := p.conds[corev1.PodScheduled]
	if !ok || f.lastTransition.Sub(p.firstPod.CreationTimestamp.Time) < claimWait {
		return false
	}
	return len(PodClaims(p.pod)) > 0
}

// PodClaims are the names of pod's PersistentVolumeClaims: its claims',
// and those the API server makes for its ephemeral volumes (<pod>-<volume>).
func PodClaims(pod *corev1.Pod) []string {
	var out []string
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil:
			out = append(out, v.PersistentVolumeClaim.ClaimName)
		case v.Ephemeral != nil:
			out = append(out, pod.Name+"-"+v.Name)
		}
	}
	return out
}
