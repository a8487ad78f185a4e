package exporter

import (
	"bytes"
	"strings"
	"testing"

	"github.com/readyline/readyline/exporter/waterfall"
)

// hostileText is what a pod can put in a name, a file name, an argument or
// a message: a title change (OSC ... BEL), a screen clear, a carriage return
// that hides what came before, a C1 CSI and DEL, after tag.
func hostileText(tag string) string {
	return tag + "\x1b]0;owned\x07\x1b[2J\r\u009b31m\x7f"
}

// hostileEscaped is how hostileText(tag) must be printed.
func hostileEscaped(tag string) string {
	return tag + `\x1b]0;owned\a\x1b[2J\r\u009b31m\x7f`
}

// rawTerminalBytes are the bytes and characters a terminal acts on that
// hostileText holds (the waterfall writes newlines of its own).
const rawTerminalBytes = "\x1b\x07\r\x7f\u009b"

// TestWaterfallEscapesPodText: every string of a timeline that the pod,
// the runtime or the API controls (a container's name, a process's file
// name or argv[0], a waiting reason and its message, an attempt's reason,
// the start's reason, an insight) is printed with its control characters
// escaped, so the waterfall can neither retitle nor clear the terminal nor
// draw lines of its own, and each is still there to read.
func TestWaterfallEscapesPodText(t *testing.T) {
	tl := stuckCrashLoop()
	app := &tl.Containers[0]
	tl.Containers[2].Name = hostileText("ctr")
	app.Attempts[0].Process.Filename = "/bin/" + hostileText("file")
	app.Attempts[1].Process.Filename = ""
	app.Attempts[1].Process.Argv = []string{hostileText("argv"), hostileText("arg1")}
	app.Attempts[2].Reason = hostileText("attempt")
	app.Waiting[0].Message = hostileText("msg")
	tl.Containers[1].Waiting[0].Reason = hostileText("wait")
	tl.Reason = hostileText("reason")
	tl.Insights[0].Message = hostileText("insight")

	var buf bytes.Buffer
	if err := waterfall.Render(&buf, tl, 200); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if i := strings.IndexAny(out, rawTerminalBytes); i >= 0 {
		t.Errorf("the waterfall writes %q raw at byte %d:\n%s", out[i:i+1], i, out)
	}
	// A label may be cut to its column's width: its start must be there.
	for _, tag := range []string{"ctr", "file", "argv", "attempt", "wait"} {
		if want := tag + `\x1b]0;owned\a`; !strings.Contains(out, want) {
			t.Errorf("no %q in the waterfall:\n%s", want, out)
		}
	}
	for _, tag := range []string{"msg", "reason", "insight"} {
		if want := hostileEscaped(tag); !strings.Contains(out, want) {
			t.Errorf("no %q in the waterfall:\n%s", want, out)
		}
	}
}
