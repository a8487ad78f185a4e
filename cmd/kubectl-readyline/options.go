package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
)

// The DaemonSet of deploy/base, as kubectl-readyline finds it.
const (
	defaultReadylineNamespace = "readyline"
	// defaultReadylineSelector is the DaemonSet's pod template labels: the
	// name alone would not do, every object of deploy/base has it.
	defaultReadylineSelector = "app.kubernetes.io/name=readyline,app.kubernetes.io/component=node-agent"
	// defaultAPIPort is the port of `readyline run --secure-api-addr`
	// (127.0.0.1:9467), which every command forwards to.
	defaultAPIPort = 9467
)

// commonOptions are the flags of every command: kubectl's (cli-runtime's
// ConfigFlags: --kubeconfig, --context, -n, --as, ...), where readyline
// runs, and the output format.
type commonOptions struct {
	kube               *genericclioptions.ConfigFlags
	readylineNamespace string
	readylineSelector  string
	apiPort            uint16
	output             string
	via                string
}

// flagSet returns the flag set of a command: the common flags and those
// addOwn adds, and kubectl's. Its usage lists kubectl's apart, as kubectl
// does under "kubectl options".
func (o *commonOptions) flagSet(name, help string, stderr io.Writer, addOwn func(*pflag.FlagSet)) *pflag.FlagSet {
	own := pflag.NewFlagSet(name, pflag.ContinueOnError)
	addOwn(own)
	own.StringVar(&o.readylineNamespace, "readyline-namespace", defaultReadylineNamespace, "the namespace of readyline's DaemonSet")
	own.StringVar(&o.readylineSelector, "readyline-selector", defaultReadylineSelector, "the label selector of readyline's pods")
	own.Uint16Var(&o.apiPort, "api-port", defaultAPIPort, "the port of readyline's secure API in its pods (readyline run --secure-api-addr)")
	own.StringVarP(&o.output, "output", "o", "text", "output format: text or json")
	own.StringVar(&o.via, "via", viaAuto, "where to read the starts: api (the API server's readyline.dev, as kubectl get podstarts; no port-forward), "+
		"nodes (each node's readyline through a port-forward), auto (api when the API server serves it)")

	kube := pflag.NewFlagSet("kubectl", pflag.ContinueOnError)
	o.kube = genericclioptions.NewConfigFlags(true)
	o.kube.AddFlags(kube)

	all := pflag.NewFlagSet(name, pflag.ContinueOnError)
	all.SetOutput(stderr)
	all.AddFlagSet(own)
	all.AddFlagSet(kube)
	all.Usage = func() {
		fmt.Fprintf(stderr, "%s\n\nflags:\n%s\nkubectl's flags:\n%s", help, own.FlagUsages(), kube.FlagUsages())
	}
	return all
}

// parse parses args with fs; a usage error it prints with the usage, and
// returns errUsage.
func parse(fs *pflag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return err
		}
		return usageError(fs, err)
	}
	return nil
}

// validate checks the common flags.
func (o *commonOptions) validate() error {
	switch o.output {
	case "text", "json":
	default:
		return fmt.Errorf("--output %q: want text or json", o.output)
	}
	if o.readylineNamespace == "" {
		return fmt.Errorf("--readyline-namespace is empty")
	}
	if _, err := labels.Parse(o.readylineSelector); err != nil {
		return fmt.Errorf("--readyline-selector: %w", err)
	}
	if o.apiPort == 0 {
		return errors.New("--api-port must be > 0")
	}
	switch o.via {
	case viaAuto, viaAPI, viaNodes:
	default:
		return fmt.Errorf("--via %q: want api, nodes or auto", o.via)
	}
	return nil
}

// usageError prints what is wrong and the usage, and returns errUsage.
func usageError(fs *pflag.FlagSet, err error) error {
	fmt.Fprintf(fs.Output(), "%v\n", err)
	fs.Usage()
	return errUsage
}

// connect returns readyline's DaemonSet as the kubeconfig's user sees it,
// and the namespace of the kubeconfig's context (or -n).
func (o *commonOptions) connect(stderr io.Writer) (*daemonSet, string, error) {
	namespace, _, err := o.kube.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, "", fmt.Errorf("loading the kubeconfig: %w", err)
	}
	cfg, err := o.kube.ToRESTConfig()
	if err != nil {
		return nil, "", fmt.Errorf("loading the kubeconfig: %w", err)
	}
	cfg.UserAgent = "kubectl-readyline/" + version
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, "", fmt.Errorf("creating the API client: %w", err)
	}
	transport, err := daemonTransport(cfg)
	if err != nil {
		return nil, "", err
	}
	ds := &daemonSet{
		client:    client,
		namespace: o.readylineNamespace,
		selector:  o.readylineSelector,
		conn:      &apiConn{config: cfg, client: client, stderr: stderr},
		apiPort:   o.apiPort,
		transport: transport,
	}
	if o.via != viaNodes {
		api, err := findPodStartsAPI(client.Discovery(), client.Discovery().RESTClient())
		switch {
		case err == nil:
			if err := api.reach(cfg); err != nil {
				return nil, "", err
			}
			ds.api = api
		case o.via == viaAPI:
			return nil, "", fmt.Errorf("--via api: the API server does not serve %s podstarts (deploy/aggregated): %w", podStartsGroupVersion, err)
		}
	}
	return ds, namespace, nil
}

// podName is the POD argument of explain: a name, or kubectl's pod/NAME.
func podName(arg string) (string, error) {
	for _, prefix := range []string{"pod/", "pods/", "po/"} {
		if name, ok := strings.CutPrefix(arg, prefix); ok {
			arg = name
			break
		}
	}
	if arg == "" || strings.Contains(arg, "/") {
		return "", fmt.Errorf("%q is no pod name: give the namespace with -n (kubectl readyline explain -n NAMESPACE POD)", arg)
	}
	return arg, nil
}
