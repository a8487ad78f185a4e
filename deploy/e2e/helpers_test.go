//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testContext returns a context that ends after d or when the test ends.
func testContext(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// safeName is the test's name usable in a namespace or file name: subtests'
// "/" and other punctuation become "-".
func safeName(t *testing.T) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return '-'
	}, t.Name())
}

// newNamespace creates a namespace for the test and deletes it afterwards.
func newNamespace(t *testing.T) string {
	t.Helper()
	prefix := "e2e-" + strings.ToLower(strings.TrimPrefix(safeName(t), "test"))
	if len(prefix) > 40 {
		prefix = prefix[:40]
	}
	ns, err := env.CreateNamespace(testContext(t, time.Minute), prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.DeleteNamespace(context.Background(), ns); err != nil {
			t.Errorf("deleting namespace %s: %v", ns, err)
		}
	})
	return ns
}

// recordPod starts recording pod ns/name; the recording is written to
// artifacts/<test>-<pod>.jsonl when the test ends.
func recordPod(t *testing.T, ns, name string) *PodRecorder {
	t.Helper()
	r, err := RecordPod(context.Background(), env.Client, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r.Stop()
		dir, err := env.ArtifactsDir()
		if err != nil {
			t.Logf("no artifacts dir: %v", err)
			return
		}
		f, err := os.Create(filepath.Join(dir, safeName(t)+"-"+name+".jsonl"))
		if err != nil {
			t.Logf("writing recording: %v", err)
			return
		}
		defer f.Close()
		if err := r.WriteJSONL(f); err != nil {
			t.Logf("writing recording: %v", err)
		}
	})
	return r
}

// applyExample applies deploy/examples/<file> into ns.
func applyExample(t *testing.T, ns, file string) {
	t.Helper()
	if _, err := env.ApplyFile(testContext(t, time.Minute), ns, env.ExamplePath(file)); err != nil {
		t.Fatal(err)
	}
}

// logTimeline logs every recorded event with its offset from the first one.
func logTimeline(t *testing.T, r *PodRecorder) {
	t.Helper()
	events := r.Events()
	if len(events) == 0 {
		return
	}
	t0 := events[0].ObservedAt
	for _, ev := range events {
		t.Logf("%+8.3fs %-8s %s", ev.ObservedAt.Sub(t0).Seconds(), ev.Type, DescribeStatus(ev.Pod))
	}
}
