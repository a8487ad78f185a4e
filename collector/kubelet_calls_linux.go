package collector

// This file is the kubelet-call source (KubeletCallSource, the "cri_calls"
// source of the metrics and SourceStatus events): the calls the kubelet
// makes, to the runtime through its CRI client and to CSI plugins and
// in-tree volume plugins while it sets up a pod's volumes. goprobe
// (bpf/goprobe.bpf.c, bpf.GoProbeProgram) is its eBPF program, named after
// its technique: uprobes on Go functions, at their entry and their RETs.

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/readyline/readyline/bpf"
	"github.com/readyline/readyline/collector/event"
	"github.com/readyline/readyline/collector/redact"
)

// KubeletCallConfig configures a KubeletCallSource. The zero value is usable.
type KubeletCallConfig struct {
	// ProcRoot is where to look for the kubelet process; default /proc.
	ProcRoot string
	// Rescan is how often to look for a (re)started kubelet; default 2 s.
	Rescan time.Duration
	// PerAddress forces per-address perf-event uprobes (CAP_SYS_ADMIN)
	// instead of uprobe_multi.
	PerAddress bool
	// RingBufferBytes sizes the kernel ring buffer (power of two); 0 =
	// DefaultKubeletCallsRingBytes.
	RingBufferBytes uint32
	// MaxCallsInFlight bounds the calls the kernel side follows between
	// their entry and return; 0 = DefaultKubeletCallsInFlight.
	MaxCallsInFlight uint32
	// Argv is what of an ExecSync command leaves the source: redacted (the
	// default), or the program's name only (redact.ProgramOnly).
	Argv redact.Policy

	// target is what to probe: the kubelet's CRI client unless a test says
	// otherwise.
	target *probeTarget
}

// probeTarget is a process to find by name (its comm and its executable's,
// see findKubelets) and the methods to probe in it.
type probeTarget struct {
	process string
	methods []criMethod
	// offsets returns the field offsets for the nested reads in a binary
	// with that build info (nil when it has none), or nil to read ids only.
	offsets func(info *debug.BuildInfo, logger *slog.Logger) *criOffsets
}

// kubeletTarget is the kubelet's CRI client, and its CSI client.
var kubeletTarget = probeTarget{process: "kubelet", methods: slices.Concat(criMethods, kubeletCSIMethods), offsets: kubeletCRIOffsets}

// kubeletCRIOffsets returns the field offsets for the kubelet's
// k8s.io/cri-api when readyline knows its layout, nil (ids only, one Warn
// naming the kubelet's version) otherwise.
func kubeletCRIOffsets(info *debug.BuildInfo, logger *slog.Logger) *criOffsets {
	o, criAPI := kubeletCRILayout(info)
	if o == nil {
		logger.Warn("readyline does not know this kubelet's CRI message layout: its CRI calls are traced with ids and timings only, without the pod UID, container name and image read from the call",
			"kubelet_version", kubeletVersion(info), "kubelet_cri_api", criAPI, "known", knownKubelets())
	}
	return o
}

// KubeletCallStats counts what a KubeletCallSource saw.
type KubeletCallStats struct {
	Calls        uint64 // CRICall events emitted
	DecodeErrors uint64
	Attaches     uint64 // times probes were attached to a kubelet
	// BinaryReads counts the kubelet executables read; an attach to a
	// file read before, or refused before, takes what was found then.
	BinaryReads uint64
	KubeletPID  int // the kubelet probed now, 0 if none
	// ThreadHops counts calls that returned on another thread than they
	// entered: goroutines move between threads, the probes key by goroutine.
	ThreadHops uint64
	// Uprobes is how the last attach probed a kubelet (it stays after the
	// kubelet is gone): UprobeMulti or UprobePerAddress, "" before the first.
	Uprobes string
	// The kernel side's counters (see bpf.GoProbeCounters).
	Kernel bpf.GoProbeCounters
	// Of the calls that returned without their entry (Kernel.
	// ReturnsWithoutEntry): EntriesLost had their entry pushed out of the
	// full map of calls in flight (at least so many: a loss, reported as
	// entry_missed), BeforeAttach were under way when the probes attached
	// (the rest: not a loss, no start readyline watched began with them).
	EntriesLost, BeforeAttach uint64
	Ring                      RingUsage // the kernel ring buffer's size and peak fill
}

