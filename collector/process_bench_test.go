package collector

import (
	"testing"

	"github.com/readyline/readyline/bpf"
	"github.com/readyline/readyline/collector/event"
)

// BenchmarkProcessEventPath measures what the ring-buffer reader does per
// record after reading it: decode, attribute (cgroup cache hit), argv policy
// and process tracking. One exec, one exit per iteration: ns/event is half.
func BenchmarkProcessEventPath(b *testing.B) {
	cg := &cgroupResolver{cache: map[uint64]*cgroupEntry{}, max: 1 << 14}
	cg.add(4242, "/kubepods/besteffort/pod"+testPodUID+"/"+testCID)
	s := &ProcessSource{cfg: ProcessConfig{CNIBinDirs: DefaultCNIBinDirs}, cgroups: cg, procs: newProcessTable()}
	exec := execRecord(b, "/usr/bin/sleep", []byte("sleep\x003600\x00"), 11)
	exit := exitRecord(b, 0)
	b.ReportAllocs()
	for b.Loop() {
		for _, rec := range [][]byte{exec, exit} {
			ev, err := DecodeProcessEvent(rec, testClock)
			if err != nil {
				b.Fatal(err)
			}
			if !s.enrich(ev) {
				b.Fatal("event left out")
			}
		}
	}
}

// BenchmarkProcessEventJSON adds the JSON line `readyline events` writes.
func BenchmarkProcessEventJSON(b *testing.B) {
	rec := execRecord(b, "/usr/bin/sleep", []byte("sleep\x003600\x00"), 11)
	ev, _ := DecodeProcessEvent(rec, testClock)
	ev.(*event.ProcessExec).Process.Scope = event.ScopePod
	b.ReportAllocs()
	for b.Loop() {
		if _, err := event.Marshal(ev); err != nil {
			b.Fatal(err)
		}
	}
}

var _ = bpf.EventExec
