package gofunc

import (
	"bytes"
	"debug/elf"
	"debug/gosym"
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/arch/x86/x86asm"
)

// Magic numbers that open .gopclntab, by the Go release that introduced the
// format (internal/abi.PCLnTabMagic).
const (
	magicGo12  = 0xfffffffb
	magicGo116 = 0xfffffffa
	magicGo118 = 0xfffffff0
	magicGo120 = 0xfffffff1
)

// Linker-defined symbols that unstripped binaries carry.
const (
	symText     = "runtime.text"
	symPclntab  = "runtime.pclntab"
	symEpclntab = "runtime.epclntab"
)

// pclnTable is a parsed .gopclntab.
type pclnTable struct {
	tab *gosym.Table
	// base is added to the table's entries to make addresses: the start
	// of Go text (runtime.text) for Go 1.18+ tables, 0 before.
	base uint64
	data []byte
	hdr  pclnHeader
	// funcnames holds the names of every function, out-of-line or only
	// inlined (Go 1.16+; nil before), to tell "inlined" from "absent".
	funcnames []byte
}

// pclnHeader is what the reader checks of the .gopclntab header before
// handing the table to debug/gosym, which trusts it.
type pclnHeader struct {
	magic      uint32
	nfunc      uint64
	funcnameOf uint64 // Go 1.16+: offset of the function name table
	cuOf       uint64 // Go 1.16+: offset of the table after it
	functabOf  uint64 // offset of the function table
}

// parsePclnHeader checks that data starts with a .gopclntab header of a known
// format whose function table fits in data, so that debug/gosym, which
// allocates one entry per function before looking further, cannot be made to
// allocate more than data holds.
func parsePclnHeader(data []byte) (pclnHeader, error) {
	var h pclnHeader
	if len(data) < 16 || data[4] != 0 || data[5] != 0 {
		return h, errors.New("header too short or malformed")
	}
	if q := data[6]; q != 1 {
		return h, fmt.Errorf("instruction size quantum %d, want 1 (amd64)", q)
	}
	if p := data[7]; p != 8 {
		return h, fmt.Errorf("pointer size %d, want 8", p)
	}
	le := binary.LittleEndian
	h.magic = le.Uint32(data)
	word := func(i int) uint64 { return le.Uint64(data[8+8*i:]) }
	inData := func(off, n uint64) bool { return off <= uint64(len(data)) && n <= uint64(len(data))-off }
	var entrySize uint64
	switch h.magic {
	case magicGo12:
		h.functabOf, entrySize = 16, 8
	case magicGo116, magicGo118, magicGo120:
		// Go 1.18 added textStart after nfiles; the other words moved down.
		first := 2
		if h.magic != magicGo116 {
			first = 3
		}
		if len(data) < 8+8*(first+5) {
			return h, errors.New("header too short")
		}
		h.funcnameOf, h.cuOf, h.functabOf = word(first), word(first+1), word(first+4)
		entrySize = 8
		if h.magic != magicGo116 {
			entrySize = 4
		}
		if !inData(h.funcnameOf, 0) || h.cuOf < h.funcnameOf || !inData(h.cuOf, 0) {
			return h, errors.New("function name table out of bounds")
		}
	default:
		return h, fmt.Errorf("unknown magic %#x", h.magic)
	}
	h.nfunc = word(0)
	// nfunc+1 entries of two fields each.
	if h.nfunc == 0 || h.nfunc > uint64(len(data))/(2*entrySize) || !inData(h.functabOf, (2*h.nfunc+1)*entrySize) {
		return h, fmt.Errorf("function table of %d entries out of bounds", h.nfunc)
	}
	return h, nil
}

// pclntab returns the parsed .gopclntab, reading it on first use; sym holds
// the symbol table entries the caller already looked up (for the runtime's
// linker-defined symbols). The caller holds b.mu.
func (b *Binary) pclntab(sym map[string]elf.Symbol) (*pclnTable, error) {
	if b.pcln != nil || b.pclErr != nil {
		return b.pcln, b.pclErr
	}
	b.pcln, b.pclErr = b.readPclntab(sym)
	return b.pcln, b.pclErr
}

