package correlator

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/readyline/readyline/collector/event"
)

// This file is the kubelet's image pulls, read from k8s.io/kubernetes
// v1.37 pkg/kubelet/images (image_manager.go, puller.go) and
// pkg/kubelet/kuberuntime (SyncPod, startContainer):
//
//   - A container's start begins with EnsureImageExists: an image present
//     (policy IfNotPresent or Never) makes no PullImage call; a missing one
//     with policy Never fails as ErrImageNeverPull, also without a call.
//   - The image is asked for with the default tag added
//     (applyDefaultImageTag): "busybox" is pulled as "busybox:latest".
//   - A pod's steps run one after another in its pod worker (SyncPod), so
//     a pod's pulls never overlap each other.
//   - With serializeImagePulls (the default) one worker takes every pod's
//     pulls from one queue, one at a time (serialImagePuller): a pull
//     waits for the pulls ahead of it, and its call begins right after the
//     previous one returned (and its GetImageSize). Otherwise pulls run in
//     parallel, up to maxParallelImagePulls (parallelImagePuller).
//   - A failed pull is ErrImagePull (or RegistryUnavailable,
//     SignatureValidationFailed: evalCRIPullErr) and starts a back-off per
//     pod and image (backOffKey podUID_image, 10 s doubling to 300 s);
//     while it runs, the kubelet answers ImagePullBackOff without a call.

// pullCall is a PullImage call of any pod on the node.
type pullCall struct {
	uid, image      string
	namespace, name string // the pod's, when known at the call
	start, end      time.Time
	err             bool
}

// Bounds of the node's pull calls kept: those of the last pullCallsFor,
// at most maxPullCalls.
const (
	pullCallsFor = 10 * time.Minute
	maxPullCalls = 4096
)

// notePullCall remembers a PullImage call of any pod.
func (c *Correlator) notePullCall(call *event.CRICall) {
	pc := pullCall{uid: c.resolve(call.PodUID), image: call.Image, start: call.Time, end: call.End, err: call.Err}
	if p := c.pods[pc.uid]; p != nil && p.pod != nil {
		pc.namespace, pc.name = p.pod.Namespace, p.pod.Name
	}
	c.pullCalls = append(c.pullCalls, pc)
	i := 0
	for i < len(c.pullCalls) && (c.clock.now.Sub(c.pullCalls[i].end) > pullCallsFor || len(c.pullCalls)-i > maxPullCalls) {
		i++
	}
	c.pullCalls = c.pullCalls[i:]
}

// Reasons the kubelet gives a container whose image pull failed
// (images/types.go, k8s.io/cri-api/pkg/errors).
const (
	reasonErrImagePull     = "ErrImagePull"
	reasonImagePullBackOff = "ImagePullBackOff"
)

// isPullFailure: a waiting reason a failed PullImage call gives
// (image_manager.go evalCRIPullErr).
func isPullFailure(reason string) bool {
	switch reason {
	case reasonErrImagePull, "RegistryUnavailable", "SignatureValidationFailed":
		return true
	}
	return false
}

// isPullReason: a waiting reason of the image pull step.
func isPullReason(reason string) bool {
	return isPullFailure(reason) || reason == reasonImagePullBackOff
}

// defaultTagged is image as the kubelet asks for it: with ":latest" when
// it has neither tag nor digest (image_manager.go applyDefaultImageTag).
// A colon before the last slash is a registry's port, not a tag.
func defaultTagged(image string) string {
	if image == "" || strings.Contains(image, "@") {
		return image
	}
	last := image[strings.LastIndex(image, "/")+1:]
	if strings.Contains(last, ":") {
		return image
	}
	return image + ":latest"
}

// sameImage reports whether a spec's image and a pulled one are the same
// reference.
func sameImage(spec, pulled string) bool {
	return spec != "" && defaultTagged(spec) == defaultTagged(pulled)
}

