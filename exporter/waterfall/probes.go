package waterfall

import (
	"fmt"
	"slices"
	"time"

	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter/podtrace"
)

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
