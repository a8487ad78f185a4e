package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestParseExplain: kubectl's flags and explain's own parse together; the
// combinations that mean nothing are usage errors.
func TestParseExplain(t *testing.T) {
	o, err := parseExplain([]string{"-n", "team", "pod/web", "--width", "80", "--context", "prod", "--as", "alice", "--readyline-namespace", "obs"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.pod != "web" || *o.kube.Namespace != "team" || *o.kube.Context != "prod" || *o.kube.Impersonate != "alice" ||
		o.readylineNamespace != "obs" || o.readylineSelector != defaultReadylineSelector {
		t.Errorf("parsed %+v (namespace %q, context %q, as %q)", o, *o.kube.Namespace, *o.kube.Context, *o.kube.Impersonate)
	}
	if o.width != 80 || o.output != "text" || o.apiPort != defaultAPIPort {
		t.Errorf("width %d, output %q, api port %d", o.width, o.output, o.apiPort)
	}
	o, err = parseExplain([]string{"web", "-o", "json", "--api-port", "10443"}, io.Discard)
	if err != nil || o.output != "json" || o.apiPort != 10443 {
		t.Errorf("-o json --api-port 10443: %v, output %q, api port %d", err, o.output, o.apiPort)
	}
	o, err = parseExplain([]string{"--web", "web", "--port", "8080", "--address", "0.0.0.0"}, io.Discard)
	if err != nil || !o.web || o.port != 8080 || o.address != "0.0.0.0" || o.apiPort != defaultAPIPort {
		t.Errorf("--web: %+v, %v", o, err)
	}

	for _, args := range [][]string{
		{},
		{"a", "b"},
		{"team/web"},
		{"web", "-o", "yaml"},
		{"web", "--web", "-o", "json"},
		{"web", "--web", "--width", "80"},
		{"web", "--port", "8080"},
		{"web", "--web", "--api-port", "0"},
		{"web", "--readyline-selector", "a in ("},
		{"web", "--no-such-flag"},
	} {
		var stderr bytes.Buffer
		if _, err := parseExplain(args, &stderr); !errors.Is(err, errUsage) {
			t.Errorf("explain %q: %v, want a usage error", args, err)
		}
		if !strings.Contains(stderr.String(), "usage: kubectl readyline explain") {
			t.Errorf("explain %q printed no usage: %q", args, stderr.String())
		}
	}
	var stderr bytes.Buffer
	if _, err := parseExplain([]string{"-h"}, &stderr); !errors.Is(err, pflag.ErrHelp) || !strings.Contains(stderr.String(), "--kubeconfig") {
		t.Errorf("-h: %v, usage %q; want help with kubectl's flags", err, stderr.String())
	}
}

func TestParseList(t *testing.T) {
	o, err := parseList([]string{"-A", "-o", "json"}, io.Discard)
	if err != nil || !o.allNamespaces || o.output != "json" {
		t.Errorf("-A -o json: %+v, %v", o, err)
	}
	for _, args := range [][]string{{"-A", "-n", "team"}, {"web"}, {"-o", "wide"}} {
		if _, err := parseList(args, io.Discard); !errors.Is(err, errUsage) {
			t.Errorf("list %q: %v, want a usage error", args, err)
		}
	}
}

// TestRunExitStatus: 0 for help and version, 2 for usage errors, as
// readyline's own commands.
func TestRunExitStatus(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want int
	}{
		{nil, 2},
		{[]string{"help"}, 0},
		{[]string{"version"}, 0},
		{[]string{"frobnicate"}, 2},
		{[]string{"explain"}, 2},
		{[]string{"explain", "-h"}, 0},
		{[]string{"list", "extra"}, 2},
	} {
		if got := run(context.Background(), tc.args, io.Discard, io.Discard); got != tc.want {
			t.Errorf("kubectl-readyline %q exited %d, want %d", tc.args, got, tc.want)
		}
	}
}
