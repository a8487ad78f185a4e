package exporter

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter/podtrace"
)

// maxProbeSpans bounds the probe attempt spans of one probe kind in one
// container attempt: a probe failing every second until a 5 minute timeout
// would otherwise make 300 spans. The first and the last attempts are kept
// (the last is usually the success); the container span counts the rest.
const maxProbeSpans = 32

// probes emits one span per probe attempt, at most maxProbeSpans per kind,
// and counts the attempts of each kind on the container span
// ("readyline.probe.startup.attempts", and ".omitted" when some have no span),
// the ones the timeline itself left out (omitted) included.
func (b *spanBuilder) probes(ctx context.Context, parent trace.Span, probes []correlator.ProbeAttempt, omitted map[correlator.ProbeKind]correlator.OmittedProbes) {
	if len(probes) == 0 {
		return
	}
	var kinds []correlator.ProbeKind
	count := map[correlator.ProbeKind]int{}
	for _, p := range probes {
		if count[p.Kind] == 0 {
			kinds = append(kinds, p.Kind)
		}
		count[p.Kind]++
	}
	seen := map[correlator.ProbeKind]int{}
	for i := range probes {
		p := &probes[i]
		n := seen[p.Kind]
		seen[p.Kind]++
		total := count[p.Kind]
		if total > maxProbeSpans && n >= maxProbeSpans/2 && n < total-maxProbeSpans/2 {
			continue
		}
		if p.Start.IsZero() {
			continue
		}
		attrs := []attribute.KeyValue{
			AttrProbeKind.String(string(p.Kind)),
			AttrProbeResult.String(string(p.Result)),
		}
		if p.Handler != "" {
			attrs = append(attrs, AttrProbeHandler.String(p.Handler))
		}
		if p.ExitCode != nil {
			attrs = append(attrs, AttrProbeExitCode.Int(*p.ExitCode))
		}
		if p.Inferred {
			attrs = append(attrs, AttrInferred.Bool(true))
		}
		if p.Call != nil {
			attrs = append(attrs, semconv.RPCSystemNameGRPC, semconv.RPCMethod(string(p.Call.Method)))
		}
		if c := p.Conn; c != nil {
			attrs = append(attrs, connAttrs(c)...)
		}
		pend := p.End
		if pend.IsZero() {
			pend = p.Start
		}
		errDesc := ""
		switch {
		case p.Result == correlator.ProbeTimeout:
			errDesc = "probe timed out"
		case p.Result.Failed():
			errDesc = "probe failed"
		}
		if p.Message != "" {
			attrs = append(attrs, AttrProbeMessage.String(p.Message))
			errDesc += ": " + p.Message
		}
		b.leaf(ctx, podtrace.ProbeSpanName(p.Kind), p.Start, pend, errDesc, attrs...)
	}
	for _, k := range kinds {
		key := "readyline.probe." + string(k)
		all := count[k] + omitted[k].Attempts
		parent.SetAttributes(attribute.Int(key+".attempts", all))
		if n := all - min(count[k], maxProbeSpans); n > 0 {
			parent.SetAttributes(attribute.Int(key+".omitted", n))
		}
	}
}

// connAttrs describe a kubelet connection to the pod.
func connAttrs(c *correlator.Connection) []attribute.KeyValue {
	return []attribute.KeyValue{semconv.ServerAddress(c.Daddr), semconv.ServerPort(int(c.Dport)), AttrTCPResult.String(c.Result)}
}

// ambiguousProbes marks on the root span the kubelet connections that the
// probes or hooks of several containers could have made: they are on no
// container's span.
func ambiguousProbes(root trace.Span, tl *correlator.Timeline) {
	for _, a := range tl.AmbiguousProbes {
		var cands []string
		for _, c := range a.Candidates {
			cands = append(cands, fmt.Sprintf("%s#%d %s", c.Container, c.Attempt, c.Kind))
		}
		attrs := []attribute.KeyValue{AttrAmbiguousCandidates.StringSlice(cands)}
		if a.Conn != nil {
			attrs = append(attrs, connAttrs(a.Conn)...)
		}
		root.AddEvent("ambiguous probe", trace.WithTimestamp(a.Start), trace.WithAttributes(attrs...))
	}
}
