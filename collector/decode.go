package collector

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"
	"unsafe"

	"github.com/readyline/readyline/bpf"
	"github.com/readyline/readyline/collector/event"
)

// Record layout, taken from the structs bpf2go generates from process.bpf.c,
// so a change on the C side is a compile-time or test-time failure here.
var (
	hdrSize  = int(unsafe.Sizeof(bpf.ProcessEventHeader{}))
	execSize = int(unsafe.Sizeof(bpf.ProcessExecEvent{}))
	exitSize = int(unsafe.Sizeof(bpf.ProcessExitEvent{}))
	forkSize = int(unsafe.Sizeof(bpf.ProcessForkEvent{}))

	offType     = int(unsafe.Offsetof(bpf.ProcessEventHeader{}.Type))
	offBootNs   = int(unsafe.Offsetof(bpf.ProcessEventHeader{}.BootNs))
	offTgid     = int(unsafe.Offsetof(bpf.ProcessEventHeader{}.Tgid))
	offPpid     = int(unsafe.Offsetof(bpf.ProcessEventHeader{}.Ppid))
	offCgroupID = int(unsafe.Offsetof(bpf.ProcessEventHeader{}.CgroupId))
	offComm     = int(unsafe.Offsetof(bpf.ProcessEventHeader{}.Comm))
	commLen     = len(bpf.ProcessEventHeader{}.Comm)

	offArgvLen     = int(unsafe.Offsetof(bpf.ProcessExecEvent{}.ArgvLen))
	offArgvFullLen = int(unsafe.Offsetof(bpf.ProcessExecEvent{}.ArgvFullLen))
	offFilename    = int(unsafe.Offsetof(bpf.ProcessExecEvent{}.Filename))
	filenameLen    = len(bpf.ProcessExecEvent{}.Filename)
	offArgv        = int(unsafe.Offsetof(bpf.ProcessExecEvent{}.Argv))
	argvCap        = len(bpf.ProcessExecEvent{}.Argv)

	offCNIContainerID = int(unsafe.Offsetof(bpf.ProcessExecEvent{}.CniContainerid))
	cniContainerIDLen = len(bpf.ProcessExecEvent{}.CniContainerid)
	offCNICommand     = int(unsafe.Offsetof(bpf.ProcessExecEvent{}.CniCommand))
	cniCommandLen     = len(bpf.ProcessExecEvent{}.CniCommand)

	offExitCode = int(unsafe.Offsetof(bpf.ProcessExitEvent{}.ExitCode))

	cgroupSize     = int(unsafe.Sizeof(bpf.ProcessCgroupEvent{}))
	offCgroupLevel = int(unsafe.Offsetof(bpf.ProcessCgroupEvent{}.Level))
	offCgroupNames = int(unsafe.Offsetof(bpf.ProcessCgroupEvent{}.Names))
	cgroupLevels   = len(bpf.ProcessCgroupEvent{}.Names)
	cgroupNameLen  = len(bpf.ProcessCgroupEvent{}.Names[0])
)

// CgroupName is the kernel naming a cgroup (by its last path components)
// ahead of the events of its tasks, so that a container's cgroup can be
// attributed even after it is removed. It is consumed by the process
// source, not emitted.
type CgroupName struct {
	Time     time.Time
	CgroupID uint64
	// Level is the cgroup's depth below the root (0 for the root).
	Level int
	// Names are the directory names from the cgroup itself upwards, at most
	// as many as the kernel sends (see Path).
	Names []string
}

func (*CgroupName) Type() event.Type  { return "cgroup" }
func (c *CgroupName) When() time.Time { return c.Time }

// Path is the cgroup's path as far as the names reach: "/a/b/c", or
// "/.../b/c" when the cgroup is deeper than the names the kernel sent.
func (c *CgroupName) Path() string {
	if c.Level == 0 {
		return "/"
	}
	parts := make([]string, 0, len(c.Names)+1)
	if c.Level > len(c.Names) {
		parts = append(parts, "...")
	}
	for i := len(c.Names) - 1; i >= 0; i-- {
		parts = append(parts, c.Names[i])
	}
	return "/" + strings.Join(parts, "/")
}

