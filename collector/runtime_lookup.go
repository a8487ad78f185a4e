package collector

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/readyline/readyline/collector/event"
)

// What a RuntimeSource answers outside its stream: the runtime asked about
// one container, sandbox or image (the API's lookups, an id seen in a
// cgroup before the stream told of it).

// ErrNoImageSize is returned by ImageSize when the runtime does not tell an
// image's size: it does not know the image, or has no image service.
var ErrNoImageSize = errors.New("the runtime tells no size of the image")

// ImageSize asks the runtime for the size in bytes of image (a reference or
// an image id), the call the kubelet itself makes after a pull
// (pkg/kubelet/images/puller.go GetImageSize: ImageStatus, Image.Size). It
// fails with ErrRuntimeUnavailable while no runtime answers, and is bounded
// by CallTimeout. Safe for concurrent use, also while Run runs.
func (s *RuntimeSource) ImageSize(ctx context.Context, image string) (uint64, error) {
	c := s.conn.Load()
	if c == nil {
		return 0, ErrRuntimeUnavailable
	}
	if c.images == nil {
		return 0, fmt.Errorf("%s: %w", image, ErrNoImageSize)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	r, err := c.images.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: image}})
	if err != nil {
		return 0, fmt.Errorf("image status of %s: %w", image, criError(err))
	}
	if r.GetImage() == nil || r.GetImage().GetSize() == 0 {
		return 0, fmt.Errorf("%s: %w", image, ErrNoImageSize)
	}
	return r.GetImage().GetSize(), nil
}

// Lookup returns what the runtime says about the container or pod sandbox
// id: from the cache when it is known (also after the runtime removed it),
// else from the runtime, which then also updates the cache (Run emits the
// news). It fails with ErrRuntimeUnavailable while Run is not connected,
// and with ErrContainerNotFound for an unknown id. Each call to the runtime
// is bounded by RuntimeConfig.CallTimeout. The result is the caller's.
func (s *RuntimeSource) Lookup(ctx context.Context, id string) (*event.ContainerInfo, error) {
	if info, ok := s.cache.get(id); ok {
		return info, nil
	}
	c := s.conn.Load()
	if c == nil {
		return nil, ErrRuntimeUnavailable
	}
	info, err := s.fetch(ctx, c.client, id)
	if err != nil {
		return nil, err
	}
	stored := s.cache.put(info, s.now())
	s.signal()
	return &stored, nil
}

// Observe tells the source that id was seen elsewhere (a cgroup): when the
// cache does not know it, Run asks the runtime and emits what it learns.
// Observe never blocks; an id already queued is not queued again, and
// when the queue is full the id is dropped (the next list finds it
// anyway).
func (s *RuntimeSource) Observe(id string) {
	if id == "" || s.cache.known(id) {
		return
	}
	s.queuedMu.Lock()
	defer s.queuedMu.Unlock()
	if _, ok := s.queued[id]; ok {
		return
	}
	select {
	case s.observe <- id:
		s.queued[id] = struct{}{}
	default:
		s.observeDropped.Add(1)
	}
}

func (s *RuntimeSource) signal() {
	select {
	case s.dirty <- struct{}{}:
	default:
	}
}

// observed looks up an id the cache does not know.
func (s *RuntimeSource) observed(ctx context.Context, c RuntimeClient, id string) {
	s.queuedMu.Lock()
	delete(s.queued, id)
	s.queuedMu.Unlock()
	now := s.now()
	if s.cache.known(id) || s.cache.missedRecently(id, now) {
		return
	}
	info, err := s.fetch(ctx, c, id)
	switch {
	case errors.Is(err, ErrContainerNotFound):
		s.cache.missed(id, now)
	case err != nil:
		s.logger.Debug("looking up container", "container_id", id, "error", err)
	default:
		s.cache.put(info, now)
	}
}

// fetch asks the runtime about one container or sandbox id.
func (s *RuntimeSource) fetch(ctx context.Context, c RuntimeClient, id string) (event.ContainerInfo, error) {
	s.lookups.Add(1)
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	list, err := c.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{Id: id}})
	if err != nil {
		return event.ContainerInfo{}, fmt.Errorf("listing containers: %w", criError(err))
	}
	for _, ctr := range list.GetContainers() {
		if ctr.GetId() == id {
			return s.containerStatus(ctx, c, ctr, s.now())
		}
	}
	st, err := c.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id})
	if err != nil {
		return event.ContainerInfo{}, fmt.Errorf("asking sandbox status of %s: %w", id, criError(err))
	}
	if st.GetStatus().GetId() == "" {
		return event.ContainerInfo{}, fmt.Errorf("%w: %s", ErrContainerNotFound, id)
	}
	return sandboxInfo(st.GetStatus(), s.now()), nil
}

// containerStatus completes a listed container with its status (the
// start and finish times); if the status is gone, the list's data is used.
func (s *RuntimeSource) containerStatus(ctx context.Context, c RuntimeClient, ctr *runtimeapi.Container, now time.Time) (event.ContainerInfo, error) {
	st, err := c.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: ctr.GetId()})
	switch {
	case status.Code(err) == codes.NotFound:
		return listedContainerInfo(ctr, now), nil
	case err != nil:
		return event.ContainerInfo{}, fmt.Errorf("asking container status of %s: %w", ctr.GetId(), criError(err))
	}
	return containerInfo(st.GetStatus(), ctr.GetPodSandboxId(), now), nil
}
