// Package bpf holds readyline's eBPF programs and their bpf2go bindings.
//
// The generated *_bpfel.go and *_bpfel.o files are committed, so building
// readyline needs no clang; `make generate` rebuilds them with Debian's
// clang 14 and `make verify-generate` fails when they are stale. Each
// program is compiled for amd64 (*_x86_bpfel) and arm64 (*_arm64_bpfel);
// bpf2go's build constraints embed the one for GOARCH.
package bpf

//go:generate go tool bpf2go -cc ${BPF_CLANG} -cflags ${BPF_CFLAGS} -target amd64,arm64 -type event_header -type exec_event -type exit_event -type fork_event -type cgroup_event -type event_type Process process.bpf.c -- -I.
//go:generate go tool bpf2go -cc ${BPF_CLANG} -cflags ${BPF_CFLAGS} -target amd64,arm64 -type go_call_event -type func_spec -type deref_spec -type go_call_event_type -type deref_kind Goprobe goprobe.bpf.c -- -I.
//go:generate go tool bpf2go -cc ${BPF_CLANG} -cflags ${BPF_CFLAGS} -target amd64,arm64 -type event_header -type state_event -type event_type Tcp tcp.bpf.c -- -I.
