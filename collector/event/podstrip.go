package event

import (
	"slices"
	"strconv"
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
	// MaxMessageBytes bounds every other message of the status (the pod's,
	// a condition's, a waiting container's): the kubelet's are a line or
	// two, a hook's error carries its output (the kubelet keeps 10 KiB).
	MaxMessageBytes = 4096
)

// Bounds of how many of a kind a stripped pod keeps: the API server takes
// a pod of 1.5 MiB, which holds 70 000 ports or thousands of containers,
// and the pod's author is a tenant. What goes beyond is counted in the
// pod's CutAnnotation. Each is far above what a pod that runs has.
const (
	// MaxContainers bounds the init containers, and apart the main ones,
	// of the spec and of the status.
	MaxContainers = 64
	// MaxPorts bounds the ports kept of one container (a probe may name
	// one).
	MaxPorts = 64
	// MaxEnv bounds the environment variables kept of one container (their
	// names and Secret references, never their values), and apart its
	// envFrom sources.
	MaxEnv = 256
	// MaxVolumes bounds the volumes kept.
	MaxVolumes = 64
	// MaxConditions bounds the status' conditions.
	MaxConditions = 32
)

// MaxStrippedBytes bounds a stripped pod, as its protobuf encoding counts
// it: within the lists' bounds a pod can still hold 64 containers of a
// kilobyte of commands each. A pod over it loses, until it fits, the names
// of its variables that are not a Secret's, then its command lines past
// 128 bytes, then its ports past 8 a container, then its containers past 8
// of each list, then its volumes past 8 (each counted in CutAnnotation).
// A stripped pod of a Deployment takes about 1.4 KiB.
const MaxStrippedBytes = 32 << 10

// CutAnnotation is set on a stripped pod that had more of a kind than it
// keeps: "containers=N,ports=N,env=N,volumes=N,conditions=N,commands=N",
// each the number left out (only those not zero; commands: the command
// lines cut short to fit MaxStrippedBytes).
const CutAnnotation = "readyline.dev/cut"

// StripPod returns a copy of pod holding only what readyline reads of it,
// and nil for nil. Kept: the name, namespace, UID, resourceVersion,
// creation and deletion timestamps and the annotations the correlator
// reads (a mirror pod's, a traceparent); of the spec, the node name,
// hostNetwork, readinessGates, the image volumes, the Secret and projected
// volumes (what they take from where, for package secrets), the names of
// claim, CSI and ephemeral volumes (with the claim, the driver), and for each
// init and main container its name, image, command and args, restartPolicy,
// ports, the names of its environment variables with their Secret
// references (never a value) and its envFrom sources, and the handlers and
// timing of its probes and postStart hook; of the status, the phase,
// reason, message, start time, addresses, conditions and each container's
// status without its resources and image. Everything else (managedFields,
// labels, env values, resources, other volumes, ephemeral containers,
// kubectl's last-applied copy of the whole object, future fields) is
// dropped, the strings a tenant sets that stay are bounded (Max*Bytes) and
// so are the lists (MaxContainers, ...: what is left out is counted in
// CutAnnotation).
//
// The copy shares nothing with pod but unchanged strings: its holder may
// change it, and pod may be an informer's cached object. StripPod of a
// stripped pod is an equal pod.
func StripPod(pod *corev1.Pod) *corev1.Pod {
	if pod == nil {
		return nil
	}
	var cuts cutCounts
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
			InitContainers: stripContainers(pod.Spec.InitContainers, &cuts),
			Containers:     stripContainers(pod.Spec.Containers, &cuts),
		},
		Status: stripStatus(&pod.Status, &cuts),
	}
	for _, k := range keptAnnotations {
		if v, ok := pod.Annotations[k]; ok {
			if out.Annotations == nil {
				out.Annotations = make(map[string]string, 1)
			}
			out.Annotations[k] = cut(v, MaxAnnotationBytes)
		}
	}
	for i := range pod.Spec.Volumes {
		if v := stripVolume(&pod.Spec.Volumes[i]); v != nil {
			if len(out.Spec.Volumes) == MaxVolumes {
				cuts.volumes++
				continue
			}
			out.Spec.Volumes = append(out.Spec.Volumes, *v)
		}
	}
	fit(out, &cuts)
	if n := cutsOf(pod); n.any() {
		// A stripped pod again: its own count, not one of nothing.
		cuts = n
	}
	if cuts.any() {
		if out.Annotations == nil {
			out.Annotations = make(map[string]string, 1)
		}
		out.Annotations[CutAnnotation] = cuts.String()
	}
	return out
}

