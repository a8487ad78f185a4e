package correlator

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/readyline/readyline/collector/event"
)

// TestGoldenRecordingsStripped replays the recordings with every pod
// stripped as the pod watch strips it (event.StripPod) and compares the
// timelines with the golden files, which were made from the pods as the
// API server served them: the fields stripped are none the rules read.
func TestGoldenRecordingsStripped(t *testing.T) {
	recs, err := filepath.Glob("testdata/recordings/*.jsonl")
	if err != nil || len(recs) == 0 {
		t.Fatalf("no recordings in testdata/recordings: %v", err)
	}
	for _, rec := range recs {
		name := strings.TrimSuffix(filepath.Base(rec), ".jsonl")
		t.Run(name, func(t *testing.T) {
			events := readRecording(t, rec)
			stripped := 0
			for _, ev := range events {
				if u, ok := ev.(*event.PodUpdate); ok && u.Pod != nil {
					u.Pod = event.StripPod(u.Pod)
					stripped++
				}
			}
			if stripped == 0 {
				t.Fatal("no pod in the recording")
			}
			c := New(configFor(name))
			var tls []*Timeline
			for _, ev := range events {
				tls = append(tls, c.Handle(ev)...)
			}
			got, err := json.MarshalIndent(append(tls, c.Flush()...), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join("testdata", "golden", name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			if strings.TrimSpace(string(got)) != strings.TrimSpace(string(want)) {
				t.Errorf("the timelines of %s with its %d pods stripped differ from the golden file", rec, stripped)
			}
		})
	}
}

// TestStripPodKeepsAnnotations: the annotations the correlator reads
// survive the strip.
func TestStripPodKeepsAnnotations(t *testing.T) {
	pod := &corev1.Pod{}
	pod.Annotations = map[string]string{
		corev1.MirrorPodAnnotationKey: "891468ad7b25b12fc6c24020a16a3d4a",
		configHashAnnotation:          "891468ad7b25b12fc6c24020a16a3d4a",
		TraceParentAnnotation:         "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"other":                       "x",
	}
	s := event.StripPod(pod)
	if h, ok := mirrorHash(s); !ok || h != "891468ad7b25b12fc6c24020a16a3d4a" || s.Annotations[configHashAnnotation] == "" {
		t.Errorf("mirror hash %q %v", h, ok)
	}
	if traceParent(s) != pod.Annotations[TraceParentAnnotation] {
		t.Errorf("traceparent %q", traceParent(s))
	}
	if len(s.Annotations) != 3 {
		t.Errorf("annotations %v", s.Annotations)
	}
}
