package waterfall

import (
	"fmt"
	"strings"
	"time"

	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter/podtrace"
)

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
