// Command kubectl-readyline is readyline's kubectl plugin: the waterfall of
// a pod start from the readyline on the pod's node, without finding that
// node's readyline pod by hand.
//
//	kubectl readyline explain [-n NAMESPACE] POD [--width N] [-o text|json]
//	kubectl readyline explain --web [-n NAMESPACE] POD [--address A] [--port P]
//	kubectl readyline list [-n NAMESPACE | -A] [-o text|json]
//
// It asks as the kubeconfig's user, with kubectl's flags (--kubeconfig,
// --context, -n, ...; not --as): the API server for pods get in the pod's
// namespace, and pods list and pods/portforward create in readyline's
// namespace (deploy/plugin-rbac grants that); then, through the
// port-forward, the daemon's secure API with the same credentials, which
// answers with the starts of the pods the user may get.
//
// Install it with `go install github.com/readyline/readyline/cmd/kubectl-readyline@latest`
// or `make build` (bin/kubectl-readyline); kubectl finds it on $PATH.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/pflag"
)

const usage = `usage: kubectl readyline <command> [flags]

commands:
  explain  the waterfall of a recent start of a pod, from the readyline on its node:
           kubectl readyline explain [-n NAMESPACE] POD [--width N] [-o text|json]
           kubectl readyline explain --web [-n NAMESPACE] POD   (the daemon's page, served locally as you)
  list     the pod starts every node's readyline keeps, of the pods you may get:
           kubectl readyline list [-n NAMESPACE | -A] [-o text|json]
  version  this plugin's version

Run 'kubectl readyline <command> -h' for the flags of a command; every command
takes kubectl's own (--kubeconfig, --context, -n, --as, ...).
`

// version is set at build time (make build: git describe).
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run runs the command of args and returns the exit status: 0, 1 on an
// error (printed on stderr, as kubectl prints its own), 2 on a usage error.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	args = commandFirst(args)
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, usage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	var err error
	switch args[0] {
	case "version", "--version":
		fmt.Fprintln(stdout, "kubectl-readyline", version)
		return 0
	case "explain":
		err = runExplain(ctx, args[1:], stdout, stderr)
	case "list":
		err = runList(ctx, args[1:], stdout, stderr)
	default:
		fmt.Fprintf(stderr, "kubectl readyline: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	switch {
	case err == nil, errors.Is(err, pflag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	case errors.Is(err, errReported):
		return 1
	default:
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
}

// commandFirst moves the command to the front when kubectl's flags come
// before it, as kubectl itself allows (kubectl-readyline --kubeconfig F
// explain POD): the first argument that names a command is the command.
func commandFirst(args []string) []string {
	if len(args) == 0 || !strings.HasPrefix(args[0], "-") {
		return args
	}
	for i, a := range args {
		switch a {
		case "explain", "list", "version":
			return slices.Concat([]string{a}, args[:i], args[i+1:])
		}
	}
	return args
}

// errUsage marks an error already explained to the user with the usage.
var errUsage = errors.New("usage error")

// errReported marks a failure already told on stderr (list: the nodes
// whose readyline did not answer).
var errReported = errors.New("failure reported")
