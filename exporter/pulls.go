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

	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter/waterfall"
)

// Span names of the image pulls: one image.pull per PullImage call (the
// call its child), before it its image.pull.wait in the kubelet's
// serialized puller, or its image.pull.back_off since the previous failed
// attempt of the image.
const (
	SpanImagePull        = "image.pull"
	SpanImagePullWait    = "image.pull.wait"
	SpanImagePullBackOff = "image.pull.back_off"
)

// Attribute keys of the image pull spans (the image name, tag and
// container use semconv's container.image.name, container.image.tags,
// container.image.id and k8s.container.name).
const (
	// AttrImagePullOutcome is success or failure (PullOutcome*), and
	// AttrImagePullAttempt the pod's attempt at the image, from 1.
	AttrImagePullOutcome = attribute.Key("readyline.image.pull.outcome")
	AttrImagePullAttempt = attribute.Key("readyline.image.pull.attempt")
	// AttrImagePullErrorReason and AttrImagePullError are the waiting
	// reason (ErrImagePull, RegistryUnavailable, ...) and message the API
	// showed for a failed attempt, when seen.
	AttrImagePullErrorReason = attribute.Key("readyline.image.pull.error_reason")
	AttrImagePullError       = attribute.Key("readyline.image.pull.error")
	// AttrImageSizeBytes is the image's size when known; AttrImageSizeBucket
	// is always set: the kubelet's image_size_in_bytes label for it, "N/A"
	// when the size is unknown (as the kubelet labels a size it could not
	// get). AttrImageVolume names the image volume an image was pulled for.
	AttrImageSizeBytes  = attribute.Key("readyline.image.size_bytes")
	AttrImageSizeBucket = attribute.Key("readyline.image.size_bucket")
	AttrImageVolume     = attribute.Key("readyline.image.volume")
	// AttrImagePuller says which puller the kubelet ran as far as readyline
	// can tell (correlator.Puller: serial_assumed, parallel): the kubelet's
	// serializeImagePulls is not visible, serial is its default.
	AttrImagePuller = attribute.Key("readyline.image.puller")
	// AttrImagePullBackOffMS is the back-off since the previous failed
	// attempt; AttrImagePullWaitMS the wait in the serialized puller.
	AttrImagePullBackOffMS = attribute.Key("readyline.image.pull.back_off_ms")
	AttrImagePullWaitMS    = attribute.Key("readyline.image.pull.wait_ms")
	// On image.pull.wait: what the need for the image was
	// (correlator.PullWait.NeedEvent), the pull the call began right after
	// (its image and pod UID, which is its trace id; the span also links to
	// that trace's root) and how many pulls the wait was behind.
	AttrImagePullWaitNeed        = attribute.Key("readyline.image.pull.wait.need_event")
	AttrImagePullWaitBehindImage = attribute.Key("readyline.image.pull.wait.behind.image")
	AttrImagePullWaitBehindPod   = attribute.Key("readyline.image.pull.wait.behind.pod_uid")
	AttrImagePullWaitPullsAhead  = attribute.Key("readyline.image.pull.wait.pulls_ahead")
	// On each image.pull.progress event: what the runtime's content store
	// had of the image's layers then (correlator.PullSample): the bytes
	// written, of their total (absent while the manifest was not known),
	// and the layers written whole, of how many. OTel's semantic
	// conventions have no attribute for a transfer's progress.
	AttrImagePullProgressBytes      = attribute.Key("readyline.image.pull.progress.bytes")
	AttrImagePullProgressTotalBytes = attribute.Key("readyline.image.pull.progress.total_bytes")
	AttrImagePullProgressLayers     = attribute.Key("readyline.image.pull.progress.layers")
	AttrImagePullProgressLayersDone = attribute.Key("readyline.image.pull.progress.layers_done")
)

// EventImagePullProgress is the span event of an image.pull at each
// reading of its progress while its call ran.
const EventImagePullProgress = "image.pull.progress"

