//go:build e2e

// Package check holds the local node's own checks: that deploy/node brought
// up a working Kubernetes node and Jaeger (the node Ready with the versions
// node.sh builds, CoreDNS, in-cluster credentials through kube-proxy, Jaeger's
// OTLP receivers and query API). They run no readyline: they are what the
// end-to-end tests of deploy/e2e stand on, checked apart so that a broken
// node is not mistaken for a readyline failure.
//
// They need the node and Jaeger running (make test runs them right after
// node.sh up); without, they skip loudly, or fail with
// READYLINE_REQUIRE_NODE=1:
//
//	sudo make node-up jaeger-up
//	sudo go test -tags e2e ./deploy/node/check/
package check

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/readyline/readyline/deploy/e2e"
)

// env is the running node and Jaeger, connected by TestMain.
var env *e2e.Env

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	if os.Geteuid() != 0 {
		fmt.Fprintf(os.Stderr, "FAIL: %v (e.g. sudo go test -tags e2e ./deploy/node/check/)\n", e2e.ErrNotRoot)
		return 1
	}
	if !e2e.NodeRunning(e2e.NodeDir()) {
		msg := "LOCAL NODE CHECKS NOT RUN: the local node is not running (sudo make node-up jaeger-up)"
		if os.Getenv("READYLINE_REQUIRE_NODE") == "1" {
			fmt.Fprintln(os.Stderr, "FAIL: "+msg+"; READYLINE_REQUIRE_NODE=1 demands it")
			return 1
		}
		fmt.Fprintln(os.Stderr, msg)
		return 0
	}
	// Setup reuses the running node and Jaeger (node.sh up and jaeger-up
	// are idempotent) and connects to the API server.
	var err error
	if env, err = e2e.Setup(context.Background(), os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: connecting to the local node:", err)
		return 1
	}
	return m.Run()
}
