package collector

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cilium/ebpf/features"
	"golang.org/x/sys/unix"

	"github.com/readyline/readyline/bpf"
	"github.com/readyline/readyline/collector/event"
	"github.com/readyline/readyline/collector/testenv"
)

// crilikeName is what this test binary names its builds of crilike, and its
// kubelet-call sources look for: its own name, so that tests run at the same
// time on one machine (other worktrees, other packages) never take each
// other's crilike for their target.
var crilikeName = fmt.Sprintf("crilike%d", os.Getpid())

// crilikeBuilds are the builds of gofunc/testdata/crilike the tests probe,
// by name: their go build flags.
var crilikeBuilds = map[string][]string{
	"stripped":     {"-ldflags=-s -w"},
	"stripped-pie": {"-buildmode=pie", "-ldflags=-s -w"},
}

// crilikeDirEnv names a directory of crilike builds made ahead of the test,
// crilike.<build> for each of crilikeBuilds, for a machine without a Go
// toolchain: deploy/kernel/run-6.1.sh's guest.
const crilikeDirEnv = "READYLINE_CRILIKE_DIR"

// buildCrilike returns crilike's build named build (see crilikeBuilds) as
// an executable named crilikeName: built now, or copied from
// $READYLINE_CRILIKE_DIR.
func buildCrilike(tb testing.TB, build string) string {
	tb.Helper()
	flags, ok := crilikeBuilds[build]
	if !ok {
		tb.Fatalf("no crilike build %q", build)
	}
	bin := filepath.Join(tb.TempDir(), crilikeName)
	if dir := os.Getenv(crilikeDirEnv); dir != "" {
		b, err := os.ReadFile(filepath.Join(dir, "crilike."+build))
		if err == nil {
			err = os.WriteFile(bin, b, 0o755)
		}
		if err != nil {
			tb.Fatalf("taking crilike's %s build from %s=%s: %v", build, crilikeDirEnv, dir, err)
		}
		return bin
	}
	args := append(append([]string{"build", "-o", bin}, flags...), "./gofunc/testdata/crilike")
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		tb.Fatalf("building crilike: %v\n%s", err, out)
	}
	return bin
}

// crilikeTarget probes gofunc/testdata/crilike, built by buildCrilike: the
// kubelet's method table with crilike's symbols (package main) and its
// plain-struct layouts.
func crilikeTarget() *probeTarget {
	methods := slices.Clone(criMethods)
	for i := range methods {
		methods[i].Symbol = strings.Replace(methods[i].Symbol, criClientPackage, "main", 1)
	}
	// crilike's PodSandboxConfig{Metadata *PodSandboxMetadata{Name, UID ...}},
	// ContainerConfig{Name ...}, ImageSpec{Image}: read the pod name where
	// the kubelet's table reads the UID, as crilike prints the name.
	podName := func(reg uint8) bpf.GoprobeDerefSpec {
		return bpf.GoprobeDerefSpec{Reg: reg, Kind: bpf.DerefPtrString, Off1: 0, Off2: 0}
	}
	for i := range methods {
		switch methods[i].Method {
		case event.CRIRunPodSandbox:
			methods[i].spec = func(*criOffsets) bpf.GoprobeFuncSpec {
				s := noRegs()
				s.Deref[0] = podName(bpf.IntReg3)
				s.RetStr, s.RetErr = bpf.IntReg0, bpf.IntReg2
				return s
			}
		case event.CRICreateContainer:
			methods[i].spec = func(*criOffsets) bpf.GoprobeFuncSpec {
				s := noRegs()
				s.StrArg = bpf.IntReg3
				s.Deref[0] = bpf.GoprobeDerefSpec{Reg: bpf.IntReg5, Kind: bpf.DerefString}
				s.Deref[1] = podName(bpf.IntReg6)
				s.RetStr, s.RetErr = bpf.IntReg0, bpf.IntReg2
				return s
			}
		case event.CRIPullImage:
			methods[i].spec = func(*criOffsets) bpf.GoprobeFuncSpec {
				s := noRegs()
				s.Deref[0] = bpf.GoprobeDerefSpec{Reg: bpf.IntReg3, Kind: bpf.DerefString}
				s.Deref[1] = podName(bpf.IntReg5)
				s.RetStr, s.RetErr = bpf.IntReg0, bpf.IntReg2
				return s
			}
		}
	}
	return &probeTarget{process: crilikeName, methods: methods,
		offsets: func(*debug.BuildInfo, *slog.Logger) *criOffsets { return &criOffsets{} }}
}

