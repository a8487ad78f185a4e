package main

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/readyline/readyline/collector/redact"
)

func TestParseEventsConfig(t *testing.T) {
	t.Setenv("READYLINE_PODS_ONLY", "true")
	t.Setenv("READYLINE_RING_BUFFER_SIZE", "65536")
	c, err := parseEventsConfig([]string{"--log-level=debug"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !c.process.cfg.PodsOnly || c.process.cfg.RingBufferBytes != 65536 || c.log.level != "debug" {
		t.Errorf("config %+v: env twins or flags not applied", c)
	}
	// A flag beats its environment twin.
	c, err = parseEventsConfig([]string{"--pods-only=false"}, io.Discard)
	if err != nil || c.process.cfg.PodsOnly {
		t.Errorf("--pods-only=false with READYLINE_PODS_ONLY=true: %+v, %v", c, err)
	}
}

func TestParseEventsConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
	}{
		{"ring buffer not a power of two", []string{"--ring-buffer-size=5000"}, nil},
		{"ring buffer too small", []string{"--ring-buffer-size=1024"}, nil},
		{"unknown flag", []string{"--nope"}, nil},
		{"stray argument", []string{"extra"}, nil},
		{"bad env bool", nil, map[string]string{"READYLINE_PODS_ONLY": "perhaps"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			if _, err := parseEventsConfig(tc.args, io.Discard); !errors.Is(err, errUsage) {
				t.Errorf("error %v, want a usage error", err)
			}
		})
	}
}

func TestLogLevel(t *testing.T) {
	c := logConfig{level: "loud"}
	if _, err := c.logger(io.Discard); err == nil {
		t.Error("--log-level=loud accepted")
	}
}

func TestRunUnknownCommand(t *testing.T) {
	if code := run([]string{"nope"}, io.Discard, io.Discard); code != 2 {
		t.Errorf("exit code %d, want 2", code)
	}
	if code := run(nil, io.Discard, io.Discard); code != 2 {
		t.Errorf("no command: exit code %d, want 2", code)
	}
}

func TestRunKeepBytes(t *testing.T) {
	for _, tc := range []struct {
		env  string // READYLINE_KEEP_BYTES; "-" leaves it unset
		args []string
		want int64
	}{
		{"-", nil, 32 << 20},
		{"64Mi", nil, 64 << 20},
		{"64Mi", []string{"--keep-bytes", "1000000"}, 1000000},
		{"-", []string{"--keep-bytes=1G"}, 1e9},
	} {
		if tc.env != "-" {
			t.Setenv("READYLINE_KEEP_BYTES", tc.env)
		}
		c, err := parseRunConfig(append([]string{"--node-name", "n"}, tc.args...), io.Discard)
		if err != nil {
			t.Fatalf("env %q, args %q: %v", tc.env, tc.args, err)
		}
		if c.keepBytes != tc.want {
			t.Errorf("env %q, args %q: keep-bytes %d, want %d", tc.env, tc.args, c.keepBytes, tc.want)
		}
	}
	for _, bad := range []string{"lots", "-1Mi", "1.5"} {
		if _, err := parseRunConfig([]string{"--node-name", "n", "--keep-bytes", bad}, io.Discard); !errors.Is(err, errUsage) {
			t.Errorf("--keep-bytes %s: %v, want a usage error", bad, err)
		}
		t.Setenv("READYLINE_KEEP_BYTES", bad)
		if _, err := parseRunConfig([]string{"--node-name", "n"}, io.Discard); !errors.Is(err, errUsage) {
			t.Errorf("READYLINE_KEEP_BYTES=%s: %v, want a usage error", bad, err)
		}
	}
}

func TestRunExportQueueBytes(t *testing.T) {
	for _, tc := range []struct {
		env  string // READYLINE_EXPORT_QUEUE_BYTES; "-" leaves it unset
		args []string
		want int64
	}{
		{"-", nil, 16 << 20},
		{"4Mi", nil, 4 << 20},
		{"4Mi", []string{"--export-queue-bytes", "100000"}, 100000},
	} {
		if tc.env != "-" {
			t.Setenv("READYLINE_EXPORT_QUEUE_BYTES", tc.env)
		}
		c, err := parseRunConfig(append([]string{"--node-name", "n"}, tc.args...), io.Discard)
		if err != nil {
			t.Fatalf("env %q, args %q: %v", tc.env, tc.args, err)
		}
		if c.trace.QueueBytes != tc.want {
			t.Errorf("env %q, args %q: export-queue-bytes %d, want %d", tc.env, tc.args, c.trace.QueueBytes, tc.want)
		}
	}
	if _, err := parseRunConfig([]string{"--node-name", "n", "--export-queue-bytes", "lots"}, io.Discard); !errors.Is(err, errUsage) {
		t.Errorf("--export-queue-bytes lots: %v, want a usage error", err)
	}
}

