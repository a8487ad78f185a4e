// Package collector holds readyline's sources of facts about a node: process
// events from the kernel (exec, fork, exit, attributed to containers by their
// cgroup), the container runtime's view through the CRI, and this node's pods
// from the API server. Sources convert kernel time to wall-clock time once
// and hand out event.Event values.
//
// Each source follows one shape: New...(cfg, logger) then Run(ctx), which
// blocks, returns nil on cancellation and releases what it opened.
package collector
