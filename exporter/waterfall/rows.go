package waterfall

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

// Chart is what both renderings of a timeline's waterfall (the
// text one and the HTML one) draw: its rows in order, on one time axis.
// It holds times, not columns or pixels: each rendering scales them.
type Chart struct {
	Timeline *correlator.Timeline
	Start    time.Time // offset zero: the pod's creation
	End      time.Time // right edge of the bars
	Total    time.Duration
	// span is End - Start when that is over waterfallMaxSpan (Total is
	// then waterfallMaxSpan), zero otherwise.
	span time.Duration
	Rows []Row
}

// RowKind is what a row of the waterfall shows; its value is the row's CSS
// class in the HTML rendering.
type RowKind string

// Row kinds.
const (
	RowPhase     RowKind = "phase"
	RowSandbox   RowKind = "sandbox" // a replaced sandbox
	RowCNI       RowKind = "cni"
	RowProcess   RowKind = "process"
	RowPullWait  RowKind = "pull-wait"
	RowPull      RowKind = "pull"
	RowBackOff   RowKind = "back-off" // a container's or an image's
	RowContainer RowKind = "container"
	RowCall      RowKind = "call"
	RowHook      RowKind = "hook"
	RowProbe     RowKind = "probe"
	RowWaiting   RowKind = "waiting"
	RowNote      RowKind = "note"    // a fact without times: "never started", "(2 more waiting reasons)"
	RowSection   RowKind = "section" // the heading of the conditions
	RowCondition RowKind = "condition"
)

// BarStyle is how an interval is filled.
type BarStyle string

// Bar styles; the value is a CSS class in the HTML rendering.
const (
	StyleFull     BarStyle = "full"
	StyleInferred BarStyle = "inferred"
	StyleBackOff  BarStyle = "wait"
	StyleWaiting  BarStyle = "waiting"
)

// ProbeMark is one probe attempt on its kind's row.
type ProbeMark struct {
	At, End time.Time
	Kind    ProbeMarkKind
	Attempt *correlator.ProbeAttempt
}

// ProbeMarkKind is what is known of a probe attempt's result.
type ProbeMarkKind string

// Kinds of probe marks; the value is a CSS class in the HTML rendering.
const (
	MarkOK       ProbeMarkKind = "ok"
	MarkFailed   ProbeMarkKind = "failed"
	MarkOther    ProbeMarkKind = "unknown"
	MarkInferred ProbeMarkKind = "inferred" // deduced from a status flip, not seen
)

// Row is one row of the waterfall.
type Row struct {
	Kind  RowKind
	Depth int    // nesting under the row it belongs to (0: a top-level row)
	Label string // what the row is, without its indentation
	// Name identifies the row among its siblings whatever its label says
	// (a phase's name, "init/init-regular", "process sh", "startupProbe"),
	// as the critical path names its steps where it has the same one.
	Name string
	// Container is the "<kind>/<name>" of the container the row belongs to.
	Container string
	// Start and End bound the bar; a zero Start is drawn from the left
	// edge. When the end is not known, End is where the bar is drawn to
	// and Took says why ("?", "running").
	Start, End time.Time
	Took       string
	Style      BarStyle
	Instant    bool // a mark at start rather than a bar
	Open       bool // the end is not known
	Failed     bool // a failed call, pull or hook, an attempt or process that exited non-zero or was killed
	Probes     []ProbeMark
	Cond       *correlator.ConditionTransition
	// Note is shown in place of a bar: "never started", "no times known".
	Note string
	// Message is the waiting reason's message, shown under its bar.
	Message string
	// Detail says more than the label, for a tooltip: a process's argv, a
	// container's image, a pull's error.
	Detail string
}

// NewChart lays tl's facts out in rows, on an axis from the pod's
// creation to the last moment known, at most waterfallMaxSpan long.
func NewChart(tl *correlator.Timeline) *Chart {
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
	wc := &Chart{Timeline: tl, Start: start, End: end, Total: total, span: span}
	wc.collect()
	return wc
}

// Frac is t's position on the axis, from 0 (the left edge) to 1 (the
// right edge); times outside it are at an edge.
func (wc *Chart) Frac(t time.Time) float64 {
	f := float64(t.Sub(wc.Start)) / float64(wc.Total)
	return math.Min(math.Max(f, 0), 1)
}