// How a KubeletCallSource attaches its probes (KubeletCallStats.Uprobes).
const (
	// UprobeMulti is one uprobe_multi link for every address (Linux 6.6+).
	UprobeMulti = "uprobe_multi"
	// UprobePerAddress is one perf-event uprobe per address: the fallback
	// on kernels without uprobe_multi, or with KubeletCallConfig.PerAddress.
	UprobePerAddress = "per_address"
)

// KubeletCallSource reports the kubelet's calls, timed in the kernel by
// uprobes on its CRI client and its volume plugins (kubelet_volumes.go;
// stripped release binaries included). It finds
// the kubelet by scanning /proc every Rescan: among the processes named
// kubelet it takes the oldest that runs a file named kubelet, in the node's
// PID namespace, outside any pod's cgroup and not forked from another
// such process. It keeps probing that one while it lives (another
// kubelet-like process is warned about once, and ignored) and follows it
// when it restarts. Not safe for concurrent use, but for Stats.
type KubeletCallSource struct {
	cfg    KubeletCallConfig
	logger *slog.Logger
	prog   *bpf.GoProbeProgram

	// attachTo probes a process: s.attach, but in tests.
	attachTo func(p *kubeletProcess) error

	// current attachment
	cur     *kubeletProcess // the process probed, nil if none
	curSeen time.Time       // when cur was last seen running
	curFD   pidFD           // a pidfd of cur, once stillRunning opened one
	rescans int             // rescans so far (see fullRescanEvery)
	links   []link.Link
	methods map[uint32]*criMethod
	warned  string // the last degradation warned about, to warn once
	// ignored are the other kubelet-like processes warned about while cur
	// runs; failed the processes that could not be probed, not retried.
	ignored, failed map[procKey]bool
	// rejected are the processes named like the kubelet that the last
	// full scan found not to be it ("pid: why"), each logged once.
	rejected map[string]bool
	nsWarned bool
	binaries binaryCache

	// emit is Run's; status what the source last said of itself.
	emit   func(event.Event)
	status sourceState

	// inFlight is what CallsInFlight reads, for other goroutines than
	// Run's: the methods probed and the kubelet's tgid (in the initial PID
	// namespace, as the kernel's records have it; 0 before its first call).
	inFlight atomic.Pointer[inFlightView]
	// csiNames joins the kubelet's CSI calls to their pod and volume.
	csiNames csiNames

	// ring reads the calls' ring buffer; the source tells its losses
	// itself (Stats.Kernel).
	ring                                                   ringSource
	calls, decodeErrors, attaches, threadHops, binaryReads atomic.Uint64
	kubeletPID                                             atomic.Int64
	// pidChanged is signalled (without blocking) when kubeletPID
	// changes: the TCP source follows it (followKubelet).
	pidChanged chan struct{}
	uprobes    atomic.Value // string: KubeletCallStats.Uprobes
	// lost: KubeletCallStats.EntriesLost, counted when ReturnsWithoutEntry
	// was without.
	lost struct {
		sync.Mutex
		without, entries uint64
	}
}

func (c KubeletCallConfig) withDefaults() KubeletCallConfig {
	if c.ProcRoot == "" {
		c.ProcRoot = "/proc"
	}
	if c.Rescan <= 0 {
		c.Rescan = 2 * time.Second
	}
	if c.target == nil {
		c.target = &kubeletTarget
	}
	if c.RingBufferBytes == 0 {
		c.RingBufferBytes = DefaultKubeletCallsRingBytes
	}
	if c.MaxCallsInFlight == 0 {
		c.MaxCallsInFlight = DefaultKubeletCallsInFlight
	}
	return c
}

