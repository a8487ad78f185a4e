package collector

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/readyline/readyline/collector/event"
	"github.com/readyline/readyline/collector/testenv"
)

// pidnsChildEnv marks the test binary re-run inside a new PID namespace;
// pidnsOutsideEnv names the file where the parent counts the processes it
// ran outside that namespace.
const (
	pidnsChildEnv   = "READYLINE_TEST_PIDNS_CHILD"
	pidnsOutsideEnv = "READYLINE_TEST_PIDNS_OUTSIDE"
)

// TestIntegrationPIDNamespace runs the sources inside a PID namespace of
// their own, as the DaemonSet does on a kind node (hostPID there is the
// node container's namespace, while the kernel numbers tasks in the
// initial one): pids must come out as readyline sees them, processes
// outside its namespace must not come out at all, the TCP tracer must
// follow a process by its pid there, and the kubelet-call probes must attach
// to a process found in its /proc.
func TestIntegrationPIDNamespace(t *testing.T) {
	if os.Getenv(pidnsChildEnv) == "1" {
		pidnsChild(t)
		return
	}
	testenv.RequirePrivileged(t)
	bin := buildCrilike(t, "stripped")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("unshare", "--pid", "--fork", "--mount-proc", self,
		"-test.run", "^TestIntegrationPIDNamespace$", "-test.v", "-test.count=1")
	outside := filepath.Join(t.TempDir(), "outside")
	cmd.Env = append(os.Environ(), pidnsChildEnv+"=1", "CRILIKE="+bin, pidnsOutsideEnv+"="+outside)
	// Meanwhile, processes outside the namespace the child must not see,
	// counted in outside once each has exited.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 1; ; n++ {
			select {
			case <-stop:
				return
			default:
				exec.Command("/bin/sh", "-c", "exit 9").Run()
				tmp := outside + ".tmp"
				if os.WriteFile(tmp, []byte(strconv.Itoa(n)), 0o644) == nil {
					os.Rename(tmp, outside)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
	}()
	out, err := cmd.CombinedOutput()
	close(stop)
	wg.Wait()
	t.Logf("in the namespace:\n%s", out)
	if err != nil {
		t.Fatalf("the sources in a PID namespace failed: %v", err)
	}
	for _, want := range []string{"PROCESS OK", "TCP OK", "CRI OK"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("no %q from the namespace", want)
		}
	}
}

// pidnsChild runs inside the new PID namespace (pid 1 is unshare's fork).
func pidnsChild(t *testing.T) {
	if os.Getpid() > 1000 {
		t.Fatalf("pid %d: not in a fresh PID namespace", os.Getpid())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// Processes: our child's exec and exit carry the pid we see.
	rec := startProcessSource(t, ProcessConfig{})
	// An outside process ran and exited while the tracer was attached,
	// before our child below: its records, if the kernel let them
	// through, come before our child's. (The parent counts a process once
	// it exited: the one after the next to be counted started after the
	// count read here, so after the attach.)
	outsideRuns := func() int {
		b, _ := os.ReadFile(os.Getenv(pidnsOutsideEnv))
		n, _ := strconv.Atoi(string(b))
		return n
	}
	ran := outsideRuns()
	waitFor(t, 10*time.Second, "a process outside the namespace", func() bool { return outsideRuns() > ran+1 })
	sh := exec.Command("/bin/sh", "-c", "exit 5")
	if err := sh.Run(); err == nil {
		t.Fatal("sh -c 'exit 5' succeeded")
	}
	exits := rec.waitFor(t, "exit of sh", 1, func(ev event.Event) bool {
		e, ok := ev.(*event.ProcessExit)
		return ok && int(e.PID) == sh.Process.Pid && e.ExitCode == 5
	})
	if exits[0].(*event.ProcessExit).PPID != uint32(os.Getpid()) {
		t.Errorf("ppid %d, want %d", exits[0].(*event.ProcessExit).PPID, os.Getpid())
	}
	for _, ev := range rec.matching(func(event.Event) bool { return true }) {
		if x, ok := ev.(*event.ProcessExit); ok && x.ExitCode == 9 {
			t.Errorf("a process outside the namespace was reported: %+v", x)
		}
	}
	fmt.Println("PROCESS OK")

	// TCP: the tracer follows us by the pid we see.
	tcp, err := NewTCPSource(TCPConfig{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	conns := make(chan *event.TCPConnection, 16)
	tctx, tcancel := context.WithCancel(ctx)
	go tcp.Run(tctx, func(ev event.Event) {
		if c, ok := ev.(*event.TCPConnection); ok {
			conns <- c
		}
	})
	defer tcancel()
	if err := tcp.Watch(uint32(os.Getpid())); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
		}
	}()
	c, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	select {
	case conn := <-conns:
		if int(conn.Dport) != ln.Addr().(*net.TCPAddr).Port {
			t.Errorf("connection to port %d, want %d", conn.Dport, ln.Addr().(*net.TCPAddr).Port)
		}
		fmt.Println("TCP OK")
	case <-time.After(5 * time.Second):
		t.Error("no connection reported for a process watched by its namespace pid")
	}

	// CRI calls: found through this namespace's /proc and probed.
	// The parent named crilike (crilikeName is this process's).
	target := crilikeTarget()
	target.process = filepath.Base(os.Getenv("CRILIKE"))
	src, err := NewKubeletCallSource(KubeletCallConfig{Rescan: 20 * time.Millisecond, target: target}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	calls := 0
	cctx, ccancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- src.Run(cctx, func(ev event.Event) {
			if _, ok := ev.(*event.CRICall); ok {
				mu.Lock()
				calls++
				mu.Unlock()
			}
		})
	}()
	crilike := exec.Command(os.Getenv("CRILIKE"), "-calls", "3", "-sleep", "1ms", "-wait-stdin")
	stdin, _ := crilike.StdinPipe()
	if err := crilike.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); src.Stats().Attaches == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the CRI probes did not attach inside the namespace")
		}
	}
	stdin.Close()
	crilike.Wait()
	waitFor(t, 10*time.Second, "a CRI call seen inside the namespace", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return calls > 0
	})
	ccancel()
	<-done
	fmt.Println("CRI OK")
}
