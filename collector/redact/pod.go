package redact

import corev1 "k8s.io/api/core/v1"

// lastAppliedAnnotation is kubectl's copy of the whole applied object, env
// values included (collector.StripPod drops it from watched pods too).
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// Pod returns a copy of pod fit to be written to disk: every container's
// (init, main and ephemeral) literal env values replaced by Marker, names
// and valueFrom references kept; its command and args, and its probes' and
// hooks' exec commands, redacted as Argv does; kubectl's last-applied
// annotation dropped. pod itself is not modified.
func Pod(pod *corev1.Pod) *corev1.Pod {
	if pod == nil {
		return nil
	}
	p := pod.DeepCopy()
	if _, ok := p.Annotations[lastAppliedAnnotation]; ok {
		delete(p.Annotations, lastAppliedAnnotation)
	}
	for i := range p.Spec.InitContainers {
		container(&p.Spec.InitContainers[i])
	}
	for i := range p.Spec.Containers {
		container(&p.Spec.Containers[i])
	}
	for i := range p.Spec.EphemeralContainers {
		c := &p.Spec.EphemeralContainers[i].EphemeralContainerCommon
		env(c.Env)
		c.Command, c.Args = commandArgs(c.Command, c.Args)
		probe(c.StartupProbe)
		probe(c.ReadinessProbe)
		probe(c.LivenessProbe)
		lifecycle(c.Lifecycle)
	}
	return p
}

func container(c *corev1.Container) {
	env(c.Env)
	c.Command, c.Args = commandArgs(c.Command, c.Args)
	probe(c.StartupProbe)
	probe(c.ReadinessProbe)
	probe(c.LivenessProbe)
	lifecycle(c.Lifecycle)
}

func env(vars []corev1.EnvVar) {
	for i := range vars {
		if vars[i].Value != "" {
			vars[i].Value = Marker
		}
	}
}

// commandArgs redacts command and args as one command line: the program
// may be in command and its -p<password> in args.
func commandArgs(command, args []string) ([]string, []string) {
	if len(command) == 0 {
		return nil, nilIfEmpty(Argv(args))
	}
	all := Argv(append(append([]string(nil), command...), args...))
	return all[:len(command):len(command)], nilIfEmpty(all[len(command):])
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

func probe(p *corev1.Probe) {
	if p != nil && p.Exec != nil {
		p.Exec.Command = Argv(p.Exec.Command)
	}
}

func lifecycle(l *corev1.Lifecycle) {
	if l == nil {
		return
	}
	for _, h := range []*corev1.LifecycleHandler{l.PostStart, l.PreStop} {
		if h != nil && h.Exec != nil {
			h.Exec.Command = Argv(h.Exec.Command)
		}
	}
}
