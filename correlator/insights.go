package correlator

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Thresholds below which a wait is not worth a sentence.
const (
	lagWorthNoting      = time.Second
	reactionWorthNoting = 500 * time.Millisecond
)

func (d *derivation) insights(tl *Timeline) []Insight {
	var out []Insight
	for i, v := range d.views {
		atts := v.out.Attempts
		if len(atts) == 0 {
			continue
		}
		a := atts[len(atts)-1]
		name := v.entry.name
		if len(atts) > 1 {
			out = append(out, retriesInsight(name, atts))
		}
		if h := a.PostStart; h != nil && !h.End.IsZero() {
			// The next container waited for the hook only when it was
			// created after the hook began: a restarted attempt's hook runs
			// after the others were created the first time.
			if i+1 < len(d.views) && !d.views[i+1].created.IsZero() && a.NextCreated.After(h.Start) {
				next := d.views[i+1].entry.name
				w := span(h.Start, a.NextCreated)
				out = append(out, Insight{Kind: InsightPostStartWait, Container: next, Duration: w,
					Message: fmt.Sprintf("%s was created %s after %s's postStart hook began: the kubelet waits for the hook (%s) before the next container", next, FormatDuration(w), name, FormatDuration(span(h.Start, h.End)))})
			} else if hd := span(h.Start, h.End); hd >= lagWorthNoting {
				out = append(out, Insight{Kind: InsightPostStartWait, Container: name, Duration: hd,
					Message: fmt.Sprintf("%s's postStart hook ran %s; the API showed %s running only after it returned", name, FormatDuration(hd), name)})
			}
		}
		if ins, ok := probeDelayInsight(v.entry, a); ok {
			out = append(out, ins)
		}
		if v.entry.kind == KindInit && !v.done.IsZero() && !a.NextCreated.IsZero() && i+1 < len(d.views) {
			if r := span(v.done, a.NextCreated); r >= reactionWorthNoting {
				next := d.views[i+1].entry.name
				out = append(out, Insight{Kind: InsightKubeletReaction, Container: name, Duration: r,
					Message: fmt.Sprintf("the kubelet created %s %s after %s exited", next, FormatDuration(r), name)})
			}
		}
	}
	if ins, ok := sandboxChangedInsight(tl); ok {
		out = append(out, ins)
	}
	if ins, ok := pullInsight(tl); ok {
		out = append(out, ins)
	}
	for _, c := range tl.Conditions {
		if lag := c.Lag(); lag >= lagWorthNoting {
			out = append(out, Insight{Kind: InsightStatusLag, Duration: lag,
				Message: fmt.Sprintf("%s was reported %s after %s", c.Type, FormatDuration(lag), c.CauseEvent)})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Duration > out[j].Duration })
	return out
}

// retriesInsight: the attempts of a container, how each ended (exit code,
// probe kill) and the back-offs between them.
func retriesInsight(name string, atts []ContainerAttempt) Insight {
	var codes, waits []string
	var backOff time.Duration
	for _, at := range atts {
		code := "running"
		if at.ExitCode != nil {
			code = fmt.Sprint(*at.ExitCode)
		}
		switch at.KilledBy {
		case "":
		case KilledPostStart:
			code += " (killed: postStart hook failed)"
		default:
			code += fmt.Sprintf(" (killed: %sProbe)", at.KilledBy)
		}
		codes = append(codes, code)
		if at.BackOff > 0 {
			waits = append(waits, FormatDuration(at.BackOff))
			backOff += at.BackOff
		}
	}
	took := span(firstCreated(atts), firstCreated(atts[len(atts)-1:]))
	msg := fmt.Sprintf("%s ran %d times (exit codes %s); the retries took %s", name, len(atts), strings.Join(codes, ", "), FormatDuration(took))
	if len(waits) > 0 {
		msg += fmt.Sprintf(", %s of it back-off (%s)", FormatDuration(backOff), strings.Join(waits, ", "))
	}
	return Insight{Kind: InsightRetries, Container: name, Duration: took, Message: msg}
}

// sandboxChangedInsight: the sandbox was replaced, which kills and restarts
// every container (computePodActions: CreateSandbox implies KillPod).
func sandboxChangedInsight(tl *Timeline) (Insight, bool) {
	if len(tl.EarlierSandboxes) == 0 || tl.Sandbox == nil {
		return Insight{}, false
	}
	var lost time.Duration
	for _, ph := range tl.Phases {
		if ph.Name == PhaseSandboxReplaced {
			lost = ph.Duration()
		}
	}
	n := len(tl.EarlierSandboxes)
	what := "the first sandbox was"
	if n > 1 {
		what = fmt.Sprintf("%d sandboxes were", n)
	}
	msg := fmt.Sprintf("sandbox changed: all containers restarted (%s replaced", what)
	if lost > 0 {
		msg += fmt.Sprintf("; %s from the first sandbox to the final one", FormatDuration(lost))
	}
	return Insight{Kind: InsightSandboxChanged, Duration: lost, Message: msg + ")"}, true
}

// probeDelayInsight: initialDelaySeconds kept the first probe away while the
// process was already up.
func probeDelayInsight(e specEntry, a ContainerAttempt) (Insight, bool) {
	if a.Process == nil {
		return Insight{}, false
	}
	for _, ps := range probesOf(e.spec) {
		if ps.kind == ProbeLiveness || ps.probe.InitialDelaySeconds <= 0 {
			continue
		}
		delay := time.Duration(ps.probe.InitialDelaySeconds) * time.Second
		for _, pa := range a.Probes {
			if pa.Kind != ps.kind || pa.Inferred {
				continue
			}
			idle := span(a.Process.Exec, pa.Start)
			return Insight{Kind: InsightProbeDelay, Container: e.name, Duration: idle,
				Message: fmt.Sprintf("%sProbe initialDelaySeconds=%d left %s idle %s after its process started", ps.kind, ps.probe.InitialDelaySeconds, e.name, FormatDuration(idle))}, true
		}
		return Insight{Kind: InsightProbeDelay, Container: e.name, Duration: delay,
			Message: fmt.Sprintf("%sProbe initialDelaySeconds=%d kept %s's first %s probe at least %s after its process started", ps.kind, ps.probe.InitialDelaySeconds, e.name, ps.handler, FormatDuration(delay))}, true
	}
	return Insight{}, false
}

// FormatDuration is readyline's one duration for people, in every
// sentence it writes (insights, steps, alerts, the waterfall's notes):
// "120ms", "15.0s", "1m30s".
func FormatDuration(d time.Duration) string {
	switch {
	case d < 0:
		return "-" + FormatDuration(-d)
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return d.Round(time.Second).String()
}
