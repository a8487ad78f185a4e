package waterfall

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/readyline/readyline/correlator"
)

// TestRowsCarryTheStepNames: every step of the critical path is on a row
// of the same Name (the HTML page marks the path on its rows by it), for
// the correlator's golden timelines, which together have every kind of
// step: the rows take the step names from the correlator, so a name
// changed on one side only fails here.
func TestRowsCarryTheStepNames(t *testing.T) {
	goldens, err := filepath.Glob("../../correlator/testdata/golden/*.json")
	if err != nil || len(goldens) == 0 {
		t.Fatalf("no golden timelines in correlator/testdata/golden: %v", err)
	}
	// The kinds of step, each of which some golden timeline must have.
	kinds := map[string]func(string) bool{}
	for _, name := range []string{correlator.PhaseSchedule, correlator.PhaseWaitSandbox, correlator.PhaseSandboxReplaced,
		correlator.PhaseSandbox, correlator.SandboxCallsStepName, correlator.BackOffStepName} {
		kinds[name] = func(s string) bool { return s == name }
	}
	for _, prefix := range []string{
		correlator.ContainerStepName(correlator.KindInit, ""), correlator.ContainerStepName(correlator.KindSidecar, ""),
		correlator.ContainerStepName(correlator.KindMain, ""), correlator.PostStartStepName(""),
		correlator.ImagePullStepName(""), correlator.ImagePullWaitStepName(""), correlator.ImagePullBackOffStepName(""),
		correlator.VolumeStepName(""), correlator.ReadinessGateStepName(""),
	} {
		kinds[prefix+"…"] = func(s string) bool { return strings.HasPrefix(s, prefix) }
	}
	seen := map[string]bool{}
	for _, path := range goldens {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var tls []*correlator.Timeline
		if err := json.Unmarshal(b, &tls); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for i, tl := range tls {
			rows := map[string]bool{}
			for _, r := range NewChart(tl).Rows {
				rows[r.Name] = true
			}
			for _, s := range tl.CriticalPath {
				for kind, is := range kinds {
					if is(s.Name) {
						seen[kind] = true
					}
				}
				// Two steps have no row: a readiness gate's wait (the gate
				// is an instant on the conditions' row named by its type)
				// and a crash-loop back-off still waiting at the end (the
				// chart has back-offs between attempts, and the container's
				// waiting reason).
				gate := strings.HasPrefix(s.Name, correlator.ReadinessGateStepName(""))
				waiting := s.Name == correlator.BackOffStepName && s.End.Equal(tl.End)
				if !rows[s.Name] && !gate && !waiting {
					t.Errorf("%s, timeline %d (%s): no row named %q, the name of its critical path's step %s",
						filepath.Base(path), i, tl.Pod, s.Name, s.Kind)
				}
			}
		}
	}
	for kind := range kinds {
		if !seen[kind] {
			t.Errorf("no golden timeline has a step %q: the test no longer covers it", kind)
		}
	}
}
