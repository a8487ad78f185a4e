package correlator

import (
	"fmt"
	"runtime"
	"sort"
	"testing"

	"github.com/readyline/readyline/collector/event"
)

// benchStream interleaves the events of n lifecycle-demo starts, as a busy
// node would deliver them.
func benchStream(b *testing.B, n int) []event.Event {
	var all []event.Event
	for i := range n {
		sc := lifecycleDemoNamed(b, fmt.Sprintf("pod-%d", i))
		all = append(all, sc.events...)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].When().Before(all[j].When()) })
	return all
}

// BenchmarkCorrelatorReplay measures replay throughput on one core: events
// per second through Handle, timelines derived included.
func BenchmarkCorrelatorReplay(b *testing.B) {
	events := benchStream(b, 100)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		c := New(Config{})
		n := 0
		for _, ev := range events {
			n += len(c.Handle(ev))
		}
		n += len(c.Flush())
		if n != 100 {
			b.Fatalf("%d timelines, want 100", n)
		}
	}
	b.ReportMetric(float64(len(events))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkTrackedPodMemory reports the heap held per pod start in
// progress (the facts of a lifecycle-demo start, just before Ready).
func BenchmarkTrackedPodMemory(b *testing.B) {
	const pods = 500
	var streams [][]event.Event
	for i := range pods {
		sc := lifecycleDemoNamed(b, fmt.Sprintf("pod-%d", i))
		streams = append(streams, sc.events[:len(sc.events)-1]) // all but the Ready update
	}
	var perPod float64
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		c := New(Config{})
		for _, s := range streams {
			for _, ev := range s {
				c.Handle(ev)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		if c.Stats().Tracked != pods {
			b.Fatalf("tracking %d pods", c.Stats().Tracked)
		}
		perPod = float64(after.HeapAlloc-before.HeapAlloc) / pods
		runtime.KeepAlive(c)
	}
	b.ReportMetric(perPod, "B/pod")
}