// NewKubeletCallSource loads the uprobe programs. A kernel that refuses them is
// an error the caller should report as one lost feature, not a fatal one.
func NewKubeletCallSource(cfg KubeletCallConfig, logger *slog.Logger) (*KubeletCallSource, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cfg = cfg.withDefaults()
	prog, err := bpf.LoadGoProbeProgram(bpf.GoProbeOptions{RingBufferBytes: cfg.RingBufferBytes, MaxCallsInFlight: cfg.MaxCallsInFlight})
	if err != nil {
		return nil, err
	}
	s := &KubeletCallSource{cfg: cfg, logger: logger, prog: prog, pidChanged: make(chan struct{}, 1)}
	s.attachTo = s.attach
	s.ring = ringSource{name: event.SourceKubeletCalls, logger: logger, events: prog.Events(), poll: bpf.GoCallPollInterval}
	s.ring.sampleClock()
	return s, nil
}

// Stats returns the counters so far. Safe for concurrent use.
func (s *KubeletCallSource) Stats() KubeletCallStats {
	st := KubeletCallStats{Calls: s.calls.Load(), DecodeErrors: s.decodeErrors.Load(), Attaches: s.attaches.Load(),
		BinaryReads: s.binaryReads.Load(), KubeletPID: int(s.kubeletPID.Load()), ThreadHops: s.threadHops.Load(),
		Ring: s.ring.fill.usage()}
	st.Uprobes, _ = s.uprobes.Load().(string)
	st.Kernel, _ = s.prog.Counters()
	st.EntriesLost = s.entriesLost(st.Kernel)
	st.BeforeAttach = st.Kernel.ReturnsWithoutEntry - min(st.EntriesLost, st.Kernel.ReturnsWithoutEntry)
	return st
}

// KubeletPID is Stats().KubeletPID alone, without reading the kernel's
// counters: the PID of the kubelet probed, 0 while none is.
func (s *KubeletCallSource) KubeletPID() int { return int(s.kubeletPID.Load()) }

// entriesLost is bpf.EntriesLost, the highest count so far: it is counted
// again (the map's calls counted, up to MaxCallsInFlight reads) only when
// a call returned without its entry since the last count, as a lost entry
// shows then.
func (s *KubeletCallSource) entriesLost(before bpf.GoProbeCounters) uint64 {
	s.lost.Lock()
	defer s.lost.Unlock()
	if before.ReturnsWithoutEntry == s.lost.without {
		return s.lost.entries
	}
	held, err := s.prog.CallsHeld()
	after, err2 := s.prog.Counters()
	if err != nil || err2 != nil || before == (bpf.GoProbeCounters{}) {
		return s.lost.entries // counted at the next call
	}
	s.lost.without = before.ReturnsWithoutEntry
	s.lost.entries = max(s.lost.entries, bpf.EntriesLost(before, held, after))
	return s.lost.entries
}

// Run probes the kubelet (and its successors, when it restarts) until ctx
// is done, handing each call to emit from one goroutine. It returns nil on
// cancellation, with the probes detached.
//
// Around the calls it emits an event.SourceStatus of source
// event.SourceKubeletCalls each time it starts or stops seeing them: Up once
// probes are attached (first at start), Down when none are, with the
// reason "no_kubelet" (none found), "kubelet_restarted" (the kubelet probed
// is gone and another is there: Since its start, or since the one probed
// was last seen if they ran together, until it is probed) or
// "attach_failed" (the kubelet cannot be probed). A Down that follows a
// Down, with another reason, has the first one's start as Since.
func (s *KubeletCallSource) Run(ctx context.Context, emit func(event.Event)) error {
	s.emit = emit
	defer s.prog.Close()
	defer s.detach()
	// Records are decoded on their own goroutine: attaching (reading the
	// kubelet binary) takes seconds, during which calls keep coming.
	// The drained marks go the same way, after the records before them.
	records := make(chan callRecord, 1024)
	readCtx, stopRead := context.WithCancel(ctx)
	readDone := make(chan error, 1)
	go func() {
		send := func(r callRecord) {
			select {
			case records <- r:
			case <-readCtx.Done():
			}
		}
		readDone <- s.ring.run(readCtx, func(ev event.Event) {
			if d, ok := ev.(*event.Drained); ok {
				send(callRecord{drained: d.Time})
			}
		}, func(b []byte) {
			r, err := DecodeGoCall(b, s.ring.clock())
			if err != nil {
				s.decodeErrors.Add(1)
				return
			}
			send(callRecord{rec: r})
		})
	}()
	defer func() {
		stopRead()
		<-readDone
	}()

	s.rescan()
	tick := time.NewTicker(s.cfg.Rescan)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			s.rescan()
		case r := <-records:
			if !r.drained.IsZero() {
				emit(&event.Drained{Time: r.drained, Source: event.SourceKubeletCalls})
				break
			}
			if ev := s.toEvent(&r.rec); ev != nil {
				s.calls.Add(1)
				emit(ev)
			}
		case err := <-readDone:
			readDone <- err
			return err
		}
	}
}

