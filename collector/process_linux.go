package collector

import (
	"context"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/readyline/readyline/bpf"
	"github.com/readyline/readyline/collector/event"
	"github.com/readyline/readyline/collector/redact"
)

// ProcessConfig configures a ProcessSource. The zero value is usable.
type ProcessConfig struct {
	// RingBufferBytes sizes the kernel ring buffer (power of two); 0 = DefaultProcessRingBytes.
	RingBufferBytes uint32
	// CgroupMount is the cgroup2 mount point; "" finds it in mountinfo.
	CgroupMount string
	// CNIBinDirs are the directories CNI plugins run from; nil means
	// DefaultCNIBinDirs.
	CNIBinDirs []string
	// HostArgv keeps argv for every host process, not only for pod processes
	// and runtime helpers. Off by default: host command lines may hold
	// secrets this tool has no business exporting.
	HostArgv bool
	// Argv is what of the argv kept leaves the collector: redacted (the
	// default), or the program's name only (redact.ProgramOnly, --argv=none).
	Argv redact.Policy
	// PodsOnly drops events of processes outside pod cgroups (in the
	// kernel: they are never decoded)...
	PodsOnly bool
	// ...except CNI plugins' when KeepCNI is set: the correlator puts them
	// in the sandbox they set up.
	KeepCNI bool
}

func (c ProcessConfig) withDefaults() ProcessConfig {
	if c.RingBufferBytes == 0 {
		c.RingBufferBytes = DefaultProcessRingBytes
	}
	if c.CNIBinDirs == nil {
		c.CNIBinDirs = DefaultCNIBinDirs
	}
	return c
}

// ProcessStats counts what a ProcessSource saw. Safe to read while it runs.
type ProcessStats struct {
	Records      uint64 // ring-buffer records read
	DecodeErrors uint64 // records that could not be decoded
	KernelDrops  uint64 // records the kernel lost: ring buffer full
	Unattributed uint64 // events whose cgroup was gone before it was resolved
	// OtherNode: events of another node's pods, not reported (a kind
	// node's pods seen from the host: the pod cgroup is nested in a
	// container's).
	OtherNode uint64
	// Filtered: events PodsOnly left out in the kernel (host processes').
	Filtered uint64
	Ring     RingUsage // the kernel ring buffer's size and peak fill
}

// ProcessSource reports exec, fork and exit of every process on the node,
// attributed to pods and containers by cgroup.
type ProcessSource struct {
	cfg     ProcessConfig
	logger  *slog.Logger
	prog    *bpf.ProcessProgram
	cgroups *cgroupResolver // nil without a cgroup2 hierarchy
	procs   processTable
	ring    ringSource
	// hostView: readyline runs in the initial PID namespace, where the
	// tasks of nodes nested in containers (kind) are visible too; in a
	// node's own namespace the kernel program leaves them out.
	hostView bool

	records, decodeErrors, unattributed, otherNode atomic.Uint64
}

// NewProcessSource loads and attaches the process tracer. Events are
// buffered in the kernel until Run reads them. A nil logger discards logs.
func NewProcessSource(cfg ProcessConfig, logger *slog.Logger) (*ProcessSource, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cfg = cfg.withDefaults()
	s := &ProcessSource{cfg: cfg, logger: logger, procs: newProcessTable()}

	mount := cfg.CgroupMount
	if mount == "" {
		m, err := findCgroup2Mount()
		if err != nil {
			logger.Warn("processes cannot be attributed to containers", "error", err)
		}
		initNS, _ := os.Readlink("/proc/1/ns/cgroup")
		ownNS, _ := os.Readlink("/proc/self/ns/cgroup")
		if why := ownViewOnly(m, initNS, ownNS); err == nil && why != "" {
			logger.Warn("processes cannot be attributed to pods", "error", why)
		}
		mount = m.point
	}
	if mount != "" {
		r, err := newCgroupResolver(mount, logger)
		if err != nil {
			return nil, err
		}
		s.cgroups = r
	}

	pidns, err := bpf.OwnPIDNamespace()
	if err != nil {
		s.close()
		return nil, err
	}
	// The node's containers are one PID namespace below readyline's; what
	// is deeper is another node's (kind's pods, seen from the host) or a
	// container's own containers, and not this node's pod starts.
	prog, err := bpf.LoadProcessProgram(bpf.ProcessOptions{RingBufferBytes: cfg.RingBufferBytes,
		CNIDirs: cfg.CNIBinDirs, PIDNamespace: pidns, MaxPIDNamespaceDepth: 1, PodsOnly: cfg.PodsOnly})
	if err != nil {
		s.close()
		return nil, err
	}
	s.prog = prog
	s.ring = ringSource{name: event.SourceProcess, lost: "process events", logger: logger,
		events: prog.Events(), poll: bpf.ProcessPollInterval, attached: time.Now().UTC(), readDrops: prog.Drops}
	s.ring.sampleClock()
	s.hostView = pidns == bpf.InitialPIDNamespace
	logger.Info("process tracer attached", "cgroup2", mount)
	return s, nil
}

