//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/yaml"

	"github.com/readyline/readyline/correlator"
)

// The slow CNI plugin of TestAlertSlowSandbox.
const (
	slowPlugin = "e2e-slow"
	slowSleep  = 5500 * time.Millisecond
	// alertThreshold is the daemon's --alert; the Prometheus rules' own
	// threshold is 5s, which slowSleep also exceeds.
	alertThreshold = 2 * time.Second
)

// TestAlertSlowSandbox chains a CNI plugin that sleeps 5.5 s before passing
// its input through, last in the node's conflist, and starts pods under a
// readyline run with --alert PodReadyToStartContainers=2s: each pod gets one
// Warning Event SlowPodReadyToStartContainers whose message names the CNI
// share of the time, readyline_alerts_total rises, the trace is marked, and
// deploy/alerts' rules fire (promtool) on the histogram the daemon exported.
//
// It is not parallel: while it runs every pod start on the node is slow.
func TestAlertSlowSandbox(t *testing.T) {
	cniBin := filepath.Join(env.NodeDir, "cnibin")
	if len(cniBin) > 30 {
		t.Fatalf("NODE_DIR=%s makes the node's CNI plugin directory %s longer than the 30 bytes readyline can watch: use a shorter NODE_DIR", env.NodeDir, cniBin)
	}
	conf, err := os.ReadFile(filepath.Join(env.NodeDir, "config", "containerd.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(conf, []byte("'"+cniBin+"'")) {
		t.Fatalf("containerd does not run CNI plugins from %s: node.sh up restarts it with the current configuration", cniBin)
	}
	promtool := promtoolPath(t)

	withoutSharedDaemon(t)
	ctx := testContext(t, 8*time.Minute)
	var ns string
	chainSlowPlugin(t, ctx, cniBin, &ns) // restored after the namespace's pods are gone
	ns = newNamespace(t)

	t.Setenv("READYLINE_ALERT", correlatorCond+"="+alertThreshold.String())
	t.Setenv("READYLINE_CNI_BIN_DIRS", "/usr/lib/cni,"+cniBin)
	d := ownDaemon(t, ctx, "alerts")

	events := watchSlowEvents(t, ctx, ns)
	alertsBefore := scrapeDaemon(t, d)

	// The first pod makes the namespace's histogram series exist; only the
	// second is an increase that rate() sees (as in Prometheus).
	first := startSlowPod(t, ctx, d, ns, "slow-1", events)
	scrapeA := scrapeDaemon(t, d)
	second := startSlowPod(t, ctx, d, ns, "slow-2", events)
	scrapeB := scrapeDaemon(t, d)

	for _, p := range []slowPod{first, second} {
		t.Logf("%s: PodReadyToStartContainers %v, of which CNI ADD %v (%s %v, %.0f%% of it); Event %v after Ready",
			p.name, p.measure.Round(time.Millisecond), p.cni.Round(time.Millisecond), slowPlugin, p.plugin.Round(time.Millisecond),
			100*p.plugin.Seconds()/p.measure.Seconds(), p.latency.Round(time.Millisecond))
	}

	// One Event per pod, however long we look.
	list, err := env.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=SlowPodReadyToStartContainers"})
	if err != nil {
		t.Fatal(err)
	}
	perPod := map[string]int{}
	for _, ev := range list.Items {
		perPod[ev.InvolvedObject.Name]++
	}
	if perPod["slow-1"] != 1 || perPod["slow-2"] != 1 || len(perPod) != 2 {
		t.Errorf("SlowPodReadyToStartContainers Events per pod %v, want one for each of slow-1 and slow-2", perPod)
	}

	// The counter: both pods (and any other pod the plugin slowed meanwhile).
	a0, a1, a2 := alertsTotal(alertsBefore), alertsTotal(scrapeA), alertsTotal(scrapeB)
	t.Logf("readyline_alerts_total{alert=%q}: %v before, %v after slow-1, %v after slow-2", correlatorCond, a0, a1, a2)
	if !(a1 >= a0+1 && a2 >= a1+1) {
		t.Errorf("readyline_alerts_total went %v -> %v -> %v, want at least +1 per slow pod", a0, a1, a2)
	}

	// The trace of the second pod is marked.
	tr, err := env.Jaeger.WaitForTrace(ctx, TraceIDFromPodUID(second.uid), 5, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	root, _ := tr.SpanByName("pod.startup")
	cond, _ := tr.SpanByName("condition " + correlatorCond)
	if tagString(root, "readyline.alert") != correlatorCond || tagString(root, "readyline.alert.threshold_ms") != "2000" ||
		tagString(cond, "readyline.alert") != correlatorCond {
		t.Errorf("trace %s: root readyline.alert=%q threshold_ms=%q, condition span readyline.alert=%q; want %s, 2000, %s",
			tr.TraceID, tagString(root, "readyline.alert"), tagString(root, "readyline.alert.threshold_ms"),
			tagString(cond, "readyline.alert"), correlatorCond, correlatorCond)
	}

	// deploy/alerts' rules on the exported histogram.
	checkRulesFire(t, promtool, ns, scrapeA, scrapeB)
}

// correlatorCond is the alert this test sets and expects.
const correlatorCond = "PodReadyToStartContainers"

// slowPod is what startSlowPod measured.
type slowPod struct {
	name, uid string
	// measure is PodScheduled -> PodReadyToStartContainers in readyline's
	// timeline; cni the CNI ADD (first plugin exec -> last exit) and plugin
	// the slow plugin's share of it.
	measure, cni, plugin time.Duration
	// latency is the pod observed Ready -> its Event observed.
	latency time.Duration
}

// startSlowPod starts a pod, waits for it to be Ready and for its Event, and
// checks the Event and readyline's timeline.
func startSlowPod(t *testing.T, ctx context.Context, d *Daemon, ns, name string, events *slowEvents) slowPod {
	t.Helper()
	rec := recordPod(t, ns, name)
	if _, err := env.Apply(ctx, ns, []byte(fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - {name: c, image: localhost/busybox:local, imagePullPolicy: Never, command: ["sleep", "3600"]}
`, name))); err != nil {
		t.Fatal(err)
	}
	ready, err := rec.WaitFor(ctx, ConditionTrue(corev1.PodReady))
	if err != nil {
		t.Fatal(err)
	}
	ev, seen, err := events.wait(ctx, name, time.Minute)
	if err != nil {
		t.Fatalf("%v (readyline log %s)", err, d.Log)
	}
	p := slowPod{name: name, uid: string(ready.Pod.UID), latency: seen.Sub(ready.ObservedAt)}

	if ev.Type != corev1.EventTypeWarning || ev.InvolvedObject.Kind != "Pod" || ev.InvolvedObject.UID != ready.Pod.UID ||
		ev.Source.Component != "readyline" || ev.Source.Host != env.NodeName || ev.Count != 1 {
		t.Errorf("%s: Event %s %s on %s %s (uid %s) from %+v, count %d; want a Warning on the pod (uid %s) from readyline on %s",
			name, ev.Type, ev.Reason, ev.InvolvedObject.Kind, ev.InvolvedObject.Name, ev.InvolvedObject.UID, ev.Source, ev.Count,
			ready.Pod.UID, env.NodeName)
	}
	t.Logf("%s: Event %s: %s", name, ev.Reason, ev.Message)
	for _, want := range []string{
		correlatorCond + " took ", "(threshold " + correlator.FormatDuration(alertThreshold) + ")", "RunPodSandbox ", " of which CNI ADD ", slowPlugin + " 5.",
		// How to open the pod's trace and its waterfall.
		". Trace " + TraceIDFromPodUID(string(ready.Pod.UID)) + " (kubectl readyline explain -n " + ns + " " + name + ")",
	} {
		if !strings.Contains(ev.Message, want) {
			t.Errorf("%s: the Event's message lacks %q", name, want)
		}
	}

	tl, err := d.Timeline(ctx, ns, name, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var scheduled, readyToStart time.Time
	for _, c := range tl.Conditions {
		switch c.Type {
		case "PodScheduled":
			scheduled = c.Observed
		case correlatorCond:
			readyToStart = c.Observed
		}
	}
	p.measure = readyToStart.Sub(scheduled)
	if tl.Sandbox == nil || len(tl.Sandbox.CNI) == 0 {
		t.Fatalf("%s: readyline saw no CNI plugin of the sandbox", name)
	}
	var first, last time.Time
	for _, c := range tl.Sandbox.CNI {
		if first.IsZero() || c.Exec.Before(first) {
			first = c.Exec
		}
		if c.Exit.After(last) {
			last = c.Exit
		}
		if filepath.Base(c.Filename) == slowPlugin {
			p.plugin = c.Exit.Sub(c.Exec)
		}
	}
	p.cni = last.Sub(first)
	if p.plugin < slowSleep || p.plugin > slowSleep+2*time.Second {
		t.Errorf("%s: %s ran %v in readyline's timeline, want its %v sleep", name, slowPlugin, p.plugin, slowSleep)
	}
	if p.measure < slowSleep {
		t.Errorf("%s: %s %v, shorter than the plugin's sleep", name, correlatorCond, p.measure)
	}
	return p
}

// chainSlowPlugin builds the slow plugin into the node's own CNI plugin
// directory and appends it to the node's conflist; the test's cleanup,
// once the pods of namespace *ns are gone, restores the conflist and
// removes the plugin. A backup next to the conflist restores it after a killed run.
func chainSlowPlugin(t *testing.T, ctx context.Context, cniBin string, ns *string) {
	t.Helper()
	netd := filepath.Join(env.NodeDir, "cni", "net.d")
	conflist := filepath.Join(netd, "10-readyline.conflist")
	backup := filepath.Join(env.NodeDir, "cni", "10-readyline.conflist.e2e-backup")
	if b, err := os.ReadFile(backup); err == nil {
		t.Logf("restoring %s from a previous run's backup", conflist)
		if err := replaceFile(conflist, b); err != nil {
			t.Fatal(err)
		}
		os.Remove(backup)
	}
	orig, err := os.ReadFile(conflist)
	if err != nil {
		t.Fatal(err)
	}
	var list map[string]any
	if err := json.Unmarshal(orig, &list); err != nil {
		t.Fatalf("%s: %v", conflist, err)
	}
	plugins, _ := list["plugins"].([]any)
	if len(plugins) == 0 {
		t.Fatalf("%s has no plugins", conflist)
	}
	list["plugins"] = append(plugins, map[string]any{"type": slowPlugin, "sleep": slowSleep.String()})
	patched, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		t.Fatal(err)
	}

	if err := os.MkdirAll(cniBin, 0o755); err != nil {
		t.Fatal(err)
	}
	plugin := filepath.Join(cniBin, slowPlugin)
	build := exec.CommandContext(ctx, "go", "build", "-o", plugin, "./deploy/e2e/testdata/slowcni")
	build.Dir, build.Env = env.RepoRoot, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the slow CNI plugin: %v\n%s", err, out)
	}
	if err := os.WriteFile(backup, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Pods set up with the plugin are torn down (CNI DEL) with it.
		err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			if *ns == "" {
				return true, nil
			}
			l, err := env.Client.CoreV1().Pods(*ns).List(ctx, metav1.ListOptions{})
			return err == nil && len(l.Items) == 0, nil
		})
		if err != nil {
			t.Errorf("the test's pods are still there after 2 minutes; restoring the conflist anyway")
		}
		if err := replaceFile(conflist, orig); err != nil {
			t.Errorf("restoring %s: %v (the backup is %s)", conflist, err, backup)
			return
		}
		os.Remove(backup)
		os.Remove(plugin)
		t.Logf("restored %s", conflist)
	})
	if err := replaceFile(conflist, patched); err != nil {
		t.Fatal(err)
	}
	t.Logf("chained %s (sleep %v) after %d plugins in %s", plugin, slowSleep, len(plugins), conflist)
}

// replaceFile writes b to path by renaming a temporary file over it:
// containerd reloads the CNI configuration on the rename and never reads a
// half-written file (it ignores the dot file's extension).
func replaceFile(path string, b []byte) error {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// ownDaemon stops the shared daemon and starts one of the test's own (with
// the test's READYLINE_* environment), stopped when the test ends.
func ownDaemon(t *testing.T, ctx context.Context, name string) *Daemon {
	t.Helper()
	withoutSharedDaemon(t)
	d, err := env.StartDaemon(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Stop(); err != nil {
			t.Errorf("readyline: %v (log %s)", err, d.Log)
		}
	})
	return d
}

// withoutSharedDaemon stops the trace tests' shared daemon if one runs (and
// waits for any other 'readyline run' to end): StartDaemon runs one
// readyline at a time. The next test that needs the shared daemon starts it
// again.
func withoutSharedDaemon(t *testing.T) {
	t.Helper()
	if daemonRun != nil {
		// A crash of the shared daemon fails the run: the tests that used
		// it fail in their cleanup when it died while they ran; one that
		// died in between is told here.
		if err := daemonRun.Stop(); err != nil {
			t.Errorf("stopping the shared daemon: %v", err)
		}
		daemonOnce, daemonRun, daemonErr = sync.Once{}, nil, nil
	}
	ctx, cancel := suiteContext(5 * time.Minute)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, time.Second, true, func(context.Context) (bool, error) {
		return len(otherDaemons()) == 0, nil
	})
	if err != nil {
		t.Fatalf("another 'readyline run' (pids %v) did not end within 5 minutes", otherDaemons())
	}
}

// slowEvents watches a namespace's SlowPodReadyToStartContainers Events and
// notes when each was observed.
type slowEvents struct {
	mu      sync.Mutex
	byPod   map[string]*corev1.Event
	seen    map[string]time.Time
	changed chan struct{}
}

func watchSlowEvents(t *testing.T, ctx context.Context, ns string) *slowEvents {
	t.Helper()
	w, err := env.Client.CoreV1().Events(ns).Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("reason", "SlowPodReadyToStartContainers").String()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	e := &slowEvents{byPod: map[string]*corev1.Event{}, seen: map[string]time.Time{}, changed: make(chan struct{})}
	go func() {
		for r := range w.ResultChan() {
			ev, ok := r.Object.(*corev1.Event)
			if !ok || r.Type != watch.Added {
				continue
			}
			now := time.Now()
			e.mu.Lock()
			if _, dup := e.byPod[ev.InvolvedObject.Name]; !dup {
				e.byPod[ev.InvolvedObject.Name], e.seen[ev.InvolvedObject.Name] = ev, now
			}
			close(e.changed)
			e.changed = make(chan struct{})
			e.mu.Unlock()
		}
	}()
	return e
}

// wait returns pod's Event and when it was observed.
func (e *slowEvents) wait(ctx context.Context, pod string, timeout time.Duration) (*corev1.Event, time.Time, error) {
	deadline := time.After(timeout)
	for {
		e.mu.Lock()
		ev, at, changed := e.byPod[pod], e.seen[pod], e.changed
		e.mu.Unlock()
		if ev != nil {
			return ev, at, nil
		}
		select {
		case <-changed:
		case <-deadline:
			return nil, time.Time{}, fmt.Errorf("no SlowPodReadyToStartContainers Event on %s within %v", pod, timeout)
		case <-ctx.Done():
			return nil, time.Time{}, ctx.Err()
		}
	}
}

// scrapeDaemon fetches and parses the daemon's /metrics.
func scrapeDaemon(t testing.TB, d *Daemon) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(d.MetricsURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return mfs
}

func alertsTotal(mfs map[string]*dto.MetricFamily) float64 {
	for _, m := range mfs["readyline_alerts_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "alert" && l.GetValue() == correlatorCond {
				return m.GetCounter().GetValue()
			}
		}
	}
	return math.NaN()
}

// bucketSeries returns the namespace's readyline_pod_ready_to_start_containers_seconds_bucket
// samples of a scrape, keyed by their le.
func bucketSeries(mfs map[string]*dto.MetricFamily, ns string) map[string]uint64 {
	out := map[string]uint64{}
	for _, m := range mfs["readyline_pod_ready_to_start_containers_seconds"].GetMetric() {
		if !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool { return l.GetName() == "namespace" && l.GetValue() == ns }) {
			continue
		}
		for _, b := range m.GetHistogram().GetBucket() {
			out[strconv.FormatFloat(b.GetUpperBound(), 'f', -1, 64)] = b.GetCumulativeCount()
		}
		out["+Inf"] = m.GetHistogram().GetSampleCount()
	}
	return out
}

// checkRulesFire evaluates deploy/alerts/rules.yaml with promtool on the
// namespace's histogram as Prometheus would have stored it from the two
// scrapes (one a minute, the labels the rules assume of the scrape: node
// from the target), held for the rules' `for`: both rules must fire, and
// none before the second scrape.
func checkRulesFire(t *testing.T, promtool, ns string, scrapeA, scrapeB map[string]*dto.MetricFamily) {
	t.Helper()
	a, b := bucketSeries(scrapeA, ns), bucketSeries(scrapeB, ns)
	if len(b) == 0 || b["+Inf"] < 2 {
		t.Fatalf("the daemon's histogram for %s: %v, want the two pod starts", ns, b)
	}
	dir := t.TempDir()

	// The rules as shipped, without annotations (their text holds the
	// measured value, which this test cannot know in advance).
	raw, err := os.ReadFile(filepath.Join(env.RepoRoot, "deploy", "alerts", "rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Name  string           `json:"name"`
			Rules []map[string]any `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.Unmarshal(raw, &rules); err != nil {
		t.Fatal(err)
	}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			delete(r, "annotations")
		}
	}
	out, err := yaml.Marshal(rules)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), out, 0o644); err != nil {
		t.Fatal(err)
	}

	var series []map[string]string
	les := make([]string, 0, len(b))
	for le := range b {
		les = append(les, le)
	}
	slices.Sort(les)
	for _, le := range les {
		first := "_" // not exported yet: no sample
		if v, ok := a[le]; ok {
			first = strconv.FormatUint(v, 10)
		}
		series = append(series, map[string]string{
			"series": fmt.Sprintf(`readyline_pod_ready_to_start_containers_seconds_bucket{job="readyline",node=%q,namespace=%q,le=%q}`, env.NodeName, ns, le),
			// The first scrape at 0m, the second at 1m, then nothing new.
			"values": first + " " + strconv.FormatUint(b[le], 10) + "x9",
		})
	}
	alertTest := func(at, name string, labels map[string]string) map[string]any {
		want := []any{}
		if labels != nil {
			want = append(want, map[string]any{"exp_labels": labels})
		}
		return map[string]any{"eval_time": at, "alertname": name, "exp_alerts": want}
	}
	test := map[string]any{
		"rule_files":          []string{"rules.yaml"},
		"evaluation_interval": "1m",
		"tests": []any{map[string]any{
			"interval":     "1m",
			"input_series": series,
			"alert_rule_test": []any{
				alertTest("1m", "ReadylineSlowPodReadyToStartContainers", nil), // pending for 5m first
				alertTest("7m", "ReadylineSlowPodReadyToStartContainers", map[string]string{"severity": "warning", "namespace": ns}),
				alertTest("7m", "ReadylineNodeSlowPodReadyToStartContainers", map[string]string{"severity": "warning", "node": env.NodeName}),
			},
		}},
	}
	out, err = yaml.Marshal(test)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tests.yaml"), out, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(promtool, "test", "rules", "tests.yaml")
	cmd.Dir = dir
	res, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool test rules on the daemon's metrics: %v\n%s\n--- tests.yaml\n%s", err, res, out)
	}
	t.Logf("promtool: both rules fire on the exported histogram (%s: %v -> %v)", ns, a, b)
}

// promtoolPath builds (once) and returns deploy/alerts' promtool.
func promtoolPath(t *testing.T) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(env.RepoRoot, "deploy", "alerts", "test.sh"), "promtool")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("deploy/alerts/test.sh promtool: %v", err)
	}
	return strings.TrimSpace(string(out))
}
