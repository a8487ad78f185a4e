package exporter

import (
	"context"
	"fmt"
	"path"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter/podtrace"
)

// earlierSandboxes: one "sandbox attempt N" span per replaced sandbox, from
// its first RunPodSandbox call (failed ones included) or creation to its
// end, with its calls, CNI plugins and pause process.
func (b *spanBuilder) earlierSandboxes(ctx context.Context, sbs []correlator.Sandbox) {
	for i := range sbs {
		sb := &sbs[i]
		start, end := podtrace.SandboxStart(sb), sb.Ended
		if start.IsZero() {
			continue
		}
		attrs := []attribute.KeyValue{AttrSandboxAttempt.Int(sb.Attempt)}
		if sb.ID != "" {
			attrs = append(attrs, AttrSandboxID.String(sb.ID))
		}
		if end.IsZero() {
			end = sb.Ready
			if sb.Call != nil && sb.Call.End.After(end) {
				end = sb.Call.End
			}
			attrs = append(attrs, AttrIncomplete.Bool(true))
		}
		sctx, s, end, ok := b.start(ctx, fmt.Sprintf("sandbox attempt %d", sb.Attempt), start, end, attrs)
		if !ok {
			continue
		}
		s.SetStatus(codes.Error, "sandbox replaced: all containers restarted")
		b.sandboxChildren(sctx, sb)
		b.end(s, end)
	}
}

// sandboxChildren: the failed RunPodSandbox calls, the RunPodSandbox call, the CNI plugins inside it, the
// pause process.
func (b *spanBuilder) sandboxChildren(ctx context.Context, sb *correlator.Sandbox) (pauseDone bool) {
	for i := range sb.FailedCalls {
		b.criCall(ctx, &sb.FailedCalls[i])
	}
	if sb.Call != nil {
		b.criCall(ctx, sb.Call)
	}
	for i := range sb.CNI {
		p := &sb.CNI[i]
		name := "cni " + path.Base(p.Filename)
		attrs := processAttrs(p)
		end := p.Exit
		if end.IsZero() {
			end = p.Exec
			attrs = append(attrs, AttrIncomplete.Bool(true))
		}
		b.leaf(ctx, name, p.Exec, end, processErr(p), attrs...)
	}
	return b.pause(ctx, sb)
}

// pause emits the sandbox's pause process as an instant, and reports false
// when it lies outside ctx's span: runc start returns once it has released
// the container's init, which execs /pause a moment later, so under load the
// exec can come after RunPodSandbox returned. The caller then puts it under
// the root instead of losing it.
func (b *spanBuilder) pause(ctx context.Context, sb *correlator.Sandbox) bool {
	if sb.PauseStart.IsZero() {
		return true
	}
	if _, _, _, ok := clamp(ctx, sb.PauseStart, sb.PauseStart); !ok {
		return false
	}
	attrs := []attribute.KeyValue{}
	if sb.ID != "" {
		attrs = append(attrs, AttrSandboxID.String(sb.ID))
	}
	b.leaf(ctx, "process pause", sb.PauseStart, sb.PauseStart, "", attrs...)
	return true
}
