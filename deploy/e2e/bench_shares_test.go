//go:build e2e

package e2e

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/readyline/readyline/collector"
	"github.com/readyline/readyline/collector/event"
)

// The shares of readyline's cost its newer sources take: the kubelet's
// volume setups, probed by the same eBPF program as its CRI calls, and the
// content store's reads for pulls in flight, made by the daemon itself.
//
// bpf_stats gives the kubelet probes' program one run time for every
// method. It is split by runs: each call the daemon reported
// (readyline_kubelet_calls_total{method}) ran the program twice, at its
// entry and at its return, and every run is taken to cost the average.
// The runs no reported call accounts for are the volume probes' too: the
// CSI plugin's NewMounter (probed for the names of the CSI calls after it,
// never reported) and the emptyDir SetUpAt each configMap, Secret,
// projected and downwardAPI setup runs inside (its directory is theirs:
// not reported); and the calls in flight at the window's edges, a few.
// The content store's reads are counted, with their wall time (the wait
// for containerd included). What one costs in CPU is measured apart, once
// the window is over (measureContentStoreRead): the same reads of the same
// pull, from the benchmark's own process against the same containerd, with
// both sides' CPU. Their share is the daemon's reads times that.

// goProbePrograms are the names of the kubelet probes' program: one
// uprobe_multi link (Linux 6.6+) or one uprobe per address.
var goProbePrograms = []string{"go_call_multi", "go_call"}

// sourceWork is what readyline's /metrics counted of its sources' work
// so far.
type sourceWork struct {
	calls    map[event.CRIMethod]float64 // readyline_kubelet_calls_total, by method
	reads    float64                     // readyline_pull_progress_reads_total
	readTime time.Duration               // readyline_pull_progress_read_seconds_total
}

// readSourceWork scrapes the daemon's counts.
func readSourceWork(tb testing.TB, d *Daemon) sourceWork {
	tb.Helper()
	fams := scrapeDaemon(tb, d)
	w := sourceWork{calls: map[event.CRIMethod]float64{}}
	for _, m := range fams["readyline_kubelet_calls_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "method" {
				w.calls[event.CRIMethod(l.GetValue())] += m.GetCounter().GetValue()
			}
		}
	}
	w.reads = counterValue(fams, "readyline_pull_progress_reads_total", nil)
	w.readTime = time.Duration(counterValue(fams, "readyline_pull_progress_read_seconds_total", nil) * float64(time.Second))
	return w
}

// to is the work done from a to b.
func (a sourceWork) to(b sourceWork) sourceWork {
	w := sourceWork{calls: map[event.CRIMethod]float64{}, reads: b.reads - a.reads, readTime: b.readTime - a.readTime}
	for m, n := range b.calls {
		w.calls[m] = n - a.calls[m]
	}
	return w
}

// sourceShares is the newer sources' part of a window's cost.
type sourceShares struct {
	observer    time.Duration // readyline's cost (costWindow.observer)
	probe       programCost   // the kubelet probes' program
	work        sourceWork
	volumeCalls float64 // the volume setups' calls reported
	unmatched   float64 // the program's runs beyond two per call reported
	volumeTime  time.Duration
	read        contentStoreRead // one read's CPU, when measured
}

// shares splits w's cost among the newer sources (see goProbePrograms).
func (w costWindow) shares() sourceShares {
	s := sourceShares{observer: w.observer(), work: w.work, read: w.read}
	for _, name := range goProbePrograms {
		s.probe.runtime += w.programs[name].runtime
		s.probe.runs += w.programs[name].runs
	}
	var all float64
	for m, n := range w.work.calls {
		all += n
		if m.IsVolume() {
			s.volumeCalls += n
		}
	}
	s.unmatched = max(0, float64(s.probe.runs)-2*all)
	if s.probe.runs > 0 {
		s.volumeTime = time.Duration(float64(s.probe.runtime) * s.volumeRuns() / float64(s.probe.runs))
	}
	return s
}

// volumeRuns are the program's runs taken for the volume probes'.
func (s sourceShares) volumeRuns() float64 { return 2*s.volumeCalls + s.unmatched }

// volumeShare is the volume probes' estimated eBPF time over readyline's cost.
func (s sourceShares) volumeShare() float64 {
	return s.volumeTime.Seconds() / max(s.observer.Seconds(), 1e-9)
}

// contentStoreShare is the content store's reads' part of readyline's
// cost: their count times one read's CPU, measured apart. Unmeasured, it
// is bounded by their wall time (waiting for containerd included), at most
// all of it, which under a load that slows containerd says little.
func (s sourceShares) contentStoreShare() float64 {
	spent := s.work.readTime
	if s.read.n > 0 {
		spent = time.Duration(s.work.reads * float64(s.read.readyline))
	}
	return min(1, spent.Seconds()/max(s.observer.Seconds(), 1e-9))
}

