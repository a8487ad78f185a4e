package bpf

import (
	"encoding/binary"
	"testing"

	"github.com/readyline/readyline/collector/testenv"
)

// TestIntegrationCallsInFlightBatches: more calls in flight than one batch
// holds are each given once, with their own arguments, and only those want
// takes. (The kernel guests run it: an LRU hash's batch lookup on 6.1 and
// arm64.)
func TestIntegrationCallsInFlightBatches(t *testing.T) {
	p := callsProgram(t)
	const calls = 5*callsBatchSize + 3
	putCalls(t, p, calls)
	got := map[GoprobeCallKey]uint64{}
	err := p.CallsInFlight(func(k GoprobeCallKey) bool { return k.Func != 1 }, func(k GoprobeCallKey, args []byte) {
		if _, ok := got[k]; ok {
			t.Errorf("call %+v given twice", k)
		}
		got[k] = binary.NativeEndian.Uint64(args)
	})
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for i := range calls {
		key := GoprobeCallKey{Goroutine: 0xc000000000 + uint64(i)*0x100, Tgid: 4242, Func: uint32(i % 3)}
		start, ok := got[key]
		switch {
		case key.Func == 1 && ok:
			t.Errorf("call %d given, want left out", i)
		case key.Func != 1 && !ok:
			t.Errorf("call %d missing", i)
		case ok && start != uint64(1000+i):
			t.Errorf("call %d has start_ns %d, want %d: another call's arguments", i, start, 1000+i)
		}
		if key.Func != 1 {
			want++
		}
	}
	if len(got) != want {
		t.Errorf("%d calls given, want %d", len(got), want)
	}
}

// callsProgram loads the programs with room for 1024 calls in flight,
// closed when tb ends.
func callsProgram(tb testing.TB) *GoProbeProgram {
	tb.Helper()
	testenv.RequirePrivileged(tb)
	p, err := LoadGoProbeProgram(GoProbeOptions{MaxCallsInFlight: 1024})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { p.Close() })
	return p
}

// putCalls puts n calls in flight into p's map, as the entry probe would:
// the i-th of function i%3, its start_ns 1000+i.
func putCalls(tb testing.TB, p *GoProbeProgram, n int) {
	tb.Helper()
	for i := range n {
		key := GoprobeCallKey{Goroutine: 0xc000000000 + uint64(i)*0x100, Tgid: 4242, Func: uint32(i % 3)}
		if err := p.objs.Calls.Put(key, GoprobeGoCallArgs{StartNs: uint64(1000 + i)}); err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkCallsInFlight is one read of 50 calls in flight, a third of
// them wanted: what the pull sampler pays ten times a second on a node
// starting pods.
func BenchmarkCallsInFlight(b *testing.B) {
	p := callsProgram(b)
	putCalls(b, p, 50)
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		if err := p.CallsInFlight(func(k GoprobeCallKey) bool { return k.Func == 1 }, func(GoprobeCallKey, []byte) { n++ }); err != nil || n != 17 {
			b.Fatalf("%d calls given (%v), want 17", n, err)
		}
	}
}
