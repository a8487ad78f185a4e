package secrets

import (
	"context"
	"errors"
	"log/slog"
	"path"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/readyline/readyline/collector/event"
	"github.com/readyline/readyline/collector/redact"
)

// EnvReader reads a container's environment as its runtime holds it
// ("NAME=value" each): collector.RuntimeSource.ContainerEnv.
type EnvReader interface {
	ContainerEnv(ctx context.Context, containerID string) ([]string, error)
}

// FileReader reads the files the kubelet wrote into a pod's volume: by
// path in the volume, each at most MaxFileBytes (a longer one is cut).
type FileReader interface {
	VolumeFiles(podUID, kind, volume string) (map[string][]byte, error)
}

// Bounds of what a Scrubber reads and holds.
const (
	// MaxFileBytes bounds what is read of one file of a volume: a
	// credential, a key or a small config; a larger file is read that far.
	MaxFileBytes = 64 << 10
	// MaxPodBytes bounds the values held for one pod, MaxBytes those of all
	// pods: past them a pod's further values are not read (its texts are
	// then cut to what cannot hold them, see Scrub).
	MaxPodBytes = 1 << 20
	MaxBytes    = 32 << 20
	// FetchTimeout bounds one read from the runtime, which Scrub waits for
	// on the first text of a container.
	FetchTimeout = 500 * time.Millisecond
	// RetryAfter is how long a read that failed is not tried again.
	RetryAfter = 5 * time.Second
	// KeepAfterDelete is how long a deleted pod's values are kept, for the
	// texts about it that arrive late (its last Events).
	KeepAfterDelete = 2 * time.Minute
)