// Values of AttrImagePullOutcome and of the outcome label of
// readyline_image_pull_duration_seconds.
const (
	PullOutcomeSuccess = "success"
	PullOutcomeFailure = "failure"
)

// pullOutcome is success or failure.
func pullOutcome(ip *correlator.ImagePull) string {
	if ip.Call.Err {
		return PullOutcomeFailure
	}
	return PullOutcomeSuccess
}

// imageSizeBuckets are the kubelet's image_size_in_bytes labels of
// kubelet_image_pull_duration_seconds, by their lower bound (exclusive)
// (k8s.io/kubernetes pkg/kubelet/metrics/metrics.go imageSizeBuckets; the
// kubelet's "MB" and "GB" are MiB and GiB).
var imageSizeBuckets = []struct {
	above uint64
	label string
}{
	{0, "0-10MB"},
	{10 << 20, "10MB-100MB"},
	{100 << 20, "100MB-500MB"},
	{500 << 20, "500MB-1GB"},
	{1 << 30, "1GB-5GB"},
	{5 << 30, "5GB-10GB"},
	{10 << 30, "10GB-20GB"},
	{20 << 30, "20GB-30GB"},
	{30 << 30, "30GB-40GB"},
	{40 << 30, "40GB-60GB"},
	{60 << 30, "60GB-100GB"},
	{100 << 30, "GT100GB"},
}

// ImageSizeBucket is the kubelet's label for an image of size bytes, "N/A"
// for 0 (unknown), as pkg/kubelet/metrics GetImageSizeBucket gives it.
func ImageSizeBucket(size uint64) string {
	if size == 0 {
		return "N/A"
	}
	for i := len(imageSizeBuckets) - 1; i >= 0; i-- {
		if size > imageSizeBuckets[i].above {
			return imageSizeBuckets[i].label
		}
	}
	return "N/A"
}

// imagePullAttrs are the attributes of a pull's spans naming the image
// and the container.
func imagePullAttrs(ip *correlator.ImagePull) []attribute.KeyValue {
	name, tag := splitImage(ip.Image)
	attrs := []attribute.KeyValue{semconv.ContainerImageName(name)}
	if tag != "" {
		attrs = append(attrs, semconv.ContainerImageTags(tag))
	}
	if ip.Container != "" {
		attrs = append(attrs, semconv.K8SContainerName(ip.Container))
	}
	if ip.Volume != "" {
		attrs = append(attrs, AttrImageVolume.String(ip.Volume))
	}
	return attrs
}

// imagePulls: for each PullImage call its image.pull.wait or
// image.pull.back_off, then its image.pull span with the call inside.
func (b *spanBuilder) imagePulls(ctx context.Context, tl *correlator.Timeline) {
	for i := range tl.ImagePulls {
		ip := &tl.ImagePulls[i]
		if ip.Call.End.IsZero() {
			continue
		}
		start := ip.Call.Start
		if start.IsZero() {
			start = ip.Call.End
		}
		if w := ip.Wait; w != nil {
			b.pullWait(ctx, ip, w)
		}
		if ip.BackOff > 0 {
			b.pullBackOff(ctx, tl, ip, start)
		}
		attrs := append(imagePullAttrs(ip),
			AttrImagePullOutcome.String(pullOutcome(ip)),
			AttrImagePullAttempt.Int(ip.Attempt),
			AttrImageSizeBucket.String(ImageSizeBucket(ip.Size)))
		if ip.Puller != "" {
			attrs = append(attrs, AttrImagePuller.String(string(ip.Puller)))
		}
		if ip.Ref != "" {
			attrs = append(attrs, AttrImageRef.String(ip.Ref))
			if strings.HasPrefix(ip.Ref, "sha256:") {
				attrs = append(attrs, semconv.ContainerImageID(ip.Ref))
			}
		}
		if ip.Size > 0 {
			attrs = append(attrs, AttrImageSizeBytes.Int64(int64(min(ip.Size, 1<<62))))
		}
		if ip.ErrorReason != "" {
			attrs = append(attrs, AttrImagePullErrorReason.String(ip.ErrorReason))
		}
		if ip.Error != "" {
			attrs = append(attrs, AttrImagePullError.String(ip.Error))
		}
		if ip.BackOff > 0 {
			attrs = append(attrs, AttrImagePullBackOffMS.Int64(ip.BackOff.Milliseconds()))
		}
		if ip.Wait != nil {
			attrs = append(attrs, AttrImagePullWaitMS.Int64(ip.Wait.Duration().Milliseconds()))
		}
		if ip.Call.Start.IsZero() {
			attrs = append(attrs, AttrIncomplete.Bool(true))
		}
		pctx, s, end, ok := b.start(ctx, SpanImagePull, start, ip.Call.End, attrs)
		if !ok {
			continue
		}
		b.criCall(pctx, &ip.Call)
		pullProgressEvents(pctx, s, ip.Progress)
		if ip.Call.Err {
			s.SetStatus(codes.Error, pullErrorText(ip))
		}
		b.end(s, end)
	}
}

