package exporter

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/readyline/readyline/correlator"
)

const slowSandboxUID = "5a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"

// slowSandbox is a pod whose sandbox took 5.7 s because a CNI plugin chained
// after the node's (slow-cni) slept 5 s: the e2e test's setup, by hand.
func slowSandbox() *correlator.Timeline {
	proc := func(pid uint32, name string, exec, exit int) correlator.Process {
		return correlator.Process{PID: pid, Filename: "/usr/lib/cni/" + name, Exec: at(exec), Exit: at(exit), ExitCode: intp(0)}
	}
	return &correlator.Timeline{
		Pod:     correlator.PodRef{UID: slowSandboxUID, Namespace: "demo", Name: "slow-sandbox", Node: "readyline-node"},
		Start:   t0,
		End:     at(7300),
		Outcome: correlator.OutcomeReady,
		Phases: []correlator.Phase{
			{Name: correlator.PhaseSchedule, Start: at(0), End: at(40), Source: "api"},
			{Name: correlator.PhaseWaitSandbox, Start: at(52), End: at(452), Source: "api"},
			{Name: correlator.PhaseSandbox, Start: at(452), End: at(6152), Source: "kernel"},
			{Name: correlator.PhaseContainers, Start: at(6300), End: at(7290), Source: "api"},
		},
		Sandbox: &correlator.Sandbox{
			ID: "c0ffee", Created: at(500), PauseStart: at(5900), Ready: at(6152),
			Call: &correlator.CRICall{Method: "runtime.v1.RuntimeService/RunPodSandbox", Start: at(452), End: at(6152)},
			CNI: []correlator.Process{
				// host-local runs inside bridge (its delegated IPAM); listed
				// after it so that the message's order is the exec order.
				proc(7001, "bridge", 600, 700),
				proc(7005, "portmap", 705, 750),
				proc(7002, "host-local", 610, 620),
				proc(7008, "loopback", 752, 760),
				{PID: 7010, Filename: "/var/lib/readyline-node/cnibin/slow-cni", Exec: at(765), Exit: at(5765), ExitCode: intp(0)},
			},
		},
		Conditions: []correlator.ConditionTransition{
			{Type: correlator.CondPodScheduled, Observed: at(40), LastTransitionTime: t0},
			{Type: correlator.CondInitialized, Observed: at(40), LastTransitionTime: t0},
			{Type: correlator.CondPodReadyToStartContainers, Observed: at(6240), LastTransitionTime: at(6000), Cause: at(6152), CauseEvent: "sandbox ready"},
			{Type: correlator.CondContainersReady, Observed: at(7295), LastTransitionTime: at(7000)},
			{Type: correlator.CondReady, Observed: at(7300), LastTransitionTime: at(7000)},
		},
	}
}

const slowSandboxMessage = "PodReadyToStartContainers took 6.2s (threshold 5.0s): waiting before the sandbox 400ms, " +
	"RunPodSandbox 5.7s of which CNI ADD 5.2s (bridge 100ms, host-local 10ms, portmap 45ms, loopback 8ms, slow-cni 5.0s), " +
	"pause started at +5.9s, status reported 88ms after sandbox ready"

func TestAlertMessageSlowSandbox(t *testing.T) {
	tl := slowSandbox()
	alerts := CheckAlerts(tl, []AlertRule{{Name: correlator.CondPodReadyToStartContainers, Threshold: 5 * time.Second}})
	if len(alerts) != 1 {
		t.Fatalf("%d alerts, want 1: %+v", len(alerts), alerts)
	}
	a := alerts[0]
	if a.Message != slowSandboxMessage {
		t.Errorf("message\n got %s\nwant %s", a.Message, slowSandboxMessage)
	}
	// The very measure of readyline_pod_ready_to_start_containers_seconds.
	if d, _ := ReadyToStartContainers(tl); a.Took != d || a.Took != 6200*time.Millisecond {
		t.Errorf("took %v, histogram measure %v, want 6.2s for both", a.Took, d)
	}
	if a.Reason != "SlowPodReadyToStartContainers" || a.Span != "condition PodReadyToStartContainers" || !a.Reached {
		t.Errorf("alert %+v", a)
	}
}

