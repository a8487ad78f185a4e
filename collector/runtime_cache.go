package collector

import (
	"slices"
	"sync"
	"time"

	"github.com/readyline/readyline/collector/event"
)

// runtimeCache holds the last known ContainerInfo per container or sandbox id,
// the state last emitted for each, and the ids the runtime did not know. It
// is safe for concurrent use.
//
// States only move forward (created -> running -> exited; a sandbox's
// notready after ready is final), so an event that arrives after a newer
// list cannot take an entry back, and each (id, state) is emitted once.
type runtimeCache struct {
	mu      sync.RWMutex
	entries map[string]*runtimeEntry
	pending []string // ids with a state not yet emitted, in order of change
	misses  map[string]time.Time
	max     int
	ttl     time.Duration
}

type runtimeEntry struct {
	info    event.ContainerInfo
	rank    int       // how far along its lifecycle info is
	emitted string    // state last emitted; "" before the first
	queued  bool      // in pending
	seen    time.Time // last listed or reported by the runtime
	goneAt  time.Time // when found removed; zero while it exists
}

// missTTL is how long an id the runtime did not know is not asked again.
const missTTL = time.Second

const maxMisses = 1024

func newRuntimeCache(max int, ttl time.Duration) *runtimeCache {
	return &runtimeCache{entries: make(map[string]*runtimeEntry), misses: make(map[string]time.Time), max: max, ttl: ttl}
}

// rank orders the states of one id's lifecycle; wasReady says whether the
// sandbox was ready before.
func rank(info *event.ContainerInfo, wasReady bool) int {
	switch info.State {
	case StateCreated, StateReady:
		return 1
	case StateRunning:
		return 2
	case StateExited:
		return 3
	case StateNotReady:
		if wasReady {
			return 2
		}
	}
	return 0 // unknown; notready before ready
}

func (c *runtimeCache) len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.entries)
}

// get returns a copy of the info about id.
func (c *runtimeCache) get(id string) (*event.ContainerInfo, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e, ok := c.entries[id]
	if !ok {
		return nil, false
	}
	info := e.info
	return &info, true
}

func (c *runtimeCache) known(id string) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	_, ok := c.entries[id]
	return ok
}

// unchanged reports whether id is cached with state, and if so notes that
// the runtime listed it at now.
func (c *runtimeCache) unchanged(id, state string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[id]
	if !ok || e.info.State != state {
		return false
	}
	e.seen, e.goneAt = now, time.Time{}
	return true
}

// put stores info unless the entry is further along its lifecycle, queues
// a new state for emission, and returns what is stored.
func (c *runtimeCache) put(info event.ContainerInfo, now time.Time) event.ContainerInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[info.ContainerID]
	if !ok {
		e = &runtimeEntry{}
		c.entries[info.ContainerID] = e
		delete(c.misses, info.ContainerID)
	}
	e.seen = now
	r := rank(&info, ok && e.rank >= 1) // for a sandbox, rank 1 is ready

	if ok && r < e.rank {
		if e.info.SandboxID == "" {
			e.info.SandboxID = info.SandboxID
		}
		return e.info // stale news
	}
	if info.SandboxID == "" {
		info.SandboxID = e.info.SandboxID // a status does not name the sandbox
	}
	e.info, e.rank = info, r
	if info.State != e.emitted && !e.queued {
		e.queued = true
		c.pending = append(c.pending, info.ContainerID)
	}
	if len(c.entries) > c.max {
		c.evictLocked(now)
	}
	return e.info
}

// take returns the infos whose state was not emitted yet, in the order they
// changed, and marks them emitted.
func (c *runtimeCache) take() []*event.ContainerInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*event.ContainerInfo
	for _, id := range c.pending {
		e, ok := c.entries[id]
		if !ok {
			continue
		}
		e.queued = false
		if e.info.State != e.emitted {
			e.emitted = e.info.State
			info := e.info
			out = append(out, &info)
		}
	}
	c.pending = c.pending[:0]
	return out
}

// markGone notes that the runtime removed id.
func (c *runtimeCache) markGone(id string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[id]; ok && e.goneAt.IsZero() {
		e.goneAt = now
	}
}

// markUnseen marks as removed the entries not seen since before.
func (c *runtimeCache) markUnseen(before, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.entries {
		if e.goneAt.IsZero() && e.seen.Before(before) {
			e.goneAt = now
		}
	}
}

func (c *runtimeCache) evict(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.evictLocked(now)
	for id, at := range c.misses {
		if now.Sub(at) > missTTL {
			delete(c.misses, id)
		}
	}
}

// evictLocked drops removed entries older than the TTL, then, while the
// cache is over its size, the removed entries removed longest ago. Entries
// of existing containers stay: the node bounds their number.
func (c *runtimeCache) evictLocked(now time.Time) {
	var gone []string
	for id, e := range c.entries {
		switch {
		case e.goneAt.IsZero():
		case now.Sub(e.goneAt) > c.ttl:
			delete(c.entries, id)
		default:
			gone = append(gone, id)
		}
	}
	if len(c.entries) <= c.max {
		return
	}
	slices.SortFunc(gone, func(a, b string) int { return c.entries[a].goneAt.Compare(c.entries[b].goneAt) })
	for _, id := range gone[:min(len(gone), len(c.entries)-c.max)] {
		delete(c.entries, id)
	}
}

// missed notes that the runtime did not know id at now.
func (c *runtimeCache) missed(id string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.misses) >= maxMisses {
		for k, at := range c.misses {
			if now.Sub(at) > missTTL {
				delete(c.misses, k)
			}
		}
		if len(c.misses) >= maxMisses {
			clear(c.misses)
		}
	}
	c.misses[id] = now
}

func (c *runtimeCache) missedRecently(id string, now time.Time) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	at, ok := c.misses[id]
	return ok && now.Sub(at) <= missTTL
}
