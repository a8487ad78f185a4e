package correlator

import (
	"slices"
	"time"

	"github.com/readyline/readyline/collector/event"
)

// PullSample is how far a pull had come at Time, as the runtime's content
// store said while its PullImage call ran (event.PullSample): the image's
// layers' bytes written of their total, and the layers written whole.
type PullSample struct {
	Time time.Time `json:"time"`
	// Bytes is what was written of the image's layers; Total their sizes,
	// 0 while the image's manifest was not known (Bytes and Layers are
	// then the layers in progress only).
	Bytes      int64 `json:"bytes"`
	Total      int64 `json:"total,omitempty"`
	Layers     int   `json:"layers,omitempty"`
	LayersDone int   `json:"layers_done,omitempty"`
}

// Bounds of the pulls' samples kept: at most maxSamplesPerPull of a pull
// (a long pull's are thinned, evenly in their order), and of at most
// maxSampledPulls pulls (past it the one sampled longest ago goes). A
// pull's samples go with its start's timeline, or once no start in
// progress is theirs for the time orphans wait (OrphanTTL; Timeout for a
// static pod's).
const (
	maxSamplesPerPull = 32
	maxSampledPulls   = 64
	// maxCallStartSkew is how far a sample's CallStart may be from its
	// call's start, or another sample's of the same call: each is the
	// kernel's reading, converted to wall time with the boot clock's
	// offset of the moment (re-sampled as it drifts), while the call ran
	// or as it returned. Retries of a pull are ten seconds apart at least
	// (the kubelet's image back-off).
	maxCallStartSkew = time.Second
)

// sampledPull is the samples of one PullImage call so far.
type sampledPull struct {
	uid, image string
	callStart  time.Time
	last       time.Time // the latest sample's time
	// kept are the samples kept, with n the count of samples taken
	// before each: all of them until maxSamplesPerPull, then those whose
	// n is a multiple of stride (doubled at each thinning), and the
	// latest whatever its n.
	kept   []numberedSample
	taken  int
	stride int
}

type numberedSample struct {
	n int
	s PullSample
}

// pullSamples are the samples of the pulls in flight or recently ended,
// in the order their pulls were first sampled.
type pullSamples []*sampledPull

// notePullSample keeps a sample of a pull.
func (c *Correlator) notePullSample(e *event.PullSample) {
	s := PullSample{Time: e.Time, Bytes: e.Progress.Bytes, Total: e.Progress.Total, Layers: e.Progress.Layers, LayersDone: e.Progress.LayersDone}
	// Each read of the calls in flight converts the call's start anew:
	// the samples of one call differ in it by the boot clock's drift
	// (nanoseconds, on a node of the e2e tests).
	i, skew := -1, time.Duration(0)
	for j, p := range c.pullSamples {
		if d := p.callStart.Sub(e.CallStart).Abs(); p.uid == e.PodUID && p.image == e.Image && d <= maxCallStartSkew && (i < 0 || d < skew) {
			i, skew = j, d
		}
	}
	if i < 0 {
		if len(c.pullSamples) >= maxSampledPulls {
			oldest := 0
			for j, p := range c.pullSamples {
				if p.last.Before(c.pullSamples[oldest].last) {
					oldest = j
				}
			}
			c.pullSamples = slices.Delete(c.pullSamples, oldest, oldest+1)
		}
		c.pullSamples = append(c.pullSamples, &sampledPull{uid: e.PodUID, image: e.Image, callStart: e.CallStart, stride: 1})
		i = len(c.pullSamples) - 1
	}
	c.pullSamples[i].add(s)
}

// add keeps s, and thins the samples kept to maxSamplesPerPull.
func (p *sampledPull) add(s PullSample) {
	if k := len(p.kept); k > 0 && p.kept[k-1].n%p.stride != 0 {
		p.kept = p.kept[:k-1] // kept only as the latest
	}
	p.kept = append(p.kept, numberedSample{p.taken, s})
	p.taken++
	p.last = latest(p.last, s.Time)
	for len(p.kept) > maxSamplesPerPull {
		p.stride *= 2
		latest := p.kept[len(p.kept)-1]
		p.kept = slices.DeleteFunc(p.kept[:len(p.kept)-1], func(ns numberedSample) bool { return ns.n%p.stride != 0 })
		p.kept = append(p.kept, latest)
	}
}

// of returns the samples of the PullImage call c of the pod whose node
// facts carry uid, within the call: of the sampled pulls of its image, the
// one whose call start is nearest c's, within maxCallStartSkew.
func (ps pullSamples) of(uid string, c *event.CRICall) []PullSample {
	var best *sampledPull
	var bestSkew time.Duration
	for _, p := range ps {
		if p.uid != uid || p.image != c.Image {
			continue
		}
		skew := p.callStart.Sub(c.Time).Abs()
		if c.Time.IsZero() {
			// The entry was not seen: the pull sampled last before the end.
			skew = c.End.Sub(p.last)
			if skew < 0 {
				continue
			}
		} else if skew > maxCallStartSkew {
			continue
		}
		if best == nil || skew < bestSkew {
			best, bestSkew = p, skew
		}
	}
	if best == nil {
		return nil
	}
	var out []PullSample
	for _, ns := range best.kept {
		if !ns.s.Time.Before(c.Time) && (c.End.IsZero() || !ns.s.Time.After(c.End)) {
			out = append(out, ns.s)
		}
	}
	return out
}

// forgetPullSamples drops the samples of the pulls of the pod whose node
// facts carry uid.
func (c *Correlator) forgetPullSamples(uid string) {
	c.pullSamples = slices.DeleteFunc(c.pullSamples, func(p *sampledPull) bool { return p.uid == uid })
}

// expirePullSamples drops the samples no start in progress is for, once
// they waited for one as long as orphans do.
func (c *Correlator) expirePullSamples() {
	c.pullSamples = slices.DeleteFunc(c.pullSamples, func(p *sampledPull) bool {
		if _, tracked := c.pods[c.resolve(p.uid)]; tracked {
			return false
		}
		ttl := c.cfg.OrphanTTL
		if looksLikeConfigHash(p.uid) {
			ttl = max(ttl, c.cfg.Timeout)
		}
		return c.clock.now.Sub(p.last) >= ttl
	})
}
