package bpf

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
)

// GoCallPollInterval is how often a reader of the Go-call tracer's Events
// ring buffer must look for records when not woken: the program wakes it
// only when a quarter of the ring buffer waits (a probed kubelet makes a
// CRI call for every probe run, and a wakeup per call cost the reader more
// than reading the records).
const GoCallPollInterval = 100 * time.Millisecond

// Constants of goprobe.bpf.c's wire format and cookies.
const (
	// EventGoCall is the type of every goprobe record.
	EventGoCall = uint32(GoprobeGoCallEventTypeEVENT_GO_CALL)
	// NoReg marks an unused register slot in a GoprobeFuncSpec.
	NoReg = 0xff
	// MaxGoFuncs bounds the function ids (cookie bits 0-15).
	MaxGoFuncs = 32
	// CookieReturn marks a return probe's cookie.
	CookieReturn = 1 << 16
	// Dereference kinds of a GoprobeDerefSpec.
	DerefNone      = uint8(GoprobeDerefKindDEREF_NONE)
	DerefString    = uint8(GoprobeDerefKindDEREF_STRING)
	DerefPtrString = uint8(GoprobeDerefKindDEREF_PTR_STRING)
)

// The register fields of a GoprobeFuncSpec and GoprobeDerefSpec name a
// register by its index in the arch's sequence of integer registers of Go's
// ABIInternal ($GOROOT/src/cmd/compile/abi-internal.md), which goprobe.bpf.c
// (goabi.h) maps to the uprobe's saved registers: on amd64 RAX RBX RCX RDI
// RSI R8 R9 R10 R11, on arm64 R0-R15. Go assigns arguments and results to
// that sequence by the same algorithm on both, so one index means the same
// argument on both as long as no argument before it spilled to the stack on
// amd64 (where the sequence is shortest): a table of indexes below
// PortableIntRegs, for functions whose arguments fit amd64's registers,
// serves both arches.
const (
	IntReg0 uint8 = iota // amd64 RAX, arm64 R0
	IntReg1              // RBX, R1
	IntReg2              // RCX, R2
	IntReg3              // RDI, R3
	IntReg4              // RSI, R4
	IntReg5              // R8, R5
	IntReg6              // R9, R6
	IntReg7              // R10, R7
	IntReg8              // R11, R8

	// PortableIntRegs is the shortest integer register sequence among the
	// arches the programs are compiled for: amd64's 9 (arm64 has 16, all
	// of which its program reads).
	PortableIntRegs = 9
)

// GoProbeProgram is the loaded Go-function uprobe program, not yet attached
// to anything: see AttachMulti and AttachEach.
type GoProbeProgram struct {
	objs GoprobeObjects
}

// GoProbeOptions tunes LoadGoProbeProgram.
type GoProbeOptions struct {
	// RingBufferBytes sizes the ring buffer (a power of two, at least one
	// page). Zero keeps the compiled-in 2 MiB.
	RingBufferBytes uint32
	// MaxCallsInFlight bounds the calls entered and not yet returned that
	// the kernel side holds (an LRU: beyond it the oldest is forgotten,
	// and its return counts in ReturnsWithoutEntry). Each entry takes
	// ~1.2 KiB of kernel memory, allocated at load. Zero keeps the
	// compiled-in 16384 (~20 MiB).
	MaxCallsInFlight uint32
}

// LoadGoProbeProgram loads goprobe.bpf.c.
func LoadGoProbeProgram(opts GoProbeOptions) (*GoProbeProgram, error) {
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, fmt.Errorf("removing memlock rlimit: %w", err)
	}
	spec, err := LoadGoprobe()
	if err != nil {
		return nil, err
	}
	if opts.RingBufferBytes != 0 {
		spec.Maps[GoprobeMapGoEvents].MaxEntries = opts.RingBufferBytes
	}
	if opts.MaxCallsInFlight != 0 {
		spec.Maps[GoprobeMapCalls].MaxEntries = opts.MaxCallsInFlight
	}
	wakeup := uint64(spec.Maps[GoprobeMapGoEvents].MaxEntries / wakeupFraction)
	if err := spec.Variables[GoprobeVarWakeupBytes].Set(wakeup); err != nil {
		return nil, fmt.Errorf("setting wakeup_bytes: %w", err)
	}
	p := &GoProbeProgram{}
	if err := spec.LoadAndAssign(&p.objs, nil); err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return nil, fmt.Errorf("loading goprobe programs: %+v", ve)
		}
		return nil, fmt.Errorf("loading goprobe programs: %w", err)
	}
	return p, nil
}

