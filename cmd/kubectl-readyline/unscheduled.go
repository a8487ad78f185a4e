package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/readyline/readyline/collector/event"
	"github.com/readyline/readyline/collector/podevents"
	"github.com/readyline/readyline/correlator"
)

// notScheduledError is a pod on no node yet: no node's readyline has
// seen it.
type notScheduledError struct{ pod *corev1.Pod }

func (e *notScheduledError) Error() string {
	return fmt.Sprintf("pod %s/%s is not scheduled to a node yet (no spec.nodeName): it has not started anywhere", e.pod.Namespace, e.pod.Name)
}

// fetchFunc fetches the start of pod namespace/name.
type fetchFunc func(ctx context.Context, namespace, name string) (*correlator.Timeline, error)

// orUnscheduled is fetch, but the start of a pod on no node yet, which no
// node's readyline (nor readyline.dev, which serves theirs) has seen, is
// derived here from the API server, as the user (unscheduled).
func (ds *daemonSet) orUnscheduled(fetch fetchFunc) fetchFunc {
	return func(ctx context.Context, namespace, name string) (*correlator.Timeline, error) {
		tl, err := fetch(ctx, namespace, name)
		if err == nil {
			return tl, nil
		}
		var ns *notScheduledError
		if !errors.As(err, &ns) {
			if ds.api == nil {
				return nil, err
			}
			pod, gerr := ds.client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
			if gerr != nil || pod.Spec.NodeName != "" {
				return nil, err
			}
			ns = &notScheduledError{pod}
		}
		return ds.unscheduled(ctx, ns.pod)
	}
}

// unscheduled is the start so far of pod, on no node yet: what holds it
// in the scheduler's and the provisioner's words, from the pod, its
// Events and its claims' (correlator.Unscheduled), read as the user. A
// user who may not list Events gets the pod's account alone, and is told.
func (ds *daemonSet) unscheduled(ctx context.Context, pod *corev1.Pod) (*correlator.Timeline, error) {
	reader, err := podevents.NewReader(podevents.Config{
		Events: func(namespace string) podevents.EventLister { return ds.client.CoreV1().Events(namespace) },
	}, nil)
	if err != nil {
		return nil, err
	}
	var events *event.PodEvents
	read, _ := reader.Read(ctx, pod.Namespace, pod.Name, string(pod.UID), podevents.Asked, correlator.PodClaims(pod)...)
	if len(read) > 0 {
		events = read[0] // Err says why, when the API server refused
	}
	return correlator.Unscheduled(pod, events, time.Now().UTC())
}
