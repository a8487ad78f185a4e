package gofunc

import (
	"debug/elf"
	"fmt"
	"os"

	"golang.org/x/arch/x86/x86asm"
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
	// with alignment padding (.gopclntab); otherwise it is exact
	// (.symtab).
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
	if len(spans) < len(order) {
		pcln, pclnErr = b.pclntab(sym)
		if pclnErr == nil {
			same := map[string][]int{} // name -> indexes in pcln.tab.Funcs
			for i := range pcln.tab.Funcs {
				f := &pcln.tab.Funcs[i]
				if _, done := spans[f.Name]; want[f.Name] && !done {
					same[f.Name] = append(same[f.Name], i)
				}
			}
			for name, idx := range same {
				f := &pcln.tab.Funcs[b.abiInternal(pcln, idx)]
				spans[name] = span{entry: pcln.base + f.Entry, end: pcln.base + f.End, padded: true, source: ".gopclntab"}
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
		entries[t.base+t.tab.Funcs[i].Entry] = true
	}
	for _, i := range goFuncs {
		f := &t.tab.Funcs[i]
		if !b.callsAny(t.base+f.Entry, t.base+f.End, entries) {
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
		inst, err := x86asm.Decode(code[off:], 64)
		if err != nil || inst.Len <= 0 {
			off++
			continue
		}
		off += inst.Len
		if inst.Op != x86asm.CALL && inst.Op != x86asm.JMP {
			continue
		}
		if rel, ok := inst.Args[0].(x86asm.Rel); ok {
			to := entry + uint64(int64(off)+int64(rel))
			if to != entry && targets[to] {
				return true
			}
		}
	}
	return false
}

// symbols returns the symbol table entries for the wanted names and for the
// runtime's linker-defined symbols; the error is elf.ErrNoSymbols for a
// stripped binary. The symbol table is read anew each time: unlike
// .gopclntab it is cheap to scan and only unstripped binaries have one.
func (b *Binary) symbols(want map[string]bool) (map[string]elf.Symbol, error) {
	syms, err := b.elf.Symbols()
	if err != nil {
		return nil, err
	}
	out := make(map[string]elf.Symbol)
	for _, s := range syms {
		switch {
		case s.Name == symText || s.Name == symPclntab || s.Name == symEpclntab:
		case want[s.Name] && elf.ST_TYPE(s.Info) == elf.STT_FUNC:
		default:
			continue
		}
		if _, dup := out[s.Name]; !dup {
			out[s.Name] = s
		}
	}
	return out, nil
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
	d := Disassemble(code)
	if d.Undecodable > 0 {
		return nil, fmt.Errorf("%w: %d of %d bytes", ErrUndecodable, d.Undecodable, size)
	}
	if len(d.Rets) == 0 {
		return nil, ErrNoReturn
	}
	end := s.end
	if s.padded {
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