// SetFunc tells the programs what to read for function id.
func (p *GoProbeProgram) SetFunc(id uint32, spec GoprobeFuncSpec) error {
	if id >= MaxGoFuncs {
		return fmt.Errorf("function id %d out of range", id)
	}
	if err := p.objs.FuncSpecs.Put(id, spec); err != nil {
		return fmt.Errorf("setting function %d: %w", id, err)
	}
	return nil
}

// Probe is one address to probe in an executable.
type Probe struct {
	// Offset is the file offset of the instruction.
	Offset uint64
	// Func is the function id; Return marks a RET instruction.
	Func   uint32
	Return bool
}

func (pr Probe) cookie() uint64 {
	c := uint64(pr.Func)
	if pr.Return {
		c |= CookieReturn
	}
	return c
}

// AttachMulti attaches every probe in exe with one uprobe_multi link,
// limited to process pid (0: any). It needs Linux 6.6 and CAP_BPF +
// CAP_PERFMON, not CAP_SYS_ADMIN; on an older kernel the error wraps
// ebpf.ErrNotSupported.
func (p *GoProbeProgram) AttachMulti(exe string, pid int, probes []Probe) (link.Link, error) {
	// Asked first: an older kernel refuses the link with a bare EINVAL,
	// which cilium/ebpf words as a wrong pid or attach type.
	if err := features.HaveBPFLinkUprobeMulti(); err != nil {
		return nil, fmt.Errorf("attaching uprobe_multi to %s: %w", exe, err)
	}
	ex, err := link.OpenExecutable(exe)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", exe, err)
	}
	opts := &link.UprobeMultiOptions{PID: uint32(pid)}
	for _, pr := range probes {
		opts.Addresses = append(opts.Addresses, pr.Offset)
		opts.Cookies = append(opts.Cookies, pr.cookie())
	}
	l, err := ex.UprobeMulti(nil, p.objs.GoCallMulti, opts)
	if err != nil {
		return nil, fmt.Errorf("attaching uprobe_multi to %s: %w", exe, err)
	}
	return l, nil
}

// AttachEach attaches every probe in exe with its own perf-event uprobe,
// limited to process pid: the fallback without uprobe_multi. It needs
// CAP_SYS_ADMIN. The probes go in one by one, in attachOrder: a call is
// never left in flight by the attach, and one already under way when its
// function's entry went in returns without its entry (as with
// AttachMulti). On error the links made so far are closed.
func (p *GoProbeProgram) AttachEach(exe string, pid int, probes []Probe) ([]link.Link, error) {
	ex, err := link.OpenExecutable(exe)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", exe, err)
	}
	var links []link.Link
	for _, pr := range attachOrder(probes) {
		l, err := ex.Uprobe("", p.objs.GoCall, &link.UprobeOptions{Address: pr.Offset, PID: pid, Cookie: pr.cookie()})
		if err != nil {
			for _, l := range links {
				l.Close()
			}
			return nil, fmt.Errorf("attaching uprobe at %s+%#x: %w", exe, pr.Offset, err)
		}
		links = append(links, l)
	}
	return links, nil
}

// attachOrder is the order in which AttachEach attaches probes: function
// by function, every return before the entry. Entry first, a call could
// enter and leave by a RET not yet probed, and its saved entry would stay
// in the map of calls in flight until the goroutine called it again.
func attachOrder(probes []Probe) []Probe {
	out := slices.Clone(probes)
	slices.SortStableFunc(out, func(a, b Probe) int {
		if c := cmp.Compare(a.Func, b.Func); c != 0 {
			return c
		}
		switch {
		case a.Return == b.Return:
			return 0
		case a.Return:
			return -1
		}
		return 1
	})
	return out
}

// Events is the ring buffer of call records.
func (p *GoProbeProgram) Events() *ebpf.Map { return p.objs.GoEvents }