// ErrShortRecord and ErrUnknownRecord are returned by DecodeProcessEvent for
// records it cannot read.
var (
	ErrShortRecord   = errors.New("short record")
	ErrUnknownRecord = errors.New("unknown record type")
)

// DecodeProcessEvent decodes one ring-buffer record of the process tracer
// into an event.ProcessExec, ProcessExit or ProcessFork (or a *CgroupName),
// its kernel time converted with clock. Container attribution and argv policy are left to
// the caller: the event carries the cgroup id and the raw argv.
// It never panics, whatever the input.
func DecodeProcessEvent(b []byte, clock BootClock) (event.Event, error) {
	if len(b) < hdrSize {
		return nil, fmt.Errorf("%w: %d bytes, header needs %d", ErrShortRecord, len(b), hdrSize)
	}
	le := binary.LittleEndian
	typ := le.Uint32(b[offType:])
	proc := event.Process{
		PID:      le.Uint32(b[offTgid:]),
		PPID:     le.Uint32(b[offPpid:]),
		CgroupID: le.Uint64(b[offCgroupID:]),
		Comm:     cString(b[offComm : offComm+commLen]),
	}
	at := clock.Time(le.Uint64(b[offBootNs:]))

	switch typ {
	case bpf.EventExec:
		if len(b) < execSize {
			return nil, fmt.Errorf("%w: exec record of %d bytes, want %d", ErrShortRecord, len(b), execSize)
		}
		// The kernel copies at most the whole block and at most argvCap.
		full := int(le.Uint32(b[offArgvFullLen:]))
		n := min(int(le.Uint32(b[offArgvLen:])), full, argvCap)
		return &event.ProcessExec{
			Time:           at,
			Process:        proc,
			Filename:       cString(b[offFilename : offFilename+filenameLen]),
			Argv:           splitArgv(b[offArgv : offArgv+n]),
			ArgvTruncated:  full > n,
			CNIContainerID: cString(b[offCNIContainerID : offCNIContainerID+cniContainerIDLen]),
			CNICommand:     cString(b[offCNICommand : offCNICommand+cniCommandLen]),
		}, nil
	case bpf.EventExit:
		if len(b) < exitSize {
			return nil, fmt.Errorf("%w: exit record of %d bytes, want %d", ErrShortRecord, len(b), exitSize)
		}
		status := le.Uint32(b[offExitCode:])
		return &event.ProcessExit{
			Time:       at,
			Process:    proc,
			ExitCode:   int(status>>8) & 0xff,
			Signal:     int(status & 0x7f),
			CoreDumped: status&0x80 != 0,
		}, nil
	case bpf.EventFork:
		if len(b) < forkSize {
			return nil, fmt.Errorf("%w: fork record of %d bytes, want %d", ErrShortRecord, len(b), forkSize)
		}
		return &event.ProcessFork{Time: at, Process: proc}, nil
	case bpf.EventCgroupName:
		if len(b) < cgroupSize {
			return nil, fmt.Errorf("%w: cgroup record of %d bytes, want %d", ErrShortRecord, len(b), cgroupSize)
		}
		level := int(le.Uint32(b[offCgroupLevel:]))
		cn := &CgroupName{Time: at, CgroupID: proc.CgroupID, Level: level}
		for i := range min(level, cgroupLevels) {
			off := offCgroupNames + i*cgroupNameLen
			cn.Names = append(cn.Names, cString(b[off:off+cgroupNameLen]))
		}
		return cn, nil
	default:
		return nil, fmt.Errorf("%w %d", ErrUnknownRecord, typ)
	}
}

// cString returns the bytes before the first NUL.
func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// splitArgv splits the NUL-separated argument block the kernel copied. A
// truncated block ends inside an argument, which is kept as far as it goes.
// The arguments share one allocation.
func splitArgv(b []byte) []string {
	b = bytes.TrimSuffix(b, []byte{0})
	if len(b) == 0 {
		return nil
	}
	return strings.Split(string(b), "\x00")
}
