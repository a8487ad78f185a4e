package apiclient

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoOpenTelemetry: the client links no OpenTelemetry package, so that a
// client of the API does not carry the daemon's exporters (the package
// doc's promise).
func TestNoOpenTelemetry(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("the go command is needed to list the client's packages: %v", err)
	}
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "go.opentelemetry.io/") || pkg == "github.com/readyline/readyline/exporter" {
			t.Errorf("apiclient depends on %s", pkg)
		}
	}
}