// crilikeSleep is how many -sleep units each method sleeps (crilike's doc).
var crilikeSleep = map[string]time.Duration{
	"RunPodSandbox": 3, "StopPodSandbox": 1, "RemovePodSandbox": 1, "CreateContainer": 2,
	"StartContainer": 1, "StopContainer": 1, "RemoveContainer": 1, "ExecSync": 1, "PullImage": 4,
}

// crilikeCall is one line crilike -print writes.
type crilikeCall struct {
	Method  string   `json:"method"`
	Arg     string   `json:"arg"`
	Cmd     []string `json:"cmd"`
	Result  string   `json:"result"`
	Err     string   `json:"err"`
	StartNs int64    `json:"start_ns"`
	EndNs   int64    `json:"end_ns"`
}

// waitAllCalls waits, once the probed process has exited, until every
// record its probes wrote is out of the source: each return probed writes
// one (the kernel counts them, and the ones a full ring lost), each is
// emitted as a call (appended to calls, under mu) or counted as
// undecodable. A positive end, where waiting for the stream to go quiet
// would end early on a busy machine.
func waitAllCalls(t *testing.T, src *KubeletCallSource, mu *sync.Mutex, calls *[]*event.CRICall) {
	t.Helper()
	waitFor(t, 30*time.Second, "every call the kernel recorded", func() bool {
		st := src.Stats()
		mu.Lock()
		defer mu.Unlock()
		return uint64(len(*calls))+st.DecodeErrors >= st.Kernel.Returns-st.Kernel.Drops
	})
}

// eventArgs says what of a CRICall crilike prints as arg and result.
func eventArgs(c *event.CRICall) (arg, result string) {
	switch c.Method.Short() {
	case "RunPodSandbox":
		return c.PodUID, c.PodSandboxID
	case "StopPodSandbox", "RemovePodSandbox":
		return c.PodSandboxID, ""
	case "CreateContainer":
		return c.PodSandboxID, c.ContainerID
	case "StartContainer", "StopContainer", "RemoveContainer", "ExecSync":
		return c.ContainerID, ""
	case "PullImage":
		return c.Image, c.ImageRef
	}
	return "", ""
}

// expectCRIUprobesEnv, when set, is how the kubelet-call probes must attach on
// this kernel (UprobeMulti or UprobePerAddress): deploy/kernel/run-6.1.sh
// sets per_address, so that a 6.1 guest cannot pass on another path. Unset,
// the tests ask the kernel whether it has uprobe_multi.
const expectCRIUprobesEnv = "READYLINE_EXPECT_CRI_UPROBES"

// expectedUprobes is how a KubeletCallSource should attach here when left to
// choose.
func expectedUprobes(t *testing.T) string {
	if want := os.Getenv(expectCRIUprobesEnv); want != "" {
		return want
	}
	if err := features.HaveBPFLinkUprobeMulti(); err != nil {
		t.Logf("no uprobe_multi here (%v): expecting per-address uprobes", err)
		return UprobePerAddress
	}
	return UprobeMulti
}

