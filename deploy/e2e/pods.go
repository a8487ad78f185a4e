//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// LifecycleConditions are the five pod conditions of a pod start, in the order
// they normally become True.
var LifecycleConditions = []corev1.PodConditionType{
	corev1.PodScheduled,
	corev1.PodReadyToStartContainers,
	corev1.PodInitialized,
	corev1.ContainersReady,
	corev1.PodReady,
}

// PodEvent is one watch event of a pod and the moment the test observed it.
// ObservedAt has the resolution of the local clock (the API's own
// lastTransitionTime only has seconds).
type PodEvent struct {
	Type       watch.EventType `json:"type"`
	ObservedAt time.Time       `json:"observedAt"`
	Pod        *corev1.Pod     `json:"pod"`
}

// PodRecorder records every watch event of one pod. Start it before creating
// the pod to see the whole start. It is safe for concurrent use.
type PodRecorder struct {
	namespace, name string

	mu      sync.Mutex
	events  []PodEvent
	changed chan struct{} // closed and replaced on every event
	err     error

	pods     typedcorev1.PodInterface
	selector string
	cancel   context.CancelFunc
	done     chan struct{}
}

// RecordPod starts recording the pod namespace/name, which may not exist yet.
// The watch survives API server disconnects (RetryWatcher) and restarts
// (a watch from a resource version the new server has no longer ends in 410
// Gone: the pod is listed again, as a Modified event, and watched from
// there). Stop ends it.
func RecordPod(ctx context.Context, client kubernetes.Interface, namespace, name string) (*PodRecorder, error) {
	ctx, cancel := context.WithCancel(ctx)
	r := &PodRecorder{namespace: namespace, name: name, changed: make(chan struct{}), cancel: cancel, done: make(chan struct{}),
		pods: client.CoreV1().Pods(namespace), selector: fields.OneTermEqualSelector("metadata.name", name).String()}
	rv, err := r.list(ctx, watch.Added)
	if err != nil {
		cancel()
		return nil, err
	}
	w, err := r.watch(ctx, rv)
	if err != nil {
		cancel()
		return nil, err
	}
	go r.run(ctx, w)
	return r, nil
}

// list records the pod as it is now, as an event of type typ, and returns
// the list's resource version.
func (r *PodRecorder) list(ctx context.Context, typ watch.EventType) (string, error) {
	list, err := r.pods.List(ctx, metav1.ListOptions{FieldSelector: r.selector})
	if err != nil {
		return "", fmt.Errorf("listing pod %s/%s: %w", r.namespace, r.name, err)
	}
	now := time.Now()
	r.mu.Lock()
	for i := range list.Items {
		r.events = append(r.events, PodEvent{Type: typ, ObservedAt: now, Pod: &list.Items[i]})
	}
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
	return list.ResourceVersion, nil
}

func (r *PodRecorder) watch(ctx context.Context, rv string) (*watchtools.RetryWatcher, error) {
	w, err := watchtools.NewRetryWatcherWithContext(ctx, rv, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = r.selector
			return r.pods.Watch(ctx, opts)
		},
	})
	if err != nil {
		return nil, fmt.Errorf("watching pod %s/%s: %w", r.namespace, r.name, err)
	}
	return w, nil
}

func (r *PodRecorder) run(ctx context.Context, w *watchtools.RetryWatcher) {
	defer close(r.done)
	defer func() { w.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.ResultChan():
			now := time.Now()
			if !ok {
				r.fail(errors.New("watch closed"))
				return
			}
			if ev.Type == watch.Error {
				if st, isStatus := ev.Object.(*metav1.Status); isStatus && st.Code == http.StatusGone {
					w.Stop()
					rv, err := r.list(ctx, watch.Modified)
					if err == nil {
						w, err = r.watch(ctx, rv)
					}
					if err != nil {
						r.fail(fmt.Errorf("watching again after %s: %w", st.Message, err))
						return
					}
					continue
				}
				r.fail(fmt.Errorf("watch error: %v", ev.Object))
				return
			}
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue // bookmarks
			}
			r.mu.Lock()
			r.events = append(r.events, PodEvent{Type: ev.Type, ObservedAt: now, Pod: pod})
			close(r.changed)
			r.changed = make(chan struct{})
			r.mu.Unlock()
		}
	}
}

func (r *PodRecorder) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = err
	}
	close(r.changed)
	r.changed = make(chan struct{})
}

// Stop ends the recording; the events stay available.
func (r *PodRecorder) Stop() {
	r.cancel()
	<-r.done
}

// Events returns a copy of the events recorded so far, oldest first.
func (r *PodRecorder) Events() []PodEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]PodEvent(nil), r.events...)
}

