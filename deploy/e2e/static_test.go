//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// TestStaticPodJoinsItsMirror: a static pod (the kubelet's staticPodPath,
// as every control-plane pod on kind) runs with the kubelet's config hash as
// its pod UID on the node, while the API shows a mirror pod with a UID of
// its own. Its trace is the mirror pod's (what kubectl shows) and holds the
// node's facts: the sandbox call, the container's process, its probe.
func TestStaticPodJoinsItsMirror(t *testing.T) {
	t.Parallel()
	d := readyline(t)
	ns := newNamespace(t)
	ctx := testContext(t, 3*time.Minute)
	const name = "static"
	mirror := name + "-" + env.NodeName
	rec := recordPod(t, ns, mirror)
	manifest := filepath.Join(env.NodeDir, "kubelet", "manifests", ns+".yaml")
	written := time.Now()
	if err := os.WriteFile(manifest, []byte(fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: %s}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: localhost/busybox:local
    imagePullPolicy: Never
    command: ["sleep", "3600"]
    readinessProbe:
      exec: {command: ["true"]}
      periodSeconds: 1
`, name, ns)), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		os.Remove(manifest)
		// The kubelet stops the pod and deletes its mirror once the file is gone.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := env.Client.CoreV1().Pods(ns).Get(ctx, mirror, metav1.GetOptions{})
			return err != nil, nil
		})
		if err != nil {
			t.Errorf("the static pod's mirror %s/%s is still there a minute after its manifest was removed", ns, mirror)
		}
	})
	ev, err := rec.WaitFor(ctx, ConditionTrue(corev1.PodReady))
	if err != nil {
		t.Fatal(err)
	}
	hash := ev.Pod.Annotations["kubernetes.io/config.mirror"]
	if hash == "" || hash == string(ev.Pod.UID) {
		t.Fatalf("mirror pod %s has config.mirror %q and uid %s: not a mirror of a static pod (test setup)", mirror, hash, ev.Pod.UID)
	}
	tl, err := d.Timeline(ctx, ns, mirror, time.Minute)
	fetched := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	if tl.Pod.UID != string(ev.Pod.UID) {
		t.Errorf("timeline of uid %s, want the mirror pod's %s", tl.Pod.UID, ev.Pod.UID)
	}
	if tl.Sandbox == nil || len(tl.Containers) != 1 || len(tl.Containers[0].Attempts) == 0 || tl.Containers[0].Attempts[0].Process == nil {
		t.Fatalf("the static pod's node facts (keyed by its config hash %s) are not in its timeline: sandbox %v, containers %+v", hash, tl.Sandbox, tl.Containers)
	}
	// The start lies between the manifest's writing (to the second: the
	// kubelet's times have no more) and the fetch of its timeline: the
	// node's own start, not one of another time.
	if took := tl.End.Sub(tl.Start); took <= 0 || tl.Start.Before(written.Truncate(time.Second)) || tl.End.After(fetched) {
		t.Errorf("the start ran %v to %v (%v): want it between the manifest's writing %v and the fetch %v", tl.Start, tl.End, took, written, fetched)
	}
	tr, err := env.Jaeger.WaitForTrace(ctx, TraceIDFromPodUID(string(ev.Pod.UID)), 6, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	st := newSpanTree(t, tr)
	root := st.one("pod.startup")
	if got := tagString(root, "readyline.static_pod"); got != "true" {
		t.Errorf("root readyline.static_pod = %q, want true", got)
	}
	for _, op := range []string{"runtime.v1.RuntimeService/RunPodSandbox", "container app", "process sleep"} {
		if _, ok := tr.SpanByName(op); !ok {
			t.Errorf("no %q span in the mirror pod's trace", op)
		}
	}
	t.Logf("static pod %s (config hash %s, mirror uid %s): %s in %v", mirror, hash, ev.Pod.UID, tl.Outcome, tl.End.Sub(tl.Start).Round(time.Millisecond))
}
