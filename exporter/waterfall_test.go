package exporter

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/readyline/readyline/correlator"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func TestRenderWaterfallGolden(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tl    *correlator.Timeline
		width int
	}{
		{"lifecycle-demo", lifecycleDemo(), 100},
		{"lifecycle-demo-narrow", lifecycleDemo(), 72},
		{"init-failure-never", initFailureNever(), 100},
		{"poststart-demo", postStartDemo(), 100},
		{"probe-retries", probeRetries(), 100},
		{"restarts", restarts(), 100},
		{"stuck-crashloop", stuckCrashLoop(), 100},
		{"stuck-crashloop-narrow", stuckCrashLoop(), 72},
		{"late-seen", lateSeen(), 100},
		{"blind-sources", blindSources(), 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := RenderWaterfall(&buf, tc.tl, tc.width); err != nil {
				t.Fatal(err)
			}
			for i, line := range strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n") {
				if n := utf8.RuneCountInString(line); n > tc.width {
					t.Errorf("line %d is %d columns wide, more than %d: %q", i+1, n, tc.width, line)
				}
			}
			golden := filepath.Join("testdata", "waterfall-"+tc.name+".txt")
			if *update {
				if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				t.Errorf("waterfall differs from %s (rerun with -update if intended)\n got:\n%s\nwant:\n%s", golden, buf.Bytes(), want)
			}
			// Deterministic: a second rendering is identical.
			var again bytes.Buffer
			if err := RenderWaterfall(&again, tc.tl, tc.width); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf.Bytes(), again.Bytes()) {
				t.Error("two renderings differ")
			}
		})
	}
}

// probeRetries is lifecycle-demo with an init container retried after a
// failure and nginx's startupProbe failing a few times before it succeeds.
func probeRetries() *correlator.Timeline {
	tl := lifecycleDemo()
	tl.Pod.Name = "probe-retries"
	initReg := &tl.Containers[0]
	retry := initReg.Attempts[0]
	first := retry
	first.ContainerID = "f0f0f0f0f0f0"
	first.Created, first.Started, first.Finished = at(1200), at(1300), at(2300)
	first.Process = &correlator.Process{PID: 4100, Filename: "/bin/sh", Argv: []string{"sh", "-c", "exit 1"},
		Exec: at(1290), Exit: at(2290), ExitCode: intp(1)}
	first.ExitCode = intp(1)
	first.NextCreated = at(4912)
	retry.Attempt = 1
	retry.BackOff = at(4912).Sub(at(2290))
	tl.Phases[3].Start = at(1200)
	initReg.Attempts = []correlator.ContainerAttempt{first, retry}
	nginx := &tl.Containers[2].Attempts[0]
	nginx.Probes = nil
	for i := range 4 {
		nginx.Probes = append(nginx.Probes, correlator.ProbeAttempt{
			Kind: correlator.ProbeStartup, Handler: "exec", Start: at(23000 + 1000*i), End: at(23020 + 1000*i),
			Result: correlator.ProbeFailure, ExitCode: intp(1),
		})
	}
	nginx.Probes = append(nginx.Probes,
		correlator.ProbeAttempt{Kind: correlator.ProbeStartup, Handler: "exec", Start: at(27000), End: at(27030), Result: correlator.ProbeSuccess, ExitCode: intp(0)},
		correlator.ProbeAttempt{Kind: correlator.ProbeReadiness, Handler: "exec", Start: at(27040), End: at(27070), Result: correlator.ProbeSuccess, ExitCode: intp(0)},
	)
	tl.Insights = append(tl.Insights, correlator.Insight{Kind: correlator.InsightRetries, Container: "init-regular",
		Duration: 3612 * time.Millisecond, Message: "init-regular needed 2 attempts; the back-off before the second cost 2.6s"})
	return tl
}

// TestWaterfallStaticPod: the header says the pod is static and which
// config hash its node facts carry; its coarse conditions show no lag.
func TestWaterfallStaticPod(t *testing.T) {
	var buf bytes.Buffer
	if err := RenderWaterfall(&buf, staticPod(), 100); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if !strings.Contains(out, "static pod (config hash "+staticHash+")") {
		t.Errorf("no static pod line in\n%s", out)
	}
	if strings.Contains(out, "saw this pod from") {
		t.Errorf("a static pod seen from its start says it was seen late:\n%s", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "  Ready ") && (!strings.Contains(line, "coarse") || strings.Contains(line, string(glyphLag))) {
			t.Errorf("coarse Ready row %q: want \"coarse\" and no lag", line)
		}
	}
}

// restarts is probe-retries whose first sandbox died (the kubelet made a
// second one and started everything again) and whose nginx was killed once
// by its livenessProbe (SIGKILL: no exit code, signal 9).
func restarts() *correlator.Timeline {
	tl := probeRetries()
	tl.Pod.Name = "restarts"
	tl.EarlierSandboxes = []correlator.Sandbox{{ID: "0ld5andb0x", Created: at(100), Ready: at(180), Ended: at(250),
		Call: &correlator.CRICall{Method: "runtime.v1.RuntimeService/RunPodSandbox", Start: at(60), End: at(180)},
		CNI:  []correlator.Process{{PID: 880, Filename: "/usr/lib/cni/bridge", Exec: at(90), Exit: at(150), ExitCode: intp(0)}}}}
	tl.Sandbox.Attempt = 1
	tl.Phases[1].End = at(60)
	tl.Phases = append(tl.Phases[:2], append([]correlator.Phase{{Name: correlator.PhaseSandboxReplaced, Start: at(60), End: at(310), Source: "kernel"}}, tl.Phases[2:]...)...)
	nginx := &tl.Containers[2]
	killed := nginx.Attempts[0]
	killed.ContainerID = "k111ed"
	killed.Created, killed.Started = at(21880), at(21990)
	killed.Process = &correlator.Process{PID: 5000, Filename: "/bin/busybox", Exec: at(22004), Exit: at(24000), Signal: 9}
	killed.Finished, killed.ExitCode, killed.Reason, killed.KilledBy = at(24000), intp(137), "Error", correlator.ProbeLiveness
	killed.Probes, killed.ReadyObserved, killed.StartedObserved = []correlator.ProbeAttempt{
		{Kind: correlator.ProbeLiveness, Handler: "exec", Start: at(22500), End: at(22510), Result: correlator.ProbeFailure, ExitCode: intp(1)},
		{Kind: correlator.ProbeLiveness, Handler: "exec", Start: at(23000), End: at(23010), Result: correlator.ProbeFailure, ExitCode: intp(1)},
		{Kind: correlator.ProbeLiveness, Handler: "exec", Start: at(23500), End: at(23510), Result: correlator.ProbeFailure, ExitCode: intp(1)},
	}, time.Time{}, time.Time{}
	again := nginx.Attempts[0]
	again.Attempt, again.BackOff = 1, at(24500).Sub(at(24000))
	again.Created, again.Started = at(24500), at(24600)
	again.Process = &correlator.Process{PID: 5100, Filename: "/bin/busybox", Exec: at(24610)}
	again.Probes = nil
	for _, p := range nginx.Attempts[0].Probes {
		if p.Start.After(again.Started) {
			again.Probes = append(again.Probes, p)
		}
	}
	nginx.Attempts = []correlator.ContainerAttempt{killed, again}
	tl.Insights = append(tl.Insights, correlator.Insight{Kind: correlator.InsightSandboxChanged, Duration: 250 * time.Millisecond,
		Message: "sandbox changed: all containers restarted (the first sandbox was replaced; 250ms from the first sandbox to the final one)"})
	return tl
}