// WaitFor blocks until a recorded event satisfies cond and returns it. Events
// recorded before the call count. It fails when ctx ends, the pod is deleted
// before cond holds, or the watch broke.
func (r *PodRecorder) WaitFor(ctx context.Context, cond func(*corev1.Pod) bool) (PodEvent, error) {
	seen := 0
	for {
		r.mu.Lock()
		events, changed, err := r.events[seen:], r.changed, r.err
		r.mu.Unlock()
		for _, ev := range events {
			seen++
			if ev.Type == watch.Deleted {
				return ev, fmt.Errorf("pod %s/%s was deleted", r.namespace, r.name)
			}
			if cond(ev.Pod) {
				return ev, nil
			}
		}
		if err != nil {
			return PodEvent{}, err
		}
		select {
		case <-ctx.Done():
			var last *corev1.Pod
			if all := r.Events(); len(all) > 0 {
				last = all[len(all)-1].Pod
			}
			return PodEvent{}, fmt.Errorf("waiting for pod %s/%s: %w; last status: %s", r.namespace, r.name, ctx.Err(), DescribeStatus(last))
		case <-changed:
		}
	}
}

// First returns the first recorded event whose pod satisfies cond.
func (r *PodRecorder) First(cond func(*corev1.Pod) bool) (PodEvent, bool) {
	for _, ev := range r.Events() {
		if ev.Pod != nil && cond(ev.Pod) {
			return ev, true
		}
	}
	return PodEvent{}, false
}

// ConditionTrueAt returns when the pod was first observed with condition t True.
func (r *PodRecorder) ConditionTrueAt(t corev1.PodConditionType) (time.Time, bool) {
	ev, ok := r.First(func(p *corev1.Pod) bool { return ConditionStatus(p, t) == corev1.ConditionTrue })
	return ev.ObservedAt, ok
}

// WriteJSONL writes the events as JSON lines (one PodEvent per line).
func (r *PodRecorder) WriteJSONL(w io.Writer) error {
	enc := json.NewEncoder(w)
	for _, ev := range r.Events() {
		if err := enc.Encode(ev); err != nil {
			return err
		}
	}
	return nil
}

// ConditionStatus returns the status of condition t of pod ("" if absent).
func ConditionStatus(pod *corev1.Pod, t corev1.PodConditionType) corev1.ConditionStatus {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

// Condition returns condition t of pod, if present.
func Condition(pod *corev1.Pod, t corev1.PodConditionType) (corev1.PodCondition, bool) {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return c, true
		}
	}
	return corev1.PodCondition{}, false
}

// ContainerStatus returns the status of the container or init container name.
func ContainerStatus(pod *corev1.Pod, name string) (corev1.ContainerStatus, bool) {
	for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, s := range list {
			if s.Name == name {
				return s, true
			}
		}
	}
	return corev1.ContainerStatus{}, false
}

// ContainerRunning reports whether container name is in state running.
func ContainerRunning(pod *corev1.Pod, name string) bool {
	s, ok := ContainerStatus(pod, name)
	return ok && s.State.Running != nil
}

// ContainerWaitingReason returns the waiting reason of container name, or "".
func ContainerWaitingReason(pod *corev1.Pod, name string) string {
	if s, ok := ContainerStatus(pod, name); ok && s.State.Waiting != nil {
		return s.State.Waiting.Reason
	}
	return ""
}

// ConditionTrue returns a pod predicate for condition t being True.
func ConditionTrue(t corev1.PodConditionType) func(*corev1.Pod) bool {
	return func(p *corev1.Pod) bool { return ConditionStatus(p, t) == corev1.ConditionTrue }
}

// PhaseIs returns a pod predicate for the pod's phase.
func PhaseIs(phase corev1.PodPhase) func(*corev1.Pod) bool {
	return func(p *corev1.Pod) bool { return p.Status.Phase == phase }
}

// WaitForPod waits until pod namespace/name satisfies cond and returns it.
func WaitForPod(ctx context.Context, client kubernetes.Interface, namespace, name string, cond func(*corev1.Pod) bool) (*corev1.Pod, error) {
	r, err := RecordPod(ctx, client, namespace, name)
	if err != nil {
		return nil, err
	}
	defer r.Stop()
	ev, err := r.WaitFor(ctx, cond)
	return ev.Pod, err
}

// DescribeStatus summarizes a pod's status in one line for failure messages.
func DescribeStatus(pod *corev1.Pod) string {
	if pod == nil {
		return "<no pod>"
	}
	s := string(pod.Status.Phase)
	for _, c := range pod.Status.Conditions {
		s += fmt.Sprintf(" %s=%s", c.Type, c.Status)
	}
	for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, c := range list {
			switch {
			case c.State.Running != nil:
				s += fmt.Sprintf(" %s:running", c.Name)
			case c.State.Terminated != nil:
				s += fmt.Sprintf(" %s:terminated(%d)", c.Name, c.State.Terminated.ExitCode)
			case c.State.Waiting != nil:
				s += fmt.Sprintf(" %s:waiting(%s)", c.Name, c.State.Waiting.Reason)
			}
			if c.RestartCount > 0 {
				s += fmt.Sprintf("/restarts=%d", c.RestartCount)
			}
		}
	}
	return s
}
