//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/readyline/readyline/collector"
	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter/apiclient"
)

// StartTimeout is the --start-timeout of the daemons the tests start: short,
// so that tests of what happens after the deadline need not wait 10 minutes,
// and well above the slowest start of the examples under the parallel tests
// (~30 s).
const StartTimeout = 60 * time.Second

// CRIEndpoint is the local node's containerd socket.
func (e *Env) CRIEndpoint() string {
	return "unix://" + filepath.Join(e.NodeDir, "containerd", "containerd.sock")
}

// Daemon is `readyline run` started by a test as a root process on the host
// (or wherever DaemonOptions.Wrap puts it).
type Daemon struct {
	cmd *exec.Cmd
	// proc is readyline itself: cmd's process, or the wrapper's child.
	proc *os.Process
	// PID is readyline's pid on the host.
	PID int
	// APIURL serves the timelines (every start, no credential),
	// MetricsURL /metrics, HealthURL /healthz.
	APIURL, MetricsURL, HealthURL string
	// SecureAPIAddr serves them over TLS to the API server's users, each
	// the starts of the pods they may get (host:port).
	SecureAPIAddr string
	// Log and Record are the daemon's stderr and its event recording;
	// Bin is the readyline binary it runs (its explain, too).
	Log, Record, Bin string
	exited           chan struct{}
	// stopping: Stop was called; an exit from then on was asked for.
	stopping atomic.Bool
}

// DaemonOptions change how StartDaemonWith runs readyline.
type DaemonOptions struct {
	// Wrap is a command readyline runs under, which forks it as its child
	// and waits for it: e.g. nsenter into the node's PID namespace
	// (Env.InNode). Stop then signals readyline, not the wrapper.
	Wrap []string
	// Args are more flags for `readyline run`, after the defaults (a flag
	// given again wins).
	Args []string
	// ColdBinary: the binary is dropped from the page cache before it
	// starts, so its resident pages are those a node starting it from an
	// image layer has, not every page the kernel maps around a fault in a
	// file `go build` just wrote whole into the cache.
	ColdBinary bool
	// AsDeployed: the daemon runs with the settings the DaemonSet gives
	// it (deployedEnv), not the tests' recording and debug log, for
	// figures a node would see; Daemon.Record is then empty. The flags
	// StartDaemon passes (endpoints, addresses) win over those settings.
	AsDeployed bool
}

// StartDaemon builds readyline and runs `readyline run` against the local
// node and Jaeger, writing its log and recording to the artifacts dir under
// name. It returns once the daemon says it is healthy and its sources are up.
func (e *Env) StartDaemon(ctx context.Context, name string) (*Daemon, error) {
	return e.StartDaemonWith(ctx, name, DaemonOptions{})
}

