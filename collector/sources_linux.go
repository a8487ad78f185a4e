package collector

import (
	"context"
	"log/slog"
	"time"

	"github.com/readyline/readyline/collector/event"
)

// Name is event.SourceProcess.
func (s *ProcessSource) Name() string { return event.SourceProcess }

// Losses are Stats().Losses().
func (s *ProcessSource) Losses() []Loss {
	// Stats but the kernel's count of what it filtered, which is no loss:
	// the losses are polled every second.
	return ProcessStats{KernelDrops: s.ring.kernelDrops.Load(), DecodeErrors: s.decodeErrors.Load(),
		Unattributed: s.unattributed.Load()}.Losses()
}

// Ring is Stats().Ring.
func (s *ProcessSource) Ring() (RingUsage, bool) { return s.ring.fill.usage(), true }

// Name is event.SourceKubeletCalls.
func (s *KubeletCallSource) Name() string { return event.SourceKubeletCalls }

// Losses are Stats().Losses().
func (s *KubeletCallSource) Losses() []Loss { return s.Stats().Losses() }

// Ring is Stats().Ring.
func (s *KubeletCallSource) Ring() (RingUsage, bool) { return s.ring.fill.usage(), true }

// Name is event.SourceTCP.
func (s *TCPSource) Name() string { return event.SourceTCP }

// Losses are Stats().Losses().
func (s *TCPSource) Losses() []Loss { return s.Stats().Losses() }

// Ring is Stats().Ring.
func (s *TCPSource) Ring() (RingUsage, bool) { return s.ring.fill.usage(), true }

// NodeSources are the sources of one node that the daemon runs together.
// Calls and TCP are nil when the kernel refused their programs; Logger
// (nil: discard) gets what the wiring between them has to say.
type NodeSources struct {
	Process *ProcessSource
	Runtime *RuntimeSource
	Pods    *PodWatch
	Calls   *KubeletCallSource
	TCP     *TCPSource
	Logger  *slog.Logger
	// Pace, when set, paces the kernel sources' ring readers (Pace).
	Pace *Pace
}

// Sources returns the sources that run (process, cri, pod_watch, then
// cri_calls and tcp when they loaded), each wired to the others as the
// daemon needs:
//
//   - the process source has the runtime name each container it sees exec
//     (RuntimeSource.Observe): the kernel sees a container before anything
//     else, and the runtime is asked while the container still exists;
//   - the kubelet-call source's successful PullImage calls get their
//     image's size from the runtime before they are emitted (sizePull);
//   - the TCP source follows the kubelet the kubelet-call source probes
//     (its probes' connections are the kubelet's), looking every second
//     while it runs;
//   - the kernel sources' readers and the runtime's lists keep to Pace.
func (n NodeSources) Sources() []Source {
	logger := n.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	n.Process.ring.pace = n.Pace
	n.Runtime.pace = n.Pace
	if n.Calls != nil {
		n.Calls.ring.pace = n.Pace
	}
	if n.TCP != nil {
		n.TCP.ring.pace = n.Pace
	}
	sources := []Source{namingContainers{n.Process, n.Runtime}, n.Runtime, n.Pods}
	if n.Calls != nil {
		sources = append(sources, sizingPulls{n.Calls, n.Runtime, logger})
	}
	if n.TCP != nil {
		var s Source = n.TCP
		if n.Calls != nil {
			s = followingKubelet{n.TCP, n.Calls, logger}
		}
		sources = append(sources, s)
	}
	return sources
}

// Refused returns, as of now, the statuses of the sources the kernel
// refused (Calls or TCP nil): a Down load_failed each, blind for good.
func (n NodeSources) Refused(now time.Time) []event.Event {
	var out []event.Event
	if n.Calls == nil {
		out = append(out, &event.SourceStatus{Time: now, Source: event.SourceKubeletCalls, Reason: event.ReasonLoadFailed})
	}
	if n.TCP == nil {
		out = append(out, &event.SourceStatus{Time: now, Source: event.SourceTCP, Reason: event.ReasonLoadFailed})
	}
	return out
}

