package collector

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// ErrNoCgroup2 is returned when no cgroup2 hierarchy is mounted.
var ErrNoCgroup2 = errors.New("no cgroup2 hierarchy mounted")

const fileIDKernfs = 0xfe // FILEID_KERNFS: a kernfs node id as a file handle

// cgroupEntry is a resolved cgroup, kept after the cgroup is gone.
type cgroupEntry struct {
	path string // relative to the cgroup2 mount, "/" for the root
	attr CgroupAttribution
	used uint64 // resolver generation of the last use
}

// cgroupResolver maps cgroup2 ids (what bpf_get_current_cgroup_id returns:
// the cgroup directory's kernfs id, which is also its inode number) to paths
// and attributions. Entries are cached because a container's cgroup is
// removed soon after its last process exits. Not safe for concurrent use.
type cgroupResolver struct {
	mount    string
	mountFD  int
	byHandle bool // open_by_handle_at works (CAP_DAC_READ_SEARCH)
	cache    map[uint64]*cgroupEntry
	gen      uint64
	max      int
	lastWalk time.Time
	logger   *slog.Logger
}

// FindCgroup2Mount returns the mount point of the cgroup2 hierarchy with the
// widest view: /sys/fs/cgroup on unified hosts, /sys/fs/cgroup/unified on
// hybrid ones, or wherever a DaemonSet mounted the host's.
func FindCgroup2Mount() (string, error) {
	m, err := findCgroup2Mount()
	return m.point, err
}

func findCgroup2Mount() (cgroup2Mount, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return cgroup2Mount{}, fmt.Errorf("reading mountinfo: %w", err)
	}
	defer f.Close()
	return widestCgroup2Mount(f)
}

// ownViewOnly says why m, the widest cgroup2 mount, shows only this
// process's container ("" when it does not): a container with a cgroup
// namespace of its own (containerd gives every container one on cgroup
// v2) whose /sys/fs/cgroup is not the host's sees its own cgroup as the
// root, and no pod's. initNS and ownNS are the cgroup namespaces of PID 1
// (the host's init, with hostPID) and of this process.
func ownViewOnly(m cgroup2Mount, initNS, ownNS string) string {
	if m.width() > 0 || initNS == "" || ownNS == "" || initNS == ownNS {
		return ""
	}
	return fmt.Sprintf("the cgroup2 hierarchy at %s is this container's own view (it has a cgroup namespace of its own, %s, "+
		"not the host's %s): processes cannot be attributed to pods; mount the host's /sys/fs/cgroup there (the DaemonSet's hostPath)",
		m.point, ownNS, initNS)
}

// cgroup2Mount is a cgroup2 mount of a mountinfo file.
type cgroup2Mount struct {
	point string // where it is mounted
	// root is the cgroup it shows, as the reader's cgroup namespace
	// names it: "/" for the namespace's root, "/../.." for one two levels
	// above it (the host's hierarchy bound into a container that has a
	// cgroup namespace of its own, as containerd gives each on cgroup v2),
	// "/docker/<id>" for a subtree.
	root string
}

// width ranks how much of the hierarchy m shows: one for each level its
// root is above the namespace's root, minus one for each below.
func (m cgroup2Mount) width() int {
	w := 0
	for _, seg := range strings.Split(strings.Trim(m.root, "/"), "/") {
		switch seg {
		case "":
		case "..":
			w++
		default:
			w--
		}
	}
	return w
}

// widestCgroup2Mount reads a mountinfo file and returns the cgroup2 mount
// that shows the most of the hierarchy; of those, one at /sys/fs/cgroup
// or /sys/fs/cgroup/unified, and of those the last mounted (the one on
// top).
func widestCgroup2Mount(mountinfo io.Reader) (cgroup2Mount, error) {
	var best cgroup2Mount
	found := false
	rank := func(m cgroup2Mount) int {
		r := 2 * m.width()
		if m.point == "/sys/fs/cgroup" || m.point == "/sys/fs/cgroup/unified" {
			r++
		}
		return r
	}
	sc := bufio.NewScanner(mountinfo)
	for sc.Scan() {
		// id parent maj:min root mountpoint opts [optional...] - fstype source superopts
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, v := range fields {
			if v == "-" {
				sep = i
				break
			}
		}
		if sep < 5 || sep+1 >= len(fields) || fields[sep+1] != "cgroup2" {
			continue
		}
		m := cgroup2Mount{point: unescapeMountinfo(fields[4]), root: unescapeMountinfo(fields[3])}
		if !found || rank(m) >= rank(best) {
			best, found = m, true
		}
	}
	if err := sc.Err(); err != nil {
		return cgroup2Mount{}, fmt.Errorf("reading mountinfo: %w", err)
	}
	if !found {
		return cgroup2Mount{}, ErrNoCgroup2
	}
	return best, nil
}

