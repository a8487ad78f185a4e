package collector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/readyline/readyline/collector/event"
)

func nextInfo(t *testing.T, ch <-chan *event.ContainerInfo) *event.ContainerInfo {
	t.Helper()
	select {
	case info := <-ch:
		return info
	case <-time.After(5 * time.Second):
		t.Fatal("no ContainerInfo within 5 s")
		return nil
	}
}

// noMoreInfo fails the test if an emission waits in ch. It proves nothing
// after a sleep (a wrong emission may come later): call it once a positive
// marker says everything before it was emitted, such as a poll that
// finished after the last change (emissions come from Run's goroutine,
// in order).
func noMoreInfo(t *testing.T, ch <-chan *event.ContainerInfo) {
	t.Helper()
	select {
	case info := <-ch:
		t.Fatalf("unexpected emission: %s %s", info.ContainerID, info.State)
	default:
	}
}

// expectMarker adds a sandbox and expects its emission next: emissions come
// in order from Run's goroutine, so one that should not have been made
// before it fails here, however late it came. Needs the event stream
// subscribed.
func expectMarker(t *testing.T, rt *fakeRuntime, ch <-chan *event.ContainerInfo, id string) {
	t.Helper()
	rt.addSandbox(id, "marker", "ns", "uid-"+id)
	expect(t, ch, id, StateReady)
}

// expect reads the next emission and checks its id and state.
func expect(t *testing.T, ch <-chan *event.ContainerInfo, id, state string) *event.ContainerInfo {
	t.Helper()
	info := nextInfo(t, ch)
	if info.ContainerID != id || info.State != state {
		t.Fatalf("got %s %s, want %s %s", info.ContainerID, info.State, id, state)
	}
	return info
}

func TestContainerInfoMapping(t *testing.T) {
	now := time.Date(2026, 11, 30, 6, 0, 1, 0, time.UTC)
	created := time.Date(2026, 11, 30, 6, 0, 0, 123456789, time.UTC)
	st := &runtimeapi.ContainerStatus{
		Id:         "c1",
		Metadata:   &runtimeapi.ContainerMetadata{Name: "meta-name", Attempt: 2},
		State:      runtimeapi.ContainerState_CONTAINER_EXITED,
		CreatedAt:  created.UnixNano(),
		StartedAt:  created.Add(time.Millisecond).UnixNano(),
		FinishedAt: created.Add(5 * time.Second).UnixNano(),
		ExitCode:   3,
		Reason:     "Error",
		Image:      &runtimeapi.ImageSpec{Image: "localhost/busybox:local"},
		Labels: map[string]string{labelPodUID: "uid-1", labelPodName: "web", labelPodNamespace: "ns",
			labelContainerName: "init"},
	}
	want := event.ContainerInfo{Time: now, ContainerID: "c1", SandboxID: "s1", PodUID: "uid-1", PodName: "web",
		Namespace: "ns", ContainerName: "init", Attempt: 2, State: StateExited, CreatedAt: created,
		StartedAt: created.Add(time.Millisecond), FinishedAt: created.Add(5 * time.Second), ExitCode: 3,
		Reason: "Error", Image: "localhost/busybox:local"}
	if got := containerInfo(st, "s1", now); !reflect.DeepEqual(got, want) {
		t.Errorf("exited container:\n got  %+v\n want %+v", got, want)
	}

	// A running container has no exit code yet, whatever the field says;
	// without labels the metadata's name is used.
	st.State, st.FinishedAt, st.Labels = runtimeapi.ContainerState_CONTAINER_RUNNING, 0, nil
	got := containerInfo(st, "s1", now)
	if got.State != StateRunning || got.ExitCode != 0 || !got.FinishedAt.IsZero() || got.ContainerName != "meta-name" {
		t.Errorf("running container: %+v", got)
	}

	sb := &runtimeapi.PodSandboxStatus{
		Id:        "s1",
		Metadata:  &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "ns", Uid: "uid-1", Attempt: 1},
		State:     runtimeapi.PodSandboxState_SANDBOX_READY,
		CreatedAt: created.UnixNano(),
		Network:   &runtimeapi.PodSandboxNetworkStatus{Ip: "10.244.0.5"},
	}
	wantSB := event.ContainerInfo{Time: now, ContainerID: "s1", Sandbox: true, SandboxID: "s1", PodUID: "uid-1",
		PodName: "web", Namespace: "ns", Attempt: 1, State: StateReady, CreatedAt: created, PodIP: "10.244.0.5"}
	if got := sandboxInfo(sb, now); !reflect.DeepEqual(got, wantSB) {
		t.Errorf("sandbox:\n got  %+v\n want %+v", got, wantSB)
	}

	// The encoding keeps ns precision.
	b, err := event.Marshal(&want)
	if err != nil {
		t.Fatal(err)
	}
	back, err := event.Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, &want) {
		t.Errorf("round trip of %s:\n got %+v", b, back)
	}
	if !strings.Contains(string(b), `"created_at":"2026-11-30T06:00:00.123456789Z"`) {
		t.Errorf("ns timestamps lost: %s", b)
	}
	if !nsTime(0).IsZero() {
		t.Error("nsTime(0) is not the zero time")
	}
}

