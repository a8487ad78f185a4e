package redact_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/readyline/readyline/collector/redact"
	"github.com/readyline/readyline/collector/redact/redacttest"
)

// FuzzSecretFamilies plants a secret of every family at every place of a
// random script (redacttest.Plant), and checks that neither its value nor
// its first 4 bytes survive redact.Argv: of the command line whole (a pod
// spec's), as the kernel reports it cut at any of its first 512 bytes, and
// as the kubelet's ExecSync uprobe reads it (63 bytes an argument); that
// redaction is idempotent; and that --argv=none leaves a program's name
// only. Its seeds, every family at every place, run as a test.
func FuzzSecretFamilies(f *testing.F) {
	for family := range redacttest.Families {
		for place := range redacttest.Places {
			for _, cut := range []uint16{512, 60, 90} {
				f.Add(uint8(family), uint8(place), cut, []byte("s3cr3t-value-of-some-length"), uint64(family*7+place*3+int(cut)))
			}
		}
	}
	f.Fuzz(func(t *testing.T, family, place uint8, cut uint16, value []byte, filler uint64) {
		p := redacttest.Plant(int(family), int(place), value, filler)
		whole := strings.Join(p.Argv, "\x00")
		for _, s := range p.Secrets {
			whole = strings.ReplaceAll(whole, s, "")
		}
		if redacttest.HasSentinel(whole) {
			t.Fatalf("the planted command holds %s beside its secrets: %q", redacttest.Sentinel, p.Argv)
		}
		kernel, _ := redacttest.Kernel(p.Argv, int(cut))
		for _, form := range []struct {
			name string
			argv []string
		}{{"whole", p.Argv}, {"cut by the kernel", kernel}, {"read by the ExecSync uprobe", redacttest.ExecSync(p.Argv)}} {
			got := redact.Argv(form.argv)
			if s, i := redacttest.Leak(strings.Join(got, " "), p.Secrets); s != "" {
				t.Fatalf("%s (%s, %s): %q left at %d of %q\n(from %q)", form.name, p.Family, p.Place, s, i, got, form.argv)
			}
			if again := redact.Argv(got); !slices.Equal(again, got) {
				t.Fatalf("%s (%s, %s): not idempotent:\n once  %q\n twice %q", form.name, p.Family, p.Place, got, again)
			}
			if none := redact.ProgramOnly.Argv(form.argv); len(none) > 1 || len(none) == 1 && strings.Contains(none[0], " ") {
				t.Fatalf("--argv=none leaves %q of %q", none, form.argv)
			}
		}
	})
}