// Config configures a Scrubber.
type Config struct {
	Env   EnvReader  // nil: environment values are not read
	Files FileReader // nil: volume files are not read
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Stats counts what a Scrubber did.
type Stats struct {
	// Pods is the number of pods whose Secret values are held, Values and
	// Bytes what they hold.
	Pods, Values, Bytes int
	// Reads counts the runtime's and the kubelet's directories' answers,
	// ReadErrors those that failed.
	Reads, ReadErrors uint64
	// Removed counts the texts a value was removed from.
	Removed uint64
	// Hidden counts the command lines cut to their program because the
	// values that may be in them could not be read.
	Hidden uint64
}

// Scrubber removes the values of each pod's Secrets from the events about
// the pod (Scrub). It learns from the PodUpdates which pods take what from
// Secrets, reads the values on the node the first time it meets a text of
// the pod or of one of its containers, and forgets them KeepAfterDelete
// after the pod's deletion. Not safe for concurrent use: one goroutine
// hands it every event, in order, before anything keeps or sends them.
type Scrubber struct {
	cfg    Config
	logger *slog.Logger
	pods   map[string]*podValues // by pod UID
	owners map[string]string     // container and sandbox ids -> pod UID
	bytes  int
	stats  Stats
}

// podValues is what a Scrubber knows of one pod's Secrets.
type podValues struct {
	refs       *Refs
	set        Set
	containers map[string]*containerRead // by container id
	volumes    map[string]bool           // read, by volume name
	volumesAt  time.Time                 // when reading them last failed
	deleted    time.Time
}

type containerRead struct {
	ok     bool      // its environment was read
	failed time.Time // when reading it last failed
}

// New returns a Scrubber; logger may be nil.
func New(cfg Config, logger *slog.Logger) *Scrubber {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Scrubber{cfg: cfg, logger: logger, pods: make(map[string]*podValues), owners: make(map[string]string)}
}

// Stats returns the counts so far.
func (s *Scrubber) Stats() Stats {
	st := s.stats
	st.Pods, st.Bytes = 0, s.bytes
	for _, p := range s.pods {
		if p.set.Len() > 0 {
			st.Pods++
			st.Values += p.set.Len()
		}
	}
	return st
}

// Scrub removes from ev the values of the Secrets of the pod it is about.
// It changes ev in place, but for a PodUpdate's pod (an informer's cached
// object, which it copies before changing). Events that name no pod it
// knows (a CRI call on an id not seen yet) lose the values of every pod.
func (s *Scrubber) Scrub(ev event.Event) {
	switch e := ev.(type) {
	case *event.PodUpdate:
		s.pod(e)
	case *event.ProcessExec:
		if e.PodUID == "" {
			return
		}
		s.own(e.ContainerID, e.PodUID)
		p := s.ready(e.PodUID, e.ContainerID)
		if p == nil {
			return
		}
		argv := p.set.Argv(e.Argv, e.ArgvTruncated, 0)
		if p.unknown(e.ContainerID) && len(argv) > 1 {
			// Values that may be in it could not be read: its program only.
			argv = []string{argv[0], redact.Marker}
			s.stats.Hidden++
		}
		s.count(len(argv) != len(e.Argv) || !sameArgv(argv, e.Argv))
		e.Argv = argv
		e.Filename = s.text(p, e.Filename, false)
	case *event.ContainerInfo:
		if e.PodUID != "" && e.ContainerID != "" {
			s.own(e.ContainerID, e.PodUID)
			s.own(e.SandboxID, e.PodUID)
			if !e.Sandbox {
				s.ready(e.PodUID, e.ContainerID)
			}
		}
	case *event.CRICall:
		if len(e.Cmd) == 0 {
			return
		}
		uid := e.PodUID
		if uid == "" {
			uid = s.owners[e.ContainerID]
		}
		if uid == "" {
			uid = s.owners[e.PodSandboxID]
		}
		if uid == "" {
			// Whose it is is not known yet: every pod's values.
			for _, p := range s.pods {
				e.Cmd = s.argv(p, e.Cmd)
			}
			return
		}
		if p := s.ready(uid, e.ContainerID); p != nil {
			e.Cmd = s.argv(p, e.Cmd)
		}
	case *event.PodEvents:
		p := s.ready(e.PodUID, "")
		if p == nil {
			return
		}
		for i := range e.Events {
			m := e.Events[i].Message
			if body, ok := strings.CutSuffix(m, event.CutMarker); ok {
				// Cut (event.CutMessage): maybe within a value.
				e.Events[i].Message = s.text(p, body, true) + event.CutMarker
				continue
			}
			e.Events[i].Message = s.text(p, m, false)
		}
		e.Err = s.text(p, e.Err, false)
	case *event.Tick:
		s.forget(e.Time)
	}
}

// own notes that container or sandbox id is pod uid's, when the pod takes
// anything from Secrets (the ids of other pods are not needed).
func (s *Scrubber) own(id, uid string) {
	if id != "" && uid != "" && s.pods[uid] != nil {
		s.owners[id] = uid
	}
}

func (s *Scrubber) argv(p *podValues, cmd []string) []string {
	out := p.set.Argv(cmd, false, event.MaxExecSyncArg)
	s.count(!sameArgv(out, cmd))
	return out
}

func (s *Scrubber) text(p *podValues, t string, cut bool) string {
	out := p.set.Text(t)
	if cut {
		out = p.set.CutText(t)
	}
	s.count(out != t)
	return out
}

func (s *Scrubber) count(changed bool) {
	if changed {
		s.stats.Removed++
	}
}

func sameArgv(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// pod learns the pod's references, and removes its values from its status.
func (s *Scrubber) pod(e *event.PodUpdate) {
	pod := e.Pod
	if pod == nil {
		return
	}
	uid := string(pod.UID)
	p := s.pods[uid]
	refs := RefsOf(pod)
	if p == nil && refs == nil {
		return
	}
	if p == nil {
		p = &podValues{containers: make(map[string]*containerRead), volumes: make(map[string]bool)}
		s.pods[uid] = p
	}
	p.refs = refs
	for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, cs := range list {
			if _, id, ok := strings.Cut(cs.ContainerID, "://"); ok {
				s.own(id, uid)
			}
		}
	}
	if e.Action == event.PodDeleted {
		p.deleted = s.cfg.Now()
	}
	if p.set.Len() > 0 {
		e.Pod = s.status(p, pod)
	}
}

// status returns pod with p's values removed from its status' messages: a
// copy when any changed.
func (s *Scrubber) status(p *podValues, pod *corev1.Pod) *corev1.Pod {
	var out *corev1.Pod
	edit := func() *corev1.PodStatus {
		if out == nil {
			out = pod.DeepCopy()
		}
		return &out.Status
	}
	if m := p.set.Text(pod.Status.Message); m != pod.Status.Message {
		edit().Message = m
	}
	for i, c := range pod.Status.Conditions {
		if m := p.set.Text(c.Message); m != c.Message {
			edit().Conditions[i].Message = m
		}
	}
	states := func(list func(*corev1.PodStatus) []corev1.ContainerStatus) {
		for i, cs := range list(&pod.Status) {
			for j, st := range []corev1.ContainerState{cs.State, cs.LastTerminationState} {
				set := func(f func(*corev1.ContainerState)) {
					c := &list(edit())[i]
					if j == 0 {
						f(&c.State)
					} else {
						f(&c.LastTerminationState)
					}
				}
				if w := st.Waiting; w != nil {
					if m := p.set.Text(w.Message); m != w.Message {
						set(func(c *corev1.ContainerState) { c.Waiting.Message = m })
					}
				}
				if t := st.Terminated; t != nil {
					if m := p.set.CutText(t.Message); m != t.Message {
						set(func(c *corev1.ContainerState) { c.Terminated.Message = m })
					}
				}
			}
		}
	}
	states(func(st *corev1.PodStatus) []corev1.ContainerStatus { return st.InitContainerStatuses })
	states(func(st *corev1.PodStatus) []corev1.ContainerStatus { return st.ContainerStatuses })
	if out == nil {
		return pod
	}
	s.stats.Removed++
	return out
}

// ready returns the values of pod uid's Secrets, read first if they have
// not been yet: its volumes' files, and the environment of container id
// (when not ""). It returns nil for a pod that takes nothing from
// Secrets.
func (s *Scrubber) ready(uid, id string) *podValues {
	p := s.pods[uid]
	if p == nil || p.refs == nil {
		return p
	}
	now := s.cfg.Now()
	if len(p.refs.Volumes) > 0 && len(p.volumes) < len(p.refs.Volumes) && now.Sub(p.volumesAt) >= RetryAfter {
		s.readVolumes(uid, p, now)
	}
	if id != "" && len(p.refs.Env) > 0 {
		c := p.containers[id]
		if c == nil {
			c = &containerRead{}
			p.containers[id] = c
		}
		if !c.ok && now.Sub(c.failed) >= RetryAfter {
			s.readEnv(uid, id, p, c, now)
		}
	}
	return p
}

// unknown says whether a value that may be in a text of container id
// could not be read: its environment (when its pod takes any from
// Secrets) or a volume.
func (p *podValues) unknown(id string) bool {
	if p.refs == nil {
		return false
	}
	for _, v := range p.refs.Volumes {
		if !p.volumes[v.Name] && !v.TokenOnly() {
			return true
		}
	}
	if len(p.refs.Env) == 0 || id == "" {
		return false
	}
	c := p.containers[id]
	return c == nil || !c.ok
}

func (s *Scrubber) readEnv(uid, id string, p *podValues, c *containerRead, now time.Time) {
	if s.cfg.Env == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), FetchTimeout)
	defer cancel()
	env, err := s.cfg.Env.ContainerEnv(ctx, id)
	s.stats.Reads++
	if err != nil {
		s.stats.ReadErrors++
		c.failed = now
		s.logger.Debug("reading a container's environment for its Secrets' values", "pod_uid", uid, "container_id", id, "error", err)
		return
	}
	c.ok = true
	for _, refs := range p.refs.Env {
		for _, v := range refs.SecretEnv(env) {
			s.add(p, v)
		}
	}
}

