// Package collector holds readyline's sources of facts about a node: process
// events from the kernel (exec, fork, exit, attributed to containers by their
// cgroup), the container runtime's view through the CRI, and this node's pods
// from the API server. Sources convert kernel time to wall-clock time once
// and hand out event.Event values.
//
// Each source follows one shape: New...(cfg, logger) then Run(ctx), which
// blocks, returns nil on cancellation and releases what it opened. Each is
// a Source (sources.go): its name, its losses and its ring buffer, so the
// daemon runs and accounts for all of them alike; NodeSources
// (sources_linux.go) wires them to one another (the runtime names the
// containers the kernel sees, sizes the kubelet's pulls, and the TCP
// source follows the kubelet the kubelet-call source probes).
//
// Where each source lives:
//
//   - process_linux.go, decode.go, cgroup*.go, scope.go, proctable.go: the
//     kernel's exec, fork and exit records (ProcessSource).
//   - tcp*.go: the kubelet's TCP connections to pods, its httpGet and
//     tcpSocket probes (TCPSource).
//   - kubelet_*.go: the kubelet's own calls, to the runtime (its CRI
//     client) and to volume plugins (kubelet_volumes.go), timed by uprobes
//     (KubeletCallSource, kubelet_calls_linux.go; its eBPF program is
//     bpf/goprobe.bpf.c): finding the kubelet process
//     (kubelet_find_linux.go), reading its binary (kubelet_binary_linux.go),
//     the methods probed per kubelet version (kubelet_methods.go) and the
//     probes' records (kubelet_gocall.go).
//   - runtime*.go: the container runtime's own API, through the CRI
//     (RuntimeSource), asked for names and timestamps; nothing is probed
//     there.
//   - podwatch.go, podevents.go: the API server's pods and their Events
//     (PodWatch).
//   - ringbuf_linux.go, ringloss.go, drained.go: what the kernel sources
//     share around their ring buffers (ringSource, readRing).
package collector
