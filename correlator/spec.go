package correlator

import (
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/readyline/readyline/collector/event"
)

// specEntry is a container of the pod spec in start order.
type specEntry struct {
	name  string
	kind  ContainerKind
	index int
	spec  *corev1.Container
}

// startOrder lists init containers (regular and sidecar) then main
// containers: the order in which the kubelet creates them.
func startOrder(pod *corev1.Pod) []specEntry {
	var out []specEntry
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		kind := KindInit
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			kind = KindSidecar
		}
		out = append(out, specEntry{c.Name, kind, i, c})
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		out = append(out, specEntry{c.Name, KindMain, i, c})
	}
	return out
}

// handlerOf names a probe's or hook's handler.
func handlerOf(h *corev1.ProbeHandler) string {
	switch {
	case h == nil:
		return ""
	case h.Exec != nil:
		return "exec"
	case h.HTTPGet != nil:
		return "httpGet"
	case h.TCPSocket != nil:
		return "tcpSocket"
	case h.GRPC != nil:
		return "grpc"
	}
	return "unknown"
}

func hookHandlerOf(h *corev1.LifecycleHandler) string {
	switch {
	case h == nil:
		return ""
	case h.Exec != nil:
		return "exec"
	case h.HTTPGet != nil:
		return "httpGet"
	case h.Sleep != nil:
		return "sleep"
	case h.TCPSocket != nil:
		return "tcpSocket"
	}
	return "unknown"
}

// probeSpec is one configured probe of a container.
type probeSpec struct {
	kind    ProbeKind
	probe   *corev1.Probe
	handler string
}

func probesOf(c *corev1.Container) []probeSpec {
	var out []probeSpec
	for _, ps := range []struct {
		kind  ProbeKind
		probe *corev1.Probe
	}{{ProbeStartup, c.StartupProbe}, {ProbeReadiness, c.ReadinessProbe}, {ProbeLiveness, c.LivenessProbe}} {
		if ps.probe != nil {
			out = append(out, probeSpec{ps.kind, ps.probe, handlerOf(&ps.probe.ProbeHandler)})
		}
	}
	return out
}

func (ps probeSpec) command() []string {
	if ps.probe.Exec == nil {
		return nil
	}
	return ps.probe.Exec.Command
}

// commandMatches reports whether a process's argv, as the kernel reported
// it (bounded, secrets redacted), is the command of a probe or hook.
func commandMatches(argv []string, truncated bool, cmd []string) bool {
	if len(cmd) == 0 || len(argv) == 0 || len(argv) > len(cmd) {
		return false
	}
	if len(argv) < len(cmd) && !truncated {
		return false
	}
	for i, a := range argv {
		c := cmd[i]
		switch {
		case a == c:
		case truncated && i == len(argv)-1 && strings.HasPrefix(c, a):
		case strings.Contains(a, event.Redacted) && redactedMatches(a, c):
		default:
			return false
		}
	}
	return true
}

// redactedMatches: a is c with some values replaced by event.Redacted.
func redactedMatches(a, c string) bool {
	parts := strings.Split(a, event.Redacted)
	if !strings.HasPrefix(c, parts[0]) {
		return false
	}
	rest := c[len(parts[0]):]
	for _, part := range parts[1:] {
		i := strings.Index(rest, part)
		if i < 0 {
			return false
		}
		rest = rest[i+len(part):]
	}
	return true
}

// isRuntimeNoise: the OCI runtime's own process on its way into the
// container (runc init), not something the pod runs.
func isRuntimeNoise(r *procRecord) bool {
	base := path.Base(r.filename)
	if base == "runc" || base == "crun" || r.filename == "/proc/self/exe" {
		return true
	}
	if len(r.argv) >= 2 && r.argv[1] == "init" {
		b := path.Base(r.argv[0])
		return b == "runc" || b == "crun"
	}
	return false
}

// probePort is the TCP port an httpGet or tcpSocket probe connects to,
// named ports resolved through the container's ports.
func probePort(c *corev1.Container, p *corev1.Probe) (uint16, bool) {
	var port intstr.IntOrString
	switch {
	case p.HTTPGet != nil:
		port = p.HTTPGet.Port
	case p.TCPSocket != nil:
		port = p.TCPSocket.Port
	default:
		return 0, false
	}
	if port.Type == intstr.Int {
		return uint16(port.IntVal), port.IntVal > 0 && port.IntVal < 65536
	}
	for _, cp := range c.Ports {
		if cp.Name == port.StrVal {
			return uint16(cp.ContainerPort), true
		}
	}
	return 0, false
}
