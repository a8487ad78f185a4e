package gofunc

import (
	"fmt"
	"testing"
)

func TestDisassemble(t *testing.T) {
	for _, tc := range []struct {
		name string
		code []byte
		want Disasm
	}{
		{"empty", nil, Disasm{}},
		{"ret", []byte{0xc3}, Disasm{Rets: []uint64{0}, Len: 1}},
		{"ret imm16 and rep ret", []byte{0xc2, 0x08, 0x00, 0xf3, 0xc3}, Disasm{Rets: []uint64{0, 3}, Len: 5}},
		{"trailing padding", []byte{0x31, 0xc0, 0xc3, 0xcc, 0xcc, 0xcc}, Disasm{Rets: []uint64{2}, Len: 3}},
		{"int3 between instructions", []byte{0xc3, 0xcc, 0x90, 0xc3}, Disasm{Rets: []uint64{0, 3}, Len: 4}},
		{"0xcc inside an instruction", []byte{0xc3, 0xeb, 0xcc, 0xcc}, Disasm{Rets: []uint64{0}, Len: 3}},
		{"c3 inside an instruction", []byte{0xb8, 0xc3, 0xc3, 0xc3, 0xc3, 0xc3}, Disasm{Rets: []uint64{5}, Len: 6}},
		{"undecodable", []byte{0x06, 0x27, 0xc3}, Disasm{Rets: []uint64{2}, Len: 3, Undecodable: 2}}, // push es, daa: not in 64-bit mode
		{"truncated instruction", []byte{0xc3, 0xe8, 0x00}, Disasm{Rets: []uint64{0}, Len: 3, Undecodable: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Disassemble(tc.code)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("Disassemble(% x) = %+v, want %+v", tc.code, got, tc.want)
			}
		})
	}
}
