package collector

import (
	"regexp"
	"slices"
	"strings"
)

// CgroupAttribution is what a cgroup path says about the processes in it.
type CgroupAttribution struct {
	// PodUID is set for cgroups at or below a pod's cgroup.
	PodUID string
	// ContainerID is set for cgroups at or below a container's cgroup.
	ContainerID string
	// Nested: the pod's cgroup lies inside a container's (a kind node's
	// pods, seen from the host: /docker/<id>/kubelet.slice/...).
	Nested bool
}

var (
	// cgroupfs driver: pod<uid> (a UUID, or a config hash for static pods).
	cgroupfsPod = regexp.MustCompile(`^pod([0-9a-fA-F][0-9a-fA-F-]{7,})$`)
	// systemd driver: [<prefix>-]kubepods[-<qos>]-pod<uid with _ for ->.slice,
	// e.g. kubepods-burstable-pod1b2c_....slice, kind's kubelet-kubepods-....
	systemdPod = regexp.MustCompile(`^(?:[\w-]+-)?kubepods(?:-besteffort|-burstable)?-pod([0-9a-fA-F][0-9a-fA-F_]{7,})\.slice$`)
	// The container's own cgroup, right below the pod's.
	containerSegment = []*regexp.Regexp{
		regexp.MustCompile(`^([0-9a-f]{64})$`),                                                   // cgroupfs: containerd, docker
		regexp.MustCompile(`^(?:cri-containerd|crio|docker|cri-dockerd)-([0-9a-f]{64})\.scope$`), // systemd
		regexp.MustCompile(`^crio-([0-9a-f]{64})$`),                                              // CRI-O with cgroupfs
	}
)

// ParseCgroupPath attributes a cgroup path (as found under the cgroup2 mount,
// or in /proc/<pid>/cgroup) to a pod and container. It understands the
// kubelet's cgroupfs and systemd drivers, containerd, CRI-O and Docker
// scopes, kind's nested kubelet.slice paths and paths below a container's own
// cgroup. Paths outside kubepods give the zero value: a host process.
func ParseCgroupPath(path string) CgroupAttribution {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	inKubepods := false
	for i, seg := range segs {
		if !inKubepods {
			inKubepods = strings.Contains(seg, "kubepods")
			if !inKubepods {
				continue
			}
		}
		uid, ok := podUID(seg)
		if !ok {
			continue
		}
		a := CgroupAttribution{PodUID: uid, Nested: slices.ContainsFunc(segs[:i], isContainerSegment)}
		if i+1 < len(segs) {
			a.ContainerID = containerID(segs[i+1])
		}
		return a
	}
	return CgroupAttribution{}
}

func podUID(seg string) (string, bool) {
	if m := cgroupfsPod.FindStringSubmatch(seg); m != nil {
		return m[1], true
	}
	if m := systemdPod.FindStringSubmatch(seg); m != nil {
		return strings.ReplaceAll(m[1], "_", "-"), true
	}
	return "", false
}

// containerID reads a container id from the segment below a pod's cgroup;
// runtime-side cgroups there (CRI-O's crio-conmon-<id>.scope) give "".
func containerID(seg string) string {
	for _, re := range containerSegment {
		if m := re.FindStringSubmatch(seg); m != nil {
			return m[1]
		}
	}
	return ""
}

// isContainerSegment: seg names a container's own cgroup (a 64-hex id, or
// a runtime's scope for one).
func isContainerSegment(seg string) bool { return containerID(seg) != "" }
