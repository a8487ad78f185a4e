package gofunc

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"testing"

	"golang.org/x/arch/arm64/arm64asm"
	"golang.org/x/arch/x86/x86asm"
)

// arm64Words lays out arm64 instruction words as code.
func arm64Words(ws ...uint32) []byte {
	var b []byte
	for _, w := range ws {
		b = binary.LittleEndian.AppendUint32(b, w)
	}
	return b
}

// arm64 encodings for the tests (checked with llvm-mc -disassemble).
const (
	a64Ret     = 0xd65f03c0 // ret
	a64RetX2   = 0xd65f0040 // ret x2
	a64Nop     = 0xd503201f // nop
	a64BR      = 0xd61f0060 // br x3: an indirect jump, not a RET
	a64Casal   = 0x88e1fc62 // casal w1, w2, [x3]: LSE, unknown to arm64asm
	a64LdrX12  = 0x58000060 // ldr x0, .+12
	a64LdrW8   = 0x18000040 // ldr w0, .+8
	a64LdrQ8   = 0x9c000040 // ldr q0, .+8
	a64LdrBack = 0x58ffffe0 // ldr x0, .-4
	a64Prfm8   = 0xd8000040 // prfm pldl1keep, .+8: reads nothing
)

func TestDisassemble(t *testing.T) {
	for _, tc := range []struct {
		name string
		a    *arch
		code []byte
		want Disasm
	}{
		{"amd64 empty", archAMD64, nil, Disasm{}},
		{"amd64 ret", archAMD64, []byte{0xc3}, Disasm{Rets: []uint64{0}, Len: 1}},
		{"amd64 ret imm16 and rep ret", archAMD64, []byte{0xc2, 0x08, 0x00, 0xf3, 0xc3}, Disasm{Rets: []uint64{0, 3}, Len: 5}},
		{"amd64 trailing padding", archAMD64, []byte{0x31, 0xc0, 0xc3, 0xcc, 0xcc, 0xcc}, Disasm{Rets: []uint64{2}, Len: 3}},
		{"amd64 int3 between instructions", archAMD64, []byte{0xc3, 0xcc, 0x90, 0xc3}, Disasm{Rets: []uint64{0, 3}, Len: 4}},
		{"amd64 0xcc inside an instruction", archAMD64, []byte{0xc3, 0xeb, 0xcc, 0xcc}, Disasm{Rets: []uint64{0}, Len: 3}},
		{"amd64 c3 inside an instruction", archAMD64, []byte{0xb8, 0xc3, 0xc3, 0xc3, 0xc3, 0xc3}, Disasm{Rets: []uint64{5}, Len: 6}},
		{"amd64 undecodable", archAMD64, []byte{0x06, 0x27, 0xc3}, Disasm{Rets: []uint64{2}, Len: 3, Undecodable: 2}}, // push es, daa: not in 64-bit mode
		{"amd64 truncated instruction", archAMD64, []byte{0xc3, 0xe8, 0x00}, Disasm{Rets: []uint64{0}, Len: 3, Undecodable: 2}},
		{"arm64 empty", archARM64, nil, Disasm{}},
		{"arm64 ret", archARM64, arm64Words(a64Ret), Disasm{Rets: []uint64{0}, Len: 4}},
		{"arm64 ret of another register", archARM64, arm64Words(a64Nop, a64RetX2), Disasm{Rets: []uint64{4}, Len: 8}},
		{"arm64 not a ret", archARM64, arm64Words(a64BR, a64Nop), Disasm{Len: 8}},
		{"arm64 trailing padding", archARM64, arm64Words(a64Ret, 0, 0, 0), Disasm{Rets: []uint64{0}, Len: 4}},
		{"arm64 udf between instructions", archARM64, arm64Words(a64Ret, 0, a64Ret), Disasm{Rets: []uint64{0, 8}, Len: 12}},
		{"arm64 unknown instruction", archARM64, arm64Words(a64Casal, a64Ret), Disasm{Rets: []uint64{4}, Len: 8}},
		{"arm64 pool of 8 bytes", archARM64, arm64Words(a64LdrX12, a64Ret, 0, a64Ret, a64Ret, a64Ret), Disasm{Rets: []uint64{4, 20}, Len: 24}},
		{"arm64 pool of 4 bytes", archARM64, arm64Words(a64LdrW8, a64Ret, a64Ret, a64Ret), Disasm{Rets: []uint64{4, 12}, Len: 16}},
		{"arm64 pool of 16 bytes", archARM64, arm64Words(a64LdrQ8, a64Ret, a64Ret, a64Ret, a64Ret, a64Ret, a64Ret), Disasm{Rets: []uint64{4, 24}, Len: 28}},
		{"arm64 pool before its load", archARM64, arm64Words(a64Ret, a64LdrBack, a64Ret), Disasm{Rets: []uint64{8}, Len: 12}},
		{"arm64 zero pool word at the end", archARM64, arm64Words(a64Ret, a64LdrW8, 0, 0), Disasm{Rets: []uint64{0}, Len: 16}},
		{"arm64 pool past the end", archARM64, arm64Words(a64Ret, a64LdrX12, a64Ret), Disasm{Rets: []uint64{0, 8}, Len: 12}},
		{"arm64 prefetch", archARM64, arm64Words(a64Prfm8, a64Ret, a64Ret), Disasm{Rets: []uint64{4, 8}, Len: 12}},
		{"arm64 partial word", archARM64, append(arm64Words(a64Ret), 0xc0, 0x03), Disasm{Rets: []uint64{0}, Len: 6, Undecodable: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.a.disassemble(tc.code)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("disassemble(% x) = %+v, want %+v", tc.code, got, tc.want)
			}
		})
	}
}