func (s *ProcessSource) close() {
	if s.prog != nil {
		s.prog.Close()
	}
	if s.cgroups != nil {
		s.cgroups.close()
	}
}

// Stats returns the counters so far.
func (s *ProcessSource) Stats() ProcessStats {
	return ProcessStats{
		Records:      s.records.Load(),
		DecodeErrors: s.decodeErrors.Load(),
		KernelDrops:  s.ring.kernelDrops.Load(),
		Unattributed: s.unattributed.Load(),
		OtherNode:    s.otherNode.Load(),
		Filtered:     s.filtered(),
		Ring:         s.ring.fill.usage(),
	}
}

// filtered reads the kernel's count of events PodsOnly left out; 0 when
// it cannot (the source closed).
func (s *ProcessSource) filtered() uint64 {
	n, err := s.prog.Filtered()
	if err != nil {
		return 0
	}
	return n
}

// Run reads events until ctx is done and hands each to emit, in kernel
// order, from one goroutine. A slow emit backs up into the kernel ring
// buffer, which then drops and counts. The source's statuses come in the
// same stream: Up first, then for each second in which the kernel dropped
// records a Down (reason ring_full, Since the previous second, Lost the
// records) and at once an Up. Run detaches the tracer on return and returns
// nil on cancellation. Call it once.
func (s *ProcessSource) Run(ctx context.Context, emit func(event.Event)) error {
	defer s.close()
	return s.ring.run(ctx, emit, func(b []byte) {
		s.records.Add(1)
		ev, err := DecodeProcessEvent(b, s.ring.clock())
		if err != nil {
			s.decodeErrors.Add(1)
			s.logger.Debug("dropping undecodable record", "error", err)
			return
		}
		if cn, ok := ev.(*CgroupName); ok {
			if s.cgroups != nil {
				s.cgroups.learn(cn)
			}
			return
		}
		if s.enrich(ev) {
			emit(ev)
		}
	})
}

// enrich attributes the event to its container, applies the argv policy and
// tracks the process; it returns false for events to leave out.
func (s *ProcessSource) enrich(ev event.Event) bool {
	var p *event.Process
	switch e := ev.(type) {
	case *event.ProcessExec:
		p = &e.Process
		helper := HelperScope(e.Filename, s.cfg.CNIBinDirs)
		s.attribute(p, helper)
		s.procs.exec(p.PID, e.Filename, helper)
		if p.Scope == event.ScopeHost && !s.cfg.HostArgv {
			e.Argv, e.ArgvTruncated = nil, false
		} else {
			e.Argv = s.cfg.Argv.Argv(e.Argv)
		}
	case *event.ProcessFork:
		p = &e.Process
		helper := s.procs.fork(p.PID, p.PPID)
		s.attribute(p, helper)
	case *event.ProcessExit:
		p = &e.Process
		info, first := s.procs.exit(p.PID)
		if !first {
			return false // a second report of the same exit (pre-6.16 race)
		}
		e.Filename = info.filename
		s.attribute(p, info.helper)
	}
	return !s.cfg.PodsOnly || p.Scope == event.ScopePod || (s.cfg.KeepCNI && p.Scope == event.ScopeCNI)
}

func (s *ProcessSource) attribute(p *event.Process, helper event.Scope) {
	p.Scope = event.ScopeHost
	if helper != "" {
		p.Scope = helper
	}
	if s.cgroups == nil {
		return
	}
	cg := s.cgroups.resolve(p.CgroupID)
	if cg == nil {
		s.unattributed.Add(1)
		return
	}
	p.Cgroup = cg.path
	if s.hostView && cg.attr.Nested {
		s.otherNode.Add(1) // a host process to this node: not reported with PodsOnly
		return
	}
	p.PodUID, p.ContainerID = cg.attr.PodUID, cg.attr.ContainerID
	if p.PodUID != "" {
		p.Scope = event.ScopePod
	}
}