// callRecord is a record read from the ring, or the time it was drained.
type callRecord struct {
	rec     GoCallRecord
	drained time.Time
}

// toEvent turns a record of the probed kubelet into a CRICall.
func (s *KubeletCallSource) toEvent(r *GoCallRecord) event.Event {
	// The links are limited to the kubelet's pid, so every record is its;
	// r.TGID is numbered in the initial PID namespace, s.pid in readyline's.
	m := s.methods[r.Func]
	if m == nil {
		return nil // a method not probed in this kubelet
	}
	if !r.Start.IsZero() && r.EntryTID != r.PID {
		s.threadHops.Add(1)
	}
	c := &event.CRICall{Time: r.Start, End: r.End, Method: m.Method, Err: r.Err, PID: r.TGID}
	m.fill(c, r)
	if m.names {
		s.csiNames.remember(r, c.PodUID, c.Volume)
		return nil
	}
	if m.Method.IsCSI() {
		s.csiNames.name(c, r)
	}
	if m.Method.IsVolume() && c.PodUID == "" {
		return nil // a pod's volume no one can tell (or emptyDir setting up another plugin's directory)
	}
	if c.Cmd != nil {
		c.Cmd = s.cfg.Argv.Argv(c.Cmd) // what the kubelet runs, and a pod spec holds: redacted here
	}
	if v := s.inFlight.Load(); v != nil && v.tgid != r.TGID {
		s.inFlight.Store(&inFlightView{methods: v.methods, tgid: r.TGID})
	}
	return c
}

// inFlightView is what CallsInFlight needs of the current attachment.
type inFlightView struct {
	methods map[uint32]*criMethod
	tgid    uint32
}

// maxInFlightAge bounds the age of a call in flight that CallsInFlight
// reports: an entry whose return the probes missed (a panic in the
// kubelet) stays in the kernel's map until it is pushed out, and the
// kubelet bounds its runtime calls at minutes (runtimeRequestTimeout).
const maxInFlightAge = time.Hour

