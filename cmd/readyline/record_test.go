package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRecordIsAFileName: --record names a file in --record-dir; a path, in
// the flag or its environment twin, is a usage error before anything is
// opened, and the directory has no environment twin.
func TestRecordIsAFileName(t *testing.T) {
	for _, bad := range []string{"/proc/1/root/etc/shadow", "../events.jsonl", "sub/events.jsonl", "..", "."} {
		if _, err := parseRunConfig([]string{"--record", bad}, io.Discard); !errors.Is(err, errUsage) {
			t.Errorf("--record %q: %v, want a usage error", bad, err)
		}
	}
	t.Setenv("READYLINE_RECORD", "/etc/cron.d/x")
	if _, err := parseRunConfig(nil, io.Discard); !errors.Is(err, errUsage) {
		t.Errorf("READYLINE_RECORD=/etc/cron.d/x: %v, want a usage error", err)
	}

	t.Setenv("READYLINE_RECORD", "events.jsonl")
	t.Setenv("READYLINE_RECORD_DIR", "/proc/1/root/etc")
	c, err := parseRunConfig(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.record != "events.jsonl" || c.recordDir != defaultRecordDir {
		t.Errorf("record %q in %q, want events.jsonl in %s: the directory must not come from the environment", c.record, c.recordDir, defaultRecordDir)
	}
	if c, err = parseRunConfig([]string{"--record-dir", "/tmp/rec"}, io.Discard); err != nil || c.recordDir != "/tmp/rec" {
		t.Errorf("--record-dir /tmp/rec: %q, %v", c.recordDir, err)
	}
}

// TestOpenRecordingStaysInItsDirectory: the recording is created, or an
// earlier one truncated, in its directory; a name that leads out of it
// (.., a symlink to an absolute path or up the tree) is an error, and the
// file it leads to is neither created nor truncated.
func TestOpenRecordingStaysInItsDirectory(t *testing.T) {
	top := t.TempDir()
	dir := filepath.Join(top, "recordings")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(top, "victim")
	if err := os.WriteFile(victim, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"absolute": victim,
		"up":       "../victim",
		"created":  "../created-outside",
		"proc":     "/proc/self/root" + victim,
	} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"absolute", "up", "created", "proc", "../victim"} {
		if f, err := openRecording(dir, name); err == nil {
			f.Close()
			t.Errorf("openRecording(%q) opened a file outside %s", name, dir)
		}
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "keep me" {
		t.Errorf("the file outside the directory: %q, %v; want it untouched", b, err)
	}
	if _, err := os.Lstat(filepath.Join(top, "created-outside")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a file was created outside the directory: %v", err)
	}

	// Inside it: created, then truncated by the next daemon.
	for _, content := range []string{"first run, longer", "second"} {
		f, err := openRecording(dir, "events.jsonl")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(content); err != nil {
			t.Fatal(err)
		}
		f.Close()
		if b, _ := os.ReadFile(filepath.Join(dir, "events.jsonl")); string(b) != content {
			t.Errorf("recording holds %q, want %q", b, content)
		}
	}

	if _, err := openRecording(filepath.Join(top, "missing"), "events.jsonl"); err == nil {
		t.Error("a recording directory that does not exist was created")
	}
}

// TestOpenRecordingRefusesAFIFO: a FIFO at the recording's name is refused
// at once, not waited on (the daemon's start would hang until a reader
// came); a file there is truncated.
func TestOpenRecordingRefusesAFIFO(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "events.jsonl"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		f, err := openRecording(dir, "events.jsonl")
		if f != nil {
			f.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "events.jsonl") {
			t.Errorf("openRecording of a FIFO: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("openRecording of a FIFO did not return within 10 s")
	}
	if err := os.WriteFile(filepath.Join(dir, "old.jsonl"), []byte("old events\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := openRecording(dir, "old.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if b, _ := os.ReadFile(filepath.Join(dir, "old.jsonl")); len(b) != 0 {
		t.Errorf("the recording was not truncated: %q", b)
	}
}
