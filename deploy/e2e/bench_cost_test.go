//go:build e2e

package e2e

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"golang.org/x/sys/unix"
)

// What the node's components spend, read in the same run as the load they
// share: readyline's CPU against the kubelet's and the container runtime's.
//
// The kubelet and containerd are moved, for the benchmark, into cpuacct
// cgroups of their own (benchCgroupRoot/kubelet, .../containerd), so the
// runtime's figure holds what it forks too: every shim started from then on,
// and each runc a shim runs (runc's container-side processes join the pod's
// cgroup, whose CPU is the containers' own and reported apart). Shims
// already running are moved along. At the end every process goes back to
// the root cgroup and the cgroups are removed; a run killed before that
// leaves them, and the next run empties and reuses them.
//
// readyline's cost is its own CPU (user+system, every thread) plus the run
// time of its eBPF programs (kernel.bpf_stats, enabled for the run with
// BPF_ENABLE_STATS): those run in the traced tasks' context, the kubelet's
// for its uprobes and the container runtime's or the pods' for the
// exec/exit tracepoints, so their time is charged to those cgroups. The
// ratio takes it out of the observed side whole (as if all of it ran in the
// kubelet's or containerd's cgroups, never in a pod's) and adds it to
// readyline's: the ratio is never flattering. Not in either figure: the
// uprobes' trap into the kernel and back, which the kubelet pays per probed
// call (BenchmarkProbedCRICall measures it) and which is in its figure.
const benchCgroupRoot = "/sys/fs/cgroup/cpuacct/readyline-bench"

// costReading is the node's components' CPU so far, read at one instant.
type costReading struct {
	at                  time.Time
	readyline           time.Duration          // the daemon's user+system
	bpf                 time.Duration          // its eBPF programs' run time
	bpfRuns             uint64                 // and how often they ran
	programs            map[string]programCost // by program name
	kubelet, containerd time.Duration          // their cgroups' usage (containerd's with its shims and runc)
	pods                time.Duration          // the kubepods cgroup: the containers' own processes, probes included
	probes              float64                // the kubelet's prober_probe_total, every result
	work                sourceWork             // what readyline's /metrics counted of its sources' work
}

// costMeter reads costReadings; close restores the host.
type costMeter struct {
	tb        testing.TB
	daemon    *Daemon
	daemonPID int
	stats     io.Closer // BPF_ENABLE_STATS
	programs  map[ebpf.ProgramID]*ebpf.Program
	names     map[ebpf.ProgramID]string
}

// programCost is what an eBPF program of readyline's spent.
type programCost struct {
	runtime time.Duration
	runs    uint64
}

// newCostMeter moves the kubelet and containerd (and its shims) into
// benchCgroupRoot and enables eBPF run-time statistics; the daemon must be
// running (its programs are looked up by the ids its fds hold).
func newCostMeter(tb testing.TB, d *Daemon) *costMeter {
	tb.Helper()
	daemonPID := d.PID
	m := &costMeter{tb: tb, daemon: d, daemonPID: daemonPID, programs: map[ebpf.ProgramID]*ebpf.Program{}, names: map[ebpf.ProgramID]string{}}
	tb.Cleanup(m.close)
	if err := releaseBenchCgroups(); err != nil {
		tb.Fatalf("emptying the cgroups a previous run left: %v", err)
	}
	for _, name := range []string{"kubelet", "containerd"} {
		pid, ok := recordedProcessAlive(filepath.Join(env.NodeDir, "run", name+".pid"))
		if !ok {
			tb.Fatalf("the node's %s is not running", name)
		}
		dir := filepath.Join(benchCgroupRoot, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			tb.Fatal(err)
		}
		pids := []int{pid}
		if name == "containerd" {
			pids = append(pids, shimPIDs()...)
		}
		for _, p := range pids {
			if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(p)), 0o644); err != nil && p == pid {
				tb.Fatalf("moving %s (pid %d) into %s: %v", name, p, dir, err)
			}
		}
	}
	stats, err := ebpf.EnableStats(unix.BPF_STATS_RUN_TIME)
	if err != nil {
		tb.Fatalf("enabling eBPF run-time statistics: %v", err)
	}
	m.stats = stats
	ids, err := daemonProgramIDs(daemonPID)
	if err != nil || len(ids) == 0 {
		tb.Fatalf("readyline's eBPF programs: %v (%d found)", err, len(ids))
	}
	for _, id := range ids {
		p, err := ebpf.NewProgramFromID(id)
		if err != nil {
			tb.Fatalf("eBPF program %d: %v", id, err)
		}
		m.programs[id] = p
		m.names[id] = fmt.Sprint(id)
		if info, err := p.Info(); err == nil && info.Name != "" {
			m.names[id] = info.Name
		}
	}
	return m
}

