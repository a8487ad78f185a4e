//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/deploy/e2e/jaeger"
	"github.com/readyline/readyline/exporter"
	"github.com/readyline/readyline/exporter/apiclient"
)

// TestExemplarsOpenThePodsTrace starts a pod under the shared daemon,
// scrapes the daemon's /metrics as OpenMetrics once the start is recorded,
// and follows the exemplars on readyline_pod_startup_duration_seconds and
// readyline_pod_ready_to_start_containers_seconds to Jaeger: their trace_id
// is the pod's trace, their span_id its pod.startup root, and Jaeger has it
// with that pod's UID. The plain text scrape still has no exemplar.
//
// Why it cannot fail at random while other tests start pods in parallel:
// the SDK keeps one exemplar per series and bucket (a uniform pick among
// the observations offered since the last scrape, and the last pick kept
// across scrapes until a later observation replaces it), so an exemplar
// is only ever replaced by an observation of the same series. Both
// histograms have a namespace label, and the test's namespace is its own,
// made for it, with this one pod: each of its series has exactly one
// observation ever, whose exemplar no other test's pod and no scrape (ours,
// another test's, a Prometheus') can replace. The pod phase and container
// phase histograms are namespaced too and are checked the same way. The
// image pull histogram is not (its series are shared by every pod on the
// node; exporter's unit test covers it), and this pod pulls nothing.
// Nothing is retried: the only waits are for facts that do come (the
// timeline in the daemon's API, after Record; the trace in Jaeger).
func TestExemplarsOpenThePodsTrace(t *testing.T) {
	t.Parallel()
	d := readyline(t)
	ctx := testContext(t, 4*time.Minute)
	const name = "exemplar"
	ns, rec := startPod(t, ctx, name, `apiVersion: v1
kind: Pod
metadata: {name: exemplar}
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - {name: c, image: localhost/busybox:local, imagePullPolicy: Never, command: ["sleep", "3600"]}
`)
	ready, err := rec.WaitFor(ctx, ConditionTrue(corev1.PodReady))
	if err != nil {
		t.Fatal(err)
	}
	uid := string(ready.Pod.UID)
	traceID := TraceIDFromPodUID(uid)

	// The daemon records the metrics of a start before it stores its
	// timeline (deliver): once the completed timeline is in its API, the
	// exemplars are in its histograms. A start over --start-timeout is
	// first stored partial; its completion records the startup duration.
	tl := completedTimeline(t, ctx, d, ns, name)
	tr, err := env.Jaeger.WaitForTrace(ctx, traceID, 3, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	root := rootOf(t, tr)

	exemplars, err := ScrapeExemplars(ctx, d.MetricsURL)
	if err != nil {
		t.Fatal(err)
	}
	// Every exemplar of the namespace's series, by histogram.
	per := map[string][]Exemplar{}
	for _, e := range exemplars {
		if e.Labels["namespace"] != ns {
			continue
		}
		per[strings.TrimSuffix(e.Metric, "_bucket")] = append(per[strings.TrimSuffix(e.Metric, "_bucket")], e)
		if !SameID(e.TraceID, traceID) || !SameID(e.SpanID, root.SpanID) {
			t.Errorf("an exemplar of %s's only pod names trace %s span %s, want the pod's %s and its root %s: %s",
				ns, e.TraceID, e.SpanID, traceID, root.SpanID, e.Line)
		}
	}
	for _, h := range []struct {
		name string
		want float64 // the observation: the exemplar's value
	}{
		{"readyline_pod_startup_duration_seconds", tl.End.Sub(tl.Start).Seconds()},
		{"readyline_pod_ready_to_start_containers_seconds", mustReadyToStart(t, tl).Seconds()},
	} {
		got := per[h.name]
		if len(got) != 1 {
			t.Errorf("%s{namespace=%q}: %d exemplars, want 1 (one pod, one observation): %v", h.name, ns, len(got), got)
			continue
		}
		if e := got[0]; e.Value < h.want-0.001 || e.Value > h.want+0.001 {
			t.Errorf("%s: exemplar value %v, want the pod's %v: %s", h.name, e.Value, h.want, e.Line)
		}
		t.Logf("%s: %s", h.name, got[0].Line)
	}
	for _, h := range []string{"readyline_pod_phase_duration_seconds", "readyline_container_phase_duration_seconds"} {
		if len(per[h]) == 0 {
			t.Errorf("%s{namespace=%q}: no exemplar", h, ns)
		}
	}

	// What a Grafana exemplar link does: open the trace by the exemplar's
	// trace_id.
	if e := per["readyline_pod_startup_duration_seconds"]; len(e) == 1 {
		linked, err := env.Jaeger.Trace(ctx, e[0].TraceID)
		if err != nil {
			t.Fatalf("the exemplar's trace %s: %v", e[0].TraceID, err)
		}
		r := rootOf(t, linked)
		if tagString(r, "k8s.pod.uid") != uid || tagString(r, "k8s.namespace.name") != ns || !SameID(r.SpanID, e[0].SpanID) {
			t.Errorf("the exemplar's trace %s has root %s of pod %s/%s (uid %s), want span %s of %s/%s (uid %s)",
				e[0].TraceID, r.SpanID, tagString(r, "k8s.namespace.name"), tagString(r, "k8s.pod.name"), tagString(r, "k8s.pod.uid"),
				e[0].SpanID, ns, name, uid)
		}
	}

	// A scraper that does not ask for OpenMetrics gets the text format,
	// which carries no exemplar and still parses.
	mfs := scrapeDaemon(t, d)
	if _, ok := mfs["readyline_pod_startup_duration_seconds"]; !ok {
		t.Error("the text format lacks readyline_pod_startup_duration_seconds")
	}
}

// completedTimeline waits until the daemon's API has the pod's start with
// its outcome Ready and not partial.
func completedTimeline(t *testing.T, ctx context.Context, d *Daemon, ns, name string) *correlator.Timeline {
	t.Helper()
	var tl *correlator.Timeline
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		tl, err = apiclient.FetchTimeline(ctx, d.APIURL, ns, name)
		if errors.Is(err, apiclient.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		return tl.Outcome == correlator.OutcomeReady && !tl.Partial && tl.AsOf.IsZero(), nil
	})
	if err != nil {
		t.Fatalf("a completed timeline of %s/%s: %v (last %+v)", ns, name, err, describeTimeline(tl))
	}
	return tl
}

