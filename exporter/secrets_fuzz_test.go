package exporter

import (
	"errors"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	rlevent "github.com/readyline/readyline/collector/event"
	"github.com/readyline/readyline/collector/redact"
	"github.com/readyline/readyline/collector/redact/redacttest"
	"github.com/readyline/readyline/correlator"
)

// plantedPod is the demo recording's pod whose postStart hook and main
// container run sh -c: the planted command goes in both.
const plantedPod = "poststart-demo"

// demoEvents reads demoRecording once.
var demoEvents = sync.OnceValues(func() ([]rlevent.Event, error) {
	f, err := os.Open(demoRecording)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []rlevent.Event
	for r := rlevent.NewReader(f); ; {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, ev)
	}
})

// FuzzSecretsLeaveNoTrace plants a secret (redacttest.Plant: every family,
// at every place of a script) in the demo node's recording where it would
// enter readyline: in the postStart hook's and the main container's
// command of poststart-demo's spec, in the argv the kernel reports for the
// two (cut at cut bytes, at most 512) as the process source hands it on,
// and in the kubelet's ExecSync call for the hook (63 bytes an argument)
// as the kubelet-call source hands it on. It then follows the recording
// through everything that leaves the node: the recording event.Writer
// writes, the correlator's timeline as the API serves it as JSON and as
// the waterfall page, and its OTel spans. None may hold a planted value or
// its first 4 bytes, under --argv=redacted and --argv=none; under
// redacted, the planted command's canary word, no secret, must come
// through (what is no secret is kept, and the check bites), and under none
// it must not (no argument leaves, only programs' names). Its seeds run as
// a test.
func FuzzSecretsLeaveNoTrace(f *testing.F) {
	if demo, err := os.ReadFile(demoRecording); err != nil || redacttest.HasSentinel(string(demo)) {
		f.Fatalf("the demo recording must hold no %s (Leak would take it for a planted value): %v", redacttest.Sentinel, err)
	}
	for family := range redacttest.Families {
		f.Add(uint8(family), uint8(1+family%(len(redacttest.Places)-1)), uint16(512), []byte("s3cr3t-value-of-some-length"), uint64(family*5))
		f.Add(uint8(family), uint8(family), uint16(40+family*7), []byte("another"), uint64(family*11+3))
	}
	f.Fuzz(func(t *testing.T, family, place uint8, cut uint16, value []byte, filler uint64) {
		events, err := demoEvents()
		if err != nil {
			t.Fatal(err)
		}
		p := redacttest.Plant(int(family), int(place), value, filler)
		hasCanary := slices.ContainsFunc(p.Argv, func(a string) bool { return strings.Contains(a, redacttest.Canary) })
		for _, argv := range []redact.Policy{redact.Redacted, redact.ProgramOnly} {
			outputs := leavingTheNode(t, plantIn(t, events, p, int(cut), argv))
			for what, text := range outputs {
				if s, i := redacttest.Leak(text, p.Secrets); s != "" {
					t.Fatalf("--argv=%v, %s (%s): %q left in the %s at %d:\n%s", argv, p.Family, p.Place, s, what, i, around(text, i))
				}
				switch canary := strings.Contains(text, redacttest.Canary); {
				case argv == redact.ProgramOnly && canary:
					t.Fatalf("--argv=none: a planted argument left in the %s: %s", what, around(text, strings.Index(text, redacttest.Canary)))
				case argv == redact.Redacted && hasCanary && !canary && what != "waterfall page":
					t.Fatalf("--argv=redacted: the planted command did not come through the %s", what)
				}
			}
		}
	})
}

// around is text around i.
func around(text string, i int) string {
	return text[max(0, i-200):min(len(text), i+200)]
}

// plantIn returns events with p planted where the sources would hand it
// on under the policy argv.
func plantIn(t *testing.T, events []rlevent.Event, p redacttest.Planted, cut int, argv redact.Policy) []rlevent.Event {
	kernel, truncated := redacttest.Kernel(p.Argv, cut)
	out := make([]rlevent.Event, 0, len(events)+1)
	uid, planted := "", 0
	for _, ev := range events {
		switch e := ev.(type) {
		case *rlevent.PodUpdate:
			if e.Pod == nil || e.Pod.Name != plantedPod {
				break
			}
			u := *e
			u.Pod = e.Pod.DeepCopy()
			c := &u.Pod.Spec.Containers[0]
			c.Command, c.Args = p.Argv, nil
			c.Lifecycle.PostStart.Exec.Command = p.Argv
			argv.StripCommands(u.Pod) // as the pod watch does
			uid, ev = string(u.Pod.UID), &u
		case *rlevent.ProcessExec:
			if uid == "" || e.PodUID != uid || len(e.Argv) != 3 || e.Argv[0] != "sh" {
				break
			}
			x := *e
			x.Argv, x.ArgvTruncated = argv.Argv(kernel), truncated // as the process source does
			if e.Argv[2] == "sleep 15" {                           // the hook, which the kubelet ran with ExecSync
				out = append(out, &rlevent.CRICall{Time: e.Time.Add(-5 * time.Millisecond), End: e.Time.Add(15 * time.Second),
					Method: rlevent.CRIExecSync, ContainerID: e.ContainerID, PodUID: uid,
					Cmd: argv.Argv(redacttest.ExecSync(p.Argv))}) // as the kubelet-call source does
			}
			planted++
			ev = &x
		}
		out = append(out, ev)
	}
	if planted != 2 {
		t.Fatalf("planted in %d processes of %s, want its hook and main container's", planted, plantedPod)
	}
	return out
}

// leavingTheNode takes events through what leaves the node and returns
// its texts: the recording, the planted pod's timeline as the API serves
// it and as the waterfall page, and its spans.
func leavingTheNode(t *testing.T, events []rlevent.Event) map[string]string {
	path := filepath.Join(t.TempDir(), "recording.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := rlevent.NewWriter(f)
	for _, ev := range events {
		if err := w.Write(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := errors.Join(w.Flush(), f.Close()); err != nil {
		t.Fatal(err)
	}
	recording, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	var tl *correlator.Timeline
	for _, x := range replayRecording(t, path) {
		if x.Pod.Name == plantedPod {
			tl = x
		}
	}
	if tl == nil {
		t.Fatalf("no timeline of %s", plantedPod)
	}
	s := NewStore(StoreLimits{Timelines: 8})
	s.Add(tl)
	api := httptest.NewRecorder()
	ServeEveryPod(s.Handler(nil)).ServeHTTP(api, httptest.NewRequest("GET", "/api/v1/timelines/"+tl.Pod.Namespace+"/"+plantedPod, nil))
	_, _, page := getPage(t, uiServer(t, s).URL+"/ui/pods/"+tl.Pod.Namespace+"/"+plantedPod)

	spans, _ := exportToMemory(t, TraceConfig{NodeName: "node"}, tl)
	var texts []string
	for _, sp := range spans {
		texts = append(texts, spanTexts(sp)...)
	}
	return map[string]string{"recording": string(recording), "API's timeline": api.Body.String(),
		"waterfall page": page, "spans": strings.Join(texts, "\n")}
}
