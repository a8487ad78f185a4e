package correlator

import (
	"fmt"
	"testing"
	"time"

	"github.com/readyline/readyline/collector/event"
)

// pullSample emits a sample, read at s, of the pod's pull of image whose
// call began at start: bytes of total, done of layers whole.
func (sc *scenario) pullSample(s, start float64, image string, bytes, total int64, done int) {
	sc.events = append(sc.events, &event.PullSample{Time: at(s), Image: image, PodUID: sc.nodeUID(), CallStart: at(start),
		Progress: event.PullProgress{AsOf: at(s), Bytes: bytes, Total: total, Layers: 4, LayersDone: done, InProgress: 1, LastByte: at(s - 0.1)}})
}

// TestPullSamplesOnTheirPull: the samples read while a call ran are on
// its ImagePull, in order, those of its call only: not another image's,
// not an earlier attempt's; a call start read a little off (the boot
// clock's offset re-sampled between the reads), by the call's return or
// from one sample to the next, still names the call.
func TestPullSamplesOnTheirPull(t *testing.T) {
	sc := pullPod(t, "sampled", 0.3, 0.8, ctr("web", "big:1"), ctr("side", "small:1"))
	sc.pullSample(1.9, 1.0, "big:1", 1e6, 40e6, 0) // a failed attempt's
	sc.pull(1.0, 2.0, "big:1", true, 0)
	sc.pullSample(5.0, 4.0003, "big:1", 10e6, 40e6, 1)
	sc.pullSample(6.0, 6.0, "other:1", 5e6, 9e6, 0)         // another pod's image, in flight at once
	sc.pullSample(7.0, 4.000299995, "big:1", 30e6, 40e6, 3) // the start read again, 5 ns off
	sc.pull(4.0, 8.0, "big:1", false, 40_000_000)
	sc.startContainer(8.1, "web")
	sc.pull(8.2, 8.5, "small:1", false, 1_000_000)
	sc.startContainer(8.6, "side")
	sc.ready(9.0)
	tl := sc.run(Config{})
	if len(tl.ImagePulls) != 3 {
		t.Fatalf("pulls %+v", tl.ImagePulls)
	}
	failed, ok, small := tl.ImagePulls[0], tl.ImagePulls[1], tl.ImagePulls[2]
	if len(failed.Progress) != 1 || failed.Progress[0].Bytes != 1e6 {
		t.Errorf("the failed attempt's progress %+v, want its one sample", failed.Progress)
	}
	want := []PullSample{{Time: at(5.0), Bytes: 10e6, Total: 40e6, Layers: 4, LayersDone: 1}, {Time: at(7.0), Bytes: 30e6, Total: 40e6, Layers: 4, LayersDone: 3}}
	if len(ok.Progress) != len(want) || ok.Progress[0] != want[0] || ok.Progress[1] != want[1] {
		t.Errorf("the pull's progress %+v, want %+v", ok.Progress, want)
	}
	if len(small.Progress) != 0 {
		t.Errorf("a pull never sampled has progress %+v", small.Progress)
	}
}

// TestPullSamplesThinned: a long pull's samples are kept at
// maxSamplesPerPull, spread evenly over the pull, its first and latest
// among them; and they go with the start's timeline.
func TestPullSamplesThinned(t *testing.T) {
	const n = 300 // a 10-minute pull sampled every 2 s
	sc := pullPod(t, "long", 0.3, 0.8, ctr("web", "big:1"))
	for i := range n {
		s := 2.0 + 2*float64(i)
		sc.pullSample(s, 1.0, "big:1", int64(i)*1e6, n*1e6, i*4/n)
		sc.ticks(s, s)
	}
	end := 2.0 + 2*float64(n)
	sc.pull(1.0, end, "big:1", false, n*1_000_000)
	sc.startContainer(end+0.1, "web")
	sc.ready(end + 0.5)
	c := New(Config{Timeout: time.Hour})
	var tls []*Timeline
	for _, ev := range sc.events {
		tls = append(tls, c.Handle(ev)...)
		if len(c.pullSamples) > 0 && len(c.pullSamples[0].kept) > maxSamplesPerPull {
			t.Fatalf("%d samples kept of a pull", len(c.pullSamples[0].kept))
		}
	}
	tls = append(tls, c.Handle(&event.Tick{Time: at(end + 5)})...)
	if len(tls) != 1 {
		t.Fatalf("%d timelines", len(tls))
	}
	got := tls[0].ImagePulls[0].Progress
	if len(got) < maxSamplesPerPull/2 || len(got) > maxSamplesPerPull {
		t.Fatalf("%d samples on the pull, want %d to %d", len(got), maxSamplesPerPull/2, maxSamplesPerPull)
	}
	if got[0].Bytes != 0 || got[len(got)-1].Bytes != (n-1)*1e6 {
		t.Errorf("first and last samples %+v, %+v: want the pull's first and latest", got[0], got[len(got)-1])
	}
	// Evenly: the steps between kept samples (but the latest) are equal.
	step := got[1].Time.Sub(got[0].Time)
	for i := 2; i < len(got)-1; i++ {
		if d := got[i].Time.Sub(got[i-1].Time); d != step {
			t.Errorf("samples %d and %d are %v apart, the first two %v", i-1, i, d, step)
		}
	}
	if len(c.pullSamples) != 0 {
		t.Errorf("%d pulls' samples kept after their start's timeline", len(c.pullSamples))
	}
}

// TestPullSamplesBounded: samples whose pod never shows up are dropped
// after OrphanTTL, and past maxSampledPulls the pull sampled longest ago
// goes first.
func TestPullSamplesBounded(t *testing.T) {
	c := New(Config{})
	for i := range maxSampledPulls + 5 {
		s := float64(i) * 0.1
		c.Handle(&event.PullSample{Time: at(s), Image: fmt.Sprintf("img:%d", i), PodUID: "nobody", CallStart: at(s - 0.05), Progress: event.PullProgress{AsOf: at(s), Bytes: 1}})
	}
	if len(c.pullSamples) != maxSampledPulls {
		t.Fatalf("%d pulls' samples kept, want %d", len(c.pullSamples), maxSampledPulls)
	}
	if first := c.pullSamples[0].callStart; !first.Equal(at(0.5 - 0.05)) {
		t.Errorf("the oldest pull kept began at %v, want the sixth's %v", first, at(0.45))
	}
	c.Handle(&event.Tick{Time: at(10)})
	if len(c.pullSamples) != maxSampledPulls {
		t.Errorf("%d pulls' samples kept before OrphanTTL", len(c.pullSamples))
	}
	c.Handle(&event.Tick{Time: at(40)})
	if len(c.pullSamples) != 0 {
		t.Errorf("%d pulls' samples of no pod kept past OrphanTTL", len(c.pullSamples))
	}
}