// TestMaxFactBytes: run and replay take the correlator's fact budget, and
// refuse one too small to hold a few starts.
func TestMaxFactBytes(t *testing.T) {
	for _, tc := range []struct {
		env  string // READYLINE_MAX_FACT_BYTES; "-" leaves it unset
		args []string
		want int
	}{
		{"-", nil, 32 << 20},
		{"64Mi", nil, 64 << 20},
		{"64Mi", []string{"--max-fact-bytes", "2000000"}, 2000000},
	} {
		if tc.env != "-" {
			t.Setenv("READYLINE_MAX_FACT_BYTES", tc.env)
		}
		c, err := parseRunConfig(append([]string{"--node-name", "n"}, tc.args...), io.Discard)
		if err != nil {
			t.Fatalf("env %q, args %q: %v", tc.env, tc.args, err)
		}
		r, err := parseReplayConfig(append(tc.args, "rec.jsonl"), io.Discard)
		if err != nil {
			t.Fatalf("replay: env %q, args %q: %v", tc.env, tc.args, err)
		}
		if c.correlator.MaxFactBytes != tc.want || r.correlator.MaxFactBytes != tc.want {
			t.Errorf("env %q, args %q: max-fact-bytes %d (replay %d), want %d", tc.env, tc.args, c.correlator.MaxFactBytes, r.correlator.MaxFactBytes, tc.want)
		}
	}
	for _, bad := range []string{"lots", "-1Mi", "0", "512Ki", "1e30"} {
		if _, err := parseRunConfig([]string{"--node-name", "n", "--max-fact-bytes", bad}, io.Discard); !errors.Is(err, errUsage) {
			t.Errorf("--max-fact-bytes %s: %v, want a usage error", bad, err)
		}
		if _, err := parseReplayConfig([]string{"--max-fact-bytes", bad, "rec.jsonl"}, io.Discard); !errors.Is(err, errUsage) {
			t.Errorf("replay --max-fact-bytes %s: %v, want a usage error", bad, err)
		}
	}
}

// TestRunRingBufferSizes: each kernel source's ring has its flag (and
// environment twin), a power of two of at least a page.
func TestRunRingBufferSizes(t *testing.T) {
	c, err := parseRunConfig([]string{"--node-name", "n"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.process.cfg.RingBufferBytes != 1<<20 || c.callsRing != 512<<10 || c.tcpRing != 256<<10 {
		t.Errorf("defaults: process %d, cri_calls %d, tcp %d; want 1Mi, 512Ki, 256Ki",
			c.process.cfg.RingBufferBytes, c.callsRing, c.tcpRing)
	}
	t.Setenv("READYLINE_TCP_RING_BUFFER_SIZE", "65536")
	c, err = parseRunConfig([]string{"--node-name", "n", "--cri-calls-ring-buffer-size", "2097152"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.callsRing != 2<<20 || c.tcpRing != 64<<10 {
		t.Errorf("cri_calls %d, tcp %d; want 2Mi from the flag, 64Ki from the environment", c.callsRing, c.tcpRing)
	}
	for _, bad := range [][]string{
		{"--tcp-ring-buffer-size", "5000"},
		{"--tcp-ring-buffer-size", "2048"},
		{"--cri-calls-ring-buffer-size", "3000000"},
		{"--ring-buffer-size", "0"},
		{"--cri-calls-in-flight", "10"},
	} {
		var stderr strings.Builder
		_, err := parseRunConfig(append([]string{"--node-name", "n"}, bad...), &stderr)
		if !errors.Is(err, errUsage) || !strings.Contains(stderr.String(), bad[0]) {
			t.Errorf("%v: %v (%q), want a usage error naming the flag", bad, err, stderr.String())
		}
	}
}

// TestRunArgv: --argv and READYLINE_ARGV say what of command lines leaves
// the node; the default keeps them, redacted.
func TestRunArgv(t *testing.T) {
	for _, tc := range []struct {
		env  string // READYLINE_ARGV; "-" leaves it unset
		args []string
		want redact.Policy
	}{
		{"-", nil, redact.Redacted},
		{"none", nil, redact.ProgramOnly},
		{"none", []string{"--argv=redacted"}, redact.Redacted},
		{"-", []string{"--argv", "none"}, redact.ProgramOnly},
	} {
		if tc.env != "-" {
			t.Setenv("READYLINE_ARGV", tc.env)
		}
		c, err := parseRunConfig(append([]string{"--node-name", "n"}, tc.args...), io.Discard)
		if err != nil {
			t.Fatalf("env %q, args %q: %v", tc.env, tc.args, err)
		}
		if c.process.cfg.Argv != tc.want {
			t.Errorf("env %q, args %q: argv %v, want %v", tc.env, tc.args, c.process.cfg.Argv, tc.want)
		}
	}
	if _, err := parseRunConfig([]string{"--node-name", "n", "--argv", "hidden"}, io.Discard); !errors.Is(err, errUsage) {
		t.Errorf("--argv hidden: %v, want a usage error", err)
	}
	t.Setenv("READYLINE_ARGV", "hidden")
	if _, err := parseRunConfig([]string{"--node-name", "n"}, io.Discard); !errors.Is(err, errUsage) {
		t.Errorf("READYLINE_ARGV=hidden: %v, want a usage error", err)
	}
}