func (b *Binary) readPclntab(sym map[string]elf.Symbol) (*pclnTable, error) {
	addr, data, err := b.findPclntab(sym)
	if err != nil {
		return nil, err
	}
	h, err := parsePclnHeader(data)
	if err != nil {
		return nil, fmt.Errorf("reading .gopclntab: %w", err)
	}
	// Go 1.18+ entries are offsets from the start of Go text, found below
	// (a table parsed with text 0 holds the offsets).
	tab, err := gosym.NewTable(nil, gosym.NewLineTable(data, 0))
	if err != nil {
		return nil, fmt.Errorf("reading .gopclntab: %w", err)
	}
	if len(tab.Funcs) == 0 {
		// debug/gosym recovers from malformed tables by reading nothing.
		return nil, errors.New("reading .gopclntab: malformed function table")
	}
	base, err := b.textStart(sym, addr, h, tab)
	if err != nil {
		return nil, fmt.Errorf("finding the start of Go text: %w", err)
	}
	t := &pclnTable{tab: tab, base: base, data: data, hdr: h}
	if h.magic != magicGo12 {
		t.funcnames = data[h.funcnameOf:h.cuOf]
	}
	return t, nil
}

// findPclntab returns the virtual address and the bytes of .gopclntab: the
// section of that name, which Go linkers write for internally and externally
// linked, PIE and non-PIE binaries alike, else the range between the
// runtime.pclntab and runtime.epclntab symbols.
func (b *Binary) findPclntab(sym map[string]elf.Symbol) (uint64, []byte, error) {
	if s := b.elf.Section(".gopclntab"); s != nil && s.Type == elf.SHT_PROGBITS {
		if s.Flags&elf.SHF_COMPRESSED != 0 || s.Size > maxTableSize {
			return 0, nil, fmt.Errorf("reading .gopclntab: compressed or too large (%d bytes)", s.Size)
		}
		data, err := b.readAt(s.Offset, s.Size)
		if err != nil {
			return 0, nil, fmt.Errorf("reading .gopclntab: %w", err)
		}
		return s.Addr, data, nil
	}
	start, ok1 := sym[symPclntab]
	end, ok2 := sym[symEpclntab]
	if !ok1 || !ok2 {
		return 0, nil, ErrNoPclntab
	}
	if end.Value <= start.Value || end.Value-start.Value > maxTableSize {
		return 0, nil, fmt.Errorf("reading .gopclntab: %s..%s is not a valid range", symPclntab, symEpclntab)
	}
	data, err := b.readVirt(start.Value, end.Value-start.Value, false)
	if err != nil {
		return 0, nil, fmt.Errorf("reading .gopclntab: %w", err)
	}
	return start.Value, data, nil
}

// The Go runtime's entry points on linux/amd64: an internally linked
// executable starts at rt0, whose only instruction jumps to rt0Arch.
const (
	rt0     = "_rt0_amd64_linux"
	rt0Arch = "_rt0_amd64"
)

// textStart returns the address Go 1.18+ function entries are offsets from:
// runtime.text. The header's own copy is not usable (Go 1.26 leaves it 0,
// and in PIE binaries it is an unapplied relocation), and .text does not
// always start there: external linkers put C code first. So it comes from
// the symbol table, else from the runtime's module data, else from the ELF
// entry point when that is the Go runtime's. A wrong guess would put
// uprobes in the middle of instructions, so without any of these it fails.
func (b *Binary) textStart(sym map[string]elf.Symbol, pclnAddr uint64, h pclnHeader, tab *gosym.Table) (uint64, error) {
	if h.magic == magicGo12 || h.magic == magicGo116 {
		return 0, nil // entries are absolute addresses
	}
	if s, ok := sym[symText]; ok {
		return s.Value, nil
	}
	text, err := b.moduleText(pclnAddr, pclnAddr+h.funcnameOf)
	if err == nil {
		return text, nil
	}
	if text, ok := b.entryText(tab); ok {
		return text, nil
	}
	return 0, fmt.Errorf("%w, and the ELF entry point is not %s", err, rt0)
}

// entryText derives the start of Go text from the ELF entry point, taking it
// to be rt0, and checks that: the instruction there must jump to rt0Arch.
// tab holds entries relative to the start of Go text.
func (b *Binary) entryText(tab *gosym.Table) (uint64, bool) {
	start, arch := tab.LookupFunc(rt0), tab.LookupFunc(rt0Arch)
	if start == nil || arch == nil || b.elf.Entry < start.Entry {
		return 0, false
	}
	text := b.elf.Entry - start.Entry
	code, err := b.readVirt(b.elf.Entry, min(16, start.End-start.Entry), true)
	if err != nil {
		return 0, false
	}
	inst, err := x86asm.Decode(code, 64)
	if err != nil || inst.Op != x86asm.JMP {
		return 0, false
	}
	rel, ok := inst.Args[0].(x86asm.Rel)
	if !ok || b.elf.Entry+uint64(int64(inst.Len)+int64(rel)) != text+arch.Entry {
		return 0, false
	}
	return text, true
}

