package gofunc

import (
	"bytes"
	"debug/buildinfo"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sync"
)

// Limits that keep a malformed or hostile file from making the reader
// allocate much. A file's size is no bound: a sparse file of any size costs
// its maker nothing. Every size a header declares is checked against them
// and against the file before anything is allocated for it.
const (
	// maxTableSize bounds .gopclntab, .symtab and .strtab, each read
	// whole. The kubelet v1.37.2's .gopclntab is 34.4 MiB, the largest
	// of Kubernetes v1.37.2's binaries' (kube-apiserver) 44.3 MiB; the
	// limit leaves room for growth and stays under half the DaemonSet's
	// 256 MiB memory limit.
	maxTableSize = 128 << 20
	// maxFuncSize bounds the code read of one function (the kubelet's
	// largest is well under 1 MiB).
	maxFuncSize = 16 << 20
	// maxSameName bounds the functions of one name looked at; a real
	// binary has at most two (see abiInternal).
	maxSameName = 4
	// maxProgs and maxSections bound the ELF program and section headers
	// (a Go executable has about 10 and 25-40), maxSectionNames the bytes
	// of their names, which debug/elf copies one string per section.
	maxProgs        = 64
	maxSections     = 1024
	maxSectionNames = 1 << 20
	// maxBuildInfoRead bounds what reading the build info reads in all
	// (its ELF headers, .go.buildinfo and the module list, tens of KiB).
	maxBuildInfoRead = 16 << 20
)

// Binary is an opened Go executable. Its methods are safe for concurrent use.
type Binary struct {
	r    io.ReaderAt
	size int64
	file *os.File // nil when the reader was not opened by Open
	elf  *elf.File
	arch *arch

	mu     sync.Mutex
	closed bool
	pcln   *pclnTable // parsed on the first lookup that needs it
	pclErr error      // why pcln could not be parsed
}

// Open opens the ELF executable at path, for example /proc/<pid>/exe of a
// running process, and reads its headers. It fails with ErrUnsupportedArch
// for anything but a linux/amd64 or linux/arm64 ELF file. Close releases
// the file.
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

// NewBinary reads the headers of the ELF executable r holds, size bytes, as
// Open does of a file, for a caller that keeps the file open itself (to
// fstat the very file it reads). Close does not close r.
func NewBinary(r io.ReaderAt, size int64) (*Binary, error) {
	return newBinary(r, size)
}

// newBinary reads the ELF headers from r, which holds size bytes.
func newBinary(r io.ReaderAt, size int64) (*Binary, error) {
	if err := checkELFHeaders(r, size); err != nil {
		return nil, err
	}
	ef, err := elf.NewFile(r)
	if err != nil {
		return nil, fmt.Errorf("parsing ELF headers: %w", err)
	}
	a, err := archOf(ef.Class, ef.Data, ef.Machine)
	if err != nil {
		return nil, err
	}
	return &Binary{r: r, size: size, elf: ef, arch: a}, nil
}

// Arch returns the executable's architecture as a GOARCH, "amd64" or
// "arm64": what decides the registers its Go functions take their
// arguments in.
func (b *Binary) Arch() string { return b.arch.goarch }

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
	bi, err := buildinfo.Read(&budgetReader{r: b.r, left: maxBuildInfoRead})
	if err != nil {
		return nil, fmt.Errorf("reading build info: %w", err)
	}
	return bi, nil
}

// budgetReader reads from r until it has read left bytes in all, then
// fails: debug/buildinfo trusts the lengths it finds, reading at most 10 MiB
// before it finds out a read fails.
type budgetReader struct {
	r    io.ReaderAt
	left int64
}

func (b *budgetReader) ReadAt(p []byte, off int64) (int, error) {
	if int64(len(p)) > b.left {
		return 0, fmt.Errorf("%w: more than %d MiB read", ErrTooLarge, maxBuildInfoRead>>20)
	}
	b.left -= int64(len(p))
	return b.r.ReadAt(p, off)
}

