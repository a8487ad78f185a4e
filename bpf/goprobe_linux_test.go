package bpf

import (
	"slices"
	"testing"
)

func TestAttachOrder(t *testing.T) {
	entry := func(fn uint32, off uint64) Probe { return Probe{Offset: off, Func: fn} }
	ret := func(fn uint32, off uint64) Probe { return Probe{Offset: off, Func: fn, Return: true} }
	for _, tc := range []struct {
		name     string
		in, want []Probe
	}{
		{"none", nil, nil},
		{"one function: its returns, then its entry",
			[]Probe{entry(0, 0x100), ret(0, 0x140), ret(0, 0x180)},
			[]Probe{ret(0, 0x140), ret(0, 0x180), entry(0, 0x100)}},
		{"as the kubelet's table lists them, function by function",
			[]Probe{entry(0, 0x100), ret(0, 0x140), entry(2, 0x300), ret(2, 0x330), ret(2, 0x360), entry(1, 0x200), ret(1, 0x250)},
			[]Probe{ret(0, 0x140), entry(0, 0x100), ret(1, 0x250), entry(1, 0x200), ret(2, 0x330), ret(2, 0x360), entry(2, 0x300)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.in)
			got := attachOrder(in)
			if !slices.Equal(got, tc.want) {
				t.Errorf("attachOrder(%v) = %v, want %v", tc.in, got, tc.want)
			}
			if !slices.Equal(in, tc.in) {
				t.Errorf("attachOrder reordered its argument: %v", in)
			}
		})
	}
}