func TestIntegrationKubeletCallsOfAStrippedBinary(t *testing.T) {
	testenv.RequirePrivileged(t)
	for _, tc := range []struct {
		name       string
		build      string
		run        []string
		perAddress bool // forced, where the kernel has uprobe_multi
	}{
		{"stripped", "stripped", nil, false},
		{"stripped PIE, new goroutine per call (morestack)", "stripped-pie", []string{"-fresh"}, false},
		{"stripped, per-address uprobes", "stripped", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := buildCrilike(t, tc.build)
			wantUprobes := expectedUprobes(t)
			if tc.perAddress {
				wantUprobes = UprobePerAddress
			}
			logs := &logRecorder{}
			run := probeCrilike(t, KubeletCallConfig{PerAddress: tc.perAddress}, logs, bin,
				append([]string{"-print", "-calls", "40", "-goroutines", "4", "-sleep", "5ms", "-err-every", "3"}, tc.run...))
			printed, events, attached, st := run.printed, run.events, run.attached, run.st
			t.Logf("kubelet-call probes attached as %s on Linux %s", st.Uprobes, kernelRelease(t))
			if st.Uprobes != wantUprobes {
				t.Errorf("probes attached as %q, want %q", st.Uprobes, wantUprobes)
			}
			// Left to choose on a kernel without uprobe_multi, the source
			// says why it falls back.
			fallback := logs.withAttrs(slog.LevelInfo, "uprobe_multi unavailable")
			for _, r := range fallback {
				t.Logf("the source logged: %s", r)
			}
			if want := !tc.perAddress && wantUprobes == UprobePerAddress; want != (len(fallback) > 0) {
				t.Errorf("%d logs of the fallback to per-address uprobes, want them: %v", len(fallback), want)
			}
			checkCRICalls(t, printed, events, attached, st)
			if st.ThreadHops == 0 {
				t.Error("no call returned on another thread: the goroutine keying went untested")
			}
			// Attached at once, the probes miss the entry of at most one
			// call per goroutine (checkCRICalls checks each, either way).
			if (st.Uprobes == UprobeMulti && st.Kernel.ReturnsWithoutEntry > 8) || st.Kernel.Drops > 0 {
				t.Errorf("kernel counters %+v", st.Kernel)
			}
		})
	}
}

// crilikeRun is what a KubeletCallSource saw of one run of crilike.
type crilikeRun struct {
	printed  []crilikeCall    // the calls crilike made, as it printed them
	events   []*event.CRICall // the calls the source reported
	attached time.Time        // when the source said it was up: every probe in place
	st       KubeletCallStats // after every call came through
}

// probeCrilike runs crilike (bin, with args) under a KubeletCallSource of cfg
// (its Rescan and target set here) until it exits and every call it made
// came through, and checks that none is left in flight.
func probeCrilike(t *testing.T, cfg KubeletCallConfig, logs *logRecorder, bin string, args []string) crilikeRun {
	t.Helper()
	cfg.Rescan, cfg.target = 50*time.Millisecond, crilikeTarget()
	src, err := NewKubeletCallSource(cfg, slog.New(logs))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var run crilikeRun
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- src.Run(ctx, func(ev event.Event) {
			mu.Lock()
			defer mu.Unlock()
			switch ev := ev.(type) {
			case *event.CRICall:
				run.events = append(run.events, ev)
			case *event.SourceStatus:
				if ev.Up && run.attached.IsZero() {
					run.attached = ev.Time
				}
			}
		})
	}()

	// Let crilike run long enough for the source to find and probe it.
	cmd := exec.Command(bin, args...)
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		var c crilikeCall
		if json.Unmarshal(sc.Bytes(), &c) == nil && c.Method != "" {
			run.printed = append(run.printed, c)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("crilike: %v", err)
	}
	// The last records: on a busy machine (or an emulated one,
	// deploy/kernel) they take more than a poll or two to come through.
	waitAllCalls(t, src, &mu, &run.events)
	run.st = src.Stats()
	// crilike has exited, every call it made returned: a call still in
	// flight is an entry whose return the probes missed, and CallsInFlight
	// would report it for an hour.
	inFlight, err := src.CallsInFlight()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range inFlight {
		t.Errorf("%s entered at %v is still in flight after crilike exited", c.Method.Short(), c.Time)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	return run
}

