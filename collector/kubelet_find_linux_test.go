package collector

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/readyline/readyline/collector/event"
	"github.com/readyline/readyline/collector/testenv"
)

const podCgroup = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1b2c3d4e_0000_1111_2222_333344445555.slice/cri-containerd-" + hex64 + ".scope"

// kubelet is the real kubelet of the tests' trees.
var kubelet = fakeProc{pid: 30245, ppid: 1, comm: "kubelet", start: 5000, exe: "usr/bin/kubelet", cgroup: "/system.slice/kubelet.service"}

func TestFindKubelets(t *testing.T) {
	for _, tc := range []struct {
		name     string
		procs    []fakeProc
		want     []int    // pids found, in order
		rejected []string // one substring of the reason for each rejected pid, in order
	}{
		{"the kubelet alone", []fakeProc{kubelet}, []int{30245}, nil},
		{"its fork, with a lower pid (pids wrapped), before it execs", []fakeProc{
			kubelet,
			{pid: 11046, ppid: 30245, comm: "kubelet", start: 9000, exe: "usr/bin/kubelet", cgroup: "/system.slice/kubelet.service"},
		}, []int{30245}, []string{"11046: a fork of 30245"}},
		{"a pod's process named kubelet, older and with a lower pid", []fakeProc{
			kubelet,
			{pid: 200, ppid: 150, comm: "kubelet", start: 10, exe: "var/lib/containerd/rootfs/usr/bin/kubelet", cgroup: podCgroup},
		}, []int{30245}, []string{"200: in pod 1b2c3d4e-0000-1111-2222-333344445555's cgroup"}},
		{"a pod's process named kubelet, cgroup v1", []fakeProc{
			kubelet,
			{pid: 201, ppid: 150, comm: "kubelet", start: 10, exe: "kubelet", cgroup: "/\n4:memory:/kubepods/besteffort/pod1b2c3d4e-0000-1111-2222-333344445555/" + hex64},
		}, []int{30245}, []string{"201: in pod 1b2c3d4e-0000-1111-2222-333344445555's cgroup"}},
		{"one in another PID namespace (a kind node's kubelet seen from the host)", []fakeProc{
			kubelet,
			{pid: 300, ppid: 1, comm: "kubelet", start: 10, exe: "kind/usr/bin/kubelet", pidns: "pid:[4026532999]"},
		}, []int{30245}, []string{"300: in another PID namespace (pid:[4026532999])"}},
		{"a thread named kubelet, not its leader", []fakeProc{
			kubelet,
			{pid: 400, tgid: 399, ppid: 1, comm: "kubelet", start: 10, exe: "usr/bin/kubelet"},
		}, []int{30245}, []string{"400: a thread of 399"}},
		{"a program that named itself kubelet", []fakeProc{
			kubelet,
			{pid: 500, ppid: 1, comm: "kubelet", start: 10, exe: "usr/bin/python3"},
		}, []int{30245}, []string{"500: runs "}},
		{"a kubelet running a deleted file", []fakeProc{
			kubelet,
			{pid: 600, ppid: 1, comm: "kubelet", start: 10, exe: "tmp/kubelet (deleted)"},
		}, []int{30245}, []string{"600: runs a deleted "}},
		{"two kubelets: the oldest first, then the lowest pid", []fakeProc{
			{pid: 700, ppid: 1, comm: "kubelet", start: 7000, exe: "usr/bin/kubelet"},
			{pid: 800, ppid: 1, comm: "kubelet", start: 6000, exe: "usr/bin/kubelet"},
			{pid: 900, ppid: 1, comm: "kubelet", start: 7000, exe: "usr/bin/kubelet"},
		}, []int{800, 700, 900}, nil},
		{"no kubelet", []fakeProc{{pid: 100, ppid: 1, comm: "bash", start: 5, exe: "usr/bin/bash"}}, nil, nil},
		{"a kernel thread named kubelet", []fakeProc{{pid: 100, ppid: 2, comm: "kubelet", start: 5}}, nil, []string{"100: exe: "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := fakeProcfs(t, t.TempDir(), tc.procs)
			scan, err := findKubelets(root, "kubelet", nil)
			if err != nil {
				t.Fatal(err)
			}
			var pids []int
			for _, p := range scan.found {
				pids = append(pids, p.pid)
			}
			if !slices.Equal(pids, tc.want) {
				t.Errorf("found %v, want %v", pids, tc.want)
			}
			if len(scan.rejected) != len(tc.rejected) {
				t.Fatalf("rejected %q, want %q", scan.rejected, tc.rejected)
			}
			slices.Sort(scan.rejected)
			for i, r := range scan.rejected {
				if !strings.Contains(r, tc.rejected[i]) {
					t.Errorf("rejected %q, want %q", r, tc.rejected[i])
				}
			}
			if scan.nsErr != nil {
				t.Error(scan.nsErr)
			}
		})
	}
}

