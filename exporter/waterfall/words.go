package waterfall

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/readyline/readyline/correlator"
)

// The words below are the waterfall's, and the exporter's spans, alerts
// and pages say things with them too, so that all read alike.

// AnotherPodsPull is what a reader who may not get the pod of a pull a
// start waited behind reads of it (exporter.ReaderView hides those).
const AnotherPodsPull = "another pod's pull"

// BehindName names the pull b for a reader: its image, or AnotherPodsPull
// when the reader may not know it.
func BehindName(b correlator.PullBehind) string {
	if b.Hidden || b.Image == "" {
		return AnotherPodsPull
	}
	return b.Image
}

// JoinNonEmpty joins the non-empty parts with sep.
func JoinNonEmpty(sep string, parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, sep)
}

// FormatOffset is d from a start, signed, in correlator.FormatDuration's
// words: "+1.5s", "-200ms".
func FormatOffset(d time.Duration) string {
	if d < 0 {
		return correlator.FormatDuration(d)
	}
	return "+" + correlator.FormatDuration(d)
}

// FormatSeconds formats d in seconds with millisecond precision, shorter for
// long durations: "0.045s", "27.097s", "123.4s"; past 11 days (no pod start
// takes that long: a clock jump or a corrupt record) in whole days, so that
// any duration fits the waterfall's columns: "106752d".
func FormatSeconds(d time.Duration) string {
	s := d.Seconds()
	switch a := math.Abs(s); {
	case a >= 1e6:
		return fmt.Sprintf("%.0fd", s/(24*60*60))
	case a >= 1000:
		return fmt.Sprintf("%.0fs", s)
	case a >= 100:
		return fmt.Sprintf("%.1fs", s)
	default:
		return fmt.Sprintf("%.3fs", s)
	}
}
