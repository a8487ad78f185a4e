package collector

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/readyline/readyline/bpf"
	"github.com/readyline/readyline/collector/event"
	"github.com/readyline/readyline/collector/testenv"
)

// recorder collects what a running ProcessSource emits.
type recorder struct {
	mu     sync.Mutex
	events []event.Event
	src    *ProcessSource
	marks  int // barriers so far
}

// startProcessSource runs a ProcessSource until the test ends.
func startProcessSource(t *testing.T, cfg ProcessConfig) *recorder {
	t.Helper()
	testenv.RequirePrivileged(t)
	src, err := NewProcessSource(cfg, nil)
	if err != nil {
		t.Fatalf("starting process source: %v", err)
	}
	r := &recorder{src: src}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- src.Run(ctx, func(ev event.Event) {
			r.mu.Lock()
			r.events = append(r.events, ev)
			r.mu.Unlock()
		})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("Run did not return 5 s after cancellation")
		}
	})
	return r
}

// matching returns the events for which keep is true.
func (r *recorder) matching(keep func(event.Event) bool) []event.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []event.Event
	for _, ev := range r.events {
		if keep(ev) {
			out = append(out, ev)
		}
	}
	return out
}

// waitFor waits until n events match keep and returns them.
func (r *recorder) waitFor(t *testing.T, what string, n int, keep func(event.Event) bool) []event.Event {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := r.matching(keep)
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			// The stats tell a record lost, or not attributed (its
			// cgroup gone unnamed), from one that never came.
			t.Fatalf("waiting for %d %s: got %d (source stats %+v)", n, what, len(got), r.src.Stats())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// barrier runs a marker process in cg and waits for its exec: the ring is
// read in the order records were committed, so every record committed
// before the marker ran (the exits of processes waited for, say) has been
// handed over by then. A test that must see something not reported looks
// after its barrier, not after a sleep, which a late event outlasts.
func (r *recorder) barrier(t *testing.T, cg testCgroup) {
	t.Helper()
	r.marks++
	mark := fmt.Sprintf("readyline-test-barrier-%d", r.marks)
	if err := cg.Command(t, "/bin/true", mark).Run(); err != nil {
		t.Fatalf("running the barrier's marker: %v", err)
	}
	r.waitFor(t, "the barrier's marker", 1, func(ev event.Event) bool {
		e, ok := ev.(*event.ProcessExec)
		return ok && cg.owns(&e.Process) && slices.Contains(e.Argv, mark)
	})
}

// testCgroup is a test cgroup with the pod and container its path names.
type testCgroup struct {
	testenv.Cgroup
	podUID, container string
}

func makeTestCgroup(t *testing.T, rel, podUID, container string) testCgroup {
	return testCgroup{testenv.NewCgroup(t, rel), podUID, container}
}

func (c testCgroup) owns(p *event.Process) bool {
	return p.ContainerID == c.container && p.PodUID == c.podUID
}

func execOf(c testCgroup, filename string) func(event.Event) bool {
	return func(ev event.Event) bool {
		e, ok := ev.(*event.ProcessExec)
		return ok && c.owns(&e.Process) && strings.HasSuffix(e.Filename, filename)
	}
}

func exitOf(c testCgroup, pid int) func(event.Event) bool {
	return func(ev event.Event) bool {
		e, ok := ev.(*event.ProcessExit)
		return ok && int(e.PID) == pid && c.owns(&e.Process)
	}
}

// clockSlack is how far a kernel time a source converted may be off the
// wall clock: the boot clock's offset is sampled every 5 s (NTP may slew
// the wall clock by 500 ppm, 2.5 ms, meanwhile) from the tightest of a few
// bracketed readings.
const clockSlack = 5 * time.Millisecond

const testPodUID = "3f9c2a7e-1b4d-4e8a-9c6f-0d2b5e7a1c34"

// testCID is the container of the tests' cgroups, named after this test
// process: a source sees every process on the machine, and another run of
// these tests (another worktree's, another -count) execs in cgroups of the
// same shape at the same time.
var testCID = fmt.Sprintf("8d3e5f7a9b1c2d4e6f8a0b1c3d5e7f9a1b2c3d4e5f6a7b8c9d0e1f2a%08x", os.Getpid()) // 64 hex digits: pids fit in 8

func TestIntegrationExecExitInContainerCgroup(t *testing.T) {
	shapes := []struct{ name, rel string }{
		{"cgroupfs", "kubepods/besteffort/pod" + testPodUID + "/" + testCID},
		{"systemd", "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" +
			strings.ReplaceAll(testPodUID, "-", "_") + ".slice/cri-containerd-" + testCID + ".scope"},
	}
	rec := startProcessSource(t, ProcessConfig{})
	for _, shape := range shapes {
		t.Run(shape.name, func(t *testing.T) {
			cg := makeTestCgroup(t, shape.rel, testPodUID, testCID)
			cmd := cg.Command(t, "sh", "-c", "sleep 0.1; exit 3")
			before := time.Now()
			err := cmd.Run()
			after := time.Now()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
				t.Fatalf("running sh: %v", err)
			}
			pid := cmd.Process.Pid

			execs := rec.waitFor(t, "exec of sh", 1, func(ev event.Event) bool {
				return execOf(cg, "sh")(ev) && int(ev.(*event.ProcessExec).PID) == pid
			})
			e := execs[0].(*event.ProcessExec)
			if want := []string{"sh", "-c", "sleep 0.1; exit 3"}; !slices.Equal(e.Argv, want) {
				t.Errorf("exec argv %q, want %q", e.Argv, want)
			}
			if e.Scope != event.ScopePod || !strings.HasSuffix(e.Cgroup, shape.rel) {
				t.Errorf("exec scope %q cgroup %q, want pod in %q", e.Scope, e.Cgroup, shape.rel)
			}
			if e.PPID != uint32(os.Getpid()) {
				t.Errorf("exec ppid %d, want %d", e.PPID, os.Getpid())
			}

			rec.waitFor(t, "exec of sleep", 1, execOf(cg, "sleep"))
			exits := rec.waitFor(t, "exit of sh", 1, exitOf(cg, pid))
			x := exits[0].(*event.ProcessExit)
			if x.ExitCode != 3 || x.Signal != 0 {
				t.Errorf("exit code %d signal %d, want 3 and 0", x.ExitCode, x.Signal)
			}
			if !strings.HasSuffix(x.Filename, "sh") {
				t.Errorf("exit filename %q, want the shell", x.Filename)
			}
			if !x.Time.After(e.Time) || x.Time.Sub(e.Time) < 100*time.Millisecond {
				t.Errorf("exit at %v, exec at %v: want the 0.1 s sleep between", x.Time, e.Time)
			}
			// Both stamped in the kernel between the test's stamps
			// around the run, but for the error of the boot clock's
			// offset (clockSlack).
			for _, at := range []time.Time{e.Time, x.Time} {
				if at.Before(before.Add(-clockSlack)) || at.After(after.Add(clockSlack)) {
					t.Errorf("exec at %v, exit at %v: not within the run, %v to %v", e.Time, x.Time, before, after)
				}
			}
		})
	}
}

