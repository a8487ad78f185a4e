package collector

import (
	"strings"
	"testing"
)

func TestParseCgroupPath(t *testing.T) {
	const (
		uid = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
		us  = "0f1e2d3c_4b5a_6978_8796_a5b4c3d2e1f0"
		cid = "4c7a61d1b3bc1a20f1e8e5b8b6f0a0d5c1f2e3d4a5b6c7d8e9f0011223344556"
	)
	tests := []struct {
		name, path string
		pod, ctr   string
	}{
		// kubelet cgroupfs driver (this machine's local node, kind with cgroup v1)
		{"cgroupfs besteffort", "/kubepods/besteffort/pod" + uid + "/" + cid, uid, cid},
		{"cgroupfs burstable", "/kubepods/burstable/pod" + uid + "/" + cid, uid, cid},
		{"cgroupfs guaranteed", "/kubepods/pod" + uid + "/" + cid, uid, cid},
		{"cgroupfs pod cgroup only", "/kubepods/burstable/pod" + uid, uid, ""},
		{"cgroupfs with cgroup root", "/kubelet/kubepods/besteffort/pod" + uid + "/" + cid, uid, cid},
		{"below the container's cgroup", "/kubepods/besteffort/pod" + uid + "/" + cid + "/init.scope", uid, cid},
		{"static pod (config hash uid)", "/kubepods/besteffort/pod6d1c8e0a5b9f4e3d2c1b0a9f8e7d6c5b/" + cid,
			"6d1c8e0a5b9f4e3d2c1b0a9f8e7d6c5b", cid},
		// systemd driver
		{"systemd containerd", "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + us + ".slice/cri-containerd-" + cid + ".scope", uid, cid},
		{"systemd guaranteed", "/kubepods.slice/kubepods-pod" + us + ".slice/cri-containerd-" + cid + ".scope", uid, cid},
		{"systemd CRI-O", "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + us + ".slice/crio-" + cid + ".scope", uid, cid},
		{"systemd CRI-O conmon", "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + us + ".slice/crio-conmon-" + cid + ".scope", uid, ""},
		{"systemd docker", "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + us + ".slice/docker-" + cid + ".scope", uid, cid},
		{"CRI-O cgroupfs", "/kubepods/besteffort/pod" + uid + "/crio-" + cid, uid, cid},
		// kind: the node is a Docker container; kubelet uses --cgroup-root=/kubelet
		{"kind node view", "/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/kubelet-kubepods-besteffort-pod" + us + ".slice/cri-containerd-" + cid + ".scope", uid, cid},
		{"kind host view", "/system.slice/docker-1111111111111111111111111111111111111111111111111111111111111111.scope/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-burstable.slice/kubelet-kubepods-burstable-pod" + us + ".slice/cri-containerd-" + cid + ".scope", uid, cid},
		{"kind cgroupfs host view", "/docker/1111111111111111111111111111111111111111111111111111111111111111/kubelet/kubepods/besteffort/pod" + uid + "/" + cid, uid, cid},
		// /proc/<pid>/cgroup read from a container with a cgroup namespace
		// of its own (containerd's on cgroup v2): paths relative to it
		{"another pod, from a pod's namespace", "/../../kubepods-besteffort-pod" + us + ".slice/cri-containerd-" + cid + ".scope", uid, cid},
		{"a host service, from a pod's namespace", "/../../../../system.slice/kubelet.service", "", ""},
		// host processes
		{"root", "/", "", ""},
		{"system service", "/system.slice/containerd.service", "", ""},
		{"kubepods slice itself", "/kubepods.slice/kubepods-burstable.slice", "", ""},
		{"a docker container outside kubepods", "/docker/" + cid, "", ""},
		{"pod-like name outside kubepods", "/user.slice/pod" + uid + "/" + cid, "", ""},
		{"empty", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ParseCgroupPath(tt.path)
			if got.PodUID != tt.pod || got.ContainerID != tt.ctr {
				t.Errorf("ParseCgroupPath(%q) = pod %q container %q, want pod %q container %q",
					tt.path, got.PodUID, got.ContainerID, tt.pod, tt.ctr)
			}
			// Only the host's view of a kind node's pods is nested in a
			// container's cgroup.
			if nested := strings.Contains(tt.name, "host view"); got.Nested != nested {
				t.Errorf("ParseCgroupPath(%q).Nested = %v, want %v", tt.path, got.Nested, nested)
			}
		})
	}
}

func BenchmarkParseCgroupPath(b *testing.B) {
	p := "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0f1e2d3c_4b5a_6978_8796_a5b4c3d2e1f0.slice/cri-containerd-4c7a61d1b3bc1a20f1e8e5b8b6f0a0d5c1f2e3d4a5b6c7d8e9f0011223344556.scope"
	b.ReportAllocs()
	for b.Loop() {
		ParseCgroupPath(p)
	}
}

const testPodUIDUnderscores = "3f9c2a7e_1b4d_4e8a_9c6f_0d2b5e7a1c34"
