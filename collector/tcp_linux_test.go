package collector

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"

	"github.com/readyline/readyline/bpf"
	"github.com/readyline/readyline/collector/event"
	"github.com/readyline/readyline/collector/testenv"
)

// tcpRecorder collects what a running TCPSource emits, with the wall time
// each connection was emitted.
type tcpRecorder struct {
	src      *TCPSource
	mu       sync.Mutex
	conns    []*event.TCPConnection
	emitted  []time.Time
	statuses []*event.SourceStatus
	drained  int // event.Drained marks
	stop     func() TCPStats
}

// startTCPSource runs a TCPSource watching this test process until stop is
// called or the test ends.
func startTCPSource(t *testing.T, cfg TCPConfig) *tcpRecorder {
	t.Helper()
	testenv.RequirePrivileged(t)
	src, err := NewTCPSource(cfg, nil)
	if err != nil {
		t.Fatalf("starting tcp source: %v", err)
	}
	if err := src.Watch(uint32(os.Getpid())); err != nil {
		t.Fatal(err)
	}
	r := &tcpRecorder{src: src}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- src.Run(ctx, func(ev event.Event) {
			now := time.Now()
			r.mu.Lock()
			defer r.mu.Unlock()
			switch e := ev.(type) {
			case *event.SourceStatus:
				r.statuses = append(r.statuses, e)
				return
			case *event.Drained:
				r.drained++
				return
			}
			r.conns = append(r.conns, ev.(*event.TCPConnection))
			r.emitted = append(r.emitted, now)
		})
	}()
	var once sync.Once
	r.stop = func() TCPStats {
		once.Do(func() {
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
		return src.Stats()
	}
	t.Cleanup(func() { r.stop() })
	return r
}

func (r *tcpRecorder) matching(keep func(*event.TCPConnection) bool) (conns []*event.TCPConnection, emitted []time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, c := range r.conns {
		if keep(c) {
			conns = append(conns, c)
			emitted = append(emitted, r.emitted[i])
		}
	}
	return conns, emitted
}

// waitFor waits until n connections match keep and returns them with the
// times they were emitted.
func (r *tcpRecorder) waitFor(t *testing.T, what string, n int, keep func(*event.TCPConnection) bool) ([]*event.TCPConnection, []time.Time) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, at := r.matching(keep)
		if len(got) >= n {
			return got, at
		}
		if time.Now().After(deadline) {
			// What the source counted tells a loss (drops, evictions)
			// from a connection that never closed.
			t.Fatalf("waiting for %d %s: got %d; source stats %+v", n, what, len(got), r.src.Stats())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// serveHold accepts connections on ln until it is closed; it closes each
// one hold after accepting it (the server closes first, as an HTTP server
// answering a request with Connection: close does).
func serveHold(ln net.Listener, hold time.Duration) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			time.Sleep(hold)
			c.Close()
		}()
	}
}

func listenHold(t testing.TB, network, addr string, hold time.Duration) net.Listener {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go serveHold(ln, hold)
	return ln
}

// probe is what the client side of one connection saw: its stamps are
// taken before Dial (start), after it (dialed), before Close (closing) and
// after it (end).
type probe struct {
	tid                         int
	local                       netip.AddrPort
	start, dialed, closing, end time.Time
	err                         error
	// readErr is what reading until the server closed returned: nil for
	// its FIN, ECONNRESET for a reset.
	readErr error
}

// dialProbe connects to addr like a tcpSocket or httpGet probe: connect,
// read until the server closes, close. It runs on one locked OS thread so
// the thread that connects is known.
func dialProbe(network, addr string) probe {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	p := probe{tid: unix.Gettid(), start: time.Now()}
	c, err := net.Dial(network, addr)
	p.dialed = time.Now()
	if err != nil {
		p.err = err
		return p
	}
	p.local = c.LocalAddr().(*net.TCPAddr).AddrPort()
	_, p.readErr = io.Copy(io.Discard, c)
	p.closing = time.Now()
	c.Close()
	p.end = time.Now()
	return p
}

func portOf(addr net.Addr) uint16 { return uint16(addr.(*net.TCPAddr).Port) }

// closedPort returns a port on which nothing listens on ip.
func closedPort(t testing.TB, ip string) uint16 {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	port := portOf(ln.Addr())
	ln.Close()
	return port
}

func within(d, want, tolerance time.Duration) bool {
	return d >= want-tolerance && d <= want+tolerance
}

