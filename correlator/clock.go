package correlator

import (
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/readyline/readyline/collector/event"
)

// The correlator's clock.
//
// Deadlines (Config.Timeout, Grace, OrphanTTL, the ages of the owner index
// and of the buffers) are kept on one clock, clock.now, that never steps.
// When the daemon's ticks carry a monotonic reading (event.Tick.Mono,
// CLOCK_BOOTTIME), now is anchor + Mono of the latest tick, and an event
// moves it on by at most tickReach past that tick: an event stamped an hour
// ahead cannot time out every start in progress, and a wall clock stepped
// back an hour does not stop the clock for an hour. Without it (recordings
// made before Tick.Mono), now is the latest event time seen, as it was.
//
// Event times are wall-clock times, and the wall clock may step (NTP, an
// operator, a VM resumed). A step shows in the ticks as a change of Time -
// Mono by more than stepThreshold; the correlator counts it (Stats) and
// starts a frame, the offset after the step, valid from the last moment
// known to be before it. A time an event recalls (a creation, a transition:
// the runtime, the kubelet and the API server read the wall clock as it
// is) in the frame before is from before the step; a time an event was
// stamped with as it happened may come in the frame before up to
// frameStale after the step, because the sources convert the kernel's boot
// times with an offset they re-sample only every few seconds
// (collector.BootClock). Each time is read in a frame that puts it inside
// that frame's validity and, of those, for a time just stamped the one
// that puts it nearest the clock, for a recalled one the one that puts it
// latest without putting it after the last tick plus tickReach (facts are
// reported soon after they happen). Times so read are on one time line,
// the base frame (the wall clock of the first tick with a monotonic
// reading), on which the facts are kept and derived: a start that spans a
// step has no duration the step invented. A timeline is written in the
// frame of the wall clock when it is made (its times are the node's
// clock's then), and a timeline whose window holds a step is marked
// (MarkClockStep, ClockSteps).
//
// Some wall times are ambiguous: after a step back, those of the step's
// length before it happen again after it; and within frameStale of a step
// both frames are valid. A step of a few seconds may then put a time
// stamped near it in the wrong frame, off by the step; the mark says so.

const (
	// stepThreshold is how much Time - Mono may move between ticks before
	// it counts as a step of the wall clock (reading the two clocks one
	// after the other takes microseconds; NTP slews both alike).
	stepThreshold = time.Second
	// tickReach is how far past the latest tick an event time may move
	// the clock, and may lie in whichever frame it is read: the daemon
	// ticks every second and events reach it within ~100 ms.
	tickReach = 2 * time.Second
	// frameStale is how long after a step times may still come in the
	// frame before it: the kernel sources re-sample the boot clock's
	// offset every 5 s.
	frameStale = 10 * time.Second
	// maxFrames bounds the wall-clock frames, and the steps, remembered.
	maxFrames = 8
)

// clock is the correlator's clock and the frames of the wall clock seen.
type clock struct {
	now time.Time
	// mono: a tick with a monotonic reading was seen; from then on ticks
	// drive now.
	mono bool
	// anchor is the base frame's time of monotonic reading 0, in ns since
	// the epoch; lastMono and lastTick are the latest tick's reading and
	// its base-frame time.
	anchor   int64
	lastMono time.Duration
	lastTick time.Time
	// frames are the wall-clock frames seen, oldest first, the last the
	// current one.
	frames []clockFrame
	// steps are the latest steps, at their base-frame times.
	steps []ClockStep
}

// clockFrame is one offset of the wall clock (Time - Mono, ns) and the
// base-frame times its readings can be: after from, up to to (zero:
// unbounded; for the kernel's times, to + frameStale).
type clockFrame struct {
	off      int64
	from, to time.Time
}

