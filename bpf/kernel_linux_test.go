package bpf

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"

	"github.com/readyline/readyline/collector/testenv"
)

// fakeKernelBTF is a BTF blob holding a btf_trace_<name> typedef for each
// tracepoint given, as a kernel with those tp_btf targets has.
func fakeKernelBTF(t *testing.T, tracepoints ...string) func(string) (*btf.Spec, error) {
	t.Helper()
	var b btf.Builder
	for _, tp := range tracepoints {
		fn := &btf.Pointer{Target: &btf.FuncProto{Return: (*btf.Void)(nil)}}
		if _, err := b.Add(&btf.Typedef{Name: "btf_trace_" + tp, Type: fn}); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := b.Marshal(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return func(string) (*btf.Spec, error) { return btf.LoadSpecFromReader(bytes.NewReader(raw)) }
}

func TestCheckKernel(t *testing.T) {
	complete := fakeKernelBTF(t, processTracepoints...)
	missingFile := func(path string) (*btf.Spec, error) {
		return nil, fmt.Errorf("open %s: %w", path, os.ErrNotExist)
	}
	supported := func() error { return nil }
	unsupported := func() error { return fmt.Errorf("probe: %w", ebpf.ErrNotSupported) }
	refused := func() error { return errors.New("operation not permitted") }
	for _, tc := range []struct {
		name string
		k    kernelProbes
		want []string // in the error, besides the requirements; none: no error
	}{
		{"everything", kernelProbes{loadBTF: complete, ringBuf: supported, bpfLoop: supported}, nil},
		{"no BTF", kernelProbes{loadBTF: missingFile, ringBuf: supported, bpfLoop: supported},
			[]string{"no kernel BTF at /sys/kernel/btf/vmlinux", "CONFIG_DEBUG_INFO_BTF"}},
		{"no fork tracepoint in BTF", kernelProbes{loadBTF: fakeKernelBTF(t, "sched_process_exec", "sched_process_exit"), ringBuf: supported, bpfLoop: supported},
			[]string{"no tp_btf target for sched_process_fork"}},
		{"no ring buffers", kernelProbes{loadBTF: complete, ringBuf: unsupported, bpfLoop: supported},
			[]string{"no BPF ring buffers (Linux 5.8+)"}},
		{"5.15: no bpf_loop", kernelProbes{loadBTF: complete, ringBuf: supported, bpfLoop: unsupported},
			[]string{"no bpf_loop helper (Linux 5.17+)"}},
		{"all of it", kernelProbes{loadBTF: missingFile, ringBuf: unsupported, bpfLoop: unsupported},
			[]string{"no kernel BTF", "no BPF ring buffers", "no bpf_loop"}},
		// Without privileges a probe cannot tell: the load will say why.
		{"probes refused", kernelProbes{loadBTF: complete, ringBuf: refused, bpfLoop: refused}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.k.release, tc.k.btfPath = "5.4.0-test", kernelBTFPath
			err := checkKernel(tc.k)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrKernelUnsupported) {
				t.Fatalf("error %v, want one wrapping ErrKernelUnsupported", err)
			}
			for _, want := range append(tc.want, "Linux 5.4.0-test has", KernelRequirements) {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}

// TestIntegrationKernelHasWhatReadylineNeeds asks the running kernel:
// deploy/kernel/run-6.1.sh runs it on Debian 12's.
func TestIntegrationKernelHasWhatReadylineNeeds(t *testing.T) {
	testenv.RequirePrivileged(t)
	if err := CheckKernel(); err != nil {
		t.Fatal(err)
	}
}
