package gofunc

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
)

// Lookup locates the named functions (full Go symbol names) and finds their
// RET instructions. The map holds every function that can be probed at its
// entry and at each return. Each name that cannot comes back once, in the
// order given, as a *LookupError wrapping the cause: ErrNotFound,
// ErrNoReturn, ErrUndecodable, ErrUnmapped, ErrNoPclntab or a read error.
//
// A name found in the symbol table is taken from there; the others, and all
// names in a stripped binary, from .gopclntab, which is read and parsed on
// the first call that needs it and kept until Close: look up everything at
// once, then Close.
func (b *Binary) Lookup(names ...string) (map[string]*Func, []error) {
	return b.lookup(names, false)
}

// span is a function's address range as a table gives it.
type span struct {
	entry, end uint64
	// padded: end is the next function's entry, so the range may end
	// with alignment padding (.gopclntab); otherwise it is the symbol's
	// size (.symtab), exact unless the architecture's symbols count
	// their padding (arch.paddedSymbols).
	padded bool
	source string
}

// lookup is Lookup; with pclntabOnly it ignores the symbol table, as for a
// stripped binary (the tests compare both ways on one binary).
func (b *Binary) lookup(names []string, pclntabOnly bool) (map[string]*Func, []error) {
	b.mu.Lock()
	defer b.mu.Unlock()

	var order []string
	want := make(map[string]bool, len(names))
	for _, n := range names {
		if !want[n] {
			want[n] = true
			order = append(order, n)
		}
	}
	found := make(map[string]*Func, len(order))
	var errs []error
	fail := func(name string, err error) { errs = append(errs, &LookupError{Name: name, Err: err}) }
	if b.closed {
		for _, n := range order {
			fail(n, os.ErrClosed)
		}
		return found, errs
	}

	sym, symErr := b.symbols(want)
	spans := make(map[string]span, len(order))
	if !pclntabOnly {
		for n := range want {
			if s, ok := sym[n]; ok && elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Size > 0 {
				spans[n] = span{entry: s.Value, end: s.Value + s.Size, source: ".symtab"}
			}
		}
	}
	var pcln *pclnTable
	var pclnErr error
	ambiguous := map[string]bool{}
	if len(spans) < len(order) {
		pcln, pclnErr = b.pclntab(sym)
		if pclnErr == nil {
			same := map[string][]int{} // name -> indexes in pcln, up to one too many
			for i := range pcln.nfunc() {
				name := pcln.name(i)
				if _, done := spans[string(name)]; want[string(name)] && !done && len(same[string(name)]) <= maxSameName {
					same[string(name)] = append(same[string(name)], i)
				}
			}
			for name, idx := range same {
				if len(idx) > maxSameName {
					// Two in a real binary (see abiInternal).
					ambiguous[name] = true
					continue
				}
				i := b.abiInternal(pcln, idx)
				spans[name] = span{entry: pcln.entry(i), end: pcln.end(i), padded: true, source: ".gopclntab"}
			}
		}
	}

	for _, n := range order {
		s, ok := spans[n]
		switch {
		case ok:
			fn, err := b.function(n, s)
			if err != nil {
				fail(n, err)
				continue
			}
			found[n] = fn
		case pclnErr != nil && symErr != nil:
			// Neither table could be read: say why.
			fail(n, pclnErr)
		case ambiguous[n]:
			fail(n, fmt.Errorf("more than %d functions of that name in .gopclntab", maxSameName))
		case pcln != nil && pcln.inlinedOnly(n):
			fail(n, fmt.Errorf("%w: every call to it was inlined", ErrNotFound))
		default:
			fail(n, ErrNotFound)
		}
	}
	return found, errs
}

// abiInternal picks, among functions of one name in .gopclntab, the one the
// symbol table calls by that name: the one with Go's register calling
// convention (ABIInternal). A name has two functions when code in the other
// convention (ABI0: assembly) calls it or is called from Go through an ABI
// wrapper; .gopclntab names both the same, where the symbol table appends
// ".abi0" to one. A Go function's ABI0 wrapper calls the function; an
// assembly function is ABI0 itself, and its wrapper is the ABIInternal one.
func (b *Binary) abiInternal(t *pclnTable, idx []int) int {
	if len(idx) == 1 {
		return idx[0]
	}
	var goFuncs []int
	for _, i := range idx {
		if !t.isAsm(i) {
			goFuncs = append(goFuncs, i)
		}
	}
	if len(goFuncs) == 0 {
		return idx[0]
	}
	entries := make(map[uint64]bool, len(idx))
	for _, i := range idx {
		entries[t.entry(i)] = true
	}
	for _, i := range goFuncs {
		if !b.callsAny(t.entry(i), t.end(i), entries) {
			return i
		}
	}
	return goFuncs[0]
}

