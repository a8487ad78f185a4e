package exporter

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	rlevent "github.com/readyline/readyline/collector/event"
)

// SourceLossHold is how long readyline_source_up stays 0 after a loss a
// source could tell only after the fact (a ring buffer's drop count: a
// Down with Since, then at once an Up). Longer than a scrape interval, so
// that a scrape sees it; a source that keeps losing stays at 0.
const SourceLossHold = 30 * time.Second

// sourceHealth is readyline_source_up: per source, whether it is blind
// from its SourceStatus events. Safe for concurrent use.
type sourceHealth struct {
	mu sync.Mutex
	// up: the last status was Up; held: 0 anyway until then.
	up   map[string]bool
	held map[string]time.Time
	now  func() time.Time // time.Now; tests replace it
}

// ExpectSources makes readyline_source_up{source} exist for each source,
// at 0 until the source says Up: the daemon names the sources it runs, and
// those it could not start, which then stay at 0.
func (m *Metrics) ExpectSources(sources ...string) {
	h := &m.sources
	h.mu.Lock()
	defer h.mu.Unlock()
	h.init()
	for _, s := range sources {
		if _, ok := h.up[s]; !ok {
			h.up[s] = false
		}
	}
}

// ObserveSource takes a source's status: readyline_source_up{source} is 0
// from a Down to the next Up, and for SourceLossHold after a Down with
// Since (a loss told after the fact) whose Up came at once.
func (m *Metrics) ObserveSource(st *rlevent.SourceStatus) {
	h := &m.sources
	h.mu.Lock()
	defer h.mu.Unlock()
	h.init()
	h.up[st.Source] = st.Up
	if !st.Up && !st.Since.IsZero() && st.Since.Before(st.Time) {
		// Held from the source's clock: the scrape compares with ours.
		h.held[st.Source] = h.now().Add(SourceLossHold)
	}
}

func (h *sourceHealth) init() {
	if h.up == nil {
		h.up, h.held = make(map[string]bool), make(map[string]time.Time)
	}
	if h.now == nil {
		h.now = time.Now
	}
}

// observe reports each source's gauge (the instrument's callback, at
// scrape time).
func (h *sourceHealth) observe(_ context.Context, o metric.Int64Observer) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.up == nil {
		return nil
	}
	now := h.now()
	for s, up := range h.up {
		v := int64(0)
		if up && !now.Before(h.held[s]) {
			v = 1
		}
		o.Observe(v, metric.WithAttributes(attribute.String(LabelSource, s)))
	}
	return nil
}