// TestFindKubeletsDeletedWhileAttached: the kubelet probed now may run a
// binary replaced on disk since (an upgrade), another process of a deleted
// file is no kubelet.
func TestFindKubeletsDeletedWhileAttached(t *testing.T) {
	dir := t.TempDir()
	old := kubelet
	old.exe = "usr/bin/kubelet (deleted)"
	root := fakeProcfs(t, dir, []fakeProc{old})
	scan, err := findKubelets(root, "kubelet", nil)
	if err != nil || len(scan.found) != 0 {
		t.Fatalf("not attached: found %v, %v; want none", scan.found, err)
	}
	attached := attachedAs(t, root, old)
	scan, err = findKubelets(root, "kubelet", attached)
	if err != nil || len(scan.found) != 1 || !scan.has(attached) {
		t.Fatalf("attached: found %v, %v; want it", scan.found, err)
	}
	if scan.found[0].exe != filepath.Join(dir, "bin/usr/bin/kubelet") {
		t.Errorf("exe %q", scan.found[0].exe)
	}
	// Another file of the same name, under the same pid and start time:
	// not the process probed.
	os.Remove(filepath.Join(root, strconv.Itoa(old.pid), "exe"))
	other := filepath.Join(dir, "bin/other/kubelet (deleted)")
	os.MkdirAll(filepath.Dir(other), 0o755)
	os.WriteFile(other, nil, 0o755)
	os.Symlink(other, filepath.Join(root, strconv.Itoa(old.pid), "exe"))
	if scan, _ := findKubelets(root, "kubelet", attached); len(scan.found) != 0 {
		t.Errorf("a deleted file that is not the one probed: found %v", scan.found)
	}
}

// attachedAs returns the kubeletProcess of p as findKubelets would have
// found it, for a test to say it is attached.
func attachedAs(t *testing.T, root string, p fakeProc) *kubeletProcess {
	t.Helper()
	got, why, _ := inspectProcess(root, p.pid, p.comm, "", &kubeletProcess{pid: p.pid, start: p.start, exeID: exeID(t, root, p.pid)})
	if why != "" {
		t.Fatalf("%d: %s", p.pid, why)
	}
	return got
}

func exeID(t *testing.T, root string, pid int) fileID {
	t.Helper()
	st, err := os.Stat(filepath.Join(root, strconv.Itoa(pid), "exe"))
	if err != nil {
		t.Fatal(err)
	}
	return fileIDOf(st.Sys().(*syscall.Stat_t))
}

// fakeAttach stands in for attaching probes: it records the processes it
// is asked to probe and fails for the pids in fail.
type fakeAttach struct {
	attached []int
	fail     map[int]bool
}

func (f *fakeAttach) attach(p *kubeletProcess) error {
	f.attached = append(f.attached, p.pid)
	if f.fail[p.pid] {
		return errors.New("no CRI client in this binary")
	}
	return nil
}

