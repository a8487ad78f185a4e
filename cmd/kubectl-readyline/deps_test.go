package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoExporterStack: the plugin draws the waterfall (exporter/waterfall)
// without the daemon's exporters: it links no OpenTelemetry package (the
// SDK, its OTLP exporters, not even the API), no gRPC, no Prometheus
// client, and not the exporter package that brings them.
func TestNoExporterStack(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("the go command is needed to list the plugin's packages: %v", err)
	}
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, root := range []string{
			"go.opentelemetry.io",
			"google.golang.org/grpc",
			"github.com/prometheus/client_golang",
		} {
			if pkg == root || strings.HasPrefix(pkg, root+"/") {
				t.Errorf("the plugin depends on %s", pkg)
			}
		}
		if pkg == "github.com/readyline/readyline/exporter" {
			t.Errorf("the plugin depends on %s", pkg)
		}
	}
}
