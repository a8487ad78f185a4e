package collector

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/readyline/readyline/collector/event"
)

// fakeRuntime is an in-memory container runtime implementing the part of
// the CRI RuntimeService that RuntimeSource uses. Its events mimic containerd
// 2.x: every event carries the sandbox's status and the statuses of all
// the sandbox's containers. Safe for concurrent use.
type fakeRuntime struct {
	runtimeapi.UnimplementedRuntimeServiceServer

	mu         sync.Mutex
	sandboxes  map[string]*runtimeapi.PodSandboxStatus
	containers map[string]*runtimeapi.ContainerStatus
	sandboxOf  map[string]string
	subs       map[chan *runtimeapi.ContainerEventResponse]struct{}
	calls      map[string]int

	// noEvents makes GetContainerEvents Unimplemented (polling fallback).
	noEvents bool
	// clock is the runtime's ns clock; it advances 1 ms per change.
	clock  int64
	events int
}

func newFakeRuntime() *fakeRuntime {
	return &fakeRuntime{
		sandboxes:  make(map[string]*runtimeapi.PodSandboxStatus),
		containers: make(map[string]*runtimeapi.ContainerStatus),
		sandboxOf:  make(map[string]string),
		subs:       make(map[chan *runtimeapi.ContainerEventResponse]struct{}),
		calls:      make(map[string]int),
		clock:      time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC).UnixNano(),
	}
}

func (f *fakeRuntime) count(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[method]
}

func (f *fakeRuntime) called(method string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[method]++
}

func (f *fakeRuntime) tick() int64 {
	f.clock += int64(time.Millisecond)
	return f.clock
}

// addSandbox creates a ready sandbox, as RunPodSandbox does.
func (f *fakeRuntime) addSandbox(id, pod, ns, uid string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sandboxes[id] = &runtimeapi.PodSandboxStatus{
		Id:        id,
		Metadata:  &runtimeapi.PodSandboxMetadata{Name: pod, Namespace: ns, Uid: uid},
		State:     runtimeapi.PodSandboxState_SANDBOX_READY,
		CreatedAt: f.tick(),
		Network:   &runtimeapi.PodSandboxNetworkStatus{Ip: "10.244.0.7"},
		Labels:    map[string]string{labelPodName: pod, labelPodNamespace: ns, labelPodUID: uid},
	}
	f.sendLocked(id, id, runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT)
	f.sendLocked(id, id, runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT)
}

func (f *fakeRuntime) stopSandbox(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sandboxes[id].State = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	f.sendLocked(id, id, runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT)
}

func (f *fakeRuntime) createContainer(id, sandboxID, name string, attempt uint32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sb := f.sandboxes[sandboxID]
	f.containers[id] = &runtimeapi.ContainerStatus{
		Id:        id,
		Metadata:  &runtimeapi.ContainerMetadata{Name: name, Attempt: attempt},
		State:     runtimeapi.ContainerState_CONTAINER_CREATED,
		CreatedAt: f.tick(),
		Image:     &runtimeapi.ImageSpec{Image: "localhost/busybox:local"},
		ImageRef:  "sha256:0123",
		Labels: map[string]string{
			labelPodName: sb.Metadata.Name, labelPodNamespace: sb.Metadata.Namespace,
			labelPodUID: sb.Metadata.Uid, labelContainerName: name,
		},
	}
	f.sandboxOf[id] = sandboxID
	f.sendLocked(id, sandboxID, runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT)
}

func (f *fakeRuntime) startContainer(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.containers[id]
	c.State, c.StartedAt = runtimeapi.ContainerState_CONTAINER_RUNNING, f.tick()
	f.sendLocked(id, f.sandboxOf[id], runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT)
}

func (f *fakeRuntime) exitContainer(id string, code int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.containers[id]
	c.State, c.FinishedAt, c.ExitCode, c.Reason = runtimeapi.ContainerState_CONTAINER_EXITED, f.tick(), code, "Error"
	if code == 0 {
		c.Reason = "Completed"
	}
	f.sendLocked(id, f.sandboxOf[id], runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT)
}

func (f *fakeRuntime) removeContainer(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sb := f.sandboxOf[id]
	delete(f.containers, id)
	delete(f.sandboxOf, id)
	f.sendLocked(id, sb, runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT)
}

func (f *fakeRuntime) sendLocked(id, sandboxID string, typ runtimeapi.ContainerEventType) {
	ev := &runtimeapi.ContainerEventResponse{ContainerId: id, ContainerEventType: typ, CreatedAt: f.clock}
	if sb, ok := f.sandboxes[sandboxID]; ok {
		ev.PodSandboxStatus = clone(sb)
	}
	for cid, c := range f.containers {
		if f.sandboxOf[cid] == sandboxID {
			ev.ContainersStatuses = append(ev.ContainersStatuses, clone(c))
		}
	}
	f.events++
	for ch := range f.subs {
		ch <- ev
	}
}

