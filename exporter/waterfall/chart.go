package waterfall

import (
	"fmt"
	"math"
	"time"

	"github.com/readyline/readyline/correlator"
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