// checkEstablished checks a connection against what its client saw: each
// kernel time lies between the client's stamps around the call that made
// it (but for the boot clock's conversion, clockSlack), however long the
// scheduler held either side.
func checkEstablished(t *testing.T, c *event.TCPConnection, p probe, emitted time.Time, hold time.Duration) {
	t.Helper()
	const slack = clockSlack
	if c.Result != event.TCPEstablished || c.Error != "" {
		t.Errorf("result %q error %q, want established", c.Result, c.Error)
	}
	if c.PID != uint32(os.Getpid()) || c.TID != uint32(p.tid) {
		t.Errorf("pid %d tid %d, want %d %d", c.PID, c.TID, os.Getpid(), p.tid)
	}
	if c.Time.Before(p.start.Add(-slack)) || c.Time.After(p.dialed.Add(slack)) {
		t.Errorf("connect at %v, outside the client's Dial [%v, %v]", c.Time, p.start, p.dialed)
	}
	if !c.Established.After(c.Time) || c.Established.After(p.dialed.Add(slack)) {
		t.Errorf("established at %v: want after the connect (%v) and before Dial returned (%v)", c.Established, c.Time, p.dialed)
	}
	if !c.End.After(c.Established) {
		t.Errorf("end %v not after established %v", c.End, c.Established)
	}
	// The socket reaches CLOSE once the last ACK of the teardown
	// arrives, after the client's FIN, so after Close began; a delayed ACK
	// (up to 200 ms) can hold it back after Close returned: bounded below
	// by the stamps, above loosely (a second: not TIME_WAIT's minute).
	open, clientOpen := c.End.Sub(c.Established), p.end.Sub(p.dialed)
	if open < hold || c.End.Before(p.closing.Add(-slack)) || c.End.After(p.end.Add(time.Second)) {
		t.Errorf("open for %v (established to close), the client saw %v, the server held %v; closed at %v, the client's Close ran %v to %v",
			open, clientOpen, hold, c.End, p.closing, p.end)
	}
	// How soon after its close a connection is emitted (about a poll) is
	// told, not judged: a busy machine delays the reader at will; that it
	// comes at all, with no more traffic to wake the reader, is waitFor's.
	t.Logf("connect->established %v, established->close %v (client %v), emitted %v after the close",
		c.Established.Sub(c.Time), open, clientOpen, emitted.Sub(c.End))
}

