//go:build e2e

package collector

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/readyline/readyline/collector/event"
)

// withoutEvents hides the runtime's event stream, to test polling against
// the real runtime.
type withoutEvents struct{ RuntimeClient }

func (withoutEvents) GetContainerEvents(context.Context, *runtimeapi.GetEventsRequest, ...grpc.CallOption) (grpc.ServerStreamingClient[runtimeapi.ContainerEventResponse], error) {
	return nil, status.Error(codes.Unimplemented, "hidden by the test")
}

// collected keeps what a source emitted.
type collected struct {
	mu    sync.Mutex
	infos []*event.ContainerInfo
}

func (c *collected) forPod(uid string) []*event.ContainerInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*event.ContainerInfo
	for _, i := range c.infos {
		if i.PodUID == uid {
			out = append(out, i)
		}
	}
	return out
}

func collect(t *testing.T, src *RuntimeSource) *collected {
	c := &collected{}
	out := runRuntimeSource(t, src)
	go func() {
		for info := range out {
			c.mu.Lock()
			c.infos = append(c.infos, info)
			c.mu.Unlock()
		}
	}()
	return c
}

// byContainer groups infos by container name ("" = the sandbox), keeping order.
func byContainer(infos []*event.ContainerInfo) map[string][]*event.ContainerInfo {
	m := map[string][]*event.ContainerInfo{}
	for _, i := range infos {
		m[i.ContainerName] = append(m[i.ContainerName], i)
	}
	return m
}

func states(infos []*event.ContainerInfo) string {
	var s []string
	for _, i := range infos {
		s = append(s, i.State)
	}
	return strings.Join(s, ",")
}

