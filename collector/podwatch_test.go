package collector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/readyline/readyline/collector/event"
	"github.com/readyline/readyline/collector/redact"
)

// logRecorder is a slog.Handler that keeps every record, for tests that
// count warnings.
type logRecorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (r *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *logRecorder) WithGroup(string) slog.Handler            { return r }
func (r *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records = append(r.records, rec.Clone())
	return nil
}

// messages returns the messages logged at level.
func (r *logRecorder) messages(level slog.Level) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, rec := range r.records {
		if rec.Level == level {
			out = append(out, rec.Message)
		}
	}
	return out
}

// waitFor polls cond until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// runPodWatch runs w until the test ends and returns the emitted updates.
func runPodWatch(t *testing.T, w *PodWatch) <-chan *event.PodUpdate {
	return runSource[*event.PodUpdate](t, w.Run, 100)
}

func next(t *testing.T, ch <-chan *event.PodUpdate) *event.PodUpdate {
	t.Helper()
	select {
	case u := <-ch:
		return u
	case <-time.After(10 * time.Second):
		t.Fatal("no pod update within 10 s")
		return nil
	}
}

// nextIsMarker reads the next update and fails unless it is the add of
// the marker pod a test made after what must not be emitted: the watch
// emits in order, so an update that should not be there comes before the
// marker, however late, instead of after a sleep.
func nextIsMarker(t *testing.T, ch <-chan *event.PodUpdate, marker string) {
	t.Helper()
	if u := next(t, ch); u.Action != event.PodAdded || u.Pod.Name != marker {
		t.Fatalf("unexpected %s of %s (rv %s), want the add of the marker %s", u.Action, u.Pod.Name, u.Pod.ResourceVersion, marker)
	}
}

func testPod(name, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "default", UID: types.UID("uid-" + name),
			Annotations: map[string]string{
				LastAppliedAnnotation:        `{"apiVersion":"v1","kind":"Pod","metadata":{}}`,
				"tracing.k8s.io/traceparent": traceParent,
			},
			Labels:        map[string]string{"app": name},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}},
		},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "localhost/busybox:local",
			Env: []corev1.EnvVar{{Name: "PASSWORD", Value: "hunter2"}}}}},
	}
}

const traceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// checkStripped: p is as event.StripPod makes it.
func checkStripped(t *testing.T, p *corev1.Pod) {
	t.Helper()
	if p.ManagedFields != nil || p.Labels != nil || p.Spec.Containers[0].Env != nil {
		t.Errorf("%s: managedFields, labels or env kept: %+v", p.Name, p)
	}
	if _, ok := p.Annotations[LastAppliedAnnotation]; ok {
		t.Errorf("%s: last-applied annotation kept", p.Name)
	}
	if p.Annotations["tracing.k8s.io/traceparent"] != traceParent || p.Spec.Containers[0].Image != "localhost/busybox:local" {
		t.Errorf("%s: what readyline reads lost: %+v", p.Name, p)
	}
}

func TestNewPodWatchNeedsNodeName(t *testing.T) {
	_, err := NewPodWatch(PodWatchConfig{Pods: fake.NewClientset().CoreV1().Pods("")}, nil)
	if !errors.Is(err, ErrNoNodeName) {
		t.Fatalf("got %v, want ErrNoNodeName", err)
	}
	if !strings.Contains(err.Error(), "NODE_NAME") {
		t.Errorf("error does not say how to fix it: %v", err)
	}
}

