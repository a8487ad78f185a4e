package exporter

import (
	"bytes"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	cri "github.com/readyline/readyline/collector/event"
	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter/waterfall"
)

// restartsFailedCalls is restarts whose first sandbox needed a retry (a
// failed RunPodSandbox at 53 ms) and whose replacement did too (at 260 ms):
// each failed call belongs to the sandbox that followed it.
func restartsFailedCalls() *correlator.Timeline {
	tl := restarts()
	tl.Pod.Name = "restarts-failed-calls"
	tl.EarlierSandboxes[0].FailedCalls = []correlator.CRICall{{Method: cri.CRIRunPodSandbox, Start: at(53), End: at(57), Err: true}}
	tl.Sandbox.FailedCalls = []correlator.CRICall{{Method: cri.CRIRunPodSandbox, Start: at(260), End: at(290), Err: true}}
	tl.Sandbox.Call = &correlator.CRICall{Method: cri.CRIRunPodSandbox, Start: at(310), End: at(742)}
	tl.Phases[1].End = at(53)                              // pod.wait_sandbox
	tl.Phases[2].Start, tl.Phases[2].End = at(53), at(260) // pod.sandbox_replaced
	tl.Phases[3].Start = at(260)                           // pod.sandbox
	return tl
}

// TestFailedCallsAcrossSandboxes: a failed RunPodSandbox is an Error span
// and a "RunPodSandbox ✗" row under the sandbox it was a try for, the
// replaced one's included, and every span stays inside its parent.
func TestFailedCallsAcrossSandboxes(t *testing.T) {
	tl := restartsFailedCalls()
	spans, _ := exportToMemory(t, TraceConfig{}, tl)
	st := newSpanTree(t, spans)
	replaced := st.child(st.root, correlator.PhaseSandboxReplaced)
	attempt := st.child(replaced, "sandbox attempt 0")
	final := st.child(st.root, correlator.PhaseSandbox)
	for _, parent := range []tracetest.SpanStub{attempt, final} {
		got := st.named(parent, string(cri.CRIRunPodSandbox))
		if len(got) != 2 || got[0].Status.Code != codes.Error || got[1].Status.Code == codes.Error {
			t.Errorf("%s: %d RunPodSandbox spans, want the failed one (Error), then the one that made it", parent.Name, len(got))
		}
	}
	wantInterval(t, attempt, at(53), at(250))
	for _, s := range spans {
		p, ok := st.byID[s.Parent.SpanID()]
		if ok && (s.StartTime.Before(p.StartTime) || s.EndTime.After(p.EndTime)) {
			t.Errorf("span %q outside its parent %q", s.Name, p.Name)
		}
	}

	var buf bytes.Buffer
	if err := waterfall.Render(&buf, tl, 100); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if n := strings.Count(out, "RunPodSandbox ✗"); n != 2 {
		t.Errorf("%d failed RunPodSandbox rows, want 2:\n%s", n, out)
	}
	if i, j := strings.Index(out, "sandbox attempt 0"), strings.Index(out, "pod.sandbox "); i < 0 || j < 0 ||
		!strings.Contains(out[i:j], "RunPodSandbox ✗") || !strings.Contains(out[j:], "RunPodSandbox ✗") {
		t.Errorf("failed rows not under their sandboxes:\n%s", out)
	}
}
