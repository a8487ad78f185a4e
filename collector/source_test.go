package collector

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/readyline/readyline/collector/event"
)

// runSource runs a source's Run until the test ends and returns what it
// emits of type E (event.Event for everything), with room for buf events;
// other events are left out. It fails the test if emit is called after Run
// returned, or if Run does not return within 5 s of the cancellation.
func runSource[E event.Event](t *testing.T, run func(context.Context, func(event.Event)) error, buf int) <-chan E {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan E, buf)
	done := make(chan error, 1)
	var returned atomic.Bool
	go func() {
		done <- run(ctx, func(e event.Event) {
			if returned.Load() {
				t.Error("emit called after Run returned")
			}
			if x, ok := e.(E); ok {
				out <- x
			}
		})
		returned.Store(true)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("Run did not return within 5 s of cancellation")
		}
	})
	return out
}
