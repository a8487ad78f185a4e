package bpf

import (
	"errors"
	"fmt"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
)

// EventTCPState is the type of every record of the TCP tracer: one state
// change of a followed socket (a TcpStateEvent).
const EventTCPState = uint32(TcpEventTypeEVENT_TCP_STATE)

// TCPPollInterval is how often a reader of the TCP tracer's Events ring
// buffer must look for records when not woken: the program wakes it only
// when a quarter of the ring buffer waits.
const TCPPollInterval = 100 * time.Millisecond

// TCPOptions configure LoadTCPProgram. The zero value is usable.
type TCPOptions struct {
	// RingBufferBytes sizes the ring buffer (a power of two, at least one
	// page). Zero keeps the compiled-in 1 MiB.
	RingBufferBytes uint32
	// MaxConnections bounds how many sockets the kernel side follows at
	// once (an LRU: beyond it, the least recently changed is forgotten).
	// Zero keeps the compiled-in 8192.
	MaxConnections uint32
}

// TCPProgram is the loaded and attached TCP connection tracer. It follows
// the sockets that watched processes connect and reports their state
// changes; read them from the Events ring buffer with ringbuf.NewReader.
// Watch and Unwatch are safe for concurrent use; Close detaches everything.
type TCPProgram struct {
	objs TcpObjects
	link link.Link
}

// LoadTCPProgram loads tcp.bpf.c and attaches it to the
// sock/inet_sock_set_state tracepoint (tp_btf, no tracefs needed). No
// process is watched until Watch.
func LoadTCPProgram(opts TCPOptions) (*TCPProgram, error) {
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, fmt.Errorf("removing memlock rlimit: %w", err)
	}
	spec, err := LoadTcp()
	if err != nil {
		return nil, err
	}
	if opts.RingBufferBytes != 0 {
		spec.Maps[TcpMapEvents].MaxEntries = opts.RingBufferBytes
	}
	if opts.MaxConnections != 0 {
		spec.Maps[TcpMapConns].MaxEntries = opts.MaxConnections
	}
	wakeup := uint64(spec.Maps[TcpMapEvents].MaxEntries / wakeupFraction)
	if err := spec.Variables[TcpVarWakeupBytes].Set(wakeup); err != nil {
		return nil, fmt.Errorf("setting wakeup_bytes: %w", err)
	}
	// Watch takes pids as readyline sees them: in a PID namespace other than
	// the initial one (a kind node), the program translates.
	if dev, ino, err := ownPIDNamespace(); err != nil {
		return nil, err
	} else if ino != InitialPIDNamespace {
		if err := spec.Variables[TcpVarPidnsDev].Set(dev); err != nil {
			return nil, fmt.Errorf("setting pidns_dev: %w", err)
		}
		if err := spec.Variables[TcpVarPidnsIno].Set(ino); err != nil {
			return nil, fmt.Errorf("setting pidns_ino: %w", err)
		}
	}

	p := &TCPProgram{}
	if err := spec.LoadAndAssign(&p.objs, nil); err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return nil, fmt.Errorf("loading tcp program: %+v", ve)
		}
		return nil, fmt.Errorf("loading tcp program: %w", err)
	}
	l, err := link.AttachTracing(link.TracingOptions{Program: p.objs.HandleSetState})
	if err != nil {
		p.objs.Close()
		return nil, fmt.Errorf("attaching inet_sock_set_state: %w", err)
	}
	p.link = l
	return p, nil
}

// Watch makes the program follow the TCP connections that process tgid
// (its id in the initial PID namespace) opens from now on. The kernel
// watches at most 64 processes.
func (p *TCPProgram) Watch(tgid uint32) error {
	if err := p.objs.WatchedTgids.Put(tgid, uint8(1)); err != nil {
		return fmt.Errorf("watching tgid %d: %w", tgid, err)
	}
	return nil
}

// Unwatch stops following new connections of process tgid; those already
// followed are reported until they close. Unwatching a process that is not
// watched is not an error.
func (p *TCPProgram) Unwatch(tgid uint32) error {
	err := p.objs.WatchedTgids.Delete(tgid)
	if err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("unwatching tgid %d: %w", tgid, err)
	}
	return nil
}

// Events is the ring buffer the program writes TcpStateEvent records to.
func (p *TCPProgram) Events() *ebpf.Map { return p.objs.Events }

// Drops returns how many records the kernel side lost because the ring
// buffer was full, summed over CPUs.
func (p *TCPProgram) Drops() (uint64, error) {
	return sumPerCPU(p.objs.Drops, 0)
}

// RunStats returns how many times the program ran and for how long in
// total. The kernel counts only while its BPF statistics are enabled
// (ebpf.EnableStats or the kernel.bpf_stats_enabled sysctl), which costs
// every BPF program on the node a clock read per run.
func (p *TCPProgram) RunStats() (*ebpf.ProgramStats, error) {
	st, err := p.objs.HandleSetState.Stats()
	if err != nil {
		return nil, fmt.Errorf("reading tcp program statistics: %w", err)
	}
	return st, nil
}

// Close detaches the program and releases the maps.
func (p *TCPProgram) Close() error {
	var errs []error
	if p.link != nil {
		errs = append(errs, p.link.Close())
	}
	errs = append(errs, p.objs.Close())
	return errors.Join(errs...)
}
