package exporter

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/readyline/readyline/collector/redact"
	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter/podtrace"
	"github.com/readyline/readyline/exporter/waterfall"
)

// openSpan is a container attempt span left open for the insights.
type openSpan struct {
	span trace.Span
	end  time.Time
}

// containers emits every container attempt with its children and returns the
// last attempt of each container, still open. What belongs to the container
// rather than to one attempt goes on that last span: its waiting reasons as
// events (see AttrWaitingReason). A container with no attempt but waiting
// reasons or failed calls gets a span of its own over them
// (AttrContainerNotCreated). Failed CreateContainer calls, which made no
// attempt, are children of the root, named by k8s.container.name.
func (b *spanBuilder) containers(ctx context.Context, tl *correlator.Timeline) map[string]openSpan {
	last := make(map[string]openSpan, len(tl.Containers))
	for ci := range tl.Containers {
		c := &tl.Containers[ci]
		b.containerAttempts(ctx, c, last)
		for i := range c.FailedCalls {
			b.criCall(ctx, &c.FailedCalls[i], semconv.K8SContainerName(c.Name))
		}
		if _, ok := last[c.Name]; !ok {
			if start, end, ok := c.FactBounds(); ok {
				attrs := append(containerAttrs(c, &correlator.ContainerAttempt{}), AttrContainerNotCreated.Bool(true))
				if _, s, end, ok := b.start(ctx, podtrace.ContainerSpanName(c), start, end, attrs); ok {
					if n := len(c.Waiting); n > 0 {
						w := c.Waiting[n-1]
						s.SetStatus(codes.Error, waterfall.JoinNonEmpty(": ", w.Reason, w.Message))
					} else {
						s.SetStatus(codes.Error, "not created: "+c.FailedCalls[len(c.FailedCalls)-1].Method.Short()+" failed")
					}
					last[c.Name] = openSpan{span: s, end: end}
				}
			}
		}
		if open, ok := last[c.Name]; ok {
			waitingEvents(open.span, c)
			kubeletEvents(open.span, c.Events)
		}
	}
	return last
}

// waitingEvents adds a container's waiting reasons to its span.
func waitingEvents(s trace.Span, c *correlator.Container) {
	for _, w := range c.Waiting {
		attrs := []attribute.KeyValue{
			AttrWaitingReason.String(w.Reason),
			AttrWaitingLast.String(w.Last.UTC().Format(time.RFC3339Nano)),
			AttrWaitingDurationMS.Int64(w.Duration().Milliseconds()),
			AttrWaitingTimes.Int(w.Times),
		}
		if w.Message != "" {
			attrs = append(attrs, AttrWaitingMessage.String(w.Message))
		}
		s.AddEvent("waiting "+w.Reason, trace.WithTimestamp(w.First), trace.WithAttributes(attrs...))
	}
	if c.WaitingOmitted > 0 {
		s.SetAttributes(AttrWaitingOmitted.Int(c.WaitingOmitted))
	}
}

// containerAttempts emits the spans of c's attempts and leaves the last
// one open in last.
func (b *spanBuilder) containerAttempts(ctx context.Context, c *correlator.Container, last map[string]openSpan) {
	for ai := range c.Attempts {
		a := &c.Attempts[ai]
		start, end, ok := a.Bounds(time.Time{})
		if !ok {
			continue
		}
		actx, s, end, ok := b.start(ctx, podtrace.ContainerSpanName(c), start, end, containerAttrs(c, a))
		if !ok {
			continue
		}
		b.annotateAttempt(s, a)
		b.attemptChildren(actx, s, a, end)
		if prev, ok := last[c.Name]; ok {
			b.end(prev.span, prev.end)
		}
		last[c.Name] = openSpan{span: s, end: end}
	}
}

func containerAttrs(c *correlator.Container, a *correlator.ContainerAttempt) []attribute.KeyValue {
	attrs := []attribute.KeyValue{
		semconv.K8SContainerName(c.Name),
		AttrContainerKind.String(string(c.Kind)),
		semconv.K8SContainerRestartCount(a.Attempt),
	}
	if a.ContainerID != "" {
		attrs = append(attrs, semconv.ContainerID(a.ContainerID))
	}
	if c.Image != "" {
		name, tag := splitImage(c.Image)
		attrs = append(attrs, semconv.ContainerImageName(name))
		if tag != "" {
			attrs = append(attrs, semconv.ContainerImageTags(tag))
		}
	}
	if a.ExitCode != nil {
		attrs = append(attrs, AttrContainerExitCode.Int(*a.ExitCode))
	}
	if a.Reason != "" {
		attrs = append(attrs, AttrTermReason.String(a.Reason))
	}
	if a.KilledBy != "" {
		attrs = append(attrs, AttrKilledBy.String(string(a.KilledBy)))
	}
	if a.BackOff > 0 {
		attrs = append(attrs, AttrBackOffMS.Int64(a.BackOff.Milliseconds()))
	}
	if !a.NextCreated.IsZero() {
		if exit := a.Exit(); !exit.IsZero() {
			attrs = append(attrs, AttrNextCreatedLagMS.Int64(durationMS(exit, a.NextCreated)))
		}
	}
	return attrs
}