// CallsInFlight calls f with each call the entry probe saved and no return
// has taken yet that want takes by its key: its key and its go_call_args,
// as raw bytes that f must not keep. The map is read in batches of up to
// callsBatchSize entries, a system call each (a walk key by key took two
// per call in flight: on a node starting pods, tens a walk, ten walks a
// second while a pull is sampled). It is read while the probes write it,
// so a call may be missed or seen just after it returned; each is given
// once (a key has one hash bucket, and a batch holds whole buckets).
func (p *GoProbeProgram) CallsInFlight(want func(GoprobeCallKey) bool, f func(key GoprobeCallKey, args []byte)) error {
	m := p.objs.Calls
	if m.ValueSize() != uint32(len(goCallArgsRaw{})) {
		return fmt.Errorf("reading the calls in flight: the map's values are %d bytes, go_call_args %d", m.ValueSize(), len(goCallArgsRaw{}))
	}
	b := callsBatches.Get().(*callsBatch)
	defer callsBatches.Put(b)
	var cursor ebpf.MapBatchCursor
	for {
		n, err := m.BatchLookup(&cursor, b.keys[:], b.args[:], nil)
		for i := range n {
			if want(b.keys[i]) {
				f(b.keys[i], b.args[i][:])
			}
		}
		switch {
		case errors.Is(err, ebpf.ErrKeyNotExist):
			return nil // the last batch
		case err != nil:
			return fmt.Errorf("reading the calls in flight: %w", err)
		}
	}
}

// callsBatch is CallsInFlight's buffer: callsBatchSize entries, ~75 KiB,
// pooled (the sampler and the API's questions read at once).
const callsBatchSize = 64

type (
	goCallArgsRaw [unsafe.Sizeof(GoprobeGoCallArgs{})]byte
	callsBatch    struct {
		keys [callsBatchSize]GoprobeCallKey
		args [callsBatchSize]goCallArgsRaw
	}
)

var callsBatches = sync.Pool{New: func() any { return new(callsBatch) }}

// GoProbeCounters are the programs' counters, summed over CPUs.
type GoProbeCounters struct {
	// Drops: records the full ring buffer refused. Entries, Returns: the
	// probes' runs (Returns of probed functions only).
	Drops, Entries, Returns uint64
	// ReturnsWithoutEntry: returns that found no saved entry, either of a
	// call under way when the probes attached or of one whose entry was
	// pushed out of the full map (MaxCallsInFlight).
	ReturnsWithoutEntry uint64
	// Saved: calls saved in a key of their own (not stack-growth
	// re-entries, not over an earlier call that never returned). Every
	// one is returned (Returns - ReturnsWithoutEntry), still held
	// (CallsHeld) or was pushed out: see EntriesLost. A stack-growth
	// re-entry after the full map pushed out the call's first save is
	// saved again, as the kernel cannot tell it from a new call.
	Saved uint64
}

// EntriesLost is how many saved calls were pushed out of the map before
// their return: before is read, then held counted (CallsHeld), then
// after; calls saved or returned in between only lower the count, a call
// saved twice (see Saved) raises it by one.
func EntriesLost(before GoProbeCounters, held int, after GoProbeCounters) uint64 {
	gone := (after.Returns - after.ReturnsWithoutEntry) + uint64(held)
	if before.Saved <= gone {
		return 0
	}
	return before.Saved - gone
}

// CallsHeld counts the calls the map holds now (entered, not returned, not
// pushed out). The map is read while the probes write it: a call saved
// meanwhile may be missed, a call removed meanwhile makes the iteration
// start over (keys are counted once).
func (p *GoProbeProgram) CallsHeld() (int, error) {
	m := p.objs.Calls
	seen := make(map[GoprobeCallKey]struct{})
	var key GoprobeCallKey
	args := make([]byte, m.ValueSize())
	it := m.Iterate()
	for n := uint32(0); it.Next(&key, args); n++ {
		if n == 4*m.MaxEntries() {
			// Restarted over and over by calls coming and going: a count
			// cut short here would miss calls held and overstate the
			// lost ones (EntriesLost), which only ever go up.
			return 0, fmt.Errorf("counting the calls in flight: the map changed under %d reads", n)
		}
		seen[key] = struct{}{}
	}
	if err := it.Err(); err != nil {
		return 0, fmt.Errorf("counting the calls in flight: %w", err)
	}
	return len(seen), nil
}

// Counters reads the programs' counters.
func (p *GoProbeProgram) Counters() (GoProbeCounters, error) {
	var c GoProbeCounters
	for i, dst := range []*uint64{&c.Drops, &c.Entries, &c.Returns, &c.ReturnsWithoutEntry, &c.Saved} {
		n, err := sumPerCPU(p.objs.GoCounters, uint32(i))
		if err != nil {
			return c, err
		}
		*dst = n
	}
	return c, nil
}

// Close releases the programs and maps (links are closed by their owners).
func (p *GoProbeProgram) Close() error { return p.objs.Close() }
