//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
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
// starts meanwhile is handed to the exporters as fast as usual (from its
// Ready seen by the daemon's watch to its "pod start" line, both the
// daemon's stamps, within tenantDelivered), its trace reaches Jaeger, and
// no kernel source drops a record. Before, the redactor took 0.6 s per
// update of a 64 KiB command (quadratic) and the rings of every pod on the
// node overflowed.
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
	stop, stopped := make(chan struct{}), make(chan struct{})
	var patches atomic.Int64
	go func() {
		defer close(stopped)
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{"round": fmt.Sprint(patches.Load())}}})
			if _, err := env.Client.CoreV1().Pods(ns).Patch(ctx, "tenant", types.MergePatchType, patch, metav1.PatchOptions{}); err == nil {
				patches.Add(1)
			}
		}
	}()
	defer func() { close(stop); <-stopped }()
	// The tenant's updates pile up before the victim starts.
	for deadline := time.Now().Add(time.Minute); patches.Load() < tenantPatchesBefore; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the tenant patched its pod %d times in a minute, want %d before the victim starts: the test did not load the daemon", patches.Load(), tenantPatchesBefore)
		}
	}
	victim := startFaultPod(t, ctx, d, ns, "beside-tenant")
	ready := readyWatched(t, victim)
	delivered := deliveredAt(t, d, victim.Pod.UID)
	if _, err := env.Jaeger.WaitForTrace(ctx, TraceIDFromPodUID(victim.Pod.UID), 1, time.Minute); err != nil {
		t.Fatalf("%s's start is not in Jaeger a minute after it was Ready: %v", victim.Pod.Name, err)
	}
	t.Logf("the tenant patched its pod %d times; the daemon handed %s's start to its exporters %v after its watch saw Ready; in Jaeger %v after that",
		patches.Load(), victim.Pod.Name, delivered.Sub(ready).Round(time.Millisecond), time.Since(delivered).Round(time.Millisecond))
	if took := delivered.Sub(ready); took > tenantDelivered {
		t.Errorf("the daemon handed %s's start to its exporters %v after its watch saw Ready, over %v: the tenant held readyline", victim.Pod.Name, took, tenantDelivered)
	}
	mfs := scrapeDaemon(t, d)
	for _, source := range []string{"process", "cri_calls", "tcp"} {
		if lost := counterValue(mfs, "readyline_events_dropped_total", map[string]string{"source": source, "reason": "ring_full"}); lost > 0 {
			t.Errorf("%s: %v records lost to a full ring while the tenant patched its pod", source, lost)
		}
	}
}

// tenantPatchesBefore is how many of the tenant's updates the daemon takes
// before the victim starts: five seconds' worth.
const tenantPatchesBefore = 50

// tenantDelivered bounds, by the daemon's own stamps, the time from the
// victim's Ready seen by its watch to the start handed to its exporters: a
// finished start waits for its last facts at most Grace (1 s) and is
// looked at on the loop's tick (1 s) at the latest; the third second is
// for 2 busy cores. A loop the tenant held (0.6 s an update, ten updates a
// second) would be tens of seconds behind.
const tenantDelivered = 3 * time.Second

// readyWatched is when the daemon's pod watch delivered the start's Ready
// condition (its stamp: Delivered for a condition the API delivered late,
// whose Observed is then the API's own lastTransitionTime).
func readyWatched(t *testing.T, tl *correlator.Timeline) time.Time {
	t.Helper()
	for _, c := range tl.Conditions {
		if c.Type == correlator.CondReady {
			if !c.Delivered.IsZero() {
				return c.Delivered
			}
			return c.Observed
		}
	}
	t.Fatalf("%s: no Ready condition", tl.Pod)
	return time.Time{}
}

// deliveredAt is when daemon d handed the start of pod uid to its
// exporters: the time of its "pod start" log line.
func deliveredAt(t *testing.T, d *Daemon, uid string) time.Time {
	t.Helper()
	log, err := os.ReadFile(d.Log)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(log), "\n") {
		var rec struct {
			Time time.Time `json:"time"`
			Msg  string    `json:"msg"`
			UID  string    `json:"uid"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "pod start" && rec.UID == uid {
			return rec.Time
		}
	}
	t.Fatalf("no \"pod start\" line of pod %s in %s", uid, d.Log)
	return time.Time{}
}
