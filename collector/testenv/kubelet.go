package testenv

import (
	"bufio"
	"errors"
	"fmt"
	"iter"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// RequireNodeEnv is the environment variable that turns the skip of a test
// needing a binary deploy/node builds into a failure: "1" for the kubelet
// the node runs by default, "all" for the older ones of K8S_KUBELET_VERSION
// too (make test-compat builds them; make test does not).
const RequireNodeEnv = "READYLINE_REQUIRE_NODE"

// repoRoot is readyline's checkout, from this file's place in it.
func repoRoot(tb testing.TB) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		tb.Fatal("cannot tell where the testenv package is")
	}
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// KubeletVersions are the kubelet versions deploy/node builds: the control
// plane's (deploy/node/tools/kubernetes) first, then the older ones that
// node.sh runs with K8S_KUBELET_VERSION (deploy/node/tools/kubelet-v1.X),
// read from their go.mod files.
func KubeletVersions(tb testing.TB) []string {
	tb.Helper()
	tools := filepath.Join(repoRoot(tb), "deploy", "node", "tools")
	dirs, err := filepath.Glob(filepath.Join(tools, "kubelet-v1.*", "go.mod"))
	if err != nil {
		tb.Fatal(err)
	}
	var versions []string
	for _, mod := range append([]string{filepath.Join(tools, "kubernetes", "go.mod")}, dirs...) {
		v, err := requiredVersion(mod, "k8s.io/kubernetes")
		if err != nil {
			tb.Fatal(err)
		}
		versions = append(versions, v)
	}
	return versions
}

// requiredVersion is the version of module that the go.mod file requires.
func requiredVersion(gomod, module string) (string, error) {
	f, err := os.Open(gomod)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(strings.TrimPrefix(strings.TrimSpace(sc.Text()), "require "))
		if len(fields) >= 2 && fields[0] == module && strings.HasPrefix(fields[1], "v") {
			return fields[1], nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("%s requires no %s", gomod, module)
}

// KubeletBinary returns the path of the kubelet of version (one of
// KubeletVersions) that deploy/node has built (stripped with -s -w,
// -trimpath, as a release is). When it is not built (or, under make, no
// earlier step of the run built or asked for it: the build ledger of
// deploy/node/lib/build.sh) the test skips, loudly, or fails as
// READYLINE_REQUIRE_NODE demands.
func KubeletBinary(tb testing.TB, version string) string {
	tb.Helper()
	return KubeletTool(tb, "kubelet", version)
}

// KubeletTools are node.sh's kubelet tools by the GOARCH they are built
// for, this host's in order first: "kubelet", and on amd64 "kubelet-arm64",
// the same kubelet cross-built for arm64.
func KubeletTools() iter.Seq2[string, string] {
	return func(yield func(goarch, tool string) bool) {
		if !yield(runtime.GOARCH, "kubelet") || runtime.GOARCH == "arm64" {
			return
		}
		yield("arm64", "kubelet-arm64")
	}
}

// KubeletTool is KubeletBinary for a kubelet tool of node.sh: "kubelet", or
// "kubelet-arm64", the same kubelet cross-built for arm64 (which no node
// here runs: the static tests read it).
func KubeletTool(tb testing.TB, tool, version string) string {
	tb.Helper()
	cmd := exec.Command(filepath.Join(repoRoot(tb), "deploy", "node", "node.sh"), "tool", "--built", tool)
	cmd.Env = append(os.Environ(), "K8S_KUBELET_VERSION="+version)
	out, err := cmd.Output()
	if err != nil {
		msg := fmt.Sprintf("KUBELET BINARY TEST NOT RUN: K8S_KUBELET_VERSION=%s node.sh tool --built %s: %v: %s (deploy/node builds it: `K8S_KUBELET_VERSION=%[1]s deploy/node/node.sh tool %[2]s`)", version, tool, err, stderrOf(err))
		require := os.Getenv(RequireNodeEnv)
		if require == "all" || (require == "1" && version == KubeletVersions(tb)[0]) {
			tb.Fatal(msg + "; " + RequireNodeEnv + "=1 demands it")
		}
		tb.Skip(msg)
	}
	return strings.TrimSpace(string(out))
}

// stderrOf is the last line a failed command wrote to its standard error.
func stderrOf(err error) string {
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(exit.Stderr)), "\n")
	return lines[len(lines)-1]
}
