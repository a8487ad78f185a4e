//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/readyline/readyline/correlator"
)

// TestTenantLargeProbeCommand: a tenant's pod with a 256 KiB exec probe
// command, whose labels the tenant patches again and again (each patch an
// update of its pod the daemon takes), does not stall readyline: a pod that
// starts meanwhile is traced as fast as usual (Ready to queryable in
// Jaeger within tenantQueryable) and no kernel source drops a record.
// Before, the redactor took 0.6 s per update of a 64 KiB command
// (quadratic) and the rings of every pod on the node overflowed.
func TestTenantLargeProbeCommand(t *testing.T) {
	d := ownDaemon(t, testContext(t, 5*time.Minute), "tenant-probe")
	ctx := testContext(t, 4*time.Minute)
	ns := newNamespace(t)
	// A script of many short words with secrets here and there: the shape
	// that made the redactor rebuild its string at every match.
	words := make([]string, 0, 1<<15)
	for i := 0; len(strings.Join(words, " ")) < 256<<10; i++ {
		words = append(words, fmt.Sprintf("--token=t%d x%d", i, i))
	}
	script := "true " + strings.Join(words, " ")
	tenant := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "tenant", Labels: map[string]string{"round": "0"}},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: new(int64),
			Containers: []corev1.Container{{
				Name: "app", Image: "localhost/busybox:local", ImagePullPolicy: corev1.PullNever,
				Command: []string{"sleep", "3600"},
				ReadinessProbe: &corev1.Probe{PeriodSeconds: 2,
					ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", script}}}},
			}},
		},
	}
	if _, err := env.Client.CoreV1().Pods(ns).Create(ctx, tenant, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The tenant patches its labels ten times a second for the test.
	stop := make(chan struct{})
	patched := make(chan int, 1)
	go func() {
		n := 0
		defer func() { patched <- n }()
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{"round": fmt.Sprint(n)}}})
			if _, err := env.Client.CoreV1().Pods(ns).Patch(ctx, "tenant", types.MergePatchType, patch, metav1.PatchOptions{}); err == nil {
				n++
			}
		}
	}()
	time.Sleep(5 * time.Second) // the tenant's updates pile up
	victim := startFaultPod(t, ctx, d, ns, "beside-tenant")
	ready := readyObserved(t, victim)
	trace := TraceIDFromPodUID(victim.Pod.UID)
	var queryable time.Duration
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if _, err := GetTrace(ctx, JaegerQueryURL, trace); err == nil {
			queryable = time.Since(ready)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the trace of %s is not in Jaeger a minute after it was Ready", victim.Pod.Name)
		}
	}
	close(stop)
	n := <-patched
	t.Logf("the tenant patched its pod %d times; %s's trace queryable %v after Ready", n, victim.Pod.Name, queryable.Round(time.Millisecond))
	if n < 20 {
		t.Errorf("only %d patches: the test did not load the daemon", n)
	}
	if queryable > tenantQueryable {
		t.Errorf("%s's trace was queryable %v after Ready, over %v: the tenant held readyline", victim.Pod.Name, queryable, tenantQueryable)
	}
	mfs := scrapeDaemon(t, d)
	for _, source := range []string{"process", "cri_calls", "tcp"} {
		if lost := counterValue(mfs, "readyline_events_dropped_total", map[string]string{"source": source, "reason": "ring_full"}); lost > 0 {
			t.Errorf("%s: %v records lost to a full ring while the tenant patched its pod", source, lost)
		}
	}
}

// tenantQueryable bounds Ready -> queryable beside the tenant: bench-node's
// p99 is under 0.5 s; this is ten times that, for 2 busy cores.
const tenantQueryable = 5 * time.Second

// readyObserved is when the daemon observed the start's Ready condition
// (the host's clock, as the test's).
func readyObserved(t *testing.T, tl *correlator.Timeline) time.Time {
	t.Helper()
	for _, c := range tl.Conditions {
		if c.Type == correlator.CondReady {
			return c.Observed
		}
	}
	t.Fatalf("%s: no Ready condition", tl.Pod)
	return time.Time{}
}