// StartDaemonWith is StartDaemon with options.
func (e *Env) StartDaemonWith(ctx context.Context, name string, opts DaemonOptions) (*Daemon, error) {
	if others := otherDaemons(); len(others) > 0 {
		return nil, fmt.Errorf("another 'readyline run' is running (pids %v) and would send the same traces to Jaeger; stop it first (make demo-down)", others)
	}
	dir, err := e.ArtifactsDir()
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(dir, "readyline")
	// The Makefile's DAEMON_TAGS: the binary users run.
	build := exec.CommandContext(ctx, "go", "build", "-tags", "grpcnotrace", "-o", bin, "./cmd/readyline")
	build.Dir = e.RepoRoot
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building readyline: %v\n%s", err, out)
	}
	if opts.ColdBinary {
		if err := evictFromPageCache(bin); err != nil {
			return nil, err
		}
	}
	// Not the default's ports: the DaemonSet's daemon takes those on the
	// local node (hostNetwork).
	addrs, err := freeAddrs(4)
	if err != nil {
		return nil, err
	}
	apiAddr, metricsAddr, healthAddr, secureAPIAddr := addrs[0], addrs[1], addrs[2], addrs[3]
	d := &Daemon{
		APIURL: "http://" + apiAddr, MetricsURL: "http://" + metricsAddr, HealthURL: "http://" + healthAddr, SecureAPIAddr: secureAPIAddr,
		Log: filepath.Join(dir, name+".log"), Record: filepath.Join(dir, name+".jsonl"), Bin: bin,
		exited: make(chan struct{}),
	}
	logFile, err := os.Create(d.Log)
	if err != nil {
		return nil, err
	}
	args := append(slices.Clone(opts.Wrap), bin, "run",
		"--node-name", e.NodeName, "--kubeconfig", e.Kubeconfig, "--cri-endpoint", e.CRIEndpoint(),
		"--otlp-endpoint", OTLPGRPCEndpoint, "--otlp-insecure",
		"--api-addr", apiAddr, "--secure-api-addr", secureAPIAddr, "--metrics-addr", metricsAddr, "--health-addr", healthAddr,
		"--start-timeout", StartTimeout.String())
	var deployed []string
	if opts.AsDeployed {
		if deployed, err = deployedEnv(e.RepoRoot); err != nil {
			return nil, err
		}
		d.Record = ""
	} else {
		// --record is a file name in --record-dir, which only a flag sets.
		args = append(args, "--record-dir", dir, "--record", filepath.Base(d.Record), "--log-level", "debug")
	}
	args = append(args, opts.Args...)
	d.cmd = exec.Command(args[0], args[1:]...)
	if deployed != nil {
		d.cmd.Env = append(os.Environ(), deployed...)
	}
	d.cmd.Stdout, d.cmd.Stderr = logFile, logFile
	if err := d.cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting readyline: %w", err)
	}
	go func() {
		d.cmd.Wait()
		logFile.Close()
		close(d.exited)
	}()
	d.proc, d.PID = d.cmd.Process, d.cmd.Process.Pid
	if len(opts.Wrap) > 0 {
		if d.proc, err = wrappedChild(ctx, d.cmd.Process.Pid, bin, d.exited); err != nil {
			d.cmd.Process.Kill()
			<-d.exited
			return nil, fmt.Errorf("readyline under %v: %w", opts.Wrap, err)
		}
		d.PID = d.proc.Pid
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		select {
		case <-d.exited:
			return false, fmt.Errorf("readyline exited: %s", d.cmd.ProcessState)
		default:
		}
		log, _ := os.ReadFile(d.Log)
		for _, ready := range []string{"process tracer attached", "pod watch synced", "probing the kubelet's CRI client", "tcp tracer attached"} {
			if !strings.Contains(string(log), ready) {
				return false, nil
			}
		}
		resp, err := http.Get(d.HealthURL + "/healthz")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		d.Stop()
		log, _ := os.ReadFile(d.Log)
		return nil, fmt.Errorf("waiting for readyline: %w\n%s", err, log)
	}
	return d, nil
}

// deployedEnv is the environment deploy/base gives the daemon: the
// settings of readyline.env (its ConfigMap) and the DaemonSet's literal
// env values (GODEBUG, ...); values from the downward API or referring to
// them are left out.
func deployedEnv(root string) ([]string, error) {
	base := filepath.Join(root, "deploy", "base")
	settings, err := os.ReadFile(filepath.Join(base, "readyline.env"))
	if err != nil {
		return nil, err
	}
	var env []string
	for _, line := range strings.Split(string(settings), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			env = append(env, line)
		}
	}
	manifest, err := os.ReadFile(filepath.Join(base, "daemonset.yaml"))
	if err != nil {
		return nil, err
	}
	var ds appsv1.DaemonSet
	if err := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifest), 4096).Decode(&ds); err != nil {
		return nil, fmt.Errorf("deploy/base/daemonset.yaml: %w", err)
	}
	for _, c := range ds.Spec.Template.Spec.Containers {
		if c.Name != "readyline" {
			continue
		}
		for _, v := range c.Env {
			if v.ValueFrom == nil && !strings.Contains(v.Value, "$(") {
				env = append(env, v.Name+"="+v.Value)
			}
		}
		return env, nil
	}
	return nil, errors.New("deploy/base/daemonset.yaml: no container named readyline")
}

// Died returns an error when the daemon exited on its own, not stopped by
// Stop: a crash, which the tests it served must fail on (they may have
// passed on what it did before). Nil while it runs and once Stop was
// called. Died is safe for concurrent use.
func (d *Daemon) Died() error {
	select {
	case <-d.exited:
		if !d.stopping.Load() {
			return d.diedError()
		}
	default:
	}
	return nil
}

