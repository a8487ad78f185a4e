package main

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestReplayStopsWhenCancelled: SIGTERM or SIGINT (the context) stops a
// replay that waits for more of its recording (here a FIFO whose writer
// says no more), and the error says why.
func TestReplayStopsWhenCancelled(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "recording")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// Read-write: opening does not wait for a reader, and the replay's open
	// does not wait for a writer.
	w, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	io.WriteString(w, `{"type":"tick","time":"2026-11-30T06:00:00Z"}`+"\n")
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan error, 1)
	go func() { done <- runReplay(ctx, []string{fifo}, io.Discard, io.Discard) }()
	time.Sleep(100 * time.Millisecond)
	stop := errors.New("terminated")
	cancel(stop)
	select {
	case err := <-done:
		if !errors.Is(err, stop) {
			t.Errorf("replay cancelled: %v, want an error wrapping %v", err, stop)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("replay did not stop within 5 s of its context's end")
	}
}
