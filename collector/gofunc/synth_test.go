package gofunc

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// synthFunc is one function of a synthetic executable.
type synthFunc struct {
	name string
	code []byte // padded to 32 bytes as the linker pads: INT3 on amd64, 0 on arm64
}

// synthELF describes a small, valid Go-like executable for machine (amd64 or
// arm64): a read+execute PT_LOAD segment mapping the file from its start
// through a .text section with the functions and, unless noPclntab, a
// pclntab of the format magic (default Go 1.20) naming them, in a section
// named pclnName (default .gopclntab). With moduleData, a read+write
// PT_LOAD segment follows, holding the runtime's module data that points at
// the pclntab.
type synthELF struct {
	machine    elf.Machine
	funcs      []synthFunc
	entry      int // index of the function at the ELF entry point
	noPclntab  bool
	pclnName   string
	moduleData bool
	magic      uint32
	quantum    byte   // the table's instruction size quantum, if not machine's
	rawPcln    []byte // the table to write instead of the one built
}

const (
	synthBase    = 0x400000 // virtual address of file offset 0
	synthTextOff = 0x100    // file offset of .text
	synthAlign   = 32
)

// defaultSynth is a linux/amd64 executable with the runtime's entry points
// (the ELF entry, which tells where Go text starts, jumps to the next), a
// function that returns, one that loops forever (no RET) and one whose
// short backward jump has the displacement byte 0xcc, which a
// padding-stripping scan of raw bytes would misread.
func defaultSynth() synthELF {
	return synthELF{
		machine: elf.EM_X86_64,
		funcs: []synthFunc{
			{archAMD64.rt0, []byte{0xe9, synthAlign - 5, 0, 0, 0}}, // jmp rt0Arch
			{archAMD64.rt0Arch, []byte{0xeb, 0xfe}},
			{"main.f", []byte{0x31, 0xc0, 0x48, 0x85, 0xdb, 0x74, 0x01, 0xc3, 0xc3}},  // xor eax,eax; test rbx,rbx; je +1; ret; ret
			{"main.loop", []byte{0xeb, 0xfe}},                                         // jmp .
			{"main.g", append(append([]byte{0xc3}, make([]byte, 50)...), 0xeb, 0xcc)}, // ret; 50 x add [rax],al (00 00); jmp -52
		},
	}
}

// arm64Synth is defaultSynth for linux/arm64: the same functions, and in
// main.g what only arm64 has: an instruction arm64asm cannot decode (LSE),
// UDF #0 (a zero word) between instructions, and a literal pool holding
// two words that look like RET.
func arm64Synth() synthELF {
	return synthELF{
		machine: elf.EM_AARCH64,
		funcs: []synthFunc{
			{archARM64.rt0, arm64Words(0x14000000 | synthAlign/4)}, // b rt0Arch
			{archARM64.rt0Arch, arm64Words(0x14000000)},            // b .
			{"main.f", arm64Words(
				0xb4000041, // cbz x1, .+8
				0xd65f03c0, // ret
				0xd65f0040, // ret x2
			)},
			{"main.loop", arm64Words(0x14000000)}, // b .
			{"main.g", arm64Words(
				0xd65f03c0, // ret
				0x88e1fc62, // casal w1, w2, [x3]
				0x00000000, // udf #0
				0x58000060, // ldr x0, .+12: the pool's 8 bytes at +24
				0x14000004, // b .+16, over the pool
				0x00000000, // the pool's alignment
				0xd65f03c0, // pool: data
				0xd65f03c0, // pool: data
				0xd65f03c0, // ret
			)},
		},
	}
}

// mergedSynth is defaultSynth as lld links it (merged).
func mergedSynth() synthELF { return defaultSynth().merged() }

// merged is s as lld links it: no section named .gopclntab, and the entry
// point in C start-up code, so only the module data tells where the table
// and Go text are.
func (s synthELF) merged() synthELF {
	s.pclnName = ".data.rel.ro"
	s.moduleData = true
	s.entry = 2
	return s
}