// contentStoreRead is what one read of the content store cost, measured
// apart by measureContentStoreRead.
type contentStoreRead struct {
	n         int           // reads measured
	readyline time.Duration // the reader's CPU a read (this process's)
	runtime   time.Duration // containerd's a read (its cgroup's, less its pace over a few seconds before)
}

func (r contentStoreRead) String() string {
	if r.n == 0 {
		return "one read's CPU not measured: readyline's CPU in them at most their wall time"
	}
	return fmt.Sprintf("one read's CPU, measured over %d reads of the same pull from the benchmark's process: the reader %.2f ms, containerd %.2f ms",
		r.n, 1e3*r.readyline.Seconds(), 1e3*r.runtime.Seconds())
}

// measureContentStoreRead reads the progress of image's pull n times as the
// daemon reads it (collector.PullProgressReader against the node's
// containerd, a pull begun a minute ago), from this process, and measures
// the CPU both sides spent: this process's user and system time (its other
// goroutines idle: the window is over) and the containerd cgroup's
// (benchCgroupRoot) less what it spends without them, each over n.
func measureContentStoreRead(tb testing.TB, ctx context.Context, image string, n int) contentStoreRead {
	tb.Helper()
	r, err := collector.NewPullProgressReader(env.CRIEndpoint())
	if err != nil {
		tb.Fatal(err)
	}
	defer r.Close()
	since := time.Now().Add(-time.Minute)
	read := func() {
		if _, err := r.Progress(ctx, image, since); err != nil {
			tb.Fatalf("reading the content store: %v", err)
		}
	}
	for range 5 {
		read() // connected, and the first reads' allocations made
	}
	containerd := filepath.Join(benchCgroupRoot, "containerd")
	cpu := func() time.Duration {
		c, err := cgroupCPU(containerd)
		if err != nil {
			tb.Fatal(err)
		}
		return c
	}
	// containerd's own pace without the reads, just before them: its
	// shims and housekeeping go on while they run.
	b0, began := cpu(), time.Now()
	time.Sleep(contentStoreBaseline)
	idle := float64(cpu()-b0) / time.Since(began).Seconds() // CPU a second
	c0, u0, began := cpu(), selfCPU(tb), time.Now()
	for range n {
		read()
	}
	u1, c1, took := selfCPU(tb), cpu(), time.Since(began)
	runtime := max(0, c1-c0-time.Duration(idle*took.Seconds()))
	return contentStoreRead{n: n, readyline: (u1 - u0) / time.Duration(n), runtime: runtime / time.Duration(n)}
}

// contentStoreBaseline is how long containerd's pace is read before the
// reads.
const contentStoreBaseline = 3 * time.Second

// selfCPU is this process's user and system time so far.
func selfCPU(tb testing.TB) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// contentStoreAbout qualifies contentStoreShare.
func (s sourceShares) contentStoreAbout() string {
	if s.read.n > 0 {
		return "≈ "
	}
	return "at most "
}

// String says, e.g., "the kubelet's calls seen: ExecSync 6600, SetUp 330,
// ...; the volume probes: ... ≈ 0.004 s of the probes' program's 0.061 s
// = 0.3% of readyline's cost; the content store: 12 reads in 0.041 s of
// wall time (3 ms each, ...); one read's CPU, measured ...: readyline's CPU
// in them ≈ 0.6% of its cost".
func (s sourceShares) String() string {
	methods := slices.Collect(maps.Keys(s.work.calls))
	slices.SortFunc(methods, func(a, b event.CRIMethod) int {
		return cmp.Or(cmp.Compare(s.work.calls[b], s.work.calls[a]), cmp.Compare(a, b))
	})
	var calls, volume []string
	for _, m := range methods {
		name := m.Short()
		if name == "" {
			name = string(m)
		}
		item := fmt.Sprintf("%s %.0f", name, s.work.calls[m])
		if s.work.calls[m] > 0 {
			calls = append(calls, item)
		}
		if m.IsVolume() {
			volume = append(volume, item)
		}
	}
	return fmt.Sprintf("the kubelet's calls seen: %s; the volume probes (%s; and %.0f runs no reported call accounts for: "+
		"NewMounter, the emptyDir SetUpAt inside each in-tree setup, calls in flight at the edges) took %.0f of the probes' program's %d runs: "+
		"≈ %.4f s of its %.4f s = %.2f%% of readyline's cost; the content store: %.0f reads in %.4f s of wall time (%.0f ms each, waiting for containerd included), "+
		"%v: readyline's CPU in them %s%.2f%% of its cost",
		strings.Join(calls, ", "), strings.Join(volume, ", "), s.unmatched, s.volumeRuns(), s.probe.runs,
		s.volumeTime.Seconds(), s.probe.runtime.Seconds(), 100*s.volumeShare(),
		s.work.reads, s.work.readTime.Seconds(), 1e3*s.work.readTime.Seconds()/max(s.work.reads, 1), s.read, s.contentStoreAbout(), 100*s.contentStoreShare())
}