// fit makes a stripped pod fit MaxStrippedBytes (see there).
func fit(pod *corev1.Pod, cuts *cutCounts) {
	steps := []func(c *corev1.Container){
		func(c *corev1.Container) { // the names that only tell which are not a Secret's
			kept := c.Env[:0]
			for _, e := range c.Env {
				if e.ValueFrom != nil {
					kept = append(kept, e)
				} else {
					cuts.env++
				}
			}
			c.Env = slices.Clip(kept)
		},
		func(c *corev1.Container) {
			short := func(cmd []string) []string {
				out := cutCommandTo(cmd, 128)
				if len(out) != len(cmd) || (len(out) > 0 && out[len(out)-1] != cmd[len(out)-1]) {
					cuts.commands++
				}
				return out
			}
			c.Command, c.Args = short(c.Command), short(c.Args)
			for _, p := range []*corev1.Probe{c.StartupProbe, c.ReadinessProbe, c.LivenessProbe} {
				if p != nil && p.Exec != nil {
					p.Exec.Command = short(p.Exec.Command)
				}
			}
			if c.Lifecycle != nil && c.Lifecycle.PostStart != nil && c.Lifecycle.PostStart.Exec != nil {
				c.Lifecycle.PostStart.Exec.Command = short(c.Lifecycle.PostStart.Exec.Command)
			}
		},
		func(c *corev1.Container) {
			if len(c.Ports) > 8 {
				cuts.ports += len(c.Ports) - 8
				c.Ports = slices.Clone(c.Ports[:8]) // not the array of all
			}
		},
	}
	for _, step := range steps {
		if pod.Size() <= MaxStrippedBytes {
			return
		}
		for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
			for i := range list {
				step(&list[i])
			}
		}
	}
	for _, list := range []*[]corev1.Container{&pod.Spec.InitContainers, &pod.Spec.Containers} {
		if pod.Size() > MaxStrippedBytes && len(*list) > 8 {
			cuts.containers += len(*list) - 8
			*list = slices.Clone((*list)[:8])
		}
	}
	if pod.Size() > MaxStrippedBytes && len(pod.Spec.Volumes) > 8 {
		cuts.volumes += len(pod.Spec.Volumes) - 8
		pod.Spec.Volumes = slices.Clone(pod.Spec.Volumes[:8])
	}
}

// cutCommandTo returns cmd cut as cutCommand cuts it, at max bytes.
func cutCommandTo(cmd []string, max int) []string {
	if cmd == nil {
		return nil
	}
	out := make([]string, 0, len(cmd))
	n := 0
	for _, arg := range cmd {
		if n >= max {
			break
		}
		out = append(out, cut(arg, max-n))
		n += len(arg) + 1
	}
	return out
}

// cutCounts counts what StripPod left out, by kind.
type cutCounts struct{ containers, ports, env, volumes, conditions, commands int }

func (c cutCounts) any() bool { return c != cutCounts{} }

func (c cutCounts) String() string {
	var b strings.Builder
	for _, f := range []struct {
		name string
		n    int
	}{{"containers", c.containers}, {"ports", c.ports}, {"env", c.env}, {"volumes", c.volumes}, {"conditions", c.conditions}, {"commands", c.commands}} {
		if f.n == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(f.name)
		b.WriteByte('=')
		b.WriteString(strconv.Itoa(f.n))
	}
	return b.String()
}

