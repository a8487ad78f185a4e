package exporter

import (
	"cmp"
	"fmt"
	"math"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter/podtrace"
)

// waterfallMaxSpan bounds the time the bars cover: a pod start is minutes,
// a start timeout at most hours. A timeline whose times spread further (a
// clock jump, a corrupt recording) is drawn over its first waterfallMaxSpan,
// later times at the right edge, with a note.
const waterfallMaxSpan = 24 * time.Hour

// waterfallChart is what both renderings of a timeline's waterfall (the
// text one and the HTML one) draw: its rows in order, on one time axis.
// It holds times, not columns or pixels: each rendering scales them.
type waterfallChart struct {
	tl    *correlator.Timeline
	start time.Time // offset zero: the pod's creation
	end   time.Time // right edge of the bars
	total time.Duration
	// span is end - start when that is over waterfallMaxSpan (total is
	// then waterfallMaxSpan), zero otherwise.
	span time.Duration
	rows []wrow
}

// rowKind is what a row of the waterfall shows; its value is the row's CSS
// class in the HTML rendering.
type rowKind string

// Row kinds.
const (
	rowPhase     rowKind = "phase"
	rowSandbox   rowKind = "sandbox" // a replaced sandbox
	rowCNI       rowKind = "cni"
	rowProcess   rowKind = "process"
	rowPullWait  rowKind = "pull-wait"
	rowPull      rowKind = "pull"
	rowBackOff   rowKind = "back-off" // a container's or an image's
	rowContainer rowKind = "container"
	rowCall      rowKind = "call"
	rowHook      rowKind = "hook"
	rowProbe     rowKind = "probe"
	rowWaiting   rowKind = "waiting"
	rowNote      rowKind = "note"    // a fact without times: "never started", "(2 more waiting reasons)"
	rowSection   rowKind = "section" // the heading of the conditions
	rowCondition rowKind = "condition"
)

// barStyle is how an interval is filled.
type barStyle string

// Bar styles; the value is a CSS class in the HTML rendering.
const (
	styleFull     barStyle = "full"
	styleInferred barStyle = "inferred"
	styleBackOff  barStyle = "wait"
	styleWaiting  barStyle = "waiting"
)

// probeMark is one probe attempt on its kind's row.
type probeMark struct {
	at, end time.Time
	kind    probeMarkKind
	attempt *correlator.ProbeAttempt
}

// probeMarkKind is what is known of a probe attempt's result.
type probeMarkKind string

// Kinds of probe marks; the value is a CSS class in the HTML rendering.
const (
	markOK       probeMarkKind = "ok"
	markFailed   probeMarkKind = "failed"
	markOther    probeMarkKind = "unknown"
	markInferred probeMarkKind = "inferred" // deduced from a status flip, not seen
)

// wrow is one row of the waterfall.
type wrow struct {
	kind  rowKind
	depth int    // nesting under the row it belongs to (0: a top-level row)
	label string // what the row is, without its indentation
	// name identifies the row among its siblings whatever its label says
	// (a phase's name, "init/init-regular", "process sh", "startupProbe"),
	// as the critical path names its steps where it has the same one.
	name string
	// container is the "<kind>/<name>" of the container the row belongs to.
	container string
	// start and end bound the bar; a zero start is drawn from the left
	// edge. When the end is not known, end is where the bar is drawn to
	// and took says why ("?", "running").
	start, end time.Time
	took       string
	style      barStyle
	instant    bool // a mark at start rather than a bar
	open       bool // the end is not known
	failed     bool // a failed call, pull or hook, an attempt or process that exited non-zero or was killed
	probes     []probeMark
	cond       *correlator.ConditionTransition
	// note is shown in place of a bar: "never started", "no times known".
	note string
	// message is the waiting reason's message, shown under its bar.
	message string
	// detail says more than the label, for a tooltip: a process's argv, a
	// container's image, a pull's error.
	detail string
}

