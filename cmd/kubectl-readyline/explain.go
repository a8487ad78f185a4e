package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"

	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter/apiclient"
	"github.com/readyline/readyline/exporter/waterfall"
)

const explainHelp = `usage: kubectl readyline explain [-n NAMESPACE] POD [--width N] [-o text|json] [--watch]
       kubectl readyline explain --web [-n NAMESPACE] POD [--address A] [--port P]

Prints the waterfall of the latest start of POD: from the API server's
readyline.dev (kubectl get podstarts; deploy/aggregated) when it serves it,
else from the readyline on the node it runs on, its secure API through a
port-forward (pods/portforward) (--via says which), as the kubeconfig's
user, who must be allowed to get POD; -o json prints
its timeline as the daemon's API serves it. A start in progress is drawn
as of now, with what it waits on; --watch draws it again each time it
takes a new fact, until it ends. --web serves the start's pages on a
local port, as you, prints the URL of the pod's page and serves until
Ctrl-C: through the API server (podstarts/POD/web, which kubectl proxy
reaches too) when it serves readyline.dev, else from the node's readyline
through a port-forward.`

// explainOptions are the flags and argument of explain.
type explainOptions struct {
	commonOptions
	pod   string
	width uint
	watch bool

	web     bool
	address string
	port    uint16
}

func parseExplain(args []string, stderr io.Writer) (explainOptions, error) {
	var o explainOptions
	fs := o.flagSet("kubectl readyline explain", explainHelp, stderr, func(fs *pflag.FlagSet) {
		fs.UintVar(&o.width, "width", 100, "width of the waterfall in columns")
		fs.BoolVar(&o.watch, "watch", false, "draw a start in progress again each time it takes a new fact, until it ends")
		fs.BoolVar(&o.web, "web", false, "serve the start's pages on a local port, as you (through the API server, or the node's readyline per --via), and print the URL of the pod's page, until Ctrl-C")
		fs.StringVar(&o.address, "address", "127.0.0.1", "with --web: the local address to listen on")
		fs.Uint16Var(&o.port, "port", 0, "with --web: the local port to listen on (0: a free one)")
	})
	if err := parse(fs, args); err != nil {
		return o, err
	}
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
		for _, f := range []string{"width", "output", "watch"} {
			if fs.Changed(f) {
				return o, usageError(fs, fmt.Errorf("--%s is for the waterfall in the terminal, not --web", f))
			}
		}
	} else {
		for _, f := range []string{"address", "port"} {
			if fs.Changed(f) {
				return o, usageError(fs, fmt.Errorf("--%s needs --web", f))
			}
		}
	}
	return o, nil
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
		if ds.api != nil {
			return ds.api.web(ctx, namespace, o.pod, o.address, o.port, stdout, stderr)
		}
		return ds.web(ctx, namespace, o.pod, o.address, o.port, stdout, stderr)
	}
	draw := func(tl *correlator.Timeline, again bool) error {
		if again {
			if err := waterfall.Redraw(stdout); err != nil {
				return err
			}
		}
		if o.output == "json" {
			return writeJSON(stdout, tl)
		}
		if err := waterfall.Render(stdout, tl, int(o.width)); err != nil {
			return err
		}
		_, err := fmt.Fprintln(stdout)
		return err
	}
	fetch := ds.explain
	if ds.api != nil {
		fetch = ds.api.explain
	}
	fetch = ds.orUnscheduled(fetch)
	if o.watch {
		return waterfall.Watch(ctx, func(ctx context.Context) (*correlator.Timeline, error) {
			return fetch(ctx, namespace, o.pod)
		}, draw)
	}
	tl, err := fetch(ctx, namespace, o.pod)
	if err != nil {
		return err
	}
	return draw(tl, false)
}

// explain asks the readyline on the node of pod namespace/name for the
// start of that pod (by its UID: not an earlier pod's of the same name
// the daemon may still keep).
func (ds *daemonSet) explain(ctx context.Context, namespace, name string) (*correlator.Timeline, error) {
	pod, daemon, err := ds.daemonOf(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	who := fmt.Sprintf("pod %s/%s is on node %s, whose readyline", namespace, name, pod.Spec.NodeName)
	var tl *correlator.Timeline
	err = ds.withAPI(ctx, daemon, "asking the readyline on node "+pod.Spec.NodeName, func(ctx context.Context, api *apiclient.Client) error {
		tl, err = api.Timeline(ctx, namespace, name, string(pod.UID))
		return err
	})
	if errors.Is(err, apiclient.ErrNotFound) {
		return nil, fmt.Errorf("%s (pod %s/%s) answered: no recent start of %s/%s on this node (none in progress, and it keeps the last --keep starts that ended, of those it saw since it started)",
			who, daemon.Namespace, daemon.Name, namespace, name)
	}
	if err != nil {
		return nil, answerError(err, who, daemon, "pod "+namespace+"/"+name)
	}
	return tl, nil
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