// imagePulls are the pod's PullImage calls in time order, each with the
// container that needed it, its attempt and back-off, the error the API
// gave for a failed one, and its wait in the serialized puller.
func (d *derivation) imagePulls(tl *Timeline) []ImagePull {
	var calls []*event.CRICall
	for _, c := range d.p.calls {
		if c.Method == event.CRIPullImage && c.PodUID == d.p.nodeUID {
			calls = append(calls, c)
		}
	}
	if len(calls) == 0 {
		return nil
	}
	sort.SliceStable(calls, func(i, j int) bool { return calls[i].End.Before(calls[j].End) })
	puller := d.puller()
	var out []ImagePull
	last := make(map[string]*ImagePull) // image -> its latest pull so far
	for _, c := range calls {
		ip := ImagePull{Image: c.Image, Ref: c.ImageRef, Size: c.ImageSize, Call: *criCall(c), Puller: puller, Attempt: 1}
		ip.Container, ip.Volume = d.neededBy(tl, c)
		ip.Progress = d.ctx.pullSamples.of(d.p.nodeUID, c)
		key := defaultTagged(c.Image)
		if prev := last[key]; prev != nil {
			ip.Attempt = prev.Attempt + 1
			if prev.Call.Err && !ip.Call.Start.IsZero() && ip.Call.Start.After(prev.Call.End) {
				ip.BackOff = ip.Call.Start.Sub(prev.Call.End)
			}
		}
		if ip.Call.Err {
			ip.ErrorReason, ip.Error = d.pullError(ip.Container, ip.Call.End)
		}
		if retry := last[key] != nil && last[key].Call.Err; puller == PullerSerialAssumed && !retry {
			ip.Wait = d.pullWait(tl, c.Time, c.Image)
		}
		out = append(out, ip)
		last[key] = &out[len(out)-1]
	}
	return out
}

// neededBy names the container (or else image volume) a pull was for.
func (d *derivation) neededBy(tl *Timeline, c *event.CRICall) (container, volume string) {
	var first string
	var firstCreated time.Time
	for i := range tl.Containers {
		ct := &tl.Containers[i]
		if !sameImage(ct.Image, c.Image) {
			continue
		}
		if first == "" {
			first = ct.Name
		}
		for _, a := range ct.Attempts {
			created := a.Created
			if created.IsZero() && a.Process != nil {
				created = a.Process.Exec
			}
			if !created.IsZero() && !created.Before(c.End) && (firstCreated.IsZero() || created.Before(firstCreated)) {
				container, firstCreated = ct.Name, created
			}
		}
	}
	if container != "" {
		return container, ""
	}
	if first != "" {
		return first, ""
	}
	for _, v := range d.p.pod.Spec.Volumes {
		if v.Image != nil && sameImage(v.Image.Reference, c.Image) {
			return "", v.Name
		}
	}
	return "", ""
}

// pullError is the reason and message the API gave for a pull that failed
// at end, on the container that needed it: the first pull failure reason
// shown after it, or else the error the next ImagePullBackOff message
// repeats ("Back-off pulling image \"x\": ErrImagePull: <error>",
// image_manager.go pullImage prevPullErrMsg).
func (d *derivation) pullError(container string, end time.Time) (reason, msg string) {
	w := d.p.waiting[container]
	if w == nil {
		return "", ""
	}
	for _, r := range w.list {
		if r.Last.Before(end) {
			continue
		}
		if isPullFailure(r.Reason) {
			return r.Reason, r.Message
		}
		if r.Reason == reasonImagePullBackOff {
			_, rest, ok := strings.Cut(r.Message, "\": ")
			if !ok {
				return "", ""
			}
			reason, msg, _ := strings.Cut(rest, ": ")
			if !isPullFailure(reason) {
				return "", rest
			}
			return reason, msg
		}
	}
	return "", ""
}

// puller tells the kubelet's puller from the node's pull calls: two that
// overlapped mean a parallel puller.
func (d *derivation) puller() Puller {
	calls := make([]pullCall, 0, len(d.ctx.pullCalls))
	for _, c := range d.ctx.pullCalls {
		if !c.start.IsZero() {
			calls = append(calls, c)
		}
	}
	sort.SliceStable(calls, func(i, j int) bool { return calls[i].start.Before(calls[j].start) })
	var until time.Time
	for _, c := range calls {
		if c.start.Before(until) {
			return PullerParallel
		}
		until = latest(until, c.end)
	}
	return PullerSerialAssumed
}

