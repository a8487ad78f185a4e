package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"maps"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/readyline/readyline/exporter/apiclient"
	"github.com/readyline/readyline/exporter/termtext"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/duration"
)

const listHelp = `usage: kubectl readyline list [-n NAMESPACE | -A] [-o text|json]

Lists the pod starts that the readyline of every node keeps, newest first,
in the namespace of the kubeconfig's context (-n another, -A all): those of
the pods the kubeconfig's user may get, which each readyline asks the API
server. When the API server serves readyline.dev (kubectl get podstarts),
one request to it; else one port-forward to each node's readyline (--via
says which). A node whose readyline does not answer is reported on stderr, the
others are listed, and the exit status is 1, as kubectl get does with the
objects it could not get.`

// listOptions are the flags of list.
type listOptions struct {
	commonOptions
	allNamespaces bool
}

func parseList(args []string, stderr io.Writer) (listOptions, error) {
	var o listOptions
	fs := o.flagSet("kubectl readyline list", listHelp, stderr, func(fs *pflag.FlagSet) {
		fs.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "list the starts of pods in every namespace")
	})
	if err := parse(fs, args); err != nil {
		return o, err
	}
	if err := o.validate(); err != nil {
		return o, usageError(fs, err)
	}
	if fs.NArg() != 0 {
		return o, usageError(fs, fmt.Errorf("list takes no arguments, got %q (explain shows one pod)", fs.Args()))
	}
	if o.allNamespaces && fs.Changed("namespace") {
		return o, usageError(fs, errors.New("-A and -n exclude each other"))
	}
	return o, nil
}

func runList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseList(args, stderr)
	if err != nil {
		return err
	}
	ds, namespace, err := o.connect(stderr)
	if err != nil {
		return err
	}
	if o.allNamespaces {
		namespace = ""
	}
	if ds.api != nil {
		return ds.api.printList(ctx, namespace, o.output, stdout, stderr, time.Now())
	}
	return ds.list(ctx, namespace, o.output, stdout, stderr, time.Now())
}

// startSummary is one pod start a node's readyline keeps, as its API
// lists it, and the node: an entry of what `list -o json` prints.
type startSummary struct {
	Node string `json:"node"`
	apiclient.TimelineSummary
}

// startList is what `list -o json` prints.
type startList struct {
	Timelines []startSummary `json:"timelines"`
}

// nodeAnswer is what the readyline pod of one node answered.
type nodeAnswer struct {
	daemon *corev1.Pod
	starts []startSummary
	err    error
}

// Bounds of asking every node's readyline.
const (
	listParallel = 8
	listTimeout  = 30 * time.Second
)

// list prints the starts the readyline pods keep of pods in namespace
// ("": all) to stdout, as a table or (output "json") a startList. The
// pods that do not answer are reported on stderr, and then it returns
// errReported.
func (ds *daemonSet) list(ctx context.Context, namespace, output string, stdout, stderr io.Writer, now time.Time) error {
	pods, err := ds.pods(ctx, "")
	if err != nil {
		return err
	}
	if len(pods) == 0 {
		return fmt.Errorf("%w runs (%s); is readyline deployed, or in another namespace (--readyline-namespace)?", errNoDaemon, ds.where())
	}
	failed := 0
	var daemons []*corev1.Pod
	for node, pods := range byNode(pods) {
		d, others := pick(pods)
		if d == nil {
			fmt.Fprintf(stderr, "error: node %s: readyline pod %s, not asked\n", node, strings.Join(others, ", "))
			failed++
			continue
		}
		daemons = append(daemons, d)
	}
	answers := ds.askAll(ctx, daemons, namespace)
	forbiddenTold := false
	for _, a := range answers {
		if a.err == nil {
			continue
		}
		failed++
		if errors.Is(a.err, errForbidden) || errors.Is(a.err, apiclient.ErrUnauthorized) { // the same for every node
			if !forbiddenTold {
				fmt.Fprintf(stderr, "error: %v\n", a.err)
			}
			forbiddenTold = true
			continue
		}
		fmt.Fprintf(stderr, "error: node %s: %v\n", a.daemon.Spec.NodeName, a.err)
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	starts := mergeStarts(answers, namespace)
	if output == "json" {
		err = writeJSON(stdout, startList{Timelines: starts})
	} else {
		err = printStarts(stdout, stderr, starts, namespace, now)
	}
	if err != nil {
		return err
	}
	if failed > 0 {
		return errReported
	}
	return nil
}

// byNode groups pods by their node, in the order of the nodes' names.
func byNode(pods []corev1.Pod) iter.Seq2[string, []corev1.Pod] {
	nodes := map[string][]corev1.Pod{}
	for _, p := range pods {
		nodes[p.Spec.NodeName] = append(nodes[p.Spec.NodeName], p)
	}
	return func(yield func(string, []corev1.Pod) bool) {
		for _, node := range slices.Sorted(maps.Keys(nodes)) {
			if !yield(node, nodes[node]) {
				return
			}
		}
	}
}

// askAll asks every daemon for its list of namespace ("": all), a few at a
// time, and returns their answers in the order of daemons.
func (ds *daemonSet) askAll(ctx context.Context, daemons []*corev1.Pod, namespace string) []nodeAnswer {
	answers := make([]nodeAnswer, len(daemons))
	sem := make(chan struct{}, listParallel)
	var wg sync.WaitGroup
	for i, d := range daemons {
		answers[i].daemon = d
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			answers[i].starts, answers[i].err = ds.ask(ctx, d, namespace)
		})
	}
	wg.Wait()
	return answers
}

