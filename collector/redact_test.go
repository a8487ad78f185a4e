package collector

import (
	"slices"
	"testing"

	"github.com/readyline/readyline/collector/event"
)

func TestRedactArgv(t *testing.T) {
	R := Redacted
	tests := []struct {
		name     string
		in, want []string
	}{
		{"nothing secret", []string{"nginx", "-g", "daemon off;"}, []string{"nginx", "-g", "daemon off;"}},
		{"--password=", []string{"mysql", "--password=hunter2", "-h", "db"}, []string{"mysql", "--password=" + R, "-h", "db"}},
		{"--token value", []string{"agent", "--token", "abc.def", "--verbose"}, []string{"agent", "--token", R, "--verbose"}},
		{"bare flag then another flag", []string{"x", "--password", "--verbose"}, []string{"x", "--password", "--verbose"}},
		{"--client-secret", []string{"oidc", "--client-secret=s3cr3t"}, []string{"oidc", "--client-secret=" + R}},
		{"--api-key", []string{"x", "--api-key=k"}, []string{"x", "--api-key=" + R}},
		{"file flags keep their path", []string{"kube-apiserver", "--token-auth-file=/etc/tokens.csv", "--tls-private-key-file=/k.pem"},
			[]string{"kube-apiserver", "--token-auth-file=/etc/tokens.csv", "--tls-private-key-file=/k.pem"}},
		{"env assignment *_KEY", []string{"env", "AWS_SECRET_ACCESS_KEY=abc", "API_KEY=x", "HOME=/root", "app"},
			[]string{"env", "AWS_SECRET_ACCESS_KEY=" + R, "API_KEY=" + R, "HOME=/root", "app"}},
		{"env assignment *_TOKEN and *PASSWORD", []string{"GITHUB_TOKEN=ghp_x", "DB_PASSWORD=p"},
			[]string{"GITHUB_TOKEN=" + R, "DB_PASSWORD=" + R}},
		{"inside a shell script", []string{"sh", "-c", "DB_PASSWORD=p ./run --token=t --port=80"},
			[]string{"sh", "-c", "DB_PASSWORD=" + R + " ./run --token=" + R + " --port=80"}},
		{"space-separated inside a script", []string{"sh", "-c", "login --password hunter2 && start"},
			[]string{"sh", "-c", "login --password " + R + " && start"}},
		{"url credentials", []string{"git", "clone", "https://user:pa55@example.com/r.git"},
			[]string{"git", "clone", "https://user:" + R + "@example.com/r.git"}},
		{"authorization header", []string{"curl", "-H", "Authorization: Bearer eyJhbGci", "http://x"},
			[]string{"curl", "-H", "Authorization: " + "Bearer " + R, "http://x"}},
		{"empty", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.in)
			got := RedactArgv(in)
			if !slices.Equal(got, tt.want) {
				t.Errorf("RedactArgv(%q)\n got  %q\n want %q", tt.in, got, tt.want)
			}
			if !slices.Equal(in, tt.in) {
				t.Errorf("RedactArgv modified its input: %q", in)
			}
		})
	}
}

func TestHelperScope(t *testing.T) {
	tests := []struct {
		filename string
		want     event.Scope
	}{
		{"/usr/sbin/runc", event.ScopeRuntime},
		{"/usr/local/bin/containerd-shim-runc-v2", event.ScopeRuntime},
		{"/usr/lib/cni/bridge", event.ScopeCNI},
		{"/opt/cni/bin/host-local", event.ScopeCNI},
		{"/usr/bin/conmon", event.ScopeRuntime},
		{"/usr/bin/containerd", event.ScopeHost},
		{"/usr/bin/sh", event.ScopeHost},
		{"/opt/cni/bin/../../bin/sh", event.ScopeHost},
	}
	for _, tt := range tests {
		if got := HelperScope(tt.filename, DefaultCNIBinDirs); got != tt.want {
			t.Errorf("HelperScope(%q) = %v, want %v", tt.filename, got, tt.want)
		}
	}
}

// Argvs for the redaction benchmarks: the common case has nothing to
// redact and must not allocate.
var (
	benchArgv       = []string{"/usr/local/bin/app", "--listen=:8080", "--log-level=debug", "--config", "/etc/app.yaml"}
	benchScriptArgv = []string{"sh", "-c", "test -f /tmp/ready && curl -fsS http://127.0.0.1:8080/healthz?verbose=1"}
	benchSecretArgv = []string{"sh", "-c", "mysqladmin ping -h 127.0.0.1 -u root -phunter2 && curl -u admin:hunter2 http://x/?token=t"}
)

func BenchmarkRedactArgv(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		RedactArgv(benchArgv)
	}
}

func BenchmarkRedactArgvScript(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		RedactArgv(benchScriptArgv)
	}
}

func BenchmarkRedactArgvSecret(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		RedactArgv(benchSecretArgv)
	}
}