func (wc *Chart) Offset(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return FormatSeconds(t.Sub(wc.Start))
}

// At writes t as the header counts: from the start, "+1.200s" (before
// it, "-3.000s").
func (wc *Chart) At(t time.Time) string {
	if t.Before(wc.Start) {
		return FormatSeconds(t.Sub(wc.Start))
	}
	return "+" + FormatSeconds(t.Sub(wc.Start))
}

func (wc *Chart) emit(r Row) {
	wc.Rows = append(wc.Rows, r)
}

// collect builds the rows: each phase, with what happened inside it below
// it (the sandbox's insides, the init containers, the main containers),
// then the conditions.
func (wc *Chart) collect() {
	tl := wc.Timeline
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
		end, dur, open := p.End, FormatSeconds(p.Duration()), false
		if end.IsZero() {
			end, dur, open = wc.End, "?", true
		}
		wc.emit(Row{Kind: RowPhase, Label: p.Name, Name: p.Name, Start: p.Start, End: end, Took: dur, Open: open,
			Style: StyleFull, Detail: phaseSource(p.Source)})
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
		wc.emit(Row{Kind: RowSection, Label: "conditions", Name: "conditions"})
		for i := range tl.Conditions {
			c := &tl.Conditions[i]
			lag := ""
			switch {
			case c.Coarse:
				lag = "coarse" // at its lastTransitionTime: no lag known
			case !c.Cause.IsZero() && !c.Cause.After(c.Observed): // the correlator never gives a later cause
				lag = "+" + FormatSeconds(c.Lag())
			}
			detail := ""
			if c.CauseEvent != "" {
				detail = "after " + c.CauseEvent
			}
			wc.emit(Row{Kind: RowCondition, Depth: 1, Label: c.Type, Name: c.Type, Start: c.Observed, End: c.Observed,
				Took: lag, Cond: c, Detail: detail})
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
func (wc *Chart) earlierSandboxes() {
	for i := range wc.Timeline.EarlierSandboxes {
		sb := &wc.Timeline.EarlierSandboxes[i]
		start, end := podtrace.SandboxStart(sb), sb.Ended
		if start.IsZero() {
			continue
		}
		dur, open := "", false
		if end.IsZero() {
			end, dur, open = start, "?", true
		} else {
			dur = FormatSeconds(end.Sub(start))
		}
		wc.emit(Row{Kind: RowSandbox, Depth: 1, Label: fmt.Sprintf("sandbox attempt %d ✗ replaced", sb.Attempt),
			Name: fmt.Sprintf("sandbox attempt %d", sb.Attempt), Start: start, End: end, Took: dur, Open: open,
			Style: StyleFull, Failed: true, Detail: sb.ID})
		for _, call := range sb.FailedCalls {
			wc.call(2, "", call)
		}
		if sb.Call != nil {
			wc.call(2, "", *sb.Call)
		}
		wc.cni(2, sb)
	}
}

func (wc *Chart) cni(depth int, sb *correlator.Sandbox) {
	for i := range sb.CNI {
		p := &sb.CNI[i]
		end, dur, open := p.Exit, FormatSeconds(p.Exit.Sub(p.Exec)), false
		if end.IsZero() {
			end, dur, open = p.Exec, "?", true
		}
		name := "cni " + path.Base(p.Filename)
		wc.emit(Row{Kind: RowCNI, Depth: depth, Label: name, Name: name, Start: p.Exec, End: end, Took: dur, Open: open,
			Style: StyleFull, Detail: strings.Join(p.Argv, " ")})
	}
}

// pause shows the sandbox's insides: the CNI plugins, the pause process,
// and the image pulls that follow it.
func (wc *Chart) pause() {
	sb := wc.Timeline.Sandbox
	if sb != nil {
		for _, call := range sb.FailedCalls {
			wc.call(1, "", call)
		}
		wc.cni(1, sb)
		if !sb.PauseStart.IsZero() {
			wc.emit(Row{Kind: RowProcess, Depth: 1, Label: "process pause", Name: "process pause",
				Start: sb.PauseStart, End: sb.PauseStart, Instant: true, Detail: sb.PodIP})
		}
	}
	for _, ip := range wc.Timeline.ImagePulls {
		if ip.Call.Start.IsZero() || ip.Call.End.IsZero() {
			continue
		}
		// The names the critical path gives the pull's steps.
		owner := ip.StepFor()
		if w := ip.Wait; w != nil {
			// The serialized puller's queue: the pull it began right after.
			behind := BehindName(w.Behind[len(w.Behind)-1])
			wc.emit(Row{Kind: RowPullWait, Label: "image.pull.wait behind " + behind, Name: correlator.ImagePullWaitStepName(owner),
				Start: w.Start, End: w.End, Took: FormatSeconds(w.Duration()), Style: StyleBackOff, Detail: w.NeedEvent})
		}
		if ip.BackOff > 0 {
			from := ip.Call.Start.Add(-ip.BackOff)
			wc.emit(Row{Kind: RowBackOff, Label: "image.pull.back_off", Name: correlator.ImagePullBackOffStepName(owner),
				Start: from, End: ip.Call.Start, Took: FormatSeconds(ip.BackOff), Style: StyleBackOff, Detail: ip.Image})
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
		wc.emit(Row{Kind: RowPull, Label: label, Name: correlator.ImagePullStepName(owner), Start: ip.Call.Start, End: ip.Call.End,
			Took: FormatSeconds(ip.Call.End.Sub(ip.Call.Start)), Style: StyleFull, Failed: ip.Call.Err, Detail: detail})
	}
}

// QuickVolumeCall is how long a volume's setup step may take and still be
// left out of the waterfall (counted in one row) and of an alert's
// sandbox breakdown: every pod has its service account token's projected
// volume, set up in milliseconds.
const QuickVolumeCall = 100 * time.Millisecond

// volumes draws the steps of the volumes' setups, inside the wait before
// the sandbox: those that took time or failed; the others are counted.
func (wc *Chart) volumes() {
	quick := 0
	for _, v := range wc.Timeline.Volumes {
		if a := v.Attach; a != nil {
			label := "volume " + v.Name + " attach"
			if a.Err {
				label += " ✗"
			}
			wc.emit(Row{Kind: RowCall, Depth: 1, Label: label, Name: correlator.VolumeStepName(v.Name), Start: a.Start, End: a.End,
				Took: FormatSeconds(a.End.Sub(a.Start)), Style: StyleFull, Failed: a.Err, Detail: withDriver("attached to the node", v.Driver)})
		}
		for _, call := range v.Calls {
			if call.Start.IsZero() || call.End.IsZero() {
				continue
			}
			if call.End.Sub(call.Start) < QuickVolumeCall && !call.Err {
				quick++
				continue
			}
			method := call.Method.Short()
			label := "volume " + v.Name + " " + method
			if call.Err {
				label += " ✗"
			}
			wc.emit(Row{Kind: RowCall, Depth: 1, Label: label, Name: correlator.VolumeStepName(v.Name), Start: call.Start, End: call.End,
				Took: FormatSeconds(call.End.Sub(call.Start)), Style: StyleFull, Failed: call.Err, Detail: withDriver(string(call.Method), v.Driver)})
		}
	}
	if quick > 0 {
		wc.emit(Row{Kind: RowNote, Depth: 1, Label: fmt.Sprintf("(%d volume setup steps under %v)", quick, QuickVolumeCall), Name: "volumes omitted"})
	}
}

// provisions draws the claims provisioned while the pod waited to be
// scheduled, inside that wait.
func (wc *Chart) provisions() {
	for _, v := range wc.Timeline.Volumes {
		if p := v.Provision; p != nil {
			label := "volume " + v.Name + " provision"
			detail := "claim " + p.Claim + " (the claim's Events, 1 s)"
			if p.Failures > 0 {
				label += fmt.Sprintf(" (%d failed)", p.Failures)
				detail += ": " + p.Error
			}
			wc.emit(Row{Kind: RowCall, Depth: 1, Label: label, Name: correlator.VolumeStepName(v.Name), Start: p.Start, End: p.End,
				Took: FormatSeconds(p.Duration()), Style: StyleFull, Detail: withDriver(detail, v.Driver)})
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

func (wc *Chart) container(c *correlator.Container, depth int) {
	name, owner := podtrace.ContainerSpanName(c), correlator.ContainerStepName(c.Kind, c.Name)
	if len(c.Attempts) == 0 {
		wc.emit(Row{Kind: RowNote, Depth: depth, Label: name, Name: owner, Container: owner, Note: "never started", Detail: c.Image})
	}
	for ai := range c.Attempts {
		a := &c.Attempts[ai]
		start, end, ok := a.Bounds(wc.Timeline.AsOf)
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
			wc.emit(Row{Kind: RowBackOff, Depth: depth, Label: "back-off", Name: correlator.BackOffStepName, Container: owner,
				Start: from, End: from.Add(a.BackOff), Took: FormatSeconds(a.BackOff), Style: StyleBackOff})
		}
		if !ok {
			wc.emit(Row{Kind: RowNote, Depth: depth, Label: label, Name: owner, Container: owner, Note: "no times known",
				Failed: failed, Detail: c.Image})
			continue
		}
		wc.emit(Row{Kind: RowContainer, Depth: depth, Label: label, Name: owner, Container: owner,
			Start: start, End: end, Took: FormatSeconds(end.Sub(start)), Style: StyleFull, Failed: failed, Detail: c.Image})
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
			pend, dur, open := p.Exit, FormatSeconds(p.Exit.Sub(p.Exec)), false
			if pend.IsZero() {
				pend, dur, open = end, "running", true
			}
			wc.emit(Row{Kind: RowProcess, Depth: sub, Label: label, Name: pname, Container: owner,
				Start: p.Exec, End: pend, Took: dur, Open: open, Style: StyleFull, Failed: failed, Detail: strings.Join(p.Argv, " ")})
		}
		if h := a.PostStart; h != nil && !h.Start.IsZero() {
			label, style, failed := "postStart", StyleFull, false
			if h.Handler != "" && h.Handler != "exec" {
				label += " " + h.Handler
			}
			if h.Inferred {
				label += " (inferred)"
				style = StyleInferred
			}
			if h.ExitCode != nil && *h.ExitCode != 0 {
				label += fmt.Sprintf(" ✗ exit %d", *h.ExitCode)
				failed = true
			}
			hend, dur, open := h.End, FormatSeconds(h.End.Sub(h.Start)), false
			if hend.IsZero() {
				hend, dur, open = end, "?", true
			}
			wc.emit(Row{Kind: RowHook, Depth: sub, Label: label, Name: correlator.PostStartStepName(c.Name), Container: owner,
				Start: h.Start, End: hend, Took: dur, Open: open, Style: style, Failed: failed, Detail: strings.Join(h.Command, " ")})
		}
		wc.probes(sub, owner, a.Probes, a.ProbesOmitted)
	}
	wc.containerFacts(depth+1, c)
}

// call draws a CRI call, marked ✗ when it failed.
func (wc *Chart) call(depth int, owner string, call correlator.CRICall) {
	if call.Start.IsZero() || call.End.IsZero() {
		return
	}
	method := call.Method.Short()
	label := method
	if call.Err {
		label += " ✗"
	}
	wc.emit(Row{Kind: RowCall, Depth: depth, Label: label, Name: method, Container: owner, Start: call.Start, End: call.End,
		Took: FormatSeconds(call.End.Sub(call.Start)), Style: StyleFull, Failed: call.Err, Detail: string(call.Method)})
}

// inFlight draws the kubelet's calls that had not returned when a start in
// progress was derived, open to then.
func (wc *Chart) inFlight() {
	tl := wc.Timeline
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
				wc.emit(Row{Kind: RowPullWait, Label: behindPulls(q.Behind), Name: correlator.ImagePullWaitStepName(cmp.Or(f.Container, f.Image)),
					Start: q.Start, End: q.End, Took: FormatSeconds(q.Duration()), Style: StyleBackOff})
			}
		case f.Container != "":
			label, detail = method+" "+f.Container+" (in flight)", detail+" for "+f.Container
		}
		wc.emit(Row{Kind: RowCall, Label: label, Name: method, Start: f.Start, End: tl.AsOf,
			Took: FormatSeconds(tl.AsOf.Sub(f.Start)), Open: true, Style: StyleFull, Detail: detail})
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
func (wc *Chart) containerFacts(depth int, c *correlator.Container) {
	owner := correlator.ContainerStepName(c.Kind, c.Name)
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
			dur = FormatSeconds(w.Duration())
		}
		wc.emit(Row{Kind: RowWaiting, Depth: depth, Label: label, Name: "waiting " + w.Reason, Container: owner,
			Start: w.First, End: w.Last, Took: dur, Style: StyleWaiting, Message: w.Message})
	}
	if c.WaitingOmitted > 0 {
		wc.emit(Row{Kind: RowNote, Depth: depth, Label: fmt.Sprintf("(%d more waiting reasons)", c.WaitingOmitted),
			Name: "waiting omitted", Container: owner})
	}
}

// probes makes one row per probe kind, its attempts as marks; the duration
// is from the first attempt to the end of the first success (or of the last
// attempt when none succeeded). The counts include the attempts the
// timeline left out (omitted), which have no mark.
func (wc *Chart) probes(depth int, owner string, probes []correlator.ProbeAttempt, omitted map[correlator.ProbeKind]correlator.OmittedProbes) {
	var kinds []correlator.ProbeKind
	for _, p := range probes {
		if !slices.Contains(kinds, p.Kind) {
			kinds = append(kinds, p.Kind)
		}
	}
	for _, k := range kinds {
		var marks []ProbeMark
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
			kind := MarkOther
			switch {
			case p.Inferred:
				kind = MarkInferred
			case p.Result == correlator.ProbeSuccess:
				kind = MarkOK
			case p.Result.Failed():
				kind = MarkFailed
				failed++
			}
			if p.Result == correlator.ProbeSuccess && success.IsZero() {
				success = end
			}
			marks = append(marks, ProbeMark{At: p.Start, End: end, Kind: kind, Attempt: p})
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
			dur = FormatSeconds(last.Sub(first))
		}
		wc.emit(Row{Kind: RowProbe, Depth: depth, Label: label, Name: name, Container: owner,
			Start: first, End: last, Took: dur, Probes: marks})
	}
}

