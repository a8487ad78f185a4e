package redact

import (
	"strings"
	"testing"
	"time"
)

// benchChunk is a probe script of the kind a pod spec holds, with a secret
// of most families the redactor knows: glued and spaced flags, headers,
// query parameters, JSON, a URL's userinfo, an env assignment.
const benchChunk = `mysqladmin ping -h 127.0.0.1 -u root -p$MYSQL_ROOT_PASSWORD && ` +
	`curl -fsS -H "Authorization: Bearer abc.def" -u admin:hunter2 "http://127.0.0.1:8080/healthz?verbose=1&token=t0k" ` +
	`-d '{"user":"a","password":"p4ss"}' | grep -q ok; redis-cli -a s3cret ping | grep PONG; ` +
	`export DB_PASSWORD='x y'; psql postgresql://app:pw@db:5432/app -c 'select 1' >/dev/null; ` +
	`test -f /tmp/ready && echo ready; `

// benchJava is a 512-byte command line of the common kind: a JVM's flags
// and properties, one of them a password, and an agent's endpoint.
var benchJava = []string{"java", "-Xms512m", "-Xmx2g", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=200",
	"-Dspring.profiles.active=prod", "-Dspring.datasource.url=jdbc:postgresql://db:5432/orders?sslmode=require",
	"-Dspring.datasource.username=orders", "-Dspring.datasource.password=s3cr3t-pw", "-Dserver.port=8080",
	"-javaagent:/otel/opentelemetry-javaagent.jar", "-Dotel.service.name=orders",
	"-Dotel.exporter.otlp.endpoint=http://otel-collector.observability:4317", "-cp", "/app/classes:/app/libs/*",
	"com.example.orders.Application", "--spring.config.location=/etc/orders/application.yaml",
	"--management.server.port=8081", "--logging.level.root=INFO"}

// benchScript returns sh -c argv of n bytes, its script benchChunk
// repeated.
func benchScript(n int) []string {
	n -= len("sh") + len("-c")
	return []string{"sh", "-c", strings.Repeat(benchChunk, n/len(benchChunk)+1)[:n]}
}

// The README's figures: a 512-byte argv (as long as the kernel reports
// one) within 5 µs, a 512-byte probe script dense with secrets within
// 10 µs, 1 MiB without the cap within 50 ms (redaction is linear), a long
// argv seen before within 5 µs. The benchmarks below fail when they are
// missed, by the CPU time per operation, which a busy machine does not
// inflate as it does ns/op (it does not count other processes' time).
const (
	budget512  = 5 * time.Microsecond
	budget1MiB = 50 * time.Millisecond
)

// benchmarkRedact times redact on argv and fails past budget.
func benchmarkRedact(b *testing.B, argv []string, budget time.Duration, redact func([]string) []string) {
	n := 0
	for _, a := range argv {
		n += len(a)
	}
	b.SetBytes(int64(n))
	b.ReportAllocs()
	cpu := cpuTime()
	for b.Loop() {
		redact(argv)
	}
	perOp := (cpuTime() - cpu) / time.Duration(b.N)
	b.ReportMetric(float64(perOp.Nanoseconds()), "cpu-ns/op")
	if b.N >= 10 && perOp > budget {
		b.Errorf("%v of CPU per redaction of %d bytes, the README says at most %v", perOp, n, budget)
	}
}

func uncapped(argv []string) []string { return redactArgv(argv, false) }

// BenchmarkRedact512: an argv as long as the kernel reports (512 bytes)
// of the common kind, a JVM's: what a pod process's exec costs.
func BenchmarkRedact512(b *testing.B) { benchmarkRedact(b, benchJava, budget512, Argv) }

// BenchmarkRedact512Script: a 512-byte probe script dense with secrets
// (eleven, some in quoted parts: TestBenchScriptSecrets counts them): the
// most an exec's argv costs.
func BenchmarkRedact512Script(b *testing.B) { benchmarkRedact(b, benchScript(512), 2*budget512, Argv) }

// BenchmarkRedact64KiB: the length of the probe command of issue 25,
// which held the correlator 0.6 s on every update of its pod, through the
// redactor without its cap.
func BenchmarkRedact64KiB(b *testing.B) {
	benchmarkRedact(b, benchScript(64<<10), budget1MiB/16, uncapped)
}

// BenchmarkRedact1MiB: 1 MiB through the redactor without its cap: what
// keeps it fast is that it is linear, not that Argv reads 4 KiB of it.
func BenchmarkRedact1MiB(b *testing.B) { benchmarkRedact(b, benchScript(1<<20), budget1MiB, uncapped) }

// BenchmarkRedactAdversarial1MiB: 1 MiB of the shapes that were quadratic
// or could be (see adversarial), through the redactor without its cap.
func BenchmarkRedactAdversarial1MiB(b *testing.B) {
	benchmarkRedact(b, []string{"sh", "-c", adversarialMix(1 << 20)}, budget1MiB, uncapped)
}

// BenchmarkRedactArgv1MiB: Argv on a 1 MiB probe command, as the
// correlator asks at every update of its pod: cut at MaxBytes, and
// remembered.
func BenchmarkRedactArgv1MiB(b *testing.B) { benchmarkRedact(b, benchScript(1<<20), budget512, Argv) }

// BenchmarkRedactArgv4KiBUnseen: Argv on MaxBytes never seen before (a
// fresh entry in the memo each time): the most one argv costs.
func BenchmarkRedactArgv4KiBUnseen(b *testing.B) {
	argv := benchScript(MaxBytes)
	i := 0
	benchmarkRedact(b, argv, budget1MiB/256, func(argv []string) []string {
		i++
		argv[0] = "sh" + strings.Repeat(" ", i%1000)
		return Argv(argv)
	})
}

// Argvs for the benchmarks: the common case has nothing to redact and must
// not allocate.
var (
	benchArgv       = []string{"/usr/local/bin/app", "--listen=:8080", "--log-level=debug", "--config", "/etc/app.yaml"}
	benchScriptArgv = []string{"sh", "-c", "test -f /tmp/ready && curl -fsS http://127.0.0.1:8080/healthz?verbose=1"}
	benchSecretArgv = []string{"sh", "-c", "mysqladmin ping -h 127.0.0.1 -u root -phunter2 && curl -u admin:hunter2 http://x/?token=t"}
)

func BenchmarkRedactArgv(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		Argv(benchArgv)
	}
}

func BenchmarkRedactArgvScript(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		Argv(benchScriptArgv)
	}
}

func BenchmarkRedactArgvSecret(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		Argv(benchSecretArgv)
	}
}

func TestNoAllocsWithoutSecrets(t *testing.T) {
	for _, argv := range [][]string{benchArgv, benchScriptArgv} {
		if n := testing.AllocsPerRun(100, func() { Argv(argv) }); n != 0 {
			t.Errorf("Argv(%q): %v allocations, want 0", argv, n)
		}
	}
}

// TestBenchScriptSecrets: the README's "a 512-byte probe script with
// eleven secrets": BenchmarkRedact512Script's argv has that many, each
// redacted.
func TestBenchScriptSecrets(t *testing.T) {
	if n := strings.Count(strings.Join(Argv(benchScript(512)), " "), Marker); n != 11 {
		t.Errorf("the 512-byte script has %d secrets redacted, the README says eleven", n)
	}
}
