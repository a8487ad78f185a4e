package gofunc

import (
	"fmt"
	"testing"
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.a.branch(tc.code, pc); got != tc.want {
				t.Errorf("branch(% x) = %+v, want %+v", tc.code, got, tc.want)
			}
		})
	}
}
