package event

import (
	"strings"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// keptAnnotations are the annotations the correlator reads: a mirror pod's
// kubernetes.io/config.mirror and the static pod's config hash it falls
// back on, and KEP-5915's trace context.
var keptAnnotations = []string{corev1.MirrorPodAnnotationKey, "kubernetes.io/config.hash", "tracing.k8s.io/traceparent"}

// Bounds of the strings a stripped pod keeps, beyond which the pod's author
// (a tenant) could otherwise make every copy of it large. Each is longer
// than anything readyline compares the string with, so a cut one compares
// as the whole one did.
const (
	// MaxAnnotationBytes bounds a kept annotation's value: a config hash
	// has 32 bytes, a valid traceparent 55 (the correlator reads at most 64).
	MaxAnnotationBytes = 256
	// MaxCommandBytes bounds an exec probe's or hook's command, as the
	// kernel lays out argv (each argument and its NUL): the kernel reports
	// at most 512 bytes of a process's argv and the kubelet's ExecSync
	// calls at most 6 arguments of 63 bytes, so a command is matched with
	// what ran on its first 512 bytes only (a longer one never matches a
	// process that was not cut).
	MaxCommandBytes = 1024
	// MaxImageBytes bounds an image reference (a registry host, a
	// repository of at most 255 bytes, a tag of 128 or a digest).
	MaxImageBytes = 1024
	// MaxHostBytes bounds an httpGet or tcpSocket handler's host (a DNS
	// name has at most 253 bytes, an address fewer).
	MaxHostBytes = 256
	// MaxTerminationMessageBytes bounds a terminated container's message,
	// which the container itself writes: the kubelet keeps at most 4 KiB
	// of it, another writer of the pod's status could put more.
	MaxTerminationMessageBytes = 4096
)

// StripPod returns a copy of pod holding only what readyline reads of it,
// and nil for nil. Kept: the name, namespace, UID, resourceVersion,
// creation and deletion timestamps and the annotations the correlator
// reads (a mirror pod's, a traceparent); of the
// spec, the node name, hostNetwork, readinessGates, the image volumes and,
// for each init and main container, its name, image, restartPolicy, ports
// and the handlers and timing of its probes and postStart hook; of the
// status, the phase, reason, message, start time, addresses, conditions and
// each container's status without its resources and image. Everything else (managedFields, labels, env, command and args,
// resources, volumes, ephemeral containers, kubectl's last-applied copy of
// the whole object, future fields) is dropped, and the strings a tenant
// sets that stay are bounded (Max*Bytes).
//
// The copy shares nothing with pod but unchanged strings: its holder may
// change it, and pod may be an informer's cached object. StripPod of a
// stripped pod is an equal pod.
func StripPod(pod *corev1.Pod) *corev1.Pod {
	if pod == nil {
		return nil
	}
	out := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:              pod.Name,
			Namespace:         pod.Namespace,
			UID:               pod.UID,
			ResourceVersion:   pod.ResourceVersion,
			CreationTimestamp: pod.CreationTimestamp,
			DeletionTimestamp: pod.DeletionTimestamp.DeepCopy(),
		},
		Spec: corev1.PodSpec{
			NodeName:       pod.Spec.NodeName,
			HostNetwork:    pod.Spec.HostNetwork,
			RestartPolicy:  pod.Spec.RestartPolicy,
			ReadinessGates: cloneSlice(pod.Spec.ReadinessGates),
			InitContainers: stripContainers(pod.Spec.InitContainers),
			Containers:     stripContainers(pod.Spec.Containers),
		},
		Status: stripStatus(&pod.Status),
	}
	for _, k := range keptAnnotations {
		if v, ok := pod.Annotations[k]; ok {
			if out.Annotations == nil {
				out.Annotations = make(map[string]string, 1)
			}
			out.Annotations[k] = cut(v, MaxAnnotationBytes)
		}
	}
	for _, v := range pod.Spec.Volumes {
		if v.Image != nil {
			out.Spec.Volumes = append(out.Spec.Volumes, corev1.Volume{Name: v.Name,
				VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: cut(v.Image.Reference, MaxImageBytes)}}})
		}
	}
	return out
}

func stripContainers(list []corev1.Container) []corev1.Container {
	if list == nil {
		return nil
	}
	out := make([]corev1.Container, len(list))
	for i := range list {
		c := &list[i]
		s := &out[i]
		s.Name, s.Image = c.Name, cut(c.Image, MaxImageBytes)
		if c.RestartPolicy != nil {
			rp := *c.RestartPolicy
			s.RestartPolicy = &rp
		}
		for _, p := range c.Ports {
			s.Ports = append(s.Ports, corev1.ContainerPort{Name: p.Name, ContainerPort: p.ContainerPort})
		}
		s.StartupProbe, s.ReadinessProbe, s.LivenessProbe = stripProbe(c.StartupProbe), stripProbe(c.ReadinessProbe), stripProbe(c.LivenessProbe)
		if c.Lifecycle != nil && c.Lifecycle.PostStart != nil {
			h := c.Lifecycle.PostStart
			s.Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{
				Exec:      stripExec(h.Exec),
				HTTPGet:   stripHTTPGet(h.HTTPGet),
				TCPSocket: stripTCPSocket(h.TCPSocket),
				Sleep:     h.Sleep.DeepCopy(),
			}}
		}
	}
	return out
}

