// Package gofunc finds where to put uprobes on Go functions in a linux/amd64
// or linux/arm64 executable: the file offset of a function's entry and the
// offsets of all its RET instructions, for return probes that replace
// uretprobes (which corrupt Go stacks).
//
// Functions are located by their full Go symbol name, such as
// "k8s.io/cri-client/pkg.(*remoteRuntimeService).RunPodSandbox", through the
// ELF symbol table when the binary has one and through the Go runtime's own
// function table, .gopclntab, when it is stripped (release kubelets are built
// with -ldflags="-s -w"). PIE and non-PIE binaries of Go 1.18 to 1.26,
// linked internally or externally (GNU ld, gold, or lld, which leaves no
// .gopclntab section), are supported; the older Go 1.2 and 1.16 pclntab
// formats are read too (checked against debug/gosym on synthetic tables).
// The ELF header says the architecture, which decides little: the runtime's
// entry points and how the few instructions the reader looks at are decoded
// (arch.go). The tests cross-build linux/arm64 binaries with internal
// linking, the only kind a machine without an arm64 C toolchain can link.
//
// The package reads only what it needs, never the whole file: the ELF
// headers, the symbol table if there is one, .gopclntab, the bodies of the
// functions looked up, .go.buildinfo and, for stripped binaries, the
// runtime's module data. For the kubelet v1.37.2 (92 MB) that is 34.4 MiB of
// .gopclntab, which a lookup keeps in memory until Close, and little else
// (36 MB allocated in all): function tables are read in place, with nothing
// allocated per function or symbol. The file is not trusted: every size
// its headers declare is checked against the file and against fixed limits
// (128 MiB for each table; ErrTooLarge beyond) before anything is allocated
// for it, so that a hostile or corrupt executable, even a sparse file of any
// size, costs a few times its real content at most. It imports no eBPF
// library: a caller passes Func.EntryOffset and Func.RetOffsets to its
// uprobe attach calls.
package gofunc

import "errors"

var (
	// ErrNotFound means the binary has no function of that name: it does
	// not exist in this build, or the compiler inlined every call to it.
	ErrNotFound = errors.New("function not found")

	// ErrUnsupportedArch means the executable is not a 64-bit
	// little-endian ELF file for x86-64 (amd64) or AArch64 (arm64).
	ErrUnsupportedArch = errors.New("unsupported architecture")

	// ErrNoPclntab means the executable has no Go function table
	// (.gopclntab): it is not a Go program, or the table was removed.
	ErrNoPclntab = errors.New("no Go function table (.gopclntab)")

	// ErrNoReturn means a function has no RET instruction, so no return
	// probe can be placed: it always panics, exits or jumps elsewhere.
	ErrNoReturn = errors.New("function has no RET instruction")

	// ErrUndecodable means some of a function's bytes did not decode as
	// instructions (on amd64; on arm64, where every instruction is a
	// 4-byte word, a function whose size is not a whole number of words).
	// Its RET offsets could then fall inside another instruction, and a
	// uprobe there would corrupt the traced process, so the function is
	// not returned.
	ErrUndecodable = errors.New("function has undecodable bytes")

	// ErrUnmapped means an address lies in no executable PT_LOAD segment of
	// the file, so it has no file offset a uprobe could use.
	ErrUnmapped = errors.New("address not in an executable PT_LOAD segment")

	// ErrTooLarge means the file declares a table or header larger than
	// the reader's limits (.gopclntab, .symtab and .strtab: 128 MiB each),
	// which no real executable comes near: it was refused before anything
	// was allocated for it.
	ErrTooLarge = errors.New("larger than the reader's limit")
)

// Func is a function located in an executable, ready for uprobes.
type Func struct {
	// Name is the full Go symbol name, as looked up.
	Name string
	// Entry is the virtual address of the first instruction, as linked
	// (not relocated: for a PIE binary, the address before ASLR).
	Entry uint64
	// End is the virtual address just past the last instruction; the
	// alignment padding that follows a function is not part of it.
	End uint64
	// EntryOffset is the file offset of Entry: what uprobes (cilium/ebpf's
	// link.UprobeOptions.Address) take.
	EntryOffset uint64
	// RetOffsets are the offsets of every RET instruction from Entry, in
	// increasing order; never empty. A return probe goes at
	// EntryOffset+RetOffsets[i].
	RetOffsets []uint64
	// Source names the table the function was found in: ".symtab" or
	// ".gopclntab".
	Source string
}

// Size returns the function's length in bytes, padding excluded.
func (f *Func) Size() uint64 { return f.End - f.Entry }

// RetFileOffsets returns the file offset of every RET instruction: the
// addresses a uprobe-multi link takes for the function's return probes.
func (f *Func) RetFileOffsets() []uint64 {
	out := make([]uint64, len(f.RetOffsets))
	for i, off := range f.RetOffsets {
		out[i] = f.EntryOffset + off
	}
	return out
}

// LookupError is the error Lookup returns for one name that could not be
// used. errors.Is sees through it to the cause, such as ErrNotFound.
type LookupError struct {
	Name string
	Err  error
}

func (e *LookupError) Error() string { return e.Name + ": " + e.Err.Error() }

func (e *LookupError) Unwrap() error { return e.Err }