// cutsOf reads a stripped pod's CutAnnotation back (zero when it has none).
func cutsOf(pod *corev1.Pod) cutCounts {
	var c cutCounts
	for f := range strings.SplitSeq(pod.Annotations[CutAnnotation], ",") {
		name, v, _ := strings.Cut(f, "=")
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			continue
		}
		switch name {
		case "containers":
			c.containers = n
		case "ports":
			c.ports = n
		case "env":
			c.env = n
		case "volumes":
			c.volumes = n
		case "conditions":
			c.conditions = n
		case "commands":
			c.commands = n
		}
	}
	return c
}

// CutOf says what StripPod left out of pod, as CutAnnotation puts it, and
// "" when nothing.
func CutOf(pod *corev1.Pod) string {
	if pod == nil {
		return ""
	}
	return pod.Annotations[CutAnnotation]
}

func stripContainers(list []corev1.Container, cuts *cutCounts) []corev1.Container {
	if list == nil {
		return nil
	}
	if len(list) > MaxContainers {
		cuts.containers += len(list) - MaxContainers
		list = list[:MaxContainers]
	}
	out := make([]corev1.Container, len(list))
	for i := range list {
		c := &list[i]
		s := &out[i]
		s.Name, s.Image = c.Name, cut(c.Image, MaxImageBytes)
		s.Command, s.Args = cutCommandLine(c.Command, c.Args)
		if c.RestartPolicy != nil {
			rp := *c.RestartPolicy
			s.RestartPolicy = &rp
		}
		ports := c.Ports
		if len(ports) > MaxPorts {
			cuts.ports += len(ports) - MaxPorts
			ports = ports[:MaxPorts]
		}
		for _, p := range ports {
			s.Ports = append(s.Ports, corev1.ContainerPort{Name: cut(p.Name, MaxNameBytes), ContainerPort: p.ContainerPort})
		}
		s.Env, s.EnvFrom = stripEnv(c.Env, c.EnvFrom, cuts)
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

// MaxNameBytes bounds a name kept beside a value: a port's, an environment
// variable's, a Secret's or key's (the API allows 253 bytes for most).
const MaxNameBytes = 256

// stripEnv keeps what package secrets needs to tell which of a
// container's environment variables hold a Secret's value: the variables
// with a secretKeyRef (name and reference), and its envFrom sources with
// their prefixes; when one of those is a Secret, whose keys the spec does
// not name, the names of all its variables too (those the spec names are
// not the Secret's). No value is kept.
func stripEnv(env []corev1.EnvVar, from []corev1.EnvFromSource, cuts *cutCounts) ([]corev1.EnvVar, []corev1.EnvFromSource) {
	fromSecret := false
	for _, f := range from {
		fromSecret = fromSecret || f.SecretRef != nil
	}
	var outEnv []corev1.EnvVar
	for i := range env {
		vf := env[i].ValueFrom
		secret := vf != nil && vf.SecretKeyRef != nil
		if !secret && !fromSecret {
			continue
		}
		if len(outEnv) == MaxEnv {
			cuts.env++
			continue
		}
		v := corev1.EnvVar{Name: cut(env[i].Name, MaxNameBytes)}
		if secret {
			v.ValueFrom = &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: cut(vf.SecretKeyRef.Name, MaxNameBytes)},
				Key:                  cut(vf.SecretKeyRef.Key, MaxNameBytes)}}
		}
		outEnv = append(outEnv, v)
	}
	var outFrom []corev1.EnvFromSource
	if len(from) > MaxEnv {
		cuts.env += len(from) - MaxEnv
		from = from[:MaxEnv]
	}
	for _, f := range from {
		s := corev1.EnvFromSource{Prefix: cut(f.Prefix, MaxNameBytes)}
		switch {
		case f.SecretRef != nil:
			s.SecretRef = &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: cut(f.SecretRef.Name, MaxNameBytes)}}
		case f.ConfigMapRef != nil:
			s.ConfigMapRef = &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: cut(f.ConfigMapRef.Name, MaxNameBytes)}}
		default:
			continue
		}
		outFrom = append(outFrom, s)
	}
	return outEnv, outFrom
}

