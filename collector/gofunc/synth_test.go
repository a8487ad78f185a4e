package gofunc

import (
	"debug/elf"
	"encoding/binary"
)

// synthFunc is one function of a synthetic executable.
type synthFunc struct {
	name string
	code []byte // padded with INT3 to 32 bytes
}

// synthELF describes a small, valid linux/amd64 Go-like executable: a
// read+execute PT_LOAD segment mapping the file from its start through a
// .text section with the functions and, unless noPclntab, a pclntab of the
// format magic (default Go 1.20) naming them, in a section named pclnName
// (default .gopclntab). With
// moduleData, a read+write PT_LOAD segment follows, holding the runtime's
// module data that points at the pclntab.
type synthELF struct {
	machine    elf.Machine
	funcs      []synthFunc
	entry      int // index of the function at the ELF entry point
	noPclntab  bool
	pclnName   string
	moduleData bool
	magic      uint32
	rawPcln    []byte // the table to write instead of the one built
}

const (
	synthBase    = 0x400000 // virtual address of file offset 0
	synthTextOff = 0x100    // file offset of .text
	synthAlign   = 32
)

// defaultSynth has the runtime's entry points (the ELF entry, which tells
// where Go text starts, jumps to the next), a function that returns, one that
// loops forever (no RET) and one whose short backward jump has the
// displacement byte 0xcc, which a padding-stripping scan of raw bytes would
// misread.
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

// mergedSynth is defaultSynth as lld links it: no section named .gopclntab,
// and the entry point in C start-up code, so only the module data tells
// where the table and Go text are.
func mergedSynth() synthELF {
	s := defaultSynth()
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
	for _, f := range s.funcs {
		entries = append(entries, uint32(len(text)))
		text = append(text, f.code...)
		for len(text)%synthAlign != 0 {
			text = append(text, int3)
		}
	}
	var pcln []byte
	var funcnameOff, pclnOff uint64
	if !s.noPclntab {
		pcln, funcnameOff, pclnOff = synthPclntab(s.magic, s.funcs, entries, uint32(len(text)))
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

// synthPclntab builds a .gopclntab of the format magic (0: Go 1.20) for
// funcs at the given offsets from the start of text (at synthBase +
// synthTextOff), ending at textLen, and returns it with the offsets of its
// function name table and function table (0 for Go 1.2, whose offsets
// count from the table's start).
func synthPclntab(magic uint32, funcs []synthFunc, entries []uint32, textLen uint32) (pcln []byte, funcnameOff, pclnOff uint64) {
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
	hdr[6], hdr[7] = 1, 8

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
