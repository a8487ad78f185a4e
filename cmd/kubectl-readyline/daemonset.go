package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
)

// errNoDaemon is returned when no readyline pod runs where one is needed.
var errNoDaemon = errors.New("no readyline pod")

// errForbidden is returned when RBAC refuses the user what a command needs.
var errForbidden = errors.New("forbidden")

// daemonConn reaches the daemon in a readyline pod as the kubeconfig's
// user. It is the edge to the API server's streams (apiConn; tests use a
// fake): beside them, the plugin asks the API server only for pods and
// access reviews.
type daemonConn interface {
	// Forward listens on address:localPort (0: any free port) and forwards
	// what connects there to remotePort in daemon's network namespace
	// (pods/portforward), until ctx ends (nil) or the connection to the
	// pod is lost. Once it listens, it calls ready with the port. What it
	// has to say about one connection it logs to klog.FromContext(ctx).
	Forward(ctx context.Context, daemon *corev1.Pod, address string, localPort, remotePort uint16, ready func(localPort uint16)) error
}

// daemonSet is readyline's DaemonSet as the kubeconfig's user sees it: its
// pods in namespace, selected by selector, a way into them, and the port
// and credentials of their secure API.
type daemonSet struct {
	client    kubernetes.Interface
	namespace string
	selector  string
	conn      daemonConn
	// apiPort is the port of the daemons' secure API in their pods;
	// transport carries the kubeconfig's credentials there (see
	// daemonTransport).
	apiPort   uint16
	transport http.RoundTripper
	// api, when not nil, is the API server's readyline.dev, which explain
	// and list read instead of the nodes (--via).
	api *podStartsAPI
}

// where says how the DaemonSet's pods are looked for, for messages.
func (ds *daemonSet) where() string {
	return fmt.Sprintf("namespace %s, selector %s", ds.namespace, ds.selector)
}

// targetPod returns the pod namespace/name, which must be scheduled.
func (ds *daemonSet) targetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	pod, err := ds.client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("pod %s/%s not found", namespace, name)
	case err != nil:
		return nil, ds.apiError(err, "get", "pods", namespace, "finding the pod's node")
	case pod.Spec.NodeName == "":
		return nil, &notScheduledError{pod}
	}
	return pod, nil
}

// pods lists the DaemonSet's pods, on node only unless node is "".
func (ds *daemonSet) pods(ctx context.Context, node string) ([]corev1.Pod, error) {
	opts := metav1.ListOptions{LabelSelector: ds.selector}
	if node != "" {
		opts.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", node).String()
	}
	list, err := ds.client.CoreV1().Pods(ds.namespace).List(ctx, opts)
	if err != nil {
		return nil, ds.apiError(err, "list", "pods", ds.namespace, "finding readyline's pods")
	}
	// The API server applied the field selector; a fake client does not.
	items := slices.DeleteFunc(list.Items, func(p corev1.Pod) bool { return node != "" && p.Spec.NodeName != node })
	return items, nil
}

// onNode returns the readyline pod that runs on node (see pick).
func (ds *daemonSet) onNode(ctx context.Context, node string) (*corev1.Pod, error) {
	pods, err := ds.pods(ctx, node)
	if err != nil {
		return nil, err
	}
	best, others := pick(pods)
	if best == nil {
		if len(others) > 0 {
			return nil, fmt.Errorf("%w runs on node %s: %s (%s)", errNoDaemon, node, strings.Join(others, ", "), ds.where())
		}
		return nil, fmt.Errorf("%w runs on node %s (%s); is readyline deployed there, or in another namespace (--readyline-namespace)?", errNoDaemon, node, ds.where())
	}
	return best, nil
}

// pick returns the readyline pod to ask among pods, all of one node:
// Running and not being deleted, the Ready one first and then the newest
// (two overlap only while one ends). When there is none, it says why of
// each pod instead ("rl-x is Pending").
func pick(pods []corev1.Pod) (*corev1.Pod, []string) {
	var best *corev1.Pod
	var others []string
	for i := range pods {
		p := &pods[i]
		if !running(p) {
			others = append(others, p.Name+" "+podState(p))
			continue
		}
		if best == nil || ready(p) && !ready(best) ||
			ready(p) == ready(best) && best.CreationTimestamp.Before(&p.CreationTimestamp) {
			best = p
		}
	}
	if best != nil {
		others = nil
	}
	return best, others
}

func running(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil
}

func ready(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podState says why a readyline pod is not asked.
func podState(p *corev1.Pod) string {
	if p.DeletionTimestamp != nil {
		return "is terminating"
	}
	return "is " + string(p.Status.Phase)
}

// apiError explains err, the API server's answer to verb on resource in
// namespace, which the plugin needed for why ("finding the pod's node"):
// when RBAC refused it, which permission to ask for.
func (ds *daemonSet) apiError(err error, verb, resource, namespace, why string) error {
	switch {
	case apierrors.IsForbidden(err):
		return forbidden(err, verb, resource, namespace, why, fmt.Sprintf("%s (verb %s)", resource, verb))
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("the API server did not accept the kubeconfig's credentials: %w", err)
	}
	return fmt.Errorf("%s: %s %s in namespace %s: %w", why, verb, resource, namespace, err)
}

// streamError explains err, a failed stream (verb create on resource, a
// pods subresource such as "pods/portforward") into the readyline pod daemon,
// which the plugin opened for why ("asking the readyline on node n1"). The transports report the API server's refusal
// as text (the SPDY fallback's "unable to upgrade connection: ..."), so
// RBAC is asked directly with a SelfSubjectAccessReview, which every
// authenticated user may create: when it denies the stream, the error
// says which permission to ask for.
func (ds *daemonSet) streamError(ctx context.Context, err error, resource string, daemon *corev1.Pod, why string) error {
	if apierrors.IsForbidden(err) || !ds.allowed(ctx, "create", resource, daemon.Namespace, daemon.Name) {
		// get too: a WebSocket stream is a GET (see deploy/plugin-rbac).
		return forbidden(err, "create", resource, daemon.Namespace, why, resource+" (verbs get and create)")
	}
	return fmt.Errorf("%s (pod %s/%s): %w", why, daemon.Namespace, daemon.Name, err)
}

// forbidden is the error of an RBAC refusal of verb on resource in
// namespace, which the plugin needed for why; ask is the permission to ask
// for ("pods (verb get)").
func forbidden(err error, verb, resource, namespace, why, ask string) error {
	return fmt.Errorf("%w: you may not %s %s in namespace %s, which kubectl readyline needs for %s: ask for %s in namespace %s, as deploy/plugin-rbac grants it (the API server said: %v)",
		errForbidden, verb, resource, namespace, why, ask, namespace, err)
}

// allowed asks the API server whether the user may verb resource (with
// its subresource: "pods/portforward") name in namespace. It answers true when it
// cannot tell.
func (ds *daemonSet) allowed(ctx context.Context, verb, resource, namespace, name string) bool {
	res, sub, _ := strings.Cut(resource, "/")
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: namespace, Verb: verb, Resource: res, Subresource: sub, Name: name},
	}}
	out, err := ds.client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
	return err != nil || out.Status.Allowed
}