// duration is how long the timeline says the start took: End - Start, or
// the axis when either is unknown.
func (wc *Chart) duration() time.Duration {
	tl := wc.Timeline
	if tl.End.IsZero() || tl.Start.IsZero() {
		return wc.Total
	}
	return tl.End.Sub(tl.Start)
}

// Outcome is the headline's verdict: "Ready in 27.097s".
func (wc *Chart) Outcome() string {
	tl, d := wc.Timeline, wc.duration()
	switch tl.Outcome {
	case correlator.OutcomeReady:
		return "Ready in " + FormatSeconds(d)
	case correlator.OutcomeFailed:
		return "FAILED after " + FormatSeconds(d)
	case correlator.OutcomeTimeout:
		if tl.Partial {
			return "STILL STARTING after " + FormatSeconds(d) + " (the start timeout; the start goes on)"
		}
		return "TIMED OUT after " + FormatSeconds(d)
	case correlator.OutcomeDeleted:
		return "deleted after " + FormatSeconds(d)
	case correlator.OutcomeStarting:
		return "STARTING for " + FormatSeconds(d) + " (as of " + tl.AsOf.UTC().Format("15:04:05Z") + ")"
	default:
		return string(tl.Outcome) + " after " + FormatSeconds(d)
	}
}

// Meta are the facts of the header that identify the start: its uid,
// node, creation, an earlier report, a static pod's config hash.
func (wc *Chart) Meta() []string {
	tl := wc.Timeline
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
		meta = append(meta, "reported still starting at +"+FormatSeconds(reportedAfter(tl)))
	}
	if tl.Pod.Static() {
		meta = append(meta, "static pod (config hash "+tl.Pod.ConfigHash+")")
	}
	return meta
}

