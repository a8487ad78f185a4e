package gofunc

import "golang.org/x/arch/x86/x86asm"

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