// TestIntegrationKubeletCallsPushedOutAreLost: with room for two calls in
// flight and eight goroutines calling at once, saved entries are pushed
// out of the kernel's map before their return; those calls come without
// their start and are counted as lost (entry_missed), apart from the calls
// under way when the probes attached, which are not a loss.
func TestIntegrationKubeletCallsPushedOutAreLost(t *testing.T) {
	testenv.RequirePrivileged(t)
	bin := buildCrilike(t, "stripped")
	run := probeCrilike(t, KubeletCallConfig{MaxCallsInFlight: 2}, &logRecorder{}, bin,
		[]string{"-print", "-calls", "20", "-goroutines", "8", "-sleep", "5ms"})
	st := run.st
	withoutEntry, before := 0, 0
	for _, e := range run.events {
		if e.Time.IsZero() {
			withoutEntry++
		}
	}
	for _, p := range run.printed {
		if time.Unix(0, p.StartNs).Before(run.attached) {
			before++
		}
	}
	t.Logf("%d calls printed, %d before the source was up; %d reported without their entry; stats %+v", len(run.printed), before, withoutEntry, st)
	if st.EntriesLost == 0 {
		t.Errorf("no entry counted lost, with room for 2 calls in flight of 8 goroutines: %+v", st)
	}
	// Every return without its entry is counted, lost or from before the
	// probes. Lost entries may be more, by two kinds of call that leave a
	// pushed-out entry with no return to match it:
	//   - a call begun before the source was up (every probe in place):
	//     with per-address uprobes (no uprobe_multi, Linux before 6.6) it
	//     can enter after its entry probe went in and return before its
	//     RETs' did. Under emulation (deploy/kernel's arm64 guest) the
	//     probes go in slowly enough for 18 such calls, of 49 begun before.
	//   - a call whose goroutine's stack grew on entry (morestack runs the
	//     entry probe again) after the full map had pushed out its first
	//     save: saved twice, returned once. A stack grows a few times in a
	//     goroutine's life, not per call: one such call per goroutine is
	//     the most seen (1313 lost for 1312 returns without their entry,
	//     none begun before, in the amd64 6.1 guest).
	const goroutines = 8
	if uint64(withoutEntry) != st.Kernel.ReturnsWithoutEntry || st.EntriesLost+st.BeforeAttach < st.Kernel.ReturnsWithoutEntry ||
		st.EntriesLost > st.Kernel.ReturnsWithoutEntry+uint64(before)+goroutines {
		t.Errorf("%d calls without their entry: %d lost + %d before the probes, the kernel counted %d (%d calls begun before the source was up, %d goroutines)",
			withoutEntry, st.EntriesLost, st.BeforeAttach, st.Kernel.ReturnsWithoutEntry, before, goroutines)
	}
	if st.BeforeAttach > uint64(before) {
		t.Errorf("%d calls counted as under way when the probes attached, crilike began only %d before", st.BeforeAttach, before)
	}
	losses := map[string]uint64{}
	for _, l := range st.Losses() {
		losses[l.Reason] = l.N
	}
	if losses[event.ReasonEntryMissed] != st.EntriesLost {
		t.Errorf("losses %v, want entry_missed %d", losses, st.EntriesLost)
	}
}

