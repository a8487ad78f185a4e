package correlator

import (
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/readyline/readyline/collector/redact"
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

// kindOf is the kind of pod's container name (KindMain when the spec does
// not list it as an init container).
func kindOf(pod *corev1.Pod, name string) ContainerKind {
	for _, e := range startOrder(pod) {
		if e.name == name {
			return e.kind
		}
	}
	return KindMain
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
	// cmd is the exec command, redacted as the kernel's argv and the
	// ExecSync commands are.
	cmd []string
}

func probesOf(c *corev1.Container) []probeSpec {
	var out []probeSpec
	for _, ps := range []struct {
		kind  ProbeKind
		probe *corev1.Probe
	}{{ProbeStartup, c.StartupProbe}, {ProbeReadiness, c.ReadinessProbe}, {ProbeLiveness, c.LivenessProbe}} {
		if ps.probe != nil {
			var cmd []string
			if ps.probe.Exec != nil {
				cmd = redact.Argv(ps.probe.Exec.Command)
			}
			out = append(out, probeSpec{ps.kind, ps.probe, handlerOf(&ps.probe.ProbeHandler), cmd})
		}
	}
	return out
}

// hookCommand is the exec command of a container's postStart hook,
// redacted, or nil.
func hookCommand(c *corev1.Container) []string {
	if c.Lifecycle == nil || c.Lifecycle.PostStart == nil || c.Lifecycle.PostStart.Exec == nil {
		return nil
	}
	return redact.Argv(c.Lifecycle.PostStart.Exec.Command)
}

// specArgv is the spec's view of the command line a container's first
// process ran with argv (as the kernel saw it): its command and args as
// the pod's spec writes them, a $(VAR) the kubelet expanded left as it is
// there, redacted; with no command in the spec, the program argv names
// (the image's entrypoint) and the spec's args. What the image adds is
// replaced by redact.Marker. nil when there is no spec or no argv.
func specArgv(c *corev1.Container, argv []string) []string {
	if c == nil || len(argv) == 0 {
		return nil
	}
	var view []string
	if len(c.Command) > 0 {
		view = append(append(view, c.Command...), c.Args...)
	} else {
		view = append([]string{argv[0]}, c.Args...)
		if len(c.Args) == 0 && len(argv) > 1 {
			view = append(view, redact.Marker) // the image's own arguments
		}
	}
	return redact.Argv(view)
}

// commandMatches reports whether a process's argv, as the kernel reported
// it (bounded, secrets redacted), is cmd, a probe's or hook's command
// redacted the same way.
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
		default:
			return false
		}
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

// probePort is the TCP port the kubelet connects to for an httpGet,
// tcpSocket or grpc probe, on the pod's IP: prober.go runProbe builds the
// request with httpprobe.NewRequestForHTTPGetAction (port through
// probe.ResolveContainerPort: a number, or a name looked up in the
// container's ports) and dials tcp/grpc probes at status.PodIP. A probe
// with its own host connects elsewhere (an exec probe not at all), except
// a loopback host on a hostNetwork pod: the kubelet dials it in its own
// network namespace, which is the pod's (kubeadm's static pods probe
// 127.0.0.1 on a named port).
func probePort(c *corev1.Container, p *corev1.Probe, hostNetwork bool) (uint16, bool) {
	switch {
	case p.HTTPGet != nil && podHost(p.HTTPGet.Host, hostNetwork):
		return resolvePort(c, p.HTTPGet.Port)
	case p.TCPSocket != nil && podHost(p.TCPSocket.Host, hostNetwork):
		return resolvePort(c, p.TCPSocket.Port)
	case p.GRPC != nil:
		return resolvePort(c, intstr.FromInt32(p.GRPC.Port))
	}
	return 0, false
}

// hookPort is the TCP port of an httpGet postStart hook on the pod's IP:
// lifecycle/handlers.go runHTTPHandler makes the same request as an
// httpGet probe (NewRequestForHTTPGetAction, to the pod's first IP unless
// the hook names a host). Other hooks make no connection (a tcpSocket hook
// is not run: handlerRunner.Run has no case for it).
func hookPort(c *corev1.Container, hostNetwork bool) (uint16, bool) {
	if c.Lifecycle == nil || c.Lifecycle.PostStart == nil {
		return 0, false
	}
	h := c.Lifecycle.PostStart.HTTPGet
	if h == nil || !podHost(h.Host, hostNetwork) {
		return 0, false
	}
	return resolvePort(c, h.Port)
}

// podHost: a probe's or hook's host reaches the pod: none (the pod's IP),
// or a loopback one when the pod shares the kubelet's network namespace.
func podHost(host string, hostNetwork bool) bool {
	return host == "" || hostNetwork && (host == "localhost" || isLoopback(host))
}

// resolvePort is probe.ResolveContainerPort (pkg/probe/util.go): a port
// number, or a name found in the container's ports; 1..65535.
func resolvePort(c *corev1.Container, port intstr.IntOrString) (uint16, bool) {
	n := int32(-1)
	switch port.Type {
	case intstr.Int:
		n = port.IntVal
	case intstr.String:
		for _, cp := range c.Ports {
			if cp.Name == port.StrVal {
				n = cp.ContainerPort
				break
			}
		}
	}
	return uint16(n), n > 0 && n < 65536
}

// connPorts are the ports the kubelet's probes and postStart hooks connect
// to on the pod's IP, for every container of the pod, sorted: with
// hostNetwork the pod's IP is the node's, and these ports are what tell its
// connections from other pods'.
func connPorts(pod *corev1.Pod) []uint16 {
	var out []uint16 // a few: a slice is cheaper than a set, on every update
	add := func(port uint16, ok bool) {
		if ok && !slices.Contains(out, port) {
			out = append(out, port)
		}
	}
	for _, e := range startOrder(pod) {
		// Not probesOf: this runs at every update of the pod, and needs no
		// (redacted) command.
		for _, p := range []*corev1.Probe{e.spec.StartupProbe, e.spec.ReadinessProbe, e.spec.LivenessProbe} {
			if p != nil {
				add(probePort(e.spec, p, pod.Spec.HostNetwork))
			}
		}
		add(hookPort(e.spec, pod.Spec.HostNetwork))
	}
	slices.Sort(out)
	return out
}
