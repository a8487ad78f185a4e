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

// TestCallInFlightSize: the README's "~1.2 KiB of kernel memory each"
// (--cri-calls-in-flight): a call in flight is an entry of the calls map,
// its key and its arguments (the kernel's own bookkeeping of an LRU hash
// element adds some tens of bytes).
func TestCallInFlightSize(t *testing.T) {
	spec, err := LoadGoprobe()
	if err != nil {
		t.Fatal(err)
	}
	m := spec.Maps[GoprobeMapCalls]
	n := m.KeySize + m.ValueSize
	if n < 1100 || n > 1300 {
		t.Errorf("a call in flight takes %d bytes of key and value, not about 1.2 KiB: update the README", n)
	}
}