// read takes a reading.
func (m *costMeter) read(ctx context.Context) costReading {
	m.tb.Helper()
	r := costReading{at: time.Now(), readyline: processCPU(m.tb, m.daemonPID), programs: map[string]programCost{}, work: readSourceWork(m.tb, m.daemon)}
	for id, p := range m.programs {
		st, err := p.Stats()
		if err != nil {
			m.tb.Fatalf("eBPF program stats: %v", err)
		}
		r.bpf += st.Runtime
		r.bpfRuns += st.RunCount
		c := r.programs[m.names[id]]
		c.runtime += st.Runtime
		c.runs += st.RunCount
		r.programs[m.names[id]] = c
	}
	var err error
	if r.kubelet, err = cgroupCPU(filepath.Join(benchCgroupRoot, "kubelet")); err == nil {
		if r.containerd, err = cgroupCPU(filepath.Join(benchCgroupRoot, "containerd")); err == nil {
			r.pods, err = cgroupCPU("/sys/fs/cgroup/cpuacct/kubepods")
		}
	}
	if err != nil {
		m.tb.Fatal(err)
	}
	if r.probes, err = kubeletProbeRuns(ctx); err != nil {
		m.tb.Fatal(err)
	}
	return r
}

// close puts every process back in the root cgroup, removes the cgroups
// and stops the eBPF statistics.
func (m *costMeter) close() {
	for _, p := range m.programs {
		p.Close()
	}
	if m.stats != nil {
		m.stats.Close()
	}
	if err := releaseBenchCgroups(); err != nil {
		m.tb.Errorf("restoring the host: %v", err)
	}
}