// pullProgressEvents adds to an image.pull span, whose window ctx holds,
// an image.pull.progress event at each of its samples within it.
func pullProgressEvents(ctx context.Context, s trace.Span, samples []correlator.PullSample) {
	w, cut := ctx.Value(windowKey{}).(window)
	for _, p := range samples {
		if cut && (p.Time.Before(w.start) || p.Time.After(w.end)) {
			continue // the span was cut to its parent's window
		}
		attrs := []attribute.KeyValue{AttrImagePullProgressBytes.Int64(p.Bytes)}
		if p.Total > 0 {
			attrs = append(attrs, AttrImagePullProgressTotalBytes.Int64(p.Total))
		}
		if p.Layers > 0 {
			attrs = append(attrs, AttrImagePullProgressLayers.Int(p.Layers), AttrImagePullProgressLayersDone.Int(p.LayersDone))
		}
		s.AddEvent(EventImagePullProgress, trace.WithTimestamp(p.Time), trace.WithAttributes(attrs...))
	}
}

// pullErrorText is "pulling nginx:nope failed (attempt 2): ErrImagePull: ...".
func pullErrorText(ip *correlator.ImagePull) string {
	s := "pulling " + ip.Image + " failed"
	if ip.Attempt > 1 {
		s += fmt.Sprintf(" (attempt %d)", ip.Attempt)
	}
	if e := joinError(ip); e != "" {
		s += ": " + e
	}
	return s
}

func joinError(ip *correlator.ImagePull) string {
	switch {
	case ip.ErrorReason != "" && ip.Error != "":
		return ip.ErrorReason + ": " + ip.Error
	case ip.ErrorReason != "":
		return ip.ErrorReason
	}
	return ip.Error
}

// pullWait is the image.pull.wait span, linked to the root span of the
// pod whose pull it began right after.
func (b *spanBuilder) pullWait(ctx context.Context, ip *correlator.ImagePull, w *correlator.PullWait) {
	last := w.Behind[len(w.Behind)-1]
	attrs := append(imagePullAttrs(ip),
		AttrImagePullWaitNeed.String(w.NeedEvent),
		AttrImagePullWaitBehindImage.String(last.Image),
		AttrImagePullWaitPullsAhead.Int(len(w.Behind)+w.BehindOmitted),
		AttrImagePuller.String(string(ip.Puller)))
	var opts []trace.SpanStartOption
	if last.PodUID != "" {
		attrs = append(attrs, AttrImagePullWaitBehindPod.String(last.PodUID))
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: RootSpanContext(last.PodUID)}))
	}
	_, s, end, ok := b.start(ctx, SpanImagePullWait, w.Start, w.End, attrs, opts...)
	if !ok {
		return
	}
	b.end(s, end)
}