func TestIntegrationTCPLoopback(t *testing.T) {
	rec := startTCPSource(t, TCPConfig{})
	const hold = 50 * time.Millisecond

	for _, tc := range []struct{ name, network, ip string }{{"ipv4", "tcp4", "127.0.0.1"}, {"ipv6", "tcp6", "::1"}} {
		t.Run(tc.name+" established", func(t *testing.T) {
			ln := listenHold(t, tc.network, net.JoinHostPort(tc.ip, "0"), hold)
			p := dialProbe(tc.network, ln.Addr().String())
			if p.err != nil {
				t.Fatal(p.err)
			}
			conns, at := rec.waitFor(t, "connection", 1, func(c *event.TCPConnection) bool {
				return c.Dport == portOf(ln.Addr()) && c.Sport == p.local.Port()
			})
			c := conns[0]
			if c.Saddr != tc.ip || c.Daddr != tc.ip {
				t.Errorf("%s -> %s, want %s on both ends", c.Saddr, c.Daddr, tc.ip)
			}
			checkEstablished(t, c, p, at[0], hold)
		})
	}

	t.Run("refused", func(t *testing.T) {
		port := closedPort(t, "127.0.0.1")
		p := dialProbe("tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port))))
		if !errors.Is(p.err, syscall.ECONNREFUSED) {
			t.Fatalf("dialing a closed port: %v, want connection refused", p.err)
		}
		conns, _ := rec.waitFor(t, "refused connection", 1, func(c *event.TCPConnection) bool {
			return c.Dport == port && c.TID == uint32(p.tid)
		})
		c := conns[0]
		if c.Result != event.TCPRefused || c.Error != "ECONNREFUSED" || !c.Established.IsZero() {
			t.Errorf("result %q error %q established %v, want refused, ECONNREFUSED, never", c.Result, c.Error, c.Established)
		}
		if c.Sport == 0 || c.Saddr != "127.0.0.1" {
			t.Errorf("source %s:%d, want 127.0.0.1 and the port the kernel picked", c.Saddr, c.Sport)
		}
		if !c.End.After(c.Time) || c.Time.Before(p.start.Add(-clockSlack)) || c.End.After(p.dialed.Add(clockSlack)) {
			t.Errorf("connect %v, end %v: want both within the client's Dial [%v, %v]", c.Time, c.End, p.start, p.dialed)
		}
	})

	t.Run("unwatched process not reported", func(t *testing.T) {
		ln := listenHold(t, "tcp4", "127.0.0.1:0", 0)
		child := helperCommand(t, "connect", ln.Addr().String())
		out, err := child.Output()
		if err != nil {
			t.Fatalf("helper process: %v", err)
		}
		childPort, err := strconv.Atoi(strings.TrimSpace(string(out)))
		if err != nil {
			t.Fatalf("helper process printed %q, want its local port", out)
		}
		// The same connection from this process is reported: once it is,
		// the child's (made earlier) would have been too.
		p := dialProbe("tcp4", ln.Addr().String())
		if p.err != nil {
			t.Fatal(p.err)
		}
		rec.waitFor(t, "connection of this process", 1, func(c *event.TCPConnection) bool {
			return c.Dport == portOf(ln.Addr()) && c.Sport == p.local.Port()
		})
		if got, _ := rec.matching(func(c *event.TCPConnection) bool {
			return c.PID == uint32(child.Process.Pid) || (c.Dport == portOf(ln.Addr()) && c.Sport == uint16(childPort))
		}); len(got) != 0 {
			t.Errorf("connection of the unwatched child reported: %+v", got[0])
		}
	})
}

func TestIntegrationTCPWatchAfterRun(t *testing.T) {
	rec := startTCPSource(t, TCPConfig{})
	if err := rec.src.Unwatch(12345); err != nil {
		t.Errorf("unwatching a process never watched: %v", err)
	}
	rec.stop()
	if err := rec.src.Watch(uint32(os.Getpid())); !errors.Is(err, ErrSourceClosed) {
		t.Errorf("Watch after Run returned: %v, want ErrSourceClosed", err)
	}
}

// helperCommand runs this test binary as TestTCPHelperProcess in role.
func helperCommand(t testing.TB, role, addr string, wrap ...string) *exec.Cmd {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	args := append(slices.Clone(wrap), self, "-test.run=^TestTCPHelperProcess$")
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), "READYLINE_TCP_HELPER="+role, "READYLINE_TCP_HELPER_ADDR="+addr)
	cmd.Stderr = os.Stderr
	return cmd
}

// TestTCPHelperProcess is not a test: it is the other process of the
// integration tests, run through helperCommand. Role "connect" connects to
// the address, prints its local port, reads until the server closes and
// closes; role "serve" listens on the address, prints "ready", serves one
// connection by closing it after 50 ms, and exits.
func TestTCPHelperProcess(t *testing.T) {
	role, addr := os.Getenv("READYLINE_TCP_HELPER"), os.Getenv("READYLINE_TCP_HELPER_ADDR")
	if role == "" {
		return // not a test: a helper process of the TCP integration tests
	}
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "tcp helper:", err)
		os.Exit(1)
	}
	switch role {
	case "connect":
		c, err := net.Dial("tcp", addr)
		if err != nil {
			fail(err)
		}
		fmt.Println(portOf(c.LocalAddr()))
		io.Copy(io.Discard, c)
		c.Close()
	case "serve":
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			fail(err)
		}
		fmt.Println("ready")
		c, err := ln.Accept()
		if err != nil {
			fail(err)
		}
		time.Sleep(50 * time.Millisecond)
		c.Close()
		ln.Close()
	default:
		fail(fmt.Errorf("unknown role %q", role))
	}
	os.Exit(0)
}

// vethNetns is a network namespace joined to the host by a veth pair, the
// way a pod's is to the node: HostIP is the host's end, PodIP the
// namespace's.
type vethNetns struct {
	Name          string
	HostIP, PodIP string
}

