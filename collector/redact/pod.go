package redact

import (
	"container/list"
	"hash/maphash"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// lastAppliedAnnotation is kubectl's copy of the whole applied object, env
// values included (collector.StripPod drops it from watched pods too).
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// Pod returns a copy of pod fit to be written to disk: every container's
// (init, main and ephemeral) literal env values replaced by Marker, names
// and valueFrom references kept; its command and args, and its probes' and
// hooks' exec commands, redacted as Argv does; kubectl's last-applied
// annotation dropped. pod itself is not modified.
func Pod(pod *corev1.Pod) *corev1.Pod {
	p := podCopy(pod)
	if p != nil {
		execCommands(&p.Spec, redactCommand)
	}
	return p
}

// podCopy returns a copy of pod with its env values and kubectl's
// annotation gone: what Pod returns but for the commands.
func podCopy(pod *corev1.Pod) *corev1.Pod {
	if pod == nil {
		return nil
	}
	p := pod.DeepCopy()
	if _, ok := p.Annotations[lastAppliedAnnotation]; ok {
		delete(p.Annotations, lastAppliedAnnotation)
	}
	for i := range p.Spec.InitContainers {
		env(p.Spec.InitContainers[i].Env)
	}
	for i := range p.Spec.Containers {
		env(p.Spec.Containers[i].Env)
	}
	for i := range p.Spec.EphemeralContainers {
		env(p.Spec.EphemeralContainers[i].Env)
	}
	return p
}

func env(vars []corev1.EnvVar) {
	for i := range vars {
		if vars[i].Value != "" {
			vars[i].Value = Marker
		}
	}
}

// execCommands calls f with each command line of spec, in a fixed order:
// of every container (init, main, ephemeral), its command with its args
// (one command line: the program may be in command and its -p<password>
// in args), then its startup, readiness and liveness probes' and its
// postStart and preStop hooks' exec commands (args nil).
func execCommands(spec *corev1.PodSpec, f func(command, args *[]string)) {
	container := func(c *corev1.Container) {
		f(&c.Command, &c.Args)
		for _, p := range []*corev1.Probe{c.StartupProbe, c.ReadinessProbe, c.LivenessProbe} {
			if p != nil && p.Exec != nil {
				f(&p.Exec.Command, nil)
			}
		}
		if l := c.Lifecycle; l != nil {
			for _, h := range []*corev1.LifecycleHandler{l.PostStart, l.PreStop} {
				if h != nil && h.Exec != nil {
					f(&h.Exec.Command, nil)
				}
			}
		}
	}
	for i := range spec.InitContainers {
		container(&spec.InitContainers[i])
	}
	for i := range spec.Containers {
		container(&spec.Containers[i])
	}
	for i := range spec.EphemeralContainers {
		c := corev1.Container(spec.EphemeralContainers[i].EphemeralContainerCommon)
		container(&c)
		spec.EphemeralContainers[i].EphemeralContainerCommon = corev1.EphemeralContainerCommon(c)
	}
}

// redactCommand redacts a command line as Argv does, command and args
// read as one.
func redactCommand(command, args *[]string) {
	if args == nil {
		*command = Argv(*command)
		return
	}
	if len(*command) == 0 {
		*args = nilIfEmpty(Argv(*args))
		return
	}
	all := Argv(append(append([]string(nil), *command...), *args...))
	n := min(len(*command), len(all))
	*command, *args = all[:n:n], nilIfEmpty(all[n:])
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

// PodCache redacts pods as Pod does, and remembers, by pod UID, the
// redacted command lines of each pod's spec with a 128-bit hash of what
// they were: an update that leaves them as they were (most change labels
// or status; a pod's commands cannot change) gets them without a
// redaction. It holds at most about maxBytes of redacted commands, the
// oldest pod's dropped first; a pod with more is redacted every time. Not
// safe for concurrent use.
type PodCache struct {
	seeds    [2]maphash.Seed
	maxBytes int
	bytes    int
	entries  map[types.UID]*podEntry
	order    list.List // of UIDs, oldest first

	redactions int // pods redacted, not taken from the cache (for tests)
}

type podEntry struct {
	hash     [2]uint64
	commands [][2][]string // command and args, in execCommands' order
	bytes    int
	at       *list.Element // in order
}

// NewPodCache returns a PodCache that holds at most about maxBytes.
func NewPodCache(maxBytes int) *PodCache {
	return &PodCache{seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}, maxBytes: maxBytes,
		entries: make(map[types.UID]*podEntry)}
}

// Pod returns what Pod(pod) does.
func (c *PodCache) Pod(pod *corev1.Pod) *corev1.Pod {
	p := podCopy(pod)
	if p == nil {
		return nil
	}
	hash := [2]uint64{hashCommands(c.seeds[0], &p.Spec), hashCommands(c.seeds[1], &p.Spec)}
	if e := c.entries[p.UID]; e != nil && e.hash == hash {
		i := 0
		execCommands(&p.Spec, func(command, args *[]string) {
			*command = slices.Clone(e.commands[i][0])
			if args != nil {
				*args = slices.Clone(e.commands[i][1])
			}
			i++
		})
		return p
	}
	c.redactions++
	e := &podEntry{hash: hash}
	execCommands(&p.Spec, func(command, args *[]string) {
		redactCommand(command, args)
		line := [2][]string{*command, nil}
		if args != nil {
			line[1] = *args
		}
		e.commands = append(e.commands, [2][]string{slices.Clone(line[0]), slices.Clone(line[1])})
		e.bytes += argvBytes(line[0]) + argvBytes(line[1])
	})
	c.put(p.UID, e)
	return p
}

// hashCommands hashes the command lines of spec, in execCommands' order.
func hashCommands(seed maphash.Seed, spec *corev1.PodSpec) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	write := func(argv []string) {
		maphash.WriteComparable(&h, len(argv))
		for _, a := range argv {
			maphash.WriteComparable(&h, len(a))
			h.WriteString(a)
		}
	}
	execCommands(spec, func(command, args *[]string) {
		write(*command)
		if args != nil {
			write(*args)
		}
	})
	return h.Sum64()
}

func (c *PodCache) put(uid types.UID, e *podEntry) {
	if old := c.entries[uid]; old != nil {
		c.drop(uid, old)
	}
	if e.bytes > c.maxBytes/8 {
		return
	}
	for c.bytes+e.bytes > c.maxBytes {
		oldest := c.order.Front().Value.(types.UID)
		c.drop(oldest, c.entries[oldest])
	}
	e.at = c.order.PushBack(uid)
	c.entries[uid] = e
	c.bytes += e.bytes
}

func (c *PodCache) drop(uid types.UID, e *podEntry) {
	c.order.Remove(e.at)
	delete(c.entries, uid)
	c.bytes -= e.bytes
}

// argvBytes is what argv takes in memory, roughly.
func argvBytes(argv []string) int {
	n := 24
	for _, a := range argv {
		n += 16 + len(a)
	}
	return n
}
