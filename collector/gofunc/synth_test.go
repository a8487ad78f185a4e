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

// synthELF describes a small, valid linux/amd64 Go-like executable: one
// read+execute PT_LOAD segment mapping the whole file, a .text section with
// the functions and, unless noPclntab, a Go 1.20 .gopclntab naming them.
type synthELF struct {
	machine   elf.Machine
	funcs     []synthFunc
	entry     int // index of the function at the ELF entry point
	noPclntab bool
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
			{rt0, []byte{0xe9, synthAlign - 5, 0, 0, 0}}, // jmp rt0Arch
			{rt0Arch, []byte{0xeb, 0xfe}},
			{"main.f", []byte{0x31, 0xc0, 0x48, 0x85, 0xdb, 0x74, 0x01, 0xc3, 0xc3}},  // xor eax,eax; test rbx,rbx; je +1; ret; ret
			{"main.loop", []byte{0xeb, 0xfe}},                                         // jmp .
			{"main.g", append(append([]byte{0xc3}, make([]byte, 50)...), 0xeb, 0xcc)}, // ret; 50 x add [rax],al (00 00); jmp -52
		},
	}
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
	if !s.noPclntab {
		pcln = synthPclntab(s.funcs, entries, uint32(len(text)))
	}

	shstr := []byte("\x00.text\x00.gopclntab\x00.shstrtab\x00")
	nameText, namePcln, nameShstr := uint32(1), uint32(7), uint32(18)

	file := make([]byte, synthTextOff)
	file = append(file, text...)
	pclnOff := uint64(len(file))
	file = append(file, pcln...)
	shstrOff := uint64(len(file))
	file = append(file, shstr...)
	for len(file)%8 != 0 {
		file = append(file, 0)
	}
	shOff := uint64(len(file))

	type shdr struct {
		name, typ   uint32
		flags, addr uint64
		off, size   uint64
	}
	shdrs := []shdr{
		{},
		{nameText, uint32(elf.SHT_PROGBITS), uint64(elf.SHF_ALLOC | elf.SHF_EXECINSTR), synthBase + synthTextOff, synthTextOff, uint64(len(text))},
	}
	if !s.noPclntab {
		shdrs = append(shdrs, shdr{namePcln, uint32(elf.SHT_PROGBITS), uint64(elf.SHF_ALLOC), synthBase + pclnOff, pclnOff, uint64(len(pcln))})
	}
	shdrs = append(shdrs, shdr{nameShstr, uint32(elf.SHT_STRTAB), 0, 0, shstrOff, uint64(len(shstr))})
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
	le.PutUint64(file[40:], shOff)
	le.PutUint16(file[52:], 64) // ehsize
	le.PutUint16(file[54:], 56) // phentsize
	le.PutUint16(file[56:], 1)  // phnum
	le.PutUint16(file[58:], 64) // shentsize
	le.PutUint16(file[60:], uint16(len(shdrs)))
	le.PutUint16(file[62:], uint16(len(shdrs)-1)) // shstrndx

	// One PT_LOAD, read+execute, mapping the whole file.
	ph := file[64:]
	le.PutUint32(ph[0:], uint32(elf.PT_LOAD))
	le.PutUint32(ph[4:], uint32(elf.PF_R|elf.PF_X))
	le.PutUint64(ph[8:], 0)
	le.PutUint64(ph[16:], synthBase)
	le.PutUint64(ph[24:], synthBase)
	le.PutUint64(ph[32:], uint64(len(file)))
	le.PutUint64(ph[40:], uint64(len(file)))
	le.PutUint64(ph[48:], 0x1000)
	return file
}

// synthPclntab builds a Go 1.20 .gopclntab for funcs at the given offsets
// from the start of text, ending at textLen.
func synthPclntab(funcs []synthFunc, entries []uint32, textLen uint32) []byte {
	le := binary.LittleEndian
	const hdrLen = 8 + 8*8
	var names []byte
	var nameOffs []uint32
	for _, f := range funcs {
		nameOffs = append(nameOffs, uint32(len(names)))
		names = append(names, f.name...)
		names = append(names, 0)
	}
	funcnameOff := uint64(hdrLen)
	pclnOff := funcnameOff + uint64(len(names)) // cutab, filetab, pctab empty

	n := len(funcs)
	functab := make([]byte, (2*n+1)*4)
	const funcLen = 44 // runtime._func without pcdata/funcdata
	var records []byte
	for i := range funcs {
		funcOff := uint32(len(functab) + len(records))
		le.PutUint32(functab[8*i:], entries[i])
		le.PutUint32(functab[8*i+4:], funcOff)
		rec := make([]byte, funcLen)
		le.PutUint32(rec[0:], entries[i])
		le.PutUint32(rec[4:], nameOffs[i])
		records = append(records, rec...)
	}
	le.PutUint32(functab[8*n:], textLen)

	hdr := make([]byte, hdrLen)
	le.PutUint32(hdr[0:], magicGo120)
	hdr[6], hdr[7] = 1, 8
	words := []uint64{uint64(n), 0, 0, funcnameOff, pclnOff, pclnOff, pclnOff, pclnOff}
	for i, w := range words {
		le.PutUint64(hdr[8+8*i:], w)
	}
	out := append(hdr, names...)
	out = append(out, functab...)
	return append(out, records...)
}
