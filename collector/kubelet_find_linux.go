package collector

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// This file finds the kubelet among a node's processes. A process's name
// (comm) is not enough: anything can call itself kubelet, a pod's process
// as much as the kubelet's own fork before it execs, and with pids wrapping
// either can have the lower pid.

// kubeletProcess is a process that looks like the kubelet.
type kubeletProcess struct {
	pid, ppid int
	// start is field 22 of /proc/<pid>/stat, clock ticks after boot: with
	// pid, what tells this process from a later one given the same pid.
	start uint64
	exe   string // where /proc/<pid>/exe points, " (deleted)" removed
	// exeID is the executable's identity, read through /proc/<pid>/exe.
	exeID fileID
}

// procKey identifies a process for as long as it lives.
type procKey struct {
	pid   int
	start uint64
}

func (p *kubeletProcess) key() procKey { return procKey{p.pid, p.start} }

// sameProcess reports whether q is the process p, running the same file.
func (p *kubeletProcess) sameProcess(q *kubeletProcess) bool {
	return p.key() == q.key() && p.exeID.dev == q.exeID.dev && p.exeID.ino == q.exeID.ino
}

// fileID identifies a file and, as far as its metadata tells, its content.
type fileID struct {
	dev, ino uint64
	size     int64
	mtime    int64 // ns since the epoch
}

func fileIDOf(st *syscall.Stat_t) fileID {
	return fileID{dev: st.Dev, ino: st.Ino, size: st.Size, mtime: st.Mtim.Nano()}
}

// kubeletScan is what one look through /proc found.
type kubeletScan struct {
	// found are the processes that look like the kubelet, oldest first
	// (start time, then pid), forks of another one left out.
	found []*kubeletProcess
	// rejected are the processes with the kubelet's name that are not
	// it, each with why.
	rejected []string
	// nsErr says why the node's PID namespace could not be read: the
	// processes of other namespaces are then not told apart.
	nsErr error
	// denied counts the processes rejected because readyline may not
	// look into them (no CAP_SYS_PTRACE).
	denied int
}

// has reports whether p is among the processes found.
func (s *kubeletScan) has(p *kubeletProcess) bool {
	return slices.ContainsFunc(s.found, p.sameProcess)
}

// findKubelets looks through procRoot for the processes that look like the
// kubelet, named name: a thread-group leader whose comm is name, whose
// executable is named name (and not deleted, unless it is attached, the
// process probed now, still running the file it was probed in), in the PID
// namespace of procRoot's pid 1 (see nodePIDNamespace), outside any
// pod's cgroup, and not a child of another such process (a fork of the
// kubelet before it execs has all the rest). Only the processes named name
// are looked at further than their comm.
func findKubelets(procRoot, name string, attached *kubeletProcess) (kubeletScan, error) {
	var scan kubeletScan
	dir, err := os.Open(procRoot)
	if err != nil {
		return scan, err
	}
	defer dir.Close()
	entries, err := dir.Readdirnames(-1)
	if err != nil {
		return scan, fmt.Errorf("listing %s: %w", procRoot, err)
	}
	dirFD := int(dir.Fd())
	nodeNS, nsErr := nodePIDNamespace(procRoot)
	if nsErr != nil {
		scan.nsErr = fmt.Errorf("reading the node's PID namespace: %w", nsErr)
	}
	var buf [64]byte
	for _, e := range entries {
		if e == "" || e[0] < '1' || e[0] > '9' || !commIs(dirFD, e, name, buf[:]) {
			continue
		}
		pid, err := strconv.Atoi(e)
		if err != nil {
			continue
		}
		p, why, err := inspectProcess(procRoot, pid, name, nodeNS, attached)
		if why != "" {
			scan.rejected = append(scan.rejected, e+": "+why)
			if errors.Is(err, fs.ErrPermission) {
				scan.denied++
			}
			continue
		}
		scan.found = append(scan.found, p)
	}
	// A fork of the kubelet keeps its comm and executable until it
	// execs; its parent is the kubelet.
	pids := make(map[int]bool, len(scan.found))
	for _, p := range scan.found {
		pids[p.pid] = true
	}
	scan.found = slices.DeleteFunc(scan.found, func(p *kubeletProcess) bool {
		if pids[p.ppid] {
			scan.rejected = append(scan.rejected, fmt.Sprintf("%d: a fork of %d", p.pid, p.ppid))
			return true
		}
		return false
	})
	slices.SortFunc(scan.found, func(a, b *kubeletProcess) int {
		return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(a.pid, b.pid))
	})
	return scan, nil
}