func TestPodWatchAddUpdateDelete(t *testing.T) {
	ctx := context.Background()
	existing := testPod("existing", "node1")
	client := fake.NewClientset(existing)
	w, err := NewPodWatch(PodWatchConfig{NodeName: "node1", Pods: client.CoreV1().Pods("")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	out := runPodWatch(t, w)

	u := next(t, out)
	if u.Action != event.PodAdded || u.Pod.Name != "existing" {
		t.Fatalf("initial list: got %s %s", u.Action, u.Pod.Name)
	}
	checkStripped(t, u.Pod)
	waitFor(t, 5*time.Second, "sync", func() bool { return w.Stats().Synced })

	pods := client.CoreV1().Pods("default")
	// The fake clientset does not bump resourceVersions; the API server does.
	p := testPod("web", "node1")
	p.ResourceVersion = "1"
	if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	added := next(t, out)
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}
	p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}
	p.ResourceVersion = "2"
	if _, err := pods.UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	updated := next(t, out)
	if err := pods.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deleted := next(t, out)
	end := time.Now()

	got := []*event.PodUpdate{added, updated, deleted}
	want := []event.PodAction{event.PodAdded, event.PodUpdated, event.PodDeleted}
	for i, u := range got {
		if u.Action != want[i] || u.Pod.Name != "web" {
			t.Errorf("update %d: got %s %s, want %s web", i, u.Action, u.Pod.Name, want[i])
		}
		checkStripped(t, u.Pod)
		if u.Time.Before(start) || u.Time.After(end) {
			t.Errorf("update %d observed at %v, outside [%v, %v]", i, u.Time, start, end)
		}
		if i > 0 && u.Time.Before(got[i-1].Time) {
			t.Errorf("update %d observed before update %d", i, i-1)
		}
	}
	if len(updated.Pod.Status.Conditions) != 1 {
		t.Errorf("update lost the status: %+v", updated.Pod.Status)
	}
	if _, err := event.Marshal(updated); err != nil {
		t.Errorf("PodUpdate does not encode: %v", err)
	}
	marker := testPod("marker", "node1")
	marker.ResourceVersion = "3"
	if _, err := pods.Create(ctx, marker, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	nextIsMarker(t, out, "marker")
	if s := w.Stats(); s.Updates != 5 {
		t.Errorf("stats: %+v, want 5 updates (4 and the marker)", s)
	}
}

func TestPodWatchOtherNodes(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	w, err := NewPodWatch(PodWatchConfig{NodeName: "node1", Pods: client.CoreV1().Pods("")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := runPodWatch(t, w)
	waitFor(t, 5*time.Second, "sync", func() bool { return w.Stats().Synced })
	// The fake clientset ignores field selectors, so this exercises the
	// handler's own check; the selector itself is checked below.
	for _, p := range []*corev1.Pod{testPod("elsewhere", "node2"), testPod("unscheduled", ""), testPod("here", "node1")} {
		if _, err := client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if u := next(t, out); u.Pod.Name != "here" {
		t.Errorf("emitted a pod of another node: %s on %q", u.Pod.Name, u.Pod.Spec.NodeName)
	}
	if _, err := client.CoreV1().Pods("default").Create(ctx, testPod("marker", "node1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	nextIsMarker(t, out, "marker")

	var list, wat int
	for _, a := range client.Actions() {
		if a.GetResource().Resource != "pods" {
			continue
		}
		var sel string
		switch a := a.(type) {
		case k8stesting.ListActionImpl:
			list++
			sel = a.GetListRestrictions().Fields.String()
		case k8stesting.WatchActionImpl:
			wat++
			sel = a.GetWatchRestrictions().Fields.String()
		default:
			continue
		}
		if sel != "spec.nodeName=node1" {
			t.Errorf("%s with field selector %q, want spec.nodeName=node1", a.GetVerb(), sel)
		}
	}
	if list == 0 || wat == 0 {
		t.Errorf("saw %d lists and %d watches of pods, want both", list, wat)
	}
}

func TestNodeSelector(t *testing.T) {
	if got := NodeSelector("n-1.example").String(); got != "spec.nodeName=n-1.example" {
		t.Errorf("got %q", got)
	}
}

func TestPodHandlerTombstone(t *testing.T) {
	var got []*event.PodUpdate
	at := time.Date(2026, 1, 2, 3, 4, 5, 6_000_000, time.UTC)
	h := &podHandler{node: "node1", now: func() time.Time { return at }, logger: slog.New(slog.DiscardHandler),
		skipped: new(atomic.Uint64), out: func(u *event.PodUpdate) { got = append(got, u) }}
	p := testPod("gone", "node1")
	tomb := cache.DeletedFinalStateUnknown{Key: "default/gone", Obj: p}
	if _, err := StripPod(tomb); err != nil {
		t.Fatal(err)
	}
	h.OnDelete(tomb)
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "default/odd", Obj: "not a pod"})
	if len(got) != 1 || got[0].Action != event.PodDeleted || got[0].Pod != p || !got[0].Time.Equal(at) {
		t.Fatalf("got %+v", got)
	}
	checkStripped(t, got[0].Pod)
}

func TestStripPodIdempotent(t *testing.T) {
	p := testPod("p", "n")
	p.Annotations = map[string]string{LastAppliedAnnotation: "{}"}
	for range 2 {
		if obj, err := StripPod(p); err != nil || obj != p {
			t.Fatalf("StripPod = %v, %v", obj, err)
		}
	}
	if p.Annotations != nil || p.ManagedFields != nil || p.Labels != nil {
		t.Errorf("not stripped: %+v", p.ObjectMeta)
	}
	if obj, err := StripPod("x"); obj != "x" || err != nil {
		t.Errorf("non-pod: %v %v", obj, err)
	}
}

// TestPodWatchRelistTombstone breaks the watch with 410 Gone while a pod is
// deleted: the relist must report the delete with the pod's last state and
// must not re-emit the unchanged pod.
func TestPodWatchRelistTombstone(t *testing.T) {
	a, b := testPod("a", "node1"), testPod("b", "node1")
	a.ResourceVersion, b.ResourceVersion = "10", "11"
	var mu sync.Mutex
	lists := [][]corev1.Pod{{*a, *b}, {*a}}
	watchers := make(chan *watch.FakeWatcher, 4)
	client := fake.NewClientset()
	client.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		items := lists[0]
		if len(lists) > 1 {
			lists = lists[1:]
		}
		return true, &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "20"}, Items: items}, nil
	})
	client.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) {
		fw := watch.NewFake()
		watchers <- fw
		return true, fw, nil
	})
	w, err := NewPodWatch(PodWatchConfig{NodeName: "node1", Pods: client.CoreV1().Pods("")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := runPodWatch(t, w)
	for range 2 {
		if u := next(t, out); u.Action != event.PodAdded {
			t.Fatalf("initial list: %s %s", u.Action, u.Pod.Name)
		}
	}
	fw := <-watchers
	expired := apierrors.NewResourceExpired("too old resource version")
	fw.Error(&expired.ErrStatus)
	u := next(t, out)
	if u.Action != event.PodDeleted || u.Pod.Name != "b" {
		t.Fatalf("after relist: got %s %s, want delete b", u.Action, u.Pod.Name)
	}
	checkStripped(t, u.Pod)
	// The relist is over once the watch starts again; the marker it
	// delivers comes after anything the relist emitted.
	marker := testPod("marker", "node1")
	marker.ResourceVersion = "21"
	(<-watchers).Add(marker)
	nextIsMarker(t, out, "marker")
	if s := w.Stats(); s.Skipped != 1 {
		t.Errorf("unchanged pod a: skipped %d, want 1", s.Skipped)
	}
}

// TestPodWatchUnreachable points the watch at a closed port: Run keeps
// retrying with a single Warn and returns promptly when cancelled.
func TestPodWatchUnreachable(t *testing.T) {
	rec := &logRecorder{}
	kc := writeKubeconfig(t, "unreachable", "http://127.0.0.1:1")
	w, err := NewPodWatch(PodWatchConfig{NodeName: "node1", Kubeconfig: kc}, slog.New(rec))
	if err != nil {
		t.Fatalf("NewPodWatch must not contact the API server: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3500*time.Millisecond)
	defer cancel()
	deadline, _ := ctx.Deadline()
	var statuses []*event.SourceStatus
	if err := w.Run(ctx, func(e event.Event) {
		st, ok := e.(*event.SourceStatus)
		if !ok {
			t.Errorf("emitted %v", e)
			return
		}
		statuses = append(statuses, st)
	}); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(statuses) != 1 || statuses[0].Up || statuses[0].Reason != event.ReasonDisconnected || statuses[0].Source != event.SourcePodWatch {
		t.Errorf("statuses %+v, want one Down disconnected", statuses)
	}
	// Once cancelled, Run returns (how soon is the scheduler's to say on
	// a busy machine: the bound only tells a return from a hang).
	if d := time.Since(deadline); d > 10*time.Second {
		t.Errorf("Run took %v to return after cancellation", d)
	}
	warns := rec.messages(slog.LevelWarn)
	if len(warns) != 1 || !strings.Contains(warns[0], "API server unreachable") {
		t.Errorf("warnings: %q, want exactly one", warns)
	}
	if debug := rec.messages(slog.LevelDebug); !contains(debug, "API server still unreachable") {
		t.Errorf("retries not logged at Debug: %q", debug)
	}
	if errs := rec.messages(slog.LevelError); len(errs) != 0 {
		t.Errorf("errors logged (client-go noise?): %q", errs)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestPodWatchRecovers fails the first list: one Warn, then an Info when the
// API server answers, and the pods arrive.
func TestPodWatchRecovers(t *testing.T) {
	rec := &logRecorder{}
	client := fake.NewClientset(testPod("p", "node1"))
	var failed atomic.Bool
	client.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		if failed.CompareAndSwap(false, true) {
			return true, nil, fmt.Errorf("dial tcp 10.96.0.1:443: connect: connection refused")
		}
		return false, nil, nil
	})
	w, err := NewPodWatch(PodWatchConfig{NodeName: "node1", Pods: client.CoreV1().Pods("")}, slog.New(rec))
	if err != nil {
		t.Fatal(err)
	}
	out := runPodWatch(t, w)
	if u := next(t, out); u.Action != event.PodAdded || u.Pod.Name != "p" {
		t.Fatalf("got %s %s", u.Action, u.Pod.Name)
	}
	if warns := rec.messages(slog.LevelWarn); len(warns) != 1 {
		t.Errorf("warnings: %q, want one", warns)
	}
	if !contains(rec.messages(slog.LevelInfo), "API server reachable again: pod updates resume") {
		t.Errorf("no recovery message: %q", rec.messages(slog.LevelInfo))
	}
}

// TestPodWatchStatuses: the watch says when it stops and starts seeing the
// API server: Up when the initial list is delivered (after a Down when the
// first list failed), Down at the first failure of an outage, Up when a
// list or watch is answered again; routine watch ends say nothing.
func TestPodWatchStatuses(t *testing.T) {
	defer func(d time.Duration) { reachRetry = d }(reachRetry)
	reachRetry = 20 * time.Millisecond
	next := func(t *testing.T, out <-chan *event.SourceStatus, want string) {
		t.Helper()
		select {
		case st := <-out:
			got := "up"
			if !st.Up {
				got = "down " + st.Reason
			}
			if st.Source != event.SourcePodWatch || got != want {
				t.Fatalf("status %+v, want %s", *st, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no status within 10 s, want %s", want)
		}
	}
	// Each watch call gets a fake watcher the test can end, or fails when
	// failWatch is set.
	type watches struct {
		watchers  chan *watch.FakeWatcher
		failWatch atomic.Bool
	}
	watchPods := func(client *fake.Clientset) *watches {
		w := &watches{watchers: make(chan *watch.FakeWatcher, 4)}
		client.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) {
			if w.failWatch.CompareAndSwap(true, false) {
				return true, nil, fmt.Errorf("an internal error")
			}
			fw := watch.NewFake()
			w.watchers <- fw
			return true, fw, nil
		})
		return w
	}
	watcher := func(t *testing.T, w *watches) *watch.FakeWatcher {
		t.Helper()
		select {
		case fw := <-w.watchers:
			return fw
		case <-time.After(10 * time.Second):
			t.Fatal("no watch within 10 s")
			return nil
		}
	}
	// noMoreStatus: no status came since the last one, however late it
	// would come: the watch ends and watching again fails, and the next
	// status must be that outage's Down (then its Up).
	noMoreStatus := func(t *testing.T, out <-chan *event.SourceStatus, w *watches) {
		t.Helper()
		w.failWatch.Store(true)
		watcher(t, w).Stop()
		next(t, out, "down disconnected")
		next(t, out, "up")
	}
	t.Run("first list fails", func(t *testing.T) {
		client := fake.NewClientset(testPod("p", "node1"))
		w := watchPods(client)
		var lists atomic.Int32
		client.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
			if lists.Add(1) == 1 {
				return true, nil, fmt.Errorf("dial tcp 10.96.0.1:443: connect: connection refused")
			}
			return false, nil, nil
		})
		pw, err := NewPodWatch(PodWatchConfig{NodeName: "node1", Pods: client.CoreV1().Pods("")}, nil)
		if err != nil {
			t.Fatal(err)
		}
		out := runSource[*event.SourceStatus](t, pw.Run, 10)
		next(t, out, "down disconnected")
		next(t, out, "up")
		noMoreStatus(t, out, w)
	})
	t.Run("watch fails later", func(t *testing.T) {
		client := fake.NewClientset(testPod("p", "node1"))
		w := watchPods(client)
		pw, err := NewPodWatch(PodWatchConfig{NodeName: "node1", Pods: client.CoreV1().Pods("")}, nil)
		if err != nil {
			t.Fatal(err)
		}
		out := runSource[*event.SourceStatus](t, pw.Run, 10)
		next(t, out, "up")
		// The watch ends, which is routine, but watching again fails: an
		// outage, until the API server answers again.
		w.failWatch.Store(true)
		watcher(t, w).Stop()
		next(t, out, "down disconnected")
		next(t, out, "up")
		noMoreStatus(t, out, w)
	})
}

func writeKubeconfig(t *testing.T, name, server string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name+".kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`, server)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRESTConfigPrecedence(t *testing.T) {
	explicit := writeKubeconfig(t, "explicit", "https://explicit:6443")
	env := writeKubeconfig(t, "env", "https://env:6443")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")

	t.Setenv("KUBECONFIG", env)
	for _, tc := range []struct{ path, want string }{{explicit, "https://explicit:6443"}, {"", "https://env:6443"}} {
		cfg, err := RESTConfig(tc.path)
		if err != nil {
			t.Fatalf("RESTConfig(%q): %v", tc.path, err)
		}
		if cfg.Host != tc.want || cfg.UserAgent != "readyline" {
			t.Errorf("RESTConfig(%q): host %q agent %q, want %q", tc.path, cfg.Host, cfg.UserAgent, tc.want)
		}
	}

	t.Setenv("KUBECONFIG", "")
	_, err := RESTConfig("")
	if !errors.Is(err, ErrNoKubeconfig) || !errors.Is(err, rest.ErrNotInCluster) {
		t.Errorf("outside a pod without kubeconfig: %v", err)
	}
	if _, err := RESTConfig(filepath.Join(t.TempDir(), "missing")); err == nil || !strings.Contains(err.Error(), "loading kubeconfig") {
		t.Errorf("missing file: %v", err)
	}
}

// withAttrs returns the records logged at level whose message contains
// text, each as the message and its attributes (key=value).
func (r *logRecorder) withAttrs(level slog.Level, text string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, rec := range r.records {
		if rec.Level != level || !strings.Contains(rec.Message, text) {
			continue
		}
		line := rec.Message
		rec.Attrs(func(a slog.Attr) bool {
			line += " " + a.String()
			return true
		})
		out = append(out, line)
	}
	return out
}

// matching returns the messages logged at level that contain text.
func (r *logRecorder) matching(level slog.Level, text string) []string {
	var out []string
	for _, m := range r.messages(level) {
		if strings.Contains(m, text) {
			out = append(out, m)
		}
	}
	return out
}

// TestPodWatchRetriesInPlace: while the API server refuses connections, the
// list is tried again every reachRetry inside the one call, so the reflector
// never backs off: after 6 refused lists the pods arrive within a second of
// the server's return. Left to the reflector, the back-off after 6 failures
// is 0.8+1.6+3.2+6.4+12.8 s at least.
func TestPodWatchRetriesInPlace(t *testing.T) {
	defer func(d time.Duration) { reachRetry = d }(reachRetry)
	reachRetry = 20 * time.Millisecond
	var lists atomic.Int32
	client := fake.NewClientset(testPod("p", "node1"))
	refused := fmt.Errorf("Get \"https://127.0.0.1:6443/api/v1/pods\": dial tcp 127.0.0.1:6443: connect: %w", errors.New("connection refused"))
	client.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		if lists.Add(1) <= 6 {
			return true, nil, refused
		}
		return false, nil, nil
	})
	w, err := NewPodWatch(PodWatchConfig{NodeName: "node1", Pods: client.CoreV1().Pods("")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	out := runPodWatch(t, w)
	if u := next(t, out); u.Action != event.PodAdded || u.Pod.Name != "p" {
		t.Fatalf("got %s %s, want add p", u.Action, u.Pod.Name)
	}
	// The reflector's own back-off after 6 failures is 24.8 s at least:
	// half of it tells the two apart on any machine, however busy.
	if took := time.Since(start); took > 12*time.Second {
		t.Errorf("the pod arrived %v after 6 refused lists, want the in-place retries' ~120 ms (the reflector's back-off is 25 s)", took)
	}
	if n := lists.Load(); n != 7 {
		t.Errorf("%d lists, want 6 refused and 1 answered", n)
	}
}

// TestPodWatchArgvNone: with --argv=none the watch hands on pods whose
// command lines are their programs' names at most; by default it hands on
// the probes' and hooks' commands whole (what readyline exports of them it
// redacts).
func TestPodWatchArgvNone(t *testing.T) {
	pod := testPod("db", "node1")
	pod.Spec.Containers[0].Command = []string{"/bin/sh", "-c"}
	pod.Spec.Containers[0].Args = []string{"mysqld --password=hunter2"}
	pod.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
		Exec: &corev1.ExecAction{Command: []string{"mysqladmin", "ping", "-phunter2"}}}}
	// The kubelet's message of a failed exec hook quotes its command line twice.
	hookFailed := `Exec lifecycle hook ([sh -c curl -u admin:hunter2 http://x/]) for Container "c" in Pod "default/db(uid-db)" failed - error: command 'sh -c curl -u admin:hunter2 http://x/' exited with 7: , message: ""`
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{
		Waiting: &corev1.ContainerStateWaiting{Reason: "PostStartHookError", Message: hookFailed}}}}
	for _, tc := range []struct {
		argv    redact.Policy
		probe   []string
		message string
	}{
		{redact.Redacted, []string{"mysqladmin", "ping", "-phunter2"}, "curl -u admin:<redacted>"},
		{redact.ProgramOnly, []string{"mysqladmin"}, `hook ([sh <redacted>]) for Container "c" in Pod "default/db(uid-db)" failed - error: command 'sh <redacted>' exited with 7`},
	} {
		t.Run(tc.argv.String(), func(t *testing.T) {
			client := fake.NewClientset(pod.DeepCopy())
			w, err := NewPodWatch(PodWatchConfig{NodeName: "node1", Pods: client.CoreV1().Pods(""), Argv: tc.argv}, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := next(t, runPodWatch(t, w)).Pod
			c := got.Spec.Containers[0]
			if m := got.Status.ContainerStatuses[0].State.Waiting.Message; !strings.Contains(m, tc.message) || strings.Contains(m, "hunter2") {
				t.Errorf("the waiting message %q, want it to hold %q and no secret", m, tc.message)
			}
			if !slices.Equal(c.ReadinessProbe.Exec.Command, tc.probe) {
				t.Errorf("probe %q, want %q", c.ReadinessProbe.Exec.Command, tc.probe)
			}
			if tc.argv == redact.ProgramOnly && (len(c.Command) > 1 || len(c.Args) > 0) {
				t.Errorf("command %q args %q, want a program's name at most", c.Command, c.Args)
			}
		})
	}
}

