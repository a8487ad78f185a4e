//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// NodeUp runs node.sh up with the node in its own PID namespace or not
// (NODE_PIDNS, see deploy/node/README.md); a node running in the other mode
// is restarted. A restarted node has a new CA, so e reconnects: call it only
// while no other test uses e.
func (e *Env) NodeUp(ctx context.Context, ownPIDNamespace bool) error {
	mode := "NODE_PIDNS=0"
	if ownPIDNamespace {
		mode = "NODE_PIDNS=1"
	}
	if err := e.NodeScriptEnv(ctx, []string{mode}, "up"); err != nil {
		return err
	}
	return e.connect()
}

// RecordedPID returns the host pid node.sh recorded for component (e.g.
// "kubelet", "node-init") if that process is alive.
func (e *Env) RecordedPID(component string) (int, bool) {
	return recordedProcessAlive(filepath.Join(e.NodeDir, "run", component+".pid"))
}

// InNode returns the command prefix that runs a command in the node's PID
// and mount namespaces (what a hostPID pod on a kind node sees), for
// DaemonOptions.Wrap; an error if the node has no PID namespace of its own.
func (e *Env) InNode() ([]string, error) {
	init, ok := e.RecordedPID("node-init")
	if !ok {
		return nil, fmt.Errorf("the node runs in the host's PID namespace (no node-init in %s/run)", e.NodeDir)
	}
	return []string{"nsenter", "--target", strconv.Itoa(init), "--pid", "--mount", "--"}, nil
}

// PIDNamespace returns the PID namespace of a process, e.g. "pid:[4026532178]".
func PIDNamespace(pid int) (string, error) {
	return os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid))
}

// NSpids returns a process's pids from /proc/<pid>/status (NSpid), from
// the reader's PID namespace down to the process's own.
func NSpids(pid int) ([]int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(line, "NSpid:")
		if !ok {
			continue
		}
		var pids []int
		for _, f := range strings.Fields(rest) {
			n, err := strconv.Atoi(f)
			if err != nil {
				return nil, fmt.Errorf("NSpid of %d: %q", pid, rest)
			}
			pids = append(pids, n)
		}
		return pids, nil
	}
	return nil, fmt.Errorf("no NSpid in /proc/%d/status", pid)
}