// queueHandoff is the most time the serialized puller's worker takes
// between one pull's return and the next pull's call: the previous pull's
// GetImageSize (one ImageStatus call) and two channel handoffs.
const queueHandoff = time.Second

// maxPullsBehind bounds the pulls a wait lists.
const maxPullsBehind = 8

// pullWait is the wait of the pull of image called at start behind other
// pods' pulls in the serialized puller, nil when it did not wait behind any
// (see PullWait). The pulls ahead of it are found backwards from its start:
// the other pod's pull that returned at most queueHandoff before it, or at
// any time before it after the kubelet had asked the puller for this one
// (its Pulling Event: on a loaded node the worker's hand-off takes seconds),
// then the one before that, while they were still in flight after the
// container needed its image.
func (d *derivation) pullWait(tl *Timeline, start time.Time, image string) *PullWait {
	if start.IsZero() {
		return nil
	}
	need, what := d.needed(tl, start)
	if need.IsZero() {
		return nil
	}
	asked, byEvent := d.p.events.askedBy(image, start)
	var behind []PullBehind
	cur := start
	for {
		var ahead *pullCall
		for i := range d.ctx.pullCalls {
			o := &d.ctx.pullCalls[i]
			if o.uid == d.p.nodeUID || o.uid == d.p.uid || o.start.IsZero() || o.end.After(cur) || !o.end.After(need) {
				continue
			}
			queued := byEvent && cur.Equal(start) && !o.end.Before(asked) // asked for before it ended
			if cur.Sub(o.end) > queueHandoff && !queued {
				continue
			}
			if ahead == nil || o.end.After(ahead.end) {
				ahead = o
			}
		}
		if ahead == nil {
			break
		}
		behind = append(behind, PullBehind{PodUID: ahead.uid, Namespace: ahead.namespace, Name: ahead.name, Image: ahead.image,
			Start: ahead.start, End: ahead.end, Err: ahead.err})
		if !ahead.start.After(need) {
			break // in flight when the container needed its image
		}
		cur = ahead.start
	}
	if len(behind) == 0 {
		return nil
	}
	for i, j := 0, len(behind)-1; i < j; i, j = i+1, j-1 {
		behind[i], behind[j] = behind[j], behind[i]
	}
	w := &PullWait{Start: latest(need, behind[0].Start), End: start, Need: need, NeedEvent: what}
	if n := len(behind); n > maxPullsBehind {
		w.BehindOmitted = n - maxPullsBehind
		behind = behind[n-maxPullsBehind:]
	}
	w.Behind = behind
	return w
}

// queuedPulls sets the wait of tl's pulls in flight behind other pods'
// pulls, as pullWait finds it for a pull that returned: a first attempt at
// its image, in a serialized puller.
func (d *derivation) queuedPulls(tl *Timeline) {
	if d.puller() != PullerSerialAssumed {
		return
	}
	for i := range tl.InFlight {
		f := &tl.InFlight[i]
		if f.Method != event.CRIPullImage || d.retried(tl, f.Image) {
			continue
		}
		if w := d.pullWait(tl, f.Start, f.Image); w != nil {
			f.Queued = &PullQueued{Start: w.Start, End: w.End, Behind: len(w.Behind) + w.BehindOmitted}
		}
	}
}

// retried reports whether an earlier pull of image failed: a retry does
// not queue behind others the way a first pull does (imagePulls).
func (d *derivation) retried(tl *Timeline, image string) bool {
	return slices.ContainsFunc(tl.ImagePulls, func(ip ImagePull) bool {
		return ip.Call.Err && defaultTagged(ip.Image) == defaultTagged(image)
	})
}

// needed is when the pod's worker, before, finished its previous step:
// the latest end before it of the pod's CRI calls (ExecSync aside: probes
// run outside the pod worker), postStart hooks and init container exits.
func (d *derivation) needed(tl *Timeline, before time.Time) (time.Time, string) {
	var t time.Time
	var what string
	note := func(at time.Time, ev string) {
		if !at.IsZero() && !at.After(before) && at.After(t) {
			t, what = at, ev
		}
	}
	for _, c := range d.p.calls {
		if c.Method == event.CRIExecSync || (c.PodUID != "" && c.PodUID != d.p.nodeUID) {
			continue
		}
		ev := c.Method.Short() + " returned"
		if c.Err {
			ev = c.Method.Short() + " failed"
		}
		note(c.End, ev)
	}
	for _, ct := range tl.Containers {
		for _, a := range ct.Attempts {
			if h := a.PostStart; h != nil && !h.Inferred {
				note(h.End, "postStart of "+ct.Name+" returned")
			}
			if ct.Kind == KindInit && a.Process != nil {
				note(a.Process.Exit, ContainerLabel(ct.Kind, ct.Name)+" exited")
			}
		}
	}
	return t, what
}

