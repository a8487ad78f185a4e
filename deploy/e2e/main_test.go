//go:build e2e

package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"
)

// env is the node and Jaeger shared by all tests, set up by TestMain.
var env *Env

func TestMain(m *testing.M) { os.Exit(runTests(m)) }

func runTests(m *testing.M) int {
	ctx := context.Background()
	flag.Parse()
	timeout, err := testTimeout()
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	if os.Geteuid() != 0 {
		fmt.Fprintf(os.Stderr, "FAIL: %v (e.g. sudo go test -tags e2e ./deploy/e2e/...)\n", ErrNotRoot)
		return 1
	}
	nodeDir := NodeDir()
	// What the host looks like without the node, to judge the teardown.
	// A node left running by an earlier session is judged against the
	// baseline node.sh recorded before starting it.
	wasRunning := NodeRunning(nodeDir)
	var before *HostSnapshot
	if !wasRunning {
		if before, err = TakeHostSnapshot(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "FAIL: snapshot of the host:", err)
			return 1
		}
	}

	env, err = Setup(ctx, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: setting up the local node:", err)
		return 1
	}
	if wasRunning {
		if before, err = LoadNodeBaseline(nodeDir); err != nil {
			fmt.Fprintln(os.Stderr, "FAIL:", err)
			return 1
		}
	}

	// The tests end within go test's -timeout, less what their cleanups
	// need (testContext), so that the teardown below always runs: the
	// alarm starts with m.Run and stops when it returns.
	if timeout > 0 {
		budgetEnd = time.Now().Add(timeout - teardownReserve)
	}
	code := m.Run()
	if err := stopReadyline(); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: readyline:", err)
		code = 1
	}

	if os.Getenv("READYLINE_E2E_TEARDOWN") != "1" {
		fmt.Fprintln(os.Stderr, "leaving the node and Jaeger running (READYLINE_E2E_TEARDOWN=1 stops them)")
		return code
	}
	if err := env.Teardown(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: teardown:", err)
		return 1
	}
	problems, err := env.CheckHostClean(ctx, before)
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: checking the host after teardown:", err)
		return 1
	}
	if err := env.NodeScript(ctx, "check-clean", "--with-jaeger"); err != nil {
		problems = append(problems, err.Error())
	}
	if len(problems) > 0 {
		fmt.Fprintln(os.Stderr, "FAIL: the teardown left things on the host:")
		for _, p := range problems {
			fmt.Fprintln(os.Stderr, "  "+p)
		}
		return 1
	}
	fmt.Fprintln(os.Stderr, "teardown left the host clean")
	return code
}