// stripProbe keeps a probe's handler (what it runs or connects to) and the
// timing the kubelet applies; not its timeout or HTTP path and headers.
func stripProbe(p *corev1.Probe) *corev1.Probe {
	if p == nil {
		return nil
	}
	return &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{
			Exec:      stripExec(p.Exec),
			HTTPGet:   stripHTTPGet(p.HTTPGet),
			TCPSocket: stripTCPSocket(p.TCPSocket),
			GRPC:      stripGRPC(p.GRPC),
		},
		InitialDelaySeconds: p.InitialDelaySeconds,
		PeriodSeconds:       p.PeriodSeconds,
		SuccessThreshold:    p.SuccessThreshold,
		FailureThreshold:    p.FailureThreshold,
	}
}

func stripExec(e *corev1.ExecAction) *corev1.ExecAction {
	if e == nil {
		return nil
	}
	return &corev1.ExecAction{Command: cutCommand(e.Command)}
}

func stripHTTPGet(h *corev1.HTTPGetAction) *corev1.HTTPGetAction {
	if h == nil {
		return nil
	}
	return &corev1.HTTPGetAction{Host: cut(h.Host, MaxHostBytes), Port: h.Port}
}

func stripTCPSocket(t *corev1.TCPSocketAction) *corev1.TCPSocketAction {
	if t == nil {
		return nil
	}
	return &corev1.TCPSocketAction{Host: cut(t.Host, MaxHostBytes), Port: t.Port}
}

func stripGRPC(g *corev1.GRPCAction) *corev1.GRPCAction {
	if g == nil {
		return nil
	}
	return &corev1.GRPCAction{Port: g.Port}
}

func stripStatus(st *corev1.PodStatus) corev1.PodStatus {
	out := corev1.PodStatus{
		Phase:                 st.Phase,
		Message:               st.Message,
		Reason:                st.Reason,
		HostIP:                st.HostIP,
		HostIPs:               cloneSlice(st.HostIPs),
		PodIP:                 st.PodIP,
		PodIPs:                cloneSlice(st.PodIPs),
		StartTime:             st.StartTime.DeepCopy(),
		InitContainerStatuses: stripContainerStatuses(st.InitContainerStatuses),
		ContainerStatuses:     stripContainerStatuses(st.ContainerStatuses),
	}
	if st.Conditions != nil {
		out.Conditions = make([]corev1.PodCondition, len(st.Conditions))
		for i, c := range st.Conditions {
			out.Conditions[i] = corev1.PodCondition{Type: c.Type, Status: c.Status,
				LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message}
		}
	}
	return out
}

func stripContainerStatuses(list []corev1.ContainerStatus) []corev1.ContainerStatus {
	if list == nil {
		return nil
	}
	out := make([]corev1.ContainerStatus, len(list))
	for i := range list {
		cs := &list[i]
		out[i] = corev1.ContainerStatus{
			Name:                 cs.Name,
			State:                stripState(&cs.State),
			LastTerminationState: stripState(&cs.LastTerminationState),
			Ready:                cs.Ready,
			RestartCount:         cs.RestartCount,
			ContainerID:          cs.ContainerID,
		}
		if cs.Started != nil {
			started := *cs.Started
			out[i].Started = &started
		}
	}
	return out
}

// stripState keeps a container state without its signal and image.
func stripState(s *corev1.ContainerState) corev1.ContainerState {
	var out corev1.ContainerState
	if w := s.Waiting; w != nil {
		out.Waiting = &corev1.ContainerStateWaiting{Reason: w.Reason, Message: w.Message}
	}
	if r := s.Running; r != nil {
		out.Running = &corev1.ContainerStateRunning{StartedAt: r.StartedAt}
	}
	if t := s.Terminated; t != nil {
		out.Terminated = &corev1.ContainerStateTerminated{ExitCode: t.ExitCode, Reason: t.Reason,
			Message: cut(t.Message, MaxTerminationMessageBytes), StartedAt: t.StartedAt, FinishedAt: t.FinishedAt, ContainerID: t.ContainerID}
	}
	return out
}

// cutCommand returns the arguments of cmd that begin within its first
// MaxCommandBytes (each argument counted with its NUL, as argv is laid
// out), the last one cut at that bound; cmd itself when it is shorter.
func cutCommand(cmd []string) []string {
	if cmd == nil {
		return nil
	}
	out := make([]string, 0, len(cmd))
	n := 0
	for _, arg := range cmd {
		if n >= MaxCommandBytes {
			break
		}
		out = append(out, cut(arg, MaxCommandBytes-n))
		n += len(arg) + 1
	}
	return out
}

// cut returns s when it has at most n bytes, else a copy of its first n
// bytes at most, cut on a rune boundary (a copy: s may be a large string
// whose memory the prefix would otherwise keep).
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return strings.Clone(s[:n])
}

func cloneSlice[T any](s []T) []T {
	if s == nil {
		return nil
	}
	return append(make([]T, 0, len(s)), s...)
}