// sent returns how many events the runtime generated.
func (f *fakeRuntime) sent() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.events
}

func clone[T proto.Message](m T) T { return proto.Clone(m).(T) }

func (f *fakeRuntime) Version(context.Context, *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	f.called("Version")
	return &runtimeapi.VersionResponse{RuntimeName: "fake", RuntimeVersion: "v0", RuntimeApiVersion: "v1"}, nil
}

func (f *fakeRuntime) ListPodSandbox(_ context.Context, req *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	f.called("ListPodSandbox")
	f.mu.Lock()
	defer f.mu.Unlock()
	resp := &runtimeapi.ListPodSandboxResponse{}
	for id, sb := range f.sandboxes {
		if want := req.GetFilter().GetId(); want != "" && want != id {
			continue
		}
		resp.Items = append(resp.Items, &runtimeapi.PodSandbox{Id: id, Metadata: sb.Metadata, State: sb.State,
			CreatedAt: sb.CreatedAt, Labels: sb.Labels})
	}
	return resp, nil
}

func (f *fakeRuntime) PodSandboxStatus(_ context.Context, req *runtimeapi.PodSandboxStatusRequest) (*runtimeapi.PodSandboxStatusResponse, error) {
	f.called("PodSandboxStatus")
	f.mu.Lock()
	defer f.mu.Unlock()
	sb, ok := f.sandboxes[req.GetPodSandboxId()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "sandbox %q not found", req.GetPodSandboxId())
	}
	return &runtimeapi.PodSandboxStatusResponse{Status: clone(sb)}, nil
}

func (f *fakeRuntime) ListContainers(_ context.Context, req *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	f.called("ListContainers")
	f.mu.Lock()
	defer f.mu.Unlock()
	resp := &runtimeapi.ListContainersResponse{}
	for id, c := range f.containers {
		if want := req.GetFilter().GetId(); want != "" && want != id {
			continue
		}
		resp.Containers = append(resp.Containers, &runtimeapi.Container{Id: id, PodSandboxId: f.sandboxOf[id],
			Metadata: c.Metadata, Image: c.Image, ImageRef: c.ImageRef, State: c.State, CreatedAt: c.CreatedAt, Labels: c.Labels})
	}
	return resp, nil
}

func (f *fakeRuntime) ContainerStatus(_ context.Context, req *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	f.called("ContainerStatus")
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.containers[req.GetContainerId()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "container %q not found", req.GetContainerId())
	}
	return &runtimeapi.ContainerStatusResponse{Status: clone(c)}, nil
}

func (f *fakeRuntime) GetContainerEvents(_ *runtimeapi.GetEventsRequest, stream grpc.ServerStreamingServer[runtimeapi.ContainerEventResponse]) error {
	f.called("GetContainerEvents")
	if f.noEvents {
		return status.Error(codes.Unimplemented, "method GetContainerEvents not implemented")
	}
	ch := make(chan *runtimeapi.ContainerEventResponse, 100) // as containerd: full, it blocks the runtime
	f.mu.Lock()
	f.subs[ch] = struct{}{}
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.subs, ch)
		f.mu.Unlock()
	}()
	for {
		select {
		case ev := <-ch:
			if err := stream.Send(ev); err != nil {
				return err
			}
		case <-stream.Context().Done():
			return nil
		}
	}
}

// fakeClient calls a fakeRuntime in process, without gRPC. When down is
// set every call fails with Unavailable.
type fakeClient struct {
	rt   *fakeRuntime
	down atomic.Bool
	// failLists makes the list calls fail while Version still answers.
	failLists atomic.Bool
	// slowLists is how many of the next ListContainers calls time out.
	slowLists atomic.Int32
}

func (c *fakeClient) unavailable() error {
	if c.down.Load() {
		return status.Error(codes.Unavailable, "connection refused")
	}
	return nil
}

func (c *fakeClient) Version(ctx context.Context, in *runtimeapi.VersionRequest, _ ...grpc.CallOption) (*runtimeapi.VersionResponse, error) {
	if err := c.unavailable(); err != nil {
		return nil, err
	}
	return c.rt.Version(ctx, in)
}

func (c *fakeClient) ListPodSandbox(ctx context.Context, in *runtimeapi.ListPodSandboxRequest, _ ...grpc.CallOption) (*runtimeapi.ListPodSandboxResponse, error) {
	if err := c.unavailable(); err != nil {
		return nil, err
	}
	if c.failLists.Load() {
		return nil, status.Error(codes.Internal, "sandbox store is broken")
	}
	return c.rt.ListPodSandbox(ctx, in)
}

