package podtrace

import (
	"path"
	"time"

	"github.com/readyline/readyline/correlator"
)

// ContainerSpanName is the name of the span of one container attempt, its
// correlator.ContainerLabel: "init <name>", "sidecar <name>" or
// "container <name>".
func ContainerSpanName(c *correlator.Container) string {
	return correlator.ContainerLabel(c.Kind, c.Name)
}

// ProbeSpanName is the name of a probe attempt's span: "startupProbe",
// "readinessProbe" or "livenessProbe".
func ProbeSpanName(kind correlator.ProbeKind) string { return string(kind) + "Probe" }

// ProcessSpanName is the name of an entrypoint process span: "process sleep".
func ProcessSpanName(p *correlator.Process) string {
	name := p.Filename
	if name == "" && len(p.Argv) > 0 {
		name = p.Argv[0]
	}
	if name == "" {
		return "process"
	}
	return "process " + path.Base(name)
}

// SandboxStart is where a replaced sandbox's span (and its row of the
// waterfalls) begins: the earliest known of the sandbox, Begin, or its
// creation when the runtime's clock put that first.
func SandboxStart(sb *correlator.Sandbox) time.Time {
	start := sb.Begin()
	if !sb.Created.IsZero() && (start.IsZero() || sb.Created.Before(start)) {
		start = sb.Created
	}
	return start
}
