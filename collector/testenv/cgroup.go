package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Cgroup is a cgroup2 directory created for a test, named like a real
// container's so the collector attributes its processes to a pod.
type Cgroup struct {
	Dir string // absolute path
}

// cgroup2Mount finds the cgroup2 hierarchy: /sys/fs/cgroup on unified hosts,
// /sys/fs/cgroup/unified on hybrid ones.
func cgroup2Mount() (string, error) {
	for _, p := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
		var st unix.Statfs_t
		if unix.Statfs(p, &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
			return p, nil
		}
	}
	return "", fmt.Errorf("no cgroup2 hierarchy at /sys/fs/cgroup or /sys/fs/cgroup/unified")
}

// NewCgroup creates <cgroup2>/readyline-test-<pid>/<rel> and removes the
// whole tree when the test ends. It needs root (see RequirePrivileged).
func NewCgroup(t testing.TB, rel string) Cgroup {
	t.Helper()
	RequirePrivileged(t)
	mount, err := cgroup2Mount()
	if err != nil {
		t.Fatal(err)
	}
	top := filepath.Join(mount, fmt.Sprintf("readyline-test-%d", os.Getpid()))
	dir := filepath.Join(top, rel)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("creating cgroup: %v", err)
	}
	t.Cleanup(func() { removeCgroupTree(t, top) })
	return Cgroup{Dir: dir}
}

// removeCgroupTree removes a cgroup tree deepest first, giving exiting
// processes a moment to leave.
func removeCgroupTree(t testing.TB, top string) {
	var dirs []string
	filepath.WalkDir(top, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	slices.Reverse(dirs)
	for _, d := range dirs {
		var err error
		for range 50 {
			if err = os.Remove(d); err == nil || os.IsNotExist(err) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err != nil && !os.IsNotExist(err) {
			t.Errorf("removing test cgroup %s: %v", d, err)
		}
	}
}

// Command returns a command that starts directly inside the cgroup (clone3
// with CLONE_INTO_CGROUP), so even its first exec happens there.
func (c Cgroup) Command(t testing.TB, name string, args ...string) *exec.Cmd {
	t.Helper()
	f, err := os.Open(c.Dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(f.Fd())}
	return cmd
}