// bytes lays the executable out.
func (s synthELF) bytes() []byte {
	le := binary.LittleEndian
	text := []byte{}
	var entries []uint32
	pad, quantum := byte(int3), archAMD64.quantum
	if s.machine == elf.EM_AARCH64 {
		pad, quantum = 0, archARM64.quantum
	}
	if s.quantum != 0 {
		quantum = s.quantum
	}
	for _, f := range s.funcs {
		entries = append(entries, uint32(len(text)))
		text = append(text, f.code...)
		for len(text)%synthAlign != 0 {
			text = append(text, pad)
		}
	}
	var pcln []byte
	var funcnameOff, pclnOff uint64
	if !s.noPclntab {
		pcln, funcnameOff, pclnOff = synthPclntab(s.magic, quantum, s.funcs, entries, uint32(len(text)))
		if s.rawPcln != nil {
			pcln = s.rawPcln
		}
	}

	file := make([]byte, synthTextOff)
	file = append(file, text...)
	pclnAt := uint64(len(file))
	file = append(file, pcln...)
	for len(file)%8 != 0 {
		file = append(file, 0)
	}
	rxEnd := uint64(len(file))
	mdAt := rxEnd
	if s.moduleData {
		textAddr := uint64(synthBase + synthTextOff)
		pclnAddr := synthBase + pclnAt
		md := make([]uint64, mdWords)
		md[mdPcHeader] = pclnAddr
		md[mdFuncnametab] = pclnAddr + funcnameOff
		md[mdPclntable] = pclnAddr + pclnOff
		md[mdPclntableLen] = uint64(len(pcln)) - pclnOff
		md[mdFtab] = md[mdPclntable]
		md[mdMinPC] = textAddr
		md[mdMaxPC] = textAddr + uint64(len(text))
		md[mdText] = textAddr
		for _, w := range md {
			file = le.AppendUint64(file, w)
		}
	}
	mdEnd := uint64(len(file))

	pclnName := s.pclnName
	if pclnName == "" {
		pclnName = ".gopclntab"
	}
	var shstr []byte
	name := func(n string) uint32 {
		off := uint32(len(shstr)) + 1
		shstr = append(append(shstr, n...), 0)
		return off
	}
	type shdr struct {
		name, typ   uint32
		flags, addr uint64
		off, size   uint64
	}
	shdrs := []shdr{
		{},
		{name(".text"), uint32(elf.SHT_PROGBITS), uint64(elf.SHF_ALLOC | elf.SHF_EXECINSTR), synthBase + synthTextOff, synthTextOff, uint64(len(text))},
	}
	if !s.noPclntab {
		shdrs = append(shdrs, shdr{name(pclnName), uint32(elf.SHT_PROGBITS), uint64(elf.SHF_ALLOC), synthBase + pclnAt, pclnAt, uint64(len(pcln))})
	}
	shdrs = append(shdrs, shdr{name(".shstrtab"), uint32(elf.SHT_STRTAB), 0, 0, 0, 0})
	shstr = append([]byte{0}, shstr...)
	shstrAt := uint64(len(file))
	shdrs[len(shdrs)-1].off, shdrs[len(shdrs)-1].size = shstrAt, uint64(len(shstr))
	file = append(file, shstr...)
	for len(file)%8 != 0 {
		file = append(file, 0)
	}
	shAt := uint64(len(file))
	for _, h := range shdrs {
		var b [64]byte
		le.PutUint32(b[0:], h.name)
		le.PutUint32(b[4:], h.typ)
		le.PutUint64(b[8:], h.flags)
		le.PutUint64(b[16:], h.addr)
		le.PutUint64(b[24:], h.off)
		le.PutUint64(b[32:], h.size)
		le.PutUint64(b[48:], 1) // addralign
		file = append(file, b[:]...)
	}

	type phdr struct {
		flags    elf.ProgFlag
		off, end uint64
	}
	phdrs := []phdr{{elf.PF_R | elf.PF_X, 0, rxEnd}}
	if s.moduleData {
		phdrs = append(phdrs, phdr{elf.PF_R | elf.PF_W, mdAt, mdEnd})
	}

	// ELF header.
	copy(file, "\x7fELF")
	file[4] = byte(elf.ELFCLASS64)
	file[5] = byte(elf.ELFDATA2LSB)
	file[6] = byte(elf.EV_CURRENT)
	le.PutUint16(file[16:], uint16(elf.ET_EXEC))
	le.PutUint16(file[18:], uint16(s.machine))
	le.PutUint32(file[20:], uint32(elf.EV_CURRENT))
	le.PutUint64(file[24:], synthBase+synthTextOff+uint64(entries[s.entry]))
	le.PutUint64(file[32:], 64) // phoff
	le.PutUint64(file[40:], shAt)
	le.PutUint16(file[52:], 64) // ehsize
	le.PutUint16(file[54:], 56) // phentsize
	le.PutUint16(file[56:], uint16(len(phdrs)))
	le.PutUint16(file[58:], 64) // shentsize
	le.PutUint16(file[60:], uint16(len(shdrs)))
	le.PutUint16(file[62:], uint16(len(shdrs)-1)) // shstrndx

	for i, p := range phdrs {
		ph := file[64+56*i:]
		le.PutUint32(ph[0:], uint32(elf.PT_LOAD))
		le.PutUint32(ph[4:], uint32(p.flags))
		le.PutUint64(ph[8:], p.off)
		le.PutUint64(ph[16:], synthBase+p.off)
		le.PutUint64(ph[24:], synthBase+p.off)
		le.PutUint64(ph[32:], p.end-p.off)
		le.PutUint64(ph[40:], p.end-p.off)
		le.PutUint64(ph[48:], 8)
	}
	return file
}

