package bpf

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"
)

// Event types, the first field of every record's header.
const (
	EventExec = uint32(ProcessEventTypeEVENT_EXEC)
	EventExit = uint32(ProcessEventTypeEVENT_EXIT)
	EventFork = uint32(ProcessEventTypeEVENT_FORK)
	// EventCgroupName names a cgroup before the first event of its tasks.
	EventCgroupName = uint32(ProcessEventTypeEVENT_CGROUP_NAME)
)

// ProcessOptions configure LoadProcessProgram. The zero value is usable.
type ProcessOptions struct {
	// RingBufferBytes sizes the ring buffer (a power of two, at least one
	// page). Zero keeps the compiled-in 4 MiB.
	RingBufferBytes uint32
	// SkipArgv leaves argv out of exec records.
	SkipArgv bool
	// PIDNamespace is the inode number of the PID namespace whose pids to
	// report (readyline's own, /proc/self/ns/pid); 0 or the initial
	// namespace's reports the initial namespace's, and everything.
	PIDNamespace uint32
	// MaxPIDNamespaceDepth is how many PID namespaces below PIDNamespace a
	// task reported may be; the zero value reports all. readyline sets 1:
	// a node's containers each have a namespace of their own, and deeper
	// ones are another node's (a kind node's pods, seen from the host) or
	// a container's own containers.
	MaxPIDNamespaceDepth uint32
	// CNIDirs are the directories of CNI plugins (at most 3, each shorter
	// than 31 bytes): the exec of a program there carries its
	// CNI_CONTAINERID and CNI_COMMAND.
	CNIDirs []string
	// PodsOnly reports only the processes of pods (their cgroup or one
	// above it named *kubepods*) and CNI plugins with what they fork; the
	// others are counted (Filtered) and left in the kernel.
	PodsOnly bool
}

// wakeupFraction: the kernel wakes the reader when a quarter of the ring
// buffer is waiting; otherwise the reader polls (see ProcessPollInterval).
const wakeupFraction = 4

// ProcessPollInterval is how often a reader of the Events ring buffer must
// look for records when not woken: the programs wake it only when the ring
// buffer fills up, to batch the work of a busy node.
const ProcessPollInterval = 100 * time.Millisecond

// InitialPIDNamespace is the inode number of the initial PID namespace
// (PROC_PID_INIT_INO).
const InitialPIDNamespace = 0xEFFFFFFC

// ownPIDNamespace returns the device and inode number of the calling
// process's PID namespace.
func ownPIDNamespace() (dev, ino uint64, err error) {
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/ns/pid", &st); err != nil {
		return 0, 0, fmt.Errorf("reading the PID namespace: %w", err)
	}
	return st.Dev, st.Ino, nil
}

// OwnPIDNamespace is the inode number of the calling process's PID
// namespace, what ProcessOptions.PIDNamespace takes.
func OwnPIDNamespace() (uint32, error) {
	_, ino, err := ownPIDNamespace()
	return uint32(ino), err
}

// ProcessProgram is the loaded and attached process tracer. Read its Events
// ring buffer with ringbuf.NewReader; Close detaches everything.
type ProcessProgram struct {
	objs  ProcessObjects
	links []link.Link
}

