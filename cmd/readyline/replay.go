package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter/termtext"
)

// replayConfig is the validated configuration of `readyline replay`.
type replayConfig struct {
	file       string
	json       bool
	width      uint
	correlator correlator.Config
}

func parseReplayConfig(args []string, stderr io.Writer) (replayConfig, error) {
	var c replayConfig
	fs := newFlagSet("readyline replay", stderr)
	fs.Bool(&c.json, "json", false, "print the timelines as JSON lines instead of waterfalls")
	fs.Uint(&c.width, "width", 100, "width of the waterfalls in columns")
	registerCorrelatorFlags(fs, &c.correlator)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: readyline replay [flags] FILE\n\nRuns the correlator on a recording (readyline run --record) and prints the timelines.")
		fs.PrintDefaults()
	}
	if err := fs.parseWithArgs(args, 1); err != nil {
		return c, err
	}
	if err := validateCorrelatorFlags(c.correlator, stderr); err != nil {
		return c, err
	}
	c.file = fs.Arg(0)
	return c, nil
}

// registerCorrelatorFlags adds the correlator's settings to a command.
func registerCorrelatorFlags(fs *flagSet, c *correlator.Config) {
	fs.Duration(&c.Timeout, "start-timeout", 10*time.Minute, "a pod start not Ready after this long is reported as a timeout")
	fs.Duration(&c.Grace, "grace", time.Second, "the longest a finished pod start waits for late events (it is built sooner once the kernel sources have read past its end)")
	fs.IntBytes(&c.MaxFactBytes, "max-fact-bytes", 32<<20, "the most memory, about, that the node's facts may take while their pod starts are in progress or their pods not seen yet (processes and their argv, CRI calls, connections; half of it at most for the pods not seen): past it the oldest detail goes, counted in readyline_events_dropped_total{source=\"correlator\",reason=~\"budget.*\"}, and the starts that lost some are marked facts_trimmed: a `size` in bytes, or e.g. 32Mi")
}

// minFactBytes is the smallest --max-fact-bytes: a few pod starts' facts.
const minFactBytes = 1 << 20

// validateCorrelatorFlags checks the correlator's settings.
func validateCorrelatorFlags(c correlator.Config, stderr io.Writer) error {
	if c.MaxFactBytes < minFactBytes {
		fmt.Fprintf(stderr, "--max-fact-bytes: %d is less than 1Mi\n", c.MaxFactBytes)
		return errUsage
	}
	return nil
}

// runReplay feeds a recording to the correlator and prints each timeline.
// It stops when ctx ends (SIGTERM, SIGINT), also while it waits for more of
// a recording that is a pipe, and then returns an error wrapping ctx's
// cause, without printing the starts still in progress.
func runReplay(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseReplayConfig(args, stderr)
	if err != nil {
		return err
	}
	f, err := os.Open(cfg.file)
	if err != nil {
		return err
	}
	defer f.Close()
	// Closing the file ends a read that waits on a pipe or a FIFO.
	defer context.AfterFunc(ctx, func() { f.Close() })()
	stopped := func() error {
		return fmt.Errorf("replay stopped: %w", context.Cause(ctx))
	}
	print := func(tl *correlator.Timeline) error {
		if ctx.Err() != nil {
			return stopped()
		}
		if cfg.json {
			return termtext.WriteJSON(stdout, tl, "")
		}
		return printWaterfall(stdout, tl, int(cfg.width))
	}
	c := correlator.New(cfg.correlator)
	err = c.Replay(f, print)
	if ctx.Err() != nil {
		return stopped()
	}
	if err != nil {
		return err
	}
	st := c.Stats()
	if st.Orphaned+st.Overflow+st.Trimmed+st.ArgvTrimmed > 0 {
		fmt.Fprintf(stderr, "replay: %d events, %d timelines; dropped %d for pods never seen in the API, %d over bounds, %d facts and %d processes' argv over --max-fact-bytes\n",
			st.Events, st.Timelines, st.Orphaned, st.Overflow, st.Trimmed, st.ArgvTrimmed)
	}
	if st.ClockSteps > 0 {
		fmt.Fprintf(stderr, "replay: the wall clock stepped %d times (the last by %v); the starts across a step are marked %s\n",
			st.ClockSteps, st.ClockStep, correlator.MarkClockStep)
	}
	return nil
}
