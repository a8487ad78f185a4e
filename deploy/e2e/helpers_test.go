//go:build e2e

package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// teardownReserve is what of go test's -timeout the tests leave unused:
// room for the cleanups of the tests running when their budget ends
// (putting the node back in its normal mode takes up to 10 min, a CNI
// configuration 2 min), so that they are over before go test's alarm,
// whose panic would skip TestMain's teardown and host check. TestMain's
// own setup and teardown run outside the alarm. The Makefile's test
// target has the arithmetic.
const teardownReserve = 10 * time.Minute

// budgetEnd is when the tests' budget ends: go test's deadline less
// teardownReserve, set by TestMain; zero without a -timeout.
var budgetEnd time.Time

// testTimeout is go test's -timeout (0: none), checked to leave the tests
// something after teardownReserve. Flags must be parsed.
func testTimeout() (time.Duration, error) {
	f := flag.Lookup("test.timeout")
	if f == nil {
		return 0, nil
	}
	timeout, _ := f.Value.(flag.Getter).Get().(time.Duration)
	if timeout > 0 && timeout <= teardownReserve {
		return 0, fmt.Errorf("-timeout %v leaves the tests nothing: it must be more than the %v kept for their cleanups", timeout, teardownReserve)
	}
	return timeout, nil
}

// suiteContext is a context that ends after d, or when the tests' budget
// ends if that is sooner.
func suiteContext(d time.Duration) (context.Context, context.CancelFunc) {
	end := time.Now().Add(d)
	if !budgetEnd.IsZero() && budgetEnd.Before(end) {
		end = budgetEnd
	}
	return context.WithDeadline(context.Background(), end)
}

// testContext returns a context that ends after d, when the tests' budget
// ends, or when the test ends. A test that asks for one with the budget
// spent fails at once: it would not have time to run.
func testContext(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	if !budgetEnd.IsZero() && !time.Now().Before(budgetEnd) {
		t.Fatalf("the tests' budget (go test's -timeout less %v for the cleanups) ended %v ago: not run", teardownReserve, time.Since(budgetEnd).Round(time.Second))
	}
	ctx, cancel := suiteContext(d)
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
	return env.TestNamespace(t, prefix)
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
