package collector

import (
	"errors"
	"strings"
	"testing"
)

// mountinfo lines of the cgroup2 mounts a node's processes see (the other
// fields as the kernel writes them).
const (
	hostUnified   = "30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n"
	hostHybrid    = "31 25 0:27 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:5 - cgroup2 cgroup2 rw,nsdelegate\n"
	hybridTmpfs   = "25 23 0:22 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:4 - tmpfs tmpfs ro,mode=755\n"
	procLine      = "22 1 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw\n"
	containerOwn  = "812 805 0:26 / /sys/fs/cgroup ro,nosuid,nodev,noexec,relatime - cgroup2 cgroup rw,nsdelegate,memory_recursiveprot\n"
	hostBoundOver = "830 812 0:26 /../../../.. /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n"
	hostBoundElse = "831 805 0:26 /../../../.. /host/cgroup rw,nosuid,nodev,noexec,relatime - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n"
	dockerSubtree = "840 805 0:26 /system.slice/docker-0123.scope /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n"
	spaceInPath   = "850 23 0:26 / /mnt/my\\040cgroups rw - cgroup2 cgroup2 rw\n"
)

func TestWidestCgroup2Mount(t *testing.T) {
	for _, tc := range []struct {
		name, mountinfo string
		want            cgroup2Mount
	}{
		{"unified host", procLine + hostUnified, cgroup2Mount{"/sys/fs/cgroup", "/"}},
		{"hybrid host", procLine + hybridTmpfs + hostHybrid, cgroup2Mount{"/sys/fs/cgroup/unified", "/"}},
		// A DaemonSet's container on a cgroup v2 node: a cgroup namespace of
		// its own, its own view mounted by the runtime, the host's over it.
		{"the host's bound over the container's own", procLine + containerOwn + hostBoundOver, cgroup2Mount{"/sys/fs/cgroup", "/../../../.."}},
		{"the host's bound elsewhere", procLine + containerOwn + hostBoundElse, cgroup2Mount{"/host/cgroup", "/../../../.."}},
		{"the container's own only", procLine + containerOwn, cgroup2Mount{"/sys/fs/cgroup", "/"}},
		// Without a namespace of its own (cgroup v1 hosts' containers): a
		// subtree, and the whole elsewhere.
		{"a subtree and the whole", dockerSubtree + spaceInPath, cgroup2Mount{"/mnt/my cgroups", "/"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := widestCgroup2Mount(strings.NewReader(tc.mountinfo))
			if err != nil || got != tc.want {
				t.Errorf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
	if _, err := widestCgroup2Mount(strings.NewReader(procLine + hybridTmpfs)); !errors.Is(err, ErrNoCgroup2) {
		t.Errorf("no cgroup2 mount: %v, want ErrNoCgroup2", err)
	}
}

func TestOwnViewOnly(t *testing.T) {
	own := cgroup2Mount{"/sys/fs/cgroup", "/"}
	host := cgroup2Mount{"/sys/fs/cgroup", "/../../../.."}
	const initNS, podNS = "cgroup:[4026531835]", "cgroup:[4026532401]"
	if why := ownViewOnly(own, initNS, podNS); !strings.Contains(why, "this container's own view") || !strings.Contains(why, "hostPath") {
		t.Errorf("a container's own view in a namespace of its own: %q, want it told", why)
	}
	for _, tc := range []struct {
		name         string
		m            cgroup2Mount
		init, itsOwn string
	}{
		{"the host's bound over", host, initNS, podNS},
		{"in the host's namespace", own, initNS, initNS},
		{"namespaces unreadable", own, "", podNS},
	} {
		if why := ownViewOnly(tc.m, tc.init, tc.itsOwn); why != "" {
			t.Errorf("%s: %q, want nothing", tc.name, why)
		}
	}
}
