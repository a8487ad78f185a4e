//go:build e2e

package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/readyline/readyline/correlator"
)

// TestFaultFactBudgetFlood runs readyline with the smallest fact budget
// (--max-fact-bytes 1Mi) while a pod's entrypoint runs 4000 processes with
// 500 bytes of argv each and then fails, and starts a pod meanwhile: the
// flood's start keeps its entrypoint and is marked facts_trimmed, what the
// budget took is counted, and the pod that started beside it loses nothing.
func TestFaultFactBudgetFlood(t *testing.T) {
	withoutSharedDaemon(t)
	ctx := testContext(t, 4*time.Minute)
	t.Setenv("READYLINE_MAX_FACT_BYTES", "1Mi")
	d := ownDaemon(t, ctx, "fact-budget")
	ns := newNamespace(t)
	frec := recordPod(t, ns, "flood")
	if _, err := env.Apply(ctx, ns, []byte(fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: flood}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 0
  automountServiceAccountToken: false
  containers:
  - name: flood
    image: localhost/busybox:local
    imagePullPolicy: Never
    command: ["sh", "-c", "i=0; while [ $i -lt 4000 ]; do /bin/true %s; i=$((i+1)); done; sleep 5; exit 1"]
    # Never Ready: the flood is the start's (a start ends at Ready; what
    # comes after is followed in bounds of its own, correlator/after.go).
    readinessProbe: {exec: {command: ["false"]}, periodSeconds: 2}
`, strings.Repeat("x", 500)))); err != nil {
		t.Fatal(err)
	}
	if _, err := frec.WaitFor(ctx, func(p *corev1.Pod) bool { return ContainerRunning(p, "flood") }); err != nil {
		t.Fatal(err)
	}
	victim := startFaultPod(t, ctx, d, ns, "beside-flood")
	logTimelineSummary(t, victim)
	if slices.Contains(victim.Marks, correlator.MarkTrimmed) {
		t.Errorf("%s lost facts to the flood: %q", victim.Pod.Name, victim.Missing)
	}

	if _, err := frec.WaitFor(ctx, PhaseIs(corev1.PodFailed)); err != nil {
		t.Fatal(err)
	}
	flood, err := d.Timeline(ctx, ns, "flood", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	logTimelineSummary(t, flood)
	if !slices.Contains(flood.Marks, correlator.MarkTrimmed) || !strings.Contains(strings.Join(flood.Missing, "; "), "memory budget") {
		t.Errorf("the flood's start: marks %v, missing %q; want it marked %s", flood.Marks, flood.Missing, correlator.MarkTrimmed)
	}
	for _, c := range flood.Containers {
		if c.Name != "flood" {
			continue
		}
		if len(c.Attempts) != 1 || c.Attempts[0].Process == nil || len(c.Attempts[0].Process.Argv) == 0 || c.Attempts[0].Process.Argv[0] != "sh" {
			t.Errorf("the flood's entrypoint was lost: %+v", c.Attempts)
		}
	}
	mfs := scrapeDaemon(t, d)
	argv := counterValue(mfs, "readyline_events_dropped_total", map[string]string{"source": "correlator", "reason": "budget_argv"})
	facts := counterValue(mfs, "readyline_events_dropped_total", map[string]string{"source": "correlator", "reason": "budget"})
	t.Logf("readyline_events_dropped_total{source=correlator}: budget_argv %v, budget %v", argv, facts)
	if argv == 0 {
		t.Error("no budget_argv drops counted for 4000 processes of 500 bytes of argv in a 1Mi budget")
	}
}
