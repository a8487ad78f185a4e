package main

import (
	"errors"
	"io"
	"testing"
)

func TestRunAlertFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  string // READYLINE_ALERT; "-" leaves it unset
		args []string
		want string
	}{
		{"none", "-", nil, ""},
		{"repeatable flag", "-", []string{"--alert", "PodReadyToStartContainers=5s", "--alert=pod.sandbox=2s"}, "PodReadyToStartContainers=5s,pod.sandbox=2s"},
		{"env defaults", "PodReadyToStartContainers=5s, Ready=1m", nil, "PodReadyToStartContainers=5s,Ready=1m0s"},
		{"a flag replaces its name's default", "PodReadyToStartContainers=5s,Ready=1m", []string{"--alert", "podreadytostartcontainers=2s"}, "Ready=1m0s,PodReadyToStartContainers=2s"},
		{"off removes a default", "PodReadyToStartContainers=5s,Ready=1m", []string{"--alert", "Ready=off"}, "PodReadyToStartContainers=5s"},
		{"empty env", "", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env != "-" {
				t.Setenv("READYLINE_ALERT", tc.env)
			}
			c, err := parseRunConfig(append([]string{"--node-name", "n"}, tc.args...), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.alerts.String(); got != tc.want {
				t.Errorf("alerts %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRunAlertFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  string
		args []string
	}{
		{"unknown name", "", []string{"--alert", "PodScheduled=5s"}},
		{"no duration", "", []string{"--alert", "Ready"}},
		{"no unit", "", []string{"--alert", "Ready=5"}},
		{"bad env", "Ready=5s,Nope=1s", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("READYLINE_ALERT", tc.env)
			if _, err := parseRunConfig(append([]string{"--node-name", "n"}, tc.args...), io.Discard); !errors.Is(err, errUsage) {
				t.Errorf("error %v, want a usage error", err)
			}
		})
	}
}

func TestCNIBinDirsFlag(t *testing.T) {
	c, err := parseRunConfig([]string{"--node-name", "n"}, io.Discard)
	if err != nil || len(c.process.cfg.CNIBinDirs) != 3 || c.process.cfg.CNIBinDirs[1] != "/usr/lib/cni" {
		t.Errorf("default CNI dirs %q, %v", c.process.cfg.CNIBinDirs, err)
	}
	t.Setenv("READYLINE_CNI_BIN_DIRS", "/usr/lib/cni, /var/lib/readyline-node/cnibin/")
	c, err = parseRunConfig([]string{"--node-name", "n"}, io.Discard)
	if err != nil || len(c.process.cfg.CNIBinDirs) != 2 || c.process.cfg.CNIBinDirs[1] != "/var/lib/readyline-node/cnibin" {
		t.Errorf("CNI dirs from the environment: %q, %v", c.process.cfg.CNIBinDirs, err)
	}
	for _, bad := range []string{"/a,/b,/c,/d", "relative/dir", "/var/lib/readyline-node/cni/plugins"} {
		if _, err := parseRunConfig([]string{"--node-name", "n", "--cni-bin-dirs", bad}, io.Discard); !errors.Is(err, errUsage) {
			t.Errorf("--cni-bin-dirs %s: %v, want a usage error", bad, err)
		}
	}
}