// annotateAttempt marks the runtime's and the API's moments on the attempt
// span as events, and sets status Error for a non-zero exit code.
func (b *spanBuilder) annotateAttempt(s trace.Span, a *correlator.ContainerAttempt) {
	for _, ev := range []struct {
		name string
		at   time.Time
	}{
		{"runtime created", a.Created},
		{"runtime started", a.Started},
		{"api started", a.StartedObserved},
		{"api ready", a.ReadyObserved},
		{"runtime finished", a.Finished},
	} {
		if !ev.at.IsZero() {
			s.AddEvent(ev.name, trace.WithTimestamp(ev.at))
		}
	}
	if a.ExitCode != nil && *a.ExitCode != 0 {
		s.SetStatus(codes.Error, fmt.Sprintf("exit code %d", *a.ExitCode))
	}
}

func (b *spanBuilder) attemptChildren(ctx context.Context, parent trace.Span, a *correlator.ContainerAttempt, end time.Time) {
	for i := range a.Calls {
		b.criCall(ctx, &a.Calls[i])
	}
	if p := a.Process; p != nil && !p.Exec.IsZero() {
		attrs := processAttrs(p)
		pend := p.Exit
		if pend.IsZero() {
			pend = end
			attrs = append(attrs, AttrProcessRunning.Bool(true))
		}
		b.leaf(ctx, podtrace.ProcessSpanName(p), p.Exec, pend, processErr(p), attrs...)
	}
	if h := a.PostStart; h != nil && !h.Start.IsZero() {
		attrs := []attribute.KeyValue{AttrHookHandler.String(h.Handler)}
		if len(h.Command) > 0 {
			// Redacted by the correlator; again here for a Timeline from
			// elsewhere (an old recording): idempotent, free without secrets.
			attrs = append(attrs, AttrHookCommand.StringSlice(redact.Argv(h.Command)))
		}
		if h.ExitCode != nil {
			attrs = append(attrs, AttrHookExitCode.Int(*h.ExitCode))
		}
		if h.Inferred {
			attrs = append(attrs, AttrInferred.Bool(true))
		}
		if h.Call != nil {
			attrs = append(attrs, semconv.RPCSystemNameGRPC, semconv.RPCMethod(string(h.Call.Method)))
		}
		if c := h.Conn; c != nil { // an httpGet hook's request
			attrs = append(attrs, connAttrs(c)...)
		}
		hend := h.End
		if hend.IsZero() {
			hend = end
			attrs = append(attrs, AttrIncomplete.Bool(true))
		}
		errDesc := ""
		if h.ExitCode != nil && *h.ExitCode != 0 {
			errDesc = fmt.Sprintf("exit code %d", *h.ExitCode)
		}
		b.leaf(ctx, "postStart", h.Start, hend, errDesc, attrs...)
	}
	b.probes(ctx, parent, a.Probes, a.ProbesOmitted)
}

func processAttrs(p *correlator.Process) []attribute.KeyValue {
	attrs := []attribute.KeyValue{semconv.ProcessPID(int(p.PID))}
	if p.Filename != "" {
		attrs = append(attrs, semconv.ProcessExecutablePath(p.Filename))
	}
	if len(p.Argv) > 0 {
		attrs = append(attrs, semconv.ProcessCommandArgs(redact.Argv(p.Argv)...)) // as the hook's command
	}
	if p.ExitCode != nil && p.Signal == 0 {
		attrs = append(attrs, semconv.ProcessExitCode(*p.ExitCode))
	}
	if p.Signal != 0 {
		attrs = append(attrs, AttrProcessSignal.Int(p.Signal))
	}
	return attrs
}

// processErr describes a process that failed, "" otherwise.
func processErr(p *correlator.Process) string {
	switch {
	case p.Signal != 0: // first: a killed process's exit code means nothing
		return fmt.Sprintf("killed by signal %d", p.Signal)
	case p.ExitCode != nil && *p.ExitCode != 0:
		return fmt.Sprintf("exit code %d", *p.ExitCode)
	}
	return ""
}

// splitImage splits an image reference into its name and its tag (empty for
// a digest reference or no tag): "localhost/busybox:local" -> "localhost/busybox", "local".
func splitImage(ref string) (name, tag string) {
	if i := strings.IndexByte(ref, '@'); i >= 0 {
		return ref[:i], ""
	}
	slash := strings.LastIndexByte(ref, '/')
	if i := strings.LastIndexByte(ref, ':'); i > slash {
		return ref[:i], ref[i+1:]
	}
	return ref, ""
}
