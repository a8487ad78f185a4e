package bpf

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/features"
	"golang.org/x/sys/unix"
)

// KernelRequirements is what readyline needs of the kernel to load its
// process tracer, the one it cannot run without: the README's
// Requirements say the same.
const KernelRequirements = "Linux 5.17+ built with BTF (/sys/kernel/btf/vmlinux, CONFIG_DEBUG_INFO_BTF=y), " +
	"BPF ring buffers, tp_btf programs and the bpf_loop helper (README.md, Requirements)"

// ErrKernelUnsupported is what CheckKernel's error wraps.
var ErrKernelUnsupported = errors.New("the kernel lacks what readyline needs")

// kernelBTFPath is where the kernel publishes its own BTF: tp_btf programs
// are checked against that one (a vmlinux file elsewhere only helps CO-RE).
const kernelBTFPath = "/sys/kernel/btf/vmlinux"

// processTracepoints are the tp_btf targets of process.bpf.c.
var processTracepoints = []string{"sched_process_exec", "sched_process_exit", "sched_process_fork"}

// CheckKernel returns an error wrapping ErrKernelUnsupported that names
// everything in KernelRequirements the running kernel lacks, or nil. What
// it cannot tell without privileges (a probe refused with EPERM) it leaves
// to the programs' load to report.
func CheckKernel() error {
	return checkKernel(runningKernel)
}

// kernelProbes are the questions CheckKernel asks, apart for tests.
type kernelProbes struct {
	release string
	btfPath string
	loadBTF func(path string) (*btf.Spec, error)
	ringBuf func() error // nil, or ebpf.ErrNotSupported
	bpfLoop func() error // nil, or ebpf.ErrNotSupported
}

var runningKernel = kernelProbes{
	release: kernelRelease(),
	btfPath: kernelBTFPath,
	loadBTF: func(path string) (*btf.Spec, error) {
		if _, err := os.Stat(path); err != nil {
			return nil, err
		}
		// The same file, mapped and decoded lazily: cheaper than a reader.
		return btf.LoadKernelSpec()
	},
	ringBuf: func() error { return features.HaveMapType(ebpf.RingBuf) },
	bpfLoop: func() error { return features.HaveProgramHelper(ebpf.Kprobe, asm.FnLoop) },
}

func checkKernel(k kernelProbes) error {
	var missing []string
	spec, err := k.loadBTF(k.btfPath)
	switch {
	case errors.Is(err, os.ErrNotExist):
		missing = append(missing, "no kernel BTF at "+k.btfPath+" (a kernel built without CONFIG_DEBUG_INFO_BTF)")
	case err != nil:
		missing = append(missing, fmt.Sprintf("cannot read the kernel's BTF at %s: %v", k.btfPath, err))
	default:
		// A tp_btf program attaches to the tracepoint's btf_trace_<name>.
		var absent []string
		for _, tp := range processTracepoints {
			var td *btf.Typedef
			if spec.TypeByName("btf_trace_"+tp, &td) != nil {
				absent = append(absent, tp)
			}
		}
		if len(absent) > 0 {
			missing = append(missing, "no tp_btf target for "+strings.Join(absent, ", ")+" in the kernel's BTF")
		}
	}
	if err := k.ringBuf(); errors.Is(err, ebpf.ErrNotSupported) {
		missing = append(missing, "no BPF ring buffers (Linux 5.8+)")
	}
	if err := k.bpfLoop(); errors.Is(err, ebpf.ErrNotSupported) {
		missing = append(missing, "no bpf_loop helper (Linux 5.17+)")
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("%w: Linux %s has %s; readyline needs %s", ErrKernelUnsupported, k.release, strings.Join(missing, "; "), KernelRequirements)
}

// kernelRelease is uname -r, or "?" when it cannot be read.
func kernelRelease() string {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return "?"
	}
	return unix.ByteSliceToString(u.Release[:])
}
