package bpf

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
)

// The programs are compiled per arch (gen.go's -target amd64,arm64); only
// the build's GOARCH's objects are embedded, so these tests read both from
// the files, needing no privileges and running on either arch.
var (
	objectNames = []string{"process", "goprobe", "tcp"}
	objectArchs = []string{"x86", "arm64"}
)

func objectFile(name, arch string) string { return name + "_" + arch + "_bpfel.o" }

// TestArchObjects: each arch's object is a little-endian 64-bit BPF ELF
// file with the same programs, maps and variables as the others, so that
// the loaders (process_linux.go...) serve every arch alike.
func TestArchObjects(t *testing.T) {
	for _, name := range objectNames {
		t.Run(name, func(t *testing.T) {
			specs := map[string]*ebpf.CollectionSpec{}
			for _, arch := range objectArchs {
				path := objectFile(name, arch)
				f, err := elf.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				f.Close()
				if f.Machine != elf.EM_BPF || f.Data != elf.ELFDATA2LSB || f.Class != elf.ELFCLASS64 {
					t.Errorf("%s: %v %v %v, want a little-endian 64-bit BPF object", path, f.Machine, f.Data, f.Class)
				}
				spec, err := ebpf.LoadCollectionSpec(path)
				if err != nil {
					t.Fatalf("%s: %v", path, err)
				}
				if spec.ByteOrder != binary.LittleEndian {
					t.Errorf("%s: byte order %v", path, spec.ByteOrder)
				}
				specs[arch] = spec
			}
			want := describeSpec(specs[objectArchs[0]])
			if len(want) == 0 {
				t.Fatalf("%s: no programs or maps", objectFile(name, objectArchs[0]))
			}
			for _, arch := range objectArchs[1:] {
				if got := describeSpec(specs[arch]); !slices.Equal(got, want) {
					t.Errorf("%s and %s differ:\n%s\nvs\n%s", objectFile(name, objectArchs[0]), objectFile(name, arch),
						strings.Join(want, "\n"), strings.Join(got, "\n"))
				}
			}
		})
	}
}

// describeSpec lists what a loader of spec relies on, sorted: its programs
// and how they attach, its maps, its variables.
func describeSpec(spec *ebpf.CollectionSpec) []string {
	var out []string
	for n, p := range spec.Programs {
		out = append(out, fmt.Sprintf("program %s: %v %v %q %q", n, p.Type, p.AttachType, p.SectionName, p.License))
	}
	for n, m := range spec.Maps {
		out = append(out, fmt.Sprintf("map %s: %v key %d value %d max %d flags %#x", n, m.Type, m.KeySize, m.ValueSize, m.MaxEntries, m.Flags))
	}
	for n, v := range spec.Variables {
		out = append(out, fmt.Sprintf("variable %s: %d bytes in %s", n, v.Size(), v.SectionName))
	}
	slices.Sort(out)
	return out
}

// TestArchBindings: bpf2go's Go bindings are the same for every arch but
// for their build constraint and embedded file, so the Go types readyline
// decodes records with (GoprobeGoCallEvent...) do not depend on GOARCH.
func TestArchBindings(t *testing.T) {
	for _, name := range objectNames {
		var want []byte
		for _, arch := range objectArchs {
			path := strings.TrimSuffix(objectFile(name, arch), ".o") + ".go"
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var kept [][]byte
			for _, line := range bytes.Split(b, []byte("\n")) {
				if !bytes.HasPrefix(line, []byte("//go:build ")) && !bytes.HasPrefix(line, []byte("//go:embed ")) {
					kept = append(kept, line)
				}
			}
			got := bytes.Join(kept, []byte("\n"))
			if want == nil {
				want = got
			} else if !bytes.Equal(got, want) {
				t.Errorf("%s differs from %s beyond its build constraint and embedded file", path, objectFile(name, objectArchs[0]))
			}
		}
	}
}

// goRegOffsets is where goabi.h reads Go's integer argument registers (in
// ABIInternal's sequence) and the goroutine from a uprobe's ctx.
type goRegOffsets struct {
	regs []int16
	g    int16
}

// arm64GoRegOffsets: R0-R15 and R28 in struct user_pt_regs (UAPI:
// u64 regs[31] first).
func arm64GoRegOffsets() goRegOffsets {
	o := goRegOffsets{g: 8 * 28}
	for i := range 16 {
		o.regs = append(o.regs, int16(8*i))
	}
	return o
}

// x86GoRegOffsets: RAX RBX RCX RDI RSI R8 R9 R10 R11 and R14 in x86's
// struct pt_regs, as the object's BTF (vmlinux.h) lays it out; the loader
// relocates them to the running kernel's (CO-RE).
func x86GoRegOffsets(t *testing.T, spec *ebpf.CollectionSpec) goRegOffsets {
	var regs *btf.Struct
	if err := spec.Types.TypeByName("pt_regs", &regs); err != nil {
		t.Fatal(err)
	}
	off := func(field string) int16 {
		for _, m := range regs.Members {
			if m.Name == field {
				return int16(m.Offset.Bytes())
			}
		}
		t.Fatalf("x86 pt_regs has no %s", field)
		return 0
	}
	o := goRegOffsets{g: off("r14")}
	for _, f := range []string{"ax", "bx", "cx", "di", "si", "r8", "r9", "r10", "r11"} {
		o.regs = append(o.regs, off(f))
	}
	return o
}

