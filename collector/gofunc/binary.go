package gofunc

import (
	"debug/buildinfo"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sync"
)

// Limits that keep a malformed or hostile file from making the reader
// allocate much: real values are far below them (the kubelet's .gopclntab is
// 36 MiB, its largest function well under 1 MiB).
const (
	maxTableSize = 1 << 30
	maxFuncSize  = 16 << 20
)

// Binary is an opened Go executable. Its methods are safe for concurrent use.
type Binary struct {
	r    io.ReaderAt
	size int64
	file *os.File // nil when the reader was not opened by Open
	elf  *elf.File

	mu     sync.Mutex
	closed bool
	pcln   *pclnTable // parsed on the first lookup that needs it
	pclErr error      // why pcln could not be parsed
}

// Open opens the ELF executable at path, for example /proc/<pid>/exe of a
// running process, and reads its headers. It fails with ErrUnsupportedArch
// for anything but a 64-bit x86 ELF file. Close releases the file.
func Open(path string) (*Binary, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	b, err := newBinary(f, st.Size())
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	b.file = f
	return b, nil
}

// newBinary reads the ELF headers from r, which holds size bytes.
func newBinary(r io.ReaderAt, size int64) (*Binary, error) {
	ef, err := elf.NewFile(r)
	if err != nil {
		return nil, fmt.Errorf("parsing ELF headers: %w", err)
	}
	if ef.Class != elf.ELFCLASS64 || ef.Machine != elf.EM_X86_64 || ef.Data != elf.ELFDATA2LSB {
		return nil, fmt.Errorf("%w: %v %v (only linux/amd64 is supported)", ErrUnsupportedArch, ef.Class, ef.Machine)
	}
	return &Binary{r: r, size: size, elf: ef}, nil
}

// Close releases the file and everything read from it. Lookups after Close
// fail.
func (b *Binary) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	b.pcln = nil
	if b.file != nil {
		return b.file.Close()
	}
	return nil
}

// BuildInfo returns what the Go toolchain recorded in the binary: the Go
// version, the main module and the versions of its dependencies (with their
// replacements, as k8s.io/cri-client is replaced in kubelet builds).
func (b *Binary) BuildInfo() (*debug.BuildInfo, error) {
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("reading build info: %w", os.ErrClosed)
	}
	bi, err := buildinfo.Read(b.r)
	if err != nil {
		return nil, fmt.Errorf("reading build info: %w", err)
	}
	return bi, nil
}

// readAt reads n bytes at file offset off, refusing ranges past the end of
// the file before allocating.
func (b *Binary) readAt(off, n uint64) ([]byte, error) {
	if off > uint64(b.size) || n > uint64(b.size)-off {
		return nil, fmt.Errorf("%d bytes at file offset %#x run past the end of the file (%d bytes)", n, off, b.size)
	}
	buf := make([]byte, n)
	if _, err := b.r.ReadAt(buf, int64(off)); err != nil {
		return nil, err
	}
	return buf, nil
}

// segment returns the PT_LOAD segment whose file-backed part holds the n
// bytes at vaddr; with exec, only an executable one.
func (b *Binary) segment(vaddr, n uint64, exec bool) (*elf.Prog, error) {
	for _, p := range b.elf.Progs {
		if p.Type != elf.PT_LOAD || (exec && p.Flags&elf.PF_X == 0) {
			continue
		}
		if vaddr >= p.Vaddr && vaddr-p.Vaddr < p.Filesz && n <= p.Filesz-(vaddr-p.Vaddr) {
			return p, nil
		}
	}
	if exec {
		return nil, fmt.Errorf("%#x+%d: %w", vaddr, n, ErrUnmapped)
	}
	return nil, fmt.Errorf("%#x+%d: not in a PT_LOAD segment", vaddr, n)
}

// FileOffset converts a virtual address in an executable PT_LOAD segment to
// the file offset uprobes take. It fails with ErrUnmapped for any other
// address.
func (b *Binary) FileOffset(vaddr uint64) (uint64, error) {
	p, err := b.segment(vaddr, 1, true)
	if err != nil {
		return 0, err
	}
	return vaddr - p.Vaddr + p.Off, nil
}

// readVirt reads n bytes at virtual address vaddr from the PT_LOAD segment
// that maps them.
func (b *Binary) readVirt(vaddr, n uint64, exec bool) ([]byte, error) {
	p, err := b.segment(vaddr, n, exec)
	if err != nil {
		return nil, err
	}
	return b.readAt(vaddr-p.Vaddr+p.Off, n)
}
