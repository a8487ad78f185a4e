package apiauth

import (
	"sync"
	"time"
)

// answers keeps the API server's answers for ttl, at most max of them, so
// that a burst of requests (a page and its list, `kubectl readyline list`
// asking every node) costs few reviews while a revoked grant or token
// stops working within ttl. It is safe for concurrent use.
type answers[K comparable, V any] struct {
	ttl time.Duration
	max int
	now func() time.Time

	mu sync.Mutex
	m  map[K]answer[V]
}

type answer[V any] struct {
	v       V
	expires time.Time
}

func newAnswers[K comparable, V any](ttl time.Duration, max int, now func() time.Time) *answers[K, V] {
	return &answers[K, V]{ttl: ttl, max: max, now: now, m: map[K]answer[V]{}}
}

// get returns the answer kept for k, if it has not expired.
func (c *answers[K, V]) get(k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.m[k]
	if !ok || !c.now().Before(a.expires) {
		var zero V
		return zero, false
	}
	return a.v, true
}

// put keeps v for k. When max are kept, the expired ones go first, then
// any one: a full cache costs reviews, never memory.
func (c *answers[K, V]) put(k K, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if _, ok := c.m[k]; !ok && len(c.m) >= c.max {
		for old, a := range c.m {
			if !now.Before(a.expires) {
				delete(c.m, old)
			}
		}
		for old := range c.m {
			if len(c.m) < c.max {
				break
			}
			delete(c.m, old)
		}
	}
	c.m[k] = answer[V]{v: v, expires: now.Add(c.ttl)}
}
