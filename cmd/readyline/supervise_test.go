package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestGroupFirstErrorCancelsAndAllAreKept: one goroutine failing cancels
// the others' context, and Wait returns its error and those the others
// returned as they stopped, each named.
func TestGroupFirstErrorCancelsAndAllAreKept(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g := &group{cancel: cancel}
	errCRI, errFlush := errors.New("socket gone"), errors.New("flush failed")
	g.Go(ctx, "cri source", func(ctx context.Context) error { return errCRI })
	g.Go(ctx, "traces", func(ctx context.Context) error { <-ctx.Done(); return errFlush })
	g.Go(ctx, "pod watch", func(ctx context.Context) error { <-ctx.Done(); return nil })
	for range 20 { // many goroutines, no channel to size
		g.Go(ctx, "quiet", func(ctx context.Context) error { <-ctx.Done(); return nil })
	}
	done := make(chan error, 1)
	go func() { done <- g.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the group did not stop after one goroutine failed")
	}
	if !errors.Is(err, errCRI) || !errors.Is(err, errFlush) {
		t.Fatalf("Wait: %v, want both errors", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, "cri source: socket gone") || !strings.Contains(msg, "traces: flush failed") ||
		strings.Contains(msg, "pod watch") || strings.Contains(msg, "quiet") {
		t.Errorf("Wait: %q, want each error named by its goroutine and no others", msg)
	}
	if ctx.Err() == nil {
		t.Error("the first error did not cancel the context")
	}
}

func TestGroupNoErrors(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g := &group{cancel: cancel}
	g.Go(ctx, "a", func(context.Context) error { return nil })
	if err := g.Wait(); err != nil || ctx.Err() != nil {
		t.Errorf("Wait %v, ctx %v: want nil and the context running", err, ctx.Err())
	}
}