// tick takes a tick; it returns the step of the wall clock it shows, if any.
func (k *clock) tick(t *event.Tick) (step time.Duration, stepped bool) {
	if t.Mono <= 0 {
		k.advance(t.Time)
		return 0, false
	}
	off := t.Time.UnixNano() - int64(t.Mono)
	switch cur := k.current(); {
	case !k.mono:
		k.mono, k.anchor, k.frames = true, off, []clockFrame{{off: off}}
	case t.Mono < k.lastMono:
		// Another monotonic clock (a recording of another boot appended):
		// its time 0 is re-anchored so that the clock goes on from now;
		// the step is how far the written times move.
		before := cur - k.anchor
		k.anchor = k.now.UnixNano() - int64(t.Mono)
		k.frames = []clockFrame{{off: off}}
		step, stepped = time.Duration(off-k.anchor-before), true
	case off-cur > int64(stepThreshold) || cur-off > int64(stepThreshold):
		// The step came after everything handled so far: the daemon ticks
		// as soon as it sees the wall clock moved (collector.ClockWatch).
		step, stepped = time.Duration(off-cur), true
		k.frames[len(k.frames)-1].to = time.Unix(0, k.anchor+int64(t.Mono)).UTC()
		k.frames = append(k.frames, clockFrame{off: off, from: k.now})
		if len(k.frames) > maxFrames {
			k.frames = k.frames[1:]
		}
	}
	k.lastMono = t.Mono
	k.lastTick = time.Unix(0, k.anchor+int64(t.Mono)).UTC()
	if k.lastTick.After(k.now) {
		k.now = k.lastTick
	}
	if stepped {
		k.steps = append(k.steps, ClockStep{At: k.lastTick, Step: step})
		if len(k.steps) > maxFrames {
			k.steps = k.steps[1:]
		}
	}
	return step, stepped
}

func (k *clock) current() int64 {
	if len(k.frames) == 0 {
		return k.anchor
	}
	return k.frames[len(k.frames)-1].off
}

// advance moves the clock to an event time t (a base-frame time).
func (k *clock) advance(t time.Time) {
	if k.mono {
		if limit := k.lastTick.Add(tickReach); t.After(limit) {
			t = limit
		}
	}
	if t.After(k.now) {
		k.now = t
	}
}

// stamp is the deadline stamp of something that happened at event time t:
// the clock itself when ticks drive it, else t (as before Tick.Mono).
func (k *clock) stamp(t time.Time) time.Time {
	if k.mono {
		return k.now
	}
	return t
}

// shifted reports whether event times need reading in a frame: a step has
// happened since the base frame was taken.
func (k *clock) shifted() bool {
	return len(k.frames) > 1 || k.current() != k.anchor
}

// base reads wall time t, a time an event recalls (a creation, a
// transition), in its frame (see the top of the file) and returns it on
// the base frame.

// baseEvents is a copy of events with their times based.
func (k *clock) baseEvents(events []event.PodEvent) []event.PodEvent {
	if events == nil {
		return nil
	}
	out := make([]event.PodEvent, len(events))
	for i, pe := range events {
		pe.First, pe.Last = k.base(pe.First), k.base(pe.Last)
		out[i] = pe
	}
	return out
}

func (k *clock) base(t time.Time) time.Time {
	if t.IsZero() || !k.shifted() {
		return t
	}
	return t.Add(-k.deltaOf(t, false))
}

// baseNow is base for the time an event was stamped with as it happened,
// just before it reached the correlator (an exec, the end of a call, a
// watch update): of its frames, the one that puts it nearest the clock.
func (k *clock) baseNow(t time.Time) time.Time {
	if t.IsZero() || !k.shifted() {
		return t
	}
	return t.Add(-k.deltaOf(t, true))
}