// newWaterfallChart lays tl's facts out in rows, on an axis from the pod's
// creation to the last moment known, at most waterfallMaxSpan long.
func newWaterfallChart(tl *correlator.Timeline) *waterfallChart {
	start, end := tl.Bounds()
	tl.VisitTimes(func(t time.Time) {
		if t.After(end) {
			end = t
		}
	})
	total, span := end.Sub(start), time.Duration(0) // Sub saturates: no overflow
	switch {
	case total <= 0:
		total = time.Millisecond
	case total > waterfallMaxSpan:
		total, span = waterfallMaxSpan, total
		end = start.Add(total)
	}
	wc := &waterfallChart{tl: tl, start: start, end: end, total: total, span: span}
	wc.collect()
	return wc
}

// frac is t's position on the axis, from 0 (the left edge) to 1 (the
// right edge); times outside it are at an edge.
func (wc *waterfallChart) frac(t time.Time) float64 {
	f := float64(t.Sub(wc.start)) / float64(wc.total)
	return math.Min(math.Max(f, 0), 1)
}

func (wc *waterfallChart) offset(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return fmtSeconds(t.Sub(wc.start))
}

// at writes t as the header counts: from the start, "+1.200s" (before
// it, "-3.000s").
func (wc *waterfallChart) at(t time.Time) string {
	if t.Before(wc.start) {
		return fmtSeconds(t.Sub(wc.start))
	}
	return "+" + fmtSeconds(t.Sub(wc.start))
}

func (wc *waterfallChart) emit(r wrow) {
	wc.rows = append(wc.rows, r)
}

// collect builds the rows: each phase, with what happened inside it below
// it (the sandbox's insides, the init containers, the main containers),
// then the conditions.
func (wc *waterfallChart) collect() {
	tl := wc.tl
	emitted := make(map[int]bool) // container indexes in tl.Containers
	sandboxDone, earlierDone := false, false
	containersOf := func(kinds ...correlator.ContainerKind) {
		for ci := range tl.Containers {
			c := &tl.Containers[ci]
			for _, k := range kinds {
				if c.Kind == k && !emitted[ci] {
					emitted[ci] = true
					wc.container(c, 1)
				}
			}
		}
	}
	for _, p := range tl.Phases {
		end, dur, open := p.End, fmtSeconds(p.Duration()), false
		if end.IsZero() {
			end, dur, open = wc.end, "?", true
		}
		wc.emit(wrow{kind: rowPhase, label: p.Name, name: p.Name, start: p.Start, end: end, took: dur, open: open,
			style: styleFull, detail: phaseSource(p.Source)})
		switch p.Name {
		case correlator.PhaseSchedule:
			wc.provisions()
		case correlator.PhaseWaitSandbox:
			wc.volumes()
		case correlator.PhaseSandboxReplaced:
			wc.earlierSandboxes()
			earlierDone = true
		case correlator.PhaseSandbox:
			wc.pause()
			sandboxDone = true
		case correlator.PhaseInit:
			containersOf(correlator.KindInit, correlator.KindSidecar)
		case correlator.PhaseContainers:
			containersOf(correlator.KindMain)
		}
	}
	if !earlierDone {
		wc.earlierSandboxes()
	}
	if !sandboxDone {
		wc.pause()
	}
	containersOf(correlator.KindInit, correlator.KindSidecar, correlator.KindMain)

	wc.inFlight()
	if len(tl.Conditions) > 0 {
		wc.emit(wrow{kind: rowSection, label: "conditions", name: "conditions"})
		for i := range tl.Conditions {
			c := &tl.Conditions[i]
			lag := ""
			switch {
			case c.Coarse:
				lag = "coarse" // at its lastTransitionTime: no lag known
			case !c.Cause.IsZero() && !c.Cause.After(c.Observed): // the correlator never gives a later cause
				lag = "+" + fmtSeconds(c.Lag())
			}
			detail := ""
			if c.CauseEvent != "" {
				detail = "after " + c.CauseEvent
			}
			wc.emit(wrow{kind: rowCondition, depth: 1, label: c.Type, name: c.Type, start: c.Observed, end: c.Observed,
				took: lag, cond: c, detail: detail})
		}
	}
}

// phaseSource says where a phase's boundaries come from, for a tooltip.
func phaseSource(source string) string {
	if source == "" {
		return ""
	}
	return "boundaries from " + source
}

