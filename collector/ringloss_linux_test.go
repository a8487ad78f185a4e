package collector

import (
	"context"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cilium/ebpf"

	"github.com/readyline/readyline/bpf"
	"github.com/readyline/readyline/collector/event"
	"github.com/readyline/readyline/collector/testenv"
)

// TestIntegrationRingLossEachSecond: the README's "a ring buffer that lost
// records in the last second" (its losses "checked every second"). A
// source whose ring loses records at every look says so once a second,
// each status's window, from Since to Time (both the reader's own stamps),
// a second long: never shorter, and shorter than two.
func TestIntegrationRingLossEachSecond(t *testing.T) {
	testenv.RequirePrivileged(t)
	const window = time.Second // the README's
	ring, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.RingBuf, MaxEntries: uint32(os.Getpagesize())})
	if err != nil {
		t.Fatal(err)
	}
	defer ring.Close()
	var reads atomic.Uint64
	src := &ringSource{name: event.SourceProcess, lost: "process events", events: ring, poll: bpf.ProcessPollInterval,
		attached: time.Now(), readDrops: func() (uint64, error) { return reads.Add(1) - 1, nil }} // one more lost at each look
	src.sampleClock()
	ctx, cancel := context.WithTimeout(context.Background(), 3*window+window/2)
	defer cancel()
	var downs []*event.SourceStatus
	if err := src.run(ctx, func(ev event.Event) {
		if st, ok := ev.(*event.SourceStatus); ok && !st.Up {
			downs = append(downs, st)
		}
	}, func([]byte) {}); err != nil {
		t.Fatal(err)
	}
	if len(downs) < 2 {
		t.Fatalf("%d ring_full statuses in %v of losses, want one a second: %+v", len(downs), 3*window+window/2, downs)
	}
	for _, st := range downs {
		if w := st.Time.Sub(st.Since); st.Reason != event.ReasonRingFull || w < window || w >= 2*window {
			t.Errorf("status %+v: a %v window, want ring_full over the last %v", *st, w, window)
		}
	}
}