// unescapeMountinfo undoes the octal escapes (\040 for space) of mountinfo.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func newCgroupResolver(mount string, logger *slog.Logger) (*cgroupResolver, error) {
	fd, err := unix.Open(mount, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening cgroup2 mount %s: %w", mount, err)
	}
	r := &cgroupResolver{
		mount: mount, mountFD: fd, byHandle: true,
		cache: make(map[uint64]*cgroupEntry), max: 1 << 14, logger: logger,
	}
	return r, nil
}

func (r *cgroupResolver) close() { unix.Close(r.mountFD) }

// resolve returns the cgroup with this id, or nil when it cannot be found
// (gone before it was first seen).
func (r *cgroupResolver) resolve(id uint64) *cgroupEntry {
	if e, ok := r.cache[id]; ok {
		e.used = r.gen
		return e
	}
	if r.byHandle {
		p, err := r.pathByHandle(id)
		switch {
		case err == nil:
			return r.add(id, p)
		case errors.Is(err, unix.EPERM), errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.EINVAL):
			r.byHandle = false
			r.logger.Warn("cannot resolve cgroups by handle (needs CAP_DAC_READ_SEARCH); walking the cgroup tree instead, which may miss short-lived containers",
				"error", err)
		default:
			return nil // ESTALE, ENOENT: the cgroup is gone
		}
	}
	r.walk()
	return r.cache[id]
}

// learn takes the kernel's naming of a cgroup. The full path is read back
// by handle while the cgroup still exists; the names alone stand in when it
// is already gone (a container that ran for milliseconds).
func (r *cgroupResolver) learn(cn *CgroupName) {
	if _, ok := r.cache[cn.CgroupID]; ok {
		return
	}
	if r.byHandle {
		if p, err := r.pathByHandle(cn.CgroupID); err == nil {
			r.add(cn.CgroupID, p)
			return
		}
	}
	r.add(cn.CgroupID, cn.Path())
}

func (r *cgroupResolver) add(id uint64, p string) *cgroupEntry {
	if len(r.cache) >= r.max {
		r.evict()
	}
	e := &cgroupEntry{path: p, attr: ParseCgroupPath(p), used: r.gen}
	r.cache[id] = e
	return e
}

// evict drops the entries not used since the last eviction; cgroup ids are
// never reused, so a dropped entry is only ever a cache miss.
func (r *cgroupResolver) evict() {
	for id, e := range r.cache {
		if e.used < r.gen {
			delete(r.cache, id)
		}
	}
	r.gen++
	if len(r.cache) >= r.max { // all in use: start over rather than grow
		clear(r.cache)
	}
}

// pathByHandle opens the cgroup directory by its kernfs id and reads its
// path back: O(1), needs CAP_DAC_READ_SEARCH.
func (r *cgroupResolver) pathByHandle(id uint64) (string, error) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], id)
	fd, err := unix.OpenByHandleAt(r.mountFD, unix.NewFileHandle(fileIDKernfs, b[:]), unix.O_RDONLY|unix.O_CLOEXEC)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	return cgroupPathOfFD(r.mount, fd)
}

// cgroupPathOfFD is the path below mount of the cgroup directory open as
// fd. A cgroup removed since it was opened (a container that exited and
// was cleaned up while the reader looked) reads back as "<path> (deleted)",
// whose last name is no container's: it is gone, ESTALE as if the open
// had come a moment later, and the kernel's names of it stand in.
func cgroupPathOfFD(mount string, fd int) (string, error) {
	full, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return "", err
	}
	if strings.HasSuffix(full, " (deleted)") {
		return "", unix.ESTALE
	}
	return relCgroupPath(mount, full), nil
}

func relCgroupPath(mount, full string) string {
	rel := strings.TrimPrefix(full, mount)
	if rel == "" {
		return "/"
	}
	return rel
}

// walk adds every cgroup of the hierarchy to the cache (inode == kernfs
// id), at most every 100 ms.
func (r *cgroupResolver) walk() {
	if time.Since(r.lastWalk) < 100*time.Millisecond {
		return
	}
	r.lastWalk = time.Now()
	_ = filepath.WalkDir(r.mount, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		var st unix.Stat_t
		if unix.Stat(p, &st) == nil {
			if _, ok := r.cache[st.Ino]; !ok {
				r.add(st.Ino, relCgroupPath(r.mount, p))
			}
		}
		return nil
	})
}