// newFakeKubeletCallSource is a KubeletCallSource over the tree at root,
// with the probes' attach faked (no kernel involved), that emits into
// statuses.
func newFakeKubeletCallSource(root string, f *fakeAttach, logs *logRecorder, statuses *[]*event.SourceStatus) *KubeletCallSource {
	s := &KubeletCallSource{cfg: KubeletCallConfig{ProcRoot: root, target: &kubeletTarget}, logger: slog.New(logs)}
	s.attachTo = f.attach
	s.ring.sampleClock()
	s.emit = func(ev event.Event) { *statuses = append(*statuses, ev.(*event.SourceStatus)) }
	return s
}

// wantStatus is a SourceStatus as a test expects it.
type wantStatus struct {
	up     bool
	reason string
	since  time.Time // zero: none
	// sinceBy, when set, makes [since, sinceBy] the range Since must be in.
	sinceBy time.Time
}

func (w wantStatus) String() string {
	if !w.sinceBy.IsZero() {
		return fmt.Sprintf("{up %v %q since %v-%v}", w.up, w.reason, w.since.Format(time.StampMicro), w.sinceBy.Format(time.StampMicro))
	}
	return fmt.Sprintf("{up %v %q since %v}", w.up, w.reason, w.since.Format(time.StampMicro))
}

func (w wantStatus) matches(st *event.SourceStatus) bool {
	if st.Up != w.up || st.Reason != w.reason {
		return false
	}
	if !w.sinceBy.IsZero() {
		return !st.Since.Before(w.since) && !st.Since.After(w.sinceBy)
	}
	return st.Since.Equal(w.since)
}

// checkStatuses compares what source s emitted with want: the cri_calls
// source, each at the time it was emitted (on the source's clock, from
// from, a reading before the first rescan, to now), with the Since
// expected.
func checkStatuses(t *testing.T, s *KubeletCallSource, from time.Time, got []*event.SourceStatus, want []wantStatus) {
	t.Helper()
	now := s.now()
	var gotW []wantStatus
	for _, st := range got {
		gotW = append(gotW, wantStatus{up: st.Up, reason: st.Reason, since: st.Since})
		if st.Source != event.SourceKubeletCalls || st.Time.Before(from) || st.Time.After(now) || !st.Since.IsZero() && !st.Since.Before(st.Time) {
			t.Errorf("status %+v: want source %q, time in [%v, %v], since before it", *st, event.SourceKubeletCalls, from, now)
		}
	}
	if !slices.EqualFunc(got, want, func(st *event.SourceStatus, w wantStatus) bool { return w.matches(st) }) {
		t.Errorf("statuses\n%v\nwant\n%v", gotW, want)
	}
}

func removeFakeProc(t *testing.T, root string, pid int) {
	t.Helper()
	if err := os.RemoveAll(filepath.Join(root, strconv.Itoa(pid))); err != nil {
		t.Fatal(err)
	}
}