// checkCRICalls checks that every call crilike printed that began after
// attached (all probes in place: per-address uprobes go in one by one) was
// seen, with its arguments, results and times, and that each call seen
// without its entry began before.
func checkCRICalls(t *testing.T, printed []crilikeCall, events []*event.CRICall, attached time.Time, st KubeletCallStats) {
	t.Helper()
	if len(events) == 0 || attached.IsZero() {
		t.Fatalf("no calls seen, or the source never said it was up (stats %+v)", st)
	}
	matched := 0
	var gaps []time.Duration
	used := make([]bool, len(events))
	for _, p := range printed {
		method := p.Method
		if method == "ContainerStatus" || method == "PodSandboxStatus" || method == "ListContainers" {
			continue // not probed
		}
		start, end := time.Unix(0, p.StartNs), time.Unix(0, p.EndNs)
		if start.Before(attached.Add(100 * time.Millisecond)) {
			continue
		}
		found := -1
		for i, e := range events {
			arg, result := eventArgs(e)
			if used[i] || e.Method.Short() != method || arg != p.Arg || (result != "" && result != p.Result) {
				continue
			}
			if e.Time.IsZero() || e.Time.Before(start.Add(-2*time.Millisecond)) || e.End.After(end.Add(2*time.Millisecond)) {
				continue
			}
			found = i
			break
		}
		if found < 0 {
			t.Errorf("%s(%s) -> %q %q at %v: not seen", method, p.Arg, p.Result, p.Err, start)
			continue
		}
		used[found] = true
		matched++
		e := events[found]
		if e.Err != (p.Err != "") {
			t.Errorf("%s(%s): error %v, crilike said %q", method, p.Arg, e.Err, p.Err)
		}
		// Inside the call (the kernel) is no longer than around it (crilike's
		// clock), and no shorter than the sleep the method makes; scheduling
		// on a busy machine can stretch the outside measure.
		d, around := e.End.Sub(e.Time), end.Sub(start)
		if d > around+500*time.Microsecond {
			t.Errorf("%s(%s): %v in the kernel, longer than the %v around the call", method, p.Arg, d, around)
		}
		if sleep := crilikeSleep[method] * 5 * time.Millisecond; p.Err != "" && !strings.Contains(p.Err, "runtime said no") {
			// an early error return: no sleep
		} else if d < sleep {
			t.Errorf("%s(%s): %v in the kernel, shorter than its %v sleep", method, p.Arg, d, sleep)
		}
		gaps = append(gaps, around-d)
		if method == "ExecSync" && !slices.Equal(e.Cmd, p.Cmd) {
			t.Errorf("ExecSync cmd %q, want %q", e.Cmd, p.Cmd)
		}
	}
	if matched < 100 {
		t.Errorf("only %d calls matched", matched)
	}
	// How much longer crilike's measure is than the kernel's is told, not
	// judged: it is the time between crilike's clock reads and the probed
	// entry and return, which a busy machine stretches at will. What the
	// probes' place guarantees is checked above: the kernel's call inside
	// crilike's stamps, no longer than around it.
	// A call seen without its entry was under way while the probes went
	// in: crilike began it before the source was up, and ended it then.
	withoutEntry := 0
	for _, e := range events {
		if !e.Time.IsZero() {
			continue
		}
		withoutEntry++
		underWay := slices.ContainsFunc(printed, func(p crilikeCall) bool {
			start, end := time.Unix(0, p.StartNs), time.Unix(0, p.EndNs)
			return p.Method == e.Method.Short() && start.Before(attached) &&
				!e.End.Before(start.Add(-2*time.Millisecond)) && !e.End.After(end.Add(2*time.Millisecond))
		})
		if !underWay {
			t.Errorf("%s ended at %v without its entry: crilike made no such call before the source was up at %v", e.Method.Short(), e.End, attached)
		}
	}
	if uint64(withoutEntry) != st.Kernel.ReturnsWithoutEntry {
		t.Errorf("%d calls without their entry, the kernel counted %d", withoutEntry, st.Kernel.ReturnsWithoutEntry)
	}
	// Each of them was under way as the probes went in: none is a loss.
	if st.BeforeAttach != uint64(withoutEntry) || st.EntriesLost != 0 {
		t.Errorf("%d calls without their entry, all under way before the probes: counted %d so and %d lost entries",
			withoutEntry, st.BeforeAttach, st.EntriesLost)
	}
	slices.Sort(gaps)
	t.Logf("%d calls matched; %d events; crilike's measure longer by median %v, p99 %v; stats %+v",
		matched, len(events), gaps[len(gaps)/2], gaps[len(gaps)*99/100], st)
}