func TestIntegrationRuntime(t *testing.T) {
	node := requireNode(t)
	ns := node.namespace(t)

	streamed, err := NewRuntimeSource(RuntimeConfig{Endpoint: node.CRISocket}, nil)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient("unix://"+node.CRISocket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	polled, err := NewRuntimeSource(RuntimeConfig{Client: withoutEvents{runtimeapi.NewRuntimeServiceClient(conn)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	fromStream, fromPolls := collect(t, streamed), collect(t, polled)
	waitFor(t, 10*time.Second, "both sources connected", func() bool {
		return streamed.Endpoint() != "" && polled.Endpoint() != ""
	})

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pods := node.Client.CoreV1().Pods(ns)
	pod, err := pods.Create(ctx, busyboxPod("cri"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	uid := string(pod.UID)
	for {
		if pod, err = pods.Get(ctx, "cri", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, ok := conditionTrue(pod, corev1.PodReady); ok {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("pod not Ready: %+v", pod.Status)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The poller may be up to a PollInterval behind.
	waitFor(t, 5*time.Second, "the main container running in both sources", func() bool {
		done := func(c *collected) bool {
			for _, i := range c.forPod(uid) {
				if i.ContainerName == "main" && i.State == StateRunning {
					return true
				}
			}
			return false
		}
		return done(fromStream) && done(fromPolls)
	})

	s := byContainer(fromStream.forPod(uid))
	p := byContainer(fromPolls.forPod(uid))
	if got := states(s[""]); got != "ready" {
		t.Errorf("sandbox states from the stream: %s", got)
	}
	if got := states(s["init"]); got != "created,running,exited" {
		t.Errorf("init states from the stream: %s", got)
	}
	if got := states(s["main"]); got != "created,running" {
		t.Errorf("main states from the stream: %s", got)
	}
	if !streamed.Stats().Streaming || polled.Stats().Streaming {
		t.Errorf("streaming: %v and %v", streamed.Stats().Streaming, polled.Stats().Streaming)
	}
	for name, seq := range p {
		seen := map[string]bool{}
		for _, i := range seq {
			if seen[i.State] {
				t.Errorf("polling emitted %s %s twice", name, i.State)
			}
			seen[i.State] = true
		}
	}

	last := func(m map[string][]*event.ContainerInfo, name string) *event.ContainerInfo {
		if len(m[name]) == 0 {
			t.Fatalf("nothing about %q (%d emissions)", name, len(m))
		}
		return m[name][len(m[name])-1]
	}
	sb, ini, main := last(s, ""), last(s, "init"), last(s, "main")
	if !sb.Sandbox || sb.PodName != "cri" || sb.Namespace != ns || sb.PodIP != pod.Status.PodIP || sb.CreatedAt.IsZero() {
		t.Errorf("sandbox: %+v (pod IP %s)", sb, pod.Status.PodIP)
	}
	for _, c := range []*event.ContainerInfo{ini, main} {
		if c.SandboxID != sb.ContainerID || c.PodName != "cri" || c.Namespace != ns || c.Image != "localhost/busybox:local" {
			t.Errorf("%s: %+v", c.ContainerName, c)
		}
		if c.CreatedAt.Before(sb.CreatedAt) || c.StartedAt.Before(c.CreatedAt) {
			t.Errorf("%s: created %v started %v, sandbox created %v", c.ContainerName, c.CreatedAt, c.StartedAt, sb.CreatedAt)
		}
	}
	if ini.ExitCode != 0 || ini.Reason != "Completed" || ini.FinishedAt.Sub(ini.StartedAt) < 900*time.Millisecond ||
		main.CreatedAt.Before(ini.FinishedAt) {
		t.Errorf("init ran %v, exit %d %s; main created %v after init finished",
			ini.FinishedAt.Sub(ini.StartedAt), ini.ExitCode, ini.Reason, main.CreatedAt.Sub(ini.FinishedAt))
	}
	// The runtime's times agree with the API's (whole seconds) and between
	// the two sources.
	for _, cs := range append(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses...) {
		c := last(s, cs.Name)
		if cs.ContainerID != "containerd://"+c.ContainerID {
			t.Errorf("%s: API says %s, CRI %s", cs.Name, cs.ContainerID, c.ContainerID)
		}
		api := cs.State.Running
		apiStarted := time.Time{}
		if api != nil {
			apiStarted = api.StartedAt.Time
		} else if cs.State.Terminated != nil {
			apiStarted = cs.State.Terminated.StartedAt.Time
		}
		if d := c.StartedAt.Sub(apiStarted); d < 0 || d >= time.Second {
			t.Errorf("%s started at %v by the runtime, %v by the API", cs.Name, c.StartedAt, apiStarted)
		}
		pc := last(p, cs.Name)
		if !pc.CreatedAt.Equal(c.CreatedAt) || !pc.StartedAt.Equal(c.StartedAt) || !pc.FinishedAt.Equal(c.FinishedAt) {
			t.Errorf("%s: polling %+v, stream %+v", cs.Name, pc, c)
		}
	}

	if info, err := streamed.Lookup(ctx, main.ContainerID); err != nil || info.ContainerName != "main" {
		t.Errorf("Lookup(main): %+v, %v", info, err)
	}
	// What Lookup and Observe ask for an id the cache does not know: the
	// real runtime's answers match the stream's.
	client := withoutEvents{runtimeapi.NewRuntimeServiceClient(conn)}
	for _, want := range []*event.ContainerInfo{sb, ini, main} {
		got, err := polled.fetch(ctx, client, want.ContainerID)
		got.Time = want.Time
		if err != nil || got != *want {
			t.Errorf("fetch(%s):\n got  %+v, %v\n want %+v", want.ContainerName, got, err, *want)
		}
	}
	if _, err := streamed.Lookup(ctx, strings.Repeat("0", 64)); !errors.Is(err, ErrContainerNotFound) {
		t.Errorf("Lookup(unknown): %v", err)
	}

	var log []string
	for _, i := range fromStream.forPod(uid) {
		what := i.ContainerName
		if i.Sandbox {
			what = "sandbox"
		}
		log = append(log, fmt.Sprintf("%-7s %-8s learned +%-6v created +%-6v started +%-6v finished +%v", what, i.State,
			i.Time.Sub(sb.CreatedAt).Round(time.Millisecond), i.CreatedAt.Sub(sb.CreatedAt).Round(time.Millisecond),
			rel(i.StartedAt, sb.CreatedAt), rel(i.FinishedAt, sb.CreatedAt)))
	}
	t.Logf("runtime %s; stream emissions for pod %s (times from the sandbox's creation):\n  %s",
		streamed.Endpoint(), uid, strings.Join(log, "\n  "))
	t.Logf("stream: %+v", streamed.Stats())
	t.Logf("polling: %+v; polled states: sandbox %s, init %s, main %s", polled.Stats(), states(p[""]), states(p["init"]), states(p["main"]))
	if len(s["init"]) > 1 && len(s["main"]) > 1 {
		t.Logf("emission lag (learned - started), stream: init %v, main %v; polling: main %v",
			s["init"][1].Time.Sub(ini.StartedAt).Round(time.Millisecond), s["main"][1].Time.Sub(main.StartedAt).Round(time.Millisecond),
			last(p, "main").Time.Sub(main.StartedAt).Round(time.Millisecond))
	}
}

func rel(t, base time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Sub(base).Round(time.Millisecond).String()
}