// stripNamedVolume keeps of an image, claim, CSI or ephemeral volume what
// names it, nil for other kinds.
func stripNamedVolume(v *corev1.Volume) *corev1.Volume {
	out := &corev1.Volume{Name: cut(v.Name, MaxNameBytes)}
	src := &out.VolumeSource
	if v.Image != nil {
		src.Image = &corev1.ImageVolumeSource{Reference: cut(v.Image.Reference, MaxImageBytes)}
	}
	if v.PersistentVolumeClaim != nil {
		src.PersistentVolumeClaim = &corev1.PersistentVolumeClaimVolumeSource{ClaimName: cut(v.PersistentVolumeClaim.ClaimName, MaxNameBytes)}
	}
	if v.CSI != nil {
		src.CSI = &corev1.CSIVolumeSource{Driver: cut(v.CSI.Driver, MaxNameBytes)}
	}
	if v.Ephemeral != nil {
		src.Ephemeral = &corev1.EphemeralVolumeSource{}
	}
	if *src == (corev1.VolumeSource{}) {
		return nil
	}
	return out
}

// stripVolume keeps a Secret volume (its Secret and the paths of its
// items) and a projected volume (of each source, its kind and the paths it
// writes), an image volume (its reference), a claim's (the claim's name)
// and a CSI volume's (its driver; an ephemeral one, its name): what names
// a volume the kubelet set up. Nil for other kinds.
func stripVolume(v *corev1.Volume) *corev1.Volume {
	if named := stripNamedVolume(v); named != nil {
		return named
	}
	switch {
	case v.Secret != nil:
		return &corev1.Volume{Name: cut(v.Name, MaxNameBytes), VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: cut(v.Secret.SecretName, MaxNameBytes), Items: stripItems(v.Secret.Items)}}}
	case v.Projected != nil:
		out := &corev1.Volume{Name: cut(v.Name, MaxNameBytes), VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{}}}
		sources := v.Projected.Sources
		if len(sources) > MaxVolumes {
			sources = sources[:MaxVolumes]
		}
		for _, src := range sources {
			var s corev1.VolumeProjection
			switch {
			case src.Secret != nil:
				s.Secret = &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: cut(src.Secret.Name, MaxNameBytes)},
					Items: stripItems(src.Secret.Items)}
			case src.ServiceAccountToken != nil:
				s.ServiceAccountToken = &corev1.ServiceAccountTokenProjection{Path: cut(src.ServiceAccountToken.Path, MaxNameBytes)}
			case src.ConfigMap != nil:
				s.ConfigMap = &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: cut(src.ConfigMap.Name, MaxNameBytes)},
					Items: stripItems(src.ConfigMap.Items)}
			case src.DownwardAPI != nil:
				s.DownwardAPI = &corev1.DownwardAPIProjection{}
				for _, it := range src.DownwardAPI.Items[:min(len(src.DownwardAPI.Items), MaxEnv)] {
					s.DownwardAPI.Items = append(s.DownwardAPI.Items, corev1.DownwardAPIVolumeFile{Path: cut(it.Path, MaxNameBytes)})
				}
			case src.ClusterTrustBundle != nil:
				s.ClusterTrustBundle = &corev1.ClusterTrustBundleProjection{Path: cut(src.ClusterTrustBundle.Path, MaxNameBytes)}
			case src.PodCertificate != nil:
				s.PodCertificate = &corev1.PodCertificateProjection{CredentialBundlePath: cut(src.PodCertificate.CredentialBundlePath, MaxNameBytes),
					KeyPath: cut(src.PodCertificate.KeyPath, MaxNameBytes), CertificateChainPath: cut(src.PodCertificate.CertificateChainPath, MaxNameBytes)}
			default:
				continue
			}
			out.Projected.Sources = append(out.Projected.Sources, s)
		}
		return out
	}
	return nil
}