func (d *Daemon) diedError() error {
	return fmt.Errorf("readyline (pid %d) exited on its own: %s; the end of its log %s:\n%s", d.PID, d.cmd.ProcessState, d.Log, logTail(d.Log, 20))
}

// logTail returns the last n lines of file.
func logTail(file string, n int) string {
	b, err := os.ReadFile(file)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// Stop interrupts the daemon (SIGINT) and waits for it, killing it after
// 15 s. It returns an error if the daemon did not exit cleanly, or had
// exited on its own before Stop was called (Died).
func (d *Daemon) Stop() error {
	select {
	case <-d.exited:
		if !d.stopping.Swap(true) {
			return d.diedError()
		}
	default:
		d.stopping.Store(true)
		d.proc.Signal(syscall.SIGINT)
		select {
		case <-d.exited:
		case <-time.After(15 * time.Second):
			d.proc.Kill()
			d.cmd.Process.Kill()
			<-d.exited
			return errors.New("readyline did not stop within 15 s of SIGINT")
		}
	}
	if !d.cmd.ProcessState.Success() {
		return fmt.Errorf("readyline exited with %s", d.cmd.ProcessState)
	}
	return nil
}

// Timeline fetches a pod start's timeline from the daemon's API, waiting
// for it to be complete.
func (d *Daemon) Timeline(ctx context.Context, namespace, name string, timeout time.Duration) (*correlator.Timeline, error) {
	var tl *correlator.Timeline
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		var err error
		tl, err = apiclient.FetchTimeline(ctx, d.APIURL, namespace, name)
		if errors.Is(err, apiclient.ErrNotFound) || (err == nil && !tl.AsOf.IsZero()) {
			return false, nil // not ended yet: a snapshot (AsOf) of a start in progress, or of one settling
		}
		return err == nil, err
	})
	if err != nil {
		return nil, fmt.Errorf("timeline of %s/%s: %w", namespace, name, err)
	}
	return tl, nil
}

// otherDaemons lists the pids of running `readyline run` processes.
func otherDaemons() []int {
	var pids []int
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) > 1 && filepath.Base(args[0]) == "readyline" && args[1] == "run" {
			var pid int
			fmt.Sscanf(filepath.Base(filepath.Dir(p)), "%d", &pid)
			if !onNestedNode(pid) {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// onNestedNode: pid is in a pod of a node that is itself a container (a
// kind node's DaemonSet), which exports to that cluster's own Jaeger.
func onNestedNode(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return false
	}
	for line := range strings.Lines(string(b)) {
		if parts := strings.SplitN(strings.TrimSpace(line), ":", 3); len(parts) == 3 && collector.ParseCgroupPath(parts[2]).Nested {
			return true
		}
	}
	return false
}

// wrappedChild waits until the wrapper process parent has a child running
// exe and returns that child. os.FindProcess holds a pidfd on Linux, so a
// later signal cannot reach another process that reused the pid.
func wrappedChild(ctx context.Context, parent int, exe string, exited <-chan struct{}) (*os.Process, error) {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		select {
		case <-exited:
			return nil, errors.New("the wrapper exited")
		case <-ctx.Done():
			return nil, ctx.Err()
		default:
		}
		stats, _ := filepath.Glob("/proc/[0-9]*/stat")
		for _, f := range stats {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			// Field 4 (ppid) is the second after the parenthesized command name.
			fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
			if len(fields) < 2 || fields[1] != strconv.Itoa(parent) {
				continue
			}
			dir := filepath.Dir(f)
			if got, _ := os.Readlink(filepath.Join(dir, "exe")); got != exe {
				continue // not exec'd yet
			}
			pid, _ := strconv.Atoi(filepath.Base(dir))
			return os.FindProcess(pid)
		}
	}
	return nil, fmt.Errorf("no child of pid %d runs %s after 10 s", parent, exe)
}

// freeAddrs returns n distinct free loopback addresses: the listeners are
// held until all n are picked, since a port closed is the kernel's next
// pick again (two picked one after the other were once the same port, and
// the daemon could not bind its second listener).
func freeAddrs(n int) ([]string, error) {
	addrs := make([]string, 0, n)
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer ln.Close()
		addrs = append(addrs, ln.Addr().String())
	}
	return addrs, nil
}

// evictFromPageCache drops file's pages from the page cache.
func evictFromPageCache(file string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("evicting %s from the page cache: %w", file, err)
	}
	return nil
}
