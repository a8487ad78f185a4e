package waterfall

import (
	"fmt"
	"strings"

	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter/podtrace"
)

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