func TestIntegrationKilledBySignal(t *testing.T) {
	rec := startProcessSource(t, ProcessConfig{PodsOnly: true})
	cg := makeTestCgroup(t, "kubepods/burstable/pod"+testPodUID+"/"+testCID, testPodUID, testCID)
	cmd := cg.Command(t, "sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, "exec of sleep", 1, execOf(cg, "sleep"))
	cmd.Process.Kill()
	cmd.Wait()
	x := rec.waitFor(t, "exit of sleep", 1, exitOf(cg, cmd.Process.Pid))[0].(*event.ProcessExit)
	if x.Signal != int(syscall.SIGKILL) {
		t.Errorf("signal %d, want SIGKILL (9)", x.Signal)
	}
}

func TestIntegrationLeaderExitsBeforeWorker(t *testing.T) {
	testenv.RequirePrivileged(t)
	bin := filepath.Join(t.TempDir(), "mtexit")
	if out, err := exec.Command("gcc", "-O2", "-pthread", "-o", bin, "testdata/mtexit.c").CombinedOutput(); err != nil {
		t.Fatalf("compiling testdata/mtexit.c (gcc is needed): %v\n%s", err, out)
	}
	rec := startProcessSource(t, ProcessConfig{PodsOnly: true})
	cg := makeTestCgroup(t, "kubepods/besteffort/pod"+testPodUID+"/"+testCID, testPodUID, testCID)
	cmd := cg.Command(t, bin)
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 7 {
		t.Fatalf("running mtexit: %v", err)
	}
	rec.waitFor(t, "exit of mtexit", 1, exitOf(cg, cmd.Process.Pid))
	// Its last thread is gone before Run returned: a wrong second report
	// is committed before the barrier's marker.
	rec.barrier(t, cg)
	exits := rec.matching(exitOf(cg, cmd.Process.Pid))
	if len(exits) != 1 {
		t.Fatalf("%d exit events for one process, want 1: %v", len(exits), exits)
	}
	if x := exits[0].(*event.ProcessExit); x.ExitCode != 7 || x.Signal != 0 {
		t.Errorf("exit code %d signal %d, want 7 and 0", x.ExitCode, x.Signal)
	}
}

func TestIntegrationRapidExecsNoDrops(t *testing.T) {
	const n = 2000
	rec := startProcessSource(t, ProcessConfig{PodsOnly: true})
	cg := makeTestCgroup(t, "kubepods/besteffort/pod"+testPodUID+"/"+testCID, testPodUID, testCID)
	script := fmt.Sprintf("i=0; while [ $i -lt %d ]; do /bin/true; i=$((i+1)); done", n)
	start := time.Now()
	if out, err := cg.Command(t, "sh", "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("spawning: %v\n%s", err, out)
	}
	elapsed := time.Since(start)
	rec.waitFor(t, "execs of /bin/true", n, execOf(cg, "/bin/true"))
	rec.waitFor(t, "exits of true", n, func(ev event.Event) bool {
		e, ok := ev.(*event.ProcessExit)
		return ok && cg.owns(&e.Process) && e.Comm == "true"
	})
	if got := len(rec.matching(execOf(cg, "/bin/true"))); got != n {
		t.Errorf("%d execs of /bin/true, want exactly %d", got, n)
	}
	// Every record is read (each exit of true came): the kernel's drop
	// counter, read now rather than at Run's next look, says none was
	// lost, and no ring_full status said otherwise meanwhile.
	if drops, err := rec.src.prog.Drops(); err != nil || drops != 0 {
		t.Errorf("the kernel dropped %d records (%v): want none", drops, err)
	}
	if st := rec.src.Stats(); st.DecodeErrors != 0 {
		t.Errorf("stats %+v: want no decode errors", st)
	}
	lost := rec.matching(func(ev event.Event) bool { st, ok := ev.(*event.SourceStatus); return ok && !st.Up })
	if len(lost) != 0 {
		t.Errorf("statuses %v: want no ring_full", lost)
	}
	t.Logf("%d execs in %v (%.0f/s)", n, elapsed.Round(time.Millisecond), n/elapsed.Seconds())
}

// TestIntegrationRingLossStatus: records the kernel could not fit in a full
// ring buffer are counted, and the source says so in its stream: a Down
// ring_full with how many, from when the tracer was attached, then Up.
func TestIntegrationRingLossStatus(t *testing.T) {
	testenv.RequirePrivileged(t)
	// One page of ring buffer and no reader yet: a few hundred execs
	// cannot fit.
	src, err := NewProcessSource(ProcessConfig{RingBufferBytes: uint32(os.Getpagesize())}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("sh", "-c", "i=0; while [ $i -lt 300 ]; do /bin/true; i=$((i+1)); done").CombinedOutput(); err != nil {
		t.Fatalf("spawning: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	var statuses []*event.SourceStatus
	if err := src.Run(ctx, func(ev event.Event) {
		if st, ok := ev.(*event.SourceStatus); ok {
			statuses = append(statuses, st)
		}
	}); err != nil {
		t.Fatal(err)
	}
	st := src.Stats()
	if st.KernelDrops == 0 {
		t.Fatalf("stats %+v: want drops", st)
	}
	if len(statuses) < 2 {
		t.Fatalf("statuses %+v, want a ring_full Down and an Up", statuses)
	}
	down, up := statuses[0], statuses[1]
	if down.Up || down.Source != event.SourceProcess || down.Reason != event.ReasonRingFull || down.Lost == 0 ||
		down.Since.IsZero() || !down.Since.Before(down.Time) || !up.Up || !up.Time.Equal(down.Time) {
		t.Errorf("statuses %+v %+v, want Down ring_full since the attach, then Up", *down, *up)
	}
	var lost uint64
	for _, s := range statuses {
		lost += s.Lost
	}
	// Other processes of the host may lose records after the last status.
	if lost > st.KernelDrops || lost < 300 {
		t.Errorf("statuses say %d lost, the kernel counted %d of 300 execs' and exits' records", lost, st.KernelDrops)
	}
	// The reader found the ring full: the peak says so.
	if page := uint64(os.Getpagesize()); st.Ring.Size != page || st.Ring.Peak < page/2 || st.Ring.Peak > page {
		t.Errorf("ring usage %+v, want size %d and a peak near it", st.Ring, page)
	}
	t.Logf("%d records read, %d dropped; %d statuses; ring %+v", st.Records, st.KernelDrops, len(statuses), st.Ring)
}

// TestIntegrationShortLivedContainer: a container whose cgroup is removed
// right after its process exits, before the reader has seen any of its
// events, is still attributed (the kernel names the cgroup at first use).
func TestIntegrationShortLivedContainer(t *testing.T) {
	rec := startProcessSource(t, ProcessConfig{PodsOnly: true})
	for i := range 5 {
		cid := testCID[:63] + strconv.Itoa(i) // this process's, as testCID
		cg := makeTestCgroup(t, "kubepods/besteffort/pod"+testPodUID+"/"+cid, testPodUID, cid)
		cmd := cg.Command(t, "/bin/true")
		if err := cmd.Run(); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(cg.Dir); err != nil {
			t.Fatalf("removing the cgroup right after its process: %v", err)
		}
		rec.waitFor(t, "exec of true in a removed cgroup", 1, execOf(cg, "/bin/true"))
		rec.waitFor(t, "exit of true in a removed cgroup", 1, exitOf(cg, cmd.Process.Pid))
	}
}

// TestIntegrationArgvCutAt512: the README's "argv (up to 512 bytes, with
// the full length so truncation is visible)". An argv of exactly 512
// bytes (its NULs counted) comes whole; one of 1005 comes as its first
// 512 bytes, marked truncated.
func TestIntegrationArgvCutAt512(t *testing.T) {
	rec := startProcessSource(t, ProcessConfig{PodsOnly: true})
	cg := makeTestCgroup(t, "kubepods/besteffort/pod"+testPodUID+"/"+testCID, testPodUID, testCID)
	for _, tc := range []struct {
		arg       string // after "/bin/true\x00"
		want      string
		truncated bool
	}{
		{strings.Repeat("a", 511-len("/bin/true\x00")), strings.Repeat("a", 511-len("/bin/true\x00")), false},
		{strings.Repeat("b", 1005-len("/bin/true\x00")-1), strings.Repeat("b", 512-len("/bin/true\x00")), true},
	} {
		cmd := cg.Command(t, "/bin/true", tc.arg)
		if err := cmd.Run(); err != nil {
			t.Fatal(err)
		}
		e := rec.waitFor(t, "exec of true", 1, func(ev event.Event) bool {
			return execOf(cg, "/bin/true")(ev) && int(ev.(*event.ProcessExec).PID) == cmd.Process.Pid
		})[0].(*event.ProcessExec)
		if len(e.Argv) != 2 || e.Argv[1] != tc.want || e.ArgvTruncated != tc.truncated {
			got := strings.Join(e.Argv, "\x00")
			t.Errorf("an argv of %d bytes came as %d bytes, truncated %v; want %d, truncated %v",
				len("/bin/true\x00")+len(tc.arg)+1, len(got), e.ArgvTruncated, len("/bin/true\x00")+len(tc.want), tc.truncated)
		}
	}
}

// TestIntegrationCNIPluginEnvironment: a CNI plugin's exec carries its
// CNI_CONTAINERID and CNI_COMMAND, and nothing else of its environment.
func TestIntegrationCNIPluginEnvironment(t *testing.T) {
	testenv.RequirePrivileged(t)
	dir, err := os.MkdirTemp("/tmp", "rl-cni-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	plugin := filepath.Join(dir, "bridge")
	if out, err := exec.Command("cp", "/bin/true", plugin).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	rec := startProcessSource(t, ProcessConfig{PodsOnly: true, KeepCNI: true, CNIBinDirs: []string{dir}})
	const sandbox = "5b00000000000000000000000000000000000000000000000000000000000042"
	cmd := exec.Command(plugin)
	// libcni dedups the environment through a map: the CNI variables can be
	// anywhere, here first, before 6 KiB of the runtime's own.
	cmd.Env = []string{"CNI_COMMAND=ADD", "CNI_CONTAINERID=" + sandbox, "CNI_NETNS=/var/run/netns/cni-1",
		"CNI_ARGS=K8S_POD_NAMESPACE=default;K8S_POD_NAME=p;K8S_POD_UID=" + testPodUID,
		"CNI_IFNAME=eth0", "CNI_PATH=/opt/cni/bin", "PATH=/bin", "SECRET_TOKEN=hunter2", "HOME=/root"}
	for i := range 50 {
		cmd.Env = append(cmd.Env, fmt.Sprintf("FILLER_%02d=%s", i, strings.Repeat("x", 110)))
	}
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	ev := rec.waitFor(t, "exec of the plugin", 1, func(ev event.Event) bool {
		e, ok := ev.(*event.ProcessExec)
		return ok && int(e.PID) == cmd.Process.Pid
	})[0].(*event.ProcessExec)
	if ev.Scope != event.ScopeCNI || ev.CNIContainerID != sandbox || ev.CNICommand != "ADD" {
		t.Errorf("plugin exec: scope %s, CNI_CONTAINERID %q, CNI_COMMAND %q", ev.Scope, ev.CNIContainerID, ev.CNICommand)
	}
	b, _ := event.Marshal(ev)
	if strings.Contains(string(b), "hunter2") || strings.Contains(string(b), "netns") {
		t.Errorf("other environment variables left the kernel: %s", b)
	}
	// A program outside the CNI directories gets no CNI fields.
	other := exec.Command("/bin/true")
	other.Env = cmd.Env
	other.Run()
	rec.barrier(t, makeTestCgroup(t, "kubepods/besteffort/pod"+testPodUID+"/"+testCID, testPodUID, testCID))
	for _, e := range rec.matching(func(ev event.Event) bool { return true }) {
		if x, ok := e.(*event.ProcessExec); ok && int(x.PID) == other.Process.Pid {
			t.Errorf("a host process was reported with PodsOnly: %+v", x)
		}
	}
}

// TestIntegrationDrainedMarks: the source says how far it has read, in its
// stream: no fact stamped before a Drained comes after it, and a quiet
// ring says so at least every poll.
func TestIntegrationDrainedMarks(t *testing.T) {
	const n = 500
	rec := startProcessSource(t, ProcessConfig{PodsOnly: true})
	cg := makeTestCgroup(t, "kubepods/besteffort/pod"+testPodUID+"/"+testCID, testPodUID, testCID)
	script := fmt.Sprintf("i=0; while [ $i -lt %d ]; do /bin/true; i=$((i+1)); done", n)
	if out, err := cg.Command(t, "sh", "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("spawning: %v\n%s", err, out)
	}
	last := rec.waitFor(t, "exits of true", n, func(ev event.Event) bool {
		e, ok := ev.(*event.ProcessExit)
		return ok && cg.owns(&e.Process) && e.Comm == "true"
	})[n-1]
	// A mark past the last exit, within a few polls.
	rec.waitFor(t, "a mark past the last exit", 1, func(ev event.Event) bool {
		d, ok := ev.(*event.Drained)
		return ok && d.Source == event.SourceProcess && !d.Time.Before(last.When())
	})
	// A quiet ring says so too, every poll: three marks after the stamp
	// (however long the scheduler makes them take to come).
	quiet := time.Now()
	rec.waitFor(t, "marks of a quiet ring", 3, func(ev event.Event) bool {
		d, ok := ev.(*event.Drained)
		return ok && d.Source == event.SourceProcess && d.Time.After(quiet)
	})

	rec.mu.Lock()
	defer rec.mu.Unlock()
	var mark time.Time
	marks, quietMarks := 0, 0
	for _, ev := range rec.events {
		switch e := ev.(type) {
		case *event.Drained:
			if e.Time.Before(mark) {
				t.Errorf("marks go back: %v after %v", e.Time, mark)
			}
			mark = e.Time
			marks++
			if e.Time.After(quiet) {
				quietMarks++
			}
		case *event.ProcessExec, *event.ProcessExit, *event.ProcessFork:
			if ev.When().Before(mark.Add(-clockSlack)) {
				t.Errorf("%s at %v came after a mark at %v", ev.Type(), ev.When(), mark)
			}
		}
	}
	t.Logf("%d marks in all, %d while quiet (poll %v)", marks, quietMarks, bpf.ProcessPollInterval)
}

// TestIntegrationNestedPIDNamespacesAreNotFollowed: a container's processes
// (one PID namespace below the source's) are reported; those a namespace
// deeper (a kind node's pods seen from the host, a container's own
// containers) are not.
func TestIntegrationNestedPIDNamespacesAreNotFollowed(t *testing.T) {
	rec := startProcessSource(t, ProcessConfig{PodsOnly: true})
	cg := makeTestCgroup(t, "kubepods/besteffort/pod"+testPodUID+"/"+testCID, testPodUID, testCID)
	for _, args := range [][]string{
		{"unshare", "--pid", "--fork", "/bin/echo", "one-level"},
		{"unshare", "--pid", "--fork", "unshare", "--pid", "--fork", "/bin/echo", "two-levels"},
	} {
		if out, err := cg.Command(t, args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	echo := func(arg string) func(event.Event) bool {
		return func(ev event.Event) bool {
			e, ok := ev.(*event.ProcessExec)
			return ok && cg.owns(&e.Process) && strings.HasSuffix(e.Filename, "/echo") && slices.Contains(e.Argv, arg)
		}
	}
	rec.waitFor(t, "the exec one namespace down", 1, echo("one-level"))
	// Both ran before the source read its ring; wait for a mark past them.
	now := time.Now()
	rec.waitFor(t, "a drained mark", 1, func(ev event.Event) bool {
		d, ok := ev.(*event.Drained)
		return ok && d.Time.After(now)
	})
	if got := rec.matching(echo("two-levels")); len(got) != 0 {
		t.Errorf("the exec two namespaces down was reported: %+v", got[0])
	}
}

// TestIntegrationNestedNodesPodsAreNotThisNodes: from the host, the pods of
// a node that is itself a container (kind) are seen in cgroups nested in
// that container's; they are not this node's and not reported as its pods.
func TestIntegrationNestedNodesPodsAreNotThisNodes(t *testing.T) {
	rec := startProcessSource(t, ProcessConfig{PodsOnly: true})
	if !rec.src.hostView {
		t.Fatal("the test runs in the initial PID namespace")
	}
	kindNode := strings.Repeat("ab", 32)
	nested := makeTestCgroup(t, "docker/"+kindNode+"/kubelet/kubepods/besteffort/pod"+testPodUID+"/"+testCID, testPodUID, testCID)
	ours := makeTestCgroup(t, "kubepods/besteffort/pod"+testPodUID+"/"+testCID, testPodUID, testCID)
	for _, cg := range []testCgroup{nested, ours} {
		if out, err := cg.Command(t, "/bin/echo", "hello").CombinedOutput(); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	}
	rec.waitFor(t, "this node's pod's exec", 1, execOf(ours, "/echo"))
	now := time.Now()
	rec.waitFor(t, "a drained mark", 1, func(ev event.Event) bool {
		d, ok := ev.(*event.Drained)
		return ok && d.Time.After(now)
	})
	for _, ev := range rec.matching(execOf(ours, "/echo")) {
		if e := ev.(*event.ProcessExec); strings.Contains(e.Cgroup, kindNode) {
			t.Errorf("the nested node's pod's exec was reported: %+v", e)
		}
	}
	if st := rec.src.Stats(); st.OtherNode == 0 {
		t.Errorf("stats %+v: want the nested node's events counted", st)
	}
}