// reportedAfter is how long after its creation a start was reported still
// in progress.
func reportedAfter(tl *correlator.Timeline) time.Duration { return tl.ReportedAt.Sub(tl.Start) }

// ChartNote is one thing the waterfall tells of what readyline could not
// see or what is less exact than it looks.
type ChartNote struct {
	// Topic prefixes the text ("missing", "blind"), empty for a sentence
	// of its own.
	Topic string
	Text  string
}

// Notes are what the timeline lacks, in the header's order: a pod seen
// late, its marks (api_lag, clock_step), what is missing, the sources'
// blind windows, times spread beyond the axis.
func (wc *Chart) Notes() []ChartNote {
	tl := wc.Timeline
	var out []ChartNote
	if tl.TraceParent != "" {
		if tp, err := podtrace.ParseTraceParent(tl.TraceParent); err == nil {
			out = append(out, ChartNote{Text: fmt.Sprintf("linked to trace %s span %s (%s)", tp.TraceID, tp.SpanID, correlator.TraceParentAnnotation)})
		} else {
			out = append(out, ChartNote{Text: correlator.TraceParentAnnotation + " ignored: " + err.Error()})
		}
	}
	if !tl.ObservedSince.IsZero() {
		out = append(out, ChartNote{Text: "readyline saw this pod from +" + FormatSeconds(tl.ObservedSince.Sub(wc.Start)) +
			": earlier kernel and CRI facts are missing"})
	}
	for _, m := range tl.Marks {
		switch m {
		case correlator.MarkAPILag:
			out = append(out, ChartNote{Text: "the API delivered some conditions late (api_lag): they are at their lastTransitionTime, marked coarse"})
		case correlator.MarkClockStep:
			steps := make([]string, len(tl.ClockSteps))
			for i, s := range tl.ClockSteps {
				at := FormatSeconds(s.At.Sub(wc.Start))
				if !s.At.Before(wc.Start) {
					at = "+" + at
				}
				steps[i] = FormatOffset(s.Step) + " at " + at
			}
			out = append(out, ChartNote{Text: "the node's wall clock stepped (clock_step: " + strings.Join(steps, ", ") +
				"): the times are on the clock after it"})
		}
	}
	if len(tl.Missing) > 0 {
		out = append(out, ChartNote{Topic: "missing", Text: strings.Join(tl.Missing, "; ")})
	}
	for _, g := range tl.Gaps {
		out = append(out, ChartNote{Topic: "blind", Text: g.Describe(wc.At)})
	}
	if wc.span > 0 {
		out = append(out, ChartNote{Text: "its times spread over " + FormatSeconds(wc.span) + " (a clock jump or a corrupt record?): " +
			"the bars show the first " + FormatSeconds(wc.Total) + ", later times at the right edge"})
	}
	return out
}