// ask asks daemon for the starts it keeps of pods in namespace ("": all)
// that the user may read: the daemon leaves out the others.
func (ds *daemonSet) ask(ctx context.Context, daemon *corev1.Pod, namespace string) ([]startSummary, error) {
	ctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	var list []apiclient.TimelineSummary
	err := ds.withAPI(ctx, daemon, "asking the readyline on node "+daemon.Spec.NodeName, func(ctx context.Context, api *apiclient.Client) error {
		var err error
		list, err = api.Timelines(ctx, namespace)
		return err
	})
	if err != nil {
		return nil, answerError(err, "the readyline", daemon, "its list")
	}
	starts := make([]startSummary, len(list))
	for i, s := range list {
		starts[i] = startSummary{Node: daemon.Spec.NodeName, TimelineSummary: s}
	}
	return starts, nil
}

// mergeStarts returns the starts the answers hold of pods in namespace
// ("": all), newest first, then by node and pod.
func mergeStarts(answers []nodeAnswer, namespace string) []startSummary {
	starts := []startSummary{} // "timelines": [] when there are none
	for _, a := range answers {
		for _, s := range a.starts {
			if namespace == "" || s.Namespace == namespace {
				starts = append(starts, s)
			}
		}
	}
	slices.SortStableFunc(starts, func(a, b startSummary) int {
		return cmp.Or(b.Start.Compare(a.Start), cmp.Compare(a.Node, b.Node),
			cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return starts
}

// printStarts prints starts as kubectl prints a list: a table, with a
// NAMESPACE column for all namespaces, or a line on stderr when empty.
func printStarts(stdout, stderr io.Writer, starts []startSummary, namespace string, now time.Time) error {
	if len(starts) == 0 {
		if namespace == "" {
			_, err := fmt.Fprintln(stderr, "No pod starts kept by readyline.")
			return err
		}
		_, err := fmt.Fprintf(stderr, "No pod starts kept by readyline in %s namespace.\n", namespace)
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 3, ' ', 0)
	if namespace == "" {
		fmt.Fprint(tw, "NAMESPACE\t")
	}
	fmt.Fprintln(tw, "NAME\tNODE\tOUTCOME\tDURATION\tAGE")
	for _, s := range starts {
		// What the daemons answered, escaped as kubectl escapes a table's
		// cells: a name or an outcome must not act on the terminal.
		if namespace == "" {
			fmt.Fprintf(tw, "%s\t", termtext.Escape(s.Namespace))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", termtext.Escape(s.Name), termtext.Escape(s.Node), termtext.Escape(string(s.Outcome)),
			s.End.Sub(s.Start).Round(time.Millisecond), duration.HumanDuration(now.Sub(s.Start)))
	}
	return tw.Flush()
}

// writeJSON writes v indented, as the daemon's API does.
func writeJSON(w io.Writer, v any) error { return termtext.WriteJSON(w, v, "  ") }
