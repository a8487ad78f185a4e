package collector

import (
	"errors"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/readyline/readyline/collector/testenv"
)

// TestIntegrationCgroupRemovedWhileRead: a container's cgroup removed
// between the reader's open of it and its readlink (a container that
// exited and was cleaned up meanwhile, which a busy machine makes likely)
// is gone, not a path whose last name is "<id> (deleted)": the kernel's
// names of it then attribute its events. Before, under a CPU hog, such an
// exec came out with no container (one in 20 runs of the package).
func TestIntegrationCgroupRemovedWhileRead(t *testing.T) {
	cg := testenv.NewCgroup(t, "kubepods/besteffort/pod"+testPodUID+"/"+testCID)
	mount, err := FindCgroup2Mount()
	if err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(cg.Dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	p, err := cgroupPathOfFD(mount, fd)
	if err != nil || !strings.HasSuffix(p, "/"+testCID) || ParseCgroupPath(p).ContainerID != testCID {
		t.Fatalf("while it exists: %q, %v; want its path", p, err)
	}
	if err := os.Remove(cg.Dir); err != nil {
		t.Fatal(err)
	}
	if p, err := cgroupPathOfFD(mount, fd); !errors.Is(err, unix.ESTALE) {
		t.Errorf("removed while open: %q, %v; want ESTALE (gone)", p, err)
	}
}