// synthPclntab builds a .gopclntab of the format magic (0: Go 1.20) and
// instruction size quantum for funcs at the given offsets from the start of
// text (at synthBase + synthTextOff), ending at textLen, and returns it with
// the offsets of its function name table and function table (0 for Go 1.2,
// whose offsets count from the table's start).
func synthPclntab(magic uint32, quantum byte, funcs []synthFunc, entries []uint32, textLen uint32) (pcln []byte, funcnameOff, pclnOff uint64) {
	le := binary.LittleEndian
	if magic == 0 {
		magic = magicGo120
	}
	n := len(funcs)
	text := uint64(synthBase + synthTextOff)
	// Go 1.18+ tables hold 4-byte offsets from the start of text and
	// records that start with one; older ones addresses.
	field, recLen, nameAt := 8, 48, 8
	addr := func(off uint32) uint64 { return text + uint64(off) }
	if magic == magicGo118 || magic == magicGo120 {
		field, recLen, nameAt = 4, 44, 4
		addr = func(off uint32) uint64 { return uint64(off) }
	}
	put := func(b []byte, v uint64) {
		if field == 4 {
			le.PutUint32(b, uint32(v))
		} else {
			le.PutUint64(b, v)
		}
	}
	var names []byte
	var nameOffs []uint32
	for _, f := range funcs {
		nameOffs = append(nameOffs, uint32(len(names)))
		names = append(names, f.name...)
		names = append(names, 0)
	}

	var hdr []byte
	var functabAt int // where the function table starts in the table
	switch magic {
	case magicGo12:
		// magic, quantum, pointer size, nfunc; the function table; the
		// offset of the file table (one entry: the count, 1); names.
		hdr = make([]byte, 16)
		le.PutUint64(hdr[8:], uint64(n))
		functabAt = 16
	case magicGo116:
		hdr = make([]byte, 8+7*8) // nfunc nfiles funcname cu filetab pctab pcln
		functabAt = len(hdr) + len(names)
	default:
		hdr = make([]byte, 8+8*8) // nfunc nfiles text funcname cu filetab pctab pcln
		functabAt = len(hdr) + len(names)
	}
	le.PutUint32(hdr[0:], magic)
	hdr[6], hdr[7] = quantum, 8

	functab := make([]byte, (2*n+1)*field)
	var tail []byte      // what follows the function table
	recBase := functabAt // what record offsets count from
	namesAt := len(hdr)  // where the names are, in the table
	if magic == magicGo12 {
		// fileoff (u32), the file table (nfiletab = 1), then the names.
		fileoff := functabAt + len(functab)
		tail = le.AppendUint32(nil, uint32(fileoff+4))
		tail = le.AppendUint32(tail, 1)
		namesAt = fileoff + len(tail)
		tail = append(tail, names...)
		recBase = 0
	}
	recordsAt := functabAt + len(functab) + len(tail)
	var records []byte
	for i := range funcs {
		put(functab[2*i*field:], addr(entries[i]))
		put(functab[(2*i+1)*field:], uint64(recordsAt-recBase+len(records)))
		rec := make([]byte, recLen)
		put(rec, addr(entries[i]))
		nameOff := uint64(nameOffs[i])
		if magic == magicGo12 {
			nameOff += uint64(namesAt)
		}
		le.PutUint32(rec[nameAt:], uint32(nameOff))
		records = append(records, rec...)
	}
	put(functab[2*n*field:], addr(textLen))

	switch magic {
	case magicGo12:
		pcln = append(append(append(hdr, functab...), tail...), records...)
		return pcln, 0, 0
	case magicGo116:
		funcnameOff, pclnOff = uint64(len(hdr)), uint64(functabAt)
		words := []uint64{uint64(n), 0, funcnameOff, pclnOff, pclnOff, pclnOff, pclnOff}
		for i, w := range words {
			le.PutUint64(hdr[8+8*i:], w)
		}
	default:
		funcnameOff, pclnOff = uint64(len(hdr)), uint64(functabAt) // cutab, filetab, pctab empty
		words := []uint64{uint64(n), 0, 0, funcnameOff, pclnOff, pclnOff, pclnOff, pclnOff}
		for i, w := range words {
			le.PutUint64(hdr[8+8*i:], w)
		}
	}
	pcln = append(hdr, names...)
	pcln = append(pcln, functab...)
	return append(pcln, records...), funcnameOff, pclnOff
}

