package exporter

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/readyline/readyline/correlator"
)

// Span names of a volume's setup before the sandbox: volume.setup from its
// first step's start to its last's end, its calls its children (gRPC
// client spans named like them: csi.v1.Node/NodeStageVolume), and for a
// volume attached to the node the wait for it, volume.attach.
const (
	SpanVolumeSetup  = "volume.setup"
	SpanVolumeAttach = "volume.attach"
	// SpanVolumeProvision is a claim's volume made by its provisioner
	// while the pod waited to be scheduled, under pod.schedule.
	SpanVolumeProvision = "volume.provision"
)

// Attribute keys of a volume.setup span (the pod's volume is semconv's
// k8s.volume.name).
const (
	AttrVolumeSource    = attribute.Key("readyline.volume.persistent_volume")
	AttrVolumeCSIDriver = attribute.Key("readyline.volume.csi_driver")
	// A volume.provision span's claim, and the provisioner's failed
	// attempts before it made the volume.
	AttrVolumeClaim             = attribute.Key("readyline.volume.claim")
	AttrVolumeProvisionFailures = attribute.Key("readyline.volume.provision.failures")
)

// volumes emits a volume.setup span per volume set up through a CSI
// driver, under ctx (the wait before the sandbox).
func (b *spanBuilder) volumes(ctx context.Context, volumes []correlator.VolumeSetup) {
	for _, v := range volumes {
		if len(v.Calls) == 0 {
			continue // provisioned, its setup not seen
		}
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
		if a := v.Attach; a != nil && a.Start.Before(start) {
			start = a.Start
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
		if a := v.Attach; a != nil {
			errDesc := ""
			if a.Err {
				errDesc = "WaitForAttach failed"
			}
			b.leaf(vctx, SpanVolumeAttach, a.Start, a.End, errDesc)
		}
		for i := range v.Calls {
			if c := &v.Calls[i]; c.Method.IsCSI() {
				b.criCall(vctx, c) // a gRPC call, like the CRI's
			} else if !c.Start.IsZero() {
				errDesc := ""
				if c.Err {
					errDesc = "the kubelet's " + c.Method.Short() + " failed"
				}
				b.leaf(vctx, string(c.Method), c.Start, c.End, errDesc) // the kubelet's own step
			}
		}
		if failed {
			s.SetStatus(codes.Error, "the volume's last CSI call failed")
		}
		b.end(s, end)
	}
}

// provisions emits a volume.provision span per claim provisioned while the
// pod waited to be scheduled, under ctx (pod.schedule). Its times are the
// claim's Events': 1 s precision.
func (b *spanBuilder) provisions(ctx context.Context, volumes []correlator.VolumeSetup) {
	for _, v := range volumes {
		p := v.Provision
		if p == nil {
			continue
		}
		attrs := []attribute.KeyValue{semconv.K8SVolumeName(v.Name), semconv.K8SVolumeTypePersistentVolumeClaim, AttrVolumeClaim.String(p.Claim)}
		if v.Driver != "" {
			attrs = append(attrs, AttrVolumeCSIDriver.String(v.Driver))
		}
		if p.Failures > 0 {
			attrs = append(attrs, AttrVolumeProvisionFailures.Int(p.Failures))
		}
		_, s, end, ok := b.start(ctx, SpanVolumeProvision, p.Start, p.End, attrs)
		if !ok {
			continue
		}
		b.end(s, end)
	}
}
