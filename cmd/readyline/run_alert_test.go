package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/readyline/readyline/collector/event"
	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter"
)

func TestRunAlertFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  string // READYLINE_ALERT; "-" leaves it unset
		args []string
		want string
	}{
		{"none", "-", nil, ""},
		{"repeatable flag", "-", []string{"--alert", "PodReadyToStartContainers=5s", "--alert=pod.sandbox=2s"}, "PodReadyToStartContainers=5s,pod.sandbox=2s"},
		{"env defaults", "PodReadyToStartContainers=5s, Ready=1m", nil, "PodReadyToStartContainers=5s,Ready=1m0s"},
		{"a flag replaces its name's default", "PodReadyToStartContainers=5s,Ready=1m", []string{"--alert", "podreadytostartcontainers=2s"}, "Ready=1m0s,PodReadyToStartContainers=2s"},
		{"off removes a default", "PodReadyToStartContainers=5s,Ready=1m", []string{"--alert", "Ready=off"}, "PodReadyToStartContainers=5s"},
		{"empty env", "", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env != "-" {
				t.Setenv("READYLINE_ALERT", tc.env)
			}
			c, err := parseRunConfig(append([]string{"--node-name", "n"}, tc.args...), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.alerts.String(); got != tc.want {
				t.Errorf("alerts %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRunAlertFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  string
		args []string
	}{
		{"unknown name", "", []string{"--alert", "PodScheduled=5s"}},
		{"no duration", "", []string{"--alert", "Ready"}},
		{"no unit", "", []string{"--alert", "Ready=5"}},
		{"bad env", "Ready=5s,Nope=1s", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("READYLINE_ALERT", tc.env)
			if _, err := parseRunConfig(append([]string{"--node-name", "n"}, tc.args...), io.Discard); !errors.Is(err, errUsage) {
				t.Errorf("error %v, want a usage error", err)
			}
		})
	}
}

func TestCNIBinDirsFlag(t *testing.T) {
	c, err := parseRunConfig([]string{"--node-name", "n"}, io.Discard)
	if err != nil || len(c.process.cfg.CNIBinDirs) != 3 || c.process.cfg.CNIBinDirs[1] != "/usr/lib/cni" {
		t.Errorf("default CNI dirs %q, %v", c.process.cfg.CNIBinDirs, err)
	}
	t.Setenv("READYLINE_CNI_BIN_DIRS", "/usr/lib/cni, /var/lib/readyline-node/cnibin/")
	c, err = parseRunConfig([]string{"--node-name", "n"}, io.Discard)
	if err != nil || len(c.process.cfg.CNIBinDirs) != 2 || c.process.cfg.CNIBinDirs[1] != "/var/lib/readyline-node/cnibin" {
		t.Errorf("CNI dirs from the environment: %q, %v", c.process.cfg.CNIBinDirs, err)
	}
	for _, bad := range []string{"/a,/b,/c,/d", "relative/dir", "/var/lib/readyline-node/cni/plugins"} {
		if _, err := parseRunConfig([]string{"--node-name", "n", "--cni-bin-dirs", bad}, io.Discard); !errors.Is(err, errUsage) {
			t.Errorf("--cni-bin-dirs %s: %v, want a usage error", bad, err)
		}
	}
}

// outageEvents is the event stream of a pod seen at its creation whose
// sandbox took sandboxTook, while the pod watch was down from 0.5 s to
// downFor later (zero: no outage): the rest of its status comes once the
// watch is back. The kubelet stamped each condition as it happened.
func outageEvents(sandboxTook, downFor time.Duration) []event.Event {
	const uid = "6f1e2d3c-4b5a-4c6d-8e7f-9a0b1c2d3e4f"
	t0 := time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	sec := func(d time.Duration) metav1.Time { return metav1.NewTime(at(d).Truncate(time.Second)) }
	cond := func(typ corev1.PodConditionType, d time.Duration) corev1.PodCondition {
		return corev1.PodCondition{Type: typ, Status: corev1.ConditionTrue, LastTransitionTime: sec(d)}
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "outage", Namespace: "default", UID: uid, CreationTimestamp: metav1.NewTime(t0)},
		Spec:       corev1.PodSpec{NodeName: "vm", Containers: []corev1.Container{{Name: "app"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{cond(corev1.PodScheduled, 0)}},
	}
	sbEnd := 200*time.Millisecond + sandboxTook
	ready := sbEnd + time.Second
	evs := []event.Event{&event.PodUpdate{Time: at(50 * time.Millisecond), Action: event.PodAdded, Pod: pod.DeepCopy()}}
	if downFor > 0 {
		evs = append(evs, &event.SourceStatus{Time: at(500 * time.Millisecond), Source: event.SourcePodWatch, Reason: "disconnected"})
	}
	evs = append(evs, &event.CRICall{Time: at(200 * time.Millisecond), End: at(sbEnd), Method: event.CRIRunPodSandbox, PodUID: uid, PodSandboxID: "5b00"})
	seen := ready + 100*time.Millisecond
	if downFor > 0 {
		seen = 500*time.Millisecond + downFor + 100*time.Millisecond
	}
	for s := time.Second; s < seen; s += time.Second {
		evs = append(evs, &event.Tick{Time: at(s)})
	}
	if downFor > 0 {
		evs = append(evs, &event.SourceStatus{Time: at(seen - 50*time.Millisecond), Source: event.SourcePodWatch, Up: true})
	}
	pod.Status.Phase = corev1.PodRunning
	pod.Status.StartTime = &pod.CreationTimestamp
	pod.Status.Conditions = append(pod.Status.Conditions, cond(corev1.PodReadyToStartContainers, sbEnd),
		cond(corev1.PodInitialized, 0), cond(corev1.ContainersReady, ready), cond(corev1.PodReady, ready))
	evs = append(evs, &event.PodUpdate{Time: at(seen), Action: event.PodUpdated, Pod: pod})
	for s := seen + time.Second; s < seen+3*time.Second; s += time.Second {
		evs = append(evs, &event.Tick{Time: at(s)})
	}
	return evs
}

// TestOutageNoAlert: through the daemon's delivery (alerter, metrics,
// traces), a start whose status came 60 s late after an outage of the pod
// watch breaks no PodReadyToStartContainers or Ready rule; a sandbox that
// really took 6 s does (the rule is live).
func TestOutageNoAlert(t *testing.T) {
	for _, tc := range []struct {
		name            string
		sandbox, outage time.Duration
		alerts          uint64
	}{
		{"status 60 s late", 400 * time.Millisecond, 60 * time.Second, 0},
		{"slow sandbox, in time", 6 * time.Second, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logger := slog.New(slog.DiscardHandler)
			metrics, err := exporter.NewMetrics(logger)
			if err != nil {
				t.Fatal(err)
			}
			traces, err := exporter.NewTraceExporter(exporter.TraceConfig{Exporter: tracetest.NewInMemoryExporter()}, logger)
			if err != nil {
				t.Fatal(err)
			}
			rules := []exporter.AlertRule{{Name: "PodReadyToStartContainers", Threshold: 5 * time.Second}, {Name: "Ready", Threshold: 30 * time.Second}}
			alerter, err := exporter.NewAlerter(exporter.AlerterConfig{Rules: rules, NodeName: "vm"}, logger)
			if err != nil {
				t.Fatal(err)
			}
			d := &daemon{logger: logger, metrics: metrics, traces: traces, alerter: alerter, store: exporter.NewStore(exporter.StoreLimits{Timelines: 8})}
			c := correlator.New(correlator.Config{})
			n := 0
			for _, ev := range outageEvents(tc.sandbox, tc.outage) {
				for _, tl := range c.Handle(ev) {
					n++
					d.deliver(context.Background(), tl, true)
				}
			}
			if n != 1 {
				t.Fatalf("%d timelines, want 1 (stats %+v)", n, c.Stats())
			}
			if st := alerter.Stats(); st.Alerts != tc.alerts {
				t.Errorf("alerter stats %+v, want %d alerts", st, tc.alerts)
			}
		})
	}
}
