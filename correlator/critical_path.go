package correlator

import (
	"time"
)

func (d *derivation) criticalPath(tl *Timeline) []Step {
	var out []Step
	for _, ph := range tl.Phases {
		if ph.Name == PhaseSchedule || ph.Name == PhaseWaitSandbox || ph.Name == PhaseSandbox {
			out = append(out, Step{Name: ph.Name, Start: ph.Start, End: ph.End})
		}
	}
	var lastMain *containerView
	for _, v := range d.views {
		switch v.entry.kind {
		case KindInit:
			out = appendStep(out, string(v.entry.kind)+"/"+v.entry.name, v.created, v.done)
		case KindSidecar:
			out = appendStep(out, string(v.entry.kind)+"/"+v.entry.name, v.created, v.started)
		case KindMain:
			if lastMain == nil || v.ready.After(lastMain.ready) {
				lastMain = v
			}
		}
	}
	if lastMain != nil {
		out = appendStep(out, string(lastMain.entry.kind)+"/"+lastMain.entry.name, lastMain.created, lastMain.ready)
	}
	return out
}

func appendStep(steps []Step, name string, start, end time.Time) []Step {
	if start.IsZero() || end.IsZero() || end.Before(start) {
		return steps
	}
	return append(steps, Step{Name: name, Start: start, End: end})
}
