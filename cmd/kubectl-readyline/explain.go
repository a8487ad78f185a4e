package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	utilexec "k8s.io/client-go/util/exec"

	"github.com/readyline/readyline/exporter/termtext"
)

const explainHelp = `usage: kubectl readyline explain [-n NAMESPACE] POD [--width N] [-o text|json]
       kubectl readyline explain --web [-n NAMESPACE] POD [--address A] [--port P]

Prints the waterfall of the latest start of POD, from the readyline on the
node it runs on (readyline explain, through pods/exec); -o json prints its
timeline as the daemon's API serves it. --web forwards a local port to that
readyline's API (pods/portforward), prints the URL of the pod's page and
forwards until Ctrl-C.`

// explainOptions are the flags and argument of explain.
type explainOptions struct {
	commonOptions
	pod      string
	width    uint
	widthSet bool

	web     bool
	address string
	port    uint16
	apiPort uint16
}

func parseExplain(args []string, stderr io.Writer) (explainOptions, error) {
	var o explainOptions
	fs := o.flagSet("kubectl readyline explain", explainHelp, stderr, func(fs *pflag.FlagSet) {
		fs.UintVar(&o.width, "width", 100, "width of the waterfall in columns")
		fs.BoolVar(&o.web, "web", false, "port-forward to the daemon's API and print the URL of the pod's page, until Ctrl-C")
		fs.StringVar(&o.address, "address", "127.0.0.1", "with --web: the local address to listen on")
		fs.Uint16Var(&o.port, "port", 0, "with --web: the local port to listen on (0: a free one)")
		fs.Uint16Var(&o.apiPort, "api-port", defaultAPIPort, "with --web: the port of the daemon's API in its pod (readyline run --api-addr)")
	})
	if err := parse(fs, args); err != nil {
		return o, err
	}
	o.widthSet = fs.Changed("width")
	if err := o.validate(); err != nil {
		return o, usageError(fs, err)
	}
	if fs.NArg() != 1 {
		return o, usageError(fs, fmt.Errorf("want one pod, got %d arguments", fs.NArg()))
	}
	var err error
	if o.pod, err = podName(fs.Arg(0)); err != nil {
		return o, usageError(fs, err)
	}
	if o.web {
		for _, f := range []string{"width", "output"} {
			if fs.Changed(f) {
				return o, usageError(fs, fmt.Errorf("--%s is for the waterfall in the terminal, not --web", f))
			}
		}
		if o.apiPort == 0 {
			return o, usageError(fs, errors.New("--api-port must be > 0"))
		}
	} else {
		for _, f := range []string{"address", "port", "api-port"} {
			if fs.Changed(f) {
				return o, usageError(fs, fmt.Errorf("--%s needs --web", f))
			}
		}
	}
	return o, nil
}

// explainArgs are the flags of `readyline explain` in the readyline pod.
func (o *explainOptions) explainArgs() []string {
	var args []string
	if o.output == "json" {
		args = append(args, "--json")
	}
	if o.widthSet {
		args = append(args, "--width="+strconv.FormatUint(uint64(o.width), 10))
	}
	return args
}

func runExplain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseExplain(args, stderr)
	if err != nil {
		return err
	}
	ds, namespace, err := o.connect(stderr)
	if err != nil {
		return err
	}
	if o.web {
		return ds.web(ctx, namespace, o.pod, o.address, o.port, o.apiPort, stdout, stderr)
	}
	return ds.explain(ctx, namespace, o.pod, o.explainArgs(), stdout, stderr)
}

// explain runs `readyline explain ARGS NAMESPACE/NAME` in the readyline
// pod on the node of pod namespace/name, streaming its output to stdout.
func (ds *daemonSet) explain(ctx context.Context, namespace, name string, args []string, stdout, stderr io.Writer) error {
	pod, daemon, err := ds.daemonOf(ctx, namespace, name)
	if err != nil {
		return err
	}
	remote := &cappedBuffer{max: maxRemoteStderr}
	if !slices.Contains(args, "--json") {
		// A readyline that escapes its waterfall leaves nothing to do here;
		// an older one, or anything else answering, still cannot act on the
		// terminal (JSON escapes control characters itself).
		text := termtext.NewWriter(stdout)
		defer text.Flush()
		stdout = text
	}
	// This pod's start, not an earlier pod's of the same name the daemon
	// may still keep.
	pinned := append(slices.Clip(args), "--uid="+string(pod.UID), namespace+"/"+name)
	err = ds.conn.Explain(ctx, daemon, pinned, stdout, remote)
	if err != nil && strings.Contains(remote.String(), "flag provided but not defined: -uid") {
		// A readyline older than the plugin: by name alone, and say so.
		fmt.Fprintf(stderr, "warning: the readyline on node %s (pod %s/%s) is older than this plugin and answers by name only: "+
			"this may be the start of an earlier pod of that name (this pod's uid is %s)\n", pod.Spec.NodeName, daemon.Namespace, daemon.Name, pod.UID)
		remote.Reset()
		err = ds.conn.Explain(ctx, daemon, append(slices.Clip(args), namespace+"/"+name), stdout, remote)
	}
	if err == nil {
		w := termtext.NewWriter(stderr)
		if _, err = w.Write(remote.Bytes()); err != nil {
			return err
		}
		return w.Flush()
	}
	return ds.explainError(ctx, err, daemon, remote.String(), fmt.Sprintf("pod %s/%s is on node %s, whose readyline", namespace, name, pod.Spec.NodeName))
}

// daemonOf returns pod namespace/name and the readyline pod on its node.
func (ds *daemonSet) daemonOf(ctx context.Context, namespace, name string) (pod, daemon *corev1.Pod, err error) {
	if pod, err = ds.targetPod(ctx, namespace, name); err != nil {
		return nil, nil, err
	}
	if daemon, err = ds.onNode(ctx, pod.Spec.NodeName); err != nil {
		return nil, nil, fmt.Errorf("pod %s/%s: %w", namespace, name, err)
	}
	return pod, daemon, nil
}

// explainError explains a failed `readyline explain` in daemon: when it ran
// and failed, the message it printed, after who (e.g. "the readyline on
// node n1"); else why the stream failed.
func (ds *daemonSet) explainError(ctx context.Context, err error, daemon *corev1.Pod, stderr, who string) error {
	var exit utilexec.ExitError
	if errors.As(err, &exit) {
		msg := termtext.Escape(strings.TrimSpace(stderr))
		msg = strings.TrimPrefix(msg, "readyline explain: ")
		if msg == "" {
			msg = err.Error()
		}
		return fmt.Errorf("%s (pod %s/%s) answered: %s", who, daemon.Namespace, daemon.Name, msg)
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return ds.streamError(ctx, err, "pods/exec", daemon, "asking the readyline on node "+daemon.Spec.NodeName)
}

// maxRemoteStderr bounds what is kept of a readyline pod's stderr: its
// error message, a line.
const maxRemoteStderr = 64 << 10

// cappedBuffer keeps the first max bytes written to it and drops the rest.
type cappedBuffer struct {
	bytes.Buffer
	max int
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
