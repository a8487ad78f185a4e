//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
)

// floodConns and floodFor are the attack TestMetricsPortFlood makes: the
// connections of issue 25's report, for a minute (the liveness probe
// restarts the daemon after 3 failures 10 s apart, the readiness probe
// unreadies it after 3 failures 5 s apart).
const (
	floodConns = 400
	floodFor   = 60 * time.Second
)

// floodCounts is a line of connflood's output.
type floodCounts struct {
	Dials, Open, Closed, Failed int64
}

// TestMetricsPortFlood: a pod on the node, an ordinary tenant's (no
// privileges, not root), holds 400 idle connections to the DaemonSet's
// metrics port and reconnects each one the daemon closes. Before issue
// 25's fix this got readyline restarted: its probes asked the same port,
// whose 64 slots the pod held. For a minute of it the daemon's pod must
// stay Ready with no restart, and /metrics must still answer from the node.
// Probe failures (Unhealthy events), which the daemon's probes on its socket
// should no longer have, are logged.
//
// deploy/local runs the daemon on the host network, where no NetworkPolicy
// applies (nor does the node's bridge plugin enforce one): what holds here
// is the health on a unix socket and the per-address limit of the metrics port.
// Not parallel, like TestDaemonSet: it deploys the DaemonSet.
func TestMetricsPortFlood(t *testing.T) {
	withoutSharedDaemon(t)
	ctx := testContext(t, 15*time.Minute)
	if err := env.BuildNodeImage(ctx); err != nil {
		t.Fatal(err)
	}
	const ref = "localhost/connflood:e2e"
	if err := env.ImportGoImage(ctx, "./deploy/e2e/testdata/connflood", ref, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	d := deployReadyline(t, "deploy/local")
	metricsURL := "http://" + net.JoinHostPort(d.Pod.Status.PodIP, "9464") + "/metrics"
	if err := scrape(ctx, metricsURL); err != nil {
		t.Fatalf("before the flood: %v", err)
	}

	ns := newNamespace(t)
	no, yes, nobody, now := false, true, int64(65534), int64(0)
	flood := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "connflood"},
		Spec: corev1.PodSpec{
			NodeName:                      env.NodeName,
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: &now,
			SecurityContext:               &corev1.PodSecurityContext{RunAsNonRoot: &yes, RunAsUser: &nobody},
			Containers: []corev1.Container{{
				Name: "flood", Image: ref, ImagePullPolicy: corev1.PullNever,
				Args: []string{"-addr", net.JoinHostPort(d.Pod.Status.PodIP, "9464"), "-conns", strconv.Itoa(floodConns), "-redial", "100ms"},
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: &no,
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
			}},
		},
	}
	if _, err := env.Client.CoreV1().Pods(ns).Create(ctx, flood, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := WaitForPod(ctx, env.Client, ns, flood.Name, func(p *corev1.Pod) bool { return ContainerRunning(p, "flood") }); err != nil {
		t.Fatal(err)
	}
	counts := func() floodCounts {
		t.Helper()
		b, err := env.Client.CoreV1().Pods(ns).GetLogs(flood.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		if err != nil {
			t.Fatalf("connflood's log: %v", err)
		}
		var c floodCounts
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if last := lines[len(lines)-1]; last != "" {
			if err := json.Unmarshal([]byte(last), &c); err != nil {
				t.Fatalf("connflood's log %q: %v", last, err)
			}
		}
		return c
	}
	// The flood is on once every one of its connections was made.
	for c := counts(); c.Dials < floodConns; c = counts() {
		if ctx.Err() != nil {
			t.Fatalf("connflood made %d connections, want %d: %+v", c.Dials, floodConns, c)
		}
		time.Sleep(time.Second)
	}
	floodStart := time.Now()
	before := usage(t, ctx, d, time.Time{})

	pods := env.Client.CoreV1().Pods(ReadylineNamespace)
	samples, scrapes, unready := 0, 0, 0
	for time.Since(floodStart) < floodFor {
		samples++
		p, err := pods.Get(ctx, d.Pod.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if ConditionStatus(p, corev1.PodReady) != corev1.ConditionTrue {
			unready++
			t.Errorf("%v into the flood, readyline's pod is not Ready: %s", time.Since(floodStart).Round(time.Second), DescribeStatus(p))
		}
		if err := scrape(ctx, metricsURL); err != nil {
			t.Errorf("%v into the flood, /metrics from the node: %v", time.Since(floodStart).Round(time.Second), err)
		} else {
			scrapes++
		}
		time.Sleep(2 * time.Second)
	}
	after := usage(t, ctx, d, before.Time)
	c := counts()

	p, err := pods.Get(ctx, d.Pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := ContainerStatus(p, "readyline"); !ok || s.RestartCount != 0 || p.UID != d.Pod.UID {
		t.Errorf("readyline was restarted during the flood: %s", DescribeStatus(p))
	}
	events, err := env.Client.CoreV1().Events(ReadylineNamespace).List(ctx, metav1.ListOptions{
		FieldSelector: fields.Set{"involvedObject.name": d.Pod.Name, "reason": "Unhealthy"}.AsSelector().String()})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range events.Items {
		t.Logf("probe failure of readyline's pod (%d×, last %v): %s", ev.Count, ev.LastTimestamp.Time, ev.Message)
	}
	t.Logf("a %v flood of %d connections (%d made, %d closed by the daemon, %d failed): readyline not Ready in %d samples, "+
		"%d of %d scrapes from the node answered; readyline %.1f mCPU, %.1f MiB",
		floodFor, floodConns, c.Dials, c.Closed, c.Failed, unready, scrapes, samples, CPUBetween(before, after), mib(after.WorkingSet))
	if c.Closed == 0 {
		t.Errorf("the daemon closed none of the flood's connections (%+v): it served them all, or the flood did not reach it", c)
	}
}

// scrape GETs url and checks that it is readyline's /metrics.
func scrape(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || !bytes.Contains(b, []byte("readyline_events_dropped_total")) {
		return fmt.Errorf("GET %s: %s, %.200q", url, resp.Status, b)
	}
	return nil
}
