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