func TestNewRuntimeSourceEndpoint(t *testing.T) {
	for in, want := range map[string]string{
		"/run/containerd/containerd.sock":                           "unix:///run/containerd/containerd.sock",
		"unix:///var/lib/readyline-node/containerd/containerd.sock": "unix:///var/lib/readyline-node/containerd/containerd.sock",
		"tcp://127.0.0.1:1234":                                      "",
		"run/containerd.sock":                                       "",
		"unix://relative.sock":                                      "",
		"npipe:////./pipe/containerd-containerd":                    "",
		"":                                                          "",
	} {
		s, err := NewRuntimeSource(RuntimeConfig{Endpoint: in}, nil)
		switch {
		case want == "" && in != "":
			if !errors.Is(err, ErrBadCRIEndpoint) {
				t.Errorf("%q: got %v, want ErrBadCRIEndpoint", in, err)
			}
		case err != nil:
			t.Errorf("%q: %v", in, err)
		case s.cfg.Endpoint != want:
			t.Errorf("%q: endpoint %q, want %q", in, s.cfg.Endpoint, want)
		}
	}
}

// TestRuntimePacedResync: with its event stream running, a paced source
// lists everything every ResyncInterval only while a pod start is open,
// and not again within runtimeIdleResync while none is.
func TestRuntimePacedResync(t *testing.T) {
	rt := newFakeRuntime()
	path := socketPath(t)
	serveCRI(t, path, rt)
	src, err := NewRuntimeSource(RuntimeConfig{Endpoint: path, ResyncInterval: 20 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	src.pace = NewPace()
	out := runRuntimeSource(t, src)
	waitFor(t, 5*time.Second, "event subscription", func() bool { return rt.count("GetContainerEvents") == 1 })
	expectMarker(t, rt, out, "sb-marker") // the stream is followed
	time.Sleep(300 * time.Millisecond)    // 15 resync ticks
	if n := src.Stats().Resyncs; n != 1 {
		t.Fatalf("%d lists with no start open, want the first alone", n)
	}
	src.pace.SetFast(true)
	waitFor(t, 5*time.Second, "lists every ResyncInterval with a start open", func() bool { return src.Stats().Resyncs >= 4 })
}

// TestRuntimeEventStream follows a pod's life over a real gRPC connection on a
// unix socket, from the runtime's event stream.
func TestRuntimeEventStream(t *testing.T) {
	rt := newFakeRuntime()
	path := socketPath(t)
	serveCRI(t, path, rt)
	rec := &logRecorder{}
	src, err := NewRuntimeSource(RuntimeConfig{Endpoint: path, ResyncInterval: time.Hour}, slog.New(rec))
	if err != nil {
		t.Fatal(err)
	}
	// One sandbox exists before Run: the first list reports it.
	rt.addSandbox("sb-old", "old", "ns", "uid-old")
	out := runRuntimeSource(t, src)
	expect(t, out, "sb-old", StateReady)
	waitFor(t, 5*time.Second, "event subscription", func() bool { return rt.count("GetContainerEvents") == 1 })

	rt.addSandbox("sb1", "web", "ns", "uid-1")
	sb := expect(t, out, "sb1", StateReady)
	if !sb.Sandbox || sb.PodUID != "uid-1" || sb.PodName != "web" || sb.PodIP != "10.244.0.7" || sb.CreatedAt.IsZero() {
		t.Errorf("sandbox: %+v", sb)
	}
	rt.createContainer("c1", "sb1", "app", 0)
	created := expect(t, out, "c1", StateCreated)
	rt.startContainer("c1")
	running := expect(t, out, "c1", StateRunning)
	rt.createContainer("c2", "sb1", "sidecar", 0) // events for c2 carry c1's status again
	expect(t, out, "c2", StateCreated)
	rt.exitContainer("c1", 7)
	exited := expect(t, out, "c1", StateExited)
	rt.removeContainer("c1")
	rt.stopSandbox("sb1")
	expect(t, out, "sb1", StateNotReady)
	expectMarker(t, rt, out, "sb-marker")

	for _, info := range []*event.ContainerInfo{created, running, exited} {
		if info.SandboxID != "sb1" || info.PodUID != "uid-1" || info.PodName != "web" || info.Namespace != "ns" ||
			info.ContainerName != "app" || info.Image != "localhost/busybox:local" {
			t.Errorf("%s: ids and names: %+v", info.State, info)
		}
	}
	if !created.StartedAt.IsZero() || running.StartedAt.Before(running.CreatedAt) || running.StartedAt.IsZero() {
		t.Errorf("timestamps: created %+v running %+v", created, running)
	}
	if exited.ExitCode != 7 || exited.Reason != "Error" || !exited.FinishedAt.After(exited.StartedAt) ||
		!exited.StartedAt.Equal(running.StartedAt) {
		t.Errorf("exit: %+v", exited)
	}

	// Removed, c1 is still known.
	info, err := src.Lookup(context.Background(), "c1")
	if err != nil || info.State != StateExited {
		t.Errorf("Lookup of a removed container: %+v, %v", info, err)
	}
	st := src.Stats()
	if !st.Streaming || st.Resyncs != 1 || st.Events == 0 || st.Emitted != 8 { // 7 and the marker
		t.Errorf("stats: %+v", st)
	}
	if w := rec.messages(slog.LevelWarn); len(w) != 0 {
		t.Errorf("warnings: %q", w)
	}
	if got := src.Endpoint(); got != "unix://"+path {
		t.Errorf("Endpoint() = %q", got)
	}
}

// TestRuntimePollingFallback: a runtime without GetContainerEvents is listed
// every PollInterval, and each state is emitted once however many polls.
func TestRuntimePollingFallback(t *testing.T) {
	rt := newFakeRuntime()
	rt.noEvents = true
	rec := &logRecorder{}
	src, err := NewRuntimeSource(RuntimeConfig{Client: &fakeClient{rt: rt}, PollInterval: 10 * time.Millisecond}, slog.New(rec))
	if err != nil {
		t.Fatal(err)
	}
	out := runRuntimeSource(t, src)
	waitFor(t, 5*time.Second, "polling", func() bool { return src.Stats().Resyncs >= 3 })
	if !contains(rec.messages(slog.LevelInfo), "container runtime has no event stream (GetContainerEvents); polling") {
		t.Errorf("fallback not logged: %q", rec.messages(slog.LevelInfo))
	}

	rt.addSandbox("sb1", "web", "ns", "uid-1")
	expect(t, out, "sb1", StateReady)
	rt.createContainer("c1", "sb1", "app", 0)
	expect(t, out, "c1", StateCreated)
	rt.startContainer("c1")
	running := expect(t, out, "c1", StateRunning)
	if running.StartedAt.IsZero() || running.SandboxID != "sb1" || running.ContainerName != "app" {
		t.Errorf("running: %+v", running)
	}
	statusCalls := rt.count("ContainerStatus")
	polls := src.Stats().Resyncs
	// Resyncs counts a poll as it begins: polls+5 begun, polls+4 done.
	waitFor(t, 5*time.Second, "more polls", func() bool { return src.Stats().Resyncs >= polls+5 })
	noMoreInfo(t, out)
	if n := rt.count("ContainerStatus"); n != statusCalls {
		t.Errorf("%d status calls for an unchanged container", n-statusCalls)
	}

	// A container that starts and exits between two polls is reported once,
	// exited, with all its times.
	rt.createContainer("c2", "sb1", "job", 1)
	rt.startContainer("c2")
	rt.exitContainer("c2", 0)
	c2 := expect(t, out, "c2", StateExited)
	if c2.Attempt != 1 || c2.StartedAt.IsZero() || c2.FinishedAt.IsZero() || c2.Reason != "Completed" {
		t.Errorf("c2: %+v", c2)
	}
	if src.Stats().Streaming {
		t.Error("Stats says streaming")
	}

	// Removed while polled: marked gone, still answered, not re-emitted.
	rt.removeContainer("c1")
	polls = src.Stats().Resyncs
	waitFor(t, 5*time.Second, "a poll", func() bool { return src.Stats().Resyncs >= polls+2 })
	if info, err := src.Lookup(context.Background(), "c1"); err != nil || info.State != StateRunning {
		t.Errorf("removed c1: %+v %v", info, err)
	}
	noMoreInfo(t, out)
}

// TestRuntimeLookup: unknown ids are asked from the runtime and then cached;
// Run emits what Lookup learned.
func TestRuntimeLookup(t *testing.T) {
	rt := newFakeRuntime()
	rt.noEvents = true
	src, err := NewRuntimeSource(RuntimeConfig{Client: &fakeClient{rt: rt}, PollInterval: time.Hour}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := src.Lookup(ctx, "c1"); !errors.Is(err, ErrRuntimeUnavailable) {
		t.Errorf("Lookup before Run: %v", err)
	}
	out := runRuntimeSource(t, src)
	waitFor(t, 5*time.Second, "connection", func() bool { return src.Endpoint() != "" })

	rt.addSandbox("sb1", "web", "ns", "uid-1")
	rt.createContainer("c1", "sb1", "app", 0)
	rt.startContainer("c1")
	info, err := src.Lookup(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if info.SandboxID != "sb1" || info.PodUID != "uid-1" || info.State != StateRunning || info.StartedAt.IsZero() {
		t.Errorf("Lookup(c1) = %+v", info)
	}
	info.PodName = "changed by the caller"
	calls := rt.count("ContainerStatus") + rt.count("ListContainers")
	again, err := src.Lookup(ctx, "c1")
	if err != nil || again.PodName != "web" {
		t.Errorf("cached Lookup: %+v, %v", again, err)
	}
	if n := rt.count("ContainerStatus") + rt.count("ListContainers"); n != calls {
		t.Errorf("cache hit called the runtime %d times", n-calls)
	}
	expect(t, out, "c1", StateRunning)

	sb, err := src.Lookup(ctx, "sb1")
	if err != nil || !sb.Sandbox || sb.PodIP == "" {
		t.Errorf("Lookup(sb1) = %+v, %v", sb, err)
	}
	expect(t, out, "sb1", StateReady)
	if _, err := src.Lookup(ctx, "nope"); !errors.Is(err, ErrContainerNotFound) {
		t.Errorf("Lookup(nope): %v", err)
	}
}

// TestRuntimeObserve: an id seen in a cgroup first is looked up and emitted
// without waiting for the next list; unknown ids are not asked again at
// once.
func TestRuntimeObserve(t *testing.T) {
	rt := newFakeRuntime()
	rt.noEvents = true
	src, err := NewRuntimeSource(RuntimeConfig{Client: &fakeClient{rt: rt}, PollInterval: time.Hour}, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := runRuntimeSource(t, src)
	waitFor(t, 5*time.Second, "connection", func() bool { return src.Endpoint() != "" })
	rt.addSandbox("sb1", "web", "ns", "uid-1")
	rt.createContainer("c1", "sb1", "app", 0)
	src.Observe("c1")
	if info := expect(t, out, "c1", StateCreated); info.SandboxID != "sb1" {
		t.Errorf("observed: %+v", info)
	}
	src.Observe("c1") // known: nothing to do
	src.Observe("")
	lookups := src.Stats().Lookups
	src.Observe("ghost")
	src.Observe("ghost")
	src.Observe("ghost")
	// Run handles observed ids in order: once c2, observed after the
	// ghosts, is out, every ghost was handled, and anything they emitted
	// came before it.
	rt.createContainer("c2", "sb1", "sidecar", 0)
	src.Observe("c2")
	expect(t, out, "c2", StateCreated)
	if n := src.Stats().Lookups - lookups; n != 2 {
		t.Errorf("%d lookups for three observations of ghost and one of c2, want 2: ghost once", n)
	}
}

func TestRuntimeObserveNeverBlocks(t *testing.T) {
	src, err := NewRuntimeSource(RuntimeConfig{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Nobody runs the source: an Observe that waited for room would hang
	// here; each one past the queue's 256 returns, dropped and counted.
	for i := range 1000 {
		src.Observe(fmt.Sprint(i))
	}
	if src.Stats().ObserveDropped != 1000-256 {
		t.Errorf("dropped %d", src.Stats().ObserveDropped)
	}
}

// TestRuntimeObserveQueuesAnIDOnce: the processes of a hundred new containers,
// each naming its container before the runtime's word on it is in, take a
// place in the queue per container, not per process (bench-node's churn
// filled the queue of 256 and dropped lookups).
func TestRuntimeObserveQueuesAnIDOnce(t *testing.T) {
	src, err := NewRuntimeSource(RuntimeConfig{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		for c := range 100 {
			src.Observe(fmt.Sprint("container-", c))
		}
	}
	if n, dropped := len(src.observe), src.Stats().ObserveDropped; n != 100 || dropped != 0 {
		t.Errorf("20 processes each of 100 containers: %d ids queued, %d dropped; want 100 and 0", n, dropped)
	}
}

// TestRuntimeDown: a runtime that is not there costs one Warn, however
// many retries; when it comes, everything is reported; when it goes away
// again and returns, the cache spares duplicate emissions.
func TestRuntimeDown(t *testing.T) {
	rt := newFakeRuntime()
	rt.addSandbox("sb1", "web", "ns", "uid-1")
	rt.createContainer("c1", "sb1", "app", 0)
	path := socketPath(t)
	rec := &logRecorder{}
	// A call would wait CallTimeout: a minute, far beyond what a busy
	// machine makes of the moment Lookup takes when it calls nothing.
	const callTimeout = time.Minute
	src, err := NewRuntimeSource(RuntimeConfig{Endpoint: path, RetryInterval: 10 * time.Millisecond, ResyncInterval: time.Hour,
		CallTimeout: callTimeout}, slog.New(rec))
	if err != nil {
		t.Fatal(err)
	}
	out := runRuntimeSource(t, src)
	waitFor(t, 5*time.Second, "retries", func() bool { return len(rec.messages(slog.LevelDebug)) >= 3 })
	warns := rec.messages(slog.LevelWarn)
	if len(warns) != 1 || !strings.Contains(warns[0], "container names and runtime timestamps are lost") {
		t.Fatalf("warnings while down: %q", warns)
	}
	start := time.Now()
	if _, err := src.Lookup(context.Background(), "c1"); !errors.Is(err, ErrRuntimeUnavailable) || time.Since(start) > callTimeout/2 {
		t.Errorf("Lookup while down: %v after %v", err, time.Since(start))
	}

	srv := serveCRI(t, path, rt)
	expect(t, out, "sb1", StateReady)
	expect(t, out, "c1", StateCreated)
	// The list's news is handed over before Up (and its log line).
	waitFor(t, 5*time.Second, "the recovery message", func() bool {
		return contains(rec.messages(slog.LevelInfo), "container runtime reachable again")
	})
	waitFor(t, 5*time.Second, "event subscription", func() bool { return rt.count("GetContainerEvents") == 1 })

	// The runtime restarts; meanwhile c1 starts.
	srv.stop()
	rt.startContainer("c1")
	waitFor(t, 5*time.Second, "the second outage", func() bool { return len(rec.messages(slog.LevelWarn)) == 2 })
	serveCRI(t, path, rt)
	expect(t, out, "c1", StateRunning)
	waitFor(t, 5*time.Second, "event subscription", func() bool { return rt.count("GetContainerEvents") == 2 })
	expectMarker(t, rt, out, "sb-marker")
	if n := len(rec.messages(slog.LevelWarn)); n != 2 {
		t.Errorf("%d warnings for two outages", n)
	}
}

func TestRuntimeAutoDetect(t *testing.T) {
	rt := newFakeRuntime()
	path := socketPath(t)
	serveCRI(t, path, rt)
	defaults := DefaultCRIEndpoints
	t.Cleanup(func() { DefaultCRIEndpoints = defaults })
	DefaultCRIEndpoints = []string{"unix://" + path + ".missing", "unix://" + path}

	src, err := NewRuntimeSource(RuntimeConfig{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	runRuntimeSource(t, src)
	waitFor(t, 5*time.Second, "detection", func() bool { return src.Endpoint() == "unix://"+path })

	// Nothing answers: the error names ErrRuntimeUnavailable.
	DefaultCRIEndpoints = []string{"unix://" + path + ".missing"}
	_, err = src.connect(context.Background())
	if !errors.Is(err, ErrRuntimeUnavailable) {
		t.Errorf("connect: %v", err)
	}
}

func TestRuntimeCacheNeverGoesBack(t *testing.T) {
	c := newRuntimeCache(10, time.Minute)
	now := time.Now()
	info := func(state string) event.ContainerInfo {
		return event.ContainerInfo{ContainerID: "c1", SandboxID: "", State: state}
	}
	c.put(event.ContainerInfo{ContainerID: "c1", SandboxID: "sb1", State: StateCreated}, now)
	c.put(info(StateExited), now)
	c.put(info(StateRunning), now) // a stale event
	var got []string
	for _, i := range c.take() {
		got = append(got, i.State+"/"+i.SandboxID)
	}
	if !reflect.DeepEqual(got, []string{"exited/sb1"}) {
		t.Errorf("emitted %v", got)
	}
	c.put(info(StateExited), now)
	if more := c.take(); len(more) != 0 {
		t.Errorf("re-emitted %+v", more)
	}

	// A sandbox: notready before ready is not final; after ready it is.
	sb := func(state string) event.ContainerInfo {
		return event.ContainerInfo{ContainerID: "s", Sandbox: true, State: state}
	}
	got = nil
	for _, st := range []string{StateNotReady, StateReady, StateNotReady, StateReady} {
		c.put(sb(st), now)
		for _, i := range c.take() {
			got = append(got, i.State)
		}
	}
	if !reflect.DeepEqual(got, []string{"notready", "ready", "notready"}) {
		t.Errorf("sandbox emitted %v", got)
	}
}

func TestRuntimeCacheEviction(t *testing.T) {
	c := newRuntimeCache(3, time.Minute)
	t0 := time.Now()
	for i := range 5 {
		c.put(event.ContainerInfo{ContainerID: fmt.Sprint("c", i), State: StateRunning}, t0)
	}
	if c.len() != 5 {
		t.Fatalf("live entries evicted: %d left", c.len())
	}
	c.markGone("c3", t0.Add(2*time.Second))
	c.markGone("c1", t0.Add(time.Second))
	c.markGone("c0", t0.Add(3*time.Second))
	c.evict(t0.Add(4 * time.Second))
	for id, want := range map[string]bool{"c1": false, "c3": false, "c0": true, "c2": true, "c4": true} {
		if c.known(id) != want {
			t.Errorf("%s cached: %v, want %v", id, !want, want)
		}
	}
	c.evict(t0.Add(2 * time.Minute)) // c0 removed longer than the TTL ago
	if c.known("c0") || !c.known("c2") {
		t.Error("TTL eviction")
	}

	// Entries not listed by a resync are marked gone.
	c.markUnseen(t0.Add(time.Hour), t0.Add(time.Hour))
	c.evict(t0.Add(time.Hour + 2*time.Minute))
	if c.len() != 0 {
		t.Errorf("%d entries left", c.len())
	}

	for i := range maxMisses + 10 {
		c.missed(fmt.Sprint(i), t0)
	}
	if len(c.misses) > maxMisses {
		t.Errorf("misses unbounded: %d", len(c.misses))
	}
}

func BenchmarkRuntimeLookupCacheHit(b *testing.B) {
	src, err := NewRuntimeSource(RuntimeConfig{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	ids := make([]string, 500)
	for i := range ids {
		ids[i] = fmt.Sprintf("%064x", i)
		src.cache.put(event.ContainerInfo{ContainerID: ids[i], PodUID: "uid", PodName: "web", Namespace: "ns",
			ContainerName: "app", State: StateRunning, CreatedAt: now, StartedAt: now}, now)
	}
	ctx := context.Background()
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if _, err := src.Lookup(ctx, ids[i%len(ids)]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				if _, err := src.Lookup(ctx, ids[i%len(ids)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	})
}

// TestRuntimeSlowConsumerNeverBlocksTheRuntime: containerd blocks its
// container operations while a subscriber does not read its events (the fake
// does the same). With emit stuck, the runtime must still make progress; the
// events that did not fit are dropped and a resync reports the final states.
// TestRuntimeStatuses: the source says when it stops and starts seeing the
// runtime, once per outage: Down "disconnected" while nothing answers (from
// the start, and when the runtime goes away), Up once it has listed
// everything again.
func TestRuntimeStatuses(t *testing.T) {
	rt := newFakeRuntime()
	rt.addSandbox("sb1", "web", "ns", "uid-1")
	path := socketPath(t)
	rec := &logRecorder{}
	src, err := NewRuntimeSource(RuntimeConfig{Endpoint: path, RetryInterval: 10 * time.Millisecond, ResyncInterval: time.Hour}, slog.New(rec))
	if err != nil {
		t.Fatal(err)
	}
	out := runSource[*event.SourceStatus](t, src.Run, 100)
	next := func(want string) *event.SourceStatus {
		t.Helper()
		select {
		case st := <-out:
			got := "up"
			if !st.Up {
				got = "down " + st.Reason
			}
			if st.Source != event.SourceRuntime || got != want {
				t.Fatalf("status %+v, want %s of %s", *st, want, event.SourceRuntime)
			}
			return st
		case <-time.After(5 * time.Second):
			t.Fatalf("no status within 5 s, want %s", want)
			return nil
		}
	}
	next("down disconnected")
	srv := serveCRI(t, path, rt)
	next("up")
	waitFor(t, 5*time.Second, "event subscription", func() bool { return rt.count("GetContainerEvents") == 1 })
	srv.stop()
	down := next("down disconnected")
	// Retries (each logged at Debug) say no more: three of them, not a
	// sleep, so a wrong status cannot come after the look.
	retries := len(rec.messages(slog.LevelDebug))
	waitFor(t, 5*time.Second, "retries", func() bool { return len(rec.messages(slog.LevelDebug)) >= retries+3 })
	select {
	case st := <-out:
		t.Fatalf("status %+v during one outage, want one Down", *st)
	default:
	}
	serveCRI(t, path, rt)
	if up := next("up"); !up.Time.After(down.Time) {
		t.Errorf("Up at %v, not after the Down at %v", up.Time, down.Time)
	}
}

func TestRuntimeSlowConsumerNeverBlocksTheRuntime(t *testing.T) {
	rt := newFakeRuntime()
	path := socketPath(t)
	serveCRI(t, path, rt)
	src, err := NewRuntimeSource(RuntimeConfig{Endpoint: path, ResyncInterval: time.Hour}, nil)
	if err != nil {
		t.Fatal(err)
	}
	unblock := make(chan struct{})
	out := make(chan *event.ContainerInfo, 10000)
	var mu sync.Mutex
	var statuses []*event.SourceStatus
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- src.Run(ctx, func(e event.Event) {
			<-unblock
			if st, ok := e.(*event.SourceStatus); ok {
				mu.Lock()
				statuses = append(statuses, st)
				mu.Unlock()
				return
			}
			out <- e.(*event.ContainerInfo)
		})
	}()
	var unblocked sync.Once
	release := func() { unblocked.Do(func() { close(unblock) }) }
	defer func() {
		release()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	waitFor(t, 5*time.Second, "event subscription", func() bool { return rt.count("GetContainerEvents") == 1 })

	// Small pods: each event carries the statuses of all of a pod's containers.
	const n = 1500
	start := time.Now()
	changed := make(chan struct{})
	go func() {
		defer close(changed)
		for i := range n {
			sb, id := fmt.Sprint("sb", i/3), fmt.Sprint("c", i)
			if i%3 == 0 {
				rt.addSandbox(sb, sb, "ns", "uid-"+sb)
			}
			rt.createContainer(id, sb, id, 0)
			rt.startContainer(id)
		}
	}()
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("the runtime is held back by a slow reader: its changes took over 10 s")
	}
	waitFor(t, 10*time.Second, "drops", func() bool { return src.Stats().EventsDropped > 0 })
	release()

	running := map[string]bool{}
	for len(running) < n {
		info := nextInfo(t, out)
		if info.State == StateRunning {
			running[info.ContainerID] = true
		}
	}
	st := src.Stats()
	if st.Resyncs < 2 {
		t.Errorf("no resync after drops: %+v", st)
	}
	// The source said it fell behind: each stream_behind Down, with the
	// events dropped, is followed by an Up once the list caught up.
	waitFor(t, 5*time.Second, "the source to catch up", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(statuses) > 0 && statuses[len(statuses)-1].Up
	})
	mu.Lock()
	defer mu.Unlock()
	var lost uint64
	behind := 0
	for i, s := range statuses {
		if s.Up || s.Reason != event.ReasonStreamBehind {
			continue
		}
		behind++
		lost += s.Lost
		if s.Since.IsZero() || s.Since.After(s.Time) {
			t.Errorf("stream_behind %+v: want Since its first dropped event", *s)
		}
		if i+1 >= len(statuses) || !statuses[i+1].Up {
			t.Errorf("stream_behind %+v not followed by Up", *s)
		}
	}
	if behind == 0 || lost > st.EventsDropped {
		t.Errorf("%d stream_behind statuses, %d events said lost of %d dropped", behind, lost, st.EventsDropped)
	}
	t.Logf("%d runtime events in %v with emit blocked; %+v; %d stream_behind statuses", rt.sent(), time.Since(start).Round(time.Millisecond), st, behind)
}

// TestRuntimeAnswersButCannotList: Version alone does not make a
// runtime usable; failing lists are one outage with one Warn, not a
// Warn/Info pair per retry.
func TestRuntimeAnswersButCannotList(t *testing.T) {
	rt := newFakeRuntime()
	rt.addSandbox("sb1", "web", "ns", "uid-1")
	client := &fakeClient{rt: rt}
	client.failLists.Store(true)
	rec := &logRecorder{}
	src, err := NewRuntimeSource(RuntimeConfig{Client: client, RetryInterval: 5 * time.Millisecond}, slog.New(rec))
	if err != nil {
		t.Fatal(err)
	}
	out := runRuntimeSource(t, src)
	waitFor(t, 5*time.Second, "retries", func() bool { return rt.count("Version") >= 4 })
	client.failLists.Store(false)
	expect(t, out, "sb1", StateReady)
	// The list's news is handed over before Up (and its log line).
	waitFor(t, 5*time.Second, "the reachable-again log", func() bool { return len(rec.messages(slog.LevelInfo)) > 0 })
	warns, infos := rec.messages(slog.LevelWarn), rec.messages(slog.LevelInfo)
	if len(warns) != 1 || !strings.Contains(warns[0], "container runtime unavailable") {
		t.Errorf("warnings: %q", warns)
	}
	if !reflect.DeepEqual(infos, []string{"container runtime reachable again"}) {
		t.Errorf("infos: %q", infos)
	}
}

// TestRuntimeSlowListKeepsTheStream: one periodic list that times out while
// the event stream goes on (a runtime busy with a burst of pod starts) keeps
// the connection and the source up; two in a row count as the runtime lost.
func TestRuntimeSlowListKeepsTheStream(t *testing.T) {
	rt := newFakeRuntime()
	client := &fakeClient{rt: rt}
	rec := &logRecorder{}
	src, err := NewRuntimeSource(RuntimeConfig{Client: client, ResyncInterval: 20 * time.Millisecond, RetryInterval: 5 * time.Millisecond}, slog.New(rec))
	if err != nil {
		t.Fatal(err)
	}
	out := runRuntimeSource(t, src)
	waitFor(t, 5*time.Second, "event subscription", func() bool { return rt.count("GetContainerEvents") == 1 })
	rt.addSandbox("sb1", "web", "ns", "uid-1")
	expect(t, out, "sb1", StateReady)
	waitFor(t, 5*time.Second, "the stream in use", func() bool { return src.Stats().Streaming })

	client.slowLists.Store(1)
	waitFor(t, 5*time.Second, "a slow list", func() bool { return src.Stats().SlowLists == 1 })
	resyncs := src.Stats().Resyncs
	waitFor(t, 5*time.Second, "the next list", func() bool { return src.Stats().Resyncs > resyncs+1 })
	rt.createContainer("c1", "sb1", "app", 0)
	expect(t, out, "c1", StateCreated)
	if n := rt.count("GetContainerEvents"); n != 1 {
		t.Errorf("the stream was opened %d times, want once: one slow list dropped the connection", n)
	}
	if w := rec.messages(slog.LevelWarn); len(w) != 0 {
		t.Errorf("warnings after one slow list: %q", w)
	}
	if !slices.ContainsFunc(rec.messages(slog.LevelInfo), func(m string) bool { return strings.HasPrefix(m, "container runtime slow to list") }) {
		t.Errorf("no log of the slow list: %q", rec.messages(slog.LevelInfo))
	}

	client.slowLists.Store(2)
	waitFor(t, 5*time.Second, "a new connection and stream", func() bool { return rt.count("GetContainerEvents") == 2 })
	if n := src.Stats().SlowLists; n != 2 {
		t.Errorf("SlowLists %d, want 2 (one tolerated each time)", n)
	}
}

// fakeImages answers ImageStatus from a map of image -> size.
type fakeImages map[string]uint64

func (f fakeImages) ImageStatus(_ context.Context, req *runtimeapi.ImageStatusRequest, _ ...grpc.CallOption) (*runtimeapi.ImageStatusResponse, error) {
	size, ok := f[req.GetImage().GetImage()]
	if !ok {
		return &runtimeapi.ImageStatusResponse{}, nil // the CRI's answer for an image it does not have
	}
	return &runtimeapi.ImageStatusResponse{Image: &runtimeapi.Image{Id: req.GetImage().GetImage(), Size: size}}, nil
}

// TestRuntimeImageSize: ImageSize is the runtime's ImageStatus size, an error
// for an image it does not have, for a runtime without an image service,
// and before Run connected.
func TestRuntimeImageSize(t *testing.T) {
	rt := newFakeRuntime()
	rt.noEvents = true
	src, err := NewRuntimeSource(RuntimeConfig{Client: &fakeClient{rt: rt}, Images: fakeImages{"sha256:big": 270587074}, PollInterval: time.Hour}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := src.ImageSize(ctx, "sha256:big"); !errors.Is(err, ErrRuntimeUnavailable) {
		t.Errorf("ImageSize before Run: %v, want ErrRuntimeUnavailable", err)
	}
	runRuntimeSource(t, src)
	waitFor(t, 5*time.Second, "connection", func() bool { return src.Endpoint() != "" })
	if size, err := src.ImageSize(ctx, "sha256:big"); err != nil || size != 270587074 {
		t.Errorf("ImageSize(sha256:big) = %d, %v; want 270587074", size, err)
	}
	if size, err := src.ImageSize(ctx, "sha256:gone"); !errors.Is(err, ErrNoImageSize) {
		t.Errorf("ImageSize of an image the runtime lacks = %d, %v; want ErrNoImageSize", size, err)
	}

	noImages, err := NewRuntimeSource(RuntimeConfig{Client: &fakeClient{rt: rt}, PollInterval: time.Hour}, nil)
	if err != nil {
		t.Fatal(err)
	}
	runRuntimeSource(t, noImages)
	waitFor(t, 5*time.Second, "connection", func() bool { return noImages.Endpoint() != "" })
	if _, err := noImages.ImageSize(ctx, "sha256:big"); !errors.Is(err, ErrNoImageSize) {
		t.Errorf("ImageSize without an image service: %v, want ErrNoImageSize", err)
	}
}