// TestGoRegisterOffsets: goprobe's programs read Go's argument register i
// from the ctx at the arch's offset for it, and the goroutine at its own,
// and read the ctx nowhere else. Every ctx load is a u64 load from a
// register holding ctx; a run of them copied to consecutive stack slots is
// load_regs filling go_regs (slot i: register i), any other is the
// goroutine.
func TestGoRegisterOffsets(t *testing.T) {
	for _, arch := range objectArchs {
		t.Run(arch, func(t *testing.T) {
			spec, err := ebpf.LoadCollectionSpec(objectFile("goprobe", arch))
			if err != nil {
				t.Fatal(err)
			}
			want := arm64GoRegOffsets()
			if arch == "x86" {
				want = x86GoRegOffsets(t, spec)
			}
			for _, prog := range []string{"go_call", "go_call_multi"} {
				p := spec.Programs[prog]
				if p == nil {
					t.Fatalf("no program %s", prog)
				}
				runs, others := ctxLoads(t, p.Instructions)
				if len(runs) == 0 || len(others) == 0 {
					t.Fatalf("%s: %d copies of the registers, %d other ctx loads: the code no longer looks as this test expects",
						prog, len(runs), len(others))
				}
				for _, run := range runs {
					if len(run) != len(want.regs) {
						t.Errorf("%s: %d registers copied, want %d", prog, len(run), len(want.regs))
						continue
					}
					base := slices.MinFunc(run, func(a, b ctxCopy) int { return int(a.slot - b.slot) }).slot
					for _, c := range run {
						i := int(c.slot-base) / 8
						if i >= len(want.regs) || c.off != want.regs[i] {
							t.Errorf("%s: go_regs.r[%d] read from ctx+%d, want ctx+%d", prog, i, c.off, want.regs[min(i, len(want.regs)-1)])
						}
					}
				}
				for _, off := range others {
					if off != want.g {
						t.Errorf("%s: ctx+%d read outside load_regs, want only the goroutine at ctx+%d", prog, off, want.g)
					}
				}
			}
		})
	}
}

// ctxCopy is a u64 loaded from ctx+off and stored at stack slot fp+slot.
type ctxCopy struct{ off, slot int16 }

// ctxLoads finds the loads from the ctx in insns, following the registers
// that hold it (R1 at entry, and its copies, until overwritten or clobbered
// by a call): runs of loads copied to the stack one after the other, and
// the offsets of the rest. A linear walk suffices: the programs copy ctx
// to a callee-saved register once, first.
func ctxLoads(t *testing.T, insns asm.Instructions) (runs [][]ctxCopy, others []int16) {
	holds := map[asm.Register]bool{asm.R1: true}
	var run []ctxCopy
	lastCopy := -10
	for i, ins := range insns {
		op := ins.OpCode
		switch {
		case op.Class() == asm.LdXClass && holds[ins.Src]:
			if op.Mode() != asm.MemMode || op.Size() != asm.DWord {
				t.Errorf("%v: a ctx access not of a u64", ins)
			}
			if i+1 < len(insns) && isStackStore(insns[i+1], ins.Dst) {
				if i-lastCopy > 2 && len(run) > 0 {
					runs, run = appendRun(runs, run, &others), nil
				}
				run, lastCopy = append(run, ctxCopy{ins.Offset, insns[i+1].Offset}), i
			} else {
				others = append(others, ins.Offset)
			}
			holds[ins.Dst] = false
		case op.Class().IsALU() && op.ALUOp() == asm.Mov && op.Source() == asm.RegSource && op.Class() == asm.ALU64Class:
			holds[ins.Dst] = holds[ins.Src]
		case op.Class().IsALU() || op.Class() == asm.LdXClass || op.Class() == asm.LdClass:
			holds[ins.Dst] = false
		case ins.IsFunctionCall() || ins.IsBuiltinCall():
			for r := asm.R0; r <= asm.R5; r++ {
				holds[r] = false
			}
		}
	}
	if len(run) > 0 {
		runs = appendRun(runs, run, &others)
	}
	return runs, others
}

// appendRun keeps a run of copies as load_regs's when it is longer than
// one; a lone copy (the goroutine into a map key) is one of the others.
func appendRun(runs [][]ctxCopy, run []ctxCopy, others *[]int16) [][]ctxCopy {
	if len(run) == 1 {
		*others = append(*others, run[0].off)
		return runs
	}
	return append(runs, run)
}

// isStackStore: ins stores register r, 8 bytes, to the stack.
func isStackStore(ins asm.Instruction, r asm.Register) bool {
	op := ins.OpCode
	return op.Class() == asm.StXClass && op.Mode() == asm.MemMode && op.Size() == asm.DWord &&
		ins.Dst == asm.R10 && ins.Src == r
}
