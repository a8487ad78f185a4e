package bpf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/cilium/ebpf/ringbuf"

	"github.com/readyline/readyline/collector/testenv"
)

// TestIntegrationPodsOnlyInTheKernel: with PodsOnly, the kernel reports a
// pod's processes (a cgroup below one named kubepods), a CNI plugin's exec
// and exit and its forks, and leaves out, counted, a host process's events
// and what a plugin's child execs outside the CNI directories. Read from the ring
// itself: user space drops the same events, and would hide a kernel that
// sent them.
func TestIntegrationPodsOnlyInTheKernel(t *testing.T) {
	testenv.RequirePrivileged(t)
	cniDir, err := os.MkdirTemp("/tmp", "rl-cni-") // short: a CNI directory has at most 31 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(cniDir) })
	plugin := filepath.Join(cniDir, "bridge")
	if out, err := exec.Command("cp", "/bin/sh", plugin).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	prog, err := LoadProcessProgram(ProcessOptions{PodsOnly: true, CNIDirs: []string{cniDir}, RingBufferBytes: 1 << 22})
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	rd, err := ringbuf.NewReader(prog.Events())
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()

	pod := testenv.NewCgroup(t, "kubepods/besteffort/pod3f9c2a7e-1b4d-4e8a-9c6f-0d2b5e7a1c34/"+
		fmt.Sprintf("%064x", os.Getpid()))
	host := testenv.NewCgroup(t, "host.slice/job.scope")
	run := func(cmd *exec.Cmd) int {
		t.Helper()
		if err := cmd.Run(); err != nil {
			t.Fatalf("%v: %v", cmd.Args, err)
		}
		return cmd.Process.Pid
	}
	filteredBefore, err := prog.Filtered()
	if err != nil {
		t.Fatal(err)
	}
	hostPID := run(host.Command(t, "/bin/true"))
	podPID := run(pod.Command(t, "/bin/true"))
	// The plugin runs a program outside the CNI directories in a child.
	pluginPID := run(host.Command(t, plugin, "-c", "/bin/true; exit 0"))
	barrier := run(pod.Command(t, "/bin/sleep", "0"))

	type seen struct{ exec, fork, exit bool }
	got := map[uint32]*seen{}
	var pluginChild uint32
	// The programs wake no reader below a quarter of the ring: poll, as
	// the collector does (ProcessPollInterval).
	giveUp := time.Now().Add(10 * time.Second)
	for got[uint32(barrier)] == nil || !got[uint32(barrier)].exit {
		rd.SetDeadline(time.Now().Add(ProcessPollInterval))
		rec, err := rd.Read()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			if time.Now().After(giveUp) {
				t.Fatalf("the barrier's exit (pid %d) not read in 10 s; seen %v", barrier, got)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		var h ProcessEventHeader
		if err := binary.Read(bytes.NewReader(rec.RawSample), binary.NativeEndian, &h); err != nil {
			t.Fatal(err)
		}
		if got[h.Tgid] == nil {
			got[h.Tgid] = &seen{}
		}
		switch h.Type {
		case EventExec:
			got[h.Tgid].exec = true
		case EventFork:
			got[h.Tgid].fork = true
			if h.Ppid == uint32(pluginPID) {
				pluginChild = h.Tgid
			}
		case EventExit:
			got[h.Tgid].exit = true
		}
	}
	if s := got[uint32(hostPID)]; s != nil {
		t.Errorf("a host process's events were reported: %+v", *s)
	}
	if s := got[uint32(podPID)]; s == nil || !s.fork || !s.exec || !s.exit {
		t.Errorf("the pod's process (pid %d): want its fork, exec and exit, got %+v", podPID, s)
	}
	// The plugin was forked by a host process, before it was one.
	if s := got[uint32(pluginPID)]; s == nil || s.fork || !s.exec || !s.exit {
		t.Errorf("the CNI plugin (pid %d): want its exec and exit (not the host's fork of it), got %+v", pluginPID, s)
	}
	if pluginChild == 0 {
		t.Errorf("the plugin's fork of its child was not reported")
	} else if s := got[pluginChild]; s.exec || s.exit {
		t.Errorf("the plugin's child (pid %d) ran /bin/true, not a plugin: its exec or exit was reported: %+v", pluginChild, *s)
	}
	filtered, err := prog.Filtered()
	if err != nil {
		t.Fatal(err)
	}
	// The host process's fork, exec, exit; the plugin's fork; its
	// child's exec, exit.
	if filtered-filteredBefore < 6 {
		t.Errorf("Filtered grew by %d, want at least 6", filtered-filteredBefore)
	}
}
