package collector

import (
	"context"
	"log/slog"
	"time"

	"github.com/readyline/readyline/collector/event"
)

// PullSamplerConfig configures a PullSampler. Zero durations and bounds
// take the defaults.
type PullSamplerConfig struct {
	// InFlight reads the kubelet's CRI calls in flight
	// (KubeletCallSource.CallsInFlight), oldest first.
	InFlight func() ([]*event.CRICall, error)
	// Progress reads how far the pull of image begun at since has come:
	// a PullProgressReader's Progress, or a cache before it that the
	// questions of the API share, so that they and the sampler do not
	// each cost the content store its reads.
	Progress func(ctx context.Context, image string, since time.Time) (*event.PullProgress, error)
	// Every is the time between two samples of a pull (default 2 s);
	// After how long a call has run before its first (default 1 s: most
	// pulls of an image whose layers are present are over by then).
	Every, After time.Duration
	// MaxPulls bounds the pulls sampled at once, the oldest calls first
	// (default 4; the kubelet's serialized puller runs one).
	MaxPulls int
	// Wait bounds one read of the content store (default 500 ms).
	Wait time.Duration
	// Pace, when set, has the sampler look only while it is fast (a pod
	// start is open): the kubelet pulls for the containers it creates, and
	// a look reads every kubelet call in flight (a steady node's probes).
	Pace *Pace
}

// Defaults of PullSamplerConfig.
const (
	DefaultPullSampleEvery    = 2 * time.Second
	DefaultPullSampleAfter    = time.Second
	DefaultPullSampleMaxPulls = 4
	DefaultPullSampleWait     = 500 * time.Millisecond
)

func (c PullSamplerConfig) withDefaults() PullSamplerConfig {
	if c.Every <= 0 {
		c.Every = DefaultPullSampleEvery
	}
	if c.After <= 0 {
		c.After = DefaultPullSampleAfter
	}
	if c.MaxPulls <= 0 {
		c.MaxPulls = DefaultPullSampleMaxPulls
	}
	if c.Wait <= 0 {
		c.Wait = DefaultPullSampleWait
	}
	return c
}

// PullSampler samples the progress of the kubelet's PullImage calls in
// flight, every Every, and emits each reading as an event.PullSample: the
// bytes of a pull over time, for its span. A runtime whose content store
// cannot be read (CRI-O) gives no samples, and its pulls are traced
// without them. Run is its only method; it is not for concurrent use.
type PullSampler struct {
	cfg    PullSamplerConfig
	logger *slog.Logger
	// last is the progress's AsOf of each call's latest sample: a read
	// the cache answered again is not a new sample.
	last map[sampledCall]time.Time
	now  func() time.Time // time.Now, but in tests
}

// sampledCall names a PullImage call.
type sampledCall struct {
	uid, image string
	start      time.Time
}

// NewPullSampler returns a PullSampler; logger may be nil.
func NewPullSampler(cfg PullSamplerConfig, logger *slog.Logger) *PullSampler {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &PullSampler{cfg: cfg.withDefaults(), logger: logger, last: map[sampledCall]time.Time{}, now: time.Now}
}

// Run samples the pulls in flight with emit until ctx is done.
func (s *PullSampler) Run(ctx context.Context, emit func(event.Event)) error {
	if s.cfg.InFlight == nil || s.cfg.Progress == nil {
		return nil
	}
	tick := time.NewTicker(s.cfg.Every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			if s.cfg.Pace.Fast() {
				s.sample(ctx, emit)
			}
		}
	}
}

// sample reads the progress of the pulls in flight that ran After, at
// most MaxPulls of them, and emits what is new.
func (s *PullSampler) sample(ctx context.Context, emit func(event.Event)) {
	calls, err := s.cfg.InFlight()
	if err != nil {
		s.logger.Debug("reading the calls in flight", "error", err)
	}
	now := s.now()
	seen := make(map[sampledCall]bool)
	for _, c := range calls {
		if len(seen) == s.cfg.MaxPulls {
			break
		}
		if c == nil || c.Method != event.CRIPullImage || c.Image == "" || c.Time.IsZero() || now.Sub(c.Time) < s.cfg.After {
			continue
		}
		key := sampledCall{c.PodUID, c.Image, c.Time}
		seen[key] = true
		rctx, cancel := context.WithTimeout(ctx, s.cfg.Wait)
		p, err := s.cfg.Progress(rctx, c.Image, c.Time)
		cancel()
		if err != nil || p == nil {
			if ctx.Err() == nil {
				s.logger.Debug("reading a pull's progress", "image", c.Image, "error", err)
			}
			continue
		}
		if p.AsOf.IsZero() || !p.AsOf.After(s.last[key]) {
			continue // the answer of the last sample again
		}
		s.last[key] = p.AsOf
		emit(&event.PullSample{Time: p.AsOf, Image: c.Image, PodUID: c.PodUID, CallStart: c.Time, Progress: *p})
	}
	for k := range s.last {
		if !seen[k] {
			delete(s.last, k) // returned
		}
	}
}