// TestEventMessageKeepsTheTraceWithinTheLimit: a breakdown too long for an
// Event is cut, on a rune boundary, before the trace id and the explain
// command, which stay whole.
func TestEventMessageKeepsTheTraceWithinTheLimit(t *testing.T) {
	tl := slowSandbox()
	tl.Pod.Name = strings.Repeat("p", 253) // the longest pod name
	al := &Alert{Message: strings.Repeat("é", maxAlertMessage)}
	msg := eventMessage(tl, al)
	suffix := ". Trace 5a1b2c3d4e5f4a6b8c7d9e0f1a2b3c4d (kubectl readyline explain -n demo " + tl.Pod.Name + ")"
	if len(msg) > maxAlertMessage || !strings.HasSuffix(msg, "..."+suffix) || !utf8.ValidString(msg) {
		t.Errorf("message of %d bytes (limit %d), valid UTF-8 %v, ending %q; want the cut breakdown, then %q",
			len(msg), maxAlertMessage, utf8.ValidString(msg), msg[max(0, len(msg)-len(suffix)-5):], suffix)
	}
}

func TestCheckAlerts(t *testing.T) {
	timedOut := slowSandbox()
	timedOut.Outcome, timedOut.End = correlator.OutcomeTimeout, at(300040)
	timedOut.Conditions = timedOut.Conditions[:2] // PodReadyToStartContainers never came
	timedOut.Phases[2].End = time.Time{}
	timedOut.Sandbox.Call = nil

	failed := initFailureNever()

	for _, tc := range []struct {
		name  string
		tl    *correlator.Timeline
		rules []AlertRule
		want  []string // "Name took" for each alert
	}{
		{"under every threshold", lifecycleDemo(), []AlertRule{{"PodReadyToStartContainers", time.Second}, {"Ready", 30 * time.Second}}, nil},
		// 715 ms = 760 - 45: just above 700 ms, and equal is not above.
		{"just above", lifecycleDemo(), []AlertRule{{"PodReadyToStartContainers", 700 * time.Millisecond}}, []string{"PodReadyToStartContainers 715ms"}},
		{"equal is not above", lifecycleDemo(), []AlertRule{{"PodReadyToStartContainers", 715 * time.Millisecond}}, nil},
		{"conditions from creation, phases, in rule order", lifecycleDemo(),
			[]AlertRule{{"pod.init", 10 * time.Second}, {"Ready", 20 * time.Second}, {"Initialized", 16 * time.Second}, {"pod.sandbox", time.Second}},
			[]string{"pod.init 10.328s", "Ready 27.097s"}},
		{"zero threshold and unknown name never fire", lifecycleDemo(), []AlertRule{{"Ready", 0}, {"Nope", time.Nanosecond}}, nil},
		{"a timed-out start alerts on what never ended", timedOut,
			[]AlertRule{{"PodReadyToStartContainers", 5 * time.Second}, {"pod.sandbox", time.Minute}, {"Ready", time.Minute}},
			[]string{"PodReadyToStartContainers 5m0s", "pod.sandbox 4m59.588s", "Ready 5m0.04s"}},
		{"a failed start does not alert on what it never reached", failed, []AlertRule{{"Ready", time.Nanosecond}, {"pod.containers", time.Nanosecond}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, a := range CheckAlerts(tc.tl, tc.rules) {
				got = append(got, a.Name+" "+a.Took.String())
			}
			if strings.Join(got, "; ") != strings.Join(tc.want, "; ") {
				t.Errorf("alerts %q, want %q", got, tc.want)
			}
		})
	}

	a := CheckAlerts(timedOut, []AlertRule{{"PodReadyToStartContainers", 5 * time.Second}})[0]
	want := "PodReadyToStartContainers not reached after 5m0s (threshold 5.0s; the pod start timed out): waiting before the sandbox 400ms, " +
		"CNI ADD 5.2s (bridge 100ms, host-local 10ms, portmap 45ms, loopback 8ms, slow-cni 5.0s), pause started at +5.9s"
	if a.Reached || a.Message != want {
		t.Errorf("timed out: reached %v, message\n got %s\nwant %s", a.Reached, a.Message, want)
	}
	r := CheckAlerts(lifecycleDemo(), []AlertRule{{"Ready", 20 * time.Second}})[0]
	want = "Ready took 27.1s (threshold 20.0s): pod.schedule 45ms, pod.wait_sandbox 258ms, pod.sandbox 432ms, pod.init 10.3s, pod.containers 5.2s; " +
		"startupProbe initialDelaySeconds left init-sidecar idle 5.0s after its process was up; " +
		"where the time went: between steps (kubelet, unseen) 10.8s (40%); running 10.3s (38%); probe delay 5.2s (19%, init-sidecar); sandbox 432ms (2%); 3 more 310ms"
	if r.Reason != "SlowReady" || r.Message != want {
		t.Errorf("Ready: reason %s, message\n got %s\nwant %s", r.Reason, r.Message, want)
	}
}