// newVethNetns creates a network namespace and a veth pair with a /30
// from 198.18.0.0/15 (reserved for benchmarking) picked by this process's
// id, so that concurrent test runs do not collide. Both are removed when
// the test ends, whatever happened.
func newVethNetns(t *testing.T) vethNetns {
	t.Helper()
	if _, err := exec.LookPath("ip"); err != nil {
		t.Fatalf("the ip command (iproute2) is needed: %v", err)
	}
	pid := os.Getpid()
	ns, hostIf, podIf := fmt.Sprintf("rltcp-%d", pid), fmt.Sprintf("rlt%dh", pid), fmt.Sprintf("rlt%dp", pid)
	base := binary.BigEndian.Uint32([]byte{198, 18, 0, 0}) + uint32(pid%(1<<15))*4
	ip := func(n uint32) string {
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], base+n)
		return netip.AddrFrom4(b).String()
	}
	v := vethNetns{Name: ns, HostIP: ip(1), PodIP: ip(2)}

	// ip netns add makes /run/netns a mount of its own (a bind mount onto
	// itself, shared) and leaves it there: put the host back as it was.
	_, statErr := os.Stat("/run/netns")
	hadNetnsDir := statErr == nil
	cleanup := func() {
		exec.Command("ip", "link", "del", hostIf).Run() // takes the peer with it
		exec.Command("ip", "netns", "del", ns).Run()
	}
	cleanup() // a previous run killed before its cleanup
	t.Cleanup(func() {
		cleanup()
		if !hadNetnsDir {
			// Fails, harmlessly, while others (a node's containerd) keep
			// network namespaces there.
			if exec.Command("umount", "-n", "/run/netns").Run() == nil { // -n: no /run/mount/utab left behind
				os.Remove("/run/netns")
			}
		}
	})
	for _, args := range [][]string{
		{"netns", "add", ns},
		{"link", "add", hostIf, "type", "veth", "peer", "name", podIf},
		{"link", "set", podIf, "netns", ns},
		{"addr", "add", v.HostIP + "/30", "dev", hostIf},
		{"link", "set", hostIf, "up"},
		{"-n", ns, "addr", "add", v.PodIP + "/30", "dev", podIf},
		{"-n", ns, "link", "set", podIf, "up"},
		{"-n", ns, "link", "set", "lo", "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	return v
}

// serveInNetns starts the helper's one-connection server on addr inside
// the namespace and waits until it listens.
func serveInNetns(t *testing.T, ns, addr string) *exec.Cmd {
	t.Helper()
	cmd := helperCommand(t, "serve", addr, "ip", "netns", "exec", ns)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("server in %s: %q, %v", ns, line, err)
	}
	return cmd
}

func TestIntegrationTCPAcrossVethNetns(t *testing.T) {
	testenv.RequirePrivileged(t)
	v := newVethNetns(t)
	rec := startTCPSource(t, TCPConfig{})

	const port = 8080
	serveInNetns(t, v.Name, net.JoinHostPort(v.PodIP, strconv.Itoa(port)))
	p := dialProbe("tcp4", net.JoinHostPort(v.PodIP, strconv.Itoa(port)))
	if p.err != nil {
		t.Fatal(p.err)
	}
	conns, at := rec.waitFor(t, "connection to the namespace", 1, func(c *event.TCPConnection) bool {
		return c.Daddr == v.PodIP && c.Dport == port
	})
	c := conns[0]
	if c.Saddr != v.HostIP || c.Sport != p.local.Port() {
		t.Errorf("source %s:%d, want %s:%d", c.Saddr, c.Sport, v.HostIP, p.local.Port())
	}
	checkEstablished(t, c, p, at[0], 50*time.Millisecond)

	p = dialProbe("tcp4", net.JoinHostPort(v.PodIP, "8081"))
	if !errors.Is(p.err, syscall.ECONNREFUSED) {
		t.Fatalf("dialing a closed port in the namespace: %v, want connection refused", p.err)
	}
	conns, _ = rec.waitFor(t, "refused connection to the namespace", 1, func(c *event.TCPConnection) bool {
		return c.Daddr == v.PodIP && c.Dport == 8081
	})
	if c := conns[0]; c.Result != event.TCPRefused || c.Saddr != v.HostIP {
		t.Errorf("got %+v, want refused from %s", c, v.HostIP)
	}
}

