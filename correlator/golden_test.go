package correlator

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// goldenConfig is the configuration the recordings were captured with
// (make demo: --start-timeout 40s). Recordings named e2e-* are the e2e
// tests' daemon's (deploy/e2e, --start-timeout 60s), one pod each, cut out
// of its recording by the pod's namespace. Those named gaps-* are e2e
// recordings with sources' statuses written in (synthetic losses and
// outages: gaps_test.go). pulls-node and steps-node are synthetic too,
// written from scenarios (syntheticRecordings): image pulls on a node with
// the serialized puller, and the critical path's steps no other recording
// has (no recording of a real node has a PullImage or a CSI call yet).
var goldenConfig = Config{Timeout: 40 * time.Second}

// configFor is the Config a recording was made with.
func configFor(name string) Config {
	if strings.HasPrefix(name, "e2e-") || strings.HasPrefix(name, "gaps-") {
		return Config{Timeout: 60 * time.Second}
	}
	return goldenConfig
}

// TestGoldenRecordings replays recordings of real pod starts on the local
// node (readyline run --record) and compares the timelines with the golden
// files. Rewrite them with: go test ./correlator -run Golden -update
func TestGoldenRecordings(t *testing.T) {
	recs, err := filepath.Glob("testdata/recordings/*.jsonl")
	if err != nil || len(recs) == 0 {
		t.Fatalf("no recordings in testdata/recordings: %v", err)
	}
	for _, rec := range recs {
		name := strings.TrimSuffix(filepath.Base(rec), ".jsonl")
		t.Run(name, func(t *testing.T) {
			got, err := json.MarshalIndent(replayFile(t, rec, configFor(name)), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "golden", name+".json")
			if *update {
				if err := os.WriteFile(golden, append(got, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if strings.TrimSpace(string(got)) != strings.TrimSpace(string(want)) {
				t.Errorf("timelines of %s differ from %s (rerun with -update after checking the change)", rec, golden)
			}
		})
	}
}

func replayFile(t *testing.T, path string, cfg Config) []*Timeline {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []*Timeline
	if err := New(cfg).Replay(f, func(tl *Timeline) error { out = append(out, tl); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRecordedDemo checks what the recording of the seed's pods on the
// local node must show, independently of the golden file.
func TestRecordedDemo(t *testing.T) {
	tls := map[string]*Timeline{}
	for _, tl := range replayFile(t, "testdata/recordings/demo-node.jsonl", goldenConfig) {
		tls[tl.Pod.Name] = tl
	}
	for name, want := range map[string]Outcome{
		"lifecycle-demo": OutcomeReady, "poststart-demo": OutcomeReady, "init-container-wait-for-service": OutcomeReady,
		"init-container-failure-never": OutcomeFailed, "init-container-failure-retry": OutcomeTimeout,
	} {
		if tls[name] == nil || tls[name].Outcome != want {
			t.Fatalf("%s: %+v, want outcome %s", name, tls[name], want)
		}
	}

	lc := tls["lifecycle-demo"]
	regular := findContainer(t, lc, "init-regular").Attempts[0]
	if d := regular.Process.Exit.Sub(regular.Process.Exec); d < 4950*time.Millisecond || d > 5050*time.Millisecond {
		t.Errorf("init-regular's sh -c 'sleep 5' ran %v by the kernel clock", d)
	}
	sidecar := findContainer(t, lc, "init-sidecar").Attempts[0]
	if !regular.Finished.Before(sidecar.Created) {
		t.Errorf("init-sidecar created %v before init-regular finished %v", sidecar.Created, regular.Finished)
	}
	if len(sidecar.Probes) == 0 || sidecar.Probes[0].Kind != ProbeStartup || sidecar.Probes[0].Handler != "exec" {
		t.Errorf("sidecar probes %+v", sidecar.Probes)
	}
	nginx := findContainer(t, lc, "nginx").Attempts[0]
	if !nginx.Created.After(sidecar.Probes[len(sidecar.Probes)-1].End) {
		t.Errorf("nginx created %v before the sidecar's startupProbe succeeded", nginx.Created)
	}
	if lc.Sandbox == nil || lc.Sandbox.Created.IsZero() || lc.Sandbox.PauseStart.IsZero() || lc.Sandbox.PodIP == "" {
		t.Errorf("sandbox %+v", lc.Sandbox)
	}

	ps := tls["poststart-demo"]
	hook := findContainer(t, ps, "main").Attempts[0].PostStart
	if hook == nil || hook.Inferred || hook.End.Sub(hook.Start) < 14900*time.Millisecond || hook.End.Sub(hook.Start) > 15200*time.Millisecond {
		t.Errorf("postStart %+v, want ~15 s seen in the kernel", hook)
	}
	if lag := findCondition(t, ps, CondContainersReady).Lag(); lag < 14*time.Second || lag > 17*time.Second {
		t.Errorf("ContainersReady lag %v, want ~15 s", lag)
	}

	never := tls["init-container-failure-never"]
	if a := findContainer(t, never, "fail-on-purpose").Attempts; len(a) != 1 || a[0].ExitCode == nil || *a[0].ExitCode != 42 {
		t.Errorf("init-failure-never attempts %+v", a)
	}
	retry := tls["init-container-failure-retry"]
	if a := findContainer(t, retry, "fail-on-purpose").Attempts; len(a) < 3 {
		t.Errorf("init-failure-retry: %d attempts", len(a))
	} else {
		for i, at := range a {
			if at.Process == nil || at.ExitCode == nil || *at.ExitCode != 1 || at.Attempt != i {
				t.Errorf("retry attempt %d: %+v", i, at)
			}
		}
	}
}
