package waterfall

import (
	"cmp"
	"fmt"

	"github.com/readyline/readyline/correlator"
)

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