// TestKubeletCallSourceFollowsTheKubelet goes through a kubelet's life as the
// rescans see it: found among its forks and impostors, a second one
// ignored while it lives, replaced when it is gone, a process that cannot
// be probed not retried.
func TestKubeletCallSourceFollowsTheKubelet(t *testing.T) {
	dir := t.TempDir()
	root := fakeProcfs(t, dir, []fakeProc{
		kubelet,
		{pid: 11046, ppid: 30245, comm: "kubelet", start: 9000, exe: "usr/bin/kubelet"},
		{pid: 200, ppid: 150, comm: "kubelet", start: 10, exe: "kubelet", cgroup: podCgroup},
	})
	f := &fakeAttach{fail: map[int]bool{}}
	logs := &logRecorder{}
	var statuses []*event.SourceStatus
	s := newFakeKubeletCallSource(root, f, logs, &statuses)
	from := s.now()
	started := func(ticks uint64) time.Time { return s.startTime(&kubeletProcess{start: ticks}) }
	// rescan rescans and returns the times around it, on the source's clock.
	rescan := func() (before, after time.Time) {
		before = s.now()
		s.rescan()
		return before, s.now()
	}
	// nowTicks is a start time after the last rescan.
	nowTicks := func() uint64 {
		time.Sleep(30 * time.Millisecond)
		return bootTimeNS() / (1e9 / clockTicksPerSecond)
	}
	check := func(step string, attached []int, probed int) {
		t.Helper()
		if !slices.Equal(f.attached, attached) || int(s.kubeletPID.Load()) != probed {
			t.Fatalf("%s: attached to %v, probing %d; want %v, %d", step, f.attached, s.kubeletPID.Load(), attached, probed)
		}
	}

	s.rescan()
	check("start", []int{30245}, 30245)
	s.rescan()
	check("rescan", []int{30245}, 30245)

	// A second kubelet while the first runs: warned about once, ignored,
	// by the next full scan (the rescans between look at the one probed).
	writeFakeProc(t, dir, root, fakeProc{pid: 41000, ppid: 1, comm: "kubelet", start: 12000, exe: "opt/kubelet"})
	for range fullRescanEvery {
		s.rescan()
	}
	seen, seenBy := rescan()
	check("a second kubelet", []int{30245}, 30245)
	if n := len(logs.matching(slog.LevelWarn, "a second kubelet-like process is ignored")); n != 1 {
		t.Errorf("%d warnings of the second kubelet, want 1: %q", n, logs.messages(slog.LevelWarn))
	}
	// The kubelet's fork and the pod's process named kubelet, passed over
	// by each full scan, are told once each (at Debug).
	var passedOver []string
	logs.mu.Lock()
	for _, r := range logs.records {
		if r.Level == slog.LevelDebug && r.Message == "a process named kubelet is not the kubelet" {
			r.Attrs(func(a slog.Attr) bool {
				if a.Key == "process" {
					passedOver = append(passedOver, strings.SplitN(a.Value.String(), ":", 2)[0])
				}
				return true
			})
		}
	}
	logs.mu.Unlock()
	if slices.Sort(passedOver); !slices.Equal(passedOver, []string{"11046", "200"}) {
		t.Errorf("processes told as not the kubelet: %v, want 11046 (the fork) and 200 (the pod's), once each", passedOver)
	}

	// The kubelet restarts: the one left, which ran alongside, is taken.
	removeFakeProc(t, root, 30245)
	removeFakeProc(t, root, 11046)
	s.rescan()
	check("restart", []int{30245, 41000}, 41000)
	s.rescan()
	check("restart, rescan", []int{30245, 41000}, 41000)

	// The probed pid is reused by a later process, which cannot be probed
	// (tried once), and another kubelet starts: the probed one is gone,
	// the oldest of the others that can be probed is taken.
	f.fail[41000] = true
	removeFakeProc(t, root, 41000)
	start41000 := nowTicks()
	writeFakeProc(t, dir, root, fakeProc{pid: 41000, ppid: 1, comm: "kubelet", start: start41000, exe: "opt/kubelet"})
	writeFakeProc(t, dir, root, fakeProc{pid: 30246, ppid: 1, comm: "kubelet", start: nowTicks(), exe: "usr/bin/kubelet"})
	s.rescan()
	check("pid reused", []int{30245, 41000, 41000, 30246}, 30246)

	// Gone, with only the one that cannot be probed left: not retried.
	seen2, seenBy2 := rescan()
	removeFakeProc(t, root, 30246)
	s.rescan()
	s.rescan()
	check("gone, the one left cannot be probed", []int{30245, 41000, 41000, 30246}, 0)
	removeFakeProc(t, root, 41000)
	s.rescan()
	s.rescan()
	check("none", []int{30245, 41000, 41000, 30246}, 0)
	if n := len(logs.matching(slog.LevelWarn, "no kubelet process found")); n != 1 {
		t.Errorf("%d warnings of no kubelet, want 1: %q", n, logs.messages(slog.LevelWarn))
	}

	// Blind from when the calls of the next kubelet are lost (its start,
	// or when the one probed was last seen if they ran together) to the
	// probes on it; a Down after a Down keeps the first's start.
	checkStatuses(t, s, from, statuses, []wantStatus{
		{up: true},
		{up: false, reason: "kubelet_restarted", since: seen, sinceBy: seenBy}, // 41000 ran alongside
		{up: true},
		{up: false, reason: "kubelet_restarted", since: started(start41000)}, // started after
		{up: true}, // 30246
		{up: false, reason: "kubelet_restarted", since: seen2, sinceBy: seenBy2}, // 41000 ran alongside
		{up: false, reason: "attach_failed", since: seen2, sinceBy: seenBy2},
		{up: false, reason: "no_kubelet", since: seen2, sinceBy: seenBy2},
	})
}

