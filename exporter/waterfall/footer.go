package waterfall

import (
	"fmt"
	"slices"

	"github.com/readyline/readyline/correlator"
)

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