// TestSynthetic reads hand-made executables of each architecture: the
// default one, where the ELF entry point tells where Go text starts, in each
// .gopclntab format, and one laid out as lld links, where only the module
// data leads to the table and to Go text.
func TestSynthetic(t *testing.T) {
	execs := synthFormats()
	execs["merged"] = mergedSynth()
	execs["arm64 merged"] = arm64Synth().merged()
	const textAddr = synthBase + synthTextOff + 2*synthAlign // after rt0, rt0Arch
	const textOff = synthTextOff + 2*synthAlign
	want := map[elf.Machine]map[string]Func{
		elf.EM_X86_64: {
			"main.f": {Name: "main.f", Entry: textAddr, End: textAddr + 9, EntryOffset: textOff, RetOffsets: []uint64{7, 8}, Source: ".gopclntab"},
			// jmp -52 is eb cc: its displacement byte is not padding.
			"main.g": {Name: "main.g", Entry: textAddr + 64, End: textAddr + 64 + 53, EntryOffset: textOff + 64, RetOffsets: []uint64{0}, Source: ".gopclntab"},
		},
		elf.EM_AARCH64: {
			"main.f": {Name: "main.f", Entry: textAddr, End: textAddr + 12, EntryOffset: textOff, RetOffsets: []uint64{4, 8}, Source: ".gopclntab"},
			// The literal pool's two RET-like words, at +24, are data.
			"main.g": {Name: "main.g", Entry: textAddr + 64, End: textAddr + 64 + 36, EntryOffset: textOff + 64, RetOffsets: []uint64{0, 32}, Source: ".gopclntab"},
		},
	}
	for name, s := range execs {
		t.Run(name, func(t *testing.T) {
			data := s.bytes()
			b, err := newBinary(bytes.NewReader(data), int64(len(data)))
			if err != nil {
				t.Fatal(err)
			}
			fns, errs := b.Lookup("main.f", "main.loop", "main.g")
			for name, w := range want[s.machine] {
				got := fns[name]
				if got == nil || fmt.Sprint(*got) != fmt.Sprint(w) {
					t.Errorf("%s: got %+v, want %+v", name, got, w)
				}
			}
			if len(errs) != 1 || !errors.Is(errs[0], ErrNoReturn) {
				t.Errorf("errors %v, want main.loop without RET", errs)
			}
			if _, err := b.BuildInfo(); err == nil {
				t.Error("BuildInfo of a file without build info: no error")
			}
		})
	}
}

