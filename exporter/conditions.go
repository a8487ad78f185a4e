package exporter

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/readyline/readyline/correlator"
)

// ConditionSpanName is the name of the zero-length span (and of the root
// span's event) marking when a condition was observed True: "condition Ready".
func ConditionSpanName(condType string) string { return "condition " + condType }

func (b *spanBuilder) conditions(ctx context.Context, root trace.Span, tl *correlator.Timeline) {
	for _, c := range tl.Conditions {
		at := c.Observed
		if at.IsZero() {
			at = c.LastTransitionTime
		}
		if at.IsZero() {
			continue
		}
		attrs := conditionAttrs(c)
		b.leaf(ctx, ConditionSpanName(c.Type), at, at, "", append(attrs, b.alertAttrs(ConditionSpanName(c.Type))...)...)
		root.AddEvent(ConditionSpanName(c.Type), trace.WithTimestamp(at), trace.WithAttributes(attrs...))
	}
}

func conditionAttrs(c correlator.ConditionTransition) []attribute.KeyValue {
	attrs := []attribute.KeyValue{AttrConditionType.String(c.Type)}
	if !c.LastTransitionTime.IsZero() {
		attrs = append(attrs, AttrConditionLTT.String(c.LastTransitionTime.UTC().Format(time.RFC3339)))
	}
	if c.CauseEvent != "" {
		attrs = append(attrs, AttrConditionEvent.String(c.CauseEvent))
	}
	if !c.Cause.IsZero() {
		attrs = append(attrs, AttrConditionCause.String(c.Cause.UTC().Format(time.RFC3339Nano)))
		if !c.Coarse {
			attrs = append(attrs, AttrConditionLagMS.Int64(c.Lag().Milliseconds()))
		}
	}
	if c.Coarse {
		attrs = append(attrs, AttrConditionCoarse.Bool(true))
	}
	if !c.Delivered.IsZero() {
		attrs = append(attrs, AttrConditionDelivered.String(c.Delivered.UTC().Format(time.RFC3339Nano)))
	}
	return attrs
}