// moduledata word indexes (runtime.moduledata, unchanged from Go 1.16 to
// 1.26): pcHeader, then the funcnametab slice's pointer, ..., minpc, maxpc,
// text.
const (
	mdPcHeader    = 0
	mdFuncnametab = 1
	mdMinPC       = 20
	mdMaxPC       = 21
	mdText        = 22
	mdWords       = 23
)

// moduleText finds runtime.firstmoduledata, the runtime's description of the
// program, and returns its text field. The module data is the only place
// that points at the pclntab header: its first word holds pclnAddr and its
// second the function name table's address. Go 1.26 links it into its own
// .go.module section; older releases into a writable data segment. The
// file holds link-time addresses there even for PIE binaries.
func (b *Binary) moduleText(pclnAddr, funcnameAddr uint64) (uint64, error) {
	check := func(vaddr uint64) (uint64, bool) {
		rec, err := b.readVirt(vaddr, 8*mdWords, false)
		if err != nil {
			return 0, false
		}
		w := func(i int) uint64 { return binary.LittleEndian.Uint64(rec[8*i:]) }
		if w(mdPcHeader) != pclnAddr || w(mdFuncnametab) != funcnameAddr {
			return 0, false
		}
		text, minPC, maxPC := w(mdText), w(mdMinPC), w(mdMaxPC)
		if text > minPC || minPC >= maxPC {
			return 0, false
		}
		if _, err := b.segment(text, 1, true); err != nil {
			return 0, false
		}
		return text, true
	}
	if s := b.elf.Section(".go.module"); s != nil && s.Type == elf.SHT_PROGBITS {
		if text, ok := check(s.Addr); ok {
			return text, nil
		}
	}
	for _, p := range b.elf.Progs {
		if p.Type != elf.PT_LOAD || p.Flags&elf.PF_W == 0 {
			continue
		}
		if text, ok := b.scanSegment(p, pclnAddr, check); ok {
			return text, nil
		}
	}
	return 0, errors.New("no runtime module data points at .gopclntab")
}

// scanSegment reads the file-backed part of p in chunks and calls check at
// every 8-byte aligned word equal to want, until check accepts one.
func (b *Binary) scanSegment(p *elf.Prog, want uint64, check func(vaddr uint64) (uint64, bool)) (uint64, bool) {
	const chunk = 1 << 20
	start := (p.Vaddr + 7) &^ 7
	end := p.Vaddr + p.Filesz
	for at := start; at+8 <= end; at += chunk {
		n := min(uint64(chunk), end-at) &^ 7
		buf, err := b.readAt(at-p.Vaddr+p.Off, n)
		if err != nil {
			return 0, false
		}
		for i := 0; i+8 <= len(buf); i += 8 {
			if binary.LittleEndian.Uint64(buf[i:]) != want {
				continue
			}
			if v, ok := check(at + uint64(i)); ok {
				return v, true
			}
		}
	}
	return 0, false
}

// inlinedOnly reports whether name is in the function name table although no
// out-of-line copy of the function exists: every call to it was inlined (or
// the copy was dropped as dead code).
func (t *pclnTable) inlinedOnly(name string) bool {
	if t.funcnames == nil || name == "" {
		return false
	}
	// Names are NUL-terminated and follow each other.
	entry := append([]byte(name), 0)
	return bytes.HasPrefix(t.funcnames, entry) || bytes.Contains(t.funcnames, append([]byte{0}, entry...))
}

// funcFlagAsm is internal/abi.FuncFlagAsm: the function is written in
// assembly. The flag byte sits at offset 41 of runtime._func since Go 1.18.
const (
	funcFlagAsm = 1 << 2
	funcFlagOff = 41
)

// isAsm reports whether the i-th function of the table is written in
// assembly; false when the table's format does not say.
func (t *pclnTable) isAsm(i int) bool {
	if t.hdr.magic != magicGo118 && t.hdr.magic != magicGo120 {
		return false
	}
	le := binary.LittleEndian
	at := t.hdr.functabOf + 8*uint64(i) + 4 // i-th (entryoff, funcoff)
	if i < 0 || uint64(i) >= t.hdr.nfunc || at+4 > uint64(len(t.data)) {
		return false
	}
	rec := t.hdr.functabOf + uint64(le.Uint32(t.data[at:]))
	if rec+funcFlagOff >= uint64(len(t.data)) {
		return false
	}
	return t.data[rec+funcFlagOff]&funcFlagAsm != 0
}
