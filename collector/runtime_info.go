package collector

import (
	"cmp"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/readyline/readyline/collector/event"
)

// The runtime's answers turned into event.ContainerInfo.

// nsTime converts the runtime's ns timestamps; 0 means not set.
func nsTime(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}

func containerState(st runtimeapi.ContainerState) string {
	switch st {
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		return StateCreated
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return StateRunning
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		return StateExited
	}
	return StateUnknown
}

func sandboxState(st runtimeapi.PodSandboxState) string {
	if st == runtimeapi.PodSandboxState_SANDBOX_READY {
		return StateReady
	}
	return StateNotReady
}

// containerInfo maps a container's status; the status does not name the
// sandbox, so the caller passes it.
func containerInfo(st *runtimeapi.ContainerStatus, sandboxID string, now time.Time) event.ContainerInfo {
	l := st.GetLabels()
	info := event.ContainerInfo{
		Time:          now,
		ContainerID:   st.GetId(),
		SandboxID:     sandboxID,
		PodUID:        l[labelPodUID],
		PodName:       l[labelPodName],
		Namespace:     l[labelPodNamespace],
		ContainerName: cmp.Or(l[labelContainerName], st.GetMetadata().GetName()),
		Attempt:       st.GetMetadata().GetAttempt(),
		State:         containerState(st.GetState()),
		CreatedAt:     nsTime(st.GetCreatedAt()),
		StartedAt:     nsTime(st.GetStartedAt()),
		FinishedAt:    nsTime(st.GetFinishedAt()),
		Reason:        st.GetReason(),
		Image:         cmp.Or(st.GetImage().GetImage(), st.GetImageRef()),
	}
	if info.State == StateExited {
		info.ExitCode = st.GetExitCode()
	}
	return info
}

// listedContainerInfo maps a list entry: no start or finish times.
func listedContainerInfo(c *runtimeapi.Container, now time.Time) event.ContainerInfo {
	l := c.GetLabels()
	return event.ContainerInfo{
		Time:          now,
		ContainerID:   c.GetId(),
		SandboxID:     c.GetPodSandboxId(),
		PodUID:        l[labelPodUID],
		PodName:       l[labelPodName],
		Namespace:     l[labelPodNamespace],
		ContainerName: cmp.Or(l[labelContainerName], c.GetMetadata().GetName()),
		Attempt:       c.GetMetadata().GetAttempt(),
		State:         containerState(c.GetState()),
		CreatedAt:     nsTime(c.GetCreatedAt()),
		Image:         cmp.Or(c.GetImage().GetImage(), c.GetImageRef()),
	}
}

func sandboxInfo(st *runtimeapi.PodSandboxStatus, now time.Time) event.ContainerInfo {
	m, l := st.GetMetadata(), st.GetLabels()
	return event.ContainerInfo{
		Time:        now,
		ContainerID: st.GetId(),
		Sandbox:     true,
		SandboxID:   st.GetId(),
		PodUID:      cmp.Or(m.GetUid(), l[labelPodUID]),
		PodName:     cmp.Or(m.GetName(), l[labelPodName]),
		Namespace:   cmp.Or(m.GetNamespace(), l[labelPodNamespace]),
		Attempt:     m.GetAttempt(),
		State:       sandboxState(st.GetState()),
		CreatedAt:   nsTime(st.GetCreatedAt()),
		PodIP:       st.GetNetwork().GetIp(),
	}
}

func listedSandboxInfo(sb *runtimeapi.PodSandbox, now time.Time) event.ContainerInfo {
	m, l := sb.GetMetadata(), sb.GetLabels()
	return event.ContainerInfo{
		Time:        now,
		ContainerID: sb.GetId(),
		Sandbox:     true,
		SandboxID:   sb.GetId(),
		PodUID:      cmp.Or(m.GetUid(), l[labelPodUID]),
		PodName:     cmp.Or(m.GetName(), l[labelPodName]),
		Namespace:   cmp.Or(m.GetNamespace(), l[labelPodNamespace]),
		Attempt:     m.GetAttempt(),
		State:       sandboxState(sb.GetState()),
		CreatedAt:   nsTime(sb.GetCreatedAt()),
	}
}