// TestPodWatchForgetsEndedPods: a pod that ended leaves the watch's cache
// once its update is out (a tenant's thousands of failed pods are not held
// until deleted); its later updates and deletion still come.
func TestPodWatchForgetsEndedPods(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	w, err := NewPodWatch(PodWatchConfig{NodeName: "node1", Pods: client.CoreV1().Pods("")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := runPodWatch(t, w)
	waitFor(t, 5*time.Second, "sync", func() bool { return w.Stats().Synced })
	pods := client.CoreV1().Pods("default")
	for i, name := range []string{"running", "failed"} {
		p := testPod(name, "node1")
		p.ResourceVersion = fmt.Sprint(i + 1)
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		next(t, out)
	}
	failed := testPod("failed", "node1")
	failed.ResourceVersion, failed.Status.Phase, failed.Status.Reason = "3", corev1.PodFailed, "NodeAffinity"
	if _, err := pods.UpdateStatus(ctx, failed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if u := next(t, out); u.Action != event.PodUpdated || u.Pod.Status.Phase != corev1.PodFailed || u.Pod.Status.Reason != "NodeAffinity" {
		t.Fatalf("the failed pod's update: %s %+v", u.Action, u.Pod.Status)
	}
	waitFor(t, 5*time.Second, "the failed pod leaving the cache", func() bool { st := w.Stats(); return st.Forgotten == 1 && st.Cached == 1 })
	// Its deletion is still told.
	if err := pods.Delete(ctx, "failed", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if u := next(t, out); u.Action != event.PodDeleted || u.Pod.Name != "failed" {
		t.Fatalf("after the deletion: %s %s", u.Action, u.Pod.Name)
	}
}