// earlierSandboxes shows the replaced sandboxes, each from its first
// RunPodSandbox call (failed ones included) or creation to its end, with
// its calls and CNI plugins.
func (wc *waterfallChart) earlierSandboxes() {
	for i := range wc.tl.EarlierSandboxes {
		sb := &wc.tl.EarlierSandboxes[i]
		start, end := podtrace.SandboxStart(sb), sb.Ended
		if start.IsZero() {
			continue
		}
		dur, open := "", false
		if end.IsZero() {
			end, dur, open = start, "?", true
		} else {
			dur = fmtSeconds(end.Sub(start))
		}
		wc.emit(wrow{kind: rowSandbox, depth: 1, label: fmt.Sprintf("sandbox attempt %d ✗ replaced", sb.Attempt),
			name: fmt.Sprintf("sandbox attempt %d", sb.Attempt), start: start, end: end, took: dur, open: open,
			style: styleFull, failed: true, detail: sb.ID})
		for _, call := range sb.FailedCalls {
			wc.call(2, "", call)
		}
		if sb.Call != nil {
			wc.call(2, "", *sb.Call)
		}
		wc.cni(2, sb)
	}
}

func (wc *waterfallChart) cni(depth int, sb *correlator.Sandbox) {
	for i := range sb.CNI {
		p := &sb.CNI[i]
		end, dur, open := p.Exit, fmtSeconds(p.Exit.Sub(p.Exec)), false
		if end.IsZero() {
			end, dur, open = p.Exec, "?", true
		}
		name := "cni " + path.Base(p.Filename)
		wc.emit(wrow{kind: rowCNI, depth: depth, label: name, name: name, start: p.Exec, end: end, took: dur, open: open,
			style: styleFull, detail: strings.Join(p.Argv, " ")})
	}
}

// pause shows the sandbox's insides: the CNI plugins, the pause process,
// and the image pulls that follow it.
func (wc *waterfallChart) pause() {
	sb := wc.tl.Sandbox
	if sb != nil {
		for _, call := range sb.FailedCalls {
			wc.call(1, "", call)
		}
		wc.cni(1, sb)
		if !sb.PauseStart.IsZero() {
			wc.emit(wrow{kind: rowProcess, depth: 1, label: "process pause", name: "process pause",
				start: sb.PauseStart, end: sb.PauseStart, instant: true, detail: sb.PodIP})
		}
	}
	for _, ip := range wc.tl.ImagePulls {
		if ip.Call.Start.IsZero() || ip.Call.End.IsZero() {
			continue
		}
		// The names the critical path gives the pull's steps.
		owner := cmp.Or(ip.Container, ip.Volume, ip.Image)
		if w := ip.Wait; w != nil {
			// The serialized puller's queue: the pull it began right after.
			behind := behindName(w.Behind[len(w.Behind)-1])
			wc.emit(wrow{kind: rowPullWait, label: "image.pull.wait behind " + behind, name: "image.pull.wait/" + owner,
				start: w.Start, end: w.End, took: fmtSeconds(w.Duration()), style: styleBackOff, detail: w.NeedEvent})
		}
		if ip.BackOff > 0 {
			from := ip.Call.Start.Add(-ip.BackOff)
			wc.emit(wrow{kind: rowBackOff, label: "image.pull.back_off", name: "image.pull.back_off/" + owner,
				start: from, end: ip.Call.Start, took: fmtSeconds(ip.BackOff), style: styleBackOff, detail: ip.Image})
		}
		label := "image.pull " + ip.Image
		if ip.Attempt > 1 {
			label += fmt.Sprintf(" #%d", ip.Attempt)
		}
		detail := ip.Image
		if ip.Call.Err {
			label += " ✗"
			if ip.ErrorReason != "" {
				label += " " + ip.ErrorReason
			}
			if ip.Error != "" {
				detail += ": " + ip.Error
			}
		} else if ip.Size > 0 {
			detail += fmt.Sprintf(" (%.1f MiB)", float64(ip.Size)/(1<<20))
		}
		wc.emit(wrow{kind: rowPull, label: label, name: "image.pull/" + owner, start: ip.Call.Start, end: ip.Call.End,
			took: fmtSeconds(ip.Call.End.Sub(ip.Call.Start)), style: styleFull, failed: ip.Call.Err, detail: detail})
	}
}

