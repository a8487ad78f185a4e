package exporter

import (
	"math"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/readyline/readyline/correlator"
)

// gapAttrs are AttrMissing (missing, then a line per gap) and AttrBlind.
func gapAttrs(missing []string, gaps []correlator.SourceGap) []attribute.KeyValue {
	var attrs []attribute.KeyValue
	lines := slices.Clone(missing)
	var sources []string
	for _, g := range gaps {
		lines = append(lines, g.String())
		sources = append(sources, g.Source)
	}
	if len(lines) > 0 {
		attrs = append(attrs, AttrMissing.StringSlice(lines))
	}
	if len(sources) > 0 {
		attrs = append(attrs, AttrBlind.String(strings.Join(sources, ",")))
	}
	return attrs
}

// gapEvents adds to s an event "blind <source>" per gap, at its first
// window's start, or at start when it began before.
func gapEvents(s trace.Span, gaps []correlator.SourceGap, start, end time.Time) {
	for _, g := range gaps {
		at := g.Windows[0].From
		if at.Before(start) {
			at = start
		}
		if at.After(end) {
			at = end
		}
		reasons := make([]string, 0, len(g.Windows))
		for _, w := range g.Windows {
			if !slices.Contains(reasons, w.Reason) {
				reasons = append(reasons, w.Reason)
			}
		}
		s.AddEvent("blind "+g.Source, trace.WithTimestamp(at), trace.WithAttributes(
			AttrBlindSource.String(g.Source),
			AttrBlindReason.String(strings.Join(reasons, ",")),
			AttrBlindLost.Int64(int64(min(g.Lost(), math.MaxInt64))),
			AttrBlindMessage.String(g.String()),
		))
	}
}

// gapsAfter are the gaps' windows that were still open at t or ended after
// it: what a completion adds to its report.
func gapsAfter(gaps []correlator.SourceGap, t time.Time) []correlator.SourceGap {
	var out []correlator.SourceGap
	for _, g := range gaps {
		after := correlator.SourceGap{Source: g.Source}
		for _, w := range g.Windows {
			if w.To.IsZero() || w.To.After(t) {
				after.Windows = append(after.Windows, w)
			}
		}
		if len(after.Windows) > 0 {
			out = append(out, after)
		}
	}
	return out
}
