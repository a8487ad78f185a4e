package redact

import (
	"encoding/json"
	"flag"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

var _ flag.Value = new(Policy)

func TestPolicyArgv(t *testing.T) {
	for _, tt := range []struct {
		in, redacted, none []string
	}{
		{[]string{"/bin/sh", "-c", "mysql -pX"}, []string{"/bin/sh", "-c", "mysql -p" + R}, []string{"sh"}},
		{[]string{"mysql", "-pX"}, []string{"mysql", "-p" + R}, []string{"mysql"}},
		{[]string{"--password=X"}, []string{"--password=" + R}, []string{"--password=" + R}},
		{[]string{""}, []string{""}, nil},
		{nil, nil, nil},
	} {
		if got := Redacted.Argv(tt.in); !slices.Equal(got, tt.redacted) {
			t.Errorf("Redacted.Argv(%q) = %q, want %q", tt.in, got, tt.redacted)
		}
		if got := ProgramOnly.Argv(tt.in); !slices.Equal(got, tt.none) {
			t.Errorf("ProgramOnly.Argv(%q) = %q, want %q", tt.in, got, tt.none)
		}
	}
}

func TestPolicyFlag(t *testing.T) {
	var p Policy
	if p.String() != "redacted" {
		t.Errorf("zero Policy %q, want redacted", p)
	}
	if err := p.Set("none"); err != nil || p != ProgramOnly || p.String() != "none" {
		t.Errorf("Set(none): %v, %v", p, err)
	}
	if err := p.Set("hidden"); err == nil {
		t.Error("Set(hidden) took it")
	}
}

// TestStripCommands: with ProgramOnly, nothing of a pod spec's command
// lines is left but the programs' names.
func TestStripCommands(t *testing.T) {
	pod := specPod("u", "hunter2")
	pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "entrypoint", Args: []string{"--token", "hunter2"}})
	Redacted.StripCommands(pod)
	if b, _ := json.Marshal(pod); !strings.Contains(string(b), "hunter2") {
		t.Fatal("Redacted.StripCommands changed the pod")
	}
	ProgramOnly.StripCommands(pod)
	var names []string
	execCommands(&pod.Spec, func(command, args *[]string) {
		names = append(names, strings.Join(*command, " "))
		if args != nil && *args != nil {
			t.Errorf("args %q left", *args)
		}
	})
	if want := []string{"sh", "mysqld", "sh", "sh", "curl", "", "redis-cli"}; !slices.Equal(names, want) {
		t.Errorf("commands %q, want %q", names, want)
	}
}