func (c *fakeClient) PodSandboxStatus(ctx context.Context, in *runtimeapi.PodSandboxStatusRequest, _ ...grpc.CallOption) (*runtimeapi.PodSandboxStatusResponse, error) {
	if err := c.unavailable(); err != nil {
		return nil, err
	}
	return c.rt.PodSandboxStatus(ctx, in)
}

func (c *fakeClient) ListContainers(ctx context.Context, in *runtimeapi.ListContainersRequest, _ ...grpc.CallOption) (*runtimeapi.ListContainersResponse, error) {
	if err := c.unavailable(); err != nil {
		return nil, err
	}
	if c.slowLists.Add(-1) >= 0 {
		return nil, status.Error(codes.DeadlineExceeded, "context deadline exceeded")
	}
	c.slowLists.Store(-1)
	return c.rt.ListContainers(ctx, in)
}

func (c *fakeClient) ContainerStatus(ctx context.Context, in *runtimeapi.ContainerStatusRequest, _ ...grpc.CallOption) (*runtimeapi.ContainerStatusResponse, error) {
	if err := c.unavailable(); err != nil {
		return nil, err
	}
	return c.rt.ContainerStatus(ctx, in)
}

func (c *fakeClient) GetContainerEvents(ctx context.Context, in *runtimeapi.GetEventsRequest, _ ...grpc.CallOption) (grpc.ServerStreamingClient[runtimeapi.ContainerEventResponse], error) {
	if err := c.unavailable(); err != nil {
		return nil, err
	}
	p := &pipeStream{ctx: ctx, ch: make(chan *runtimeapi.ContainerEventResponse), done: make(chan struct{})}
	go func() {
		p.err = c.rt.GetContainerEvents(in, p)
		close(p.done)
	}()
	return p, nil
}

// pipeStream joins a server stream to a client stream in process.
type pipeStream struct {
	ctx  context.Context
	ch   chan *runtimeapi.ContainerEventResponse
	done chan struct{}
	err  error // the server method's result, set before done closes
}

func (p *pipeStream) Send(ev *runtimeapi.ContainerEventResponse) error {
	select {
	case p.ch <- ev:
		return nil
	case <-p.ctx.Done():
		return p.ctx.Err()
	}
}

func (p *pipeStream) Recv() (*runtimeapi.ContainerEventResponse, error) {
	select {
	case ev := <-p.ch:
		return ev, nil
	case <-p.done:
		if p.err != nil {
			return nil, p.err
		}
		return nil, io.EOF
	case <-p.ctx.Done():
		return nil, status.FromContextError(p.ctx.Err()).Err()
	}
}

func (p *pipeStream) Context() context.Context     { return p.ctx }
func (p *pipeStream) SendMsg(any) error            { return nil }
func (p *pipeStream) RecvMsg(any) error            { return nil }
func (p *pipeStream) SetHeader(metadata.MD) error  { return nil }
func (p *pipeStream) SendHeader(metadata.MD) error { return nil }
func (p *pipeStream) SetTrailer(metadata.MD)       {}
func (p *pipeStream) Header() (metadata.MD, error) { return nil, nil }
func (p *pipeStream) Trailer() metadata.MD         { return nil }
func (p *pipeStream) CloseSend() error             { return nil }

// criServer serves a fakeRuntime over gRPC on a unix socket.
type criServer struct {
	path string
	rt   *fakeRuntime
	srv  *grpc.Server
	done chan struct{}
}

// socketPath returns a socket path in a temporary directory; unix socket
// paths must stay under 108 bytes, which t.TempDir() may not.
func socketPath(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "cri")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "runtime.sock")
}

// serveCRI starts serving rt on path until stop or the end of the test.
func serveCRI(t *testing.T, path string, rt *fakeRuntime) *criServer {
	t.Helper()
	os.Remove(path)
	lis, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	s := &criServer{path: path, rt: rt, srv: grpc.NewServer(), done: make(chan struct{})}
	runtimeapi.RegisterRuntimeServiceServer(s.srv, rt)
	go func() {
		defer close(s.done)
		s.srv.Serve(lis)
	}()
	t.Cleanup(s.stop)
	return s
}

func (s *criServer) stop() {
	s.srv.Stop()
	<-s.done
}

// runRuntimeSource runs src until the test ends and returns what it emits.
func runRuntimeSource(t *testing.T, src *RuntimeSource) <-chan *event.ContainerInfo {
	return runSource[*event.ContainerInfo](t, src.Run, 1000)
}