// releaseBenchCgroups moves every process in benchCgroupRoot back to the
// root cgroup and removes it; a shim may fork while it moves them, so it
// tries a few times.
func releaseBenchCgroups() error {
	if _, err := os.Stat(benchCgroupRoot); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	var err error
	for range 10 {
		err = nil
		for _, name := range []string{"kubelet", "containerd"} {
			dir := filepath.Join(benchCgroupRoot, name)
			procs, rerr := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
			if errors.Is(rerr, os.ErrNotExist) {
				continue
			}
			for _, pid := range strings.Fields(string(procs)) {
				// A process that exited meanwhile: ESRCH, nothing to move.
				os.WriteFile("/sys/fs/cgroup/cpuacct/cgroup.procs", []byte(pid), 0o644)
			}
			if rerr := os.Remove(dir); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
				err = errors.Join(err, rerr)
			}
		}
		if err == nil {
			if err = os.Remove(benchCgroupRoot); err == nil || errors.Is(err, os.ErrNotExist) {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

// shimPIDs are the running containerd shims.
func shimPIDs() []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil && strings.HasPrefix(string(comm), "containerd-shim") {
			out = append(out, pid)
		}
	}
	return out
}

// cgroupCPU is a cpuacct cgroup's CPU time so far, its descendants' included.
func cgroupCPU(dir string) (time.Duration, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cpuacct.usage"))
	if err != nil {
		return 0, err
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return time.Duration(ns), err
}

// daemonProgramIDs are the ids of the eBPF programs pid holds, by program
// or link fd.
func daemonProgramIDs(pid int) ([]ebpf.ProgramID, error) {
	fds, err := filepath.Glob(fmt.Sprintf("/proc/%d/fdinfo/*", pid))
	if err != nil {
		return nil, err
	}
	seen := map[ebpf.ProgramID]bool{}
	var ids []ebpf.ProgramID
	for _, fd := range fds {
		info, err := os.ReadFile(fd)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(info), "\n") {
			f := strings.Fields(line)
			if len(f) != 2 || f[0] != "prog_id:" {
				continue
			}
			if n, err := strconv.ParseUint(f[1], 10, 32); err == nil && !seen[ebpf.ProgramID(n)] {
				seen[ebpf.ProgramID(n)] = true
				ids = append(ids, ebpf.ProgramID(n))
			}
		}
	}
	return ids, nil
}

// kubeletProbeRuns is the sum of the kubelet's prober_probe_total (its
// /metrics/probes, through the API server's node proxy): probe runs of the
// pods it still runs (a deleted pod's series go with it).
func kubeletProbeRuns(ctx context.Context) (float64, error) {
	b, err := env.Client.CoreV1().RESTClient().Get().
		AbsPath("/api/v1/nodes", env.NodeName, "proxy", "metrics", "probes").DoRaw(ctx)
	if err != nil {
		return 0, fmt.Errorf("reading the kubelet's probe metrics: %w", err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(strings.NewReader(string(b)))
	if err != nil {
		return 0, fmt.Errorf("the kubelet's probe metrics: %w", err)
	}
	var n float64
	for _, m := range mfs["prober_probe_total"].GetMetric() {
		n += m.GetCounter().GetValue()
	}
	return n, nil
}

// costWindow is what was spent between two readings.
type costWindow struct {
	wall                time.Duration
	readyline, bpf      time.Duration
	bpfRuns             uint64
	programs            map[string]programCost
	kubelet, containerd time.Duration
	pods                time.Duration
	probes              float64
	work                sourceWork
	read                contentStoreRead // one content store read's CPU, measured after the window (zero: not)
}

func (a costReading) to(b costReading) costWindow {
	w := costWindow{
		wall: b.at.Sub(a.at), readyline: b.readyline - a.readyline, bpf: b.bpf - a.bpf, bpfRuns: b.bpfRuns - a.bpfRuns,
		programs: map[string]programCost{},
		kubelet:  b.kubelet - a.kubelet, containerd: b.containerd - a.containerd, pods: b.pods - a.pods, probes: b.probes - a.probes,
		work: a.work.to(b.work),
	}
	for name, c := range b.programs {
		w.programs[name] = programCost{runtime: c.runtime - a.programs[name].runtime, runs: c.runs - a.programs[name].runs}
	}
	return w
}

// programsString lists the eBPF programs' costs, the costliest first:
// "name 0.05 s in 1200 runs (41 ns/run), ...".
func (w costWindow) programsString() string {
	names := slices.Collect(maps.Keys(w.programs))
	slices.SortFunc(names, func(a, b string) int { return cmp.Compare(w.programs[b].runtime, w.programs[a].runtime) })
	var out []string
	for _, name := range names {
		c := w.programs[name]
		if c.runs == 0 {
			continue
		}
		out = append(out, fmt.Sprintf("%s %.3f s in %d runs (%d ns/run)", name, c.runtime.Seconds(), c.runs, c.runtime.Nanoseconds()/int64(c.runs)))
	}
	return strings.Join(out, ", ")
}

// observer is readyline's cost: its CPU and its eBPF programs'.
func (w costWindow) observer() time.Duration { return w.readyline + w.bpf }

// observed is the kubelet's and the runtime's, less every eBPF program's
// run time (see benchCgroupRoot).
func (w costWindow) observed() time.Duration { return w.kubelet + w.containerd - w.bpf }

// ratio is readyline's cost over the kubelet's and the runtime's.
func (w costWindow) ratio() float64 {
	return w.observer().Seconds() / max(w.observed().Seconds(), 1e-9)
}

// coreShare is readyline's cost as a share of one core over the window.
func (w costWindow) coreShare() float64 { return w.observer().Seconds() / max(w.wall.Seconds(), 1e-9) }

func (w costWindow) String() string {
	s := func(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 2, 64) + " s" }
	return fmt.Sprintf("over %v: readyline %s CPU + %s in its eBPF programs (%d runs) = %.2f%% of a core; kubelet %s, containerd with its shims and runc %s, "+
		"the containers' own %s; readyline / (kubelet + containerd - eBPF) = %.2f%%; its eBPF programs: %s; %s",
		w.wall.Round(time.Second), s(w.readyline), s(w.bpf), w.bpfRuns, 100*w.coreShare(), s(w.kubelet), s(w.containerd), s(w.pods), 100*w.ratio(),
		w.programsString(), w.shares())
}

// reportCost reports the window's figures as benchmark metrics, per unit
// (a pod start, a probe run) when n > 0.
func reportCost(b *testing.B, w costWindow, unit string, n float64) {
	b.ReportMetric(100*w.ratio(), "%readyline/(kubelet+containerd)")
	b.ReportMetric(100*w.coreShare(), "%core-readyline")
	if n > 0 {
		b.ReportMetric(w.observer().Seconds()/n, "readyline-cpu-s/"+unit)
		b.ReportMetric(w.observed().Seconds()/n, "kubelet+containerd-cpu-s/"+unit)
	}
	sh := w.shares()
	b.ReportMetric(100*sh.volumeShare(), "%volume-probes")
	if sh.read.n > 0 {
		b.ReportMetric(100*sh.contentStoreShare(), "%content-store")
		b.ReportMetric(1e3*sh.read.readyline.Seconds(), "content-store-read-cpu-ms")
	} else {
		b.ReportMetric(100*sh.contentStoreShare(), "%content-store-at-most")
	}
}

// The goal every mode fails on: readyline spends at most 5 % of what the
// kubelet and the runtime spend on the same work.
const benchGoalRatio = 0.05

// profileDaemon saves, when pprof, the daemon's CPU profile from now until
// stop is called, in pieces of 20 s (its API's write timeout is 30 s):
// artifacts/NAME.cpu.N.pprof, which `go tool pprof -top FILES...` merges.
// The piece stop cuts short is lost.
func profileDaemon(ctx context.Context, b *testing.B, d *Daemon, pprof bool, name string) (stop func()) {
	if !pprof {
		return func() {}
	}
	dir, err := env.ArtifactsDir()
	if err != nil {
		b.Logf("no CPU profile: %v", err)
		return func() {}
	}
	old, _ := filepath.Glob(filepath.Join(dir, name+".cpu.*.pprof"))
	for _, f := range old {
		os.Remove(f)
	}
	pctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; pctx.Err() == nil; i++ {
			req, err := http.NewRequestWithContext(pctx, http.MethodGet, d.APIURL+"/debug/pprof/profile?seconds=20", nil)
			if err != nil {
				return
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				if pctx.Err() == nil {
					b.Logf("CPU profile: %v", err)
				}
				return
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK {
				if pctx.Err() == nil {
					b.Logf("CPU profile: %s %v", resp.Status, err)
				}
				return
			}
			os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s.cpu.%03d.pprof", name, i)), body, 0o644)
		}
	}()
	return func() { cancel(); <-done }
}
