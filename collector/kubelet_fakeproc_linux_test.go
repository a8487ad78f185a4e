package collector

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// fakeProc is one process of a synthetic /proc tree.
type fakeProc struct {
	pid, tgid, ppid int // tgid 0: the process is its own thread-group leader
	comm            string
	start           uint64 // field 22 of stat, clock ticks since boot
	// exe is the file /proc/<pid>/exe points at, relative to the tree's
	// bin directory (created empty); "" for no exe link (a kernel thread).
	exe    string
	cgroup string // the cgroup path; "/" when empty
	pidns  string // the ns/pid link; the node's namespace when empty
}

// nodePIDNS is the PID namespace of a fake tree's pid 1.
const nodePIDNS = "pid:[4026531836]"

// fakeProcfs writes procs as a /proc tree under dir/proc, with a pid 1
// (init, in the node's PID namespace) unless procs has one, and returns
// its root. Each exe is a symbolic link to a file under dir/bin, as the
// kernel's magic link resolves to the executable.
func fakeProcfs(tb testing.TB, dir string, procs []fakeProc) string {
	tb.Helper()
	root := filepath.Join(dir, "proc")
	hasInit := false
	for _, p := range procs {
		hasInit = hasInit || p.pid == 1
	}
	if !hasInit {
		procs = append([]fakeProc{{pid: 1, comm: "systemd", start: 1, exe: "systemd"}}, procs...)
	}
	for _, p := range procs {
		writeFakeProc(tb, dir, root, p)
	}
	return root
}

func writeFakeProc(tb testing.TB, dir, root string, p fakeProc) {
	tb.Helper()
	pd := filepath.Join(root, strconv.Itoa(p.pid))
	if err := os.MkdirAll(filepath.Join(pd, "ns"), 0o755); err != nil {
		tb.Fatal(err)
	}
	tgid := p.tgid
	if tgid == 0 {
		tgid = p.pid
	}
	cg := p.cgroup
	if cg == "" {
		cg = "/"
	}
	ns := p.pidns
	if ns == "" {
		ns = nodePIDNS
	}
	files := map[string]string{
		"comm":   p.comm + "\n",
		"status": fmt.Sprintf("Name:\t%s\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t%d\nNgid:\t0\nPid:\t%d\nPPid:\t%d\nTracerPid:\t0\nUid:\t0\t0\t0\t0\nThreads:\t12\n", p.comm, tgid, p.pid, p.ppid),
		// pid (comm) state ppid pgrp session tty tpgid flags minflt
		// cminflt majflt cmajflt utime stime cutime cstime priority nice
		// num_threads itrealvalue starttime ...
		"stat":   fmt.Sprintf("%d (%s) S %d %d %d 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 12 0 %d 1000000 2000 ...\n", p.pid, p.comm, p.ppid, p.pid, p.pid, p.start),
		"cgroup": "0::" + cg + "\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(pd, name), []byte(content), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	if err := os.Symlink(ns, filepath.Join(pd, "ns", "pid")); err != nil {
		tb.Fatal(err)
	}
	if p.exe != "" {
		target := filepath.Join(dir, "bin", p.exe)
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			tb.Fatal(err)
		}
		if _, err := os.Stat(target); os.IsNotExist(err) {
			if err := os.WriteFile(target, []byte("\x7fELF"), 0o755); err != nil {
				tb.Fatal(err)
			}
		}
		if err := os.Symlink(target, filepath.Join(pd, "exe")); err != nil {
			tb.Fatal(err)
		}
	}
}

// busyProcfs is a node's /proc with n processes: one kubelet and, around
// it, its short-lived fork, a pod's process named kubelet, one in another
// PID namespace and shells, runtimes and pods' programs.
func busyProcfs(tb testing.TB, n int) string {
	tb.Helper()
	comms := []string{"bash", "containerd-shim", "nginx", "pause", "sleep", "coredns", "kworker/0:1", "java"}
	procs := []fakeProc{
		{pid: 30245, ppid: 1, comm: "kubelet", start: 500, exe: "usr/bin/kubelet"},
		{pid: 11046, ppid: 30245, comm: "kubelet", start: 90000, exe: "usr/bin/kubelet"},
		{pid: 2000, ppid: 1999, comm: "kubelet", start: 400, exe: "pod/kubelet",
			cgroup: "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1b2c3d4e_0000_1111_2222_333344445555.slice/cri-containerd-" + hex64 + ".scope"},
		{pid: 2001, ppid: 1999, comm: "kubelet", start: 450, exe: "ns/kubelet", pidns: "pid:[4026532999]"},
	}
	for pid := 100; len(procs) < n; pid++ {
		if pid == 2000 || pid == 2001 {
			continue
		}
		p := fakeProc{pid: pid, ppid: 1, comm: comms[pid%len(comms)], start: uint64(pid * 7)}
		if p.comm[0] != 'k' { // kernel threads have no exe
			p.exe = "usr/bin/" + p.comm
		}
		procs = append(procs, p)
	}
	return fakeProcfs(tb, tb.TempDir(), procs)
}

const hex64 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// BenchmarkFindKubelet is one rescan for the kubelet: of a synthetic busy
// node's /proc (2,000 processes, on the temporary directory's file system)
// and of this machine's.
func BenchmarkFindKubelet(b *testing.B) {
	b.Run("synthetic-2000", func(b *testing.B) {
		root := busyProcfs(b, 2000)
		b.ReportAllocs()
		for b.Loop() {
			scan, err := findKubelets(root, "kubelet", nil)
			if err != nil || len(scan.found) != 1 || scan.found[0].pid != 30245 {
				b.Fatalf("found %+v, %v; want the kubelet 30245 alone", scan.found, err)
			}
		}
	})
	b.Run("proc", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			findKubelets("/proc", "kubelet", nil)
		}
	})
}
