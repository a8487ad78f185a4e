//go:build e2e

package e2e

import (
	"fmt"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/deploy/e2e/jaeger"
)

// The daemon shared by the trace tests: started on first use, stopped by
// TestMain after the tests.
var (
	daemonOnce sync.Once
	daemonRun  *Daemon
	daemonErr  error
)

// readyline returns the shared daemon, started on first use. A test that
// uses it fails if the daemon dies while it runs, or had died before: what
// the test saw may be a dead daemon's (a timeline served before the crash,
// a trace exported before it).
func readyline(t testing.TB) *Daemon {
	t.Helper()
	daemonOnce.Do(func() {
		ctx, cancel := suiteContext(5 * time.Minute)
		defer cancel()
		daemonRun, daemonErr = env.StartDaemon(ctx, "readyline")
	})
	if daemonErr != nil {
		t.Fatal(daemonErr)
	}
	d := daemonRun
	if err := d.Died(); err != nil {
		t.Fatalf("the shared daemon: %v", err)
	}
	t.Cleanup(func() {
		if err := d.Died(); err != nil {
			t.Errorf("the shared daemon died while %s ran: %v", t.Name(), err)
		}
	})
	return d
}

// stopReadyline stops the shared daemon if a test started it.
func stopReadyline() error {
	if daemonRun == nil {
		return nil
	}
	return daemonRun.Stop()
}

// tracedStart is a pod start run by startAndTrace: the pod's namespace,
// its recorded watch, the update in which the start ended, readyline's
// timeline of it (its API) and its trace (Jaeger).
type tracedStart struct {
	ns  string
	rec *PodRecorder
	end PodEvent
	tl  *correlator.Timeline
	tr  *jaeger.Trace
}

// startAndTrace applies an example in a new namespace under the shared
// daemon, waits until done says the pod start is over, and returns it with
// readyline's timeline and trace of it.
func startAndTrace(t *testing.T, example, pod string, done func(*corev1.Pod) bool, minSpans int) *tracedStart {
	t.Helper()
	d := readyline(t)
	ns := newNamespace(t)
	ctx := testContext(t, 4*time.Minute)
	rec := recordPod(t, ns, pod)
	applyExample(t, ns, example)
	ev, err := rec.WaitFor(ctx, done)
	if err != nil {
		t.Fatal(err)
	}
	endAt := time.Now()
	tr, err := env.Jaeger.WaitForTrace(ctx, TraceIDFromPodUID(string(ev.Pod.UID)), minSpans, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	queryable := time.Since(endAt)
	// The trace is exported when the start is delivered, whole: the
	// timeline asked for now is the final one, not a snapshot taken while
	// the daemon still waited for the start's last facts.
	tl, err := d.Timeline(ctx, ns, pod, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if tl.Pod.UID != string(ev.Pod.UID) {
		t.Fatalf("readyline's timeline of %s/%s is of uid %s, the pod's is %s", ns, pod, tl.Pod.UID, ev.Pod.UID)
	}
	t.Logf("%s: %s after %v; trace %s with %d spans, queryable %v after the API showed the end",
		pod, tl.Outcome, tl.End.Sub(tl.Start).Round(time.Millisecond), tr.TraceID, len(tr.Spans), queryable.Round(time.Millisecond))
	return &tracedStart{ns: ns, rec: rec, end: ev, tl: tl, tr: tr}
}

// spanTree indexes a trace's spans.
type spanTree struct {
	t      *testing.T
	tr     *jaeger.Trace
	byID   map[string]jaeger.Span
	parent map[string]string
}

func newSpanTree(t *testing.T, tr *jaeger.Trace) *spanTree {
	st := &spanTree{t: t, tr: tr, byID: map[string]jaeger.Span{}, parent: map[string]string{}}
	for _, s := range tr.Spans {
		st.byID[s.SpanID] = s
		for _, r := range s.References {
			if r.RefType == "CHILD_OF" {
				st.parent[s.SpanID] = r.SpanID
			}
		}
	}
	return st
}

// one returns the only span named op.
func (st *spanTree) one(op string) jaeger.Span {
	st.t.Helper()
	var found []jaeger.Span
	for _, s := range st.tr.Spans {
		if s.OperationName == op {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		st.t.Fatalf("%d spans named %q, want 1", len(found), op)
	}
	return found[0]
}

// children returns the spans named op under parent, in time order.
func (st *spanTree) children(parent jaeger.Span, op string) []jaeger.Span {
	var out []jaeger.Span
	for _, s := range st.tr.Spans {
		if s.OperationName == op && st.parent[s.SpanID] == parent.SpanID {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].StartTime < out[j].StartTime })
	return out
}

func (st *spanTree) child(parent jaeger.Span, op string) jaeger.Span {
	st.t.Helper()
	c := st.children(parent, op)
	if len(c) == 0 {
		st.t.Fatalf("no %q span under %q", op, parent.OperationName)
	}
	return c[0]
}

func start(s jaeger.Span) time.Time { return time.UnixMicro(s.StartTime) }
func end(s jaeger.Span) time.Time   { return time.UnixMicro(s.StartTime + s.Duration) }
func dur(s jaeger.Span) time.Duration {
	return time.Duration(s.Duration) * time.Microsecond
}

func tagString(s jaeger.Span, key string) string {
	v, ok := s.Tag(key)
	if !ok {
		return ""
	}
	return fmt.Sprint(v)
}

func tagFloat(t *testing.T, s jaeger.Span, key string) float64 {
	t.Helper()
	v, ok := s.Tag(key)
	if !ok {
		t.Fatalf("span %q has no tag %s", s.OperationName, key)
	}
	f, err := strconv.ParseFloat(fmt.Sprint(v), 64)
	if err != nil {
		t.Fatalf("span %q tag %s = %v: %v", s.OperationName, key, v, err)
	}
	return f
}

// conditionOrder returns the condition span types in time order;
// conditions observed in the same update keep their usual order.
func (st *spanTree) conditionOrder() []string {
	rank := map[string]int{}
	for i, c := range LifecycleConditions {
		rank[string(c)] = i
	}
	var conds []jaeger.Span
	for _, s := range st.tr.Spans {
		if tagString(s, "readyline.condition.type") != "" && st.parent[s.SpanID] == st.one("pod.startup").SpanID {
			conds = append(conds, s)
		}
	}
	sort.SliceStable(conds, func(i, j int) bool {
		if conds[i].StartTime != conds[j].StartTime {
			return conds[i].StartTime < conds[j].StartTime
		}
		return rank[tagString(conds[i], "readyline.condition.type")] < rank[tagString(conds[j], "readyline.condition.type")]
	})
	var out []string
	for _, s := range conds {
		out = append(out, tagString(s, "readyline.condition.type"))
	}
	return out
}
