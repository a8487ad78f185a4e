package exporter

import (
	"strings"

	"go.opentelemetry.io/otel/attribute"
)

// rootAlertAttrs are the root span's attributes for the alerts.
func rootAlertAttrs(alerts []Alert) []attribute.KeyValue {
	switch len(alerts) {
	case 0:
		return nil
	case 1:
		return []attribute.KeyValue{AttrAlert.String(alerts[0].Name), AttrAlertThresholdMS.Int64(alerts[0].Threshold.Milliseconds())}
	}
	names := make([]string, len(alerts))
	for i, a := range alerts {
		names[i] = a.Name
	}
	return []attribute.KeyValue{AttrAlert.String(strings.Join(names, ","))}
}

// alertEventAttrs are the attributes of an alert's event on the root span.
func alertEventAttrs(a Alert) []attribute.KeyValue {
	attrs := []attribute.KeyValue{
		AttrAlert.String(a.Name),
		AttrAlertReason.String(a.Reason),
		AttrAlertThresholdMS.Int64(a.Threshold.Milliseconds()),
		AttrAlertDurationMS.Int64(a.Took.Milliseconds()),
		AttrAlertMessage.String(a.Message),
	}
	if !a.Reached {
		attrs = append(attrs, AttrAlertNotReached.Bool(true))
	}
	return attrs
}

// alertAttrs are the attributes that mark the span named name when an alert
// measures it.
func (b *spanBuilder) alertAttrs(name string) []attribute.KeyValue {
	a, ok := b.alerts[name]
	if !ok {
		return nil
	}
	return []attribute.KeyValue{AttrAlert.String(a.Name), AttrAlertThresholdMS.Int64(a.Threshold.Milliseconds()),
		AttrAlertDurationMS.Int64(a.Took.Milliseconds())}
}