// callsAny reports whether the code in [entry, end) calls or jumps directly
// to one of targets other than entry.
func (b *Binary) callsAny(entry, end uint64, targets map[uint64]bool) bool {
	if end <= entry || end-entry > maxFuncSize {
		return false
	}
	code, err := b.readVirt(entry, end-entry, true)
	if err != nil {
		return false
	}
	for off := 0; off < len(code); {
		br := b.arch.branch(code[off:], entry+uint64(off))
		off += br.len
		if br.kind != notBranch && br.target != entry && targets[br.target] {
			return true
		}
	}
	return false
}

// symbols returns the symbol table entries for the wanted names and for the
// runtime's linker-defined symbols; the error is elf.ErrNoSymbols for a
// stripped binary. The symbol table is read anew each time: unlike
// .gopclntab it is cheap to scan and only unstripped binaries have one. It
// is read in chunks and its string table whole, both within maxTableSize;
// nothing is allocated per symbol (debug/elf's Symbols makes a Symbol and a
// name of each).
func (b *Binary) symbols(want map[string]bool) (map[string]elf.Symbol, error) {
	symtab := b.elf.SectionByType(elf.SHT_SYMTAB)
	if symtab == nil {
		return nil, elf.ErrNoSymbols
	}
	if symtab.Link == 0 || int(symtab.Link) >= len(b.elf.Sections) {
		return nil, errors.New("reading .symtab: no string table")
	}
	strtab := b.elf.Sections[symtab.Link]
	for _, sec := range []*elf.Section{symtab, strtab} {
		switch {
		case sec.Type == elf.SHT_NOBITS || sec.Flags&elf.SHF_COMPRESSED != 0:
			return nil, fmt.Errorf("reading %s: compressed or not in the file", sec.Name)
		case sec.Size > maxTableSize:
			return nil, fmt.Errorf("reading %s: %w: %d bytes, more than %d MiB", sec.Name, ErrTooLarge, sec.Size, maxTableSize>>20)
		}
	}
	const symSize = 24 // Elf64_Sym
	if symtab.Size%symSize != 0 {
		return nil, fmt.Errorf("reading .symtab: %d bytes, not a whole number of symbols", symtab.Size)
	}
	strs, err := b.readAt(strtab.Offset, strtab.Size)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", strtab.Name, err)
	}
	le := binary.LittleEndian
	out := make(map[string]elf.Symbol)
	chunk := make([]byte, min(symtab.Size, 2048*symSize))
	for at := uint64(0); at < symtab.Size; at += uint64(len(chunk)) {
		buf := chunk[:min(uint64(len(chunk)), symtab.Size-at)]
		if err := b.readInto(buf, symtab.Offset+at); err != nil {
			return nil, fmt.Errorf("reading .symtab: %w", err)
		}
		for e := 0; e+symSize <= len(buf); e += symSize {
			if at == 0 && e == 0 {
				continue // the null symbol
			}
			sym := buf[e : e+symSize]
			name := cString(strs, le.Uint32(sym))
			info := sym[4]
			switch {
			case string(name) == symText || string(name) == symPclntab || string(name) == symEpclntab:
			case want[string(name)] && elf.ST_TYPE(info) == elf.STT_FUNC:
			default:
				continue
			}
			if _, dup := out[string(name)]; !dup {
				out[string(name)] = elf.Symbol{Name: string(name), Info: info, Other: sym[5],
					Section: elf.SectionIndex(le.Uint16(sym[6:])), Value: le.Uint64(sym[8:]), Size: le.Uint64(sym[16:])}
			}
		}
	}
	return out, nil
}

// cString returns the NUL-terminated string at off in strs, nil if there is
// none.
func cString(strs []byte, off uint32) []byte {
	if uint64(off) >= uint64(len(strs)) {
		return nil
	}
	n := bytes.IndexByte(strs[off:], 0)
	if n < 0 {
		return nil
	}
	return strs[off : int(off)+n]
}

// function reads the code of the function in s and finds its RETs.
func (b *Binary) function(name string, s span) (*Func, error) {
	if s.end <= s.entry || s.end-s.entry > maxFuncSize {
		return nil, fmt.Errorf("implausible address range %#x-%#x in %s", s.entry, s.end, s.source)
	}
	size := s.end - s.entry
	p, err := b.segment(s.entry, size, true)
	if err != nil {
		return nil, err
	}
	off := s.entry - p.Vaddr + p.Off
	code, err := b.readAt(off, size)
	if err != nil {
		return nil, fmt.Errorf("reading code: %w", err)
	}
	d := b.arch.disassemble(code)
	if d.Undecodable > 0 {
		return nil, fmt.Errorf("%w: %d of %d bytes", ErrUndecodable, d.Undecodable, size)
	}
	if len(d.Rets) == 0 {
		return nil, ErrNoReturn
	}
	end := s.end
	if s.padded || b.arch.paddedSymbols {
		end = s.entry + d.Len
	}
	return &Func{
		Name:        name,
		Entry:       s.entry,
		End:         end,
		EntryOffset: off,
		RetOffsets:  d.Rets,
		Source:      s.source,
	}, nil
}