// pullInsight names the image whose pulls held the start back most: the
// one with the longest time from its first pull's wait (or call) to its
// last call's end, failed attempts and back-offs included.
func pullInsight(tl *Timeline) (Insight, bool) {
	type image struct {
		pulls      []*ImagePull
		start, end time.Time
	}
	var order []string
	images := make(map[string]*image)
	for i := range tl.ImagePulls {
		ip := &tl.ImagePulls[i]
		start := ip.Begin()
		if start.IsZero() || ip.Call.End.IsZero() {
			continue
		}
		key := defaultTagged(ip.Image)
		im := images[key]
		if im == nil {
			im = &image{start: start}
			images[key] = im
			order = append(order, key)
		}
		im.pulls = append(im.pulls, ip)
		im.start, im.end = earliest(im.start, start), latest(im.end, ip.Call.End)
	}
	var most *image
	for _, key := range order {
		if im := images[key]; most == nil || span(im.start, im.end) > span(most.start, most.end) {
			most = im
		}
	}
	if most == nil || span(most.start, most.end) < pullWorthNoting {
		return Insight{}, false
	}
	final := most.pulls[len(most.pulls)-1]
	total := span(most.start, most.end)
	var b strings.Builder
	what := "pulling " + final.Image
	if final.Container != "" {
		what += " for " + final.Container
	}
	failed, backOff := 0, time.Duration(0)
	var wait time.Duration
	for _, ip := range most.pulls {
		if ip.Call.Err {
			failed++
		}
		backOff += ip.BackOff
		if ip.Wait != nil {
			wait += ip.Wait.Duration()
		}
	}
	if final.Call.Err {
		fmt.Fprintf(&b, "%s failed %s over %s", what, times(failed), FormatDuration(total))
		if final.ErrorReason != "" || final.Error != "" {
			fmt.Fprintf(&b, " (%s)", joinNonEmpty(": ", final.ErrorReason, final.Error))
		}
	} else {
		fmt.Fprintf(&b, "%s took %s", what, FormatDuration(total))
		if d := final.Duration(); d > 0 && d != total {
			fmt.Fprintf(&b, ", the pull %s", FormatDuration(d))
		}
		b.WriteString(" (" + sizeAndRate(final.Size, final.Duration()) + ")")
		if failed > 0 {
			fmt.Fprintf(&b, ", after %d failed %s", failed, plural(failed, "attempt", "attempts"))
		}
	}
	if backOff > 0 {
		fmt.Fprintf(&b, "; %s of it back-off (ImagePullBackOff)", FormatDuration(backOff))
	}
	if wait > 0 {
		// Not which: the other pods' images are for who may get them
		// (Behind, which exporter.ReaderView hides from the others).
		fmt.Fprintf(&b, "; %s waiting in the kubelet's serialized puller behind other pods' pulls", FormatDuration(wait))
	}
	return Insight{Kind: InsightImagePull, Container: final.Container, Duration: total, Message: b.String()}, true
}

// pullWorthNoting: a pull shorter than this is not worth a sentence.
const pullWorthNoting = 500 * time.Millisecond

// sizeAndRate is "45.0 MB, 5.4 MB/s" (MB = 10^6 bytes), "size unknown".
func sizeAndRate(size uint64, d time.Duration) string {
	if size == 0 {
		return "size unknown"
	}
	mb := float64(size) / 1e6
	if d <= 0 {
		return fmt.Sprintf("%.1f MB", mb)
	}
	return fmt.Sprintf("%.1f MB, %.1f MB/s", mb, mb/d.Seconds())
}

func times(n int) string {
	if n == 1 {
		return "once"
	}
	return fmt.Sprintf("%d times", n)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
