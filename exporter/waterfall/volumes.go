package waterfall

import (
	"fmt"
	"time"

	"github.com/readyline/readyline/correlator"
)

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
			if p.Open {
				label = "volume " + v.Name + " provisioning" // in flight: drawn open
			}
			detail := "claim " + p.Claim + " (the claim's Events, 1 s)"
			if p.Failures > 0 {
				label += fmt.Sprintf(" (%d failed)", p.Failures)
				detail += ": " + p.Error
			}
			wc.emit(Row{Kind: RowCall, Depth: 1, Label: label, Name: correlator.VolumeStepName(v.Name), Start: p.Start, End: p.End,
				Took: FormatSeconds(p.Duration()), Open: p.Open, Style: StyleFull, Detail: withDriver(detail, v.Driver)})
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