// TestIntegrationKubeletCallsOfTheNodesTargetOnly runs, before the real
// target, two copies of it that must not be taken for it although they are
// older: one in a pod's cgroup, one in a PID namespace of its own (the
// target here is crilike, named crilikeName, not a binary named kubelet,
// so that a kubelet running on this machine cannot enter the test).
func TestIntegrationKubeletCallsOfTheNodesTargetOnly(t *testing.T) {
	testenv.RequirePrivileged(t)
	bin := buildCrilike(t, "stripped")
	start := func(cmd *exec.Cmd) (*exec.Cmd, io.WriteCloser) {
		t.Helper()
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd, stdin
	}
	pod := testenv.NewCgroup(t, "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1b2c3d4e_0000_1111_2222_333344445555.slice/cri-containerd-"+hex64+".scope")
	inPod, _ := start(pod.Command(t, bin, "-calls", "1", "-wait-stdin"))
	start(exec.Command("unshare", "--pid", "--fork", "--kill-child", bin, "-calls", "1", "-wait-stdin"))
	time.Sleep(50 * time.Millisecond) // older by more than a clock tick
	target, stdin := start(exec.Command(bin, "-calls", "3", "-sleep", "1ms", "-wait-stdin"))

	logs := &logRecorder{}
	src, err := NewKubeletCallSource(KubeletCallConfig{Rescan: 20 * time.Millisecond, target: crilikeTarget()}, slog.New(logs))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var calls []*event.CRICall
	var statuses []string // and the number of calls before each
	var statusAt []time.Time
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- src.Run(ctx, func(ev event.Event) {
			mu.Lock()
			defer mu.Unlock()
			switch e := ev.(type) {
			case *event.CRICall:
				calls = append(calls, e)
			case *event.SourceStatus:
				statuses = append(statuses, fmt.Sprintf("%d calls, up %v %s", len(calls), e.Up, e.Reason))
				statusAt = append(statusAt, e.Time)
			}
		})
	}()
	waitFor(t, 10*time.Second, "the probes to attach", func() bool { return src.Stats().Attaches > 0 })
	stdin.Close()
	if err := target.Wait(); err != nil {
		t.Fatalf("crilike: %v", err)
	}
	waitAllCalls(t, src, &mu, &calls)
	waitFor(t, 10*time.Second, "the Down of the target's exit", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(statuses) >= 2
	})
	st := src.Stats()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if st.Attaches != 1 {
		t.Errorf("%d attaches, want 1 (to crilike %d)", st.Attaches, target.Process.Pid)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(calls) == 0 {
		t.Fatalf("no call seen (stats %+v)", st)
	}
	for _, c := range calls {
		if int(c.PID) != target.Process.Pid {
			t.Fatalf("a call of pid %d, want the target's %d (the pod's copy is %d)", c.PID, target.Process.Pid, inPod.Process.Pid)
		}
	}
	if w := logs.matching(slog.LevelWarn, "second"); len(w) > 0 {
		t.Errorf("warned %q: the copies are no candidates", w)
	}
	// Up before the first call; once the target exits, the copies left do
	// not count. (Its last calls may still be on their way when it is
	// found gone: they come after the Down, as many as a busy machine
	// left in the ring; but the Down is stamped after each of them ended,
	// on the same clock.)
	if len(statuses) != 2 || statuses[0] != "0 calls, up true " ||
		!strings.HasSuffix(statuses[1], " calls, up false no_kubelet") {
		t.Errorf("statuses %q, want Up then Down no_kubelet", statuses)
	} else {
		for _, c := range calls {
			if c.End.After(statusAt[1].Add(clockSlack)) {
				t.Errorf("the Down at %v is before the end of a call of the target, %v", statusAt[1], c.End)
				break
			}
		}
	}
	t.Logf("%d calls, all of crilike %d; stats %+v", len(calls), target.Process.Pid, st)
}

