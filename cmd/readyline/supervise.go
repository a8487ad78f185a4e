package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// group supervises the daemon's goroutines: the first one to fail cancels
// the daemon (cancel), and Wait returns every error, each prefixed with the
// name of its goroutine. It is errgroup without its two limits here: an
// errgroup keeps only the first error, and its context is its own, while
// the daemon runs two groups (sources, exporters) whose failures must both
// cancel the sources' context but never the exporters' (see pipeline).
// Go and Wait may be called from any goroutine; the zero group is not
// usable, it needs cancel.
type group struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	errs   []error
}

// Go runs run(ctx) in a goroutine; a non-nil error, prefixed with name, is
// kept for Wait and cancels the daemon.
func (g *group) Go(ctx context.Context, name string, run func(context.Context) error) {
	g.wg.Go(func() {
		if err := run(ctx); err != nil {
			g.mu.Lock()
			g.errs = append(g.errs, fmt.Errorf("%s: %w", name, err))
			g.mu.Unlock()
			g.cancel()
		}
	})
}

// Wait waits for every goroutine started by Go and returns their errors,
// joined, in the order they failed.
func (g *group) Wait() error {
	g.wg.Wait()
	g.mu.Lock()
	defer g.mu.Unlock()
	return errors.Join(g.errs...)
}
