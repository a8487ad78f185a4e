//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter"
)

// CRIEndpoint is the local node's containerd socket.
func (e *Env) CRIEndpoint() string {
	return "unix://" + filepath.Join(e.NodeDir, "containerd", "containerd.sock")
}

// Daemon is `readyline run` started by a test as a root process on the host.
type Daemon struct {
	cmd *exec.Cmd
	// APIURL serves the timelines, MetricsURL /metrics and /healthz.
	APIURL, MetricsURL string
	// Log and Record are the daemon's stderr and its event recording.
	Log, Record string
	exited      chan struct{}
}

// StartDaemon builds readyline and runs `readyline run` against the local
// node and Jaeger, writing its log and recording to the artifacts dir under
// name. It returns once the daemon serves /healthz and its sources are up.
func (e *Env) StartDaemon(ctx context.Context, name string) (*Daemon, error) {
	if others := otherDaemons(); len(others) > 0 {
		return nil, fmt.Errorf("another 'readyline run' is running (pids %v) and would send the same traces to Jaeger; stop it first (make demo-down)", others)
	}
	dir, err := e.ArtifactsDir()
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(dir, "readyline")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/readyline")
	build.Dir = e.RepoRoot
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building readyline: %v\n%s", err, out)
	}
	apiAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	metricsAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	d := &Daemon{
		APIURL: "http://" + apiAddr, MetricsURL: "http://" + metricsAddr,
		Log: filepath.Join(dir, name+".log"), Record: filepath.Join(dir, name+".jsonl"),
		exited: make(chan struct{}),
	}
	logFile, err := os.Create(d.Log)
	if err != nil {
		return nil, err
	}
	d.cmd = exec.Command(bin, "run",
		"--node-name", e.NodeName, "--kubeconfig", e.Kubeconfig, "--cri-endpoint", e.CRIEndpoint(),
		"--otlp-endpoint", OTLPGRPCEndpoint, "--otlp-insecure",
		"--api-addr", apiAddr, "--metrics-addr", metricsAddr, "--record", d.Record, "--log-level", "debug")
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
		resp, err := http.Get(d.MetricsURL + "/healthz")
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

// Stop interrupts the daemon (SIGINT) and waits for it, killing it after
// 15 s. It returns an error if the daemon did not exit cleanly.
func (d *Daemon) Stop() error {
	select {
	case <-d.exited:
	default:
		d.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-d.exited:
		case <-time.After(15 * time.Second):
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
		tl, err = exporter.FetchTimeline(ctx, d.APIURL, namespace, name)
		if errors.Is(err, exporter.ErrNotFound) {
			return false, nil
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
			pids = append(pids, pid)
		}
	}
	return pids
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