// CallsInFlight returns the calls the probed kubelet has entered and
// not returned from, End zero, oldest first: of the methods given, or of
// every method without. It reads the kernel's map of calls in flight (at
// most KubeletCallConfig.MaxCallsInFlight of them; the arguments of the
// methods asked for only) and is safe for concurrent use with Run; before
// the kubelet is probed it returns none.
func (s *KubeletCallSource) CallsInFlight(methods ...event.CRIMethod) ([]*event.CRICall, error) {
	view := s.inFlight.Load()
	if view == nil {
		return nil, nil
	}
	clock := s.ring.clock()
	now := time.Now()
	var out []*event.CRICall
	want := func(key bpf.GoprobeCallKey) bool {
		m := view.methods[key.Func]
		// Not probed now, or an earlier kubelet's; or not a call.
		return m != nil && !m.names && (view.tgid == 0 || key.Tgid == view.tgid) &&
			(len(methods) == 0 || slices.Contains(methods, m.Method))
	}
	err := s.prog.CallsInFlight(want, func(key bpf.GoprobeCallKey, args []byte) {
		m := view.methods[key.Func]
		r, err := DecodeGoCallEntry(key, args, clock)
		if err != nil || r.Start.IsZero() || now.Sub(r.Start) > maxInFlightAge {
			return
		}
		c := &event.CRICall{Time: r.Start, Method: m.Method, PID: r.TGID}
		m.fill(c, &r)
		if m.Method.IsCSI() {
			s.csiNames.name(c, &r)
		}
		if m.Method.IsVolume() && c.PodUID == "" {
			return
		}
		out = append(out, c)
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out, err
}

// PullsInFlight is CallsInFlight of PullImage: PullSamplerConfig.InFlight.
func (s *KubeletCallSource) PullsInFlight() ([]*event.CRICall, error) {
	return s.CallsInFlight(event.CRIPullImage)
}

// fullRescanEvery is how many rescans look through all of /proc while the
// kubelet probed runs: the others look at it alone. A full scan reads the
// comm of every process (BenchmarkFindKubelet: a node's hundreds of pod
// processes make it most of the source's CPU in steady state), and what
// only it finds, another kubelet-like process to warn about, can wait
// that long; the kubelet probed exiting is seen at the next rescan.
const fullRescanEvery = 15

// rescan finds the kubelet and (re)attaches when it changed.
func (s *KubeletCallSource) rescan() {
	name := s.cfg.target.process
	s.rescans++
	if s.cur != nil && s.rescans%fullRescanEvery != 0 && s.stillRunning(s.cur) {
		s.curSeen = s.now()
		return
	}
	scan, err := findKubelets(s.cfg.ProcRoot, name, s.cur)
	if err != nil {
		s.warnOnce("cannot look for the kubelet: its calls are not traced", "error", err)
	}
	if scan.nsErr != nil && !s.nsWarned {
		s.nsWarned = true
		s.logger.Warn("cannot read the node's PID namespace: a process named "+name+" in another PID namespace could be taken for the kubelet",
			"error", scan.nsErr)
	}
	s.noteRejected(scan.rejected)
	if s.cur != nil {
		if scan.has(s.cur) {
			s.curSeen = s.now()
			s.ignoreOthers(scan.found)
			return
		}
		s.logger.Info("the kubelet is gone: detaching the kubelet-call probes", "pid", s.cur.pid)
		old, seen := s.cur.pid, s.curSeen
		s.detach()
		if len(scan.found) > 0 {
			s.logger.Info("kubelet restarted: re-attaching the kubelet-call probes", "old_pid", old, "pid", scan.found[0].pid)
			// Its calls are lost from its start, or from when the one
			// probed was last seen if it ran alongside.
			since := s.startTime(scan.found[0])
			if since.Before(seen) {
				since = seen
			}
			s.setStatus(false, "kubelet_restarted", since)
		} else {
			s.setStatus(false, "no_kubelet", time.Time{})
		}
	}
	s.pruneFailed(scan.found)
	for _, p := range scan.found {
		if s.failed[p.key()] {
			continue
		}
		if err := s.attachTo(p); err != nil {
			s.warnOnce("cannot probe the kubelet: its calls are not traced (pod starts keep their other sources)",
				"pid", p.pid, "exe", p.exe, "error", err)
			s.failed[p.key()] = true // not retried every rescan
			continue
		}
		s.cur, s.curSeen = p, s.now()
		s.setKubeletPID(p.pid)
		s.warned = ""
		s.ignored = nil
		s.setStatus(true, "", time.Time{})
		s.ignoreOthers(scan.found)
		return
	}
	switch {
	case len(scan.found) > 0:
		s.setStatus(false, "attach_failed", time.Time{})
	case scan.denied > 0:
		// The kubelet is most likely there, out of readyline's reach.
		s.warnOnce("cannot look into the processes named "+name+" (readyline needs CAP_SYS_PTRACE): the kubelet's calls are not traced",
			"rejected", rejectedList(scan.rejected))
		s.setStatus(false, "attach_failed", time.Time{})
	default:
		if err == nil {
			s.warnOnce("no "+name+" process found: kubelet calls are not traced until one starts", "rejected", rejectedList(scan.rejected))
		}
		s.setStatus(false, "no_kubelet", time.Time{})
	}
}

// stillRunning reports whether p, the kubelet probed, still runs the file
// it was probed in and still looks like the kubelet.
//
// The first look reads p's files in /proc, a dozen reads and parses; it
// opens a pidfd of p before, which from then on answers alone: readable
// once p has exited, one poll(2). A process whose pidfd cannot be opened,
// or under another ProcRoot than /proc (tests), is read each time. What
// only the files tell (p running another binary after an exec) the full
// rescan sees.
func (s *KubeletCallSource) stillRunning(p *kubeletProcess) bool {
	if s.curFD.pid == p.pid {
		if exited, err := s.curFD.exited(); err == nil {
			return !exited
		}
		s.curFD.close()
	}
	var fd pidFD
	if s.cfg.ProcRoot == "/proc" {
		fd = openPIDFD(p.pid) // before the look: then it is the process looked at
	}
	nodeNS, _ := nodePIDNamespace(s.cfg.ProcRoot) // unread: checked by the full scan, which warns
	q, why, _ := inspectProcess(s.cfg.ProcRoot, p.pid, s.cfg.target.process, nodeNS, p)
	if why != "" || !p.sameProcess(q) {
		fd.close()
		return false
	}
	s.curFD.close()
	s.curFD = fd
	return true
}

// pidFD is a pidfd of a process (pidfd_open(2)); the zero value has none.
type pidFD struct {
	pid int // 0: none
	fd  int
}

func openPIDFD(pid int) pidFD {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return pidFD{}
	}
	return pidFD{pid: pid, fd: fd}
}

// exited reports whether the process has exited (its pidfd is readable).
func (f pidFD) exited() (bool, error) {
	if f.pid == 0 {
		return false, unix.EBADF
	}
	fds := []unix.PollFd{{Fd: int32(f.fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return false, err
		}
		return n > 0, nil
	}
}

func (f *pidFD) close() {
	if f.pid != 0 {
		unix.Close(f.fd)
	}
	*f = pidFD{}
}

// sourceState is what a source last said of itself.
type sourceState struct {
	sent   bool
	up     bool
	reason string
	// downSince is where the loss of the current Down began.
	downSince time.Time
}

// setStatus emits a SourceStatus when up or reason changed; since, on a
// Down, is where the loss began when that is before now.
func (s *KubeletCallSource) setStatus(up bool, reason string, since time.Time) {
	st := &s.status
	if st.sent && st.up == up && st.reason == reason {
		return
	}
	ev := &event.SourceStatus{Time: s.now(), Source: event.SourceKubeletCalls, Up: up, Reason: reason}
	if !up {
		switch {
		case st.sent && !st.up:
			ev.Since = st.downSince
		case !since.IsZero() && since.Before(ev.Time):
			ev.Since = since
		}
		st.downSince = ev.Since
		if st.downSince.IsZero() {
			st.downSince = ev.Time
		}
	}
	st.sent, st.up, st.reason = true, up, reason
	if s.emit != nil {
		s.emit(ev)
	}
}

// now is the time on the clock of the source's records.
func (s *KubeletCallSource) now() time.Time {
	return s.ring.clock().Time(bootTimeNS())
}

// startTime is when p started, on the clock of the source's records.
func (s *KubeletCallSource) startTime(p *kubeletProcess) time.Time {
	return s.ring.clock().Time(p.start * (1e9 / clockTicksPerSecond))
}

// clockTicksPerSecond is the unit of /proc/<pid>/stat's times (USER_HZ,
// 100 on every Linux architecture readyline runs on).
const clockTicksPerSecond = 100

// ignoreOthers warns, once each, about the kubelet-like processes found
// besides the one probed.
func (s *KubeletCallSource) ignoreOthers(found []*kubeletProcess) {
	seen := make(map[procKey]bool, len(s.ignored))
	for _, p := range found {
		if p.sameProcess(s.cur) {
			continue
		}
		k := p.key()
		seen[k] = true
		if !s.ignored[k] {
			s.logger.Warn("a second kubelet-like process is ignored: the kubelet probed now still runs",
				"pid", p.pid, "exe", p.exe, "probed_pid", s.cur.pid)
		}
	}
	s.ignored = seen
}

// noteRejected logs at Debug, once each, the processes named like the
// kubelet that a full scan found not to be it (a pod's process, a fork): what
// says which were looked at, and why they were passed over.
func (s *KubeletCallSource) noteRejected(rejected []string) {
	seen := make(map[string]bool, len(rejected))
	for _, r := range rejected {
		seen[r] = true
		if !s.rejected[r] {
			s.logger.Debug("a process named "+s.cfg.target.process+" is not the kubelet", "process", r)
		}
	}
	s.rejected = seen
}

// pruneFailed forgets the failed processes that are gone.
func (s *KubeletCallSource) pruneFailed(found []*kubeletProcess) {
	if s.failed == nil {
		s.failed = make(map[procKey]bool)
	}
	live := make(map[procKey]bool, len(found))
	for _, p := range found {
		live[p.key()] = true
	}
	for k := range s.failed {
		if !live[k] {
			delete(s.failed, k)
		}
	}
}

// rejectedList is the start of a list of rejected processes, for a log.
func rejectedList(rejected []string) string {
	const most = 8
	if len(rejected) > most {
		return strings.Join(rejected[:most], "; ") + fmt.Sprintf("; and %d more", len(rejected)-most)
	}
	return strings.Join(rejected, "; ")
}

func (s *KubeletCallSource) warnOnce(msg string, args ...any) {
	if s.warned == msg {
		return
	}
	s.warned = msg
	s.logger.Warn(msg, args...)
}

func (s *KubeletCallSource) detach() {
	for _, l := range s.links {
		l.Close()
	}
	// s.methods stays: the records of calls the kubelet made before it
	// went may still be on their way (the ring, the reader's channel), and
	// the table is the same for every attachment.
	s.links, s.cur = nil, nil
	s.curFD.close()
	s.setKubeletPID(0)
}

// setKubeletPID stores the PID of the kubelet probed and signals
// pidChanged.
func (s *KubeletCallSource) setKubeletPID(pid int) {
	s.kubeletPID.Store(int64(pid))
	select {
	case s.pidChanged <- struct{}{}:
	default: // one pending is enough: the PID is read when it is taken
	}
}

// attach locates the CRI client methods in the kubelet binary (or takes
// them from the cache) and probes their entries and every RET.
func (s *KubeletCallSource) attach(p *kubeletProcess) error {
	pid := p.pid
	exe := filepath.Join(s.cfg.ProcRoot, strconv.Itoa(pid), "exe")
	bin, err := s.readBinary(exe)
	if err != nil {
		return err
	}
	funcs, offsets := bin.funcs, bin.offsets
	methodsTable := s.cfg.target.methods
	var probes []bpf.Probe
	methods := make(map[uint32]*criMethod)
	var missing []string
	for i := range methodsTable {
		m := &methodsTable[i]
		f := funcs[m.Symbol]
		if f == nil {
			missing = append(missing, string(m.Method))
			continue
		}
		id := uint32(i)
		if err := s.prog.SetFunc(id, m.spec(offsets)); err != nil {
			return err
		}
		methods[id] = m
		probes = append(probes, bpf.Probe{Offset: f.EntryOffset, Func: id})
		for _, off := range f.RetFileOffsets() {
			probes = append(probes, bpf.Probe{Offset: off, Func: id, Return: true})
		}
	}
	if len(missing) > 0 {
		s.logger.Warn("some CRI client methods are not in this kubelet: their calls are not traced",
			"kubelet_version", bin.version, "known", knownKubelets(), "missing", strings.Join(missing, ","), "error", bin.lookupErr)
	}

	uprobes := UprobeMulti
	if !s.cfg.PerAddress {
		l, err := s.prog.AttachMulti(exe, pid, probes)
		if err == nil {
			s.links = []link.Link{l}
		} else {
			s.logger.Info("uprobe_multi unavailable, trying per-address uprobes (needs CAP_SYS_ADMIN)", "error", err)
		}
	}
	if s.links == nil {
		links, err := s.prog.AttachEach(exe, pid, probes)
		if err != nil {
			return err
		}
		s.links, uprobes = links, UprobePerAddress
	}
	s.methods = methods
	s.inFlight.Store(&inFlightView{methods: methods})
	s.attaches.Add(1)
	s.uprobes.Store(uprobes)
	s.logger.Info("probing the kubelet's CRI client", "pid", pid, "methods", len(methods), "probes", len(probes), "uprobes", uprobes)
	return nil
}

// procStartTime is field 22 of /proc/<pid>/stat (after the parenthesised comm).
func procStartTime(stat string) string {
	if i := strings.LastIndexByte(stat, ')'); i >= 0 {
		stat = stat[i+1:]
	}
	f := strings.Fields(stat)
	if len(f) < 20 {
		return ""
	}
	return f[19]
}
