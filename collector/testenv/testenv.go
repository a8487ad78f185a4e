// Package testenv holds helpers for readyline's privileged tests: tests that
// load eBPF programs or change cgroups and so need root.
package testenv

import (
	"os"
	"testing"
)

// RequirePrivilegedEnv is the environment variable that turns a privileged
// test's skip into a failure. `make test` sets it when run as root, so CI
// cannot pass without running them.
const RequirePrivilegedEnv = "READYLINE_REQUIRE_PRIVILEGED"

// RequirePrivileged skips t, loudly, unless the test runs as root; with
// READYLINE_REQUIRE_PRIVILEGED=1 it fails instead.
func RequirePrivileged(t testing.TB) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	const msg = "PRIVILEGED TEST NOT RUN: it loads eBPF programs and creates cgroups, which needs root (run `sudo make test`)"
	if os.Getenv(RequirePrivilegedEnv) == "1" {
		t.Fatal(msg + "; " + RequirePrivilegedEnv + "=1 demands it")
	}
	t.Skip(msg)
}