// deltaOf is the shift (frame offset - anchor) of the frame t is read in:
// of the frames that put t inside their validity (else of all), the one
// that puts it nearest the clock when t was stamped as it happened (near),
// else the one that puts it latest but not after the last tick plus
// tickReach, else (every reading ahead) the one that puts it earliest.
func (k *clock) deltaOf(t time.Time, near bool) time.Duration {
	limit := k.lastTick.Add(tickReach)
	dist := func(c time.Time) time.Duration {
		if d := c.Sub(k.now); d < 0 {
			return -d
		}
		return c.Sub(k.now)
	}
	pick := func(valid bool) (time.Duration, bool) {
		var best, first time.Duration
		found, seen := false, false
		var bestAt, firstAt time.Time
		for _, f := range k.frames {
			d := time.Duration(f.off - k.anchor)
			c := t.Add(-d)
			to := f.to
			if near && !to.IsZero() {
				to = to.Add(frameStale)
			}
			if valid && ((!f.from.IsZero() && !c.After(f.from)) || (!to.IsZero() && c.After(to))) {
				continue
			}
			switch {
			case near:
				if !found || dist(c) < dist(bestAt) {
					best, bestAt, found = d, c, true
				}
			case !c.After(limit) && (!found || c.After(bestAt)):
				best, bestAt, found = d, c, true
			}
			if !seen || c.Before(firstAt) {
				first, firstAt, seen = d, c, true
			}
		}
		if found {
			return best, true
		}
		return first, seen
	}
	if d, ok := pick(true); ok {
		return d
	}
	d, _ := pick(false)
	return d
}

// normalize returns ev with its times on the base frame: ev itself when no
// step has happened, else a copy (ev is not modified).
func (k *clock) normalize(ev event.Event) event.Event {
	if !k.shifted() {
		return ev
	}
	switch e := ev.(type) {
	case *event.ProcessExec:
		c := *e
		c.Time = k.baseNow(e.Time)
		return &c
	case *event.ProcessExit:
		c := *e
		c.Time = k.baseNow(e.Time)
		return &c
	case *event.ProcessFork:
		c := *e
		c.Time = k.baseNow(e.Time)
		return &c
	case *event.CRICall:
		// Start and end were converted with one offset: one frame, the
		// end's (the call is reported as it returns).
		c := *e
		d := k.deltaOf(latest(e.Time, e.End), true)
		c.Time, c.End = shiftNonZero(e.Time, -d), shiftNonZero(e.End, -d)
		if p := e.Progress; p != nil {
			// Read from the wall clock as the call's start was.
			moved := *p
			moved.AsOf, moved.LastByte = shiftNonZero(p.AsOf, -d), shiftNonZero(p.LastByte, -d)
			c.Progress = &moved
		}
		return &c
	case *event.PullSample:
		// The call's start was converted as the sample was read, in its
		// frame.
		c := *e
		d := k.deltaOf(e.Time, true)
		c.Time, c.CallStart = shiftNonZero(e.Time, -d), shiftNonZero(e.CallStart, -d)
		c.Progress.AsOf, c.Progress.LastByte = shiftNonZero(e.Progress.AsOf, -d), shiftNonZero(e.Progress.LastByte, -d)
		return &c
	case *event.TCPConnection:
		c := *e
		d := k.deltaOf(latest(e.Time, e.Established, e.End), true)
		c.Time, c.Established, c.End = shiftNonZero(e.Time, -d), shiftNonZero(e.Established, -d), shiftNonZero(e.End, -d)
		return &c
	case *event.ContainerInfo:
		// The runtime's times are its clock's when each happened.
		c := *e
		c.Time, c.CreatedAt, c.StartedAt, c.FinishedAt = k.baseNow(e.Time), k.base(e.CreatedAt), k.base(e.StartedAt), k.base(e.FinishedAt)
		return &c
	case *event.SourceStatus:
		c := *e
		c.Time, c.Since = k.baseNow(e.Time), k.base(e.Since)
		return &c
	case *event.Drained:
		c := *e
		c.Time = k.baseNow(e.Time)
		return &c
	case *event.PodEvents:
		c := *e
		c.Time = k.baseNow(e.Time)
		c.Events, c.Claims = k.baseEvents(e.Events), k.baseEvents(e.Claims)
		return &c
	case *event.PodUpdate:
		c := *e
		c.Time = k.baseNow(e.Time)
		if e.Pod != nil {
			c.Pod = event.StripPod(e.Pod) // a copy of what the rules read: what a start keeps
			k.basePod(c.Pod)
		}
		return &c
	}
	return ev
}

