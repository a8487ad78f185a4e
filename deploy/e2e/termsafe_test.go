//go:build e2e

package e2e

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// TestTerminalEscapesPrintedEscaped: a pod runs a program whose file name
// holds terminal escape sequences (a title change, a screen clear, a
// carriage return); readyline explain prints them escaped, never raw.
func TestTerminalEscapesPrintedEscaped(t *testing.T) {
	t.Parallel()
	d := readyline(t)
	ctx := testContext(t, 3*time.Minute)
	const evil = "/work/\x1b]0;pwned\x07\x1b[2J\rfake\u009bline"
	ns, rec := startPod(t, ctx, "escapes", `apiVersion: v1
kind: Pod
metadata: {name: escapes}
spec:
  terminationGracePeriodSeconds: 1
  volumes: [{name: work, emptyDir: {}}]
  initContainers:
  - name: plant
    image: localhost/busybox:local
    imagePullPolicy: Never
    command: ["sh", "-c", "cp /bin/sleep \"$0\"", "`+jsonEscape(evil)+`"]
    volumeMounts: [{name: work, mountPath: /work}]
  containers:
  - name: app
    image: localhost/busybox:local
    imagePullPolicy: Never
    command: ["`+jsonEscape(evil)+`", "3600"]
    volumeMounts: [{name: work, mountPath: /work}]
`)
	if _, err := rec.WaitFor(ctx, ConditionTrue(corev1.PodReady)); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Timeline(ctx, ns, "escapes", time.Minute); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(ctx, d.Bin, "explain", "--api-addr", strings.TrimPrefix(d.APIURL, "http://"), ns+"/escapes").CombinedOutput()
	if err != nil {
		t.Fatalf("readyline explain: %v\n%s", err, out)
	}
	text := string(out)
	for _, raw := range []string{"\x1b", "\x07", "\r", "\u009b"} {
		if strings.Contains(text, raw) {
			t.Errorf("readyline explain printed a raw %q:\n%q", raw, text)
		}
	}
	if !strings.Contains(text, `\x1b]0;pwned\x07`) {
		t.Errorf("the program's name is not shown escaped:\n%s", text)
	}
}

// jsonEscape writes s for a double-quoted YAML (JSON) string.
func jsonEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || (r >= 0x7f && r < 0xa0):
			b.WriteString(`\u`)
			const hex = "0123456789abcdef"
			b.WriteByte(hex[r>>12&0xf])
			b.WriteByte(hex[r>>8&0xf])
			b.WriteByte(hex[r>>4&0xf])
			b.WriteByte(hex[r&0xf])
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