// checkELFHeaders checks, before debug/elf reads them, that the ELF header
// describes a 64-bit little-endian file of a supported architecture whose
// program and section headers and section names fit in the file and in the
// limits: debug/elf allocates a Section and a name per declared section
// header.
func checkELFHeaders(r io.ReaderAt, size int64) error {
	var h [64]byte
	if _, err := r.ReadAt(h[:], 0); err != nil {
		return fmt.Errorf("parsing ELF headers: %w", err)
	}
	if string(h[:4]) != elf.ELFMAG {
		return errors.New("parsing ELF headers: bad magic number")
	}
	le := binary.LittleEndian
	class, data, machine := elf.Class(h[elf.EI_CLASS]), elf.Data(h[elf.EI_DATA]), elf.Machine(le.Uint16(h[18:]))
	if data == elf.ELFDATA2MSB {
		machine = elf.Machine(binary.BigEndian.Uint16(h[18:]))
	}
	if _, err := archOf(class, data, machine); err != nil {
		return err
	}
	phoff, shoff := le.Uint64(h[32:]), le.Uint64(h[40:])
	phentsize, phnum := uint64(le.Uint16(h[54:])), uint64(le.Uint16(h[56:]))
	shentsize, shnum, shstrndx := uint64(le.Uint16(h[58:])), uint64(le.Uint16(h[60:])), uint64(le.Uint16(h[62:]))
	inFile := func(off, n uint64) bool { return off <= uint64(size) && n <= uint64(size)-off }
	switch {
	case phnum > maxProgs:
		return fmt.Errorf("parsing ELF headers: %w: %d program headers, more than %d", ErrTooLarge, phnum, maxProgs)
	case phnum > 0 && (phentsize != 56 || !inFile(phoff, phnum*56)):
		return errors.New("parsing ELF headers: program headers out of the file")
	case shnum == 0 && shoff != 0:
		// The real count would be in section 0 (more than 65,279).
		return fmt.Errorf("parsing ELF headers: %w: extended section numbering", ErrTooLarge)
	case shnum > maxSections:
		return fmt.Errorf("parsing ELF headers: %w: %d section headers, more than %d", ErrTooLarge, shnum, maxSections)
	case shnum == 0:
		return nil
	case shentsize != 64 || !inFile(shoff, shnum*64):
		return errors.New("parsing ELF headers: section headers out of the file")
	case shstrndx >= shnum:
		return nil // debug/elf refuses it
	}
	shdrs := make([]byte, shnum*64)
	if _, err := r.ReadAt(shdrs, int64(shoff)); err != nil {
		return fmt.Errorf("parsing ELF headers: %w", err)
	}
	strs := shdrs[shstrndx*64:]
	strOff, strSize := le.Uint64(strs[24:]), le.Uint64(strs[32:])
	if strSize > maxSectionNames {
		// Even of type NOBITS, which debug/elf reads as that many zeros.
		return fmt.Errorf("parsing ELF headers: %w: section names of %d bytes, more than %d", ErrTooLarge, strSize, maxSectionNames)
	}
	if elf.SectionType(le.Uint32(strs[4:])) == elf.SHT_NOBITS {
		return nil // no names: all empty
	}
	if !inFile(strOff, strSize) {
		return errors.New("parsing ELF headers: section names out of the file")
	}
	names := make([]byte, strSize)
	if _, err := r.ReadAt(names, int64(strOff)); err != nil {
		return fmt.Errorf("parsing ELF headers: %w", err)
	}
	total := uint64(0)
	for i := range shnum {
		off := uint64(le.Uint32(shdrs[i*64:]))
		if off >= strSize {
			continue
		}
		n := bytes.IndexByte(names[off:], 0)
		if n < 0 {
			n = len(names) - int(off)
		}
		if total += uint64(n); total > maxSectionNames {
			return fmt.Errorf("parsing ELF headers: %w: section names of more than %d bytes in all", ErrTooLarge, maxSectionNames)
		}
	}
	return nil
}

// readAt reads n bytes at file offset off, refusing ranges past the end of
// the file before allocating.
func (b *Binary) readAt(off, n uint64) ([]byte, error) {
	if off > uint64(b.size) || n > uint64(b.size)-off {
		return nil, fmt.Errorf("%d bytes at file offset %#x run past the end of the file (%d bytes)", n, off, b.size)
	}
	buf := make([]byte, n)
	if err := b.readInto(buf, off); err != nil {
		return nil, err
	}
	return buf, nil
}

// readInto fills buf from file offset off, refusing ranges past the end of
// the file.
func (b *Binary) readInto(buf []byte, off uint64) error {
	n := uint64(len(buf))
	if off > uint64(b.size) || n > uint64(b.size)-off {
		return fmt.Errorf("%d bytes at file offset %#x run past the end of the file (%d bytes)", n, off, b.size)
	}
	_, err := b.r.ReadAt(buf, int64(off))
	return err
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