// quickVolumeCall is how long a volume's setup step may take and still be
// left out of the waterfall (counted in one row): every pod has its
// service account token's projected volume, set up in milliseconds.
const quickVolumeCall = 100 * time.Millisecond

// volumes draws the steps of the volumes' setups, inside the wait before
// the sandbox: those that took time or failed; the others are counted.
func (wc *waterfallChart) volumes() {
	quick := 0
	for _, v := range wc.tl.Volumes {
		if a := v.Attach; a != nil {
			label := "volume " + v.Name + " attach"
			if a.Err {
				label += " ✗"
			}
			wc.emit(wrow{kind: rowCall, depth: 1, label: label, name: correlator.VolumeStepName(v.Name), start: a.Start, end: a.End,
				took: fmtSeconds(a.End.Sub(a.Start)), style: styleFull, failed: a.Err, detail: withDriver("attached to the node", v.Driver)})
		}
		for _, call := range v.Calls {
			if call.Start.IsZero() || call.End.IsZero() {
				continue
			}
			if call.End.Sub(call.Start) < quickVolumeCall && !call.Err {
				quick++
				continue
			}
			method := call.Method.Short()
			label := "volume " + v.Name + " " + method
			if call.Err {
				label += " ✗"
			}
			wc.emit(wrow{kind: rowCall, depth: 1, label: label, name: correlator.VolumeStepName(v.Name), start: call.Start, end: call.End,
				took: fmtSeconds(call.End.Sub(call.Start)), style: styleFull, failed: call.Err, detail: withDriver(string(call.Method), v.Driver)})
		}
	}
	if quick > 0 {
		wc.emit(wrow{kind: rowNote, depth: 1, label: fmt.Sprintf("(%d volume setup steps under %v)", quick, quickVolumeCall), name: "volumes omitted"})
	}
}

// provisions draws the claims provisioned while the pod waited to be
// scheduled, inside that wait.
func (wc *waterfallChart) provisions() {
	for _, v := range wc.tl.Volumes {
		if p := v.Provision; p != nil {
			label := "volume " + v.Name + " provision"
			detail := "claim " + p.Claim + " (the claim's Events, 1 s)"
			if p.Failures > 0 {
				label += fmt.Sprintf(" (%d failed)", p.Failures)
				detail += ": " + p.Error
			}
			wc.emit(wrow{kind: rowCall, depth: 1, label: label, name: correlator.VolumeStepName(v.Name), start: p.Start, end: p.End,
				took: fmtSeconds(p.Duration()), style: styleFull, detail: withDriver(detail, v.Driver)})
		}
	}
}

// withDriver is "csi.v1.Node/NodeStageVolume (csi.example.dev)".
func withDriver(s, driver string) string {
	if driver == "" {
		return s
	}
	return s + " (" + driver + ")"
}

// containerStepName is how the critical path names a container's step:
// "init/init-regular".
func containerStepName(c *correlator.Container) string {
	return string(c.Kind) + "/" + c.Name
}

