package collector

import (
	"encoding/binary"
	"fmt"
	"time"
	"unsafe"

	"github.com/readyline/readyline/bpf"
)

// Layout of a goprobe record, from the bpf2go structs.
var (
	goCallSize     = int(unsafe.Sizeof(bpf.GoprobeGoCallEvent{}))
	offGoType      = int(unsafe.Offsetof(bpf.GoprobeGoCallEvent{}.Type))
	offGoPid       = int(unsafe.Offsetof(bpf.GoprobeGoCallEvent{}.Pid))
	offGoBootNs    = int(unsafe.Offsetof(bpf.GoprobeGoCallEvent{}.BootNs))
	offGoTgid      = int(unsafe.Offsetof(bpf.GoprobeGoCallEvent{}.Tgid))
	offGoFunc      = int(unsafe.Offsetof(bpf.GoprobeGoCallEvent{}.Func))
	offGoGoroutine = int(unsafe.Offsetof(bpf.GoprobeGoCallEvent{}.Goroutine))
	offGoHasEntry  = int(unsafe.Offsetof(bpf.GoprobeGoCallEvent{}.HasEntry))
	offGoErr       = int(unsafe.Offsetof(bpf.GoprobeGoCallEvent{}.Err))
	offGoRetLen    = int(unsafe.Offsetof(bpf.GoprobeGoCallEvent{}.RetLen))
	offGoRet       = int(unsafe.Offsetof(bpf.GoprobeGoCallEvent{}.Ret))
	goStrCap       = len(bpf.GoprobeGoCallEvent{}.Ret)
	offGoArgs      = int(unsafe.Offsetof(bpf.GoprobeGoCallEvent{}.Args))
	offArgStart    = int(unsafe.Offsetof(bpf.GoprobeGoCallArgs{}.StartNs))
	offArgEntryTid = int(unsafe.Offsetof(bpf.GoprobeGoCallArgs{}.EntryTid))
	offArgStrLen   = int(unsafe.Offsetof(bpf.GoprobeGoCallArgs{}.StrLen))
	offArgDerefLen = int(unsafe.Offsetof(bpf.GoprobeGoCallArgs{}.DerefLen))
	offArgCmdN     = int(unsafe.Offsetof(bpf.GoprobeGoCallArgs{}.CmdN))
	offArgStr      = int(unsafe.Offsetof(bpf.GoprobeGoCallArgs{}.Str))
	offArgDeref    = int(unsafe.Offsetof(bpf.GoprobeGoCallArgs{}.Deref))
	offArgCmd      = int(unsafe.Offsetof(bpf.GoprobeGoCallArgs{}.Cmd))
	goArgsSize     = int(unsafe.Sizeof(bpf.GoprobeGoCallArgs{}))
	goCmdArgs      = len(bpf.GoprobeGoCallArgs{}.Cmd)
	goCmdArgCap    = len(bpf.GoprobeGoCallArgs{}.Cmd[0])
)

// GoCallRecord is one call of a probed Go function, decoded.
type GoCallRecord struct {
	// Func is the function id the probes were attached with.
	Func      uint32
	TGID, PID uint32
	// EntryTID is the thread of the entry; PID the thread of the return.
	EntryTID  uint32
	Goroutine uint64
	// Start is zero when the entry was not seen.
	Start, End time.Time
	// Err: a non-nil error was returned.
	Err bool
	// Str, Deref, Ret: the function's string argument, the strings read
	// through its pointer arguments, and its string result, as its spec
	// said; cut at the probe's buffer size (Truncated).
	Str       string
	Deref     [2]string
	Ret       string
	Cmd       []string
	Truncated bool
}

// DecodeGoCall decodes one goprobe ring-buffer record. It never panics,
// whatever the input.
func DecodeGoCall(b []byte, clock BootClock) (GoCallRecord, error) {
	var r GoCallRecord
	if len(b) < goCallSize {
		return r, fmt.Errorf("%w: go call record of %d bytes, want %d", ErrShortRecord, len(b), goCallSize)
	}
	le := binary.LittleEndian
	if typ := le.Uint32(b[offGoType:]); typ != bpf.EventGoCall {
		return r, fmt.Errorf("%w %d", ErrUnknownRecord, typ)
	}
	r.Func = le.Uint32(b[offGoFunc:])
	r.TGID, r.PID = le.Uint32(b[offGoTgid:]), le.Uint32(b[offGoPid:])
	r.Goroutine = le.Uint64(b[offGoGoroutine:])
	r.End = clock.Time(le.Uint64(b[offGoBootNs:]))
	r.Err = b[offGoErr] != 0
	r.Ret = goString(b, offGoRet, offGoRetLen, &r.Truncated)
	if b[offGoHasEntry] == 0 {
		return r, nil
	}
	decodeGoArgs(b[offGoArgs:], &r, clock)
	return r, nil
}

// DecodeGoCallEntry decodes a call in flight: its key and its arguments as
// the entry probe saved them (the goprobe's calls map), End zero. It never
// panics, whatever the input.
func DecodeGoCallEntry(key bpf.GoprobeCallKey, args []byte, clock BootClock) (GoCallRecord, error) {
	r := GoCallRecord{Func: key.Func, TGID: key.Tgid, Goroutine: key.Goroutine}
	if len(args) < goArgsSize {
		return r, fmt.Errorf("%w: go call arguments of %d bytes, want %d", ErrShortRecord, len(args), goArgsSize)
	}
	decodeGoArgs(args, &r, clock)
	r.PID = r.EntryTID
	return r, nil
}

// decodeGoArgs fills r from a goprobe go_call_args (b is at least
// goArgsSize bytes).
func decodeGoArgs(b []byte, r *GoCallRecord, clock BootClock) {
	le := binary.LittleEndian
	r.Start = clock.Time(le.Uint64(b[offArgStart:]))
	r.EntryTID = le.Uint32(b[offArgEntryTid:])
	r.Str = goString(b, offArgStr, offArgStrLen, &r.Truncated)
	for i := range r.Deref {
		r.Deref[i] = goString(b, offArgDeref+i*goStrCap, offArgDerefLen+4*i, &r.Truncated)
	}
	n := int(le.Uint32(b[offArgCmdN:]))
	if n > goCmdArgs {
		n, r.Truncated = goCmdArgs, true
	}
	for i := range n {
		off := offArgCmd + i*goCmdArgCap
		arg := cString(b[off : off+goCmdArgCap])
		if len(arg) == goCmdArgCap-1 {
			r.Truncated = true // as long as the buffer: maybe cut
		}
		r.Cmd = append(r.Cmd, arg)
	}
}

// goString reads a string of a goprobe record: its bytes at off, its full
// Go length at lenOff (longer than the buffer: cut, and *truncated set).
func goString(b []byte, off, lenOff int, truncated *bool) string {
	n := int(binary.LittleEndian.Uint32(b[lenOff:]))
	if n > goStrCap-1 {
		n, *truncated = goStrCap-1, true
	}
	return cString(b[off : off+n])
}