func TestOpenErrors(t *testing.T) {
	ppc := defaultSynth()
	ppc.machine = elf.EM_PPC64
	armQuantum1 := arm64Synth() // a table of amd64's, or a corrupt one
	armQuantum1.quantum = 1
	noPcln := defaultSynth()
	noPcln.noPclntab = true
	cStart := defaultSynth() // entry point elsewhere, as with external linking
	cStart.entry = 2
	armCStart := arm64Synth()
	armCStart.entry = 2
	merged := mergedSynth() // ... and no module data to say where the table is
	merged.moduleData = false
	for _, tc := range []struct {
		name      string
		data      []byte
		openErr   error // from newBinary
		lookupErr error // from Lookup("main.f")
	}{
		{"ppc64le", ppc.bytes(), ErrUnsupportedArch, nil},
		{"arm64 with an instruction size quantum of 1", armQuantum1.bytes(), nil, errAny},
		{"no .gopclntab", noPcln.bytes(), nil, ErrNoPclntab},
		{"no way to find Go text", cStart.bytes(), nil, errAny},
		{"arm64: no way to find Go text", armCStart.bytes(), nil, errAny},
		{"no way to find .gopclntab", merged.bytes(), nil, ErrNoPclntab},
		{"not ELF", []byte("#!/bin/sh\necho hello\n"), errAny, nil},
		{"truncated", defaultSynth().bytes()[:100], errAny, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := newBinary(bytes.NewReader(tc.data), int64(len(tc.data)))
			if tc.openErr != nil {
				if err == nil || (tc.openErr != errAny && !errors.Is(err, tc.openErr)) {
					t.Fatalf("open: %v, want %v", err, tc.openErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			_, errs := b.Lookup("main.f")
			if len(errs) != 1 || (tc.lookupErr != errAny && !errors.Is(errs[0], tc.lookupErr)) {
				t.Errorf("lookup: %v, want %v", errs, tc.lookupErr)
			}
		})
	}
	if _, err := Open(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open of a missing file: %v, want os.ErrNotExist", err)
	}
}

// errAny stands for "some error" in tables.
var errAny = errors.New("any error")

// FuzzOpen feeds garbage to the ELF and .gopclntab parsers: they must never
// panic, what they return must be consistent with the file, and what they
// allocate is bounded by the file's size, whatever its headers declare.
func FuzzOpen(f *testing.F) {
	f.Add(defaultSynth().bytes())
	f.Add(mergedSynth().bytes())
	f.Add(arm64Synth().merged().bytes())
	noPcln := defaultSynth()
	noPcln.noPclntab = true
	f.Add(noPcln.bytes())
	for _, s := range synthFormats() {
		f.Add(s.bytes())
	}
	// The binary: a .gopclntab header claiming 600 MiB.
	huge := defaultSynth().bytes()
	patchSection(f, huge, ".gopclntab", 600*mib)
	f.Add(huge)
	f.Fuzz(func(t *testing.T, data []byte) {
		var fns map[string]*Func
		var machine elf.Machine
		n := allocated(func() {
			b, err := newBinary(bytes.NewReader(data), int64(len(data)))
			if err != nil {
				return
			}
			machine = b.elf.Machine
			fns, _ = b.Lookup("main.f", "main.g", "main.loop", "")
			b.BuildInfo()
			b.FileOffset(synthBase + synthTextOff)
			b.Close()
		})
		// Each table is read once, each function's code at most a few
		// times per name looked up (abiInternal); the constant is
		// debug/buildinfo's and the module data search's 1 MiB buffers.
		if limit := 32*uint64(len(data)) + 4*mib; n > limit {
			t.Errorf("allocated %d bytes for a %d-byte file, want at most %d", n, len(data), limit)
		}
		for _, fn := range fns {
			if fn.End <= fn.Entry || len(fn.RetOffsets) == 0 || fn.EntryOffset+fn.Size() > uint64(len(data)) {
				t.Errorf("inconsistent %+v in a %d-byte file", fn, len(data))
			}
			for _, r := range fn.RetOffsets {
				if r >= fn.Size() {
					t.Errorf("%s: RET offset %d outside the function", fn.Name, r)
					continue
				}
				if inst, ok := decodeRet(machine, data[fn.EntryOffset+r:]); !ok {
					t.Errorf("%s: RET offset %d is %s", fn.Name, r, inst)
				}
			}
		}
	})
}