func (wc *waterfallChart) container(c *correlator.Container, depth int) {
	name, owner := podtrace.ContainerSpanName(c), containerStepName(c)
	if len(c.Attempts) == 0 {
		wc.emit(wrow{kind: rowNote, depth: depth, label: name, name: owner, container: owner, note: "never started", detail: c.Image})
	}
	for ai := range c.Attempts {
		a := &c.Attempts[ai]
		start, end, ok := a.Bounds(wc.tl.AsOf)
		label, failed := name, true
		if a.Attempt > 0 {
			label += fmt.Sprintf(" #%d", a.Attempt)
		}
		switch {
		case a.KilledBy != "": // the exit code is the kill's 128+signal
			label += fmt.Sprintf(" ✗ %s kill", a.KilledBy)
		case a.ExitCode != nil && *a.ExitCode != 0:
			label += fmt.Sprintf(" ✗ exit %d", *a.ExitCode)
		default:
			failed = false
		}
		if a.Reason != "" && a.Reason != "Error" && a.Reason != "Completed" {
			label += " " + a.Reason
		}
		if a.BackOff > 0 && ai > 0 {
			// The wait since the previous attempt's exit: the kubelet's back-off.
			from := a.Created.Add(-a.BackOff)
			if a.Created.IsZero() && a.Process != nil {
				from = a.Process.Exec.Add(-a.BackOff)
			}
			wc.emit(wrow{kind: rowBackOff, depth: depth, label: "back-off", name: "back-off", container: owner,
				start: from, end: from.Add(a.BackOff), took: fmtSeconds(a.BackOff), style: styleBackOff})
		}
		if !ok {
			wc.emit(wrow{kind: rowNote, depth: depth, label: label, name: owner, container: owner, note: "no times known",
				failed: failed, detail: c.Image})
			continue
		}
		wc.emit(wrow{kind: rowContainer, depth: depth, label: label, name: owner, container: owner,
			start: start, end: end, took: fmtSeconds(end.Sub(start)), style: styleFull, failed: failed, detail: c.Image})
		sub := depth + 1
		for _, call := range a.Calls {
			wc.call(sub, owner, call)
		}
		if p := a.Process; p != nil && !p.Exec.IsZero() {
			pname := podtrace.ProcessSpanName(p)
			label, failed := pname, false
			switch {
			case p.Signal != 0: // before the exit code, which a signal leaves meaningless
				label += fmt.Sprintf(" signal %d", p.Signal)
				failed = true
			case p.ExitCode != nil:
				label += fmt.Sprintf(" exit %d", *p.ExitCode)
				failed = *p.ExitCode != 0
			}
			pend, dur, open := p.Exit, fmtSeconds(p.Exit.Sub(p.Exec)), false
			if pend.IsZero() {
				pend, dur, open = end, "running", true
			}
			wc.emit(wrow{kind: rowProcess, depth: sub, label: label, name: pname, container: owner,
				start: p.Exec, end: pend, took: dur, open: open, style: styleFull, failed: failed, detail: strings.Join(p.Argv, " ")})
		}
		if h := a.PostStart; h != nil && !h.Start.IsZero() {
			label, style, failed := "postStart", styleFull, false
			if h.Handler != "" && h.Handler != "exec" {
				label += " " + h.Handler
			}
			if h.Inferred {
				label += " (inferred)"
				style = styleInferred
			}
			if h.ExitCode != nil && *h.ExitCode != 0 {
				label += fmt.Sprintf(" ✗ exit %d", *h.ExitCode)
				failed = true
			}
			hend, dur, open := h.End, fmtSeconds(h.End.Sub(h.Start)), false
			if hend.IsZero() {
				hend, dur, open = end, "?", true
			}
			wc.emit(wrow{kind: rowHook, depth: sub, label: label, name: "postStart/" + c.Name, container: owner,
				start: h.Start, end: hend, took: dur, open: open, style: style, failed: failed, detail: strings.Join(h.Command, " ")})
		}
		wc.probes(sub, owner, a.Probes, a.ProbesOmitted)
	}
	wc.containerFacts(depth+1, c)
}

// call draws a CRI call, marked ✗ when it failed.
func (wc *waterfallChart) call(depth int, owner string, call correlator.CRICall) {
	if call.Start.IsZero() || call.End.IsZero() {
		return
	}
	method := call.Method.Short()
	label := method
	if call.Err {
		label += " ✗"
	}
	wc.emit(wrow{kind: rowCall, depth: depth, label: label, name: method, container: owner, start: call.Start, end: call.End,
		took: fmtSeconds(call.End.Sub(call.Start)), style: styleFull, failed: call.Err, detail: string(call.Method)})
}

