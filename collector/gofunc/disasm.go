package gofunc

import (
	"encoding/binary"

	"golang.org/x/arch/x86/x86asm"
)

// Disasm is what a linear decode of one function's machine code found.
type Disasm struct {
	// Rets are the offsets of the RET instructions, in increasing order.
	Rets []uint64
	// Len is the offset just past the last instruction that is not
	// padding: the function's length without its trailing padding.
	Len uint64
	// Undecodable counts the bytes that did not decode as instructions
	// where that could put a RET offset inside another instruction.
	Undecodable int
}

// int3 is the byte the Go linker pads between functions with on amd64.
const int3 = 0xcc

// disassembleAMD64 decodes code, one function's bytes from its entry, as a
// linear run of 64-bit x86 instructions. INT3 bytes are taken as padding; a
// byte that does not start a valid instruction is counted and skipped. Go
// functions hold no data between their instructions, so when Undecodable is
// 0 every offset in Rets is the start of a real RET instruction.
func disassembleAMD64(code []byte) Disasm {
	var d Disasm
	for off := 0; off < len(code); {
		if code[off] == int3 {
			off++
			continue
		}
		inst, err := x86asm.Decode(code[off:], 64)
		if err != nil || inst.Op == 0 || inst.Len <= 0 {
			// x86asm reports some invalid opcodes as Op 0 without an
			// error; both mean the byte starts no instruction.
			d.Undecodable++
			off++
			d.Len = uint64(off)
			continue
		}
		if inst.Op == x86asm.RET {
			d.Rets = append(d.Rets, uint64(off))
		}
		off += inst.Len
		d.Len = uint64(off)
	}
	return d
}

// branchAMD64 decodes a direct CALL or JMP (rel8 or rel32).
func branchAMD64(code []byte, pc uint64) branchInst {
	inst, err := x86asm.Decode(code, 64)
	if err != nil || inst.Len <= 0 {
		return branchInst{len: 1}
	}
	b := branchInst{len: inst.Len}
	rel, ok := inst.Args[0].(x86asm.Rel)
	if !ok || (inst.Op != x86asm.CALL && inst.Op != x86asm.JMP) {
		return b
	}
	b.kind, b.target = directJump, pc+uint64(int64(inst.Len)+int64(rel))
	if inst.Op == x86asm.CALL {
		b.kind = directCall
	}
	return b
}

// arm64 instructions are 4-byte little-endian words: a word the reader does
// not know cannot shift where the next instruction starts, so it matches
// the few instructions it needs on their encodings (Arm Architecture
// Reference Manual, A64 encoding index) and needs no decoder for the rest.
// (golang.org/x/arch's arm64asm would refuse some of what Go compiles to:
// the LSE atomics CASAL and LDADDAL, inlined from sync/atomic, in about one
// function in ten.) The encodings below have their operand fields zero.
const (
	arm64B       = 0x14000000 // B label: imm26, words from the branch
	arm64BL      = 0x94000000 // BL label
	arm64BMask   = 0xfc000000
	arm64RET     = 0xd65f0000 // RET Xn: Rn in bits 5-9 (Go's RET is RET X30)
	arm64RETMask = 0xfffffc1f
	// LDR (literal), LDRSW (literal) and their SIMD&FP forms load from
	// label (imm19, words from the load) in the function's own literal
	// pool: bits 30-31 (opc) and 26 (V) say how much; 0x3b000000 masks
	// the rest of the class.
	arm64LDRLit     = 0x18000000
	arm64LDRLitMask = 0x3b000000
)

// disassembleARM64 reads code, one function's bytes from its entry, as
// arm64 words, and finds the RETs among them. Zero words are taken as
// padding: the Go assembler pads each function's code to 16 bytes with
// them, and what gaps the linker leaves are zero too; a zero word inside a
// function is UDF #0, Go's UNDEF, never executed. The only data Go puts in
// text are the literal pools the assembler places in functions that load
// constants too large for an instruction (assembly ones: runtime.call* and
// others), after an unconditional branch or at the end. A pool word equal
// to a RET is data, which a uprobe there would corrupt, so every word a
// literal load (LDR or LDRSW of a PC-relative label) of the function reads
// is taken as data, not as a RET. Trailing bytes that make no whole word
// are Undecodable.
func disassembleARM64(code []byte) Disasm {
	var d Disasm
	var rets []uint64
	var data []uint64 // bit i: word i is literal pool data; nil: no pool
	le := binary.LittleEndian
	words := len(code) / 4
	for i := range words {
		w := le.Uint32(code[4*i:])
		if w == 0 {
			continue
		}
		d.Len = uint64(4*i + 4)
		switch {
		case w&arm64RETMask == arm64RET:
			rets = append(rets, uint64(4*i))
		case w&arm64LDRLitMask == arm64LDRLit:
			// imm19, bits 5-23, signed, in words.
			at := int64(i) + int64(int32(w<<8)>>13)
			n := int64(arm64LiteralSize(w))
			if at < 0 || at >= int64(words) || n == 0 {
				continue
			}
			if data == nil {
				data = make([]uint64, (words+63)/64)
			}
			for j := at; j < min(at+n, int64(words)); j++ {
				data[j/64] |= 1 << (j % 64)
			}
			// A pool word that is zero is data too, not padding.
			d.Len = max(d.Len, uint64(4*min(at+n, int64(words))))
		}
	}
	for _, r := range rets {
		if j := r / 4; data == nil || data[j/64]&(1<<(j%64)) == 0 {
			d.Rets = append(d.Rets, r)
		}
	}
	if rest := len(code) % 4; rest != 0 {
		d.Undecodable = rest
		d.Len = uint64(len(code))
	}
	return d
}

// arm64LiteralSize is the number of words the literal load w reads: 1, 2
// or 4; 0 for PRFM (literal), which reads nothing, and for the unallocated
// encoding.
func arm64LiteralSize(w uint32) int {
	opc, simd := w>>30, w>>26&1 == 1
	switch {
	case opc == 0 || (opc == 2 && !simd): // LDR Wt, LDRSW Xt, LDR St
		return 1
	case opc == 1: // LDR Xt, LDR Dt
		return 2
	case opc == 2 && simd: // LDR Qt
		return 4
	}
	return 0
}

// branchARM64 decodes B and BL, the arm64 direct jump and call.
func branchARM64(code []byte, pc uint64) branchInst {
	b := branchInst{len: 4}
	if len(code) < 4 {
		return b
	}
	w := binary.LittleEndian.Uint32(code)
	switch w & arm64BMask {
	case arm64B:
		b.kind = directJump
	case arm64BL:
		b.kind = directCall
	default:
		return b
	}
	// imm26, bits 0-25, signed, in words.
	b.target = pc + uint64(int64(int32(w<<6)>>6)<<2)
	return b
}
