//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// HostSnapshot is what the node may add to the host outside its work
// directory, taken before the node starts so that CheckHostClean can tell the
// node's leftovers from what was there before.
type HostSnapshot struct {
	// Chains holds "family table chain" for every KUBE-* and CNI-* chain.
	Chains map[string]bool
	// Netns holds the names in /run/netns.
	Netns map[string]bool
}

var iptablesFamilies = []string{"iptables", "ip6tables"}

// TakeHostSnapshot records the host's KUBE-*/CNI-* chains and network
// namespaces as they are now.
func TakeHostSnapshot(ctx context.Context) (*HostSnapshot, error) {
	s := &HostSnapshot{Chains: map[string]bool{}, Netns: map[string]bool{}}
	for _, fam := range iptablesFamilies {
		chains, err := nodeChains(ctx, fam)
		if err != nil {
			return nil, err
		}
		for _, c := range chains {
			s.Chains[c] = true
		}
	}
	entries, err := os.ReadDir("/run/netns")
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	for _, e := range entries {
		s.Netns[e.Name()] = true
	}
	return s, nil
}

// nodeChains lists "family table chain" for the KUBE-* and CNI-* chains.
func nodeChains(ctx context.Context, family string) ([]string, error) {
	out, err := exec.CommandContext(ctx, family+"-save").Output()
	if err != nil {
		return nil, fmt.Errorf("%s-save: %w", family, err)
	}
	var chains []string
	table := ""
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "*"):
			table = line[1:]
		case strings.HasPrefix(line, ":KUBE-"), strings.HasPrefix(line, ":CNI-"):
			name, _, _ := strings.Cut(line[1:], " ")
			chains = append(chains, family+" "+table+" "+name)
		}
	}
	return chains, sc.Err()
}

// CheckHostClean returns what the node left on the host compared with before:
// recorded processes still alive, processes running the node's binaries or in a
// kubepods cgroup, mounts under the work directory, network namespaces, the CNI
// bridge and KUBE-*/CNI-* iptables chains. Empty means clean.
func (e *Env) CheckHostClean(ctx context.Context, before *HostSnapshot) ([]string, error) {
	var problems []string

	pidfiles, _ := filepath.Glob(filepath.Join(e.NodeDir, "run", "*.pid"))
	for _, f := range pidfiles {
		if pid, alive := recordedProcessAlive(f); alive {
			problems = append(problems, fmt.Sprintf("recorded process %s (pid %d) is alive", filepath.Base(f), pid))
		}
	}

	cache := CacheDir()
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		if exe, err := os.Readlink(filepath.Join(p, "exe")); err == nil && strings.HasPrefix(exe, cache+"/") {
			problems = append(problems, fmt.Sprintf("process %s runs %s", filepath.Base(p), exe))
		}
		if cg, err := os.ReadFile(filepath.Join(p, "cgroup")); err == nil && bytes.Contains(cg, []byte("kubepods")) {
			problems = append(problems, fmt.Sprintf("process %s is in a kubepods cgroup", filepath.Base(p)))
		}
	}

	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(string(mounts), "\n") {
		f := strings.Fields(line)
		if len(f) < 10 {
			continue
		}
		mountPoint := strings.ReplaceAll(f[4], `\040`, " ")
		if strings.HasPrefix(mountPoint, e.NodeDir+"/") {
			problems = append(problems, "mount "+mountPoint)
		}
	}

	if _, err := net.InterfaceByName(Bridge); err == nil {
		problems = append(problems, "link "+Bridge+" exists")
	}

	entries, _ := os.ReadDir("/run/netns")
	for _, ent := range entries {
		if !before.Netns[ent.Name()] {
			problems = append(problems, "network namespace /run/netns/"+ent.Name())
		}
	}

	for _, fam := range iptablesFamilies {
		chains, err := nodeChains(ctx, fam)
		if err != nil {
			return nil, err
		}
		for _, c := range chains {
			if !before.Chains[c] {
				problems = append(problems, "chain "+c)
			}
		}
	}
	sort.Strings(problems)
	return problems, nil
}

// recordedProcessAlive reads a node.sh PID file ("pid starttime exe") and
// reports whether that very process still runs.
func recordedProcessAlive(pidfile string) (int, bool) {
	b, err := os.ReadFile(pidfile)
	if err != nil {
		return 0, false
	}
	var pid int
	var start, exe string
	if _, err := fmt.Sscan(string(b), &pid, &start, &exe); err != nil {
		return 0, false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return pid, false
	}
	// Field 22 (starttime), counted after the parenthesized command name.
	rest := stat[bytes.LastIndexByte(stat, ')')+2:]
	fields := strings.Fields(string(rest))
	return pid, len(fields) > 19 && fields[19] == start
}

// LoadNodeBaseline reads the host baseline node.sh recorded before it started
// the node (NODE_DIR/host), for when the node was already running before the
// tests began and a fresh snapshot would include the node's own chains.
func LoadNodeBaseline(nodeDir string) (*HostSnapshot, error) {
	s := &HostSnapshot{Chains: map[string]bool{}, Netns: map[string]bool{}}
	dir := filepath.Join(nodeDir, "host")
	if _, err := os.Stat(filepath.Join(dir, "complete")); err != nil {
		return nil, fmt.Errorf("no host baseline in %s: %w", dir, err)
	}
	for _, fam := range iptablesFamilies {
		b, err := os.ReadFile(filepath.Join(dir, fam))
		if err != nil {
			return nil, err
		}
		// Lines are "table :CHAIN", "table policy ..." or "table -A ...".
		for _, line := range strings.Split(string(b), "\n") {
			table, rest, _ := strings.Cut(line, " ")
			if strings.HasPrefix(rest, ":KUBE-") || strings.HasPrefix(rest, ":CNI-") {
				s.Chains[fam+" "+table+" "+rest[1:]] = true
			}
		}
	}
	paths, err := os.ReadFile(filepath.Join(dir, "paths"))
	if err != nil {
		return nil, err
	}
	for _, p := range strings.Split(string(paths), "\n") {
		if name, ok := strings.CutPrefix(p, "/run/netns/"); ok && name != "" && !strings.Contains(name, "/") {
			s.Netns[name] = true
		}
	}
	return s, nil
}

// NodeRunning reports whether the node's kubelet recorded by node.sh is alive.
func NodeRunning(nodeDir string) bool {
	_, alive := recordedProcessAlive(filepath.Join(nodeDir, "run", "kubelet.pid"))
	return alive
}
