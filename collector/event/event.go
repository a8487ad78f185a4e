// Package event defines the facts readyline's sources report and the
// correlator consumes, and their JSON lines encoding (one event per line, the
// format of `readyline events` and of recordings).
//
// The package depends on the standard library, the Kubernetes API types and
// package redact only, so the correlator can read recordings without eBPF,
// client-go or OTel.
package event

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/readyline/readyline/collector/redact"
)

// Type names an event in its JSON encoding (the "type" field).
type Type string

// The event types.
const (
	TypeExec Type = "exec"
	TypeExit Type = "exit"
	TypeFork Type = "fork"
)

// Event is one fact with the wall-clock time it happened.
type Event interface {
	// Type is the event's name in its JSON encoding.
	Type() Type
	// When is the wall-clock time the event happened.
	When() time.Time
}

// Scope says where a process runs.
type Scope string

// Scopes of a process.
const (
	// ScopePod: in a pod's cgroup (a container, or the pod's own cgroup).
	ScopePod Scope = "pod"
	// ScopeRuntime: on the host, a container runtime helper (runc, a shim).
	ScopeRuntime Scope = "runtime"
	// ScopeCNI: on the host, a CNI plugin the runtime runs to set up a pod's
	// network.
	ScopeCNI Scope = "cni"
	// ScopeHost: any other host process.
	ScopeHost Scope = "host"
)

// Redacted replaces the secrets in argv, ExecSync commands and recorded
// pods (see package redact).
const Redacted = redact.Marker

// Process identifies a process and the container it belongs to. PID and PPID
// are thread group ids (what userspace calls process ids).
type Process struct {
	PID         uint32 `json:"pid"`
	PPID        uint32 `json:"ppid"`
	Comm        string `json:"comm,omitempty"`
	CgroupID    uint64 `json:"cgroup_id"`
	Cgroup      string `json:"cgroup,omitempty"`
	ContainerID string `json:"container_id,omitempty"`
	PodUID      string `json:"pod_uid,omitempty"`
	Scope       Scope  `json:"scope"`
}

// ProcessExec is a successful execve: a new program in process PID.
type ProcessExec struct {
	Time time.Time `json:"time"`
	Process
	Filename string `json:"filename"`
	// Argv is kept for pod processes and runtime helpers only, with values
	// that look like secrets redacted; nil for other host processes.
	Argv []string `json:"argv,omitempty"`
	// ArgvTruncated is set when the kernel copied only part of argv.
	ArgvTruncated bool `json:"argv_truncated,omitempty"`
	// CNIContainerID and CNICommand are a CNI plugin's CNI_CONTAINERID (the
	// sandbox it works for) and CNI_COMMAND (ADD, DEL, CHECK), the only
	// environment variables readyline reads.
	CNIContainerID string `json:"cni_container_id,omitempty"`
	CNICommand     string `json:"cni_command,omitempty"`
}

// ProcessExit is the end of a whole process (its last thread), reported once.
type ProcessExit struct {
	Time time.Time `json:"time"`
	Process
	// Filename is the program the process last executed, when known.
	Filename string `json:"filename,omitempty"`
	// ExitCode is the exit status (0-255); meaningless when Signal != 0.
	ExitCode int `json:"exit_code"`
	// Signal is the signal that terminated the process, 0 if it exited.
	Signal     int  `json:"signal"`
	CoreDumped bool `json:"core_dumped,omitempty"`
}

// ProcessFork is a new process (not a thread): PID is the child.
type ProcessFork struct {
	Time time.Time `json:"time"`
	Process
}

func (*ProcessExec) Type() Type        { return TypeExec }
func (*ProcessExit) Type() Type        { return TypeExit }
func (*ProcessFork) Type() Type        { return TypeFork }
func (e *ProcessExec) When() time.Time { return e.Time }
func (e *ProcessExit) When() time.Time { return e.Time }
func (e *ProcessFork) When() time.Time { return e.Time }

// ErrUnknownType is returned by Unmarshal for an event type it does not know.
var ErrUnknownType = errors.New("unknown event type")

// Marshal encodes e as one JSON object whose first field is "type".
func Marshal(e Event) ([]byte, error) {
	body, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("encoding %s event: %w", e.Type(), err)
	}
	out := make([]byte, 0, len(body)+len(e.Type())+12)
	out = append(out, `{"type":"`...)
	out = append(out, e.Type()...)
	out = append(out, '"')
	if len(body) > 2 { // body is a non-empty object: {...}
		out = append(out, ',')
	}
	return append(out, body[1:]...), nil
}

// Unmarshal decodes one JSON object written by Marshal.
func Unmarshal(data []byte) (Event, error) {
	var head struct {
		Type Type `json:"type"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("decoding event: %w", err)
	}
	var e Event
	switch head.Type {
	case TypeExec:
		e = new(ProcessExec)
	case TypeExit:
		e = new(ProcessExit)
	case TypeFork:
		e = new(ProcessFork)
	case TypeContainer:
		e = new(ContainerInfo)
	case TypeCRICall:
		e = new(CRICall)
	case TypePod:
		e = new(PodUpdate)
	case TypeTick:
		e = new(Tick)
	case TypeTCP:
		e = new(TCPConnection)
	case TypeSource:
		e = new(SourceStatus)
	case TypeDrained:
		e = new(Drained)
	case TypePodEvents:
		e = new(PodEvents)
	case TypePullSample:
		e = new(PullSample)
	default:
		return nil, fmt.Errorf("%w %q", ErrUnknownType, head.Type)
	}
	if err := json.Unmarshal(data, e); err != nil {
		return nil, fmt.Errorf("decoding %s event: %w", head.Type, err)
	}
	return e, nil
}
