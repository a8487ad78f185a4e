package gofunc

import (
	"debug/elf"
	"fmt"
)

// arch is what the reader needs to know of one instruction set: how to
// recognize its executables, how its .gopclntab counts, where the Go
// runtime starts, and how to read the few instructions that matter. The
// ELF header picks one (archOf); nothing else in the package depends on
// the architecture.
type arch struct {
	// goarch is the architecture's GOARCH, as Binary.Arch returns it.
	goarch  string
	machine elf.Machine
	// quantum is .gopclntab's instruction size quantum, the unit of its
	// pc tables: 1 on amd64, 4 on arm64 (function entries are byte
	// offsets on both).
	quantum byte
	// rt0 and rt0Arch are the runtime's entry points on Linux: an
	// internally linked executable starts at rt0, whose first instruction
	// jumps to rt0Arch (runtime/rt0_linux_GOARCH.s).
	rt0, rt0Arch string
	// paddedSymbols: the assembler pads each function's own code to the
	// function alignment, so that the symbol table's sizes count the
	// padding too (arm64, with zero words); otherwise the linker pads
	// between symbols and a symbol's size is exact (amd64).
	paddedSymbols bool
	// branch decodes the instruction code starts with, at address pc.
	branch func(code []byte, pc uint64) branchInst
	// disassemble finds the RETs of one function's code, from its entry.
	disassemble func(code []byte) Disasm
}

// branchInst is what branch found at the start of some code.
type branchInst struct {
	// len is where the next instruction starts: the instruction's length,
	// or the distance to the next place one could start when the code
	// starts with no valid instruction.
	len int
	// kind is what kind of direct branch it is; target, where it goes.
	kind   branchKind
	target uint64
}

type branchKind int

const (
	notBranch  branchKind = iota // anything else, indirect branches too
	directJump                   // an unconditional jump to a fixed address
	directCall                   // a call of a fixed address
)

var (
	archAMD64 = &arch{
		goarch:      "amd64",
		machine:     elf.EM_X86_64,
		quantum:     1,
		rt0:         "_rt0_amd64_linux",
		rt0Arch:     "_rt0_amd64",
		branch:      branchAMD64,
		disassemble: disassembleAMD64,
	}
	archARM64 = &arch{
		goarch:        "arm64",
		machine:       elf.EM_AARCH64,
		quantum:       4,
		rt0:           "_rt0_arm64_linux",
		rt0Arch:       "_rt0_arm64",
		paddedSymbols: true,
		branch:        branchARM64,
		disassemble:   disassembleARM64,
	}
	archs = []*arch{archAMD64, archARM64}
)

// archOf returns the architecture of a 64-bit little-endian ELF file for
// machine, and ErrUnsupportedArch for any other file.
func archOf(class elf.Class, data elf.Data, machine elf.Machine) (*arch, error) {
	if class == elf.ELFCLASS64 && data == elf.ELFDATA2LSB {
		for _, a := range archs {
			if a.machine == machine {
				return a, nil
			}
		}
	}
	return nil, fmt.Errorf("%w: %v %v %v (only linux/amd64 and linux/arm64 are supported)", ErrUnsupportedArch, class, data, machine)
}
