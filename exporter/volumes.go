package exporter

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/readyline/readyline/correlator"
)

// SpanVolumeSetup is a volume's setup before the sandbox: its first CSI
// call's start to its last's end, the calls its children (gRPC client
// spans named like them: csi.v1.Node/NodeStageVolume).
const SpanVolumeSetup = "volume.setup"

// Attribute keys of a volume.setup span (the pod's volume is semconv's
// k8s.volume.name).
const (
	AttrVolumeSource    = attribute.Key("readyline.volume.persistent_volume")
	AttrVolumeCSIDriver = attribute.Key("readyline.volume.csi_driver")
)

// volumes emits a volume.setup span per volume set up through a CSI
// driver, under ctx (the wait before the sandbox).
func (b *spanBuilder) volumes(ctx context.Context, volumes []correlator.VolumeSetup) {
	for _, v := range volumes {
		var start, end, firstEnd = v.Calls[0].Start, v.Calls[0].End, v.Calls[0].End
		failed := false
		for _, c := range v.Calls {
			if start.IsZero() || (!c.Start.IsZero() && c.Start.Before(start)) {
				start = c.Start
			}
			if c.End.After(end) {
				end = c.End
			}
			failed = c.Err // the last call's outcome is the setup's
		}
		if start.IsZero() {
			start = firstEnd
		}
		attrs := []attribute.KeyValue{semconv.K8SVolumeName(v.Name)}
		if v.Source != "" {
			attrs = append(attrs, semconv.K8SVolumeTypePersistentVolumeClaim, AttrVolumeSource.String(v.Source))
		}
		if v.Driver != "" {
			attrs = append(attrs, AttrVolumeCSIDriver.String(v.Driver))
		}
		vctx, s, end, ok := b.start(ctx, SpanVolumeSetup, start, end, attrs)
		if !ok {
			continue
		}
		for i := range v.Calls {
			b.criCall(vctx, &v.Calls[i])
		}
		if failed {
			s.SetStatus(codes.Error, "the volume's last CSI call failed")
		}
		b.end(s, end)
	}
}
