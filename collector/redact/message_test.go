package redact

import (
	"strings"
	"testing"
)

// The kubelet's own messages about a failed exec hook and probe (v1.37:
// pkg/kubelet/lifecycle/handlers.go, cri-client remote_runtime.go ExecSync).
const (
	hookMessage    = `Exec lifecycle hook ([/bin/sh -c curl -u admin:s3cret https://x/ready; exit 1]) for Container "app" in Pod "shop/web-0(4a1e...)" failed - error: command '/bin/sh -c curl -u admin:s3cret https://x/ready; exit 1' exited with 1: , message: "denied\n"`
	timeoutMessage = `Readiness probe errored and resulted in unknown state: command timed out: "mysqladmin ping --password=s3cret" timed out after 1s`
)

func TestMessageRedacted(t *testing.T) {
	for _, msg := range []string{hookMessage, timeoutMessage} {
		got := Redacted.Message(msg)
		if strings.Contains(got, "s3cret") {
			t.Errorf("%q -> %q", msg, got)
		}
		if !strings.Contains(got, "/bin/sh") && !strings.Contains(got, "mysqladmin") {
			t.Errorf("the command left: %q", got)
		}
	}
}

func TestMessageProgramOnly(t *testing.T) {
	cases := map[string]string{
		hookMessage:    `Exec lifecycle hook ([sh <redacted>]) for Container "app" in Pod "shop/web-0(4a1e...)" failed - error: command 'sh <redacted>' exited with 1: , message: "denied\n"`,
		timeoutMessage: `Readiness probe errored and resulted in unknown state: command timed out: "mysqladmin <redacted>" timed out after 1s`,
		// Cut before its form closes: the rest is the command.
		`command 'psql -c select 1 from users where pw=`: `command 'psql <redacted>`,
		// No command in it: as Redacted.
		`Back-off restarting failed container app in pod web-0`: `Back-off restarting failed container app in pod web-0`,
	}
	for msg, want := range cases {
		if got := ProgramOnly.Message(msg); got != want {
			t.Errorf("ProgramOnly.Message(%q)\n = %q\nwant %q", msg, got, want)
		}
	}
}

// TestMessageKeepsTheVolume: the kubelet's words about a volume stay whole
// (a volume named like a secret is no JSON key), what follows them is
// redacted as ever; a message not of the kubelet's form is read whole.
func TestMessageKeepsTheVolume(t *testing.T) {
	for msg, want := range map[string]string{
		`MountVolume.SetUp failed for volume "secret-0" : secret "secret-0" not found`: `MountVolume.SetUp failed for volume "secret-0" : secret "secret-0" not found`,
		`MountVolume.SetUp failed for volume "token" : mount --password=s3cret failed`: `MountVolume.SetUp failed for volume "token" : mount --password=<redacted> failed`,
		`MountVolume.SetUp failed for volume "x`:                                       `MountVolume.SetUp failed for volume "x`,
		`{"password" : "s3cret"} for volume "a" : b`:                                   `{"password" : "<redacted>"} for volume "a" : b`,
		`MountVolume failed for volume "a b" : {"token": "s3cret"}`:                    `MountVolume failed for volume "a b" : {"token": "<redacted>"}`,
	} {
		if got := Redacted.Message(msg); got != want || strings.Contains(got, "s3cret") {
			t.Errorf("%q -> %q, want %q", msg, got, want)
		}
	}
}
