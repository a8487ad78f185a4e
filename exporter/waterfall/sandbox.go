package waterfall

import (
	"fmt"
	"path"
	"strings"

	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter/podtrace"
)

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
