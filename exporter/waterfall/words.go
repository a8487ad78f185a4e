package waterfall

import (
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

// FormatDuration rounds for people: "10ms", "5.7s", "1m30s".
func FormatDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	default:
		return d.Round(time.Second).String()
	}
}

// FormatOffset is d from a start, signed, as FormatDuration rounds it:
// "+1.5s", "-200ms".
func FormatOffset(d time.Duration) string {
	if d < 0 {
		return "-" + FormatDuration(-d)
	}
	return "+" + FormatDuration(d)
}
