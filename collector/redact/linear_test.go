package redact

import (
	"maps"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// adversarial are the inputs that made the redactor quadratic (issue 25:
// a query string, JSON or URLs with many secrets in one word, a chain of
// assignments, each rebuilt the whole string per match) or that would
// make a careless one so: quotes that do not close, nesting, long runs of
// tokens, separators, positional arguments. Each returns about n bytes.
var adversarial = map[string]func(n int) string{
	"query":         func(n int) string { return "http://x/?" + repeat("token=a&", n) },
	"json":          func(n int) string { return repeat(`"password":"x",`, n) },
	"escaped json":  func(n int) string { return repeat(`{\"token\":\"t\"} `, n) },
	"urls":          func(n int) string { return repeat("http://u:p@h/", n) },
	"assignments":   func(n int) string { return repeat("a=", n) + "u:p@h" },
	"flags":         func(n int) string { return repeat("--password=x ", n) },
	"quotes":        func(n int) string { return repeat(`'a' "b" `, n) },
	"nested quotes": func(n int) string { return repeat(`"'a'" `, n) },
	"unterminated":  func(n int) string { return `"` + repeat(`\" 'a `, n) },
	"backslashes":   func(n int) string { return repeat(`\"`, n) },
	"tokens":        func(n int) string { return repeat("ghp_0123456789abcdefghij ", n) },
	"jwts":          func(n int) string { return repeat("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln ", n) },
	"pem":           func(n int) string { return repeat("-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n", n) },
	"pem begins":    func(n int) string { return repeat("-----BEGIN ", n) },
	"positional":    func(n int) string { return "htpasswd -b " + repeat("a ", n) },
	"sqlplus":       func(n int) string { return "sqlplus " + repeat("u/p@d ", n) },
	"separators":    func(n int) string { return repeat(";a", n) },
	"colons":        func(n int) string { return repeat("a:", n) },
	"headers":       func(n int) string { return repeat("X-Api-Key: k\n", n) },
	"jdbc":          func(n int) string { return "x" + repeat(";pwd=a;b", n) },
}

func repeat(s string, n int) string { return strings.Repeat(s, max(1, n/len(s))) }

// adversarialMix is every adversarial input, n bytes in all.
func adversarialMix(n int) string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(adversarial)) {
		b.WriteString(adversarial[name](n / len(adversarial)))
		b.WriteString(";\n")
	}
	return b.String()
}

// heapAllocated returns the bytes f allocates on the heap (ReadMemStats
// counts them all; runtime/metrics misses what per-P caches hold).
func heapAllocated(f func()) uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	before := m.TotalAlloc
	f()
	runtime.ReadMemStats(&m)
	return m.TotalAlloc - before
}

// TestRedactionAllocatesLinearly: the bytes redaction allocates, a work
// measure a busy machine does not change, grow with the input as the
// input does: at most 32 bytes per byte of input, and for 16 times the
// input at most 48 times the bytes, 3 times what linear growth gives (16;
// the builders' doublings take some of that) and a fifth of what quadratic
// growth does (the redactor of issue 25 allocated 222 times more for a
// script 16 times longer). Each input is redacted without the cap, which would hide the
// growth. A quadratic redactor fails at the small size already, in
// milliseconds.
func TestRedactionAllocatesLinearly(t *testing.T) {
	const n = 16 << 10
	for name, input := range adversarial {
		small := input(n)
		a := heapAllocated(func() { redactArgv([]string{"sh", "-c", small}, false) })
		if a > 32*n {
			t.Errorf("%s: %d bytes allocated for %d bytes", name, a, len(small))
			continue
		}
		large := input(16 * n)
		b := heapAllocated(func() { redactArgv([]string{"sh", "-c", large}, false) })
		t.Logf("%-13s %8d bytes for %d, %9d for %d", name, a, len(small), b, len(large))
		if b > 48*max(a, n) {
			t.Errorf("%s: %d bytes allocated for %d bytes, %d for %d: not linear", name, a, len(small), b, len(large))
		}
	}
}

// TestRedactionTakesLinearTime: the CPU time of redacting 1 MiB is at most
// 48 times that of 64 KiB, 3 times what linear time gives (16) and a fifth
// of what quadratic time does (256). Allocation (above) does not see a
// redactor that rescans without allocating; time does. It is CPU time, per
// operation of testing.Benchmark (a second of runs each): the load of a
// busy machine slows both sizes alike and does not count in CPU time, and
// the margin absorbs what is left (caches, GC).
func TestRedactionTakesLinearTime(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: two one-second benchmarks")
	}
	perOp := func(n int) time.Duration {
		argv := []string{"sh", "-c", adversarialMix(n)}
		var d time.Duration
		testing.Benchmark(func(b *testing.B) {
			cpu := cpuTime()
			for b.Loop() {
				redactArgv(argv, false)
			}
			d = (cpuTime() - cpu) / time.Duration(b.N)
		})
		return d
	}
	small, large := perOp(64<<10), perOp(1<<20)
	t.Logf("64 KiB: %v, 1 MiB: %v of CPU per redaction", small, large)
	if large > 48*small {
		t.Errorf("1 MiB takes %v, 64 KiB %v: %.0f times as long, not linear", large, small, float64(large)/float64(small))
	}
}
