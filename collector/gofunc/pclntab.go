package gofunc

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
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

// pclnTable is a .gopclntab, read in place: the function table (functab:
// nfunc entries of an entry address and a function record offset, then the
// end of the last function) and the records' names. Unlike debug/gosym,
// which makes a Func and a Sym of every function (the kubelet's 133,000
// took 47 MB on top of the 36 MB table), it allocates nothing per
// function, whatever the table claims.
type pclnTable struct {
	// base is added to the table's entries to make addresses: the start
	// of Go text (runtime.text) for Go 1.18+ tables, 0 before.
	base uint64
	data []byte
	hdr  pclnHeader
	// funcnames holds the names of every function, out-of-line or only
	// inlined (Go 1.16+; nil before), to tell "inlined" from "absent".
	funcnames []byte
	// names is what a record's name offset counts from: the function name
	// table (Go 1.16+) or the whole table (Go 1.2).
	names []byte
	// field is the size of a functab field: 4 bytes (Go 1.18+) or a
	// pointer.
	field uint64
	// records is what a functab record offset counts from: the function
	// table (Go 1.16+) or the whole table (Go 1.2).
	records uint64
	// nameOff is the offset of the name field in a record: after a
	// 4-byte entry offset (Go 1.18+) or an entry address.
	nameOff uint64
}

// newPclnTable returns the table in data, whose header parsePclnHeader
// accepted, with entries relative to base.
func newPclnTable(data []byte, h pclnHeader, base uint64) *pclnTable {
	t := &pclnTable{base: base, data: data, hdr: h, field: 8, nameOff: 8, records: h.functabOf, names: data}
	switch h.magic {
	case magicGo12:
		t.records = 0
	case magicGo116:
		t.names = data[h.funcnameOf:]
	default:
		t.field, t.nameOff = 4, 4
		t.names = data[h.funcnameOf:]
	}
	if h.magic != magicGo12 {
		t.funcnames = data[h.funcnameOf:h.cuOf]
	}
	return t
}

// nfunc is the number of functions in the table.
func (t *pclnTable) nfunc() int { return int(t.hdr.nfunc) }

// functab returns the j-th field of the function table, which
// parsePclnHeader checked is inside the table (j <= 2*nfunc).
func (t *pclnTable) functab(j int) uint64 {
	at := t.hdr.functabOf + uint64(j)*t.field
	if t.field == 4 {
		return uint64(binary.LittleEndian.Uint32(t.data[at:]))
	}
	return binary.LittleEndian.Uint64(t.data[at:])
}

// entry returns the address of the i-th function; entry(nfunc) is the end
// of the last one.
func (t *pclnTable) entry(i int) uint64 { return t.base + t.functab(2*i) }

// end returns the address after the i-th function, padding included: the
// next one's entry.
func (t *pclnTable) end(i int) uint64 { return t.entry(i + 1) }

// name returns the name of the i-th function, nil when its record or name
// is not inside the table. It does not allocate.
func (t *pclnTable) name(i int) []byte {
	rec := t.records + t.functab(2*i+1)
	if rec < t.records || rec+t.nameOff+4 < rec || rec+t.nameOff+4 > uint64(len(t.data)) {
		return nil
	}
	off := uint64(binary.LittleEndian.Uint32(t.data[rec+t.nameOff:]))
	if off >= uint64(len(t.names)) {
		return nil
	}
	n := bytes.IndexByte(t.names[off:], 0)
	if n < 0 {
		return nil
	}
	return t.names[off : off+uint64(n)]
}

// find returns the index of the first function named name, -1 if none.
func (t *pclnTable) find(name string) int {
	for i := range t.nfunc() {
		if string(t.name(i)) == name {
			return i
		}
	}
	return -1
}

// pclnHeader is what the reader checks of the .gopclntab header before
// handing the table to debug/gosym, which trusts it.
type pclnHeader struct {
	magic uint32
	// quantum is the instruction size quantum, which says the
	// architecture: 1 for amd64, 4 for arm64.
	quantum    byte
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
	if q := data[6]; !slices.ContainsFunc(archs, func(a *arch) bool { return a.quantum == q }) {
		return h, fmt.Errorf("instruction size quantum %d, of no supported architecture", q)
	}
	if p := data[7]; p != 8 {
		return h, fmt.Errorf("pointer size %d, want 8", p)
	}
	le := binary.LittleEndian
	h.magic, h.quantum = le.Uint32(data), data[6]
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
	addr, data, md, err := b.findPclntab(sym)
	if err != nil {
		return nil, err
	}
	h, err := parsePclnHeader(data)
	if err != nil {
		return nil, fmt.Errorf("reading .gopclntab: %w", err)
	}
	if h.quantum != b.arch.quantum {
		return nil, fmt.Errorf("reading .gopclntab: instruction size quantum %d, want %d (%s)", h.quantum, b.arch.quantum, b.arch.goarch)
	}
	// Go 1.18+ entries are offsets from the start of Go text, found below
	// (a table read with base 0 gives the offsets).
	t := newPclnTable(data, h, 0)
	base, err := b.textStart(sym, addr, h, md, t)
	if err != nil {
		return nil, fmt.Errorf("finding the start of Go text: %w", err)
	}
	t.base = base
	return t, nil
}

