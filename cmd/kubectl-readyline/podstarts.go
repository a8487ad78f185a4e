package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter/apiclient"
)

// How the plugin reads the starts (--via).
const (
	viaAuto  = "auto"  // readyline.dev when the API server serves it, else each node
	viaAPI   = "api"   // readyline.dev only: kubectl get podstarts's API
	viaNodes = "nodes" // each node's readyline, through a port-forward
)

// podStartsGroupVersion is readyline's aggregated API (cmd/readyline-api).
const podStartsGroupVersion = "readyline.dev/v1alpha1"

// podStartsAPI reads pod starts from the API server's readyline.dev
// group: the API server authenticates the user and readyline-api
// authorizes them; no port-forward, and the user's credential goes to the
// API server only.
type podStartsAPI struct {
	rest rest.Interface
	// host and transport reach the API server with the kubeconfig's
	// credentials, for the pages (web); nil where only rest is needed.
	host      *url.URL
	transport http.RoundTripper
}

// findPodStartsAPI returns the readyline.dev client when the API server
// serves podstarts; nil and why when it does not.
func findPodStartsAPI(disco interface {
	ServerResourcesForGroupVersion(string) (*metav1.APIResourceList, error)
}, restClient rest.Interface) (*podStartsAPI, error) {
	list, err := disco.ServerResourcesForGroupVersion(podStartsGroupVersion)
	if err != nil {
		return nil, err
	}
	for _, r := range list.APIResources {
		if r.Name == "podstarts" {
			return &podStartsAPI{rest: restClient}, nil
		}
	}
	return nil, fmt.Errorf("%s serves no podstarts", podStartsGroupVersion)
}

// reach sets how a's pages reach the API server of cfg: its URL, and a
// transport with the kubeconfig's credentials.
func (a *podStartsAPI) reach(cfg *rest.Config) error {
	var err error
	if a.transport, err = rest.TransportFor(cfg); err != nil {
		return fmt.Errorf("the API server's transport: %w", err)
	}
	if a.host, _, err = rest.DefaultServerUrlFor(cfg); err != nil {
		return fmt.Errorf("the API server's URL: %w", err)
	}
	return nil
}

// wirePodStart is what of a PodStart the plugin reads.
type wirePodStart struct {
	Metadata struct {
		Namespace   string            `json:"namespace"`
		Name        string            `json:"name"`
		UID         string            `json:"uid"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		NodeName string `json:"nodeName"`
	} `json:"spec"`
	Status struct {
		Outcome         correlator.Outcome `json:"outcome"`
		StartTime       time.Time          `json:"startTime"`
		EndTime         *time.Time         `json:"endTime"`
		DurationSeconds float64            `json:"durationSeconds"`
		WaitingOn       string             `json:"waitingOn"`
		Reason          string             `json:"reason"`
		Timeline        json.RawMessage    `json:"timeline"`
	} `json:"status"`
}

// apiError says what the API server's refusal means for a reader.
func apiError(err error, what string) error {
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("no recent start of %s (readyline keeps the starts in progress and the last ones that ended, on each node): %w", what, apiclient.ErrNotFound)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%w: %v", errForbidden, err)
	}
	return fmt.Errorf("asking the API server for %s (%s): %w", what, podStartsGroupVersion, err)
}

// explain returns the latest start of pod namespace/name, its timeline as
// its node gave it to readyline-api for this user.
func (a *podStartsAPI) explain(ctx context.Context, namespace, name string) (*correlator.Timeline, error) {
	body, err := a.rest.Get().AbsPath("/apis", podStartsGroupVersion, "namespaces", namespace, "podstarts", name).DoRaw(ctx)
	if err != nil {
		return nil, apiError(err, "pod "+namespace+"/"+name)
	}
	var ps wirePodStart
	if err := json.Unmarshal(body, &ps); err != nil {
		return nil, fmt.Errorf("the podstart of %s/%s: %w", namespace, name, err)
	}
	if len(ps.Status.Timeline) == 0 {
		why := ps.Metadata.Annotations["readyline.dev/timeline"]
		return nil, fmt.Errorf("the start of %s/%s on node %s is %s, but its timeline did not come: %s", namespace, name, ps.Spec.NodeName, ps.Status.Outcome, why)
	}
	var tl correlator.Timeline
	if err := json.Unmarshal(ps.Status.Timeline, &tl); err != nil {
		return nil, fmt.Errorf("the timeline of %s/%s: %w", namespace, name, err)
	}
	return &tl, nil
}

// list returns the starts of namespace ("": every namespace's).
func (a *podStartsAPI) list(ctx context.Context, namespace string) ([]startSummary, error) {
	req := a.rest.Get().AbsPath("/apis", podStartsGroupVersion, "podstarts")
	what := "the pod starts of every namespace"
	if namespace != "" {
		req = a.rest.Get().AbsPath("/apis", podStartsGroupVersion, "namespaces", namespace, "podstarts")
		what = "the pod starts of namespace " + namespace
	}
	body, err := req.DoRaw(ctx)
	if err != nil {
		return nil, apiError(err, what)
	}
	var list struct {
		Items []wirePodStart `json:"items"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	now := time.Now()
	out := make([]startSummary, len(list.Items))
	for i, ps := range list.Items {
		end := now // a start in progress, as of now
		if ps.Status.EndTime != nil {
			end = *ps.Status.EndTime
		}
		out[i] = startSummary{Node: ps.Spec.NodeName, TimelineSummary: apiclient.TimelineSummary{
			Namespace: ps.Metadata.Namespace, Name: ps.Metadata.Name, UID: ps.Metadata.UID,
			Outcome: ps.Status.Outcome, Reason: ps.Status.Reason, Waiting: ps.Status.WaitingOn,
			Start: ps.Status.StartTime, End: end, DurationSeconds: end.Sub(ps.Status.StartTime).Seconds(),
		}}
	}
	return out, nil
}

// printList prints the starts of namespace read from readyline.dev, as
// list prints those of the nodes.
func (a *podStartsAPI) printList(ctx context.Context, namespace, output string, stdout, stderr io.Writer, now time.Time) error {
	starts, err := a.list(ctx, namespace)
	if err != nil {
		return err
	}
	starts = mergeStarts([]nodeAnswer{{starts: starts}}, namespace)
	if output == "json" {
		return writeJSON(stdout, startList{Timelines: starts})
	}
	return printStarts(stdout, stderr, starts, namespace, now)
}