func TestIntegrationTCPManyConnections(t *testing.T) {
	// A ring that holds every record of the n connections (5 state changes
	// of ~100 bytes each): the test is about following many connections at
	// once, and a reader starved for a second (the 6.1 guest under TCG on a
	// busy host) must not turn it into a test of the ring's size, which
	// TestIntegrationTCPDropsCounted covers.
	rec := startTCPSource(t, TCPConfig{RingBufferBytes: 1 << 20})
	ln := listenHold(t, "tcp4", "127.0.0.1:0", 0)
	const n, workers = 1000, 4
	var wg sync.WaitGroup
	probes := make(chan probe, n)
	start := time.Now()
	for range workers {
		wg.Go(func() {
			for range n / workers {
				probes <- dialProbe("tcp4", ln.Addr().String())
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(probes)
	// What each client saw, by its port: under load (the 6.1 guest under
	// TCG, its orphan sockets bounded by its memory) the stack may reset
	// a connection, before the client read the server's FIN or after.
	reset := map[uint16]bool{}
	for p := range probes {
		if p.err != nil {
			t.Fatal(p.err)
		}
		reset[p.local.Port()] = errors.Is(p.readErr, syscall.ECONNRESET)
	}

	port := portOf(ln.Addr())
	conns, at := rec.waitFor(t, "connections", n, func(c *event.TCPConnection) bool { return c.Dport == port })
	stats := rec.stop()
	if len(conns) != n {
		t.Errorf("%d connections reported, want %d", len(conns), n)
	}
	var maxLag time.Duration
	cookies := map[uint64]bool{}
	resets := 0
	for i, c := range conns {
		// Established, or reset after its handshake (its error the
		// kernel's); reset for sure when its client's read said so.
		ok := c.Result == event.TCPEstablished || (c.Result == event.TCPReset && c.Error == "ECONNRESET")
		if reset[c.Sport] {
			ok = c.Result == event.TCPReset
		}
		if c.Result == event.TCPReset {
			resets++
		}
		if !ok || c.Established.IsZero() || c.Sport == 0 {
			t.Errorf("connection %+v (its client saw a reset: %v), want it established, or reset as the kernel said, with its times and ports", c, reset[c.Sport])
		}
		cookies[c.Cookie] = true
		maxLag = max(maxLag, at[i].Sub(c.End))
	}
	if len(cookies) != len(conns) {
		t.Errorf("%d distinct cookies among %d connections", len(cookies), len(conns))
	}
	if stats.KernelDrops != 0 || stats.DecodeErrors != 0 || stats.Evicted != 0 {
		t.Errorf("stats %+v: want no drops, decode errors or evictions", stats)
	}
	t.Logf("%d connections in %v (%.0f/s; %d reset by the stack), %d records; longest close->emit %v",
		n, elapsed, float64(n)/elapsed.Seconds(), resets, stats.Records, maxLag)
}

func TestIntegrationTCPDropsCounted(t *testing.T) {
	testenv.RequirePrivileged(t)
	// One page of ring buffer and no reader yet: most of 100 connections'
	// records cannot fit, and the kernel must say how many it lost.
	src, err := NewTCPSource(TCPConfig{RingBufferBytes: uint32(os.Getpagesize())}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Watch(uint32(os.Getpid())); err != nil {
		t.Fatal(err)
	}
	ln := listenHold(t, "tcp4", "127.0.0.1:0", 0)
	const n = 100
	for range n {
		if p := dialProbe("tcp4", ln.Addr().String()); p.err != nil {
			t.Fatal(p.err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*bpf.TCPPollInterval)
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
	if st.KernelDrops == 0 || st.Records+st.KernelDrops < 5*n {
		t.Errorf("stats %+v: want the %d records of %d connections read or counted as dropped", st, 5*n, n)
	}
	// The loss happened before Run: its first statuses say so, from when
	// the tracer was attached. A record of this process's sockets lost
	// during Run (a connection's late state change) is in Stats but may
	// wait for the next read of the counter, a second later: the first
	// Down tells at most all of them.
	if len(statuses) < 2 {
		t.Fatalf("statuses %+v, want a ring_full Down and an Up", statuses)
	}
	down, up := statuses[0], statuses[1]
	if down.Up || down.Source != event.SourceTCP || down.Reason != event.ReasonRingFull || down.Lost == 0 || down.Lost > st.KernelDrops ||
		down.Since.IsZero() || !down.Since.Before(down.Time) || !up.Up || !up.Time.Equal(down.Time) {
		t.Errorf("statuses %+v %+v, want Down ring_full since the attach, 1 to %d lost, then Up", *down, *up, st.KernelDrops)
	}
	t.Logf("%d records read, %d dropped, %d connections emitted", st.Records, st.KernelDrops, st.Connections)
}

// TestIntegrationTCPTransitionContext reads the tracer's raw records for a
// connection from the host into a namespace whose server is another
// process, as the kubelet's probe of a pod is. The design rests on two
// facts it checks: the move to SYN_SENT runs in the connecting thread (so
// filtering on current there is right), and later moves can run while
// another task is current (softirq), so they must be found by socket.
func TestIntegrationTCPTransitionContext(t *testing.T) {
	testenv.RequirePrivileged(t)
	v := newVethNetns(t)
	prog, err := bpf.LoadTCPProgram(bpf.TCPOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	if err := prog.Watch(uint32(os.Getpid())); err != nil {
		t.Fatal(err)
	}
	rd, err := ringbuf.NewReader(prog.Events())
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()

	const port = 8080
	server := serveInNetns(t, v.Name, net.JoinHostPort(v.PodIP, strconv.Itoa(port)))
	p := dialProbe("tcp4", net.JoinHostPort(v.PodIP, strconv.Itoa(port)))
	if p.err != nil {
		t.Fatal(p.err)
	}
	server.Wait()

	var changes []TCPStateChange
	deadline := time.Now().Add(5 * time.Second)
	for len(changes) == 0 || changes[len(changes)-1].New != TCPStateClose {
		// The program wakes the reader only for a full quarter of the ring
		// buffer: poll, as TCPSource does.
		rd.SetDeadline(time.Now().Add(bpf.TCPPollInterval))
		r, err := rd.Read()
		if errors.Is(err, os.ErrDeadlineExceeded) && time.Now().Before(deadline) {
			continue
		}
		if err != nil {
			t.Fatalf("reading records (%d so far): %v", len(changes), err)
		}
		ch, err := DecodeTCPStateChange(r.RawSample, NewBootClock())
		if err != nil {
			t.Fatal(err)
		}
		if ch.Dport == port && ch.Daddr.String() == v.PodIP {
			changes = append(changes, ch)
		}
	}

	self, serverPID := uint32(os.Getpid()), uint32(server.Process.Pid)
	// ip netns exec execs the helper: same pid.
	whose := func(pid uint32) string {
		switch pid {
		case self:
			return "the connecting process"
		case serverPID:
			return "the server in the namespace"
		}
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		return fmt.Sprintf("pid %d %s", pid, strings.TrimSpace(string(comm)))
	}
	var elsewhere int
	for _, ch := range changes {
		t.Logf("%-11s -> %-11s current: %s (tid %d)", ch.Old, ch.New, whose(ch.CurrentPID), ch.CurrentTID)
		if ch.PID != self || ch.TID != uint32(p.tid) {
			t.Errorf("%v: owner %d/%d, want the connecting thread %d/%d", ch.New, ch.PID, ch.TID, self, p.tid)
		}
		if ch.New == TCPStateSynSent && (ch.CurrentPID != self || ch.CurrentTID != uint32(p.tid)) {
			t.Errorf("SYN_SENT ran with current %d/%d, not in the connecting thread %d/%d",
				ch.CurrentPID, ch.CurrentTID, self, p.tid)
		}
		if ch.CurrentPID != self {
			elsewhere++
		}
	}
	if changes[0].New != TCPStateSynSent {
		t.Errorf("first change %v, want SYN_SENT", changes[0].New)
	}
	if elsewhere == 0 {
		t.Error("every change ran in the connecting process: the server's FIN should have been handled while it was current")
	}
}

// BenchmarkTCPConnectOverhead measures what the TCP tracer costs a
// connection: loopback connect, the server's close, the client's close,
// timed without the tracer, with it attached but the process unwatched
// (the cost every other connection on the node pays) and with it watching
// the process (the cost of a followed probe), in alternating rounds within
// one run. It reports the median ns per connection of each and the ratios
// to no tracer; then, with the kernel's BPF run-time statistics on, the
// program's own cost per run, which a busy machine's noise does not blur.
func BenchmarkTCPConnectOverhead(b *testing.B) {
	testenv.RequirePrivileged(b)
	ln := listenHold(b, "tcp4", "127.0.0.1:0", 0)
	const perRound, rounds = 1000, 15

	connect := func(n int) time.Duration {
		start := time.Now()
		for range n {
			c, err := net.Dial("tcp4", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, c)
			c.Close()
		}
		return time.Since(start) / time.Duration(n)
	}
	// withSource runs f with a TCPSource attached, watching this process
	// or not, and checks what it reported.
	withSource := func(watch bool, f func(*TCPSource)) {
		src, err := NewTCPSource(TCPConfig{}, nil)
		if err != nil {
			b.Fatal(err)
		}
		if watch {
			if err := src.Watch(uint32(os.Getpid())); err != nil {
				b.Fatal(err)
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- src.Run(ctx, func(event.Event) {}) }()
		f(src)
		time.Sleep(2 * bpf.TCPPollInterval) // let the reader catch up
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		if st := src.Stats(); st.KernelDrops != 0 || (watch && st.Connections == 0) || (!watch && st.Records != 0) {
			b.Fatalf("watching %v: stats %+v", watch, st)
		}
	}
	timed := func(watch bool) func() time.Duration {
		return func() (d time.Duration) {
			withSource(watch, func(*TCPSource) { d = connect(perRound) })
			return d
		}
	}
	modes := []struct {
		name string
		run  func() time.Duration
	}{
		{"detached", func() time.Duration { return connect(perRound) }},
		{"unwatched", timed(false)},
		{"watched", timed(true)},
	}
	connect(perRound) // warm up: listener, ports, caches
	results := make([][]time.Duration, len(modes))
	for b.Loop() {
		for r := range rounds {
			for i := range modes {
				m := (i + r) % len(modes) // rotate the order each round
				results[m] = append(results[m], modes[m].run())
			}
		}
	}
	median := func(ds []time.Duration) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[len(s)/2]
	}
	base := median(results[0])
	for i, m := range modes {
		med := median(results[i])
		b.ReportMetric(float64(med.Nanoseconds()), "ns/conn-"+m.name)
		if i > 0 {
			b.ReportMetric(float64(med)/float64(base), "ratio-"+m.name)
		}
		b.Logf("%-9s median %v per connection, %d rounds of %d", m.name, med, len(results[i]), perRound)
	}

	// The program's own cost, from the kernel's run-time statistics
	// (enabled only here: they cost every BPF program on the node).
	stats, err := ebpf.EnableStats(unix.BPF_STATS_RUN_TIME)
	if err != nil {
		b.Fatalf("enabling BPF run-time statistics: %v", err)
	}
	defer stats.Close()
	withSource(true, func(src *TCPSource) {
		for _, watched := range []bool{true, false} {
			if !watched {
				src.Unwatch(uint32(os.Getpid()))
			}
			before, err := src.prog.RunStats()
			if err != nil {
				b.Fatal(err)
			}
			connect(perRound)
			after, err := src.prog.RunStats()
			if err != nil {
				b.Fatal(err)
			}
			runs := after.RunCount - before.RunCount
			perRun := float64((after.Runtime - before.Runtime).Nanoseconds()) / float64(runs)
			name := map[bool]string{true: "watched", false: "unwatched"}[watched]
			b.ReportMetric(perRun, "ns/run-"+name)
			b.Logf("%-9s program: %d runs for %d connections, %.0f ns per run, %.2f µs per connection",
				name, runs, perRound, perRun, perRun*float64(runs)/perRound/1000)
		}
	})
}

// TestIntegrationTCPFollowsTheKubelet: the TCP source watches the process
// the kubelet-call source probes once it is told of it (followKubelet,
// woken by the change: it polls no more).
func TestIntegrationTCPFollowsTheKubelet(t *testing.T) {
	rec := startTCPSource(t, TCPConfig{})
	self := os.Getpid()
	if err := rec.src.Unwatch(uint32(self)); err != nil {
		t.Fatal(err)
	}
	calls := &KubeletCallSource{pidChanged: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	followed := make(chan struct{})
	go func() {
		defer close(followed)
		followKubelet(ctx, calls, rec.src, slog.New(slog.DiscardHandler))
	}()
	defer func() { cancel(); <-followed }()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go serveHold(ln, 10*time.Millisecond)
	// connect connects until one of its connections is reported.
	connect := func(step string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			local := uint16(c.LocalAddr().(*net.TCPAddr).Port)
			io.Copy(io.Discard, c) // until the server closes
			c.Close()
			time.Sleep(100 * time.Millisecond)
			if got, _ := rec.matching(func(c *event.TCPConnection) bool { return c.Sport == local }); len(got) > 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: no connection of this process reported within 10 s", step)
			}
		}
	}
	calls.setKubeletPID(self)
	connect("probed")
}