// criticalSteps are the critical path's steps as the footer lists them:
// "pod.schedule 0.045s", consecutive steps on one row (a container's
// calls, run and probes) as one.
func (wc *Chart) criticalSteps() []string {
	var parts []string
	for _, s := range mergedSteps(wc.Timeline.CriticalPath) {
		parts = append(parts, s.Name+" "+FormatSeconds(s.End.Sub(s.Start)))
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

// BreakdownRow is one line of "where the time went".
type BreakdownRow struct {
	Kind, Name, Took, Percent, What string
}

// BreakdownRows are the timeline's Breakdown as the footer and the page
// list it: each kind of time, largest first, with its share of the start.
func BreakdownRows(tl *correlator.Timeline) []BreakdownRow {
	total := tl.End.Sub(tl.Start)
	if total <= 0 {
		return nil
	}
	rows := make([]BreakdownRow, 0, len(tl.Breakdown))
	for _, s := range tl.Breakdown {
		rows = append(rows, BreakdownRow{Kind: string(s.Kind), Name: s.Kind.Name(), Took: FormatSeconds(s.Duration),
			Percent: fmt.Sprintf("%d%%", int((200*s.Duration+total)/(2*total))), What: s.What})
	}
	return rows
}

func HasBackOff(tl *correlator.Timeline) bool {
	for _, c := range tl.Containers {
		for _, a := range c.Attempts {
			if a.BackOff > 0 {
				return true
			}
		}
	}
	return false
}

func HasWaiting(tl *correlator.Timeline) bool {
	return slices.ContainsFunc(tl.Containers, func(c correlator.Container) bool { return len(c.Waiting) > 0 })
}

// TickStep is the roundest step giving at most n ticks over total; it is
// never below 10 ms.
func TickStep(total time.Duration, n int) time.Duration {
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

func FormatTick(t, step time.Duration) string {
	if step < time.Second {
		return fmt.Sprintf("%gs", math.Round(t.Seconds()*100)/100)
	}
	return fmt.Sprintf("%ds", int(t.Round(time.Second).Seconds()))
}

// FormatSeconds formats d in seconds with millisecond precision, shorter for
// long durations: "0.045s", "27.097s", "123.4s"; past 11 days (no pod start
// takes that long: a clock jump or a corrupt record) in whole days, so that
// any duration fits the waterfall's columns: "106752d".
func FormatSeconds(d time.Duration) string {
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