// stripItems keeps the key and path of each item of a Secret or ConfigMap
// volume (which files it writes), bounded by MaxEnv.
func stripItems(items []corev1.KeyToPath) []corev1.KeyToPath {
	if items == nil {
		return nil
	}
	items = items[:min(len(items), MaxEnv)]
	out := make([]corev1.KeyToPath, len(items))
	for i, it := range items {
		out[i] = corev1.KeyToPath{Key: cut(it.Key, MaxNameBytes), Path: cut(it.Path, MaxNameBytes)}
	}
	return out
}

// stripProbe keeps a probe's handler (what it runs or connects to) and the
// timing the kubelet applies, its timeout included; not its HTTP path and
// headers.
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
		TimeoutSeconds:      p.TimeoutSeconds,
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

func stripStatus(st *corev1.PodStatus, cuts *cutCounts) corev1.PodStatus {
	out := corev1.PodStatus{
		Phase:                 st.Phase,
		Message:               cut(st.Message, MaxMessageBytes),
		Reason:                cut(st.Reason, MaxNameBytes),
		HostIP:                st.HostIP,
		HostIPs:               cloneSlice(st.HostIPs),
		PodIP:                 st.PodIP,
		PodIPs:                cloneSlice(st.PodIPs),
		StartTime:             st.StartTime.DeepCopy(),
		InitContainerStatuses: stripContainerStatuses(st.InitContainerStatuses, cuts),
		ContainerStatuses:     stripContainerStatuses(st.ContainerStatuses, cuts),
	}
	if st.Conditions != nil {
		conds := st.Conditions
		if len(conds) > MaxConditions {
			cuts.conditions += len(conds) - MaxConditions
			conds = conds[:MaxConditions]
		}
		out.Conditions = make([]corev1.PodCondition, len(conds))
		for i, c := range conds {
			out.Conditions[i] = corev1.PodCondition{Type: corev1.PodConditionType(cut(string(c.Type), MaxNameBytes)), Status: c.Status,
				LastTransitionTime: c.LastTransitionTime, Reason: cut(c.Reason, MaxNameBytes), Message: cut(c.Message, MaxMessageBytes)}
		}
	}
	return out
}

func stripContainerStatuses(list []corev1.ContainerStatus, cuts *cutCounts) []corev1.ContainerStatus {
	if list == nil {
		return nil
	}
	if len(list) > MaxContainers {
		cuts.containers += len(list) - MaxContainers
		list = list[:MaxContainers]
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
		out.Waiting = &corev1.ContainerStateWaiting{Reason: cut(w.Reason, MaxNameBytes), Message: cut(w.Message, MaxMessageBytes)}
	}
	if r := s.Running; r != nil {
		out.Running = &corev1.ContainerStateRunning{StartedAt: r.StartedAt}
	}
	if t := s.Terminated; t != nil {
		out.Terminated = &corev1.ContainerStateTerminated{ExitCode: t.ExitCode, Reason: cut(t.Reason, MaxNameBytes),
			Message: cut(t.Message, MaxTerminationMessageBytes), StartedAt: t.StartedAt, FinishedAt: t.FinishedAt, ContainerID: t.ContainerID}
	}
	return out
}

// cutCommand returns the arguments of cmd that begin within its first
// MaxCommandBytes (each argument counted with its NUL, as argv is laid
// out), the last one cut at that bound; cmd itself when it is shorter.
func cutCommand(cmd []string) []string { return cutCommandTo(cmd, MaxCommandBytes) }

// cutCommandLine bounds a container's command and args as cutCommand
// bounds one command line: together, command first.
func cutCommandLine(command, args []string) ([]string, []string) {
	all := cutCommand(append(append([]string(nil), command...), args...))
	if len(all) == 0 {
		return cloneSlice(command), cloneSlice(args)
	}
	n := min(len(command), len(all))
	c, a := all[:n:n], all[n:]
	if command == nil {
		c = nil
	}
	if len(a) == 0 && args == nil {
		a = nil
	}
	return c, a
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