// LoadProcessProgram loads process.bpf.c and attaches its tp_btf programs to
// sched_process_exec, sched_process_exit and sched_process_fork. On a
// kernel without what they need, the error is CheckKernel's.
func LoadProcessProgram(opts ProcessOptions) (*ProcessProgram, error) {
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, fmt.Errorf("removing memlock rlimit (without CAP_BPF, eBPF cannot load): %w", err)
	}
	if err := CheckKernel(); err != nil {
		return nil, err
	}
	spec, err := LoadProcess()
	if err != nil {
		return nil, err
	}
	if opts.RingBufferBytes != 0 {
		spec.Maps[ProcessMapEvents].MaxEntries = opts.RingBufferBytes
	}
	wakeup := uint64(spec.Maps[ProcessMapEvents].MaxEntries / wakeupFraction)
	if err := spec.Variables[ProcessVarWakeupBytes].Set(wakeup); err != nil {
		return nil, fmt.Errorf("setting wakeup_bytes: %w", err)
	}
	groupDead, err := exitHasGroupDead()
	if err != nil {
		return nil, err
	}
	if err := spec.Variables[ProcessVarExitHasGroupDead].Set(groupDead); err != nil {
		return nil, fmt.Errorf("setting exit_has_group_dead: %w", err)
	}
	if err := spec.Variables[ProcessVarCaptureArgv].Set(!opts.SkipArgv); err != nil {
		return nil, fmt.Errorf("setting capture_argv: %w", err)
	}
	pidns := opts.PIDNamespace
	if pidns == InitialPIDNamespace {
		pidns = 0
	}
	if opts.MaxPIDNamespaceDepth != 0 {
		if err := spec.Variables[ProcessVarMaxPidnsDepth].Set(opts.MaxPIDNamespaceDepth); err != nil {
			return nil, fmt.Errorf("setting max_pidns_depth: %w", err)
		}
	}
	if err := spec.Variables[ProcessVarPidnsInum].Set(pidns); err != nil {
		return nil, fmt.Errorf("setting pidns_inum: %w", err)
	}
	var dirs [3][32]byte
	for i, d := range opts.CNIDirs {
		d = strings.TrimSuffix(d, "/") + "/"
		if i >= len(dirs) || len(d) >= len(dirs[i]) {
			return nil, fmt.Errorf("CNI directory %q: at most %d directories of %d bytes", d, len(dirs), len(dirs[0])-1)
		}
		copy(dirs[i][:], d)
	}
	if err := spec.Variables[ProcessVarCniDirs].Set(dirs); err != nil {
		return nil, fmt.Errorf("setting cni_dirs: %w", err)
	}
	if err := spec.Variables[ProcessVarPodsOnly].Set(opts.PodsOnly); err != nil {
		return nil, fmt.Errorf("setting pods_only: %w", err)
	}

	p := &ProcessProgram{}
	if err := spec.LoadAndAssign(&p.objs, nil); err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return nil, fmt.Errorf("loading process programs: %+v", ve)
		}
		return nil, fmt.Errorf("loading process programs: %w", err)
	}
	for _, prog := range []*ebpf.Program{p.objs.HandleExec, p.objs.HandleExit, p.objs.HandleFork} {
		l, err := link.AttachTracing(link.TracingOptions{Program: prog})
		if err != nil {
			p.Close()
			return nil, fmt.Errorf("attaching %s: %w", prog, err)
		}
		p.links = append(p.links, l)
	}
	return p, nil
}

// Events is the ring buffer the programs write records to.
func (p *ProcessProgram) Events() *ebpf.Map { return p.objs.Events }

// Drops returns how many records the kernel side lost because the ring
// buffer was full, summed over CPUs.
func (p *ProcessProgram) Drops() (uint64, error) {
	return sumPerCPU(p.objs.Drops, 0)
}

// Filtered returns how many events PodsOnly left out in the kernel,
// summed over CPUs.
func (p *ProcessProgram) Filtered() (uint64, error) {
	return sumPerCPU(p.objs.Filtered, 0)
}

// Close detaches the programs and releases the maps.
func (p *ProcessProgram) Close() error {
	var errs []error
	for _, l := range p.links {
		errs = append(errs, l.Close())
	}
	errs = append(errs, p.objs.Close())
	return errors.Join(errs...)
}

// sumPerCPU sums entry idx of a per-CPU array of counters.
func sumPerCPU(m *ebpf.Map, idx uint32) (uint64, error) {
	n, err := ebpf.PossibleCPU()
	if err != nil {
		return 0, err
	}
	// A slice of the right length, not a pointer to one: the library
	// makes the latter by reflection, most of a lookup's cost.
	perCPU := make([]uint64, n)
	if err := m.Lookup(idx, perCPU); err != nil {
		return 0, fmt.Errorf("reading %s: %w", m, err)
	}
	var sum uint64
	for _, v := range perCPU {
		sum += v
	}
	return sum, nil
}

// exitHasGroupDead reports whether the running kernel's sched_process_exit
// tracepoint passes group_dead (Linux 6.16+), from the tracepoint's BTF.
func exitHasGroupDead() (bool, error) {
	kernel, err := btf.LoadKernelSpec()
	if err != nil {
		return false, fmt.Errorf("loading kernel BTF: %w", err)
	}
	var tp *btf.Typedef
	if err := kernel.TypeByName("btf_trace_sched_process_exit", &tp); err != nil {
		return false, fmt.Errorf("looking up sched_process_exit in kernel BTF: %w", err)
	}
	ptr, ok := tp.Type.(*btf.Pointer)
	if !ok {
		return false, fmt.Errorf("btf_trace_sched_process_exit: unexpected type %s", tp.Type)
	}
	proto, ok := ptr.Target.(*btf.FuncProto)
	if !ok {
		return false, fmt.Errorf("btf_trace_sched_process_exit: unexpected target %s", ptr.Target)
	}
	// (void *ctx, struct task_struct *p[, bool group_dead])
	return len(proto.Params) >= 3, nil
}