func TestBranch(t *testing.T) {
	const pc = 0x401000
	for _, tc := range []struct {
		name string
		a    *arch
		code []byte
		want branchInst
	}{
		{"amd64 jmp rel32", archAMD64, []byte{0xe9, 0x10, 0, 0, 0}, branchInst{5, directJump, pc + 5 + 0x10}},
		{"amd64 jmp rel8 backwards", archAMD64, []byte{0xeb, 0xfe}, branchInst{2, directJump, pc}},
		{"amd64 call", archAMD64, []byte{0xe8, 0xfb, 0xff, 0xff, 0xff}, branchInst{5, directCall, pc}},
		{"amd64 jmp indirect", archAMD64, []byte{0xff, 0xe0}, branchInst{2, notBranch, 0}},
		{"amd64 ret", archAMD64, []byte{0xc3}, branchInst{1, notBranch, 0}},
		{"amd64 undecodable", archAMD64, []byte{0x06}, branchInst{1, notBranch, 0}},
		{"arm64 b", archARM64, arm64Words(0x14000008), branchInst{4, directJump, pc + 32}},
		{"arm64 b backwards", archARM64, arm64Words(0x17fffffe), branchInst{4, directJump, pc - 8}},
		{"arm64 bl", archARM64, arm64Words(0x94000010), branchInst{4, directCall, pc + 64}},
		{"arm64 b.eq", archARM64, arm64Words(0x54000040), branchInst{4, notBranch, 0}},
		{"arm64 br", archARM64, arm64Words(a64BR), branchInst{4, notBranch, 0}},
		{"arm64 short", archARM64, []byte{0x08, 0, 0}, branchInst{4, notBranch, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.a.branch(tc.code, pc); got != tc.want {
				t.Errorf("branch(% x) = %+v, want %+v", tc.code, got, tc.want)
			}
		})
	}
}

// decodeRet decodes the instruction code starts with, for machine, with
// golang.org/x/arch's disassemblers (which the package itself uses on amd64
// only), and reports whether it is a RET.
func decodeRet(machine elf.Machine, code []byte) (string, bool) {
	switch machine {
	case elf.EM_X86_64:
		inst, err := x86asm.Decode(code, 64)
		if err != nil {
			return err.Error(), false
		}
		return inst.String(), inst.Op == x86asm.RET
	case elf.EM_AARCH64:
		inst, err := arm64asm.Decode(code)
		if err != nil {
			return err.Error(), false
		}
		return inst.String(), inst.Op == arm64asm.RET
	}
	return machine.String(), false
}
