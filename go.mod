module github.com/readyline/readyline

go 1.26

require (
	github.com/cilium/ebpf v0.22.0 // indirect
	golang.org/x/sys v0.43.0 // indirect
)

tool github.com/cilium/ebpf/cmd/bpf2go