// inFlight draws the kubelet's calls that had not returned when a start in
// progress was derived, open to then.
func (wc *waterfallChart) inFlight() {
	tl := wc.tl
	for _, f := range tl.InFlight {
		method := f.Method.Short()
		label := method + " (in flight)"
		detail := string(f.Method)
		switch {
		case f.Volume != "":
			label, detail = "volume "+f.Volume+" "+method+" (in flight)", withDriver(detail, f.Driver)
		case f.Image != "":
			label, detail = method+" "+f.Image+" (in flight)", detail+" "+f.Image
			if p := f.ProgressText(tl.AsOf); p != "" {
				label, detail = method+" "+f.Image+" (in flight: "+p+")", detail+": "+p
			}
			if q := f.Queued; q != nil {
				// Its wait in the serialized puller, as a finished pull's.
				wc.emit(wrow{kind: rowPullWait, label: behindPulls(q.Behind), name: "image.pull.wait/" + cmp.Or(f.Container, f.Image),
					start: q.Start, end: q.End, took: fmtSeconds(q.Duration()), style: styleBackOff})
			}
		case f.Container != "":
			label, detail = method+" "+f.Container+" (in flight)", detail+" for "+f.Container
		}
		wc.emit(wrow{kind: rowCall, label: label, name: method, start: f.Start, end: tl.AsOf,
			took: fmtSeconds(tl.AsOf.Sub(f.Start)), open: true, style: styleFull, detail: detail})
	}
}

// behindPulls labels the wait of a pull in flight behind other pods' pulls:
// how many, not which (the finished pull's row names the last, for who may
// read it; see ReaderView).
func behindPulls(n int) string {
	if n == 1 {
		return "image.pull.wait behind 1 pull"
	}
	return fmt.Sprintf("image.pull.wait behind %d pulls", n)
}

// containerFacts draws what belongs to a container rather than to one of
// its attempts, after them: the calls that made no attempt, then each
// waiting reason from its first to its last observation, with its message.
func (wc *waterfallChart) containerFacts(depth int, c *correlator.Container) {
	owner := containerStepName(c)
	for _, call := range c.FailedCalls {
		wc.call(depth, owner, call)
	}
	for _, w := range c.Waiting {
		label := "waiting " + w.Reason
		if w.Times > 1 {
			label += fmt.Sprintf(" ×%d", w.Times)
		}
		dur := "" // seen once
		if w.Last.After(w.First) {
			dur = fmtSeconds(w.Duration())
		}
		wc.emit(wrow{kind: rowWaiting, depth: depth, label: label, name: "waiting " + w.Reason, container: owner,
			start: w.First, end: w.Last, took: dur, style: styleWaiting, message: w.Message})
	}
	if c.WaitingOmitted > 0 {
		wc.emit(wrow{kind: rowNote, depth: depth, label: fmt.Sprintf("(%d more waiting reasons)", c.WaitingOmitted),
			name: "waiting omitted", container: owner})
	}
}

// probes makes one row per probe kind, its attempts as marks; the duration
// is from the first attempt to the end of the first success (or of the last
// attempt when none succeeded). The counts include the attempts the
// timeline left out (omitted), which have no mark.
func (wc *waterfallChart) probes(depth int, owner string, probes []correlator.ProbeAttempt, omitted map[correlator.ProbeKind]correlator.OmittedProbes) {
	var kinds []correlator.ProbeKind
	for _, p := range probes {
		if !slices.Contains(kinds, p.Kind) {
			kinds = append(kinds, p.Kind)
		}
	}
	for _, k := range kinds {
		var marks []probeMark
		var first, last, success time.Time
		n, failed := 0, 0
		for i := range probes {
			p := &probes[i]
			if p.Kind != k || p.Start.IsZero() {
				continue
			}
			n++
			end := p.End
			if end.IsZero() {
				end = p.Start
			}
			if first.IsZero() {
				first = p.Start
			}
			last = end
			kind := markOther
			switch {
			case p.Inferred:
				kind = markInferred
			case p.Result == correlator.ProbeSuccess:
				kind = markOK
			case p.Result.Failed():
				kind = markFailed
				failed++
			}
			if p.Result == correlator.ProbeSuccess && success.IsZero() {
				success = end
			}
			marks = append(marks, probeMark{at: p.Start, end: end, kind: kind, attempt: p})
		}
		if n == 0 {
			continue
		}
		if !success.IsZero() {
			last = success
		}
		n, failed = n+omitted[k].Attempts, failed+omitted[k].Failed
		name := podtrace.ProbeSpanName(k)
		label := fmt.Sprintf("%s ×%d", name, n)
		if failed > 0 {
			label += fmt.Sprintf(" (%d✗)", failed)
		}
		dur := ""
		if last.After(first) {
			dur = fmtSeconds(last.Sub(first))
		}
		wc.emit(wrow{kind: rowProbe, depth: depth, label: label, name: name, container: owner,
			start: first, end: last, took: dur, probes: marks})
	}
}

