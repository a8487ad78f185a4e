package main

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestTargetPod: the pod's node, or why there is none: not found,
// forbidden (naming the verb and the namespace), not scheduled.
func TestTargetPod(t *testing.T) {
	ctx := context.Background()
	ds := testDaemonSet(t, &fakeConn{}, nil, userPod("team", "web", "n1"), userPod("team", "pending", ""))
	pod, err := ds.targetPod(ctx, "team", "web")
	if err != nil || pod.Spec.NodeName != "n1" {
		t.Fatalf("targetPod(team/web) = %v, %v; want the pod on n1", pod, err)
	}
	_, err = ds.targetPod(ctx, "team", "gone")
	wantErr(t, err, "pod team/gone not found")
	_, err = ds.targetPod(ctx, "team", "pending")
	wantErr(t, err, "pod team/pending is not scheduled", "not started anywhere")

	ds = testDaemonSet(t, &fakeConn{}, []string{"get pods"}, userPod("team", "web", "n1"))
	_, err = ds.targetPod(ctx, "team", "web")
	if !errors.Is(err, errForbidden) {
		t.Errorf("a forbidden get: %v, want errForbidden", err)
	}
	wantErr(t, err, "may not get pods in namespace team", "ask for pods (verb get) in namespace team", "deploy/plugin-rbac")
}

// TestOnNode: the readyline pod on the node is the Running one, Ready
// first, then the newest; pods of other nodes, terminating pods and pods
// without the DaemonSet's labels do not count; none says where it looked.
func TestOnNode(t *testing.T) {
	ctx := context.Background()
	old := daemonPod("rl-old", "n1", corev1.PodRunning, true, t0)
	newer := daemonPod("rl-new", "n1", corev1.PodRunning, true, t0.Add(time.Minute))
	newestUnready := daemonPod("rl-starting", "n1", corev1.PodRunning, false, t0.Add(2*time.Minute))
	terminating := daemonPod("rl-ending", "n1", corev1.PodRunning, true, t0.Add(3*time.Minute))
	terminating.DeletionTimestamp = &metav1.Time{Time: t0.Add(4 * time.Minute)}
	other := daemonPod("rl-n2", "n2", corev1.PodRunning, true, t0.Add(5*time.Minute))
	jaeger := daemonPod("jaeger", "n1", corev1.PodRunning, true, t0.Add(6*time.Minute))
	jaeger.Labels = map[string]string{"app.kubernetes.io/name": "jaeger"}
	pending := daemonPod("rl-n3", "n3", corev1.PodPending, false, t0)

	ds := testDaemonSet(t, &fakeConn{}, nil, old, newer, newestUnready, terminating, other, jaeger, pending)
	for node, want := range map[string]string{"n1": "rl-new", "n2": "rl-n2"} {
		got, err := ds.onNode(ctx, node)
		if err != nil || got.Name != want {
			t.Errorf("onNode(%s) = %v, %v; want %s", node, got, err, want)
		}
	}

	_, err := ds.onNode(ctx, "n3")
	if !errors.Is(err, errNoDaemon) {
		t.Errorf("a pending readyline: %v, want errNoDaemon", err)
	}
	wantErr(t, err, "no readyline pod runs on node n3", "rl-n3 is Pending", "namespace readyline, selector "+defaultReadylineSelector)

	_, err = ds.onNode(ctx, "n4")
	wantErr(t, err, "no readyline pod runs on node n4 (namespace readyline, selector "+defaultReadylineSelector+")")

	ds = testDaemonSet(t, &fakeConn{}, []string{"list pods"}, old)
	_, err = ds.onNode(ctx, "n1")
	wantErr(t, err, "may not list pods in namespace readyline", "ask for pods (verb list) in namespace readyline")
}