// nodePIDNamespace returns the PID namespace of procRoot's pid 1, or, when
// that is out of reach (a sandbox's init can refuse even root), of
// readyline itself, which runs in the node's (hostPID).
func nodePIDNamespace(procRoot string) (string, error) {
	ns, err := os.Readlink(filepath.Join(procRoot, "1", "ns", "pid"))
	if err == nil {
		return ns, nil
	}
	if self, selfErr := os.Readlink(filepath.Join(procRoot, "self", "ns", "pid")); selfErr == nil {
		return self, nil
	}
	return "", err
}

// commIs reports whether <pid>/comm under dirFD reads name: three system
// calls and no allocation beyond the path, as it is read for every process
// every rescan.
func commIs(dirFD int, pid, name string, buf []byte) bool {
	fd, err := unix.Openat(dirFD, pid+"/comm", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	n, err := unix.Read(fd, buf)
	unix.Close(fd)
	if err != nil || n <= 0 {
		return false
	}
	return string(bytes.TrimSuffix(buf[:n], []byte{'\n'})) == name
}

// inspectProcess reads what tells whether the process pid, named name, is
// the kubelet; why says why not, err what could not be read if that is why.
func inspectProcess(procRoot string, pid int, name, nodeNS string, attached *kubeletProcess) (p *kubeletProcess, why string, err error) {
	unreadable := func(what string, err error) (*kubeletProcess, string, error) {
		return nil, what + ": " + errText(err), err
	}
	dir := filepath.Join(procRoot, strconv.Itoa(pid))
	status, err := os.ReadFile(filepath.Join(dir, "status"))
	if err != nil {
		return unreadable("status", err)
	}
	tgid, ppid := statusField(status, "Tgid"), statusField(status, "PPid")
	if tgid != pid {
		return nil, fmt.Sprintf("a thread of %d", tgid), nil
	}
	stat, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return unreadable("stat", err)
	}
	start, err := strconv.ParseUint(procStartTime(string(stat)), 10, 64)
	if err != nil {
		return nil, "stat: no start time", nil
	}
	p = &kubeletProcess{pid: pid, ppid: ppid, start: start}

	exe, err := os.Readlink(filepath.Join(dir, "exe"))
	if err != nil {
		return unreadable("exe", err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(dir, "exe"), &st); err != nil {
		return unreadable("exe", err)
	}
	p.exeID = fileIDOf(&st)
	exe, deleted := strings.CutSuffix(exe, " (deleted)")
	p.exe = exe
	if path.Base(exe) != name {
		return nil, "runs " + exe, nil
	}
	if deleted && (attached == nil || !attached.sameProcess(p)) {
		// The kubelet probed now keeps running a binary replaced on
		// disk; a new process of a deleted file is not a kubelet a
		// service manager started.
		return nil, "runs a deleted " + exe, nil
	}

	if nodeNS != "" {
		ns, err := os.Readlink(filepath.Join(dir, "ns", "pid"))
		if err != nil {
			return unreadable("PID namespace", err)
		}
		if ns != nodeNS {
			return nil, "in another PID namespace (" + ns + ")", nil
		}
	}

	cgroups, err := os.ReadFile(filepath.Join(dir, "cgroup"))
	if err != nil {
		return unreadable("cgroup", err)
	}
	if uid := podOfCgroups(string(cgroups)); uid != "" {
		return nil, "in pod " + uid + "'s cgroup", nil
	}
	return p, "", nil
}

// podOfCgroups returns the UID of the pod whose cgroup a /proc/<pid>/cgroup
// file ("hierarchy:controllers:path" lines, cgroup v1 or v2) puts the
// process in, "" for none.
func podOfCgroups(file string) string {
	for line := range strings.Lines(file) {
		_, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		_, p, ok := strings.Cut(rest, ":")
		if !ok {
			continue
		}
		if a := ParseCgroupPath(strings.TrimSpace(p)); a.PodUID != "" {
			return a.PodUID
		}
	}
	return ""
}

// statusField returns the number on the "key:\tN" line of a
// /proc/<pid>/status file, -1 when there is none.
func statusField(status []byte, key string) int {
	for line := range bytes.Lines(status) {
		if v, ok := bytes.CutPrefix(line, []byte(key+":")); ok {
			n, err := strconv.Atoi(string(bytes.TrimSpace(v)))
			if err != nil {
				return -1
			}
			return n
		}
	}
	return -1
}

// errText is err without the path an *os.PathError repeats.
func errText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