// TestKubeletCallSourceStatusAtStart: the first rescan says whether the
// source sees, and why not.
func TestKubeletCallSourceStatusAtStart(t *testing.T) {
	for _, tc := range []struct {
		name  string
		procs []fakeProc
		fail  bool
		want  []wantStatus
	}{
		{"a kubelet", []fakeProc{kubelet}, false, []wantStatus{{up: true}}},
		{"a kubelet that cannot be probed", []fakeProc{kubelet}, true, []wantStatus{{up: false, reason: "attach_failed"}}},
		{"none", nil, false, []wantStatus{{up: false, reason: "no_kubelet"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			root := fakeProcfs(t, dir, tc.procs)
			f := &fakeAttach{fail: map[int]bool{kubelet.pid: tc.fail}}
			var statuses []*event.SourceStatus
			s := newFakeKubeletCallSource(root, f, &logRecorder{}, &statuses)
			from := s.now()
			s.rescan()
			s.rescan()
			checkStatuses(t, s, from, statuses, tc.want)
			if tc.want[0].up {
				return
			}
			// The kubelet comes (back): Up, Since-less, once.
			removeFakeProc(t, root, kubelet.pid)
			writeFakeProc(t, dir, root, fakeProc{pid: 500, ppid: 1, comm: "kubelet", start: 700, exe: "usr/bin/kubelet"})
			s.rescan()
			s.rescan()
			checkStatuses(t, s, from, statuses, append(tc.want, wantStatus{up: true}))
		})
	}
}

// TestFindKubeletsNodeNamespace: the node's PID namespace is pid 1's, else
// readyline's own; without either, processes of other namespaces are not
// told apart, and the scan says so.
func TestFindKubeletsNodeNamespace(t *testing.T) {
	root := fakeProcfs(t, t.TempDir(), []fakeProc{
		kubelet,
		{pid: 300, ppid: 1, comm: "kubelet", start: 10, exe: "kind/usr/bin/kubelet", pidns: "pid:[4026532999]"},
	})
	if err := os.Remove(filepath.Join(root, "1", "ns", "pid")); err != nil {
		t.Fatal(err)
	}
	scan, err := findKubelets(root, "kubelet", nil)
	if err != nil || scan.nsErr == nil || len(scan.found) != 2 {
		t.Errorf("without pid 1's namespace: found %d, nsErr %v, %v; want both and an error", len(scan.found), scan.nsErr, err)
	}
	os.MkdirAll(filepath.Join(root, "self", "ns"), 0o755)
	if err := os.Symlink(nodePIDNS, filepath.Join(root, "self", "ns", "pid")); err != nil {
		t.Fatal(err)
	}
	scan, err = findKubelets(root, "kubelet", nil)
	if err != nil || scan.nsErr != nil || len(scan.found) != 1 || scan.found[0].pid != kubelet.pid {
		t.Errorf("with readyline's namespace: found %v, nsErr %v, %v; want the kubelet alone", scan.found, scan.nsErr, err)
	}
}

// deniedChildEnv marks the test binary re-run as an unprivileged user.
const deniedChildEnv = "READYLINE_TEST_PTRACE_DENIED_CHILD"

// TestIntegrationKubeletOutOfReach looks, as a user that may not look into
// other users' processes (as readyline without CAP_SYS_PTRACE), at a
// process of the target's name: it is rejected as out of reach, and the
// source says it cannot look, not that there is no kubelet.
func TestIntegrationKubeletOutOfReach(t *testing.T) {
	if os.Getenv(deniedChildEnv) == "1" {
		deniedChild(t)
		return
	}
	testenv.RequirePrivileged(t)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	sleep, err := os.ReadFile("/bin/sleep")
	if err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, crilikeName)
	if err := os.WriteFile(target, sleep, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(target, "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()

	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	test, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "collector.test")
	if err := os.WriteFile(bin, test, 0o755); err != nil {
		t.Fatal(err)
	}
	child := exec.Command(bin, "-test.run", "^TestIntegrationKubeletOutOfReach$", "-test.v", "-test.count=1")
	child.Env = append(os.Environ(), deniedChildEnv+"=1", deniedChildEnv+"_NAME="+crilikeName)
	child.Dir = dir
	child.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := child.CombinedOutput()
	t.Logf("as nobody:\n%s", out)
	if err != nil {
		t.Fatalf("the child failed: %v", err)
	}
	if !strings.Contains(string(out), fmt.Sprintf("REJECTED %d: exe: permission denied\n", cmd.Process.Pid)) {
		t.Errorf("the child did not report pid %d out of reach", cmd.Process.Pid)
	}
}

// deniedChild runs as nobody, next to root's process named as its parent's
// crilike.
func deniedChild(t *testing.T) {
	name := filepath.Base(os.Getenv(deniedChildEnv + "_NAME"))
	scan, err := findKubelets("/proc", name, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Others of the name may linger, exiting, from earlier tests: all are
	// out of reach.
	if len(scan.found) != 0 || scan.denied == 0 || scan.denied != len(scan.rejected) {
		t.Fatalf("found %v, rejected %q (%d denied); want all rejected, denied", scan.found, scan.rejected, scan.denied)
	}
	logs := &logRecorder{}
	var statuses []*event.SourceStatus
	s := newFakeKubeletCallSource("/proc", &fakeAttach{}, logs, &statuses)
	s.cfg.target = &probeTarget{process: name}
	from := s.now()
	s.rescan()
	checkStatuses(t, s, from, statuses, []wantStatus{{up: false, reason: "attach_failed"}})
	if w := logs.matching(slog.LevelWarn, "needs CAP_SYS_PTRACE"); len(w) != 1 {
		t.Errorf("warnings %q, want one saying CAP_SYS_PTRACE is needed", logs.messages(slog.LevelWarn))
	}
	for _, r := range scan.rejected {
		fmt.Printf("REJECTED %s\n", r)
	}
}

// TestStillRunningByPIDFD: the process probed is looked at in /proc once,
// then through a pidfd of it, which tells its exit: a process that has
// exited (and been reaped, its pid free again) is not still running.
func TestStillRunningByPIDFD(t *testing.T) {
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	target := probeTarget{process: "sleep"}
	s := &KubeletCallSource{cfg: KubeletCallConfig{ProcRoot: "/proc", target: &target}}
	defer s.curFD.close()
	p, why, err := inspectProcess("/proc", cmd.Process.Pid, "sleep", "", nil)
	if err != nil || why != "" {
		t.Fatalf("inspecting sleep: %q %v", why, err)
	}
	for i := range 2 {
		if !s.stillRunning(p) {
			t.Fatalf("look %d: a running sleep is not still running", i)
		}
		if s.curFD.pid != p.pid {
			t.Fatalf("look %d: no pidfd of the process", i)
		}
	}
	cmd.Process.Kill()
	cmd.Wait() // reaped
	if s.stillRunning(p) {
		t.Fatal("a process killed and reaped is still running")
	}
}
