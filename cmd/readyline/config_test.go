package main

import (
	"errors"
	"io"
	"testing"
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
