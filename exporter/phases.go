package exporter

import (
	"context"
	"time"

	"github.com/readyline/readyline/correlator"
)

func (b *spanBuilder) phases(ctx context.Context, tl *correlator.Timeline, tlEnd time.Time) {
	sandboxDone, earlierDone := false, false
	for _, p := range tl.Phases {
		if p.Start.IsZero() {
			continue
		}
		attrs := b.alertAttrs(p.Name)
		if p.Source != "" {
			attrs = append(attrs, AttrPhaseSource.String(p.Source))
		}
		end := p.End
		if end.IsZero() {
			end = tlEnd
			attrs = append(attrs, AttrIncomplete.Bool(true))
		}
		if end.Before(p.Start) {
			end = p.Start
		}
		if p.Name == correlator.PhaseSandbox && tl.Sandbox != nil {
			if tl.Sandbox.ID != "" {
				attrs = append(attrs, AttrSandboxID.String(tl.Sandbox.ID))
			}
		}
		pctx, s, end, ok := b.start(ctx, p.Name, p.Start, end, attrs)
		if !ok {
			continue
		}
		switch {
		case p.Name == correlator.PhaseSchedule:
			b.provisions(pctx, tl.Volumes)
		case p.Name == correlator.PhaseWaitSandbox:
			b.volumes(pctx, tl.Volumes)
		case p.Name == correlator.PhaseSandbox && tl.Sandbox != nil:
			if !b.sandboxChildren(pctx, tl.Sandbox) {
				b.pause(ctx, tl.Sandbox) // after the call returned: under the root
			}
			sandboxDone = true
		case p.Name == correlator.PhaseSandboxReplaced:
			b.earlierSandboxes(pctx, tl.EarlierSandboxes)
			earlierDone = true
		}
		b.end(s, end)
	}
	if !sandboxDone && tl.Sandbox != nil {
		b.sandboxChildren(ctx, tl.Sandbox)
	}
	if !earlierDone {
		b.earlierSandboxes(ctx, tl.EarlierSandboxes)
	}
	b.imagePulls(ctx, tl)
}
