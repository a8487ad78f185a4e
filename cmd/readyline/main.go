// Command readyline answers, for every pod that starts on a Kubernetes node,
// where the time between "created" and "Ready" went.
//
//	readyline run [flags]           the node daemon
//	readyline explain [NS/]POD      the waterfall of a recent pod start
//	readyline events [flags]        stream process events as JSON lines
//	readyline replay [flags] FILE   rebuild pod start timelines from a recording
//	readyline health [flags]        ask the daemon whether it is healthy (the probes)
//
// Every flag has an environment twin: --log-level is READYLINE_LOG_LEVEL
// (but for run's --record-dir, which says where the daemon may write).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

const usage = `usage: readyline <command> [flags]

commands:
  run      the daemon: reconstruct every pod start on this node and export it
           (OTLP traces, Prometheus metrics, the timeline API for explain)
  explain  print the waterfall of a recent pod start: readyline explain [NAMESPACE/]POD
  events   stream every process event (exec, fork, exit) as one JSON line on stdout,
           and a "source" line when the kernel lost records
  replay   run the correlator on a recording and print the pod start timelines
  health   ask the daemon on this node whether it is healthy (exit 0) or not (1):
           the DaemonSet's probes

Run 'readyline <command> -h' for the flags of a command. Every flag has an
environment twin: --log-level is READYLINE_LOG_LEVEL.
`

// version is set at build time (make build: git describe).
var version = "dev"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && (args[0] == "version" || args[0] == "--version") {
		fmt.Fprintln(stdout, "readyline", version)
		return 0
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, usage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var err error
	switch args[0] {
	case "events":
		err = runEvents(ctx, args[1:], stdout, stderr)
	case "run":
		err = runDaemon(ctx, args[1:], stdout, stderr)
	case "explain":
		err = runExplain(ctx, args[1:], stdout, stderr)
	case "replay":
		err = runReplay(ctx, args[1:], stdout, stderr)
	case "health":
		err = runHealth(ctx, args[1:], stdout, stderr)
	default:
		fmt.Fprintf(stderr, "readyline: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	default:
		fmt.Fprintf(stderr, "readyline %s: %v\n", args[0], err)
		return 1
	}
}