func describeTimeline(tl *correlator.Timeline) string {
	if tl == nil {
		return "none"
	}
	return fmt.Sprintf("outcome %s partial %v", tl.Outcome, tl.Partial)
}

// mustReadyToStart is the timeline's PodScheduled -> PodReadyToStartContainers.
func mustReadyToStart(t *testing.T, tl *correlator.Timeline) time.Duration {
	t.Helper()
	d, ok := exporter.ReadyToStartContainers(tl)
	if !ok {
		t.Fatalf("the timeline lacks PodScheduled or PodReadyToStartContainers: %+v", tl.Conditions)
	}
	return d
}

// rootOf returns a trace's one pod.startup root: the span without a parent
// (a root may have links, FOLLOWS_FROM references to other traces).
func rootOf(t *testing.T, tr *jaeger.Trace) jaeger.Span {
	t.Helper()
	var roots []jaeger.Span
	for _, s := range tr.Spans {
		if s.OperationName == "pod.startup" && !hasParent(s) {
			roots = append(roots, s)
		}
	}
	if len(roots) != 1 {
		t.Fatalf("trace %s has %d pod.startup roots, want 1", tr.TraceID, len(roots))
	}
	return roots[0]
}

// hasParent reports whether s has a CHILD_OF reference.
func hasParent(s jaeger.Span) bool {
	for _, r := range s.References {
		if r.RefType == "CHILD_OF" {
			return true
		}
	}
	return false
}