// TestIntegrationKubeletCallsReadEachBinaryOnce restarts the target from the
// same file and runs, twice, a program of its name that is not a Go
// program: each file is read once, the restart probed from what was found
// then, the other refused from what was found then.
func TestIntegrationKubeletCallsReadEachBinaryOnce(t *testing.T) {
	testenv.RequirePrivileged(t)
	bin := buildCrilike(t, "stripped")
	impostor := filepath.Join(t.TempDir(), crilikeName)
	sleep, err := os.ReadFile("/bin/sleep")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(impostor, sleep, 0o755); err != nil {
		t.Fatal(err)
	}

	src, err := NewKubeletCallSource(KubeletCallConfig{Rescan: 20 * time.Millisecond, target: crilikeTarget()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var statuses []string
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- src.Run(ctx, func(ev event.Event) {
			if e, ok := ev.(*event.SourceStatus); ok {
				mu.Lock()
				statuses = append(statuses, fmt.Sprintf("up %v %s", e.Up, e.Reason))
				mu.Unlock()
			}
		})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	lastStatus := func() string {
		mu.Lock()
		defer mu.Unlock()
		if len(statuses) == 0 {
			return ""
		}
		return statuses[len(statuses)-1]
	}
	run := func(path string, args ...string) (*exec.Cmd, io.WriteCloser) {
		t.Helper()
		cmd := exec.Command(path, args...)
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd, stdin
	}

	for i := range 2 {
		cmd, stdin := run(bin, "-calls", "1", "-sleep", "1ms", "-wait-stdin")
		waitFor(t, 10*time.Second, "the probes to attach", func() bool { return src.Stats().Attaches == uint64(i+1) })
		stdin.Close()
		cmd.Wait()
		waitFor(t, 5*time.Second, "the target's exit to be seen", func() bool { return lastStatus() == "up false no_kubelet" })
	}
	if st := src.Stats(); st.BinaryReads != 1 {
		t.Errorf("%d executables read for two runs of one, want 1", st.BinaryReads)
	}

	a, _ := run(impostor, "30")
	b, _ := run(impostor, "30")
	waitFor(t, 10*time.Second, "the copies of sleep to be refused", func() bool { return lastStatus() == "up false attach_failed" })
	a.Process.Kill()
	a.Wait()
	b.Process.Kill()
	b.Wait()
	waitFor(t, 10*time.Second, "the copies' exit to be seen", func() bool { return lastStatus() == "up false no_kubelet" })
	run(impostor, "30")
	waitFor(t, 10*time.Second, "the third copy to be refused", func() bool { return lastStatus() == "up false attach_failed" })
	if st := src.Stats(); st.BinaryReads != 2 || st.Attaches != 2 {
		t.Errorf("%d executables read, %d attaches; want 2 (crilike, sleep) and 2", st.BinaryReads, st.Attaches)
	}
	mu.Lock()
	t.Logf("statuses %q; stats %+v", statuses, src.Stats())
	mu.Unlock()
}

// kernelRelease is uname -r.
func kernelRelease(t *testing.T) string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		t.Fatal(err)
	}
	return unix.ByteSliceToString(u.Release[:])
}

// TestIntegrationCallsInFlight: a call crilike is in the middle of is read
// from the kernel's map with its arguments, PullsInFlight giving the
// PullImage calls alone.
func TestIntegrationCallsInFlight(t *testing.T) {
	testenv.RequirePrivileged(t)
	bin := buildCrilike(t, "stripped")
	// Every round begins with a PullImage of 4 units: 2 s here.
	cmd := exec.Command(bin, "-calls", "0", "-goroutines", "2", "-sleep", "500ms")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	src, err := NewKubeletCallSource(KubeletCallConfig{Rescan: 50 * time.Millisecond, target: crilikeTarget()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx, func(event.Event) {}) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	var pulls, all []*event.CRICall
	waitFor(t, time.Minute, "a PullImage in flight", func() bool {
		if pulls, err = src.PullsInFlight(); err != nil {
			t.Fatal(err)
		}
		return len(pulls) > 0
	})
	for _, c := range pulls {
		if c.Method != event.CRIPullImage || c.Image == "" || !c.End.IsZero() || c.Time.IsZero() {
			t.Errorf("a pull in flight: %+v", c)
		}
	}
	waitFor(t, time.Minute, "another method in flight", func() bool {
		if all, err = src.CallsInFlight(); err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(all, func(c *event.CRICall) bool { return c.Method != event.CRIPullImage })
	})
}