// namingContainers is the process source that has the runtime name the
// containers whose processes exec.
type namingContainers struct {
	*ProcessSource
	runtime *RuntimeSource
}

func (s namingContainers) Run(ctx context.Context, emit func(event.Event)) error {
	return s.ProcessSource.Run(ctx, func(ev event.Event) {
		// The kernel sees a container before anything else: have the
		// runtime name it now, while it still exists.
		if e, ok := ev.(*event.ProcessExec); ok && e.ContainerID != "" {
			s.runtime.Observe(e.ContainerID)
		}
		emit(ev)
	})
}

// sizingPulls is the kubelet-call source whose pulls the runtime sizes.
type sizingPulls struct {
	*KubeletCallSource
	runtime *RuntimeSource
	logger  *slog.Logger
}

func (s sizingPulls) Run(ctx context.Context, emit func(event.Event)) error {
	return s.KubeletCallSource.Run(ctx, func(ev event.Event) {
		sizePull(ctx, s.runtime, ev, s.logger)
		emit(ev)
	})
}

// sizePull fills in the image size of a successful PullImage call: the
// kubelet's PullImage returns only the image's id, and its puller asks the
// runtime for the size right after (images/puller.go GetImageSize); readyline
// asks the same, before the call goes on to the correlator, so that the
// pull's span, metric and insight know its size and rate. A runtime that
// does not answer within the runtime source's call timeout leaves it unknown.
func sizePull(ctx context.Context, runtime *RuntimeSource, ev event.Event, logger *slog.Logger) {
	c, ok := ev.(*event.CRICall)
	if !ok || c.Method != event.CRIPullImage || c.Err || c.ImageRef == "" || c.ImageSize != 0 {
		return
	}
	size, err := runtime.ImageSize(ctx, c.ImageRef)
	if err != nil {
		logger.Debug("no size for a pulled image", "image", c.Image, "ref", c.ImageRef, "error", err)
		return
	}
	c.ImageSize = size
}

// followingKubelet is the TCP source that follows the kubelet the
// kubelet-call source probes.
type followingKubelet struct {
	*TCPSource
	calls  *KubeletCallSource
	logger *slog.Logger
}

func (s followingKubelet) Run(ctx context.Context, emit func(event.Event)) error {
	fctx, stop := context.WithCancel(ctx)
	followed := make(chan struct{})
	go func() {
		defer close(followed)
		followKubelet(fctx, s.calls, s.TCPSource, s.logger)
	}()
	defer func() { stop(); <-followed }()
	return s.TCPSource.Run(ctx, emit)
}

// followKubelet points the TCP tracer at the kubelet the kubelet-call source
// probes, each time it changes, until ctx is done; a failed Watch is tried
// again every followRetry.
func followKubelet(ctx context.Context, calls *KubeletCallSource, tcp *TCPSource, logger *slog.Logger) {
	var retry <-chan time.Time
	watched := 0
	for {
		if pid := calls.KubeletPID(); pid != watched {
			retry = nil
			if watched != 0 {
				tcp.Unwatch(uint32(watched))
				watched = 0
			}
			if err := watchKubelet(tcp, pid); err != nil {
				logger.Warn("cannot follow the kubelet's probe connections", "pid", pid, "error", err)
				retry = time.After(followRetry)
			} else {
				watched = pid
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-calls.pidChanged:
		case <-retry:
		}
	}
}

// followRetry is how often followKubelet tries a failed Watch again.
const followRetry = time.Second

// watchKubelet has tcp watch pid; pid 0 (no kubelet probed) needs none.
func watchKubelet(tcp *TCPSource, pid int) error {
	if pid == 0 {
		return nil
	}
	return tcp.Watch(uint32(pid))
}
