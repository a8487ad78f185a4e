package main

import (
	"context"
	"fmt"
	"io"
	"math/bits"
	"os"
	"path"
	"strings"

	"github.com/readyline/readyline/collector"
	"github.com/readyline/readyline/collector/event"
	"github.com/readyline/readyline/collector/redact"
)

// eventsConfig is the validated configuration of `readyline events`.
type eventsConfig struct {
	log     logConfig
	process processFlags
}

func parseEventsConfig(args []string, stderr io.Writer) (eventsConfig, error) {
	var c eventsConfig
	fs := newFlagSet("readyline events", stderr)
	c.log.register(fs)
	c.process.register(fs)
	fs.Bool(&c.process.cfg.PodsOnly, "pods-only", false, "only processes in pod cgroups")
	fs.Bool(&c.process.cfg.HostArgv, "host-argv", false, "keep argv of every host process, not only of pod processes and runtime helpers (secrets are still redacted)")
	if err := fs.parse(args); err != nil {
		return c, err
	}
	return c, c.process.validate(stderr)
}

// processFlags are the process source's settings, shared by the commands.
type processFlags struct {
	cfg      collector.ProcessConfig
	ringSize uint
	cniDirs  string
}

func (p *processFlags) register(fs *flagSet) {
	fs.String(&p.cfg.CgroupMount, "cgroup-mount", "", "cgroup2 mount point (default: found in /proc/self/mountinfo)")
	fs.Uint(&p.ringSize, "ring-buffer-size", collector.DefaultProcessRingBytes,
		"the process events' kernel ring buffer size in bytes (a power of two, at least 4096); readyline_ring_buffer_peak_bytes{source=\"process\"} says how much of it a burst took")
	fs.String(&p.cniDirs, "cni-bin-dirs", strings.Join(collector.DefaultCNIBinDirs, ","),
		"comma-separated directories the container runtime runs CNI plugins from (at most 3, each under 31 bytes)")
	fs.Value(&p.cfg.Argv, "argv", "what of command lines (processes' argv, the kubelet's exec probes and hooks, a pod spec's commands) leaves the node: "+
		"redacted (secrets replaced by "+redact.Marker+") or none (the program's name only)")
}

func (p *processFlags) validate(stderr io.Writer) error {
	var err error
	if p.cfg.RingBufferBytes, err = ringBytes("ring-buffer-size", p.ringSize, stderr); err != nil {
		return err
	}
	p.cfg.CNIBinDirs = []string{} // none: no process is a CNI plugin
	for _, d := range strings.Split(p.cniDirs, ",") {
		if d = strings.TrimSpace(d); d == "" {
			continue
		}
		d = path.Clean(d)
		// The kernel program compares exec'd paths with at most 3
		// directories of 31 bytes, the trailing slash included
		// (bpf.ProcessOptions.CNIDirs).
		if len(d) > 30 || !path.IsAbs(d) {
			fmt.Fprintf(stderr, "--cni-bin-dirs: %q is not an absolute path of at most 30 bytes\n", d)
			return errUsage
		}
		p.cfg.CNIBinDirs = append(p.cfg.CNIBinDirs, d)
	}
	if len(p.cfg.CNIBinDirs) > 3 {
		fmt.Fprintf(stderr, "--cni-bin-dirs: %d directories, at most 3\n", len(p.cfg.CNIBinDirs))
		return errUsage
	}
	return nil
}

// runEvents streams process events as JSON lines until ctx is done.
func runEvents(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseEventsConfig(args, stderr)
	if err != nil {
		return err
	}
	logger, err := cfg.log.logger(stderr)
	if err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		logger.Warn("not running as root: loading eBPF programs needs CAP_BPF, CAP_PERFMON and CAP_DAC_READ_SEARCH")
	}
	src, err := collector.NewProcessSource(cfg.process.cfg, logger)
	if err != nil {
		return err
	}
	var writeErr error // stdout gone (a closed pipe): stop writing
	err = src.Run(ctx, func(ev event.Event) {
		if _, ok := ev.(*event.Drained); ok || writeErr != nil {
			return // the marks are for the correlator: a reader wants the facts
		}
		line, err := event.Marshal(ev)
		if err != nil {
			logger.Error("encoding event", "error", err)
			return
		}
		// One write per line: a reader sees each event as it happens.
		_, writeErr = stdout.Write(append(line, '\n'))
	})
	st := src.Stats()
	logger.Info("stopped", "records", st.Records, "kernel_drops", st.KernelDrops,
		"decode_errors", st.DecodeErrors, "unattributed", st.Unattributed, "other_node", st.OtherNode, "filtered", st.Filtered)
	if err != nil {
		return err
	}
	return writeErr
}

// ringBytes checks the size a --*ring-buffer-size flag gives a kernel ring
// buffer: the kernel takes a power of two, at least a page.
func ringBytes(flag string, n uint, stderr io.Writer) (uint32, error) {
	if n < 4096 || bits.OnesCount(n) != 1 || n > 1<<30 {
		fmt.Fprintf(stderr, "--%s: %d is not a power of two between 4096 and 1 GiB\n", flag, n)
		return 0, errUsage
	}
	return uint32(n), nil
}
