package exporter

import (
	"testing"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/readyline/readyline/correlator"
)

const rtService = "runtime.v1.RuntimeService/"

// kernelTimeline is lifecycleDemo with what the uprobes and the TCP tracer
// add: the CRI calls, CNI plugins, an image pull, probe connections.
func kernelTimeline() *correlator.Timeline {
	tl := lifecycleDemo()
	tl.Sandbox.Call = &correlator.CRICall{Method: rtService + "RunPodSandbox", Start: at(300), End: at(742)}
	// With the call seen, the sandbox phase is the call (correlator phases.go).
	tl.Phases[1].End = at(300)
	tl.Phases[2].Start, tl.Phases[2].Source = at(300), "kernel"
	tl.Sandbox.CNI = []correlator.Process{
		{PID: 901, Filename: "/usr/lib/cni/bridge", Exec: at(400), Exit: at(520), ExitCode: intp(0)},
		{PID: 902, Filename: "/usr/lib/cni/host-local", Exec: at(410), Exit: at(440), ExitCode: intp(0)},
	}
	tl.ImagePulls = []correlator.ImagePull{{Container: "nginx", Image: "nginx:1.27", Ref: "sha256:abc",
		Call: correlator.CRICall{Method: "runtime.v1.ImageService/PullImage", Start: at(15300), End: at(21800)}}}
	a := &tl.Containers[0].Attempts[0]
	a.Calls = []correlator.CRICall{
		{Method: rtService + "CreateContainer", Start: at(4800), End: at(4915)},
		{Method: rtService + "StartContainer", Start: at(4916), End: at(5040)},
	}
	nginx := &tl.Containers[2].Attempts[0]
	nginx.Probes = append(nginx.Probes, correlator.ProbeAttempt{Kind: correlator.ProbeStartup, Handler: "httpGet",
		Start: at(26000), End: at(26002), Result: correlator.ProbeFailure,
		Conn: &correlator.Connection{Daddr: "10.88.0.7", Dport: 80, Result: "refused"}})
	return tl
}

func TestTraceKernelDetail(t *testing.T) {
	spans, _ := exportToMemory(t, TraceConfig{}, kernelTimeline())
	byID := map[trace.SpanID]tracetest.SpanStub{}
	for _, s := range spans {
		byID[s.SpanContext.SpanID()] = s
	}
	parentName := func(s tracetest.SpanStub) string { return byID[s.Parent.SpanID()].Name }
	one := func(name string) tracetest.SpanStub {
		t.Helper()
		var found []tracetest.SpanStub
		for _, s := range spans {
			if s.Name == name {
				found = append(found, s)
			}
		}
		if len(found) != 1 {
			t.Fatalf("%d spans named %q, want 1", len(found), name)
		}
		return found[0]
	}

	run := one(rtService + "RunPodSandbox")
	if parentName(run) != correlator.PhaseSandbox || run.SpanKind != trace.SpanKindClient {
		t.Errorf("RunPodSandbox under %q, kind %v", parentName(run), run.SpanKind)
	}
	wantInterval(t, run, at(300), at(742))
	wantAttrs(t, run, map[string]string{"rpc.method": rtService + "RunPodSandbox", "rpc.system.name": "grpc"})
	for _, name := range []string{"cni bridge", "cni host-local"} {
		if s := one(name); parentName(s) != correlator.PhaseSandbox {
			t.Errorf("%s under %q", name, parentName(s))
		}
	}
	pull := one("image.pull")
	if parentName(pull) != SpanPodStartup {
		t.Errorf("image.pull under %q", parentName(pull))
	}
	wantInterval(t, pull, at(15300), at(21800))
	if s := one("runtime.v1.ImageService/PullImage"); parentName(s) != "image.pull" {
		t.Errorf("PullImage under %q", parentName(s))
	}
	for _, m := range []string{"CreateContainer", "StartContainer"} {
		if s := one(rtService + m); parentName(s) != "init init-regular" {
			t.Errorf("%s under %q", m, parentName(s))
		}
	}
	var refused *tracetest.SpanStub
	for i, s := range spans {
		for _, kv := range s.Attributes {
			if string(kv.Key) == "readyline.tcp.result" && kv.Value.AsString() == "refused" {
				refused = &spans[i]
			}
		}
	}
	if refused == nil || refused.Name != "startupProbe" || refused.Status.Code != codes.Error {
		t.Fatalf("refused probe connection span: %+v", refused)
	}
	wantAttrs(t, *refused, map[string]string{"server.address": "10.88.0.7"})
}