// duration is how long the timeline says the start took: End - Start, or
// the axis when either is unknown.
func (wc *waterfallChart) duration() time.Duration {
	tl := wc.tl
	if tl.End.IsZero() || tl.Start.IsZero() {
		return wc.total
	}
	return tl.End.Sub(tl.Start)
}

// outcome is the headline's verdict: "Ready in 27.097s".
func (wc *waterfallChart) outcome() string {
	tl, d := wc.tl, wc.duration()
	switch tl.Outcome {
	case correlator.OutcomeReady:
		return "Ready in " + fmtSeconds(d)
	case correlator.OutcomeFailed:
		return "FAILED after " + fmtSeconds(d)
	case correlator.OutcomeTimeout:
		if tl.Partial {
			return "STILL STARTING after " + fmtSeconds(d) + " (the start timeout; the start goes on)"
		}
		return "TIMED OUT after " + fmtSeconds(d)
	case correlator.OutcomeDeleted:
		return "deleted after " + fmtSeconds(d)
	case correlator.OutcomeStarting:
		return "STARTING for " + fmtSeconds(d) + " (as of " + tl.AsOf.UTC().Format("15:04:05Z") + ")"
	default:
		return string(tl.Outcome) + " after " + fmtSeconds(d)
	}
}

// meta are the facts of the header that identify the start: its uid,
// node, creation, an earlier report, a static pod's config hash.
func (wc *waterfallChart) meta() []string {
	tl := wc.tl
	var meta []string
	if tl.Pod.UID != "" {
		meta = append(meta, "uid "+tl.Pod.UID)
	}
	if tl.Pod.Node != "" {
		meta = append(meta, "node "+tl.Pod.Node)
	}
	if !tl.Start.IsZero() {
		meta = append(meta, "created "+tl.Start.UTC().Format(time.RFC3339))
	}
	if !tl.ReportedAt.IsZero() {
		meta = append(meta, "reported still starting at +"+fmtSeconds(reportedAfter(tl)))
	}
	if tl.Pod.Static() {
		meta = append(meta, "static pod (config hash "+tl.Pod.ConfigHash+")")
	}
	return meta
}

// chartNote is one thing the waterfall tells of what readyline could not
// see or what is less exact than it looks.
type chartNote struct {
	// topic prefixes the text ("missing", "blind"), empty for a sentence
	// of its own.
	topic string
	text  string
}

// notes are what the timeline lacks, in the header's order: a pod seen
// late, its marks (api_lag, clock_step), what is missing, the sources'
// blind windows, times spread beyond the axis.
func (wc *waterfallChart) notes() []chartNote {
	tl := wc.tl
	var out []chartNote
	if tl.TraceParent != "" {
		if tp, err := podtrace.ParseTraceParent(tl.TraceParent); err == nil {
			out = append(out, chartNote{text: fmt.Sprintf("linked to trace %s span %s (%s)", tp.TraceID, tp.SpanID, correlator.TraceParentAnnotation)})
		} else {
			out = append(out, chartNote{text: correlator.TraceParentAnnotation + " ignored: " + err.Error()})
		}
	}
	if !tl.ObservedSince.IsZero() {
		out = append(out, chartNote{text: "readyline saw this pod from +" + fmtSeconds(tl.ObservedSince.Sub(wc.start)) +
			": earlier kernel and CRI facts are missing"})
	}
	for _, m := range tl.Marks {
		switch m {
		case correlator.MarkAPILag:
			out = append(out, chartNote{text: "the API delivered some conditions late (api_lag): they are at their lastTransitionTime, marked coarse"})
		case correlator.MarkClockStep:
			steps := make([]string, len(tl.ClockSteps))
			for i, s := range tl.ClockSteps {
				at := fmtSeconds(s.At.Sub(wc.start))
				if !s.At.Before(wc.start) {
					at = "+" + at
				}
				steps[i] = fmtOffset(s.Step) + " at " + at
			}
			out = append(out, chartNote{text: "the node's wall clock stepped (clock_step: " + strings.Join(steps, ", ") +
				"): the times are on the clock after it"})
		}
	}
	if len(tl.Missing) > 0 {
		out = append(out, chartNote{topic: "missing", text: strings.Join(tl.Missing, "; ")})
	}
	for _, g := range tl.Gaps {
		out = append(out, chartNote{topic: "blind", text: g.Describe(wc.at)})
	}
	if wc.span > 0 {
		out = append(out, chartNote{text: "its times spread over " + fmtSeconds(wc.span) + " (a clock jump or a corrupt record?): " +
			"the bars show the first " + fmtSeconds(wc.total) + ", later times at the right edge"})
	}
	return out
}