// findPclntab returns the virtual address and the bytes of .gopclntab: the
// section of that name, which Go linkers write for internally linked
// binaries and GNU ld keeps; else the range between the runtime.pclntab and
// runtime.epclntab symbols; else, for a stripped binary whose linker merged
// the table into another section (lld puts it in .data.rel.ro), the range
// the runtime's module data describes, which it also returns.
func (b *Binary) findPclntab(sym map[string]elf.Symbol) (uint64, []byte, *moduleData, error) {
	if s := b.elf.Section(".gopclntab"); s != nil && s.Type == elf.SHT_PROGBITS {
		if s.Flags&elf.SHF_COMPRESSED != 0 {
			return 0, nil, nil, errors.New("reading .gopclntab: compressed")
		}
		if err := checkPclntabSize(s.Size); err != nil {
			return 0, nil, nil, err
		}
		data, err := b.readAt(s.Offset, s.Size)
		if err != nil {
			return 0, nil, nil, fmt.Errorf("reading .gopclntab: %w", err)
		}
		return s.Addr, data, nil, nil
	}
	start, ok1 := sym[symPclntab]
	end, ok2 := sym[symEpclntab]
	if ok1 && ok2 {
		if end.Value <= start.Value {
			return 0, nil, nil, fmt.Errorf("reading .gopclntab: %s..%s is not a valid range", symPclntab, symEpclntab)
		}
		if err := checkPclntabSize(end.Value - start.Value); err != nil {
			return 0, nil, nil, err
		}
		data, err := b.readVirt(start.Value, end.Value-start.Value, false)
		if err != nil {
			return 0, nil, nil, fmt.Errorf("reading .gopclntab: %w", err)
		}
		return start.Value, data, nil, nil
	}
	md, ok := b.findModuleData(b.describesPclntab)
	if !ok {
		return 0, nil, nil, ErrNoPclntab
	}
	if err := checkPclntabSize(md.pclntable + md.pclntableLen - md.pcHeader); err != nil {
		return 0, nil, nil, err
	}
	data, err := b.readVirt(md.pcHeader, md.pclntable+md.pclntableLen-md.pcHeader, false)
	if err != nil {
		return 0, nil, nil, fmt.Errorf("reading .gopclntab: %w", err)
	}
	return md.pcHeader, data, &md, nil
}

// checkPclntabSize refuses a .gopclntab of n bytes, as its section header,
// its symbols or the module data declare it, over maxTableSize.
func checkPclntabSize(n uint64) error {
	if n > maxTableSize {
		return fmt.Errorf("reading .gopclntab: %w: %d bytes declared, more than %d MiB", ErrTooLarge, n, maxTableSize>>20)
	}
	return nil
}

// describesPclntab reports whether md points at a .gopclntab header whose
// offsets agree with md's own pointers into the table: true only of the
// real module data, whatever else a data segment holds. (parseModuleData
// checked that the table does not wrap around.)
func (b *Binary) describesPclntab(md moduleData) bool {
	hdr, err := b.readVirt(md.pcHeader, 8+8*8, false)
	if err != nil {
		return false
	}
	le := binary.LittleEndian
	if m := le.Uint32(hdr); m != magicGo118 && m != magicGo120 || hdr[6] != b.arch.quantum || hdr[7] != 8 {
		return false
	}
	funcnameOf, pclnOf := le.Uint64(hdr[8+3*8:]), le.Uint64(hdr[8+7*8:])
	return md.funcnametab == md.pcHeader+funcnameOf && md.pclntable == md.pcHeader+pclnOf
}

// textStart returns the address Go 1.18+ function entries are offsets from:
// runtime.text. The header's own copy is not usable (Go 1.26 leaves it 0,
// and in PIE binaries it is an unapplied relocation), and .text does not
// always start there: external linkers put C code first. So it comes from
// the symbol table, else from the runtime's module data, else from the ELF
// entry point when that is the Go runtime's. A wrong guess would put
// uprobes in the middle of instructions, so without any of these it fails.
func (b *Binary) textStart(sym map[string]elf.Symbol, pclnAddr uint64, h pclnHeader, md *moduleData, tab *pclnTable) (uint64, error) {
	if h.magic == magicGo12 || h.magic == magicGo116 {
		return 0, nil // entries are absolute addresses
	}
	if s, ok := sym[symText]; ok {
		return s.Value, nil
	}
	if md != nil {
		return md.text, nil
	}
	funcnameAddr := pclnAddr + h.funcnameOf
	if md, ok := b.findModuleData(func(md moduleData) bool {
		return md.pcHeader == pclnAddr && md.funcnametab == funcnameAddr
	}); ok {
		return md.text, nil
	}
	if text, ok := b.entryText(tab); ok {
		return text, nil
	}
	return 0, fmt.Errorf("no runtime module data points at .gopclntab, and the ELF entry point is not %s", b.arch.rt0)
}