// basePod puts the times of a pod object the correlator reads on the base
// frame, each read in its own frame (the API server's and the kubelet's
// clocks stamped them at different moments).
func (k *clock) basePod(pod *corev1.Pod) {
	mt := func(t *metav1.Time) {
		if t != nil {
			t.Time = k.base(t.Time)
		}
	}
	mt(&pod.CreationTimestamp)
	mt(pod.DeletionTimestamp)
	mt(pod.Status.StartTime)
	for i := range pod.Status.Conditions {
		mt(&pod.Status.Conditions[i].LastTransitionTime)
		mt(&pod.Status.Conditions[i].LastProbeTime)
	}
	state := func(s *corev1.ContainerState) {
		if s.Running != nil {
			mt(&s.Running.StartedAt)
		}
		if s.Terminated != nil {
			mt(&s.Terminated.StartedAt)
			mt(&s.Terminated.FinishedAt)
		}
	}
	for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses, pod.Status.EphemeralContainerStatuses} {
		for i := range list {
			state(&list[i].State)
			state(&list[i].LastTerminationState)
		}
	}
}

func shiftNonZero(t time.Time, d time.Duration) time.Time {
	if t.IsZero() {
		return t
	}
	return t.Add(d)
}

// present marks the steps of the wall clock inside [since, now] on tl, and
// moves its times from the base frame to the current one.
func (k *clock) present(tl *Timeline, since time.Time) {
	for _, s := range k.steps {
		if !s.At.Before(since) && !s.At.After(k.now) {
			tl.ClockSteps = append(tl.ClockSteps, s)
		}
	}
	if len(tl.ClockSteps) > 0 {
		tl.Marks = append(tl.Marks, MarkClockStep)
	}
	if d := time.Duration(k.current() - k.anchor); d != 0 {
		mapTimes(reflect.ValueOf(tl).Elem(), func(t time.Time) time.Time { return t.Add(d) }, map[uintptr]reflect.Value{})
	}
}

// toCurrent moves the times of *v (a pointer to a struct the correlator
// hands out, such as an After or a Recovery) from the base frame to the
// current one, as present does for a timeline.
func (k *clock) toCurrent(v any) {
	if d := time.Duration(k.current() - k.anchor); d != 0 {
		mapTimes(reflect.ValueOf(v).Elem(), func(t time.Time) time.Time { return t.Add(d) }, map[uintptr]reflect.Value{})
	}
}

var timeType = reflect.TypeFor[time.Time]()

// mapTimes replaces every non-zero time.Time t in v (settable) by f(t),
// through exported struct fields, pointers, slices and arrays (not maps).
// It copies each slice and each pointed-to value on the way, so that
// nothing v shares with the correlator's state changes (a pointer met
// twice keeps pointing to one copy: done maps the original to it).
// TestPresentMovesEveryTime fails when a Timeline gets a time.Time it does
// not reach (in a map, an unexported field, behind an interface), and
// TestNormalizeMovesEveryTime when an event gets one normalize misses.
func mapTimes(v reflect.Value, f func(time.Time) time.Time, done map[uintptr]reflect.Value) {
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == timeType {
			if t := v.Interface().(time.Time); !t.IsZero() {
				v.Set(reflect.ValueOf(f(t)))
			}
			return
		}
		for i := range v.NumField() {
			if fv := v.Field(i); fv.CanSet() {
				mapTimes(fv, f, done)
			}
		}
	case reflect.Pointer:
		if v.IsNil() {
			return
		}
		if c, ok := done[v.Pointer()]; ok {
			v.Set(c)
			return
		}
		c := reflect.New(v.Type().Elem())
		c.Elem().Set(v.Elem())
		done[v.Pointer()] = c
		v.Set(c)
		mapTimes(c.Elem(), f, done)
	case reflect.Slice:
		if v.Len() == 0 {
			return
		}
		c := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		reflect.Copy(c, v)
		v.Set(c)
		for i := range c.Len() {
			mapTimes(c.Index(i), f, done)
		}
	case reflect.Array:
		for i := range v.Len() {
			mapTimes(v.Index(i), f, done)
		}
	}
}