// criticalSteps are the critical path's steps as the footer lists them:
// "pod.schedule 0.045s", consecutive steps on one row (a container's
// calls, run and probes) as one.
func (wc *waterfallChart) criticalSteps() []string {
	var parts []string
	for _, s := range mergedSteps(wc.tl.CriticalPath) {
		parts = append(parts, s.Name+" "+fmtSeconds(s.End.Sub(s.Start)))
	}
	return parts
}

// mergedSteps joins the consecutive steps of a critical path that are on
// one row: from the first one's start to the last one's end.
func mergedSteps(steps []correlator.Step) []correlator.Step {
	var out []correlator.Step
	for _, s := range steps {
		if n := len(out); n > 0 && out[n-1].Name == s.Name {
			out[n-1].End = s.End
			continue
		}
		out = append(out, s)
	}
	return out
}

// breakdownRow is one line of "where the time went".
type breakdownRow struct {
	kind, name, took, percent, what string
}

// breakdownRows are the timeline's Breakdown as the footer and the page
// list it: each kind of time, largest first, with its share of the start.
func breakdownRows(tl *correlator.Timeline) []breakdownRow {
	total := tl.End.Sub(tl.Start)
	if total <= 0 {
		return nil
	}
	rows := make([]breakdownRow, 0, len(tl.Breakdown))
	for _, s := range tl.Breakdown {
		rows = append(rows, breakdownRow{kind: string(s.Kind), name: s.Kind.Name(), took: fmtSeconds(s.Duration),
			percent: fmt.Sprintf("%d%%", int((200*s.Duration+total)/(2*total))), what: s.What})
	}
	return rows
}

func hasBackOff(tl *correlator.Timeline) bool {
	for _, c := range tl.Containers {
		for _, a := range c.Attempts {
			if a.BackOff > 0 {
				return true
			}
		}
	}
	return false
}

func hasWaiting(tl *correlator.Timeline) bool {
	return slices.ContainsFunc(tl.Containers, func(c correlator.Container) bool { return len(c.Waiting) > 0 })
}

// tickStep is the roundest step giving at most n ticks over total; it is
// never below 10 ms.
func tickStep(total time.Duration, n int) time.Duration {
	n = max(n, 1)
	for _, s := range []time.Duration{
		10 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond,
		100 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond,
		time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second,
		30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute,
		15 * time.Minute, 30 * time.Minute, time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour,
	} {
		if total/s <= time.Duration(n) {
			return s
		}
	}
	return max(total/time.Duration(n), 10*time.Millisecond)
}

func fmtTick(t, step time.Duration) string {
	if step < time.Second {
		return fmt.Sprintf("%gs", math.Round(t.Seconds()*100)/100)
	}
	return fmt.Sprintf("%ds", int(t.Round(time.Second).Seconds()))
}

// fmtSeconds formats d in seconds with millisecond precision, shorter for
// long durations: "0.045s", "27.097s", "123.4s"; past 11 days (no pod start
// takes that long: a clock jump or a corrupt record) in whole days, so that
// any duration fits the waterfall's columns: "106752d".
func fmtSeconds(d time.Duration) string {
	s := d.Seconds()
	switch a := math.Abs(s); {
	case a >= 1e6:
		return fmt.Sprintf("%.0fd", s/(24*60*60))
	case a >= 1000:
		return fmt.Sprintf("%.0fs", s)
	case a >= 100:
		return fmt.Sprintf("%.1fs", s)
	default:
		return fmt.Sprintf("%.3fs", s)
	}
}