func TestParseAlertRule(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want AlertRule
		err  string
	}{
		{"PodReadyToStartContainers=5s", AlertRule{"PodReadyToStartContainers", 5 * time.Second}, ""},
		{" podreadytostartcontainers = 1.5s ", AlertRule{"PodReadyToStartContainers", 1500 * time.Millisecond}, ""},
		{"pod.sandbox=250ms", AlertRule{"pod.sandbox", 250 * time.Millisecond}, ""},
		{"Ready=off", AlertRule{"Ready", 0}, ""},
		{"Ready=0", AlertRule{"Ready", 0}, ""},
		{"Ready", AlertRule{}, "want NAME=DURATION"},
		{"=5s", AlertRule{}, "want NAME=DURATION"},
		{"PodScheduled=5s", AlertRule{}, "unknown alert name: want one of PodReadyToStartContainers, Initialized, ContainersReady, Ready, pod.schedule"},
		{"Ready=5", AlertRule{}, "missing unit"},
		{"Ready=-5s", AlertRule{}, "negative"},
	} {
		got, err := ParseAlertRule(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want one containing %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	if _, err := ParseAlertRule("Nope=1s"); !errors.Is(err, ErrUnknownAlert) {
		t.Errorf("unknown name: %v, want ErrUnknownAlert", err)
	}
	var reasons []string
	for _, n := range AlertNames() {
		m, _ := findMeasure(n)
		reasons = append(reasons, m.reason)
	}
	want := "SlowPodReadyToStartContainers SlowInitialized SlowContainersReady SlowReady " +
		"SlowPodSchedule SlowPodWaitSandbox SlowPodSandbox SlowPodInit SlowPodContainers"
	if got := strings.Join(reasons, " "); got != want {
		t.Errorf("reasons %s, want %s", got, want)
	}
}

// fakeClock is a settable clock for the token bucket.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// withUID is tl for another pod.
func withUID(tl *correlator.Timeline, uid, name string) *correlator.Timeline {
	tl.Pod.UID, tl.Pod.Name = uid, name
	return tl
}

// runAlerter runs a until the test ends.
func runAlerter(t *testing.T, a *Alerter) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// fakeEvents is the Alerter's Events of a fake clientset.
func fakeEvents(client *fake.Clientset) func(string) EventClient {
	return func(ns string) EventClient { return client.CoreV1().Events(ns) }
}

func listEvents(t *testing.T, client *fake.Clientset, ns string) []corev1.Event {
	t.Helper()
	l, err := client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

var sandboxRule = []AlertRule{{Name: correlator.CondPodReadyToStartContainers, Threshold: 5 * time.Second}}

func TestAlerterEvent(t *testing.T) {
	client := fake.NewClientset()
	m, err := NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{now: at(7400)}
	a, err := NewAlerter(AlerterConfig{Rules: sandboxRule, NodeName: "readyline-node", Events: fakeEvents(client),
		Observer: m, Now: clock.Now}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The series exists, at 0, before any alert.
	if v := series(t, scrape(t, m.Handler(nil)), "readyline_alerts_total", map[string]string{"alert": "PodReadyToStartContainers"}).GetCounter().GetValue(); v != 0 {
		t.Errorf("readyline_alerts_total before any alert = %v, want 0", v)
	}
	runAlerter(t, a)

	if got := a.Observe(lifecycleDemo()); got != nil {
		t.Errorf("a fast sandbox alerted: %+v", got)
	}
	// The same pod start delivered twice (e.g. a late update after the
	// timeout) is marked twice but sent and counted once.
	for range 2 {
		if got := a.Observe(slowSandbox()); len(got) != 1 || got[0].Reason != "SlowPodReadyToStartContainers" {
			t.Fatalf("Observe = %+v, want one SlowPodReadyToStartContainers", got)
		}
	}
	waitFor(t, "the Event", func() bool { return a.Stats().Events == 1 })
	evs := listEvents(t, client, "demo")
	if len(evs) != 1 {
		t.Fatalf("%d Events, want 1", len(evs))
	}
	ev := evs[0]
	want := corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "demo", Name: "slow-sandbox", UID: slowSandboxUID}
	if ev.InvolvedObject != want {
		t.Errorf("involvedObject %+v, want %+v", ev.InvolvedObject, want)
	}
	// The message, then how to open the pod's trace: its id (the UID's
	// hex) and its waterfall.
	wantMsg := slowSandboxMessage + ". Trace 5a1b2c3d4e5f4a6b8c7d9e0f1a2b3c4d (kubectl readyline explain -n demo slow-sandbox)"
	if ev.Message != wantMsg {
		t.Errorf("Event message\n got %s\nwant %s", ev.Message, wantMsg)
	}
	if ev.Type != corev1.EventTypeWarning || ev.Reason != "SlowPodReadyToStartContainers" ||
		ev.Source != (corev1.EventSource{Component: "readyline", Host: "readyline-node"}) || ev.Count != 1 ||
		!ev.FirstTimestamp.Time.Equal(at(7400)) || !strings.HasPrefix(ev.Name, "slow-sandbox.") ||
		ev.ReportingController != "readyline" || ev.ReportingInstance != "readyline-node" {
		t.Errorf("event %+v", ev)
	}
	st := a.Stats()
	if st != (AlerterStats{Alerts: 1, Duplicates: 1, Events: 1}) {
		t.Errorf("stats %+v", st)
	}
	if v := series(t, scrape(t, m.Handler(nil)), "readyline_alerts_total", map[string]string{"alert": "PodReadyToStartContainers"}).GetCounter().GetValue(); v != 1 {
		t.Errorf("readyline_alerts_total = %v, want 1", v)
	}
}

func TestAlerterRateLimit(t *testing.T) {
	client := fake.NewClientset()
	m, err := NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{now: at(0)}
	// 6 a minute: one token every 10 s, 2 at once.
	a, err := NewAlerter(AlerterConfig{Rules: sandboxRule, Events: fakeEvents(client), Observer: m,
		EventsPerMinute: 6, Burst: 2, Now: clock.Now}, nil)
	if err != nil {
		t.Fatal(err)
	}
	runAlerter(t, a)
	observe := func(i int) {
		a.Observe(withUID(slowSandbox(), string(rune('a'+i))+slowSandboxUID[1:], "pod-"+string(rune('a'+i))))
	}
	for i := range 4 {
		observe(i)
	}
	clock.Add(9 * time.Second)
	observe(4) // still no token
	clock.Add(time.Second)
	observe(5) // one token back
	waitFor(t, "3 Events", func() bool { return a.Stats().Events == 3 })
	if st := a.Stats(); st.Alerts != 6 || st.RateLimited != 3 {
		t.Errorf("stats %+v, want 6 alerts, 3 rate-limited", st)
	}
	var names []string
	for _, ev := range listEvents(t, client, "demo") {
		names = append(names, ev.InvolvedObject.Name)
	}
	slices.Sort(names)
	if strings.Join(names, " ") != "pod-a pod-b pod-f" {
		t.Errorf("Events for %v, want pod-a, pod-b, pod-f", names)
	}
	mfs := scrape(t, m.Handler(nil))
	if v := series(t, mfs, "readyline_alerts_total", map[string]string{"alert": "PodReadyToStartContainers"}).GetCounter().GetValue(); v != 6 {
		t.Errorf("readyline_alerts_total = %v, want 6 (rate limiting drops Events, not alerts)", v)
	}
	if v := series(t, mfs, "readyline_events_dropped_total", map[string]string{"source": "alerts", "reason": "rate_limited"}).GetCounter().GetValue(); v != 3 {
		t.Errorf("dropped rate_limited = %v, want 3", v)
	}
}

// TestAlerterDefaultRateLimit: the README's "at most 10 a minute per node
// (burst 20)", with the defaults: of 22 slow pods at once 20 get their
// Event; the next token comes 6 s later.
func TestAlerterDefaultRateLimit(t *testing.T) {
	client := fake.NewClientset()
	clock := &fakeClock{now: at(0)}
	a, err := NewAlerter(AlerterConfig{Rules: sandboxRule, Events: fakeEvents(client), Now: clock.Now}, nil)
	if err != nil {
		t.Fatal(err)
	}
	runAlerter(t, a)
	observe := func(i int) {
		a.Observe(withUID(slowSandbox(), string(rune('a'+i))+slowSandboxUID[1:], "pod-"+string(rune('a'+i))))
	}
	for i := range 22 {
		observe(i)
	}
	clock.Add(5900 * time.Millisecond)
	observe(22) // still no token
	clock.Add(100 * time.Millisecond)
	observe(23) // one token back, 6 s after the burst
	waitFor(t, "21 Events", func() bool { return a.Stats().Events == 21 })
	if st := a.Stats(); st.Alerts != 24 || st.RateLimited != 3 {
		t.Errorf("stats %+v, want 24 alerts, 21 Events, 3 rate-limited", st)
	}
}

func TestAlerterRemembersBoundedPods(t *testing.T) {
	client := fake.NewClientset()
	a, err := NewAlerter(AlerterConfig{Rules: sandboxRule, Events: fakeEvents(client), RememberAlerts: 2, Burst: 100}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if quiet, _ := NewAlerter(AlerterConfig{Rules: sandboxRule}, nil); cap(quiet.order) != 0 {
		t.Errorf("an Alerter without alerts holds a ring of %d keys, want none", cap(quiet.order))
	}
	for _, uid := range []string{"a", "b", "a", "c", "a"} {
		a.Observe(withUID(slowSandbox(), uid, "pod-"+uid))
	}
	// a, b; a again is a duplicate; c evicts a; a is new again.
	if st := a.Stats(); st.Alerts != 4 || st.Duplicates != 1 {
		t.Errorf("stats %+v, want 4 alerts and 1 duplicate", st)
	}
	if len(a.seen) != 2 {
		t.Errorf("%d remembered, want at most 2", len(a.seen))
	}
}

func TestAlerterQueueFullNeverBlocks(t *testing.T) {
	client := fake.NewClientset()
	a, err := NewAlerter(AlerterConfig{Rules: sandboxRule, Events: fakeEvents(client), QueueSize: 1, Burst: 100}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Run is not running: the queue fills and Observe goes on.
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 3 {
			a.Observe(withUID(slowSandbox(), string(rune('a'+i)), "p"))
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Observe blocked on a full queue")
	}
	if st := a.Stats(); st.QueueFull != 2 || st.Alerts != 3 {
		t.Errorf("stats %+v, want 3 alerts, 2 queue_full", st)
	}
}

func TestAlerterAPIFailureLoggedOncePerOutage(t *testing.T) {
	client := fake.NewClientset()
	var mu sync.Mutex
	failing := true
	client.PrependReactor("create", "events", func(k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		if failing {
			return true, nil, errors.New("forbidden: events is forbidden")
		}
		return false, nil, nil
	})
	var logs syncBuffer
	m, err := NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewAlerter(AlerterConfig{Rules: sandboxRule, Events: fakeEvents(client), Observer: m, Burst: 100},
		slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	runAlerter(t, a)
	for i := range 3 {
		a.Observe(withUID(slowSandbox(), string(rune('a'+i)), "p"))
	}
	waitFor(t, "3 failures", func() bool { return a.Stats().Failed == 3 })
	mu.Lock()
	failing = false
	mu.Unlock()
	a.Observe(withUID(slowSandbox(), "d", "p"))
	waitFor(t, "the Event after the outage", func() bool { return a.Stats().Events == 1 })

	out := logs.String()
	if n := strings.Count(out, "cannot create alert Events"); n != 1 {
		t.Errorf("%d warnings for one outage, want 1:\n%s", n, out)
	}
	if !strings.Contains(out, "creating alert Events recovered") || !strings.Contains(out, "failed=3") {
		t.Errorf("no recovery logged:\n%s", out)
	}
	if v := series(t, scrape(t, m.Handler(nil)), "readyline_events_dropped_total", map[string]string{"source": "alerts", "reason": "api_error"}).GetCounter().GetValue(); v != 3 {
		t.Errorf("dropped api_error = %v, want 3", v)
	}
}

func TestNewAlerterRejectsBadRules(t *testing.T) {
	for _, rules := range [][]AlertRule{
		{{"Nope", time.Second}},
		{{"Ready", 0}},
		{{"Ready", time.Second}, {"ready", 2 * time.Second}},
	} {
		if _, err := NewAlerter(AlerterConfig{Rules: rules}, nil); err == nil {
			t.Errorf("rules %v accepted", rules)
		}
	}
}

func TestTraceMarksAlerts(t *testing.T) {
	tl := slowSandbox()
	alerts := CheckAlerts(tl, append(sandboxRule, AlertRule{Name: correlator.PhaseSandbox, Threshold: 5 * time.Second}))
	if len(alerts) != 2 {
		t.Fatalf("%d alerts, want 2", len(alerts))
	}
	mem := tracetest.NewInMemoryExporter()
	e, err := NewTraceExporter(TraceConfig{Exporter: mem}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	if err := e.Export(ctx, tl, alerts...); err != nil {
		t.Fatal(err)
	}
	if err := e.Export(ctx, lifecycleDemo()); err != nil { // no alerts: no marks
		t.Fatal(err)
	}
	if err := e.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	spans := mem.GetSpans()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	var slow, fast tracetest.SpanStubs
	for _, s := range spans {
		if s.SpanContext.TraceID() == TraceIDForPod(slowSandboxUID) {
			slow = append(slow, s)
		} else {
			fast = append(fast, s)
		}
	}
	st := newSpanTree(t, slow)
	wantAttrs(t, st.root, map[string]string{"readyline.alert": "PodReadyToStartContainers,pod.sandbox"})
	var events []string
	for _, ev := range st.root.Events {
		if strings.HasPrefix(ev.Name, "alert ") {
			got := attrMap(ev.Attributes)
			events = append(events, ev.Name+" "+got["readyline.alert.reason"].Emit()+" "+got["readyline.alert.threshold_ms"].Emit()+
				" "+got["readyline.alert.duration_ms"].Emit())
			if ev.Name == "alert PodReadyToStartContainers" && got["readyline.alert.message"].Emit() != slowSandboxMessage {
				t.Errorf("event message %s", got["readyline.alert.message"].Emit())
			}
			if ev.Name == "alert PodReadyToStartContainers" && !ev.Time.Equal(at(6240)) {
				t.Errorf("event at %v, want when PodReadyToStartContainers was observed", ev.Time)
			}
		}
	}
	want := "alert PodReadyToStartContainers SlowPodReadyToStartContainers 5000 6200; alert pod.sandbox SlowPodSandbox 5000 5700"
	if strings.Join(events, "; ") != want {
		t.Errorf("root events %q, want %q", events, want)
	}
	wantAttrs(t, st.child(st.root, "condition PodReadyToStartContainers"),
		map[string]string{"readyline.alert": "PodReadyToStartContainers", "readyline.alert.threshold_ms": "5000", "readyline.alert.duration_ms": "6200"})
	wantAttrs(t, st.child(st.root, "pod.sandbox"),
		map[string]string{"readyline.alert": "pod.sandbox", "readyline.alert.threshold_ms": "5000"})
	marked := 0
	for _, s := range slow {
		if _, ok := attrMap(s.Attributes)["readyline.alert"]; ok {
			marked++
		}
	}
	if marked != 3 {
		t.Errorf("%d spans marked, want 3 (root, condition, phase)", marked)
	}
	for _, s := range fast {
		if _, ok := attrMap(s.Attributes)["readyline.alert"]; ok {
			t.Errorf("span %s of a trace without alerts is marked", s.Name)
		}
	}

	// One alert: the root also carries its threshold.
	one := rootAlertAttrs(alerts[:1])
	if len(one) != 2 || one[1].Value.AsInt64() != 5000 {
		t.Errorf("root attributes of one alert: %v", one)
	}
}

// TestAlerterRetriesABusyAPIServer: an Event the API server answers with
// a timeout or 503 is sent again (twice at most) and created; a refusal is
// not retried.
func TestAlerterRetriesABusyAPIServer(t *testing.T) {
	client := fake.NewClientset()
	var mu sync.Mutex
	tries := map[string]int{}
	client.PrependReactor("create", "events", func(action k8stesting.Action) (bool, runtime.Object, error) {
		ev := action.(k8stesting.CreateAction).GetObject().(*corev1.Event)
		mu.Lock()
		defer mu.Unlock()
		tries[ev.InvolvedObject.Name]++
		switch {
		case ev.InvolvedObject.Name == "busy" && tries["busy"] == 1:
			return true, nil, apierrors.NewServerTimeout(corev1.Resource("events"), "create", 1)
		case ev.InvolvedObject.Name == "busy" && tries["busy"] == 2:
			return true, nil, apierrors.NewServiceUnavailable("etcd is slow")
		case ev.InvolvedObject.Name == "refused":
			return true, nil, apierrors.NewForbidden(corev1.Resource("events"), "x", errors.New("no"))
		}
		return false, nil, nil
	})
	a, err := NewAlerter(AlerterConfig{Rules: sandboxRule, Events: fakeEvents(client), Burst: 100, RetryBackoff: 10 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	runAlerter(t, a)
	a.Observe(withUID(slowSandbox(), "u-busy", "busy"))
	waitFor(t, "the busy pod's Event", func() bool { return a.Stats().Events == 1 })
	a.Observe(withUID(slowSandbox(), "u-refused", "refused"))
	waitFor(t, "the refusal counted", func() bool { return a.Stats().Failed == 1 })
	mu.Lock()
	defer mu.Unlock()
	if tries["busy"] != 3 || tries["refused"] != 1 {
		t.Errorf("tries %v, want busy 3 (two busy answers, then created), refused 1", tries)
	}
}

// TestAlertMessageNamesTheSlowVolume: a start whose wait before the sandbox
// was a volume's CSI calls names the volume, each step that took 100 ms or
// failed and the driver.
func TestAlertMessageNamesTheSlowVolume(t *testing.T) {
	tl := slowSandbox()
	tl.CriticalPath = []correlator.Step{
		// The claim's provision, before the pod was scheduled: not the
		// alert's window (PodScheduled to PodReadyToStartContainers).
		{Name: correlator.VolumeStepName("data"), Kind: correlator.ShareWaitVolumes, What: "volume data: provisioned in 3.0s (csi.example.dev)", Start: at(1), End: at(30)},
		{Name: correlator.PhaseWaitSandbox, Kind: correlator.ShareWaitSandbox, Start: at(52), End: at(60)},
		{Name: correlator.VolumeStepName("data"), Kind: correlator.ShareWaitVolumes, What: "volume data: NodeStageVolume 300ms (csi.example.dev)", Start: at(60), End: at(360)},
		{Name: correlator.VolumeStepName("data"), Kind: correlator.ShareWaitVolumes, What: "volume data: NodePublishVolume 80ms failed (csi.example.dev)", Start: at(361), End: at(441)},
		// Every pod's token volume: too quick to name.
		{Name: correlator.VolumeStepName("kube-api-access"), Kind: correlator.ShareWaitVolumes, What: "volume kube-api-access: SetUp 10ms (kubernetes.io/projected)", Start: at(441), End: at(451)},
	}
	alerts := CheckAlerts(tl, []AlertRule{{Name: correlator.CondPodReadyToStartContainers, Threshold: 5 * time.Second}})
	want := "waiting before the sandbox 400ms (volume data: NodeStageVolume 300ms (csi.example.dev); volume data: NodePublishVolume 80ms failed (csi.example.dev)), RunPodSandbox"
	if len(alerts) != 1 || !strings.Contains(alerts[0].Message, want) || strings.Contains(alerts[0].Message, "provisioned") {
		t.Errorf("alerts %+v, want a message with %q, without the provision", alerts, want)
	}
}