// entryText derives the start of Go text from the ELF entry point, taking it
// to be rt0, and checks that: the instruction there must jump to rt0Arch
// (JMP on amd64, B on arm64). tab holds entries relative to the start of Go
// text (base 0).
func (b *Binary) entryText(tab *pclnTable) (uint64, bool) {
	start, next := tab.find(b.arch.rt0), tab.find(b.arch.rt0Arch)
	if start < 0 || next < 0 || b.elf.Entry < tab.entry(start) || tab.end(start) <= tab.entry(start) {
		return 0, false
	}
	text := b.elf.Entry - tab.entry(start)
	code, err := b.readVirt(b.elf.Entry, min(16, tab.end(start)-tab.entry(start)), true)
	if err != nil {
		return 0, false
	}
	if jmp := b.arch.branch(code, b.elf.Entry); jmp.kind != directJump || jmp.target != text+tab.entry(next) {
		return 0, false
	}
	return text, true
}

// moduleData is what the reader uses of runtime.firstmoduledata, the
// runtime's description of the program: pointers into .gopclntab and where
// Go text starts. The file holds link-time addresses there even for PIE
// binaries (the linkers write the relocation addends in place).
type moduleData struct {
	pcHeader    uint64 // .gopclntab's header
	funcnametab uint64 // its function name table
	// pclntable is its function table and function records, the last
	// part the reader needs; ftab, the function table alone, starts at
	// the same address.
	pclntable, pclntableLen, ftab uint64
	minPC, maxPC, text            uint64
}

// Word indexes in runtime.moduledata, unchanged from Go 1.16 to 1.26: the
// pcHeader pointer, then six slices (pointer, length, capacity): funcnametab,
// cutab, filetab, pctab, pclntable, ftab; findfunctab, minpc, maxpc, text.
const (
	mdPcHeader     = 0
	mdFuncnametab  = 1
	mdPclntable    = 13
	mdPclntableLen = 14
	mdFtab         = 16
	mdMinPC        = 20
	mdMaxPC        = 21
	mdText         = 22
	mdWords        = 23
)

// parseModuleData reads a module data record from rec and reports whether
// its shape is plausible: a header followed by the name table, pclntable
// and ftab at the same address, text at or below the lowest function, in
// an executable segment.
func (b *Binary) parseModuleData(rec []byte) (moduleData, bool) {
	w := func(i int) uint64 { return binary.LittleEndian.Uint64(rec[8*i:]) }
	md := moduleData{
		pcHeader: w(mdPcHeader), funcnametab: w(mdFuncnametab),
		pclntable: w(mdPclntable), pclntableLen: w(mdPclntableLen), ftab: w(mdFtab),
		minPC: w(mdMinPC), maxPC: w(mdMaxPC), text: w(mdText),
	}
	if md.funcnametab <= md.pcHeader || md.funcnametab-md.pcHeader > 4096 ||
		md.pclntable != md.ftab || md.pclntable <= md.funcnametab || md.pclntableLen == 0 ||
		md.pclntable+md.pclntableLen < md.pclntable || md.text > md.minPC || md.minPC >= md.maxPC {
		return md, false
	}
	if _, err := b.segment(md.text, 1, true); err != nil {
		return md, false
	}
	return md, true
}

// findModuleData looks for runtime.firstmoduledata: in its own .go.module
// section (Go 1.26), else at any 8-byte aligned place in a writable
// PT_LOAD segment (where older releases link it), and returns the first
// plausible record that match accepts.
func (b *Binary) findModuleData(match func(moduleData) bool) (moduleData, bool) {
	if s := b.elf.Section(".go.module"); s != nil && s.Type == elf.SHT_PROGBITS {
		if rec, err := b.readVirt(s.Addr, 8*mdWords, false); err == nil {
			if md, ok := b.parseModuleData(rec); ok && match(md) {
				return md, true
			}
		}
	}
	const chunk = 1 << 20
	const recLen = 8 * mdWords
	var chunkBuf []byte
	for _, p := range b.elf.Progs {
		if p.Type != elf.PT_LOAD || p.Flags&elf.PF_W == 0 {
			continue
		}
		start := (p.Vaddr + 7) &^ 7
		end := p.Vaddr + p.Filesz
		if end < p.Vaddr { // wrapped: a malformed header
			continue
		}
		// Each chunk is read with enough overlap to hold a whole
		// record starting at its last word.
		for at := start; at+recLen <= end; at += chunk {
			n := min(chunk+recLen, end-at)
			if chunkBuf == nil {
				chunkBuf = make([]byte, chunk+recLen)
			}
			buf := chunkBuf[:n]
			if err := b.readInto(buf, at-p.Vaddr+p.Off); err != nil {
				break
			}
			for i := 0; i < chunk && i+recLen <= len(buf); i += 8 {
				if md, ok := b.parseModuleData(buf[i : i+recLen]); ok && match(md) {
					return md, true
				}
			}
		}
	}
	return moduleData{}, false
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