func (s *Scrubber) readVolumes(uid string, p *podValues, now time.Time) {
	if s.cfg.Files == nil {
		return
	}
	var errs []error
	for i := range p.refs.Volumes {
		v := &p.refs.Volumes[i]
		if p.volumes[v.Name] {
			continue
		}
		files, err := s.cfg.Files.VolumeFiles(uid, v.Kind, v.Name)
		s.stats.Reads++
		if err != nil {
			s.stats.ReadErrors++
			errs = append(errs, err)
			continue
		}
		p.volumes[v.Name] = true
		for name, b := range files {
			if v.Secret(name) {
				s.add(p, string(b))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		p.volumesAt = now
		s.logger.Debug("reading a pod's Secret volumes", "pod_uid", uid, "error", err)
	}
}

func (s *Scrubber) add(p *podValues, v string) {
	before := p.set.Bytes()
	if before > MaxPodBytes || s.bytes > MaxBytes {
		return
	}
	p.set.Add(v)
	s.bytes += p.set.Bytes() - before
}

// forget drops the values of the pods deleted KeepAfterDelete before now,
// and the ids that named them.
func (s *Scrubber) forget(now time.Time) {
	for uid, p := range s.pods {
		if p.deleted.IsZero() || now.Sub(p.deleted) < KeepAfterDelete {
			continue
		}
		s.bytes -= p.set.Bytes()
		delete(s.pods, uid)
		for id, owner := range s.owners {
			if owner == uid {
				delete(s.owners, id)
			}
		}
	}
}

// volumeDir is the directory of a pod's volume under the kubelet's root
// directory.
func volumeDir(root, uid, kind, volume string) string {
	return path.Join(root, "pods", uid, "volumes", kind, volume)
}
