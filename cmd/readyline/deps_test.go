package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDaemonLinksNoTemplate: the daemon, built as the Makefile builds it
// (DAEMON_TAGS), links no text/template. Its MethodByName makes the linker
// keep every exported method of every type put in an interface: with it,
// the binary maps 29.5 MiB instead of 24.5, most of the daemon's RSS.
func TestDaemonLinksNoTemplate(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("the go command is needed to list the daemon's packages: %v", err)
	}
	out, err := exec.Command("go", "list", "-deps", "-tags", "grpcnotrace", "-f", `{{.ImportPath}}: {{join .Imports " "}}`, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		pkg, imports, _ := strings.Cut(line, ": ")
		for _, imp := range strings.Fields(imports) {
			if imp == "text/template" || imp == "html/template" {
				t.Errorf("%s imports %s", pkg, imp)
			}
		}
	}
}

// TestDaemonLinksNoAPIServer: the aggregated API server's libraries
// (k8s.io/apiserver and what it brings: etcd's client, CEL) are
// cmd/readyline-api's alone; the daemon on every node links none of them,
// and its RSS and CPU goals stand.
func TestDaemonLinksNoAPIServer(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-tags", "grpcnotrace", "-f", "{{.ImportPath}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, banned := range []string{"k8s.io/apiserver/", "go.etcd.io/", "github.com/google/cel-go/", "github.com/readyline/readyline/exporter/podstartapi"} {
			if strings.HasPrefix(pkg+"/", banned) {
				t.Errorf("the daemon links %s", pkg)
			}
		}
	}
}