// pullBackOff is the image.pull.back_off span from the previous failed
// attempt's end to this one's start, with the ImagePullBackOff the API
// showed in it.
func (b *spanBuilder) pullBackOff(ctx context.Context, tl *correlator.Timeline, ip *correlator.ImagePull, start time.Time) {
	from := start.Add(-ip.BackOff)
	attrs := append(imagePullAttrs(ip), AttrImagePullBackOffMS.Int64(ip.BackOff.Milliseconds()))
	if w, ok := backOffReason(tl, ip.Container, from, start); ok {
		attrs = append(attrs, AttrWaitingReason.String(w.Reason))
		if w.Message != "" {
			attrs = append(attrs, AttrWaitingMessage.String(w.Message))
		}
	}
	_, s, end, ok := b.start(ctx, SpanImagePullBackOff, from, start, attrs)
	if !ok {
		return
	}
	b.end(s, end)
}

// backOffReason is the container's ImagePullBackOff the API showed
// between from and to.
func backOffReason(tl *correlator.Timeline, container string, from, to time.Time) (correlator.WaitingReason, bool) {
	for _, c := range tl.Containers {
		if c.Name != container {
			continue
		}
		for _, w := range c.Waiting {
			if w.Reason == "ImagePullBackOff" && !w.Last.Before(from) && !w.First.After(to) {
				return w, true
			}
		}
	}
	return correlator.WaitingReason{}, false
}

// pullsBreakdown is "image pulls: nginx:1.27 4s (50.0 MB, 12.5 MB/s),
// waited 2s behind other pods' pulls (last redis:7); app:nope 1.5s, 3 of 3
// attempts failed, 30s back-off": the pulls that ran in [start, end], by
// image, with the rate of the call that got the image.
func pullsBreakdown(tl *correlator.Timeline, start, end time.Time) string {
	type image struct {
		name                string
		took, wait, backOff time.Duration
		failed, calls       int
		size                uint64
		lastOK              bool
		last                time.Duration // the latest call's
		behind              string
	}
	var order []*image
	byName := make(map[string]*image)
	for i := range tl.ImagePulls {
		ip := &tl.ImagePulls[i]
		from := ip.Begin()
		if from.IsZero() || ip.Call.End.IsZero() || (!end.IsZero() && !from.Before(end)) || !ip.Call.End.After(start) {
			continue
		}
		im := byName[ip.Image]
		if im == nil {
			im = &image{name: ip.Image}
			byName[ip.Image] = im
			order = append(order, im)
		}
		im.calls++
		d, _ := between(ip.Call.Start, ip.Call.End)
		im.took += d
		im.last = d
		if ip.Call.Err {
			im.failed++
		}
		im.backOff += ip.BackOff
		if ip.Wait != nil {
			im.wait += ip.Wait.Duration()
			im.behind = waterfall.BehindName(ip.Wait.Behind[len(ip.Wait.Behind)-1])
		}
		im.lastOK, im.size = !ip.Call.Err, ip.Size
	}
	if len(order) == 0 {
		return ""
	}
	var parts []string
	for _, im := range order {
		s := im.name + " " + correlator.FormatDuration(im.took)
		if im.lastOK && im.size > 0 && im.last > 0 {
			// The rate of the pull that got the image, not of the failed ones.
			mb := float64(im.size) / 1e6
			s += fmt.Sprintf(" (%.1f MB, %.1f MB/s)", mb, mb/im.last.Seconds())
		}
		if im.failed > 0 {
			s += fmt.Sprintf(", %d of %d attempts failed", im.failed, im.calls)
		}
		if im.backOff > 0 {
			s += ", " + correlator.FormatDuration(im.backOff) + " back-off"
		}
		if im.wait > 0 {
			s += ", waited " + correlator.FormatDuration(im.wait) + " behind other pods' pulls (last " + im.behind + ")"
		}
		parts = append(parts, s)
	}
	return "image pulls: " + strings.Join(parts, "; ")
}
