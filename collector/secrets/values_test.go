package secrets

import (
	"fmt"
	"strings"
	"testing"

	"github.com/readyline/readyline/collector/redact"
)

// hostileShapes are places a Secret's value ends up in a command line or a
// message that no table of shapes was written for: each %s is the value.
var hostileShapes = []string{
	"DB_PW=%s", "APP_PASS=%s", "x_pwd:%s", "user:%s", "https://user:%s@db/", "mount -o rw,user=a,password=%s /mnt",
	"DefaultEndpointsProtocol=https;AccountName=a;AccountKey=%s;EndpointSuffix=core", "AUTH %s", "redis-cli -a%s",
	"%s", "token %s", "--secret-string %s", "echo %s | login", "pass(%s)", "'%s'", `"%s"`, "k=%s&x=1",
	"Exec lifecycle hook ([sh -c echo %s; exit 1]) for Container \"app\" failed - error: command 'sh -c echo %s; exit 1' exited with 1: %s\n",
	"Readiness probe failed: connecting with %s: access denied",
}

func TestSetRemovesEveryShape(t *testing.T) {
	for _, v := range []string{"hunter2-but-longer", "Zm9vYmFyYmF6", "p@ss w0rd!", "ëñçødéd-välüe", "zzzzzz"} {
		var s Set
		s.Add(v)
		for _, shape := range hostileShapes {
			text := strings.ReplaceAll(shape, "%s", v)
			got := s.Text(text)
			if strings.Contains(got, v) {
				t.Errorf("value %q left in %q", v, got)
			}
			if !strings.Contains(got, redact.Marker) {
				t.Errorf("value %q: %q has no marker", v, got)
			}
			if want := strings.ReplaceAll(shape, "%s", redact.Marker); got != want && !strings.Contains(v, " ") {
				t.Errorf("%q -> %q, want %q (only the value replaced)", text, got, want)
			}
		}
	}
}

func TestSetLeavesShortAndCommonValues(t *testing.T) {
	var s Set
	for _, v := range []string{"1", "true", "8080", "admin", "enabled", "default", "localhost", ""} {
		s.Add(v)
	}
	if s.Len() != 0 {
		t.Errorf("took %d values of short or common ones: %q", s.Len(), s.values)
	}
	text := "admin listens on localhost:8080, debug true, 1 worker, default enabled"
	if got := s.Text(text); got != text {
		t.Errorf("%q -> %q", text, got)
	}
}

// TestSetValuesOfAFile: a file's whole content, its lines, what follows
// key= or key:, and its words each go.
func TestSetValuesOfAFile(t *testing.T) {
	var s Set
	s.Add("user=alice-admin\npassword: tr0ub4dor&3\napi_key=AKIAEXAMPLEKEY1\n\ncorrect horse battery\n")
	for _, leak := range []string{"tr0ub4dor&3", "AKIAEXAMPLEKEY1", "alice-admin", "correct horse battery", "battery"} {
		text := "sh -c login " + leak
		if got := s.Text(text); strings.Contains(got, leak) {
			t.Errorf("%q left in %q", leak, got)
		}
	}
	// The longer value wins where two overlap.
	if got := s.Text("login correct horse battery"); got != "login "+redact.Marker {
		t.Errorf("overlapping values: %q", got)
	}
}

// TestSetCutText: a text cut within a value loses the value's beginning too.
func TestSetCutText(t *testing.T) {
	var s Set
	s.Add("s3cr3t-value-0123456789")
	for _, n := range []int{1, 2, 5, 12, 22} {
		text := "curl -u bob:" + "s3cr3t-value-0123456789"[:n]
		got := s.CutText(text)
		if want := "curl -u bob:" + redact.Marker; got != want {
			t.Errorf("cut after %d bytes of the value: %q, want %q", n, got, want)
		}
	}
	if got := s.CutText("curl -u bob:x"); got != "curl -u bob:x" {
		t.Errorf("no value's beginning at the end: %q", got)
	}
	// Text alone does not guess at a cut.
	if got := s.Text("ends with s3cr"); got != "ends with s3cr" {
		t.Errorf("Text removed a beginning: %q", got)
	}
}

func TestSetArgv(t *testing.T) {
	var s Set
	s.Add("pa55word-long")
	argv := []string{"mysql", "-ppa55word-long", "db"}
	got := s.Argv(argv, false, 0)
	if fmt.Sprint(got) != fmt.Sprint([]string{"mysql", "-p" + redact.Marker, "db"}) || argv[1] != "-ppa55word-long" {
		t.Errorf("Argv = %q (argv now %q)", got, argv)
	}
	clean := []string{"ls", "-l"}
	if got := s.Argv(clean, false, 0); &got[0] != &clean[0] {
		t.Errorf("an argv without a value was copied")
	}
	// Cut by the kernel (the last argument) or at 63 bytes (ExecSync).
	if got := s.Argv([]string{"sh", "-c", "x pa55w"}, true, 0); got[2] != "x "+redact.Marker {
		t.Errorf("cut argv: %q", got)
	}
	arg := strings.Repeat("y", 58) + "pa55w"
	if got := s.Argv([]string{"sh", arg}, false, 63); got[1] != strings.Repeat("y", 58)+redact.Marker {
		t.Errorf("cut ExecSync argument: %q", got)
	}
}

func BenchmarkSetText(b *testing.B) {
	var s Set
	for i := range 20 {
		s.Add(fmt.Sprintf("secret-value-%02d-%x", i, i*7919))
	}
	text := "/bin/sh -c exec /app/server --config /etc/app/config.yaml --listen :8080 --log-level info"
	b.ReportAllocs()
	for b.Loop() {
		s.Text(text)
	}
}
